"""The live report (kafkaproto.report.live, ``kafkaproto report --follow``):
its figures over a capture that grows are the report's figures over the
same rows, its state stays within its window, and the page and tables it
rewrites are never seen half-written."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow as pa

from kafkaproto.capture import open_capture
from kafkaproto.report.job import run_job
from kafkaproto.report.live import LiveReport
from support.rotated import grow, resegment, roll, tap_files

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "capture" / "kafka.pcap"


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


FIGURES = ("api_use", "clients", "errors", "errors_by", "latency", "latency_by", "unanswered", "topics", "codecs",
           "decode_errors", "trailing", "topic_ids")


def followed(folder, writes, tmp_path):
    """A live report of ``folder`` from its start, a step after each of
    ``writes`` and one more: ``(report, its figures, the batch report's)``,
    the figures checked equal."""
    clock = Clock()
    live = LiveReport(folder, tmp_path / "out", window=None, starting="earliest", unanswered_after=None,
                      clock=clock)
    for _ in writes:
        clock.t += 2
        live.step()
    clock.t += 2
    d = live.step()
    want = run_job([str(folder)], str(tmp_path / "batch"), workers=1, progress=False)
    for name in FIGURES:
        assert getattr(d, name) == getattr(want, name), name
    return live, d, want


def test_the_figures_of_a_growing_capture_are_the_reports(tmp_path):
    rng = random.Random(2)
    cut = tmp_path / "cut.pcap"
    resegment(SAMPLE, cut)
    folder = tmp_path / "cap"
    live, d, _want = followed(folder, grow(folder, roll(cut, folder, [900, 2500, 6000]), rng, most=150_000),
                              tmp_path)
    assert d.totals["requests"] == open_capture(folder).read_table("requests", columns=["conn"]).num_rows
    assert d.totals["connections"] == len({r["conn"] for r in open_capture(folder).read_table(
        "frames", columns=["conn"]).to_pylist()})
    live.write(d)
    page = (tmp_path / "out" / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert json.loads((tmp_path / "out" / "report.json").read_text())["totals"]["requests"] == d.totals["requests"]
    view = live.view(d)
    for text in ("requests/s", "p99 ms", "Errors:", "Busiest connections:", "UNSUPPORTED_VERSION"):
        assert text in view


def test_a_taps_rows_fed_as_written_give_the_reports_figures(tmp_path):
    """What ``tap --report`` does: the rows of the tap's tables handed over
    in pieces (record batches cut anywhere, connections and their pairing
    going on across them), the figures and connections those of the batch
    read of the tap's folder."""
    from kafkaproto.capture.formats.tapfiles import table_files
    from kafkaproto.report.live import FrameFeed

    folder = ROOT / "samples" / "capture" / "tap-kafka44"
    rows = pa.concat_tables(pa.ipc.open_stream(str(f)).read_all() for f in table_files(folder))
    feed = FrameFeed(folder.name)
    clock = Clock()
    live = LiveReport(feed, tmp_path / "out", window=None, clock=clock)
    rng = random.Random(3)
    at = 0
    while at < rows.num_rows:
        n = rng.randint(1, 300)
        for b in rows.slice(at, n).to_batches(max_chunksize=rng.randint(1, 100)):
            feed.push(b)
        at += n
        clock.t += 1
        live.step()
    feed.end()
    d = live.step()
    want = run_job([str(folder)], str(tmp_path / "batch"), workers=1, progress=False)
    for name in FIGURES:
        assert getattr(d, name) == getattr(want, name), name
    assert d.totals["requests"] == open_capture(folder).read_table("requests", columns=["conn"]).num_rows > 100
    assert live.read_bytes == open_capture(folder).read_table("frames", columns=["size"]).num_rows * 4 + sum(
        len(f) for f in rows.column("frame").to_pylist())
    assert "Produce" in live.view(d) and feed.skipped_rows == 0
    # a report that falls behind: the rows past its queue's bound are counted, not waited for
    small = FrameFeed("x", max_bytes=1)
    small.push(rows.slice(0, 5).to_batches()[0])
    small.push(rows.slice(5, 5).to_batches()[0])
    assert small.skipped_rows == 5
    slow = LiveReport(small, None, window=None)
    assert "5 frames recorded but not in these figures" in slow.view(slow.step())


def test_a_taps_rows_give_requests_waiting_past_the_timeout_as_unanswered(tmp_path):
    """The tap's live report (``tap --report``) counts a request waiting
    longer than its timeout, in the time of the frames, as a growing capture
    does; without a timeout, none (as the batch read of the tap's tables)."""
    from kafkaproto.report.live import FrameFeed
    from test_capture_stream import conversation_with_a_request_left_waiting

    conversation_with_a_request_left_waiting(tmp_path / "one.pcap")
    files = tap_files(tmp_path / "one.pcap", tmp_path / "written", batch_rows=3, ends=False)
    for after, want in ((None, []), (10_000_000_000, []), (2_500_000_000, [("Metadata", "app", 1)])):
        feed = FrameFeed("tap")
        live = LiveReport(feed, None, window=None, unanswered_after=after)
        for _name, blob in files:
            for b in pa.ipc.open_stream(blob):
                feed.push(b)
                live.step()
        feed.end()
        d = live.step()
        assert [(r["api"], r["client_id"], r["requests"]) for r in d.unanswered] == want, after
        assert d.totals["unanswered"] == len(want)


def test_the_figures_of_a_growing_tap_folder_are_the_reports(tmp_path):
    """``report --follow`` over the tap's folder while the tap writes it
    (record batches torn anywhere, files rolled mid-connection): the
    figures of the batch report over the finished folder."""
    rng = random.Random(4)
    files = tap_files(ROOT / "samples" / "capture" / "kafka44.pcap", tmp_path / "written")
    folder = tmp_path / "tap"
    live, d, want = followed(folder, grow(folder, [b for _n, b in files], rng, most=20_000,
                                          names=[n for n, _b in files]), tmp_path)
    assert d.totals["requests"] == want.totals["requests"] > 100
    assert live.read_bytes == sum(len(b) for _n, b in files)


def test_its_state_is_bounded_by_its_window(tmp_path):
    """Traffic that keeps coming (the sample written again and again, a
    second of capture time per step) while the window moves: the slices kept
    and the memory they hold stay flat."""
    folder = tmp_path / "cap"
    folder.mkdir()
    data = SAMPLE.read_bytes()
    clock = Clock()
    live = LiveReport(folder, None, window=10, slices=5, starting="earliest", clock=clock)
    held = []
    for k in range(40):
        (folder / f"cap.pcap{k}").write_bytes(data)
        clock.t += 1
        live.step()
        held.append((len(live.slices), sum(agg.connections().nbytes for _t, agg in live.slices)))
    assert max(n for n, _b in held) <= 6
    # the same traffic each second: once the window is full, what it holds no longer grows
    steady = [b for _n, b in held[15:]]
    assert max(steady) <= 1.5 * min(steady)
    # no traffic for longer than the window: nothing left
    clock.t += 11
    d = live.step()
    assert d.totals["requests"] == 0 and len(live.slices) == 1


def test_a_reader_never_sees_a_half_written_page(tmp_path):
    folder, out = tmp_path / "cap", tmp_path / "out"
    folder.mkdir()
    live = LiveReport(folder, out, window=None, starting="earliest")
    seen, stop = [], threading.Event()

    def read():
        while not stop.is_set():
            for name in ("report.html", "report.json"):
                try:
                    seen.append((name, (out / name).read_text()))
                except FileNotFoundError:
                    pass

    t = threading.Thread(target=read)
    t.start()
    try:
        data = SAMPLE.read_bytes()
        for k in range(1, 9):
            (folder / "cap.pcap").write_bytes(data[:k * len(data) // 8])
            live.write(live.step())
    finally:
        stop.set()
        t.join()
    assert seen
    for name, text in seen:
        if name == "report.html":
            assert text.rstrip().endswith("</html>")
        else:
            json.loads(text)
    assert not [n for n in os.listdir(out) if n.endswith(".tmp")]


def test_report_follow_shows_what_is_written_to_the_folder(tmp_path):
    folder, out = tmp_path / "cap", tmp_path / "out"
    folder.mkdir()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, "-m", "kafkaproto", "report", "--follow", str(folder), "--out", str(out),
                             "--refresh", "0.5", "--duration", "60"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not (out / "report.json").exists():
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.1)
        (folder / "cap.pcap").write_bytes(SAMPLE.read_bytes())  # written after the view started: it shows
        while json.loads((out / "report.json").read_text())["totals"].get("requests", 0) == 0:
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.1)
    finally:
        proc.kill()
        stdout, _err = proc.communicate()
    assert "kafkaproto live:" in stdout and "requests/s" in stdout
    bad = subprocess.run([sys.executable, "-m", "kafkaproto", "report", "--follow", str(folder), "x.pcap"], env=env,
                         capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--follow" in bad.stderr
    # the tap's output is followed as a pcap folder is
    (folder / "cap.pcap").unlink()
    for name, blob in tap_files(ROOT / "samples" / "capture" / "tap-kafka44", tmp_path / "written"):
        (folder / name).write_bytes(blob)
    done = subprocess.run([sys.executable, "-m", "kafkaproto", "report", "--follow", str(folder), "--out", str(out),
                           "--from-start", "--refresh", "0.5", "--duration", "1.5"], env=env, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads((out / "report.json").read_text())["totals"]["requests"] == open_capture(folder).read_table(
        "requests", columns=["conn"]).num_rows > 100
    # a folder it cannot follow (pcap files and the tap's tables): one line, exit 2
    (folder / "cap.pcap").write_bytes(SAMPLE.read_bytes())
    bad = subprocess.run([sys.executable, "-m", "kafkaproto", "report", "--follow", str(folder), "--duration", "5"],
                         env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "in one folder" in bad.stderr, bad.stderr
