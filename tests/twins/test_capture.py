"""The compiled capture walker against its pure-Python twin.

Every capture file of the repository, synthetic captures with handshakes,
reordering, retransmissions, overlaps, gaps, snap-length cuts, several link
types and both file formats, reused 4-tuples, eviction, forced gaps and
detections, TCP Fast Open, IPv6, junk claims, and randomly damaged copies of
small captures are read three ways: by the compiled walker, by the twin's
walker in this process (its reassembly, judge and sink: walker/_scan_py,
_tcp_py, _judge_py, _sink_py) and by the whole twin in a KAFKAPROTO_PURE=1
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

import kafkaproto.capture.walker._judge_py as _judge_twin
import kafkaproto.capture.walker._scan_py as _scan_twin
import kafkaproto.capture.walker._sink_py as _sink_twin
from kafkaproto import encode_request, encode_response
from kafkaproto.capture import Accounting, CaptureFormatError, read_frames
from kafkaproto.capture.formats.pcap import sniff_format
from kafkaproto.capture.formats.writer import PcapngWriter, PcapWriter, TcpConversation, tcp_packet
from kafkaproto.capture.tools.dissect import dissect
from kafkaproto.capture.walker import streams
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


def outcome(path, ports=None, use_dissect=True, limits=None):
    """Everything read_frames says about a file, in comparable form
    (``limits``: the walker's, as read_frames takes them)."""
    acc = Accounting()
    rows = []
    try:
        if use_dissect:
            for d in dissect(read_frames(path, acc=acc, ports=ports, **(limits or {})), acc):
                f = d.frame
                rows.append(_row(f) + (d.error is None,))
        else:
            rows = [_row(f) for f in read_frames(path, acc=acc, ports=ports, **(limits or {}))]
    except CaptureFormatError as e:
        return ("CaptureFormatError", str(e), acc.to_dict())
    return rows, acc.to_dict()


def _row(f):
    c = f.conn
    return (f.ts, c.id, c.client, c.server, c.first_ts, f.direction, f.offset, f.frame, f.api_key, f.api_version,
            f.correlation_id, f.request_ts, f.status)


def outcomes(jobs):
    return [outcome(*job) for job in jobs]


def pure_outcomes(jobs, tmp_path):
    """The same, computed by the twin in another process."""
    spec = tmp_path / "jobs.json"
    spec.write_text(json.dumps([[str(job[0]), *job[1:]] for job in jobs]))
    result = tmp_path / "pure.pickle"
    env = dict(os.environ, KAFKAPROTO_PURE="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests"), env.get("PYTHONPATH", "")])
    code = ("import json, pickle, sys, kafkaproto; assert not kafkaproto.COMPILED\n"
            "from twins.test_capture import outcomes\n"
            "jobs = json.load(open(sys.argv[1]))\n"
            "pickle.dump(outcomes(jobs), open(sys.argv[2], 'wb'))\n")
    subprocess.run([sys.executable, "-c", code, str(spec), str(result)], env=env, check=True, cwd=tmp_path)
    return pickle.loads(result.read_bytes())


def twin_walker(m) -> None:
    """Every unit of the walker swapped for its twin (in ``m``, a monkeypatch
    context): walker() makes the twin's Walker over the twins' reassembly,
    judge and sink; the rest of the process stays compiled."""
    assert streams._scan.COMPILED and streams._judge.COMPILED and streams._sink.COMPILED
    m.setattr(streams, "_scan", _scan_twin)
    m.setattr(streams, "_judge", _judge_twin)
    m.setattr(streams, "_sink", _sink_twin)
    m.setattr(streams, "_CHECKS", [])


def check(jobs, tmp_path, monkeypatch):
    compiled = outcomes(jobs)
    with monkeypatch.context() as m:
        twin_walker(m)
        twin = outcomes(jobs)
    pure = pure_outcomes(jobs, tmp_path)
    for job, a, b, c in zip(jobs, compiled, twin, pure):
        assert a == b, f"compiled and the twin's walker differ on {job}"
        assert a == c, f"compiled and twin differ on {job}"
        if isinstance(a[-1], dict) and not a[0] == "CaptureFormatError":
            acc = Accounting()
            for k in ("packets", "bytes", "frames"):
                getattr(acc, k).update(a[-1][k])
            acc.packets_total, acc.payload_bytes_total = a[-1]["packets_total"], a[-1]["payload_bytes_total"]
            acc.check()
    return compiled


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
    files += hostile(tmp_path)
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


def _ipv6_hop_by_hop(packet: bytes) -> bytes:
    """An Ethernet IPv6 packet with an 8-byte hop-by-hop options header inserted."""
    ip = 14
    nxt = packet[ip + 6]
    plen = struct.unpack_from(">H", packet, ip + 4)[0]
    head = bytearray(packet[:ip + 40])
    struct.pack_into(">H", head, ip + 4, plen + 8)
    head[ip + 6] = 0
    return bytes(head) + bytes([nxt, 0, 1, 4, 0, 0, 0, 0]) + packet[ip + 40:]


def _offload(packet: bytes) -> bytes:
    """An Ethernet IPv4 packet as a segmentation-offload capture shows it (total length 0)."""
    out = bytearray(packet)
    struct.pack_into(">H", out, 14 + 2, 0)
    return bytes(out)


def _exchanges(conv, n, mss=1460):
    pk = []
    for req, resp in pairs(n, 700)[:n]:
        pk += conv.send(True, req, mss) + conv.send(False, resp, mss)
    return pk


def _junk_header(size):
    return struct.pack(">ihhih", size, 3, 1, 5, 2) + b"ab"


def hostile(tmp_path):
    """Captures of what the walker's state and judge are for: heavy
    reordering, 4-tuples reused (while open, after a close, with late
    packets), TCP Fast Open, IPv6 extension headers, offload captures, a
    socket connected to itself, and claims that would hide the frames behind
    them (a header claiming 917 kB or 100 MB, 160 bytes of repeating headers)."""
    files = []
    rng = random.Random(33)
    # reordering in windows of eight, and retransmissions of what came before
    base = conversation(n=6, big=2500, mss=500)
    out = []
    for i in range(0, len(base), 8):
        win = base[i:i + 8]
        rng.shuffle(win)
        out += win + [rng.choice(out)] if out else win
    files.append(write(tmp_path / "reorder.pcap", base[:3] + [p for p in out if p not in base[:3]]))
    # a 4-tuple reused: while open (a new ISN), after its close, and late packets of a closed one
    a = conversation(close=False)
    b = conversation(isn=(70000, 90000))
    late = conversation(isn=(70000, 90000))[5:8]
    c = conversation(isn=(123456, 654321))
    files.append(write(tmp_path / "reuse-open.pcap", a + b + late + c))
    # TCP Fast Open: the first request on the SYN
    req, resp = pairs(0, 0)[0]
    conv = TcpConversation(("10.1.0.7", 40777), SERVER)
    syn = (conv._tick(), tcp_packet(LINKTYPE_ETHERNET, "10.1.0.7", 40777, SERVER[0], SERVER[1], 3000, 0, 0x02, req))
    conv.seq[conv.client] = 3001 + len(req)
    rest = [conv._packet(conv.server, 0x12)]
    conv.seq[conv.server] += 1
    rest += conv.send(False, resp) + _exchanges(conv, 2) + conv.close()
    files.append(write(tmp_path / "tfo.pcap", [syn] + rest))
    # IPv6 with a hop-by-hop header on every packet, reordered; IPv4 offload captures
    v6 = conversation(client=("fd00::7", 40001), server=("fd00::8", 9092), n=3, big=1800)
    files.append(write(tmp_path / "v6-ext.pcap", mangle([(ts, _ipv6_hop_by_hop(p)) for ts, p in v6], rng)))
    files.append(write(tmp_path / "offload.pcap", [(ts, _offload(p)) for ts, p in conversation(n=2)]))
    # a socket connected to itself
    me = TcpConversation(("10.1.0.9", 9092), ("10.1.0.9", 9092))
    files.append(write(tmp_path / "self.pcap", me.handshake() + me.send(True, pairs(1, 100)[1][0]) + me.close()))
    # claims that would hide the frames behind them, caught from the start and mid-stream
    for name, junk, n in (("claim917k", _junk_header(917_000), 40), ("claim100m", _junk_header(100_000_000), 3),
                          ("pattern252", _junk_header(252) * 10, 3), ("pattern12", _junk_header(12) * 10, 3)):
        for hs in (True, False):
            conv = TcpConversation(("10.1.0.8", 40888), SERVER)
            pk = (conv.handshake() if hs else []) + conv.send(True, junk) + _exchanges(conv, n) + conv.close()
            files.append(write(tmp_path / f"{name}-{'syn' if hs else 'mid'}.pcap", pk))
    return files


def bounded(tmp_path):
    """Jobs that run into the walker's bounds: connections evicted, holes given
    up on (per direction and in all), detections forced."""
    jobs = []
    mixed = sorted((p for k in range(4) for p in conversation(client=("10.1.0.1", 40100 + k), n=3, big=1500)),
                   key=lambda p: p[0])
    path = write(tmp_path / "evict.pcap", mixed)
    jobs += [(path, [9092], True, {"max_open_connections": 2}), (path, None, True, {"max_open_connections": 3})]
    pk = []
    for k in range(6):
        conv = TcpConversation(("10.1.0.2", 41000 + k), SERVER)
        pk += conv.handshake() + conv.send(True, b"".join(r for r, _ in pairs(3, 3000)), 1000)[1:]
    path = write(tmp_path / "holes.pcap", pk)
    jobs += [(path, [9092], True, {"max_pending_bytes": 3000}), (path, [9092], True, {"max_pending_total": 8000}),
             (path, None, False, {"max_pending_total": 5000})]
    pk = []
    for k in range(8):
        conv = TcpConversation(("10.1.0.3", 42000 + k), ("10.1.0.4", 7000 + k), isn=(1000 + k, 5000))
        pk += conv.send(True, b"GET /x HTTP/1.1\r\n" * 300)
    kafka = TcpConversation(("10.1.0.3", 43000), SERVER)
    pk += kafka.handshake() + _exchanges(kafka, 2) + kafka.close()
    path = write(tmp_path / "held.pcap", pk)
    jobs += [(path, None, True, {"max_pending_total": 20_000})]
    return jobs


def repository_captures():
    """Every pcap/pcapng file under samples/ and tests/data (regression inputs included)."""
    return [p for p in sorted((ROOT / "samples").rglob("*")) + sorted((ROOT / "tests" / "data").rglob("*"))
            if p.is_file() and sniff_format(p.read_bytes()[:4])]


def test_every_repository_and_synthetic_capture_agrees(tmp_path, monkeypatch):
    files = repository_captures() + synthetic(tmp_path)
    assert any(p.name == "kafka.pcap" for p in files)
    jobs = [(p, None, True) for p in files] + [(p, [9092], False) for p in files] + bounded(tmp_path)
    compiled = check(jobs, tmp_path, monkeypatch)
    assert sum(len(o[0]) for o in compiled if isinstance(o[0], list)) > 100


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


def test_segments_agree_with_the_twin_and_the_whole_file(tmp_path, monkeypatch):
    """The byte-range path (segments as columns, into the walker) by the
    compiled walker and by the twin's, and both against reading the file
    whole."""
    files = [p for p in synthetic(tmp_path) if sniff_format(p.read_bytes()[:4])] + \
        [ROOT / "samples" / "capture" / "kafka.pcap"]
    for path in files:
        for rb in (path.stat().st_size + 1, max(path.stat().st_size // 5, 1 << 12)):
            compiled = _ranged([str(path)], rb)
            with monkeypatch.context() as m:
                twin_walker(m)
                twin = _ranged([str(path)], rb)
            assert compiled == twin, (path, rb)
            acc = Accounting()
            whole = sorted(_by_connection(f) for f in read_frames(path, acc=acc))
            d = acc.to_dict()
            d.pop("file_bytes")
            assert compiled == (whole, d), (path, rb)
