"""Captures read in byte ranges against hostile bytes: a range's first record
is checked against the chain of records from the range before it, so bytes
inside a packet that look like records (a chain of fake pcap record headers
hidden in a Produce record's value) invent no packet and lose none; bytes
that look like request headers every few bytes cost linear time to
resynchronize over; a file of zeros after its header costs what reading it
costs.  No Spark: the in-process ranged reader and the embedded engine."""

from __future__ import annotations

import json
import struct

import pytest

from kafkaproto import records
from kafkaproto.capture import Accounting, read_frame_batches, read_frames
from kafkaproto.capture.formats.ranges import check_chains, plan_ranges, read_frames_ranged, read_range
from kafkaproto.capture.formats.writer import PcapWriter, TcpConversation, tcp_packet
from kafkaproto.capture.walker.packets import ACK, LINKTYPE_ETHERNET, PSH
from kafkaproto.messages import get
from kafkaproto.protocol import encode_request
from kafkaproto.report import run_report
from kafkaproto.report.compare import compare

T0 = 1_700_000_000_000_000_000


def _fake_records(n: int) -> bytes:
    """``n`` pcap records (little-endian, microseconds, as PcapWriter writes
    them) of a connection that never was: Metadata requests from "INJECTED"."""
    out = []
    for i in range(n):
        frame = encode_request(get("MetadataRequest")(topics=[]), 4, 1000 + i, "INJECTED")
        pkt = tcp_packet(LINKTYPE_ETHERNET, "10.66.6.6", 6666, "10.0.0.1", 9092, 100 + i * len(frame), 1,
                         PSH | ACK, frame)
        sec, usec = divmod(T0 // 1000 + i, 1_000_000)
        out.append(struct.pack("<IIII", sec, usec, len(pkt), len(pkt)) + pkt)
    return b"".join(out)


def forged_capture(path, fakes: int = 400, clients: int = 3) -> tuple[int, int]:
    """Real traffic with, in one Produce request (a 64 kB segment, as a
    loopback capture shows them), a record whose value is a chain of fake
    pcap records.  Returns (requests, where the fake chain starts in the file)."""
    value = _fake_records(fakes)
    blob = records.encode([(b"k", value, [], T0 // 1_000_000)], magic=2, codec="none")
    P = "ProduceRequest"
    produce = get(P)(acks=-1, timeout_ms=1000, topic_data=[get(P).TopicProduceData(
        name="t", partition_data=[get(P).PartitionProduceData(index=0, records=blob)])])
    requests = 0
    with open(path, "wb") as fh:
        w = PcapWriter(fh, LINKTYPE_ETHERNET)
        convs = [TcpConversation((f"10.0.9.{c + 1}", 40000 + c), ("10.0.0.1", 9092), ts=T0 + c) for c in range(clients)]
        for conv in convs:
            for ts, pkt in conv.handshake():
                w.write(ts, pkt)
        for round_ in range(40):
            for c, conv in enumerate(convs):
                corr = round_ + 1
                if c == 0 and round_ == 20:
                    req = encode_request(produce, 9, corr, "producer")
                    pkts = conv.send(True, req, 65000)
                else:
                    req = encode_request(get("MetadataRequest")(topics=[]), 4, corr, f"client-{c}")
                    pkts = conv.send(True, req)
                requests += 1
                resp = struct.pack(">ii", 4, corr)  # a frame of 4 bytes: the correlation id alone
                for ts, pkt in pkts + conv.send(False, resp):
                    w.write(ts, pkt)
        for conv in convs:
            for ts, pkt in conv.close():
                w.write(ts, pkt)
    data = path.read_bytes()
    return requests, data.index(value[:40])


def _requests(frames) -> list:
    return sorted((f.conn.client, f.correlation_id) for f in frames if f.direction == "request")


def test_a_chain_of_fake_records_inside_a_payload_invents_no_packet(tmp_path):
    path = tmp_path / "forged.pcap"
    n, fake_at = forged_capture(path)
    whole_acc = Accounting()
    whole = _requests(read_frames(path, acc=whole_acc))
    assert len(whole) == n and not any("10.66.6.6" in c for c, _ in whole)
    size = path.stat().st_size
    # ranges small enough that several start inside the fake chain
    for range_bytes in (4_000, 10_000, 33_333):
        starts = [s for s, _ in plan_ranges(str(path), range_bytes)]
        assert any(fake_at < s < fake_at + 20_000 for s in starts), range_bytes
        acc = Accounting()
        ranged = _requests(read_frames_ranged([str(path)], range_bytes, acc=acc))
        assert ranged == whole, range_bytes
        assert acc.packets_total == whole_acc.packets_total and not acc.problems()
    # the guess alone is fooled: a range starting inside the chain finds a fake "record"
    start = fake_at + 5
    batches = list(read_range(str(path), start, min(size, start + 4000), capture=0))
    stats = json.loads(batches[-1].column("info")[0].as_py())
    assert stats["first"] is not None and stats["first"] >= fake_at
    # and the chain from the range before says the range lies inside that range's
    # last record (the 64 kB packet): it holds no record start at all
    before = json.loads(list(read_range(str(path), 0, start))[-1].column("info")[0].as_py())
    assert before["stop"] >= stats["end"]
    assert check_chains([before, stats]) == [(stats, None)]
    # a range that starts in the chain and runs past the packet is read again from the chain's position
    late = json.loads(list(read_range(str(path), start, size))[-1].column("info")[0].as_py())
    assert check_chains([before, late]) == [(late, before["stop"])]


def test_the_report_in_ranges_equals_the_whole_one_on_a_forged_capture(tmp_path):
    path = tmp_path / "forged.pcap"
    forged_capture(path, fakes=12_000)  # a 1.3 MB value: ranges of 64 kB (the smallest the job makes) land in it
    whole = run_report({"forged": str(path)}, tmp_path / "whole", progress=False, workers=2)
    split = run_report({"forged": str(path)}, tmp_path / "split", progress=False, workers=2, whole_file_max=0,
                       range_bytes=10_000)
    assert split.data.tasks["ranges read again"] > 0
    assert all(compare(whole.data.out, split.data.out).values())


def _pattern_capture(path, pattern: bytes, total: int, handshake: bool) -> None:
    conv = TcpConversation(("10.9.0.1", 40000), ("10.9.0.2", 9092))
    hs = conv.handshake()
    with open(path, "wb") as fh:
        w = PcapWriter(fh, LINKTYPE_ETHERNET)
        for ts, pkt in (hs if handshake else []) + conv.send(True, b"\xff" * 7 + pattern * (total // len(pattern)),
                                                             1460) + conv.close():
            w.write(ts, pkt)


@pytest.mark.parametrize("size", [12, 252, 256, 1 << 16])
def test_bytes_that_look_like_request_headers_everywhere(tmp_path, size):
    """A client stream caught mid-stream, repeating a 16-byte pattern that
    looks like a request header: nothing is invented, every byte is
    accounted for, and both engines say the same (the compiled one judges
    each candidate in C; bench/bench_capture.py times it)."""
    pattern = struct.pack(">ihhih", size, 3, 1, 5, 2) + b"ab"
    path = tmp_path / "pattern.pcap"
    _pattern_capture(path, pattern, 256 << 10, handshake=False)
    for ports in (None, [9092]):
        acc = Accounting()
        frames = sum(len(b) for b in read_frame_batches(path, ports=ports, acc=acc))
        assert not acc.problems()
        assert acc.payload_bytes_total == 7 + (256 << 10)
        if ports is None:
            assert frames == 0 and acc.kafka_connections == 0


def test_a_pcap_of_zeros_reads_in_ranges_as_whole(tmp_path):
    """A pcap header followed by zeros: records of nothing, read in ranges
    as reading the file whole reads them (C counts them: no packet goes
    through Python)."""
    path = tmp_path / "zeros.pcap"
    with open(path, "wb") as fh:
        PcapWriter(fh, LINKTYPE_ETHERNET)
        fh.write(bytes(4 << 20))
    whole = Accounting()
    assert list(read_frames(path, acc=whole)) == []
    ranged = Accounting()
    assert list(read_frames_ranged([str(path)], 1 << 20, acc=ranged)) == []
    assert whole.packets_total == ranged.packets_total == (4 << 20) // 16
    assert whole.packets == ranged.packets and not ranged.problems()


@pytest.mark.spark
def test_on_spark_the_ranges_of_a_forged_capture_are_read_again_too(spark, tmp_path):
    """The Spark engine checks the same chains: the forged ranges' positions
    leave its cached index and the ranges read again take their place."""
    path = tmp_path / "forged.pcap"
    forged_capture(path, fakes=12_000)
    whole = run_report({"forged": str(path)}, tmp_path / "whole", progress=False, workers=1)
    split = run_report({"forged": str(path)}, tmp_path / "split", spark=spark, progress=False,
                       whole_file_max=0, range_bytes=10_000)
    assert split.data.tasks["ranges read again"] > 0
    assert all(compare(whole.data.out, split.data.out).values())
