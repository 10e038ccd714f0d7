"""The recording proxy: bytes forwarded unchanged, broker addresses rewritten,
every frame recorded; with real clients against tansu and librdkafka's mock
cluster (several brokers), and against a scripted upstream."""

from __future__ import annotations

import os
import socket
import struct
import subprocess
import sys
import threading
import time

import pyarrow.compute as pc
import pytest

from kafkaproto import FrameReader, decode_response, encode_request, encode_response, split_frames
from kafkaproto.capture import Accounting, read_frames
from kafkaproto.capture.formats.tapfiles import FrameTableWriter, iter_table_frames, table_files
from kafkaproto.capture.objects import CapturedFrame
from kafkaproto.capture.tools.dissect import dissect
from kafkaproto.capture.tools.tap import Tap
from kafkaproto.capture.walker.streams import Connection
from kafkaproto.messages import (
    ApiVersionsRequest,
    DescribeClusterRequest,
    DescribeClusterResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
)
from peers import clients
from peers.brokers import MockCluster

pytestmark = [pytest.mark.peers, pytest.mark.filterwarnings("ignore:.*is deprecated. Use files:DeprecationWarning")]


def recorded(out_dir):
    acc = Accounting()
    items = list(dissect(read_frames(out_dir, acc=acc), acc))
    acc.check()
    return items, acc


def address_holders(msg):
    return list(getattr(msg, "brokers", None) or ()) + list(getattr(msg, "coordinators", None) or ()) + [msg]


def assert_only_addresses_differ(out_dir) -> int:
    """Every rewritten response the tap recorded differs from the broker's frame
    in its broker addresses only: put the broker's hosts and ports back into the
    rewrite, re-encode it, and the broker's bytes come back → how many were checked."""
    import pyarrow as pa

    checked = 0
    for path in table_files(out_dir):
        with pa.ipc.open_stream(pa.OSFile(str(path))) as stream:
            table = stream.read_all()
        for row in table.filter(pc.is_valid(table["rewritten"])).to_pylist():
            key, version, original, rewritten = row["api_key"], row["api_version"], row["frame"], row["rewritten"]
            assert rewritten != original
            _, theirs = decode_response(original, key, version)
            header, ours = decode_response(rewritten, key, version)
            for mine, broker in zip(address_holders(ours), address_holders(theirs)):
                if hasattr(broker, "host"):
                    mine.host, mine.port = broker.host, broker.port
            again = encode_response(ours, version, header.correlation_id, header.unknown_tagged_fields or None)
            assert again[4:] == original, (key, version)
            checked += 1
    return checked


# --------------------------------------------------------------------------
# real clients
# --------------------------------------------------------------------------


@pytest.mark.parametrize("client,codec", [("confluent", "zstd"), ("kafka_python", "gzip"), ("aiokafka", "lz4"),
                                          ("kcat", "snappy")])
def test_real_clients_through_the_tap_to_tansu(tansu, tmp_path, client, codec):
    # tansu advertises its own port: only the rewrite keeps clients on the tap
    with Tap((tansu.host, tansu.port), tmp_path / "tap") as tap:
        topic = clients.unique_topic("tap")
        clients.create_topic(tap.bootstrap, topic)
        records = [{"key": b"k%d" % i, "value": b"v" * (i * 50), "headers": [("h", b"x"), ("h", b"y")]}
                   for i in range(3)]
        kw = {"librdkafka": "bundled"} if client == "kcat" else {}
        sent = clients.produce(client, tap.bootstrap, topic, records, codec, timeout=20, **kw)
        got = clients.consume_confluent(tap.bootstrap, topic, len(sent), timeout=20)
        clients.assert_same_records(sent, got)
    stats = dict(tap.stats)  # after stop: connections still open a moment ago are recorded too
    assert stats["rewritten"] > 0 and stats["rewrite_failed"] == 0
    assert assert_only_addresses_differ(tmp_path / "tap") == stats["rewritten"]
    items, acc = recorded(tmp_path / "tap")
    assert all(d.error is None for d in items), [d.error for d in items if d.error]
    apis = {d.frame.api_key for d in items}
    assert {0, 1, 3, 18} <= apis  # Produce and Fetch went through the tap too
    assert acc.frames["decoded"] == len(items) == stats["frames"]
    # the recorded responses are the broker's; the forwarded rewrite names the tap
    meta = [d for d in items if d.frame.api_key == 3 and d.frame.direction == "response"]
    assert meta and all(b.port == tansu.port for d in meta for b in d.message.brokers)


def test_mock_cluster_with_three_brokers(tmp_path):
    from confluent_kafka import Producer

    with MockCluster(num_brokers=3) as mock, Tap(mock.brokers[0], tmp_path / "tap") as tap:
        topic = clients.unique_topic("tapmock")
        clients.create_topic(tap.bootstrap, topic)
        md = Producer({"bootstrap.servers": mock.bootstrap}).list_topics(topic, timeout=10)  # direct, not rewritten
        leaders = {p: pm.leader for p, pm in md.topics[topic].partitions.items()}
        address = {b.id: f"{b.host}:{b.port}" for b in md.brokers.values()}
        records = [{"key": b"key-%d" % i, "value": b"value-%d" % i} for i in range(3)]
        for p in sorted(leaders):  # one batch per partition, each to its leader through the tap
            clients.produce_confluent(tap.bootstrap, topic, records, "gzip", partition=p, timeout=20)
        got = clients.consume_confluent(tap.bootstrap, topic, 3 * len(leaders), timeout=20)
        assert len(got) == 3 * len(leaders)
        routes = dict(tap.routes)
    # one listener per broker
    assert {(h, p) for h, p in mock.brokers} <= set(routes)
    assert assert_only_addresses_differ(tmp_path / "tap") > 0
    items, acc = recorded(tmp_path / "tap")
    produced_to = {d.frame.conn.server for d in items if d.frame.api_key == 0}
    assert produced_to == {address[leader] for leader in leaders.values()}
    assert acc.frames.get("undecodable", 0) == 0


# --------------------------------------------------------------------------
# a scripted upstream: exact bytes
# --------------------------------------------------------------------------


class LoopbackUpstream:
    """A server on 127.0.0.1 that hands each connection to ``_conn`` on a thread."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            threading.Thread(target=self._conn, args=(conn,), daemon=True).start()

    def _conn(self, conn) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        self.sock.close()


class ScriptedBroker(LoopbackUpstream):
    """Answers each request frame with ``reply(api_key, version, corr)`` bytes."""

    def __init__(self, reply) -> None:
        self.reply = reply
        super().__init__()

    def _conn(self, conn) -> None:
        buf = b""
        conn.settimeout(0.2)
        with conn:
            while not self.stop.is_set():
                try:
                    data = conn.recv(65536)
                except TimeoutError:
                    continue
                if not data:
                    return
                buf += data
                frames, used = split_frames(buf)
                for f in frames:
                    key, version, corr = struct.unpack_from(">hhi", f, 0)
                    conn.sendall(self.reply(key, version, corr))
                buf = buf[used:]


def _recv(sock, n, timeout=5.0):
    sock.settimeout(timeout)
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            break
        buf += chunk
    return buf


def test_rewrites_only_address_responses_and_passes_the_rest_byte_for_byte(tmp_path):
    B = MetadataResponse.MetadataResponseBroker
    odd = b"\x00\x00\x00\x0b" + b"\x00\x00\x00\x01" + b"\x00\x12\x00\x00\x00\x00\x00"  # raw ApiVersions-ish reply

    def reply(key, version, corr):
        if key == 18:
            return odd[:4] + struct.pack(">i", corr) + odd[8:]
        if key == 3:
            return encode_response(MetadataResponse(brokers=[B(node_id=1, host="127.0.0.1", port=upstream.port),
                                                             B(node_id=2, host="127.0.0.1", port=1)]), version, corr)
        if key == 10 and version < 4:
            return encode_response(FindCoordinatorResponse(node_id=2, host="127.0.0.1", port=1), version, corr)
        if key == 10:
            C = FindCoordinatorResponse.Coordinator
            coordinators = [C(key="g", node_id=2, host="127.0.0.1", port=1),
                            C(key="h", error_code=15, host="", port=-1)]
            return encode_response(FindCoordinatorResponse(coordinators=coordinators), version, corr)
        if key == 60:
            D = DescribeClusterResponse.DescribeClusterBroker
            return encode_response(DescribeClusterResponse(brokers=[D(broker_id=2, host="127.0.0.1", port=1)]),
                                   version, corr)
        raise AssertionError(key)

    upstream = ScriptedBroker(reply)
    try:
        with Tap(("127.0.0.1", upstream.port), tmp_path / "tap") as tap:
            requests = [
                encode_request(ApiVersionsRequest(), 0, 1, "c"),
                encode_request(MetadataRequest(topics=[]), 1, 2, "c"),
                encode_request(FindCoordinatorRequest(key="g"), 1, 3, "c"),
                encode_request(FindCoordinatorRequest(coordinator_keys=["g", "h"]), 4, 4, "c"),
                encode_request(DescribeClusterRequest(), 0, 5, "c"),
            ]
            with socket.create_connection(("127.0.0.1", tap.port), timeout=5) as s:
                got = []
                for req in requests:
                    s.sendall(req)
                    size = struct.unpack(">i", _recv(s, 4))[0]
                    got.append(_recv(s, size))
            routes = dict(tap.routes)
    finally:
        upstream.close()
    tap_port = routes[("127.0.0.1", upstream.port)]
    other = routes[("127.0.0.1", 1)]
    assert other not in (tap_port, 1)
    assert got[0] == struct.pack(">i", 1) + odd[8:]  # passed unchanged
    _, meta = decode_response(got[1], 3, 1)
    assert [(b.host, b.port) for b in meta.brokers] == [("127.0.0.1", tap_port), ("127.0.0.1", other)]
    _, fc = decode_response(got[2], 10, 1)
    assert (fc.host, fc.port) == ("127.0.0.1", other)
    _, fc4 = decode_response(got[3], 10, 4)
    assert [(c.host, c.port) for c in fc4.coordinators] == [("127.0.0.1", other), ("", -1)]
    _, dc = decode_response(got[4], 60, 0)
    assert [(b.host, b.port) for b in dc.brokers] == [("127.0.0.1", other)]
    assert assert_only_addresses_differ(tmp_path / "tap") == 4
    items, acc = recorded(tmp_path / "tap")
    assert [(d.frame.direction, d.frame.correlation_id) for d in items] == [
        (dirn, c) for c in range(1, 6) for dirn in ("request", "response")]
    assert [bytes(d.frame.frame) for d in items if d.frame.direction == "request"] == [r[4:] for r in requests]


def test_a_connection_that_ends_gets_an_end_row_and_its_waiting_requests_are_unanswered(tmp_path):
    """A client that closes its connection with a request unanswered: the
    tap writes an end row, and the tables read it as a pcap's closed
    connection (the request is an unanswered row); a connection still open
    when the tap stops gets none (the tap stopped, not the connection)."""
    import pyarrow as pa

    upstream = ScriptedBroker(lambda key, version, corr: b"" if corr == 2 else
                              encode_response(MetadataResponse(), version, corr))
    try:
        with Tap(("127.0.0.1", upstream.port), tmp_path / "tap") as tap:
            with socket.create_connection(("127.0.0.1", tap.port), timeout=5) as s:
                s.sendall(encode_request(MetadataRequest(topics=[]), 12, 1, "gone"))
                _recv(s, struct.unpack(">i", _recv(s, 4))[0])
                s.sendall(encode_request(MetadataRequest(topics=[]), 12, 2, "gone"))
                time.sleep(0.3)
            stays = socket.create_connection(("127.0.0.1", tap.port), timeout=5)
            stays.sendall(encode_request(MetadataRequest(topics=[]), 12, 2, "stays"))
            deadline = time.monotonic() + 10
            while tap.stats["frames"] < 4 or tap.stats["connections"] < 2:
                assert time.monotonic() < deadline, tap.stats
                time.sleep(0.05)
            time.sleep(0.3)  # the first connection's end
    finally:
        upstream.close()
        stays.close()
    table = pa.concat_tables(pa.ipc.open_stream(pa.OSFile(str(p))).read_all() for p in table_files(tmp_path / "tap"))
    ends = [r for r in table.to_pylist() if r["direction"] == "end"]
    assert [(r["conn"], r["frame"], r["ts"] is not None) for r in ends] == [(1, None, True)]
    rows = [r for r in table.to_pylist() if r["conn"] == 1]
    assert rows[-1]["direction"] == "end"  # after the connection's frames
    from kafkaproto.capture import open_capture

    acc = Accounting()
    ds = open_capture(tmp_path / "tap")
    unanswered = ds.read_table("unanswered")
    assert [(r["client_id"], r["correlation_id"]) for r in unanswered.to_pylist()] == [("gone", 2)]
    assert ds.read_table("frames").num_rows == 4
    frames = list(read_frames(tmp_path / "tap", acc=acc))
    assert len(frames) == 4 and acc.bad_rows == 0


def test_non_kafka_bytes_pass_raw(tmp_path):
    upstream = ScriptedBroker(lambda *a: b"")
    echo = socket.create_server(("127.0.0.1", 0))
    try:
        with Tap(("127.0.0.1", echo.getsockname()[1]), tmp_path / "tap") as tap:
            with socket.create_connection(("127.0.0.1", tap.port), timeout=5) as s:
                s.sendall(b"GET / HTTP/1.0\r\n\r\n")
                conn, _ = echo.accept()
                with conn:
                    assert _recv(conn, 18) == b"GET / HTTP/1.0\r\n\r\n"
                    conn.sendall(b"HTTP/1.0 200 OK\r\n\r\n")
                    assert _recv(s, 19) == b"HTTP/1.0 200 OK\r\n\r\n"
            deadline = time.monotonic() + 5
            while tap.stats["raw_bytes"] < 37 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert tap.stats["raw_bytes"] == 37 and tap.stats["frames"] == 0
    finally:
        upstream.close()
        echo.close()


def test_writer_rolls_files_and_reads_back(tmp_path):
    conn = Connection(7, "127.0.0.1:1", "127.0.0.1:2")
    frames = [CapturedFrame(1_700_000_000_000_000_000 + i * 1000, conn, "request", i * 100,
                            encode_request(MetadataRequest(topics=[]), 4, i, "c")[4:], 3, 4, i) for i in range(50)]
    for fmt in ("arrow", "parquet"):
        out = tmp_path / fmt
        with FrameTableWriter(out, fmt=fmt, roll_bytes=600, batch_rows=4) as w:
            for f in frames:
                w.write(f)
        assert len(w.files) > 3
        back = list(iter_table_frames(out))
        assert [(b.ts, b.correlation_id, b.frame, b.conn.client) for b in back] == \
               [(f.ts, f.correlation_id, f.frame, "127.0.0.1:1") for f in frames]


def test_tap_command_line(tmp_path):
    def reply(key, version, corr):
        return encode_response(MetadataResponse(brokers=[]), version, corr)

    upstream = ScriptedBroker(reply)
    env = dict(os.environ)
    proc = subprocess.Popen([sys.executable, "-m", "kafkaproto", "tap", "--listen", "127.0.0.1:0", "--upstream",
                             f"127.0.0.1:{upstream.port}", "--out", str(tmp_path / "t"), "--format", "parquet",
                             "--duration", "20"], stdout=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()
        assert line.startswith("tap: listening on 127.0.0.1:"), line
        port = int(line.split()[3].rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(encode_request(MetadataRequest(topics=[]), 9, 42, "cli"))
            size = struct.unpack(">i", _recv(s, 4))[0]
            assert struct.unpack(">i", _recv(s, size)[:4])[0] == 42
        time.sleep(0.3)
        proc.terminate()
        rest = proc.communicate(timeout=20)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
        upstream.close()
    assert "2 frames recorded" in rest
    items, _ = recorded(tmp_path / "t")
    assert [(d.frame.api_key, d.frame.api_version, d.frame.correlation_id, d.client_id) for d in items] == [
        (3, 9, 42, "cli"), (3, 9, 42, "cli")]


def test_a_killed_tap_recorded_everything_it_forwarded(tmp_path):
    """SIGKILL under load: every response a client received, and every request
    the broker received, is in the recording (rows are written out before their
    frames are forwarded)."""
    import signal

    seen_by_broker = []

    def reply(key, version, corr):
        seen_by_broker.append(corr)
        return encode_response(MetadataResponse(brokers=[], cluster_id="c" * 200), version, corr)

    upstream = ScriptedBroker(reply)
    proc = subprocess.Popen([sys.executable, "-m", "kafkaproto", "tap", "--listen", "127.0.0.1:0", "--upstream",
                             f"127.0.0.1:{upstream.port}", "--out", str(tmp_path / "t"), "--no-rewrite"],
                            stdout=subprocess.PIPE, text=True)
    received = []
    try:
        line = proc.stdout.readline()
        port = int(line.split()[3].rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            reader = FrameReader()
            corr = 0
            while len(received) < 400:
                for _ in range(20):  # pipelined
                    corr += 1
                    s.sendall(encode_request(MetadataRequest(topics=[]), 9, corr, "load"))
                while len(received) < corr - 5:
                    received += [struct.unpack_from(">i", f, 0)[0] for f in reader.feed(s.recv(65536))]
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
        upstream.close()
    acc = Accounting()
    frames = list(read_frames(tmp_path / "t", acc=acc))
    recorded_responses = {f.correlation_id for f in frames if f.direction == "response"}
    recorded_requests = {f.correlation_id for f in frames if f.direction == "request"}
    assert set(received) <= recorded_responses, sorted(set(received) - recorded_responses)[:10]
    assert set(seen_by_broker) <= recorded_requests
    assert len(received) >= 400


# --------------------------------------------------------------------------
# the memory budget: frames too large to keep are streamed, not held
# --------------------------------------------------------------------------


def _produce_head(claimed: int, corr: int, client: bytes) -> bytes:
    """The size prefix and first bytes of a Produce v9 request claiming ``claimed`` bytes."""
    return (struct.pack(">ihhih", claimed, 0, 9, corr, len(client)) + client + b"\x00"  # header v2, no tags
            + b"\x00" + struct.pack(">hi", -1, 30_000))  # no transactional id, acks=-1, timeout


class Sink(LoopbackUpstream):
    """An upstream that answers nothing and keeps, per connection, the length,
    the SHA-256 and the first bytes of everything it received."""

    def __init__(self) -> None:
        import hashlib

        self.hashlib = hashlib
        self.got: dict[bytes, tuple[int, str]] = {}
        super().__init__()

    def _conn(self, conn) -> None:
        h, n, head = self.hashlib.sha256(), 0, b""
        with conn:
            while data := conn.recv(1 << 16):
                h.update(data)
                n += len(data)
                head = (head + data)[:64]
        self.got[head[14:17]] = (n, h.hexdigest())  # keyed by the client id


def _peak_rss(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of a process, in bytes."""
    fields = {}
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                fields[key] = int(value.split()[0]) * 1024
    return fields["VmRSS"], fields["VmHWM"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_twenty_huge_frames_stream_through_within_the_memory_budget(tmp_path):
    """20 clients each start a frame claiming 100 MiB and send 8 MiB of it, a
    piece at a time, all at once: the tap (16 MiB budget) holds none of them,
    forwards every byte, and records each as a frame not kept."""
    import hashlib

    clients_n, claimed, sent, piece = 20, 100 << 20, 8 << 20, 128 << 10
    budget_mb, overhead = 16, 24 << 20
    sink = Sink()
    proc = subprocess.Popen([sys.executable, "-m", "kafkaproto", "tap", "--listen", "127.0.0.1:0", "--upstream",
                             f"127.0.0.1:{sink.port}", "--out", str(tmp_path / "t"), "--memory-mb", str(budget_mb)],
                            stdout=subprocess.PIPE, text=True)
    socks, want = [], {}
    try:
        line = proc.stdout.readline()
        port = int(line.split()[3].rsplit(":", 1)[1])
        # warm up: one small frame recorded and forwarded (the first row written
        # sets up Arrow's writer and memory pool, tens of MB, once)
        warm = encode_request(MetadataRequest(topics=[]), 9, 99, "wrm")
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            s.sendall(warm)
        deadline = time.monotonic() + 30
        while b"wrm" not in sink.got and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sink.got.pop(b"wrm")[0] == len(warm)
        rss_idle, _ = _peak_rss(proc.pid)
        for i in range(clients_n):
            cid = b"c%02d" % i
            head = _produce_head(claimed, i, cid)
            s = socket.create_connection(("127.0.0.1", port), timeout=30)
            s.sendall(head)
            socks.append(s)
            want[cid] = [len(head), hashlib.sha256(head)]
        filler = bytes(range(256)) * (piece // 256)
        for _ in range(sent // piece):  # every frame open at once, a piece of each in turn
            for s, cid in zip(socks, want):
                s.sendall(filler)
                want[cid][0] += len(filler)
                want[cid][1].update(filler)
        for s in socks:
            s.close()
        deadline = time.monotonic() + 60
        while len(sink.got) < clients_n and time.monotonic() < deadline:
            time.sleep(0.1)
        _, rss_peak = _peak_rss(proc.pid)
        proc.terminate()
        summary = proc.communicate(timeout=20)[0]
    finally:
        for s in socks:
            s.close()
        if proc.poll() is None:
            proc.kill()
        sink.close()
    # byte for byte
    assert sink.got == {cid: (n, h.hexdigest()) for cid, (n, h) in want.items()}
    # held within the budget (the old tap held all 160 MiB it was sent)
    assert rss_peak - rss_idle < (budget_mb << 20) + overhead, (rss_idle, rss_peak)
    assert f"{clients_n} forwarded without being kept" in summary, summary
    # the recording names each frame: what it was, what its prefix claimed, what went
    import pyarrow as pa

    table = pa.concat_tables(pa.ipc.open_stream(pa.OSFile(str(p))).read_all() for p in table_files(tmp_path / "t"))
    rows = sorted((r for r in table.to_pylist() if r["direction"] != "end" and r["correlation_id"] != 99),
                  key=lambda r: r["correlation_id"])
    assert [(r["api_key"], r["api_version"], r["correlation_id"], r["size"], r["forwarded"]) for r in rows] == [
        (0, 9, i, claimed, sent + len(_produce_head(claimed, i, b"c00")) - 4) for i in range(clients_n)]
    first = _produce_head(claimed, 0, b"c00")[4:]
    assert len(rows[0]["frame"]) == 512 and rows[0]["frame"].startswith(first)
    acc = Accounting()
    assert [f.correlation_id for f in read_frames(tmp_path / "t", acc=acc)] == [99]  # the warm-up request
    acc.check()
    assert acc.frames == {"framed": 1, "not_kept": clients_n}
    assert acc.bytes["not_kept"] == sum(n for n, _ in want.values())


def test_proxy_streams_what_the_shared_budget_cannot_hold():
    """Sans-IO: two connections share a budget; a frame that fits is held and
    its charge given back once forwarded, one arriving while the budget is
    used is streamed (its response paired by the head), one over max_frame
    always; every byte comes out once, in order."""
    from kafkaproto.proxy import MemoryBudget, ProxyConnection, Streamed

    budget = MemoryBudget(10_000, max_frame=3_000)
    a, b = ProxyConnection(decode=False, budget=budget), ProxyConnection(decode=False, budget=budget)

    def request(corr, size):
        head = _produce_head(size, corr, b"cli")
        return head + bytes(4 + size - len(head))

    def out_bytes(events):
        return b"".join(b"".join(bytes(p) for p in ev.parts()) for ev in events)

    held = request(1, 2_900)  # charged 2 * 2_900 + 4
    assert a.from_client(held[:1_000]) == [] and budget.used == 5_804
    over = request(2, 2_900)  # does not fit next to it: streamed
    evs = b.from_client(over[:1_000])
    assert [type(e) for e in evs] == [Streamed] and evs[0].first and not evs[0].last
    assert evs[0].frame.event.api_key == 0 and evs[0].frame.event.correlation_id == 2
    evs += b.from_client(over[1_000:])
    assert evs[-1].last and out_bytes(evs) == over and evs[-1].frame.passed == len(over)
    done = a.from_client(held[1_000:])
    assert [type(e).__name__ for e in done] == ["ReceivedRequest"] and out_bytes(done) == held
    assert budget.used == 5_804  # given back at the next feed, once forwarded
    assert a.from_client(b"") == [] and budget.used == 0
    huge = request(3, 5_000)  # over max_frame: streamed however empty the budget
    assert [type(e).__name__ for e in b.from_client(huge)] == ["ReceivedRequest"]  # whole in one feed: as it came
    evs = a.from_client(huge[:600]) + a.from_client(huge[600:])
    assert [e.last for e in evs] == [False, True] and out_bytes(evs) == huge and budget.streamed == 2
    # the response to a streamed request is paired (and may be streamed too)
    reply = struct.pack(">ii", 4 + 4_996, 3) + bytes(4_996)
    evs = a.from_broker(reply[:700]) + a.from_broker(reply[700:])
    assert evs[0].frame.event.api_key == 0 and evs[0].frame.event.correlation_id == 3
    assert out_bytes(evs) == reply
    a.close()
    b.close()
    assert budget.used == 0


def test_table_time_stamps_out_of_range_are_marked(tmp_path):
    """A tap table whose time stamps lie outside 1970..2262 reads like a pcap
    with such time stamps: no time, counted."""

    conn = Connection(7, "127.0.0.1:1", "127.0.0.1:2")
    times = [1_700_000_000_000_000_000, (1 << 62) * 1000, -(10 ** 18), 1_700_000_000_000_001_000]
    frames = [CapturedFrame(ts, conn, "request", i * 100, encode_request(MetadataRequest(topics=[]), 4, i, "c")[4:],
                            3, 4, i) for i, ts in enumerate(times)]
    with FrameTableWriter(tmp_path / "t", fmt="arrow") as w:
        for f in frames:
            w.write(f)
    acc = Accounting()
    back = list(iter_table_frames(tmp_path / "t", acc))
    assert [b.ts for b in back] == [times[0], None, None, times[3]]
    assert acc.bad_timestamps == 2 and not acc.problems()


def test_tap_rows_that_are_no_frame_are_counted_and_skipped(tmp_path):
    """A tap table with rows whose frame, connection or direction is missing
    (a damaged or foreign writer): they are counted (``bad_rows``) and
    skipped; the other rows are read, and the report runs on the table."""
    import pyarrow as pa

    from kafkaproto.capture.formats.tapfiles import frame_schema
    from kafkaproto.report import run_report

    req = encode_request(MetadataRequest(topics=[]), 9, 1, "c")[4:]
    rows = [
        {"ts": 1_700_000_000_000_000, "conn": 1, "client": "a:1", "server": "b:9092", "direction": "request",
         "offset": 0, "frame": req},
        {"ts": 1_700_000_000_000_001, "conn": 1, "client": "a:1", "server": "b:9092", "direction": "request",
         "offset": 0, "frame": None},
        {"ts": 1_700_000_000_000_002, "conn": None, "client": "a:1", "server": "b:9092", "direction": "request",
         "offset": 0, "frame": req},
        {"ts": 1_700_000_000_000_003, "conn": 1, "client": "a:1", "server": "b:9092", "direction": "sideways",
         "offset": 0, "frame": req},
    ]
    folder = tmp_path / "tap"
    folder.mkdir()
    table = pa.Table.from_pylist(rows, schema=frame_schema())
    with pa.OSFile(str(folder / "frames-1.arrows"), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    acc = Accounting()
    frames = list(read_frames(folder, acc=acc))
    assert len(frames) == 1 and frames[0].client_id == "c"
    assert acc.bad_rows == 3 and not acc.problems()
    result = run_report([str(folder)], tmp_path / "out", progress=False)
    acc = result.data.accounting
    assert acc.bad_rows == 3 and result.data.totals["requests"] == 1
    assert "no frame" in result.summary or "3 tap table rows" in result.summary
