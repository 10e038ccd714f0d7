"""Captures read in parallel: byte ranges of pcap/pcapng files → TCP segment
*positions*, and positions → the Kafka frames of their connections.

A capture may be one file or many (``tcpdump -C``/``-G`` rolls one capture
into files; a connection then runs across them).  Its files are put in the
order they were written (:func:`file_order`) and each file is cut into byte
ranges that are read in two stages:

- **index** (:func:`read_range`): the packet records that *start* inside the
  range, each TCP segment as a row of positions (:func:`segment_schema`:
  connection key, capture order, time, addresses, ports, sequence numbers,
  flags, and where its payload lies in the file -- not the payload), plus
  one statistics row (what was not TCP, where reading started and stopped,
  errors).  The compiled walker reads pcap records in C
  (capture.walker._index.index_pcap); what crosses to the second stage is
  about 70 bytes a packet, whatever the packet's size.
- **frames** (:func:`connection_frames`): the rows of each connection, put
  in capture order (``order``: the file's rank and the record's byte offset,
  as if the files were one), go to a walker (:func:`kafkaproto.capture.walker.streams.walker`)
  as columns, a batch of connections a call (the walker closes each after
  its last row), with the payloads read again from the files mapped in memory
  (:class:`Files`): the same reassembly, detection, framing and pairing as a
  whole-file read, in C.

Where a range's first record starts: a range that does not start at the
file's beginning looks, from its first byte on, for the first position
where a record header is plausible (pcap: captured length within the snap
length and not above the original length, sub-second part below one
second, time within a day of the file's first record; pcapng: a block
length that is a multiple of 4 and is repeated at the block's end) and is
confirmed by the next :data:`CONFIRM` records' headers.  That guess is then
**checked against the chain of records** coming from the range before it
(:func:`check_chains`): the previous range reports where its last record
ends past its own end, and a range whose guess disagrees (bytes inside a
packet's payload that look like record headers) is read again from the true
position.  So no packet is invented or lost whatever the payloads hold; a
range in which no record starts lies inside one record of the range before
it and reads nothing.  A damaged record stops its range's reading there;
the next range starts afresh at its own first confirmed record (a
whole-file read stops at the damage for good, so it can read less of a
damaged file).

pcapng: a range that starts after the first section takes the byte order
and interfaces of the file's first section (read from the file's head),
then any section header or interface block it meets; a file whose later
sections redefine their interfaces is read right only from those sections'
own ranges on (``dumpcap`` and ``tshark`` write one section).
"""

from __future__ import annotations

import json
import mmap
import os
import re
import socket
import struct
from collections.abc import Iterator, Sequence

import numpy as np

from ..._impl import load as _load
from ..accounting import Accounting
from ..walker.packets import decode_tcp
from .pcap import PCAP_MAGICS, PCAPNG_MAGIC, CaptureFile, sniff_format

_index = _load("capture.walker._index")
_NO_TS = -(1 << 63)  # a row without a time (the sink's NO_TS)

__all__ = ["CONFIRM", "RELEASE_BYTES", "STATS_KEY", "Files", "Positions", "check_chains", "connection_frames",
           "file_order", "packet_files", "plan_ranges", "range_accounting", "range_stats", "ranges_to_redo",
           "read_frames_ranged", "read_range", "read_ranges_checked", "redo_range", "segment_schema"]

CONFIRM = 8  # records whose headers must follow on from a candidate boundary
STATS_KEY = 0  # the ``key`` of a range's statistics row (no connection hashes to it)
_OFFSET_BITS = 40  # order = rank << 40 | byte offset: files up to 1 TiB, 2**23 files per capture
_MAX_RECORD = 256 * 1024 * 1024
_DAY = 86_400
_ROWS = 1 << 16  # segments per record batch


def segment_schema():
    """The Arrow schema of the segment positions (and statistics rows) a range gives."""
    import pyarrow as pa

    return pa.schema([
        ("capture", pa.int32()),  # the capture's number in the run
        ("key", pa.int64()),  # the connection's 4-tuple, either direction, hashed; 0: a statistics row
        ("order", pa.int64()),  # the file's rank in its capture << 40 | the record's byte offset
        ("ts", pa.int64()),  # nanoseconds since the epoch (null: pcapng simple packet, or out of range)
        ("family", pa.int8()),  # 4 or 6
        ("src", pa.binary(16)),  # the address (IPv4: the first 4 bytes)
        ("sport", pa.int32()),
        ("dst", pa.binary(16)),
        ("dport", pa.int32()),
        ("seq", pa.int64()),
        ("ack", pa.int64()),
        ("flags", pa.int16()),
        ("length", pa.int64()),  # payload bytes on the wire (more than captured when the snap length cut)
        ("at", pa.int64()),  # file offset of the payload
        ("caplen", pa.int32()),  # payload bytes captured
        ("info", pa.string()),  # a statistics row: its JSON
    ])


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


def packet_files(folder, filesystem=None) -> list[str]:
    """The pcap/pcapng files of a folder (a capture rolled into files), in
    :func:`file_order`; empty when it holds none.  ``filesystem``: the
    pyarrow filesystem the folder is in (None: a local one)."""
    from .files import head, listing

    return file_order([path for path, _size in listing(filesystem, folder) if sniff_format(head(filesystem, path, 4))])


def plan_ranges(path: str, range_bytes: int) -> list[tuple[int, int]]:
    """``[(start, end)]`` byte ranges of about ``range_bytes`` covering the file."""
    size = os.path.getsize(path)
    if size <= range_bytes or range_bytes <= 0:
        return [(0, size)]
    n = -(-size // range_bytes)
    step = -(-size // n)
    return [(i * step, min(size, (i + 1) * step)) for i in range(n)]


# ---------------------------------------------------------------------------
# the files, mapped


def map_file(path: str):
    """The bytes of a file, mapped in memory (read only): a buffer the walker
    reads payloads from without copying them.  An empty file: ``b""``."""
    with open(path, "rb") as fh:
        if not os.fstat(fh.fileno()).st_size:
            return b""
        return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)


class Files:
    """The files of a run's captures, mapped on first use: ``files[(capture,
    rank)]`` is the bytes of file ``rank`` of capture ``capture``."""

    def __init__(self, paths: dict[tuple[int, int], str]) -> None:
        self.paths = paths
        self._maps: dict[tuple[int, int], object] = {}

    def __getitem__(self, key: tuple[int, int]):
        got = self._maps.get(key)
        if got is None:
            got = self._maps[key] = map_file(self.paths[key])
        return got

    def release(self) -> None:
        """Drop the pages read so far from this process (the system keeps them
        cached): a task's memory stays what it holds, not what it has read."""
        for m in self._maps.values():
            if isinstance(m, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
                m.madvise(mmap.MADV_DONTNEED)

    def close(self) -> None:
        for m in self._maps.values():
            if isinstance(m, mmap.mmap):
                m.close()
        self._maps.clear()


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
# the index stage: one range's segment positions


class _Rows:
    """Segment positions gathered as Python values (records the compiled
    index leaves to decode_tcp, and pcapng files), turned into rows."""

    def __init__(self) -> None:
        self.items: list[tuple] = []

    def add(self, order: int, ts, seg, data_at: int) -> None:
        fam = 6 if ":" in seg.src else 4
        af = socket.AF_INET6 if fam == 6 else socket.AF_INET
        src, dst = socket.inet_pton(af, seg.src), socket.inet_pton(af, seg.dst)
        key = _index.connection_key(fam, src, seg.sport, dst, seg.dport)
        self.items.append((order, _NO_TS if ts is None else ts, key, seg.seq, seg.ack, seg.length,
                           data_at + seg.at, len(seg.payload), seg.sport, seg.dport, seg.flags, fam, 0,
                           src.ljust(16, b"\0"), dst.ljust(16, b"\0"), b"\0" * 4))

    def array(self) -> np.ndarray:
        return np.array(self.items, dtype=_index.POS_DTYPE) if self.items else \
            np.zeros(0, dtype=_index.POS_DTYPE)


def _positions(rows: np.ndarray, capture: int):
    """Record batches of :func:`segment_schema` from position rows."""
    import pyarrow as pa

    from ...arrow.buffers import masked, numbers

    schema = segment_schema()
    typ = {f.name: f.type for f in schema}
    for a in range(0, max(len(rows), 1), _ROWS):
        part = rows[a:a + _ROWS]
        n = len(part)
        if not n:
            return
        ts = part["ts"]
        ok = ts != _NO_TS
        cols = {
            "capture": numbers(np.full(n, capture), typ["capture"]),
            **{k: numbers(part[k], typ[k]) for k in ("key", "order", "family", "sport", "dport", "seq", "ack",
                                                     "flags", "length", "at", "caplen")},
            "ts": masked(ts, ok, typ["ts"]),
            "src": pa.Array.from_buffers(pa.binary(16), n, [None, pa.py_buffer(part["src"].tobytes())]),
            "dst": pa.Array.from_buffers(pa.binary(16), n, [None, pa.py_buffer(part["dst"].tobytes())]),
            "info": pa.nulls(n, pa.string()),
        }
        yield pa.RecordBatch.from_arrays([cols[f.name] for f in schema], schema=schema)


def _stats_batch(capture: int, rank: int, start: int, stats: dict):
    import pyarrow as pa

    from ...arrow.buffers import numbers, strings

    schema = segment_schema()
    cols = {f.name: pa.nulls(1, f.type) for f in schema}
    cols["capture"] = numbers([capture], pa.int32())
    cols["key"] = numbers([STATS_KEY], pa.int64())
    cols["order"] = numbers([(rank << _OFFSET_BITS) | start], pa.int64())
    cols["info"] = strings([json.dumps(stats)], pa.string())
    return pa.RecordBatch.from_arrays([cols[f.name] for f in schema], schema=schema)


def read_range(path: str, start: int, end: int, *, capture: int = 0, rank: int = 0,
               first: int | None = None) -> Iterator[object]:
    """The TCP segment positions of the records starting in ``[start, end)``
    of a pcap or pcapng file, as record batches of :func:`segment_schema`;
    the last batch is the range's statistics row (``key`` 0, JSON ``info``).

    ``first``: where the range's first record starts, when the chain of
    records from the range before says so (:func:`check_chains`); else it is
    searched for."""
    size = os.path.getsize(path)
    stats = {"file": os.fspath(path), "rank": rank, "start": start, "end": end, "size": size, "first": None,
             "stop": None, "records": 0, "packets": {}, "error": None, "bad_timestamps": 0, "searched": first is None}
    base = rank << _OFFSET_BITS
    rows = np.zeros(0, dtype=_index.POS_DTYPE)
    with open(path, "rb") as fh:
        head = fh.read(24)
        fmt = sniff_format(head)
        if fmt == "pcap":
            rows = _read_pcap_range(path, head, start, end, first, base, stats)
        elif fmt == "pcapng":
            rows = _read_pcapng_range(fh, start, end, first, base, stats)
        else:
            stats["error"] = f"{os.fspath(path)}: not a pcap or pcapng file"
    yield from _positions(rows, capture)
    yield _stats_batch(capture, rank, start, stats)


def _read_pcap_range(path: str, head: bytes, start: int, end: int, first: int | None, base: int,
                     stats: dict) -> np.ndarray:
    scan = _index
    size = stats["size"]
    if len(head) < 24:
        if start == 0:
            stats["error"] = f"{os.fspath(path)}: pcap header cut short: {len(head)} of 24 bytes"
        return np.zeros(0, dtype=scan.POS_DTYPE)
    order, ticks = PCAP_MAGICS[head[:4]]
    snaplen, linktype = struct.unpack(order + "II", head[16:24])
    linktype &= 0xFFFF
    buf = map_file(path)
    try:
        if first is None:
            if start == 0:
                first = 24
            else:
                max_incl = max(snaplen, 262_144) if 0 < snaplen <= _MAX_RECORD else _MAX_RECORD
                ref = struct.unpack_from(order + "I", buf, 24)[0] if size >= 40 else -1
                got = scan.pcap_boundary(buf, max(start, 24), end, order == ">", ticks, max_incl, ref, CONFIRM)
                first = None if got < 0 else got
        stats["first"] = first
        if first is None or first >= end:
            stats["first"] = None
            return np.zeros(0, dtype=scan.POS_DTYPE)
        rows, others, reasons, stop, records, error = scan.index_pcap(buf, first, end, order == ">", ticks,
                                                                      linktype, base >> _OFFSET_BITS)
        packets = dict(reasons)
        if others:
            extra = _Rows()
            for at, ts, data_at, incl in others:
                seg = decode_tcp(linktype, bytes(buf[data_at:data_at + incl]))
                if isinstance(seg, str):
                    packets[seg] = packets.get(seg, 0) + 1
                else:
                    extra.add(base | at, ts, seg, data_at)
            if extra.items:
                rows = np.concatenate([rows, extra.array()])
        stats["packets"] = packets
        stats["records"] = records
        stats["stop"] = stop
        if error:
            where = f" (records counted from the range starting at byte {start})" if start else ""
            stats["error"] = f"{os.fspath(path)}: {error}{where}"
        return rows
    finally:
        if isinstance(buf, mmap.mmap):
            buf.close()


def _read_pcapng_range(fh, start: int, end: int, first: int | None, base: int, stats: dict) -> np.ndarray:
    size = stats["size"]
    fh.seek(0)
    if start == 0 and first in (None, 0):
        first = 0
        cap = CaptureFile(fh, read_rest=False)
        cap.open()
        records = cap.iter_records()
    else:
        probe = CaptureFile(fh, read_rest=False)
        probe.open()
        for _ in probe.iter_records():
            break  # the first section's header and interfaces, up to its first packet
        if first is None:
            first = _pcapng_boundary(_Window(fh, start, size), start, end, probe.order)
        stats["first"] = first
        if first is None or first >= end:
            stats["first"] = None
            return np.zeros(0, dtype=_index.POS_DTYPE)
        fh.seek(first)
        cap = CaptureFile(fh, base=first, read_rest=False)
        cap.order, cap.interfaces = probe.order, list(probe.interfaces)
        records = cap._pcapng(b"")
    stats["first"] = first
    rows = _Rows()
    packets: dict[str, int] = {}
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
        rows.add(base | at, ts, seg, cap.data_at)
    else:
        stats["stop"] = cap.base + cap.bytes_read - (cap.unread_bytes if cap.error else 0)
    if cap.error:
        where = f" (records counted from the range starting at byte {start})" if start else ""
        stats["error"] = f"{os.fspath(cap.f.name)}: {cap.error}{where}"
        stats["stop"] = cap.at
    stats["records"] = cap.records
    stats["packets"] = packets
    return rows.array()


# ---------------------------------------------------------------------------
# the record chains across ranges


def check_chains(stats: Sequence[dict]) -> list[tuple[dict, int | None]]:
    """The ranges to read again, and from where: ``[(stats row, first)]``.

    For each file, in range order, the chain of records is followed from the
    file's first record: each range read from where the chain entered it
    reports where its last record ends (``stop``), which is where the next
    range's first record must be.  A range whose own first record (found by
    searching) disagrees, or that found records inside bytes the chain says
    belong to one record of the range before, is read again from the chain's
    position (``first`` None: it holds no record start at all).  Ranges after
    damage are not checked (the chain is broken there: the next range starts
    afresh, as it has)."""
    redo: list[tuple[dict, int | None]] = []
    by_file: dict[str, list[dict]] = {}
    for s in stats:
        by_file.setdefault(s["file"], []).append(s)
    for ranges in by_file.values():
        ranges.sort(key=lambda s: s["start"])
        reach = None  # where the chain stands: the next record's offset
        for s in ranges:
            if reach is not None and reach >= s["end"]:
                # the whole range lies inside the previous range's last record
                if s["first"] is not None:
                    redo.append((s, None))
                continue
            if reach is not None and s["first"] != reach:
                redo.append((s, reach))
                reach = None  # known once the range is read again
                continue
            reach = None if s["error"] or s["stop"] is None else s["stop"]
    return redo


def redo_range(s: dict, first: int | None, capture: int) -> list:
    """Read a range again from ``first`` (the chain's position; None: it holds
    no record start), as :func:`check_chains` asks."""
    if first is None:
        stats = {**s, "first": None, "stop": None, "records": 0, "packets": {}, "error": None, "bad_timestamps": 0,
                 "searched": False}
        return [_stats_batch(capture, s["rank"], s["start"], stats)]
    return list(read_range(s["file"], s["start"], s["end"], capture=capture, rank=s["rank"], first=first))


def range_stats(batches, capture: int) -> dict:
    """The statistics of a range from what :func:`read_range` gave (its last batch), with its capture's number."""
    s = json.loads(batches[-1].column("info")[0].as_py())
    s["capture"] = capture
    return s


def ranges_to_redo(stats) -> list[tuple[dict, int | None]]:
    """:func:`check_chains` over the ranges of every capture (each statistics row names its capture)."""
    by_capture: dict[int, list[dict]] = {}
    for s in stats:
        by_capture.setdefault(s["capture"], []).append(s)
    return [r for rows in by_capture.values() for r in check_chains(rows)]


def read_ranges_checked(got: dict, reread) -> tuple[list, list[dict], int]:
    """The index stage's results checked against the record chains, the
    ranges that disagree read again until every range agrees.  ``got``:
    ``{(capture, file, start): batches of read_range}``; ``reread([(stats,
    first)])``: the batches of each range read again (:func:`redo_range`, in
    this process or a pool).  Returns ``(every batch, statistics rows
    last in each range's, the statistics, ranges read again)``."""
    redone = 0
    while True:
        stats = {k: range_stats(v, k[0]) for k, v in got.items()}
        redo = ranges_to_redo(stats.values())
        if not redo:
            return [b for batches in got.values() for b in batches], list(stats.values()), redone
        redone += len(redo)
        for (s, _first), batches in zip(redo, reread(redo)):
            got[(s["capture"], s["file"], s["start"])] = batches


# ---------------------------------------------------------------------------
# the frames stage


class Positions:
    """A batch of segment positions (:func:`segment_schema`) as numpy columns
    of the walker's types, converted once; :func:`connection_frames` hands
    slices of it to the walker."""

    __slots__ = ("n", "capture", "key", "order", "rank", "ts", "family", "src", "dst", "sport", "dport", "seq", "ack",
                 "flags", "length", "at", "caplen")

    #: the walker's type of each column (Walker.segments)
    TYPES = {"capture": np.int32, "key": np.int64, "order": np.int64, "family": np.int8, "sport": np.int32,
             "dport": np.int32, "seq": np.int64, "ack": np.int64, "flags": np.int16, "length": np.int64,
             "at": np.int64, "caplen": np.int32}

    def __init__(self, batch) -> None:
        import pyarrow as pa

        from ...arrow.buffers import fill_null, to_numpy

        n = self.n = batch.num_rows
        col = {name: batch.column(i) for i, name in enumerate(batch.schema.names)}
        for name, dtype in self.TYPES.items():
            setattr(self, name, np.ascontiguousarray(to_numpy(fill_null(col[name], 0)), dtype=dtype))
        self.rank = self.order >> _OFFSET_BITS
        # a row without a time: the walker's NO_TS
        self.ts = np.ascontiguousarray(to_numpy(fill_null(col["ts"].cast(pa.int64()), _NO_TS)), dtype=np.int64)

        def addrs(arr):
            if not pa.types.is_fixed_size_binary(arr.type):
                arr = arr.cast(pa.binary(16))  # Spark hands them back as plain binary
            return np.frombuffer(arr.buffers()[1], dtype=np.uint8)[arr.offset * 16:(arr.offset + n) * 16].reshape(n, 16)

        self.src, self.dst = addrs(col["src"]), addrs(col["dst"])


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


#: a reader of positions lets the pages of the capture files it has read go every so many bytes
RELEASE_BYTES = 64 << 20


def connection_frames(batches, files: Files, extractor, *, stats: dict | None = None,
                      release_bytes: int = RELEASE_BYTES) -> Iterator[tuple[int, object]]:
    """The one loop over segment positions: ``batches`` (record batches of
    :func:`segment_schema`, sorted by capture, connection key and order) are
    fed connection by connection, each closed after its last segment, to
    ``extractor(capture)`` (a walker per capture, made by the caller:
    :func:`kafkaproto.capture.walker.streams.walker`), the payloads read
    from ``files``.  Yields ``(capture, FrameBatch)`` whenever a capture's
    sink is full, and what each holds at the end.  Statistics rows (key
    :data:`STATS_KEY`) go to ``stats[capture]`` (a list per capture) when
    ``stats`` is given.  The pages of the files read are let go every
    ``release_bytes``: a reader's memory is what it holds, not what it has
    read."""
    from ..frames import take_batch

    seen: dict[int, object] = {}  # capture -> its walker
    current = None  # (capture, key) being fed
    fed = 0

    def of(cap: int):
        got = seen.get(cap)
        if got is None:
            got = seen[cap] = extractor(cap)
        return got

    for batch in batches:
        if not batch.num_rows:
            continue
        pos = Positions(batch)
        caps, keys, rank = pos.capture, pos.key, pos.rank
        stat = keys == STATS_KEY
        # runs of one capture and one file: the walker feeds their connections one by one
        change = np.flatnonzero((caps[1:] != caps[:-1]) | (rank[1:] != rank[:-1]) | (stat[1:] != stat[:-1])) + 1
        bounds = [0, *change.tolist(), pos.n]
        for a, b in zip(bounds[:-1], bounds[1:]):
            cap, key = int(caps[a]), int(keys[a])
            if key == STATS_KEY:
                if stats is not None:
                    stats.setdefault(cap, []).extend(
                        json.loads(v) for v in batch.column("info").slice(a, b - a).to_pylist())
                continue
            if current is not None and current != (cap, key):
                prev = of(current[0])
                prev.close_all()  # the previous connection's last segment was fed
                if prev.sink.full():
                    yield current[0], take_batch(prev.sink)
                if fed > release_bytes:
                    files.release()
                    fed = 0
            walk = of(cap)
            payload = files[(cap, int(rank[a]))]
            while a < b:
                sl = slice(a, b)
                done = walk.segments(pos.ts[sl], pos.family[sl], pos.src[sl], pos.dst[sl], pos.sport[sl],
                                     pos.dport[sl], pos.seq[sl], pos.ack[sl], pos.flags[sl], pos.length[sl],
                                     pos.at[sl], pos.caplen[sl], payload, keys[sl], max(0, release_bytes - fed))
                fed += int(pos.caplen[a:a + done].sum())
                a += done
                if a < b:  # stopped where a connection ended: its sink full, or pages to let go
                    if walk.sink.full():
                        yield cap, take_batch(walk.sink)
                    if fed > release_bytes:
                        files.release()
                        fed = 0
            current = (cap, int(keys[b - 1]))
            if walk.sink.full():
                yield cap, take_batch(walk.sink)
    for cap, walk in sorted(seen.items()):
        walk.close_all()
        if walk.sink.size or walk.sink.unanswered:
            yield cap, take_batch(walk.sink)


def read_frames_ranged(paths: Sequence[str], range_bytes: int, *, ports=None, acc: Accounting | None = None,
                       max_frame_size: int | None = None) -> Iterator[object]:
    """The frames of one capture (``paths``: its files) read the parallel way,
    in this process: every range indexed, the record chains checked, the
    positions grouped by connection and put in capture order, fed connection
    by connection.  What the report's tasks do across processes; gives the
    frames :func:`~kafkaproto.capture.read_frames` gives for the files joined
    into one (grouped by connection)."""
    import pyarrow as pa

    from ..walker.streams import walker

    acc = acc if acc is not None else Accounting()
    ordered = file_order(list(paths))
    got = {(0, path, start): list(read_range(path, start, end, capture=0, rank=rank))
           for rank, path in enumerate(ordered) for start, end in plan_ranges(path, range_bytes)}
    batches, _stats, _redone = read_ranges_checked(
        got, lambda redo: [redo_range(s, first, s["capture"]) for s, first in redo])
    table = pa.Table.from_batches(batches, schema=segment_schema()).sort_by([("key", "ascending"),
                                                                              ("order", "ascending")])
    kw = {} if max_frame_size is None else {"max_frame_size": max_frame_size}
    files = Files({(0, rank): path for rank, path in enumerate(ordered)})
    stats: dict[int, list] = {}
    try:
        for _cap, fb in connection_frames(table.combine_chunks().to_batches(), files,
                                          lambda cap: walker(ports, acc, **kw), stats=stats):
            yield from fb.frames()
    finally:
        files.close()
    acc.merge(range_accounting(stats.get(0, [])))
