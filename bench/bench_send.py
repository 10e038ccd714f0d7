"""The write side (issue 12): a Produce request with a large records blob
encoded to parts, to bytes, and by kafka-python and kio in the same run, with
the memory each allocates; then a proxy forwarding 1 MiB Produce frames on
loopback, against a raw byte-copy forwarder as the ceiling.

ProduceRequest v9: the first flexible version, the newest kafka-python's
producer sends, and one kio 0.6.5 encodes; all three write the same bytes
(checked below).  kafka-python 3.x builds the frame with
``encode(header=True, framed=True)``; kio has no framing helper, so its frame
is header + body written into one BytesIO behind a size prefix.
"""

import datetime
import io
import os
import socket
import struct
import threading
import time
import tracemalloc

import pytest

from kafkaproto.messages import ProduceRequest
from kafkaproto.net import send_parts
from kafkaproto.protocol import encode_request, encode_request_parts
from kafkaproto.proxy import ProxyConnection

VERSION = 9
CID = 7
CLIENT_ID = "bench-client"
TOPIC = "bench-topic"
MiB = 1 << 20
SIZES = {"1 MiB": MiB, "16 MiB": 16 * MiB}


@pytest.fixture(scope="module", params=list(SIZES))
def size(request):
    return request.param


@pytest.fixture(scope="module")
def blob(size):
    # incompressible, like a compressed batch; a records field is opaque to the encoders
    return os.urandom(SIZES[size])


def _ours(blob, acks=-1):
    P = ProduceRequest
    return P(acks=acks, timeout_ms=30_000, topic_data=[P.TopicProduceData(
        name=TOPIC, partition_data=[P.PartitionProduceData(index=0, records=blob)])])


def _kafka_python(blob):
    from kafka.protocol.producer import ProduceRequest as KP

    T = KP.TopicProduceData
    msg = KP(acks=-1, timeout_ms=30_000, topic_data=[T(name=TOPIC, partition_data=[
        T.PartitionProduceData(index=0, records=blob)])])

    def run():
        msg.with_header(correlation_id=CID, client_id=CLIENT_ID)
        return msg.encode(version=VERSION, header=True, framed=True)

    return run


def _kio(blob):
    from kio.schema.produce.v9.request import PartitionProduceData, TopicProduceData
    from kio.schema.produce.v9.request import ProduceRequest as KR
    from kio.schema.request_header.v2.header import RequestHeader
    from kio.schema.types import TopicName
    from kio.serial import entity_writer
    from kio.static.primitive import Records, i16, i32, i32Timedelta

    write_header, write_body = entity_writer(RequestHeader), entity_writer(KR)
    msg = KR(acks=i16(-1), timeout=i32Timedelta.parse(datetime.timedelta(milliseconds=30_000)),
             topic_data=(TopicProduceData(name=TopicName(TOPIC), partition_data=(
                 PartitionProduceData(index=i32(0), records=Records(blob)),)),))
    header = RequestHeader(request_api_key=i16(0), request_api_version=i16(VERSION), correlation_id=i32(CID),
                           client_id=CLIENT_ID)

    def run():
        buf = io.BytesIO()
        buf.write(b"\0\0\0\0")
        write_header(buf, header)
        write_body(buf, msg)
        view = buf.getbuffer()
        struct.pack_into(">i", view, 0, len(view) - 4)
        view.release()
        return buf.getvalue()

    return run


def encoders(blob):
    msg = _ours(blob)
    return {
        "kafkaproto parts": lambda: encode_request_parts(msg, VERSION, CID, CLIENT_ID),
        "kafkaproto bytes": lambda: encode_request(msg, VERSION, CID, CLIENT_ID),
        "kafka-python": _kafka_python(blob),
        "kio 0.6.5": _kio(blob),
    }


def _joined(got) -> bytes:
    return b"".join(bytes(p) for p in got) if isinstance(got, list) else bytes(got)


def _peak_bytes(fn) -> int:
    fn()  # warm: kafka-python keeps a per-thread buffer as large as the largest message it wrote
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        got = fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    del got
    return peak


@pytest.mark.parametrize("impl", ["kafkaproto parts", "kafkaproto bytes", "kafka-python", "kio 0.6.5"])
def test_encode_produce(benchmark, size, blob, impl):
    run = encoders(blob)[impl]
    expected = encode_request(_ours(blob), VERSION, CID, CLIENT_ID)
    assert _joined(run()) == expected, "every encoder writes the same frame"
    peak = _peak_bytes(run)
    benchmark.group = f"ProduceRequest v{VERSION} encode, one {size} records blob"
    benchmark.extra_info["impl"] = "kafkaproto" if impl == "kafkaproto parts" else impl
    benchmark.extra_info["peak bytes (tracemalloc)"] = peak
    got = benchmark(run)
    if impl == "kafkaproto parts":
        assert any(p is blob for p in got), "the records blob is the caller's own object"
        assert peak < 64 * 1024, f"parts allocated {peak} bytes for {len(blob)} bytes of records"
    else:
        # a frame of its own: at least the records' size
        assert peak >= len(blob)


# ---------------------------------------------------------------------------
# a proxy forwarding 1 MiB Produce frames on loopback

FRAMES = 128  # 128 MiB per round
CHUNK = 256 * 1024
ROUNDS = 5


@pytest.fixture(scope="module")
def stream():
    """FRAMES requests of one 1 MiB records blob each, as the parts a client sends."""
    records = os.urandom(MiB)
    msg = _ours(records)
    frames = [encode_request_parts(msg, VERSION, cid, CLIENT_ID) for cid in range(FRAMES)]
    total = sum(len(memoryview(p)) for parts in frames for p in parts)
    return frames, total


@pytest.fixture(scope="module")
def listeners():
    socks = []
    for _ in range(2):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        socks.append(s)
    yield socks
    for s in socks:
        s.close()


def _connect(listener):
    a = socket.create_connection(listener.getsockname())
    b, _ = listener.accept()
    return a, b


def _client(sock, frames):
    for parts in frames:
        send_parts(sock, parts)
    sock.shutdown(socket.SHUT_WR)


def _sink(sock, got):
    buf = bytearray(MiB)
    total = 0
    while True:
        n = sock.recv_into(buf)
        if not n:
            break
        total += n
    got.append(total)


def _raw(src, dst):
    buf = bytearray(CHUNK)
    mv = memoryview(buf)
    while True:
        n = src.recv_into(buf)
        if not n:
            return None
        dst.sendall(mv[:n])


def _proxy(decode):
    def forward(src, dst):
        # no broker answers: nothing waits (max_outstanding would hold the client back)
        proxy = ProxyConnection(decode=decode, max_outstanding=None)
        buf = bytearray(CHUNK)
        mv = memoryview(buf)
        events = 0
        while True:
            n = src.recv_into(buf)
            if not n:
                return events
            for ev in proxy.from_client(mv[:n]):
                assert ev.error is None
                send_parts(dst, ev.parts())
                events += 1
            proxy.pending.clear()

    return forward


# name → (forwarder, label in the summary)
FORWARDERS = {
    "raw recv_into -> sendall (no framing)": (_raw, "raw byte copy"),
    "ProxyConnection(decode=False)": (_proxy(False), "kafkaproto"),
    "ProxyConnection(decode=True)": (_proxy(True), "kafkaproto decode=True"),
}


@pytest.mark.parametrize("impl", list(FORWARDERS))
def test_proxy_forward(benchmark, stream, listeners, impl):
    frames, total = stream
    forward, label = FORWARDERS[impl]
    per_round = []

    def setup():
        client, proxy_in = _connect(listeners[0])
        proxy_out, sink = _connect(listeners[1])
        return (client, proxy_in, proxy_out, sink), {}

    def run(client, proxy_in, proxy_out, sink):
        got: list = []
        threads = [threading.Thread(target=_client, args=(client, frames)),
                   threading.Thread(target=_sink, args=(sink, got))]
        wall, cpu, proc = time.perf_counter(), time.thread_time(), time.process_time()
        for t in threads:
            t.start()
        events = forward(proxy_in, proxy_out)
        proxy_out.shutdown(socket.SHUT_WR)
        cpu = time.thread_time() - cpu
        for t in threads:
            t.join()
        wall, proc = time.perf_counter() - wall, time.process_time() - proc
        for s in (client, proxy_in, proxy_out, sink):
            s.close()
        assert got == [total] and events in (None, FRAMES)
        per_round.append((wall, cpu, proc))

    benchmark.group = f"proxy forwarding {FRAMES} Produce frames of 1 MiB on loopback"
    benchmark.extra_info["impl"] = label
    benchmark.pedantic(run, setup=setup, rounds=ROUNDS, iterations=1, warmup_rounds=1)
    per_round = per_round[1:]  # the warm-up round
    mb = total / 1e6

    def median(xs):
        return sorted(xs)[len(xs) // 2]

    # proxy core: CPU time of the forwarding thread alone (the client and the
    # sink run in threads of their own, on the other core)
    benchmark.extra_info["MB/s wall"] = round(median([mb / w for w, _, _ in per_round]), 1)
    benchmark.extra_info["MB/s per proxy core"] = round(median([mb / c for _, c, _ in per_round]), 1)
    benchmark.extra_info["MB/s per process core (client + proxy + sink)"] = round(
        median([mb / p for _, _, p in per_round]), 1)
