"""Captures read in parallel: byte ranges of pcap/pcapng files → TCP segments
as Arrow, and segments → the Kafka frames of their connections.

A capture may be one file or many (``tcpdump -C``/``-G`` rolls one capture
into files; a connection then runs across them).  Its files are put in the
order they were written (:func:`file_order`) and each file is cut
into byte ranges that can be read independently:

- :func:`plan_ranges` cuts a file into ranges of about ``range_bytes``;
- :func:`read_range` reads the packet records that *start* inside its range
  (the last one may run past the range's end) and gives their TCP segments
  as Arrow record batches (:func:`segment_schema`), plus one statistics row
  (what was not TCP, where it started and stopped, errors);
- segments are then grouped by connection (``key``: the 4-tuple, either
  direction) and sorted by ``order`` (the file's rank and the record's byte
  offset: capture order, as if the files were one), and :func:`feed` hands
  them to an :class:`~kafkaproto.capture.streams.Extractor` -- the same
  reassembly, detection, framing and pairing as a whole-file read;
- :func:`range_accounting` folds the statistics rows of a capture into its
  file-level ledgers (packets that are not TCP, file bytes, unread bytes).

Finding where a range's first record starts: a range that does not start at
the file's beginning looks, from its first byte on, for the first position
where a record header is plausible (pcap: captured length within the snap
length and not above the original length, sub-second part below one
second, time within a day of the file's first record; pcapng: a block
length that is a multiple of 4 and is repeated at the block's end) and is
confirmed by the next :data:`CONFIRM` records' headers following on from it
(or by the file ending exactly after them).  Only records starting before
the range's end are read, so every record is read by exactly one range.  A
range in which no record starts -- it lies inside one record larger than
itself, or inside damage -- reads nothing and emits only its statistics row;
its bytes are the previous range's last record, or unread (damage), and
:func:`range_accounting` counts them as such from every range's start and
stop.  A damaged record stops its range's reading there; the next range
starts afresh at its own first confirmed record (a whole-file read stops at
the damage for good, so it can read less of a damaged file).

pcapng: a range that starts after the first section takes the byte order
and interfaces of the file's first section (read from the file's head),
then any section header or interface block it meets; a file whose later
sections redefine their interfaces is read right only from those sections'
own ranges on (``dumpcap`` and ``tshark`` write one section).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import struct
from collections.abc import Iterator, Sequence

from .accounting import Accounting
from .pcap import PCAP_MAGICS, PCAPNG_MAGIC, CaptureFile, TcpSegment, _addr4, _addr6, decode_tcp, sniff_format

__all__ = ["CONFIRM", "STATS_KEY", "feed", "file_order", "packet_files", "plan_ranges", "range_accounting",
           "read_frames_ranged", "read_range", "segment_schema"]

CONFIRM = 8  # records whose headers must follow on from a candidate boundary
STATS_KEY = 0  # the ``key`` of a range's statistics row (no connection hashes to it)
_OFFSET_BITS = 40  # order = rank << 40 | byte offset: files up to 1 TiB, 2**23 files per capture
_MAX_RECORD = 256 * 1024 * 1024
_DAY = 86_400
_ROWS = 8192  # segments per record batch
_BYTES = 16 << 20  # payload bytes per record batch


def segment_schema():
    """The Arrow schema of the segments (and statistics rows) a range gives."""
    import pyarrow as pa

    return pa.schema([
        ("capture", pa.int32()),  # the capture's number in the run
        ("key", pa.int64()),  # the connection's 4-tuple, either direction, hashed; 0: a statistics row
        ("order", pa.int64()),  # the file's rank in its capture << 40 | the record's byte offset
        ("ts", pa.int64()),  # nanoseconds since the epoch (null: pcapng simple packet)
        ("src", pa.binary()),  # the address, 4 (IPv4) or 16 (IPv6) bytes
        ("sport", pa.int32()),
        ("dst", pa.binary()),
        ("dport", pa.int32()),
        ("seq", pa.int64()),
        ("ack", pa.int64()),
        ("flags", pa.int16()),
        ("length", pa.int64()),  # payload bytes on the wire (more than captured when the snap length cut)
        ("payload", pa.binary()),  # payload bytes captured; a statistics row: its JSON
    ])


def connection_key(a: tuple[str, int], b: tuple[str, int]) -> int:
    """The ``key`` of a 4-tuple, the same both ways and in every process
    (never :data:`STATS_KEY`)."""
    lo, hi = (a, b) if a < b else (b, a)
    raw = f"{lo[0]}|{lo[1]}|{hi[0]}|{hi[1]}".encode()
    return (int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "big") >> 1) | 1


# ---------------------------------------------------------------------------
# planning


def file_order(paths: Sequence[str]) -> list[str]:
    """The files of one capture in the order they were written: by name, with
    numbers compared as numbers -- ``tcpdump -C`` names its files ``name``,
    ``name1``, ``name2``..., ``-G`` by a time stamp (``strftime``), so either
    sorts into capture order.  (A file's first time stamp would not do: a
    capture's records are in the order packets were seen, and their time
    stamps need not be.)"""
    def natural(path: str):
        return [(0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", os.path.basename(path))]

    return sorted(paths, key=lambda p: (natural(p), p))


def packet_files(folder) -> list[str]:
    """The pcap/pcapng files of a folder (a capture rolled into files), in
    :func:`file_order`; empty when it holds none."""
    out = []
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            with open(path, "rb") as fh:
                if sniff_format(fh.read(4)):
                    out.append(path)
    return file_order(out)


def plan_ranges(path: str, range_bytes: int) -> list[tuple[int, int]]:
    """``[(start, end)]`` byte ranges of about ``range_bytes`` covering the file."""
    size = os.path.getsize(path)
    if size <= range_bytes or range_bytes <= 0:
        return [(0, size)]
    n = -(-size // range_bytes)
    step = -(-size // n)
    return [(i * step, min(size, (i + 1) * step)) for i in range(n)]


# ---------------------------------------------------------------------------
# finding a record boundary


class _Window:
    """Bytes of a file from ``start`` on, read as far as asked."""

    def __init__(self, fh, start: int, size: int) -> None:
        self.fh, self.start, self.size = fh, start, size
        self.buf = b""

    def get(self, off: int, n: int) -> bytes:
        rel = off - self.start
        if rel + n > len(self.buf) and self.start + len(self.buf) < self.size:
            self.fh.seek(self.start + len(self.buf))
            self.buf += self.fh.read(max(rel + n - len(self.buf), 1 << 20))
        return self.buf[rel:rel + n]


def _pcap_boundary(win: _Window, start: int, end: int, order: str, ticks: int, snaplen: int,
                   ref_sec: int | None) -> int | None:
    rec = struct.Struct(order + "IIII")
    max_incl = max(snaplen, 262_144) if 0 < snaplen <= _MAX_RECORD else _MAX_RECORD
    size = win.size

    def plausible(p: int, near: int | None) -> tuple[int, int] | None:
        head = win.get(p, 16)
        if len(head) < 16:
            return None
        sec, frac, incl, orig = rec.unpack(head)
        if incl > max_incl or orig < incl or orig > _MAX_RECORD or frac >= ticks:
            return None
        if near is not None and abs(sec - near) > _DAY:
            return None
        return sec, p + 16 + incl

    for p in range(start, end):
        got = plausible(p, ref_sec)
        if got is None:
            continue
        sec, nxt = got
        ok = True
        for _ in range(CONFIRM):
            if nxt == size:
                break  # the file ends exactly after a record: confirmed
            if nxt > size:
                ok = True  # a last record cut short is still a record
                break
            got = plausible(nxt, sec)
            if got is None:
                ok = False
                break
            sec, nxt = got
        if ok:
            return p
    return None


def _pcapng_boundary(win: _Window, start: int, end: int, order: str) -> int | None:
    hdr = struct.Struct(order + "II")
    tail = struct.Struct(order + "I")
    size = win.size

    def block(p: int) -> int | None:
        head = win.get(p, 8)
        if len(head) < 8:
            return None
        if head[:4] == PCAPNG_MAGIC:
            return None  # a section header: fine to start at, but its byte order is its own; let it be found
        _btype, length = hdr.unpack(head)
        if length < 12 or length % 4 or length > _MAX_RECORD:
            return None
        if p + length > size:
            return None
        if tail.unpack(win.get(p + length - 4, 4))[0] != length:
            return None
        return p + length

    p = start + (-start % 4)
    while p < end:
        if win.get(p, 4) == PCAPNG_MAGIC:
            return p  # a new section starts here
        nxt = block(p)
        if nxt is not None:
            ok = True
            for _ in range(CONFIRM):
                if nxt >= size or win.get(nxt, 4) == PCAPNG_MAGIC:
                    break
                nxt = block(nxt)
                if nxt is None:
                    ok = False
                    break
            if ok:
                return p
        p += 4
    return None


# ---------------------------------------------------------------------------
# reading one range


def read_range(path: str, start: int, end: int, *, capture: int = 0, rank: int = 0,
               rows: int = _ROWS) -> Iterator[object]:
    """The TCP segments of the records starting in ``[start, end)`` of a pcap
    or pcapng file, as record batches of :func:`segment_schema`; the last
    batch ends with the range's statistics row (``key`` 0, JSON payload)."""
    import pyarrow as pa

    schema = segment_schema()
    size = os.path.getsize(path)
    stats = {"file": os.fspath(path), "rank": rank, "start": start, "end": end, "size": size, "first": None,
             "stop": None, "records": 0, "packets": {}, "error": None, "bad_timestamps": 0}
    base = rank << _OFFSET_BITS
    cols: dict[str, list] = {f.name: [] for f in schema}
    nbytes = 0
    keys: dict[tuple, int] = {}
    raw: dict[str, bytes] = {}
    packets: dict[str, int] = {}

    def batch(extra: dict | None = None):
        if extra is not None:
            for name in cols:
                cols[name].append(extra.get(name))
        out = pa.RecordBatch.from_arrays([pa.array(cols[f.name], f.type) for f in schema], schema=schema)
        for v in cols.values():
            v.clear()
        return out

    with open(path, "rb") as fh:
        head = fh.read(24)
        fmt = sniff_format(head)
        cap: CaptureFile | None = None
        first = None
        if fmt == "pcap":
            order, ticks = PCAP_MAGICS[head[:4]]
            snaplen, linktype = struct.unpack(order + "II", head[16:24]) if len(head) == 24 else (0, 0)
            if start == 0:
                first = 24 if len(head) == 24 else None
            else:
                fh.seek(24)
                rh = fh.read(16)
                ref = struct.unpack(order + "I", rh[:4])[0] if len(rh) == 16 else None
                first = _pcap_boundary(_Window(fh, start, size), start, end, order, ticks, snaplen, ref)
            if first is not None:
                fh.seek(0)
                probe = CaptureFile(fh, read_rest=False)
                probe.open()
                order_, ticks_, linktype = probe.pcap_header()
                fh.seek(first)
                cap = CaptureFile(fh, base=first, read_rest=False)
                records = cap._pcap(order_, ticks_, linktype)
        elif fmt == "pcapng":
            if start == 0:
                first = 0
                fh.seek(0)
                cap = CaptureFile(fh, read_rest=False)
                cap.open()
                records = cap.iter_records()
            else:
                fh.seek(0)
                probe = CaptureFile(fh, read_rest=False)
                probe.open()
                for _ in probe.iter_records():
                    break  # the first section's header and interfaces, up to its first packet
                first = _pcapng_boundary(_Window(fh, start, size), start, end, probe.order)
                if first is not None:
                    fh.seek(first)
                    cap = CaptureFile(fh, base=first, read_rest=False)
                    cap.order, cap.interfaces = probe.order, list(probe.interfaces)
                    records = cap._pcapng(b"")
        else:
            stats["error"] = f"{os.fspath(path)}: not a pcap or pcapng file"
        stats["first"] = first
        if fmt == "pcap" and start == 0 and first is None:
            stats["error"] = f"{os.fspath(path)}: pcap header cut short: {len(head)} of 24 bytes"
        if cap is not None:
            bad_seen = 0
            for ts, lt, data, _orig in records:
                at = cap.at
                if at >= end:
                    cap.records -= 1  # not this range's
                    stats["stop"] = at
                    break
                if cap.bad_timestamps != bad_seen:  # this record's time is out of range (ts None)
                    bad_seen = cap.bad_timestamps
                    stats["bad_timestamps"] += 1
                seg = decode_tcp(lt, data)
                if isinstance(seg, str):
                    packets[seg] = packets.get(seg, 0) + 1
                    continue
                a, b = (seg.src, seg.sport), (seg.dst, seg.dport)
                k = keys.get((a, b))
                if k is None:
                    k = keys[(a, b)] = keys[(b, a)] = connection_key(a, b)
                cols["capture"].append(capture)
                cols["key"].append(k)
                cols["order"].append(base | at)
                cols["ts"].append(ts)
                cols["src"].append(raw.get(seg.src) or _raw(raw, seg.src))
                cols["sport"].append(seg.sport)
                cols["dst"].append(raw.get(seg.dst) or _raw(raw, seg.dst))
                cols["dport"].append(seg.dport)
                cols["seq"].append(seg.seq)
                cols["ack"].append(seg.ack)
                cols["flags"].append(seg.flags)
                cols["length"].append(seg.length)
                cols["payload"].append(seg.payload)
                nbytes += len(seg.payload)
                if len(cols["key"]) >= rows or nbytes >= _BYTES:
                    yield batch()
                    nbytes = 0
            else:
                stats["stop"] = cap.base + cap.bytes_read - (cap.unread_bytes if cap.error else 0)
            if cap.error:
                where = f" (records counted from the range starting at byte {start})" if start else ""
                stats["error"] = f"{os.fspath(path)}: {cap.error}{where}"
                stats["stop"] = cap.at
            stats["records"] = cap.records
    stats["packets"] = packets
    yield batch({"capture": capture, "key": STATS_KEY, "order": base | start,
                 "payload": json.dumps(stats).encode()})


def _raw(cache: dict[str, bytes], text: str) -> bytes:
    got = cache[text] = socket.inet_pton(socket.AF_INET6 if ":" in text else socket.AF_INET, text)
    return got


# ---------------------------------------------------------------------------
# the other side of the shuffle


def _text(b: bytes) -> str:
    return _addr4(b) if len(b) == 4 else _addr6(b)


def feed(ext, batch, scan=None) -> None:
    """Hand the segments of ``batch`` (rows of :func:`segment_schema`, one
    connection's in capture order; no statistics rows) to ``ext``: through
    ``scan`` (``ext.scanner(...)``: the compiled fast path takes in-order
    segments of settled connections, as it does packets) or one by one
    through :meth:`~kafkaproto.capture.streams.Extractor.tcp`."""
    import numpy as np

    n = batch.num_rows
    names = batch.schema.names
    col = {name: batch.column(i) for i, name in enumerate(names)}
    src, dst, payload = col["src"].to_pylist(), col["dst"].to_pylist(), col["payload"]
    tcp = ext.tcp
    if scan is None or col["ts"].null_count or payload.null_count:
        ts, sport, dport, seq, ack, flags, length = (col[k].to_pylist() for k in (
            "ts", "sport", "dport", "seq", "ack", "flags", "length"))
        pl = payload.to_pylist()
        for i in range(n):
            tcp(ts[i], TcpSegment(_text(src[i]), sport[i], _text(dst[i]), dport[i], seq[i], ack[i], flags[i],
                                  pl[i] or b"", length[i]))
        return
    num = {k: col[k].to_numpy(zero_copy_only=False) for k in ("ts", "sport", "dport", "seq", "ack", "flags",
                                                              "length")}
    bufs = payload.buffers()
    width = 8 if str(payload.type).startswith("large") else 4
    offsets = np.frombuffer(bufs[1], dtype=np.int64 if width == 8 else np.int32)[payload.offset:payload.offset + n + 1]
    offsets = offsets.astype(np.int64)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)

    def slow(i: int) -> None:
        tcp(int(num["ts"][i]), TcpSegment(_text(src[i]), int(num["sport"][i]), _text(dst[i]), int(num["dport"][i]),
                                          int(num["seq"][i]), int(num["ack"][i]), int(num["flags"][i]),
                                          data[offsets[i]:offsets[i + 1]].tobytes(), int(num["length"][i])))

    scan.segments(num["ts"], src, dst, num["sport"], num["dport"], num["seq"], num["ack"], num["flags"],
                  num["length"], offsets, data, slow)


def range_accounting(stats: Sequence[dict]) -> Accounting:
    """The file-level ledgers of one capture from its ranges' statistics rows:
    packets that are not TCP (TCP packets are counted where their segments
    are fed), the files' bytes, the bytes no range read, and errors."""
    acc = Accounting()
    by_file: dict[str, list[dict]] = {}
    for s in stats:
        by_file.setdefault(s["file"], []).append(s)
        for reason, n in s["packets"].items():
            acc.packets[reason] += n
            acc.packets_total += n
        if s["error"]:
            acc.errors.append(s["error"])
        acc.bad_timestamps += s.get("bad_timestamps", 0)
    for _name, ranges in sorted(by_file.items(), key=lambda kv: kv[1][0]["rank"]):
        size = ranges[0]["size"]
        acc.file_bytes += size
        # bytes some range read: [first record, where it stopped) of each range
        spans = sorted((s["first"], max(s["first"], s["stop"] if s["stop"] is not None else s["first"]))
                       for s in ranges if s["first"] is not None)
        covered, reach = 0, 0
        header = min((s for s in spans), default=(size, size))[0] if spans else size
        for a, b in spans:
            a = max(a, reach)
            if b > a:
                covered += b - a
                reach = b
        acc.unread_bytes += max(0, size - header - covered) if spans else 0
    return acc


def read_frames_ranged(paths: Sequence[str], range_bytes: int, *, ports=None, acc: Accounting | None = None,
                       max_frame_size: int | None = None) -> Iterator[object]:
    """The frames of one capture (``paths``: its files) read the parallel way,
    in this process: every range read, segments grouped by connection and
    put in capture order, fed connection by connection.  What a Spark job does
    across tasks; gives the frames :func:`~kafkaproto.capture.read_frames`
    gives for the files joined into one (grouped by connection)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from .frames import _take
    from .streams import Extractor

    acc = acc if acc is not None else Accounting()
    batches = []
    for rank, path in enumerate(file_order(list(paths))):
        for start, end in plan_ranges(path, range_bytes):
            batches += list(read_range(path, start, end, rank=rank))
    table = pa.Table.from_batches(batches, schema=segment_schema()).sort_by([("key", "ascending"),
                                                                              ("order", "ascending")])
    is_stats = pc.equal(table["key"], STATS_KEY)
    stats = [json.loads(p) for p in table.filter(is_stats)["payload"].to_pylist()]
    acc.merge(range_accounting(stats))
    kw = {} if max_frame_size is None else {"max_frame_size": max_frame_size}
    ext = Extractor(ports, acc, **kw)
    scan = ext.scanner()
    sink = ext.sink
    segs = table.filter(pc.invert(is_stats)).combine_chunks()
    keys = segs["key"].to_numpy()
    start = 0
    n = len(keys)
    while start < n:
        stop = start
        while stop < n and keys[stop] == keys[start]:
            stop += 1
        for b in segs.slice(start, stop - start).to_batches():
            feed(ext, b, scan)
        ext.close_all()
        start = stop
    sink.flush()
    yield from _take(sink).frames()
