"""The compiled fast path of the capture layer against the pure-Python twin.

Every capture file of the repository, synthetic captures with handshakes,
reordering, retransmissions, overlaps, gaps, snap-length cuts, several link
types and both file formats, and randomly damaged copies of small captures
are read three ways: compiled with the fast path, compiled without it (the
Python loop over the same objects) and by the twin in a KAFKAPROTO_PURE=1
subprocess.  Frames, pairing, decoding outcomes and accounting must be the
same, byte for byte.
"""

from __future__ import annotations

import json
import os
import pickle
import random
import struct
import subprocess
import sys
from pathlib import Path

import pytest

import kafkaproto.capture as capture
import kafkaproto.capture.walker._scan_py as _scan_twin
from kafkaproto import encode_request, encode_response
from kafkaproto.capture import Accounting, CaptureFormatError, read_frames
from kafkaproto.capture.formats.pcap import sniff_format
from kafkaproto.capture.formats.writer import PcapngWriter, PcapWriter, TcpConversation, tcp_packet
from kafkaproto.capture.tools.dissect import dissect
from kafkaproto.capture.walker.packets import (
    ACK,
    LINKTYPE_ETHERNET,
    LINKTYPE_LINUX_SLL2,
    LINKTYPE_NULL,
    LINKTYPE_RAW,
    PSH,
    decode_tcp,
)
from kafkaproto.messages import ApiVersionsRequest, ApiVersionsResponse, ProduceRequest, ProduceResponse

pytestmark = pytest.mark.compiled_only

ROOT = Path(__file__).resolve().parents[2]
SERVER = ("10.1.0.2", 9092)


def outcome(path, ports=None, use_dissect=True):
    """Everything read_frames says about a file, in comparable form."""
    acc = Accounting()
    rows = []
    try:
        if use_dissect:
            for d in dissect(read_frames(path, acc=acc, ports=ports), acc):
                f = d.frame
                rows.append(_row(f) + (d.error is None,))
        else:
            rows = [_row(f) for f in read_frames(path, acc=acc, ports=ports)]
    except CaptureFormatError as e:
        return ("CaptureFormatError", str(e), acc.to_dict())
    return rows, acc.to_dict()


def _row(f):
    c = f.conn
    return (f.ts, c.id, c.client, c.server, c.first_ts, f.direction, f.offset, f.frame, f.api_key, f.api_version,
            f.correlation_id, f.request_ts, f.status)


def outcomes(jobs):
    return [outcome(path, ports, dis) for path, ports, dis in jobs]


def pure_outcomes(jobs, tmp_path):
    """The same, computed by the twin in another process."""
    spec = tmp_path / "jobs.json"
    spec.write_text(json.dumps([[str(p), ports, dis] for p, ports, dis in jobs]))
    result = tmp_path / "pure.pickle"
    env = dict(os.environ, KAFKAPROTO_PURE="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests"), env.get("PYTHONPATH", "")])
    code = ("import json, pickle, sys, kafkaproto; assert not kafkaproto.COMPILED\n"
            "from twins.test_capture import outcomes\n"
            "jobs = json.load(open(sys.argv[1]))\n"
            "pickle.dump(outcomes(jobs), open(sys.argv[2], 'wb'))\n")
    subprocess.run([sys.executable, "-c", code, str(spec), str(result)], env=env, check=True, cwd=tmp_path)
    return pickle.loads(result.read_bytes())


def check(jobs, tmp_path, monkeypatch):
    assert capture.walker.streams._scan.COMPILED
    fast = outcomes(jobs)
    with monkeypatch.context() as m:
        # the twin's scanner over the compiled layers: every packet through the Python loop
        m.setattr(capture.walker.streams, "_scan", _scan_twin)
        slow = outcomes(jobs)
    pure = pure_outcomes(jobs, tmp_path)
    for job, a, b, c in zip(jobs, fast, slow, pure):
        assert a == b, f"fast path and Python loop differ on {job}"
        assert a == c, f"compiled and twin differ on {job}"
        if isinstance(a[-1], dict) and not a[0] == "CaptureFormatError":
            acc = Accounting()
            for k in ("packets", "bytes", "frames"):
                getattr(acc, k).update(a[-1][k])
            acc.packets_total, acc.payload_bytes_total = a[-1]["packets_total"], a[-1]["payload_bytes_total"]
            acc.check()
    return fast


# --------------------------------------------------------------------------
# captures


def pairs(n, big):
    out = [(encode_request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3, 1, "app"),
            encode_response(ApiVersionsResponse(), 3, 1))]
    for i in range(n):
        data = ProduceRequest.TopicProduceData(name="orders", partition_data=[
            ProduceRequest.PartitionProduceData(index=0, records=bytes([i % 251]) * big)])
        out.append((encode_request(ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[data]), 9, 2 + i, "app"),
                    encode_response(ProduceResponse(), 9, 2 + i)))
    return out


def conversation(client=("10.1.0.1", 40001), server=SERVER, linktype=LINKTYPE_ETHERNET, handshake=True, n=4,
                 big=3000, mss=1460, isn=(1000, 5000), close=True):
    c = TcpConversation(client, server, linktype=linktype, isn=isn)
    pk = c.handshake() if handshake else []
    for req, resp in pairs(n, big):
        pk += c.send(True, req, mss) + c.send(False, resp, mss)
    if close:
        pk += c.close()
    return pk


def write(path, packets, linktype=LINKTYPE_ETHERNET, fmt="pcap", **kw):
    with open(path, "wb") as f:
        if fmt == "pcapng":
            w = PcapngWriter(f)
            w.interface(linktype, **kw)
        else:
            w = PcapWriter(f, linktype, nanos=fmt == "pcap-ns", **kw)
        for ts, data in packets:
            w.write(ts, data)
    return path


def big_endian(path):
    """Rewrite a little-endian pcap file in big-endian byte order."""
    data = path.read_bytes()
    out = bytearray(struct.pack(">IHHiIII", *struct.unpack_from("<IHHiIII", data, 0)))
    pos = 24
    while pos < len(data):
        sec, frac, incl, orig = struct.unpack_from("<IIII", data, pos)
        out += struct.pack(">IIII", sec, frac, incl, orig) + data[pos + 16:pos + 16 + incl]
        pos += 16 + incl
    path.write_bytes(bytes(out))
    return path


def mangle(packets, rng, linktype=LINKTYPE_ETHERNET):
    """Reorder neighbours, retransmit, overlap and drop some data segments."""
    out = []
    i = 0
    while i < len(packets):
        r = rng.random()
        if r < 0.08 and i + 1 < len(packets):
            out += [packets[i + 1], packets[i]]
            i += 2
            continue
        ts, pkt = packets[i]
        out.append((ts, pkt))
        seg = decode_tcp(linktype, pkt)
        if not isinstance(seg, str) and len(seg.payload) > 200:
            if r < 0.15:
                out.append((ts + 1, pkt))  # plain retransmission
            elif r < 0.22:
                # a re-send overlapping this segment's tail and what follows
                out.append((ts + 1, tcp_packet(linktype, seg.src, seg.sport, seg.dst, seg.dport, seg.seq + 100,
                                               seg.ack, PSH | ACK, seg.payload[100:] + b"\x00" * 50)))
            elif r < 0.25:
                out.pop()  # lost by the capture
        i += 1
    return out


def synthetic(tmp_path):
    files = []
    rng = random.Random(11)
    clean = conversation()
    files.append(write(tmp_path / "clean.pcap", clean))
    files.append(write(tmp_path / "clean.pcapng", clean, fmt="pcapng"))
    files.append(write(tmp_path / "clean-ns.pcap", clean, fmt="pcap-ns"))
    files.append(big_endian(write(tmp_path / "clean-be.pcap", clean, fmt="pcap-ns")))
    with open(tmp_path / "simple.pcapng", "wb") as f:  # simple packet blocks carry no time stamps
        w = PcapngWriter(f)
        w.interface(LINKTYPE_ETHERNET)
        for k, (ts, data) in enumerate(clean):
            w.write(ts, data) if k % 3 == 0 else w.write_simple(data)
    files.append(tmp_path / "simple.pcapng")
    for lt in (LINKTYPE_LINUX_SLL2, LINKTYPE_NULL, LINKTYPE_RAW):
        files.append(write(tmp_path / f"lt{lt}.pcap", conversation(linktype=lt), linktype=lt))
    files.append(write(tmp_path / "v6.pcap", conversation(client=("fd00::1", 40001), server=("fd00::2", 9092))))
    files.append(write(tmp_path / "mid.pcap", conversation(handshake=False)[3:]))
    files.append(write(tmp_path / "snap.pcap", clean, snaplen=300))
    files.append(write(tmp_path / "wrap.pcap", conversation(isn=(0xFFFFF000, 0xFFFFFF00))))
    files.append(write(tmp_path / "small-mss.pcap", conversation(mss=100, n=3, big=700)))
    files.append(write(tmp_path / "no-close.pcap", conversation(close=False)))
    reuse = conversation() + conversation(isn=(900000, 700000))
    files.append(write(tmp_path / "reuse.pcap", reuse))
    # several connections interleaved, one not Kafka, one caught mid-stream
    convs = [conversation(client=("10.1.0.1", 40001 + k), big=2000 + 500 * k) for k in range(3)]
    web = TcpConversation(("10.0.0.9", 50000), ("10.0.0.8", 80))
    convs.append(web.handshake() + web.send(True, b"GET / HTTP/1.1\r\n\r\n")
                 + web.send(False, b"HTTP/1.1 200 OK\r\n\r\n" + b"x" * 5000) + web.close())
    convs.append(conversation(client=("10.1.0.3", 41000), handshake=False)[2:])
    mixed = sorted((p for c in convs for p in c), key=lambda p: p[0])
    files.append(write(tmp_path / "mixed.pcap", mixed))
    for k in range(6):
        files.append(write(tmp_path / f"mangled{k}.pcap", mangle(mixed, random.Random(k))))
    files.append(write(tmp_path / "mangled.pcapng", mangle(clean, rng), fmt="pcapng"))
    # a connection that stops speaking Kafka half-way (bad size prefix)
    c = TcpConversation(("10.1.0.1", 40009), SERVER)
    pk = c.handshake()
    for req, resp in pairs(2, 1000):
        pk += c.send(True, req) + c.send(False, resp)
    pk += c.send(True, b"\xff\xff\xff\xff" + b"junk" * 300)
    for req, resp in pairs(2, 1000)[1:]:
        pk += c.send(True, req) + c.send(False, resp)
    files.append(write(tmp_path / "desync.pcap", pk))
    return files


def repository_captures():
    """Every pcap/pcapng file under samples/ and tests/data (regression inputs included)."""
    return [p for p in sorted((ROOT / "samples").rglob("*")) + sorted((ROOT / "tests" / "data").rglob("*"))
            if p.is_file() and sniff_format(p.read_bytes()[:4])]


def test_every_repository_and_synthetic_capture_agrees(tmp_path, monkeypatch):
    files = repository_captures() + synthetic(tmp_path)
    assert any(p.name == "kafka.pcap" for p in files)
    jobs = [(p, None, True) for p in files] + [(p, [9092], False) for p in files]
    fast = check(jobs, tmp_path, monkeypatch)
    assert sum(len(o[0]) for o in fast if isinstance(o[0], list)) > 100


def test_damaged_captures_agree(tmp_path, monkeypatch):
    rng = random.Random(2026)
    sources = [write(tmp_path / "a.pcap", conversation(n=3, big=1500, mss=500)).read_bytes(),
               write(tmp_path / "b.pcapng", conversation(n=2, big=900), fmt="pcapng").read_bytes(),
               write(tmp_path / "c.pcap", mangle(conversation(n=3, big=2500), rng)).read_bytes()]
    jobs = []
    for i in range(150):
        data = bytearray(rng.choice(sources))
        how = rng.random()
        if how < 0.6:
            for _ in range(rng.randint(1, 12)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        if how > 0.4:
            cut = rng.randrange(len(data))
            data = data[:cut] if rng.random() < 0.7 else data[:cut] + data[cut + rng.randint(1, 200):]
        path = tmp_path / f"damaged{i}.cap"
        path.write_bytes(bytes(data))
        jobs.append((path, None, i % 3 != 0))
    check(jobs, tmp_path, monkeypatch)


def _by_connection(f):
    row = _row(f)
    return (f.conn.uid, f.seq, row[0]) + row[2:]  # the reader's own connection number aside


def _ranged(files, range_bytes):
    """What the byte-range path gives: frames by connection, and the ledgers."""
    from kafkaproto.capture.formats.ranges import read_frames_ranged

    acc = Accounting()
    rows = sorted(_by_connection(f) for f in read_frames_ranged(files, range_bytes, acc=acc))
    d = acc.to_dict()
    d.pop("file_bytes")
    return rows, d


def test_segments_fast_path_agrees_with_the_python_loop_and_the_whole_file(tmp_path, monkeypatch):
    """The compiled scanner's segments entry (in-order data in C) against every
    segment through Extractor.tcp, and both against reading the file whole."""
    files = [p for p in synthetic(tmp_path) if sniff_format(p.read_bytes()[:4])] + \
        [ROOT / "samples" / "capture" / "kafka.pcap"]
    assert capture.walker.streams._scan.COMPILED
    for path in files:
        for rb in (path.stat().st_size + 1, max(path.stat().st_size // 5, 1 << 12)):
            fast = _ranged([str(path)], rb)
            with monkeypatch.context() as m:
                m.setattr(capture.walker.streams, "_scan", _scan_twin)
                slow = _ranged([str(path)], rb)
            assert fast == slow, (path, rb)
            acc = Accounting()
            whole = sorted(_by_connection(f) for f in read_frames(path, acc=acc))
            d = acc.to_dict()
            d.pop("file_bytes")
            assert fast == (whole, d), (path, rb)
