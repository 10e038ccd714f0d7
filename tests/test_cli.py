import io
import pathlib

import pytest

from kafkaproto import encode_request, frame
from kafkaproto.__main__ import inspect, main
from kafkaproto.capture import Accounting, read_frames
from kafkaproto.messages import MetadataRequest
from support.cli import no_pandas_lookup, run_cli, run_watching_pandas

SAMPLE = pathlib.Path(__file__).resolve().parent.parent / "samples" / "requests.bin"


def test_inspect_the_shipped_sample():
    out = io.StringIO()
    assert inspect(str(SAMPLE), out) == 0
    lines = out.getvalue().splitlines()
    assert lines[0].split()[:3] == ["#1", "ApiVersions", "v3"]
    assert "software=apache-kafka-java/3.9.1" in lines[0]
    assert "[removed in Kafka 4.0]" in lines[4] and "Produce" in lines[4]
    assert lines[-1].startswith("7 frames, 0 undecodable, 2 using versions Kafka 4.0 removed, 0 with trailing bytes "
                                "after their body, 0 bytes of frames cut off by a gap or the end of a stream")


def test_inspect_reports_bad_frames_and_tails(tmp_path):
    path = tmp_path / "s.bin"
    good = encode_request(MetadataRequest(topics=[]), 4, 1, "c")
    path.write_bytes(good + frame(b"\x00\x5f\x00\x00\x00\x00\x00\x01") + b"\x00\x00")
    out = io.StringIO()
    assert inspect(str(path), out) == 1
    text = out.getvalue()
    assert "undecodable: request header at byte 0: api key 95 is not known" in text
    assert "2 frames, 1 undecodable" in text and "2 bytes of frames cut off by a gap or the end of a stream" in text


def test_main_entry(capsys):
    assert main(["inspect", str(SAMPLE)]) == 0
    assert "7 frames" in capsys.readouterr().out


def test_the_inspect_process_runs_without_pandas(capsys, tmp_path):
    """``python -m kafkaproto inspect`` (the script's entry too) never imports
    pandas (pyarrow would on its first conversion); same output as in process."""
    proc, modules = run_cli(["inspect", "--json", SAMPLE], tmp_path / "modules.json")
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert "pandas" not in modules
    assert main(["inspect", "--json", str(SAMPLE)]) == 0
    assert proc.stdout.decode() == capsys.readouterr().out


CAPTURES = pathlib.Path(__file__).resolve().parent.parent / "samples" / "capture"

# main() (not the script's entry, whose finder answers "not installed" for pandas): the package itself must never ask
_MAIN = """
import io, contextlib
from kafkaproto.__main__ import main
with contextlib.redirect_stdout(io.StringIO()):
    assert main(sys.argv[1:]) == 0
"""


@pytest.mark.parametrize("args", [
    ["inspect", CAPTURES / "kafka.pcap"],
    ["inspect", "--json", CAPTURES / "tap-mock"],
    ["report", CAPTURES / "kafka.pcap", "--quiet"],
    # three captures in byte ranges, in process: segment tasks, and the tasks' parts folded
    ["report", "--workers", "1", "--range-bytes", "65536", "--whole-file-max", "65536",
     CAPTURES / "kafka.pcap", CAPTURES / "kafka44.pcap", CAPTURES / "tap-mock", "--quiet"],
], ids=["inspect-pcap", "inspect-tap", "report", "report-ranges"])
def test_inspect_and_the_report_never_look_pandas_up(tmp_path, args):
    """inspect and the report on the embedded engine (its tasks, their aggregates,
    the driver's fold, the page and the tables) build and read their columns
    without pandas: pyarrow would import it on its first pyarrow.array(),
    to_numpy(), empty table or group-by (a third of a second of CPU)."""
    if args[0] == "report":
        args = [*args, "--out", tmp_path / "out"]
    p = run_watching_pandas(_MAIN, args)
    assert no_pandas_lookup(p), (p.stdout + p.stderr)[-4000:]


# --------------------------------------------------------------------------
# damaged tap output: read as far as it is whole, the rest named and counted
# --------------------------------------------------------------------------

TAP = pathlib.Path(__file__).resolve().parent.parent / "samples" / "capture" / "tap-mock"
TAP_FILE = next(TAP.glob("*.arrows"))
TAP_FRAMES = 725  # in the sample's 9 batches; its 5th batch ends at byte 69792
CUT_IN_BATCH = 100_000  # inside the 6th batch (69792..107728)


def damaged_tap_folder(folder, shape):
    """The sample tap file, and beside it (or instead of it) one damaged shape → (folder, damaged file name)."""
    folder.mkdir()
    good = TAP_FILE.read_bytes()
    if shape != "cut-in-batch":
        (folder / "frames-1.arrows").write_bytes(good)
    name, data = {"empty": ("frames-2.arrows", b""),
                  "cut-in-schema": ("frames-2.arrows", good[:300]),
                  "cut-in-batch": ("frames-1.arrows", good[:CUT_IN_BATCH]),
                  "foreign": ("notes.txt", b"not a table\n"),
                  "foreign-arrows": ("frames-2.arrows", b"PK\x03\x04 a zip file, not a table")}[shape]
    (folder / name).write_bytes(data)
    return folder, name


@pytest.mark.parametrize("shape,frames,unread,why", [
    ("empty", TAP_FRAMES, 0, "empty file (no batch was written to it)"),
    ("cut-in-schema", TAP_FRAMES, 300, "cut or damaged inside its schema header"),
    ("cut-in-batch", 49 + 154 + 54 + 51, CUT_IN_BATCH - 69792, "cut or damaged inside batch 5 at byte 69792"),
    ("foreign", TAP_FRAMES, 12, "not a frame table (12 bytes), not read"),
    ("foreign-arrows", TAP_FRAMES, 28, "not an Arrow or Parquet file"),
])
def test_inspect_reads_damaged_tap_output_as_far_as_it_is_whole(tmp_path, shape, frames, unread, why):
    folder, name = damaged_tap_folder(tmp_path / shape, shape)
    out = io.StringIO()
    assert inspect(str(folder), out) == 0
    text = out.getvalue()
    assert f"{frames} frames, 0 undecodable" in text
    errors = [line for line in text.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and name in errors[0] and why in errors[0], errors
    assert (f"{unread} file bytes unread" in text) == bool(unread)
    acc = Accounting()
    assert sum(1 for _ in read_frames(str(folder), acc=acc)) == frames
    acc.check()
    assert acc.unread_bytes == unread and acc.frames_total == frames
    assert acc.file_bytes == sum(p.stat().st_size for p in folder.iterdir())


def test_inspect_of_tap_output_with_nothing_readable_says_so(tmp_path):
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "frames-1.arrows").write_bytes(b"")
    (folder / "frames-2.arrows").write_bytes(TAP_FILE.read_bytes()[:300])
    out = io.StringIO()
    assert inspect(str(folder), out) == 2
    text = out.getvalue()
    assert "0 frames" in text and "300 file bytes unread" in text and text.count("error: ") == 2


def test_the_command_tunes_its_own_collector_and_no_caller_s(tmp_path):
    """``run`` (the process's entry) collects every 50 000 new objects and,
    once the report has imported what it needs, freezes what is there; a
    caller of ``main`` keeps its collector as it was."""
    import gc
    import subprocess
    import sys

    capture = pathlib.Path(__file__).resolve().parent.parent / "samples" / "capture" / "kafka.pcap"
    code = ("import atexit, gc, sys;"
            " atexit.register(lambda: print('GC', gc.get_threshold()[0], gc.get_freeze_count()));"
            f" sys.argv = ['kafkaproto', 'report', {str(capture)!r}, '--out', {str(tmp_path / 'out')!r}, '--quiet'];"
            " from kafkaproto.__main__ import run; run()")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    threshold, frozen = map(int, proc.stdout.rsplit("GC ", 1)[1].split())
    assert threshold == 50_000 and frozen > 10_000
    before = gc.get_threshold(), gc.get_freeze_count()
    assert main(["report", str(capture), "--out", str(tmp_path / "again"), "--quiet"]) == 0
    assert (gc.get_threshold(), gc.get_freeze_count()) == before
