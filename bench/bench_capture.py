"""Hostile captures (issue 17): what reading costs when the bytes on the
Kafka port are not Kafka, and when very many connections are open at once.

- resynchronization: 50 MB of zero bytes on the Kafka port against 50 MB of
  random bytes, read with ``ports=[9092]`` (a direction whose size prefix
  makes no sense resynchronizes: every position is a candidate frame start);
- open connections: the cost per packet of a capture that opens N
  connections (SYN, SYN-ACK, ACK, one small request) and closes none, at 1k
  and 200k open (at 200k the default bound of open connections applies:
  the oldest are closed as new ones come).

``extra_info`` carries MB/s or µs per packet.
"""

import os

import pytest

from kafkaproto.capture import Accounting, read_frames
from kafkaproto.capture.formats.writer import PcapWriter, TcpConversation, tcp_packet
from kafkaproto.capture.walker.packets import ACK, LINKTYPE_ETHERNET, PSH, SYN

MB = 1_000_000
SIZE = 50 * MB


def stream_capture(path, payload: bytes) -> str:
    """One connection to port 9092 whose client sends ``payload``."""
    conv = TcpConversation(("10.0.0.1", 40000), ("10.0.0.2", 9092))
    with open(path, "wb") as fh:
        w = PcapWriter(fh, LINKTYPE_ETHERNET)
        for ts, pkt in conv.handshake():
            w.write(ts, pkt)
        for i in range(0, len(payload), 1 << 20):
            for ts, pkt in conv.send(True, payload[i:i + (1 << 20)]):
                w.write(ts, pkt)
        for ts, pkt in conv.close():
            w.write(ts, pkt)
    return str(path)


def open_connections_capture(path, n: int) -> tuple[str, int]:
    """``n`` connections that open, send 12 bytes each way, and never close."""
    packets = 0
    with open(path, "wb") as fh:
        w = PcapWriter(fh, LINKTYPE_ETHERNET)
        ts = 1_700_000_000_000_000_000
        for i in range(n):
            client = f"10.{1 + (i >> 16)}.{(i >> 8) & 255}.{i & 255}"
            port = 1024 + i % 60000
            for src, sport, dst, dport, seq, ack, flags, data in (
                    (client, port, "10.0.0.2", 9092, 100, 0, SYN, b""),
                    ("10.0.0.2", 9092, client, port, 500, 101, SYN | ACK, b""),
                    (client, port, "10.0.0.2", 9092, 101, 501, ACK, b""),
                    (client, port, "10.0.0.2", 9092, 101, 501, PSH | ACK, b"\0\0\0\x08\0\x12\0\0\0\0\0\x01")):
                ts += 1000
                w.write(ts, tcp_packet(LINKTYPE_ETHERNET, src, sport, dst, dport, seq, ack, flags, data))
                packets += 1
    return str(path), packets


def _read(path) -> Accounting:
    acc = Accounting()
    for _ in read_frames(path, ports=[9092], acc=acc):
        pass
    acc.check()
    return acc


@pytest.mark.parametrize("content", ["zeros", "random"])
def test_resync_over_bytes_that_are_not_kafka(benchmark, tmp_path, content):
    payload = bytes(SIZE) if content == "zeros" else os.urandom(SIZE)
    path = stream_capture(tmp_path / f"{content}.pcap", payload)
    benchmark.group = "capture: 50 MB of non-Kafka bytes on the Kafka port"
    benchmark.extra_info["impl"] = content
    acc = benchmark.pedantic(_read, args=(path,), rounds=3, iterations=1)
    assert acc.bytes["not_kafka"] == SIZE
    benchmark.extra_info["MB/s"] = round(SIZE / benchmark.stats.stats.median / MB, 1)


@pytest.mark.parametrize("n", [1_000, 200_000])
def test_per_packet_cost_with_many_open_connections(benchmark, tmp_path, n):
    path, packets = open_connections_capture(tmp_path / f"open-{n}.pcap", n)
    benchmark.group = "capture: connections opened and never closed"
    benchmark.extra_info["impl"] = f"{n} connections"
    acc = benchmark.pedantic(_read, args=(path,), rounds=1 if n > 10_000 else 5, iterations=1)
    assert acc.connections == n
    benchmark.extra_info["us/packet"] = round(benchmark.stats.stats.median / packets * 1e6, 2)
