"""``kafkaproto inspect`` as a protocol debugger: pipes and live streams,
filters on the frame columns, JSON and field dumps, closed pipes, input
that is no capture, and the summary's wording (issue 24)."""

from __future__ import annotations

import base64
import contextlib
import datetime
import io
import json
import os
import queue
import re
import struct
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from kafkaproto import encode_request, encode_response
from kafkaproto.__main__ import inspect, main
from kafkaproto.capture import Accounting, read_frames
from kafkaproto.capture.formats.pcap import CaptureFile
from kafkaproto.capture.formats.writer import PcapngWriter, PcapWriter, TcpConversation
from kafkaproto.capture.objects import CapturedFrame
from kafkaproto.capture.tools import inspect as inspect_mod
from kafkaproto.capture.tools.dissect import dissect, error_codes, format_line
from kafkaproto.capture.walker.packets import LINKTYPE_ETHERNET
from kafkaproto.capture.walker.streams import Connection
from kafkaproto.messages import get, request_class, response_class
from kafkaproto.protocol import request_header_version, response_header_version
from support.synthetic import write_capture

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
PCAP = SAMPLES / "capture" / "kafka.pcap"
TAP = next((SAMPLES / "capture" / "tap-mock").glob("*.arrows"))
RAW = SAMPLES / "requests.bin"
#: every capture committed to the repository (produced.json describes one: it is none)
COMMITTED = sorted([p for p in (SAMPLES / "capture").iterdir() if p.suffix != ".json"] + [RAW]
                   + list((ROOT / "tests" / "data" / "regressions").glob("capture-*")))
CLIENT, SERVER = ("10.1.0.1", 40001), ("10.1.0.2", 9092)
LINE = re.compile(r"^#(\d+)\s")


def cli(*args, **kw) -> subprocess.CompletedProcess:
    """``python -m kafkaproto ARGS`` (the engine of this pass: KAFKAPROTO_PURE is inherited)."""
    kw.setdefault("capture_output", True)
    kw.setdefault("timeout", 300)
    return subprocess.run([sys.executable, "-m", "kafkaproto", *map(str, args)], cwd=ROOT, **kw)


def numbers(text: str) -> list[int]:
    return [int(m.group(1)) for m in map(LINE.match, text.splitlines()) if m]


def run_inspect(path, **kw) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = inspect(str(path), out, err=err, **kw)
    return status, out.getvalue(), err.getvalue()


def metadata_pair(cid: int, client_id: str = "live"):
    req = encode_request(get("MetadataRequest")(topics=[]), 12, cid, client_id)
    broker = get("MetadataResponse").MetadataResponseBroker(node_id=1, host="broker", port=9092)
    return req, encode_response(get("MetadataResponse")(brokers=[broker]), 12, cid)


def write_conversation(path, pairs, fmt="pcap"):
    c = TcpConversation(CLIENT, SERVER)
    packets = c.handshake()
    for req, resp in pairs:
        packets += c.send(True, req) + c.send(False, resp)
    packets += c.close()
    with open(path, "wb") as f:
        w = PcapWriter(f) if fmt == "pcap" else PcapngWriter(f)
        if fmt != "pcap":
            w.interface(LINKTYPE_ETHERNET)
        for ts, data in packets:
            w.write(ts, data)
    return path


@pytest.fixture(scope="module")
def sample_pcapng(tmp_path_factory):
    """The committed pcap's packets as pcapng."""
    path = tmp_path_factory.mktemp("pcapng") / "kafka.pcapng"
    with open(PCAP, "rb") as src, open(path, "wb") as dst:
        w = PcapngWriter(dst)
        w.interface(LINKTYPE_ETHERNET)
        for ts, _link, data, orig in CaptureFile(src):
            w.write(ts, data, orig_len=orig)
    return path


@pytest.fixture(scope="module")
def chatty(tmp_path_factory):
    """A synthetic capture of both casts: many APIs, clients, connections, errors, record sets."""
    path = tmp_path_factory.mktemp("chatty") / "mixed.pcap"
    write_capture(path, size=1 << 20, profile="mixed", seed=3, small_share=0.5)
    return path


def objects(path):
    """The objects path (read_frames + dissect): what the columns path must agree with."""
    return list(enumerate(dissect(read_frames(str(path))), 1))


# --------------------------------------------------------------------------
# Found: a pipe, /dev/stdin, <(...) and FIFOs are read as streams
# --------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["dash", "dev-stdin", "process-substitution", "fifo"])
def test_a_pipe_reads_as_the_file_does(tmp_path, how):
    want = cli("inspect", PCAP)
    assert want.returncode == 0 and b"2009 frames" in want.stdout
    if how == "dash":
        got = cli("inspect", "-", input=PCAP.read_bytes())
    elif how == "dev-stdin":
        got = cli("inspect", "/dev/stdin", input=PCAP.read_bytes())
    elif how == "process-substitution":
        got = subprocess.run(["bash", "-c", f'"{sys.executable}" -m kafkaproto inspect <(cat "{PCAP}")'],
                             capture_output=True, timeout=300, cwd=ROOT)
    else:
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)
        writer = threading.Thread(target=lambda: fifo.write_bytes(PCAP.read_bytes()))
        writer.start()
        got = cli("inspect", fifo)
        writer.join()
    assert got.returncode == 0, got.stderr
    assert got.stdout == want.stdout  # every frame line, the summary and the accounting


@pytest.mark.parametrize("kind", ["pcapng", "tap", "raw"])
def test_standard_input_of_every_kind(sample_pcapng, kind):
    path = {"pcapng": sample_pcapng, "tap": TAP, "raw": RAW}[kind]
    want = cli("inspect", path)
    got = cli("inspect", "-", input=path.read_bytes())
    assert got.returncode == want.returncode == 0, got.stderr
    assert got.stdout == want.stdout
    assert len(numbers(got.stdout.decode())) == {"pcapng": 2009, "tap": 725, "raw": 7}[kind]


def test_standard_input_that_is_a_file_is_read_as_that_file():
    with open(PCAP, "rb") as fh:
        got = cli("inspect", "-", stdin=fh)
    assert got.returncode == 0 and got.stdout == cli("inspect", PCAP).stdout


def test_a_cut_stream_says_where_it_was_cut():
    data = PCAP.read_bytes()[:100_000]
    got = cli("inspect", "-", input=data)
    assert got.returncode == 0
    text = got.stdout.decode()
    assert "error: <stdin>: record 717 cut short: 96 of 152 bytes" in text and "112 file bytes unread" in text
    tap = cli("inspect", "-", input=TAP.read_bytes()[:100_000]).stdout.decode()
    assert "error: <stdin>: cut or damaged inside batch 5 at byte 69792" in tap and "30208 file bytes unread" in tap
    assert "308 frames" in tap


def test_the_accounting_of_a_stream_adds_up(monkeypatch):
    """Read through StreamInput (a pipe) in-process: the same frames and books as the file."""
    r, w = os.pipe()
    data = PCAP.read_bytes()
    writer = threading.Thread(target=lambda: (os.write(w, data), os.close(w)))
    writer.start()
    acc = Accounting()
    stream = inspect_mod.StreamInput(r, "pipe", owned=True)
    monkeypatch.setattr(inspect_mod, "_stream_of", lambda path: stream)
    kind, batches, live = inspect_mod.open_input("pipe", acc=acc)
    frames = sum(len(b) for b in batches)
    writer.join()
    assert (kind, live, frames) == ("pcap", True, 2009) and stream.closed  # read to its end, and closed
    acc.check()
    assert acc.file_bytes == len(data) and acc.frames_total == 2009 and not acc.errors


# --------------------------------------------------------------------------
# goal: a live pipe shows frames as they arrive
# --------------------------------------------------------------------------


class _Lines:
    """inspect's standard output, line by line, as it comes."""

    def __init__(self, stream) -> None:
        self.q: queue.Queue = queue.Queue()
        self.t = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self.t.start()

    def _pump(self, stream) -> None:
        for line in stream:
            self.q.put(line)
        self.q.put(None)

    def next(self) -> str:
        line = self.q.get(timeout=60)
        assert line is not None, "inspect ended before the writer closed its input"
        return line


def _tap_writer(f):
    """Frames written as the tap writes them: one Arrow IPC stream, a batch at a time."""
    import pyarrow as pa

    from kafkaproto.capture.formats.tapfiles import frame_schema, frames_to_table

    w = pa.ipc.new_stream(f, frame_schema())
    conn = Connection(1, "10.1.0.1:40001", "10.1.0.2:9092")
    clock = [1_700_000_000_000_000_000]

    def send(req, resp):
        clock[0] += 1_000_000
        corr = int.from_bytes(req[8:12], "big")
        rows = [CapturedFrame(clock[0], conn, "request", 0, req[4:], 3, 12, corr),
                CapturedFrame(clock[0] + 500_000, conn, "response", 0, resp[4:], 3, 12, corr, clock[0])]
        for batch in frames_to_table(rows).to_batches():
            w.write_batch(batch)
        f.flush()

    return send


@pytest.mark.parametrize("how,kind", [("fifo", "pcap"), ("stdin", "pcapng"), ("stdin", "raw"), ("fifo", "tap")])
def test_a_live_pipe_shows_frames_as_they_arrive(tmp_path, how, kind):
    """The writer sends one exchange, waits until inspect has printed it, then
    sends the next: every line comes while the input is still open."""
    if how == "fifo":
        fifo = tmp_path / "live"
        os.mkfifo(fifo)
        proc = subprocess.Popen([sys.executable, "-m", "kafkaproto", "inspect", str(fifo)], cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        f = open(fifo, "wb", buffering=0)
    else:
        proc = subprocess.Popen([sys.executable, "-m", "kafkaproto", "inspect", "-"], cwd=ROOT,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        f = proc.stdin.buffer if hasattr(proc.stdin, "buffer") else proc.stdin
    lines = _Lines(proc.stdout)
    try:
        if kind in ("pcap", "pcapng"):
            w = PcapWriter(f) if kind == "pcap" else PcapngWriter(f)
            if kind == "pcapng":
                w.interface(LINKTYPE_ETHERNET)
            conv = TcpConversation(CLIENT, SERVER)
            for ts, data in conv.handshake():
                w.write(ts, data)

            def send(req, resp):
                for ts, data in conv.send(True, req) + conv.send(False, resp):
                    w.write(ts, data)
                f.flush()
        elif kind == "raw":
            def send(req, resp):
                f.write(req)
                f.flush()
        else:
            send = _tap_writer(f)
        for cid in range(1, 4):
            send(*metadata_pair(cid))
            first = lines.next()
            assert f"cid={cid} " in first and "Metadata" in first and "client='live'" in first, first
            if kind != "raw":  # a raw stream holds requests alone
                second = lines.next()
                assert f"cid={cid} " in second and "brokers=broker:9092" in second, second
            time.sleep(0.2)
            assert proc.poll() is None
    finally:
        f.close()
    tail = []
    while (line := lines.q.get(timeout=60)) is not None:
        tail.append(line)
    assert proc.wait(timeout=60) == 0, proc.stderr.read()
    assert tail[0].startswith(f"{3 if kind == 'raw' else 6} frames, 0 undecodable")


def test_a_stream_stops_at_the_limit():
    """--limit on a stream ends inspect once it has printed that many, the
    input still open (a live capture may run on for ever)."""
    proc = subprocess.Popen([sys.executable, "-m", "kafkaproto", "inspect", "-", "--limit", "2"], cwd=ROOT,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    for cid in range(1, 3):
        proc.stdin.write(metadata_pair(cid)[0])
        proc.stdin.flush()
    assert proc.wait(timeout=120) == 0, proc.stderr.read()
    text = proc.stdout.read().decode()
    proc.stdin.close()
    assert numbers(text) == [1, 2] and "stopped after 2 frames" in text


# --------------------------------------------------------------------------
# filters: on the columns, before any decoding
# --------------------------------------------------------------------------


def _expected(items, keep):
    return [n for n, d in items if keep(d)]


def test_filters_select_what_the_objects_path_selects(chatty):
    items = objects(chatty)
    some = items[len(items) // 3][1].frame
    later = items[2 * len(items) // 3][1].frame
    conn = items[40][1].frame.conn
    cases = [
        (dict(apis={3, 0}), lambda d: d.frame.api_key in (3, 0)),
        (dict(clients=["lag-*"]), lambda d: (d.client_id or "").startswith("lag-")),
        (dict(connections=[f"c{conn.id}"]), lambda d: d.frame.conn is conn or d.frame.conn.id == conn.id),
        (dict(connections=[conn.client]), lambda d: d.frame.conn.client == conn.client),
        (dict(connections=[conn.server.rpartition(":")[0]]), lambda d: True),
        (dict(since=some.ts, until=later.ts), lambda d: d.frame.ts is not None and some.ts <= d.frame.ts <= later.ts),
        (dict(apis={1, 8, 11}, clients=["analytics-*", "alerting-0"], since=some.ts),
         lambda d: d.frame.api_key in (1, 8, 11) and (d.client_id or "").startswith(("analytics-", "alerting-0"))
         and d.frame.ts >= some.ts),
        (dict(errors=True), lambda d: d.error is not None or bool(error_codes(d.message))),
        (dict(errors=True, apis={11}), lambda d: d.frame.api_key == 11 and bool(error_codes(d.message))),
    ]
    for kw, keep in cases:
        status, out, _ = run_inspect(chatty, **kw)
        want = _expected(items, keep)
        assert want, kw
        assert status == 0 and numbers(out) == want, kw
        assert f"{len(items)} frames, {len(want)} match the filters" in out


def test_times_as_iso_epoch_and_time_of_day(chatty):
    items = objects(chatty)
    a, b = items[100][1].frame.ts, items[110][1].frame.ts
    want = _expected(items, lambda d: a <= d.frame.ts <= b)
    iso = datetime.datetime.fromtimestamp(a // 10**9, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    frac = f".{a % 10**9:09d}"
    epoch_b = f"{b // 10**9}.{b % 10**9:09d}"
    for since, until in ((iso + frac + "Z", epoch_b), (iso + frac + "+00:00", epoch_b),
                         (iso[11:] + frac, None)):  # a time of day, as inspect prints it
        args = ["inspect", str(chatty), "--since", since] + (["--until", until] if until else [])
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(args) == 0
        got = numbers(out.getvalue())
        assert (got[:len(want)] if until is None else got) == want, (since, until)


def test_filtered_out_frames_are_never_decoded(chatty, monkeypatch):
    calls, looked = [], []
    real, key = inspect_mod.decode_frame, inspect_mod.Summaries.key
    monkeypatch.setattr(inspect_mod, "decode_frame", lambda *a, **k: calls.append(1) or real(*a, **k))
    monkeypatch.setattr(inspect_mod.Summaries, "key", lambda *a, **k: looked.append(1) or key(*a, **k))
    status, out, _ = run_inspect(chatty, apis={12})  # Heartbeat
    picked = numbers(out)
    # each picked frame's header read; its body decoded unless the same body was seen before
    assert picked and len(looked) == len(picked) and 0 < len(calls) <= len(picked)
    total = len(objects(chatty))
    m = re.search(r"frames: (\d+): decoded (\d+), framed (\d+)", out)
    assert m and (int(m[1]), int(m[2]), int(m[3])) == (total, len(picked), total - len(picked))


def test_filter_arguments_are_checked():
    assert inspect_mod.parse_apis("produce, Fetch,3") == {0, 1, 3}
    for bad in ("Nope", "9999"):
        with pytest.raises(ValueError):
            inspect_mod.parse_apis(bad)
    assert inspect_mod.parse_time("1795401323.25") == 1795401323250000000
    assert inspect_mod.parse_time("2026-11-23T03:35:23.253893001+01:00") == 1795401323253893001
    assert inspect_mod.parse_time("02:35:23.5") == ("day", (2 * 3600 + 35 * 60 + 23) * 10**9 + 5 * 10**8)
    for bad in ("yesterday", "25:00", "2026-13-01", ""):
        with pytest.raises(ValueError):
            inspect_mod.parse_time(bad)
    got = cli("inspect", PCAP, "--api", "Nope")
    assert got.returncode == 2 and b"no api named 'Nope'" in got.stderr


def test_limit_prints_that_many_and_counts_them_all():
    status, out, _ = run_inspect(PCAP, limit=5)
    assert status == 0 and numbers(out) == [1, 2, 3, 4, 5] and out.count("\n#") == 4
    assert "2009 frames, 0 undecodable" in out and "frames: 2009: decoded 2009" in out


# --------------------------------------------------------------------------
# goal: --json names every field of every decoded frame
# --------------------------------------------------------------------------


def _expect_plain(value, infos):
    """What the JSON must hold for a struct: its version's fields, each by
    name, from the object's own to_dict() (bytes in base64, UUIDs as text)."""
    d = value.to_dict()
    out = {}
    for fi in infos:
        v = d[fi.name]
        if fi.fields and v is not None:
            objs = getattr(value, fi.name)
            v = [_expect_plain(o, fi.fields) for o in objs] if fi.type.startswith("[]") else \
                _expect_plain(objs, fi.fields)
        else:
            v = _expect_value(v)
        out[fi.name] = v
    if value.unknown_tagged_fields:
        out["unknown_tagged_fields"] = [{"tag": t, "data": base64.b64encode(b).decode()}
                                        for t, b in value.unknown_tagged_fields]
    return out


def _expect_value(v):
    if isinstance(v, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(v)).decode()
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, list):
        return [_expect_value(x) for x in v]
    return v


def _names(infos) -> set:
    return {fi.name for fi in infos}


def check_json(path, *, minimum: int = 0) -> list[dict]:
    status, out, err = run_inspect(path, json=True)
    assert status in (0, 1), err
    rows = [json.loads(line) for line in out.splitlines()]
    items = objects(path)
    assert len(rows) == len(items) >= minimum
    m = re.match(r"(\d+) frames", err)
    assert m and int(m[1]) == len(rows)  # the summary goes to standard error
    for row, (n, d) in zip(rows, items):
        f = d.frame
        assert row["frame"] == n and row["direction"] == f.direction
        assert (row["api_key"], row["api_version"], row["correlation_id"]) == (f.api_key, f.api_version,
                                                                               f.correlation_id)
        assert row["connection"]["client"] == f.conn.client and row["size"] == len(f.frame) + 4
        assert row["ts_ns"] == f.ts and row["latency_ns"] == f.latency_ns and row["client_id"] == d.client_id
        if d.error is not None:
            assert row["message"] is None and row["error"]["message"] == d.error
            assert row["status"] == ("unpaired" if f.status == "unpaired" else "undecodable")
            continue
        assert row["status"] == "decoded" and row["error"] is None
        is_request = f.direction == "request"
        cls = (request_class if is_request else response_class)(f.api_key)
        infos = cls.fields(f.api_version)
        msg = row["message"]
        assert set(msg) - {"unknown_tagged_fields"} == _names(infos)
        assert msg == _expect_plain(d.message, infos)
        hv = (request_header_version if is_request else response_header_version)(f.api_key, f.api_version)
        assert row["header_version"] == hv
        want_header = {"correlation_id": f.correlation_id}
        if is_request:
            want_header.update(api_key=f.api_key, api_version=f.api_version)
            if hv >= 1:
                want_header["client_id"] = d.header.client_id
        assert {k: v for k, v in row["header"].items() if k != "unknown_tagged_fields"} == want_header
        assert row["trailing_bytes"] == (d.trailing_bytes or 0)
        assert [(e["path"], e["code"]) for e in row["error_codes"]] == error_codes(d.message)
    return rows


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.name)
def test_json_of_every_committed_capture(path):
    rows = check_json(path)
    assert bool(rows) == (path.parent.name != "regressions")  # those are damaged: no frame in them


def test_json_of_a_capture_with_every_kind_of_field(chatty):
    rows = check_json(chatty, minimum=1000)
    apis = {r["api"] for r in rows}
    assert {"Produce", "Fetch", "Metadata", "JoinGroup", "SyncGroup", "OffsetCommit", "ConsumerGroupHeartbeat"} <= apis
    fetch = next(r for r in rows if r["api"] == "Fetch" and r["direction"] == "response"
                 and any(p["records"] for t in r["message"]["responses"] for p in t["partitions"]))
    records = next(p["records"] for t in fetch["message"]["responses"] for p in t["partitions"] if p["records"])
    assert base64.b64decode(records)[8:12]  # a record batch, in base64
    by_id = next(r for r in rows if r["api"] == "Fetch" and r["api_version"] >= 13 and r["direction"] == "request")
    uuid.UUID(by_id["message"]["topics"][0]["topic_id"])  # UUIDs as text
    assert any(r["error_codes"] for r in rows)


def bad_conversation(path):
    """Metadata v12 answered; Metadata v4 answered by a cut response; a response no request asked for."""
    req, resp = metadata_pair(1)
    c = TcpConversation(CLIENT, SERVER)
    packets = c.handshake() + c.send(True, req) + c.send(False, resp)
    packets += c.send(True, encode_request(get("MetadataRequest")(topics=[]), 4, 2, "c"))
    packets += c.send(False, struct.pack(">ii", 6, 2) + b"\0\0")
    packets += c.send(False, struct.pack(">ii", 8, 99) + b"\0\0\0\0")
    with open(path, "wb") as f:
        w = PcapWriter(f)
        for ts, data in packets:
            w.write(ts, data)
    return path


def test_json_of_undecodable_and_unpaired_frames(tmp_path):
    path = bad_conversation(tmp_path / "bad.pcap")
    status, out, err = run_inspect(path, json=True)
    rows = [json.loads(line) for line in out.splitlines()]
    assert status == 1 and len(rows) == 5
    bad = rows[3]
    assert bad["status"] == "undecodable" and bad["message"] is None and bad["header"] == {"correlation_id": 2}
    assert bad["error"]["path"] == "throttle_time_ms" and bad["error"]["offset"] == 4
    assert bad["error"]["message"].startswith("MetadataResponse v4 .throttle_time_ms at byte 4")
    assert rows[4]["status"] == "unpaired" and rows[4]["api_key"] is None and rows[4]["correlation_id"] == 99
    assert "2 undecodable (1 unpaired responses)" in err
    check_json(path)


# --------------------------------------------------------------------------
# --verbose: a field dump per frame
# --------------------------------------------------------------------------


def test_verbose_dumps_every_field_indented(tmp_path):
    path = bad_conversation(tmp_path / "v.pcap")
    status, out, _ = run_inspect(path, verbose=True)
    assert status == 1
    lines = out.splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith("#2 "))
    block = lines[i + 1:i + 30]
    assert block[0] == "    header v1:" and block[1] == "      correlation_id: 1"  # flexible: v1
    assert "    MetadataResponse v12:" in block
    assert "      brokers: [1]" in block and "        [0]" in block
    assert "          host: 'broker'" in block and "          port: 9092" in block
    assert "      cluster_id: None" in block
    j = next(k for k, line in enumerate(lines) if line.startswith("#4 "))
    assert "undecodable: MetadataResponse v4" in lines[j]
    assert lines[j + 1] == "    header v0:"
    assert any(line.startswith("    error at ") and "byte" in line for line in lines[j + 1:j + 12])


def test_verbose_shows_bytes_as_hex(chatty):
    status, out, _ = run_inspect(chatty, verbose=True, apis={0}, limit=4)
    assert re.search(r"^ +records: <\d+ bytes> [0-9a-f]{2}( [0-9a-f]{2})+ \.\.\.$", out, re.M)


# --------------------------------------------------------------------------
# Found: a closed pipe ends quietly; input that is no capture says so
# --------------------------------------------------------------------------


def _closed_pipe_run(*args) -> subprocess.CompletedProcess:
    r, w = os.pipe()
    os.close(r)  # the reader is gone before anything is written (| head that has had its lines)
    try:
        return cli(*args, stdout=w, capture_output=False, stderr=subprocess.PIPE)
    finally:
        os.close(w)


@pytest.mark.parametrize("extra", [[], ["--json"], ["-v"]])
def test_inspect_into_a_closed_pipe_ends_quietly(extra):
    got = _closed_pipe_run("inspect", PCAP, *extra)
    assert got.returncode == 0 and got.stderr == b""
    with subprocess.Popen([sys.executable, "-m", "kafkaproto", "inspect", str(PCAP)], cwd=ROOT,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        first = proc.stdout.readline()
        proc.stdout.close()  # | head -1
        err = proc.stderr.read()
    assert first.startswith(b"#1 ") and proc.returncode == 0 and b"Traceback" not in err


def test_report_into_a_closed_pipe_ends_quietly(tmp_path):
    got = _closed_pipe_run("report", RAW, "--out", tmp_path / "out", "--quiet", "--workers", "1")
    assert b"Traceback" not in got.stderr and b"BrokenPipe" not in got.stderr
    assert got.returncode == 0 and (tmp_path / "out" / "report.html").exists()


@pytest.mark.parametrize("content", [b"# a text file\nnot a capture\n", b"\x00\x5f\x00\x00 garbage", bytes(range(256))])
def test_a_file_that_is_no_capture_fails_clearly(tmp_path, content):
    path = tmp_path / "notes.txt"
    path.write_bytes(content)
    status, out, err = run_inspect(path)
    assert status == 2 and out == ""
    assert err.startswith(f"kafkaproto inspect: {path}: not a capture: not pcap or pcapng, not a tap table, and it "
                          "does not start with a Kafka request frame (first bytes: ")
    got = cli("inspect", "-", input=content)
    assert got.returncode == 2 and b"<stdin>: not a capture" in got.stderr and got.stdout == b""


def test_empty_input_and_tables_in_a_pipe_fail_clearly(tmp_path):
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    status, _, err = run_inspect(empty)
    assert status == 2 and "empty: no capture to read" in err
    got = cli("inspect", "-", input=b"")
    assert got.returncode == 2 and b"no bytes came" in got.stderr
    got = cli("inspect", "-", input=b"PAR1" + bytes(64))
    assert got.returncode == 2 and b"give its path, not a pipe" in got.stderr
    assert cli("inspect", tmp_path / "missing.pcap").returncode == 2


# --------------------------------------------------------------------------
# Found: 'trailing bytes' means bytes after a body, and nothing else
# --------------------------------------------------------------------------


def test_trailing_bytes_and_cut_bytes_are_told_apart(tmp_path):
    good = encode_request(get("MetadataRequest")(topics=[]), 4, 1, "c")
    longer = len(good) - 4 + 3
    extra = longer.to_bytes(4, "big") + good[4:] + b"xyz"  # 3 bytes after its body
    path = tmp_path / "s.bin"
    path.write_bytes(good + extra + b"\x00\x00")  # and a frame cut after 2 bytes
    status, out, _ = run_inspect(path)
    assert status == 0
    lines = out.splitlines()
    assert lines[1].endswith("[3 bytes after the body]")
    assert lines[2].startswith("2 frames, 0 undecodable, 0 using versions Kafka 4.0 removed, 1 with trailing bytes "
                               "after their body, 2 bytes of frames cut off by a gap or the end of a stream;")
    assert "2 trailing bytes" not in out
    _, out, _ = run_inspect(path, json=True)
    assert [json.loads(line)["trailing_bytes"] for line in out.splitlines()] == [0, 3]


def test_the_wording_is_the_same_from_a_pipe(tmp_path):
    got = cli("inspect", "-", input=PCAP.read_bytes()[:-10])
    text = got.stdout.decode()
    assert "with trailing bytes after their body" in text and "bytes of frames cut off" in text


def test_the_docs_page_runs_and_names_every_option(capsys):
    import shlex

    section = (ROOT / "docs" / "inspect.md").read_text()
    for option in ("inspect -", "--api", "--client", "--connection", "--errors", "--since", "--until", "--limit",
                   "--json", "--verbose", "base64"):
        assert option in section, option
    runnable = [line for line in section.splitlines() if line.startswith("kafkaproto inspect samples/")]
    assert runnable
    for line in runnable:
        args = shlex.split(line.split("#")[0])[1:]
        assert main(args) == 0, line
        out = capsys.readouterr().out
        assert numbers(out) and all(re.search(r" (Metadata|FindCoordinator) ", x) for x in out.splitlines()
                                    if LINE.match(x))


def test_json_into_head_ends_quietly_and_reads_no_further(tmp_path):
    """``inspect --json X | head -1``: the reader goes away; the read stops soon after (no summary: it
    was not read to the end), status 0, nothing on standard error."""
    cap = tmp_path / "big.pcap"
    write_capture(cap, size=16 << 20, profile="small", small_scale=4)
    proc = subprocess.Popen([sys.executable, "-m", "kafkaproto", "inspect", "--json", str(cap)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 0 and json.loads(first)["frame"] == 1
    assert err == "", err[-2000:]


def test_the_decoded_count_agrees_with_the_ledger(tmp_path):
    """With filters, the summary's "(N decoded)" is the ledger's decoded frames (an unpaired response
    is examined, not decoded; an undecodable one is counted as such)."""
    out, err = io.StringIO(), io.StringIO()
    inspect(str(bad_conversation(tmp_path / "bad.pcap")), out, err=err, errors=True)
    text = out.getvalue()
    decoded = int(re.search(r"\((\d+) decoded\)", text).group(1))
    ledger = int(re.search(r"^frames: \d+: .*?decoded (\d+)", text, re.M).group(1))
    assert decoded == ledger == 3


def _fresh_lines(path) -> list[str]:
    """What each frame's line says decoded on its own (the objects path), without its number."""
    return [format_line(0, d).split(" ", 1)[1].lstrip() for d in dissect(read_frames(str(path)))]


def _numbered(out: str) -> list[str]:
    return [line.split(" ", 1)[1].lstrip() for line in out.splitlines() if LINE.match(line)]


def test_a_body_seen_before_is_said_as_a_fresh_decode_says_it(tmp_path):
    """inspect remembers what a line says of a body by the body's bytes (real
    traffic repeats them); every line is what decoding that frame alone gives."""
    from support.replica import replicate

    path = tmp_path / "rep.pcap"
    replicate(PCAP, path, 3)
    status, out, _ = run_inspect(path)
    assert status == 0
    got = _numbered(out)
    assert got == _fresh_lines(path) and len(got) > 3000


def test_a_known_body_behind_a_damaged_header_is_not_taken_for_the_known_one(tmp_path):
    req, resp = metadata_pair(1)
    req2, resp2 = metadata_pair(2)
    # the second response's flexible header claims a tagged field its frame does not hold
    bad = bytearray(resp2)
    assert bad[8] == 0  # size (4), correlation id (4), then the header's tagged-field count
    bad[8] = 0x7F
    path = write_conversation(tmp_path / "c.pcap", [(req, resp), (req2, bytes(bad)), (req, resp)])
    status, out, _ = run_inspect(path)
    lines = _numbered(out)
    assert lines == _fresh_lines(path)
    assert "undecodable" in lines[3] and "undecodable" not in lines[1] + lines[5]
    assert status == 1
