"""``kafkaproto report``'s output folder and exit paths, and tap rows whose
latency no clock gives (issue 33, items 5 and 7): one line naming the input
or the output and status 2 where a traceback was, two reports never writing
into one folder at once, and a report never deleting (or replacing) a file
it did not write.

The embedded engine runs one small capture in this process, so the tests
call ``main()`` here; a full disk and a read-only file system are small
tmpfs mounts when this process may mount them (as root), and are simulated
in this process as well, so that both ways run wherever one of them can.
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from kafkaproto.__main__ import main
from kafkaproto.capture import Accounting, read_frames
from kafkaproto.report import job
from kafkaproto.report.job import MARKER, ReportOutputError, output_folder
from support.report_helpers import SAMPLE

PCAP = SAMPLE / "kafka.pcap"
TAP = SAMPLE / "tap-mock"


def report(capsys, out, *captures, extra=()):
    """``kafkaproto report`` in this process → (status, standard error's lines)."""
    capsys.readouterr()
    status = main(["report", *map(str, captures or [PCAP]), "--out", str(out), "--quiet", *extra])
    return status, capsys.readouterr().err.splitlines()


def refused(capsys, out, *captures, extra=()) -> str:
    status, err = report(capsys, out, *captures, extra=extra)
    assert status == 2 and len(err) == 1, err
    assert err[0].startswith("kafkaproto report: ") and "Traceback" not in err[0]
    return err[0][len("kafkaproto report: "):]


@pytest.fixture
def tmpfs(tmp_path):
    """Mount a tmpfs of ``size`` (read-only if asked) under tmp_path → its path,
    or None where this process may not mount one."""
    mounted = []

    def make(size: str, ro: bool = False):
        where = tmp_path / f"fs{len(mounted)}"
        where.mkdir()
        opts = f"size={size}" + (",ro" if ro else "")
        if shutil.which("mount") is None or subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(where)],
                                                           capture_output=True).returncode:
            return None
        mounted.append(where)
        return where

    yield make
    for where in mounted:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


# ---------------------------------------------------------------------------
# item 5: where the report cannot be written


def test_an_out_that_is_a_file_or_cannot_be_made_is_one_line(capsys, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("mine")
    assert refused(capsys, afile) == f"{afile}: exists and is not a folder"
    assert afile.read_text() == "mine"
    assert refused(capsys, "/proc/kafkaproto-report") == \
        "/proc/kafkaproto-report: cannot make the folder: No such file or directory"
    assert refused(capsys, "/proc/self/report").startswith("/proc/self/report: cannot make the folder: ")


def test_a_read_only_file_system_is_one_line(capsys, tmp_path, tmpfs, monkeypatch):
    ro = tmpfs("1m", ro=True)
    if ro is not None:  # a real one
        assert refused(capsys, ro / "out") == f"{ro / 'out'}: cannot make the folder: Read-only file system"
    # and one made read-only after the folder was (its marker cannot be written), simulated here
    real_open = os.open

    def read_only(path, flags, *args):
        if os.fspath(path).endswith(MARKER):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), path)
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", read_only)
    assert refused(capsys, tmp_path / "out") == f"{tmp_path / 'out'}: cannot write into it: Read-only file system"


def test_a_full_disk_is_one_line(capsys, tmp_path, tmpfs, monkeypatch):
    full = tmpfs("100k")
    if full is not None:  # a real one: the sample's tables need ~280 KB
        assert refused(capsys, full / "out") == f"{full / 'out'}: cannot write the report: No space left on device"
        # what a new report replaces and deletes is its own: the next one, given room, writes over it
        subprocess.run(["mount", "-o", "remount,size=2m", str(full)], check=True, capture_output=True)
        assert report(capsys, full / "out")[0] == 0
    # simulated: every Parquet file fails as a full disk fails it
    import pyarrow.parquet as pq

    def no_space(self, *args, **kw):
        raise OSError(errno.ENOSPC, "Error writing bytes to file. Detail: [errno 28] No space left on device")

    monkeypatch.setattr(pq.ParquetWriter, "write_batch", no_space)
    monkeypatch.setattr(pq.ParquetWriter, "write_table", no_space)
    out = tmp_path / "out"
    assert refused(capsys, out) == f"{out}: cannot write the report: No space left on device"


def die(*_args, **_kw):
    """A task that kills its worker process (a module-level function: the pool pickles it by name)."""
    os.kill(os.getpid(), signal.SIGKILL)


def test_a_worker_killed_mid_job_is_one_line_and_stops_at_once(capsys, tmp_path, monkeypatch):
    from kafkaproto.report import tasks

    job.shutdown()  # workers forked from now on see the task below
    monkeypatch.setattr(tasks, "whole_task", die)
    try:
        # two captures in two tasks (--range-bytes: tasks share up to that much), on two workers
        assert refused(capsys, tmp_path / "out", PCAP, SAMPLE / "kafka44.pcap",
                       extra=["--workers", "2", "--range-bytes", "200K"]) == \
            "a worker process died before its task finished (killed, or out of memory): the report was not finished"
    finally:
        job.shutdown()
    # the folder is free again, and the next report writes over what the dead one left
    monkeypatch.undo()
    assert report(capsys, tmp_path / "out")[0] == 0


def test_a_file_that_is_no_capture_is_refused_as_inspect_refuses_it(capsys, tmp_path):
    junk = tmp_path / "notes.txt"
    junk.write_bytes(b"not a capture\n")
    line = refused(capsys, tmp_path / "out", junk)
    assert line == (f"{junk}: not a capture: not pcap or pcapng, not a tap table, and it does not start with a Kafka "
                    "request frame (first bytes: 6e 6f 74 20 61 20 63 61)")
    assert main(["inspect", str(junk)]) == 2
    assert capsys.readouterr().err.strip() == f"kafkaproto inspect: {line}"
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    assert refused(capsys, tmp_path / "out", empty) == f"{empty}: empty: no capture to read"
    assert not (tmp_path / "out").exists()  # refused before anything was written


# ---------------------------------------------------------------------------
# item 7: one report at a time in a folder, and only its own files replaced


_HOLD = textwrap.dedent("""
    import sys, time
    from kafkaproto.report.job import output_folder
    with output_folder(sys.argv[1]):
        print("held", flush=True)
        sys.stdin.read()
""")


def test_two_reports_into_one_folder_at_once_the_second_is_refused(capsys, tmp_path):
    out = tmp_path / "out"
    holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(out)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        assert refused(capsys, out) == f"{out}: another report is writing into it now (process {holder.pid})"
    finally:
        holder.communicate("")
    assert holder.returncode == 0
    assert report(capsys, out)[0] == 0  # released with its process
    # two threads of one process: the same
    inside = threading.Event()
    leave = threading.Event()

    def hold():
        with output_folder(out):
            inside.set()
            leave.wait(30)

    t = threading.Thread(target=hold)
    t.start()
    try:
        assert inside.wait(30)
        with pytest.raises(ReportOutputError, match="another report is writing into it now"):
            with output_folder(out):
                pass
    finally:
        leave.set()
        t.join()
    with output_folder(out), output_folder(out):  # taken again by its holder: held once
        pass


def test_a_report_never_deletes_or_replaces_a_file_it_did_not_write(capsys, tmp_path):
    out = tmp_path / "out"
    # a folder no report wrote, holding a name a report writes: refused, untouched
    (out / "requests").mkdir(parents=True)
    (out / "requests" / "notes.txt").write_text("mine")
    assert refused(capsys, out) == f"{out}: holds requests, which no report wrote: give a new or empty folder"
    assert sorted(p.name for p in out.iterdir()) == ["requests"]  # no marker left behind either
    shutil.rmtree(out / "requests")
    (out / "report.html").write_text("mine")
    assert refused(capsys, out) == f"{out}: holds report.html, which no report wrote: give a new or empty folder"
    assert refused(capsys, out).endswith("holds report.html, which no report wrote: give a new or empty folder")
    assert (out / "report.html").read_text() == "mine"
    # other files of the folder are left as they are
    (out / "report.html").unlink()
    (out / "other.txt").write_text("mine")
    assert report(capsys, out)[0] == 0
    assert (out / "other.txt").read_text() == "mine" and (out / MARKER).exists()
    # a report's folder: the next report replaces the tables a report wrote (an earlier run's, a failed
    # attempt's) and refuses one holding a file no report wrote inside a table's folder
    stale = out / "requests" / "w00007.parquet"
    shutil.copy(next((out / "requests").glob("*.parquet")), stale)
    assert report(capsys, out)[0] == 0
    assert not stale.exists()
    (out / "requests" / "notes.txt").write_text("mine")
    assert refused(capsys, out) == f"{out}: holds requests/notes.txt, which no report wrote: give a new or empty " \
                                   "folder"
    assert (out / "requests" / "notes.txt").read_text() == "mine"


# ---------------------------------------------------------------------------
# item 5: a tap row whose latency no clock gives


@pytest.mark.parametrize("latency", [1 << 62, -(1 << 62)])
def test_a_tap_row_with_a_latency_of_2_62_is_marked_not_an_overflow(capsys, tmp_path, latency):
    src = next(TAP.glob("*.arrows"))
    with pa.OSFile(str(src), "rb") as f:
        table = ipc.open_stream(f).read_all()
    lat = table.column("latency_us").to_pylist()
    row = next(i for i, v in enumerate(lat) if v is not None)
    lat[row] = latency
    table = table.set_column(table.schema.get_field_index("latency_us"), "latency_us", pa.array(lat, pa.int64()))
    tap = tmp_path / "tap"
    tap.mkdir()
    with pa.OSFile(str(tap / src.name), "wb") as f, ipc.new_stream(f, table.schema) as w:
        w.write_table(table)
    acc = Accounting()
    timed = sum(f.latency_ns is not None for f in read_frames(tap, acc=acc))
    assert acc.bad_timestamps == 1 and not acc.problems()
    # that row's latency is not believed: its response is timed from its request's row, as a pcap's are
    assert timed == sum(f.latency_ns is not None for f in read_frames(TAP))
    capsys.readouterr()
    assert main(["inspect", str(tap)]) == 0
    assert "1 packets (or tap rows) with a time stamp out of range" in capsys.readouterr().out
    status, err = report(capsys, tmp_path / "out", tap)
    assert status == 0 and err == []
    assert "marked  packets (or tap rows) with a time stamp out of range" in \
        (tmp_path / "out" / "summary.txt").read_text()


def test_a_folder_a_report_wrote_before_folders_were_marked_is_still_its_own(capsys, tmp_path):
    out = tmp_path / "out"
    assert report(capsys, out)[0] == 0
    (out / MARKER).unlink()
    assert report(capsys, out)[0] == 0  # its report.json says a report wrote it
    (out / MARKER).unlink()
    (out / "report.json").write_text("{}")
    assert refused(capsys, out) == f"{out}: holds connections, which no report wrote: give a new or empty folder"


def test_no_payloads_leaves_the_records_contents_out(capsys, tmp_path):
    """``--no-payloads``: the records table with key, value and headers null, the rest as without the flag."""
    import pyarrow.parquet as pq

    assert report(capsys, tmp_path / "with")[0] == 0
    assert report(capsys, tmp_path / "without", extra=["--no-payloads"])[0] == 0
    full, bare = pq.read_table(tmp_path / "with" / "records"), pq.read_table(tmp_path / "without" / "records")
    payloads = ["key", "value", "headers"]
    assert bare.schema == full.schema and full["value"].null_count < full.num_rows
    assert all(bare[c].null_count == bare.num_rows for c in payloads)
    assert bare.drop_columns(payloads).equals(full.drop_columns(payloads))
    for table in ("requests", "responses", "record_sets"):
        assert pq.read_table(tmp_path / "without" / table).equals(pq.read_table(tmp_path / "with" / table))
