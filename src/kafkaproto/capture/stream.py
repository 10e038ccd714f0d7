"""A capture that grows, read a piece at a time: what the streaming Spark
source (``spark.readStream.format("kafkaproto.capture")``) and the live
report (``kafkaproto report --follow``) read.

>>> from kafkaproto.capture.stream import GrowingCapture
>>> cap = GrowingCapture("/var/capture/", state_location="/var/capture-state/")   # doctest: +SKIP
>>> start = cap.initial()                          # the offset before the first byte
>>> end = cap.latest(start)                        # as far as the files go now
>>> for table, batch in cap.read(start, end, ["responses"]): ...                   # doctest: +SKIP
>>> cap.commit(end, ["responses"])                 # states before ``end`` are let go

The capture is a folder of the pcap or pcapng files one capture was rolled
into (``tcpdump -C``/``-G``, ``dumpcap -b``, in
:func:`~kafkaproto.capture.formats.ranges.file_order`), or one such file,
still being written; or the tap's output while the tap
runs (``kafkaproto tap --out DIR``: Arrow IPC streams of frame rows, rolled
into ``frames-<time>-<pid>-<n>.arrows`` files, read in the order of their
names as the batch source reads them).  An *offset* (:class:`Offset`, a
dict of plain values as Spark keeps it in its checkpoint) names the file
read last and how far, and the files a read finished with their sizes, so
the same offsets always name the same bytes: the files are only ever
appended to, and a file followed by another is complete.  A pcap file is
read up to its last whole record (a pcapng file up to its last whole block;
the section's byte order and interfaces read so far go on with the saved
state), a tap file up to its last whole record
batch (a torn one at the end of a file still being written is read, whole,
by a later read); a tap's Parquet file is read once it is closed.

Reading ``[start, end)`` goes on from where the read that ended at
``start`` stopped: the walker's whole state (every open connection's
reassembly, detection, partial frame and waiting requests:
:meth:`~kafkaproto.capture.walker._scan.Walker.save`; for a tap's rows,
each connection's frame count and waiting requests:
:meth:`~kafkaproto.capture.formats.tapfiles.TableFrames.save`), the decoder's (the
topic ids Metadata responses named, the waits long polls asked for) and
the record the read stopped at are saved in ``state_location`` under a
key derived from the end offset, written atomically.  A read runs in a
process that keeps nothing: it loads the state saved for ``start``,
reads the records that end at or before ``end`` (a record still being
written waits for the next read), and saves the state for ``end``.  A
read done again (a task retried, a query restarted from its checkpoint)
finds the same state and gives the same rows, so a frame that spans two
reads or two files is read once, whole, and every row comes exactly once.
:meth:`commit` lets the states before an offset go.

The alternatives weighed: the state inside the offset (Spark writes
every offset to its checkpoint log and hands it to the driver; the state
holds partial frames and bytes waiting behind holes, up to the walker's
limits: megabytes, too large for a log line), or no state at all and each
read replaying from the oldest open connection's first byte (unbounded
for the long-lived connections Kafka clients keep).

Requests left waiting are unanswered rows when their connection closes;
``unanswered_after`` (nanoseconds of capture time) gives them up sooner:
a request waiting longer than that behind the newest packet read is an
unanswered row at once (its response, if it comes later, is unpaired).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import pyarrow as pa

from .._limits import DEFAULT_MAX_FRAME_SIZE
from .accounting import Accounting
from .dataset import CaptureDataset, CaptureProblem, Filters, record_columns_of
from .formats.pcap import PCAP_MAGICS, PCAPNG_MAGIC, CaptureFile
from .formats.ranges import file_order
from .formats.tapfiles import SUFFIXES, TableFrames, _foreign_schema, _whole_file_batches, is_table_file
from .frames import BATCH_BYTES, BATCH_ROWS, FrameBatch, take_batch
from .tables import CaptureDecoder
from .walker import snapshot
from .walker.streams import walker

__all__ = ["GrowingCapture", "Offset", "StreamStateError", "expire_waiting"]

_STATE = ".kpstate"
_REC = {"<": struct.Struct("<IIII"), ">": struct.Struct(">IIII")}
_MAX_RECORD = 256 * 1024 * 1024
_NO_TS = -(1 << 63)
#: a file read to its end, and no further (damage, or not a capture)
DONE = -1


class StreamStateError(snapshot.WalkerStateError):
    """The state a read needs is missing or damaged (the state folder was
    emptied, or belongs to another query)."""


@dataclass(frozen=True)
class Offset:
    """How far a capture is read: ``file`` (the one read last; ``""``: none
    yet) to ``pos`` bytes, ``total`` bytes since the stream started (orders
    offsets), ``passed`` the files the read that ends here finished, with
    their sizes; ``fresh``: a start with no state before it."""

    file: str = ""
    pos: int = 0
    total: int = 0
    passed: tuple[tuple[str, int], ...] = ()
    fresh: bool = False

    def to_dict(self) -> dict:
        return {"file": self.file, "pos": self.pos, "total": self.total,
                "passed": [[n, s] for n, s in self.passed], "fresh": self.fresh}

    @staticmethod
    def of(d: Mapping | Offset) -> Offset:
        if isinstance(d, Offset):
            return d
        try:
            return Offset(str(d.get("file", "")), int(d.get("pos", 0)), int(d.get("total", 0)),
                          tuple((str(n), int(s)) for n, s in d.get("passed", ())), bool(d.get("fresh", False)))
        except (TypeError, ValueError, AttributeError):
            raise ValueError(f"not an offset of a growing capture: {d!r}") from None


@dataclass
class _Stop:
    """Where a read stopped: the file and the position of the first record
    not read; the newest frame's time (for ``unanswered_after``)."""

    file: str
    pos: int
    newest: int | None = None
    #: a pcapng file's section read so far: its byte order and interfaces (linktype, ticks, offset)
    section: list | None = None
    problems: list = field(default_factory=list)


def _natural(name: str):
    return [(0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", name)]


class GrowingCapture:
    """One capture that grows (see the module's text): ``path`` a folder of
    rolled pcap/pcapng files, one such file, or a tap's folder (or one of its
    files); ``state_location`` a folder the
    readers and the planner share (None: the state is kept in this object,
    for reads in order in one process: a live view).  ``ports``, ``limits``: as
    :func:`~kafkaproto.capture.open_capture`; ``name``: the ``capture``
    column (default: the folder's or file's name); ``unanswered_after``:
    nanoseconds a request may wait before it is an unanswered row (None:
    until its connection closes)."""

    def __init__(self, path, state_location=None, *, ports: Iterable[int] | None = None, name: str | None = None,
                 unanswered_after: int | None = None, batch_rows: int = BATCH_ROWS,
                 batch_bytes: int = BATCH_BYTES, **limits: int) -> None:
        self.path = os.path.abspath(os.fspath(path))
        #: a folder of rolled files (one not made yet, unless named like a pcap file), or one file
        self.folder = os.path.isdir(self.path) or (not os.path.exists(self.path) and
                                                   not self.path.endswith((".pcap", ".cap", ".pcapng", *SUFFIXES)))
        #: each file's kind, by its first bytes: "pcap", "tap" (frame tables), "" (neither)
        self._sniffed: dict[str, str] = {}
        #: "pcap" or "tap" once a file says which (a folder holds one kind)
        self.kind: str | None = None
        self.state_location = None if state_location is None else os.path.abspath(os.fspath(state_location))
        self.ports = None if ports is None else sorted({int(p) for p in ports})
        self.name = name or os.path.basename(self.path.rstrip("/")) or self.path
        self.unanswered_after = unanswered_after
        self.batch_rows, self.batch_bytes = batch_rows, batch_bytes
        self.limits = dict(limits)
        self._dataset = CaptureDataset([], ports=self.ports, limits=self.limits)
        #: without a state location: the walker, decoder and stop of the last read, by its end's key
        self._kept: dict = {}

    def __repr__(self) -> str:
        return f"GrowingCapture({self.path!r})"

    # -- the files ---------------------------------------------------------------
    def _file(self, name: str) -> str:
        return os.path.join(self.path, name) if self.folder else self.path

    def _sniff(self, name: str, path: str) -> str:
        """A file's kind (cached once known): "pcap", "tap", "" (neither, or
        a whole-file table not closed yet), None (too new to say)."""
        kind = self._sniffed.get(name)
        if kind is not None:
            return kind
        with open(path, "rb") as fh:
            head = fh.read(8)
        if len(head) < 4:
            return None  # too new to say
        if head[:4] in PCAP_MAGICS or head[:4] == PCAPNG_MAGIC:
            kind = "pcap"
        elif is_table_file(head) and (self.folder is False or os.path.splitext(name)[1] in SUFFIXES):
            if head[:4] == b"\xff\xff\xff\xff":
                kind = "tap"
            elif not _closed_table(path, head):
                return None  # Parquet or an Arrow IPC file: readable once closed
            else:
                kind = "tap"
        else:
            kind = ""
        if kind and self.kind is None:
            self.kind = kind
        elif kind and kind != self.kind:
            # (the same words whichever kind was met first: the files are sniffed once old enough)
            raise ValueError(f"{path}: pcap files and the tap frame tables in one folder; a growing capture is "
                             "one or the other")
        self._sniffed[name] = kind
        return kind

    def files(self) -> list[tuple[str, int]]:
        """``[(name, size)]`` of the capture's files now, in the order written
        (pcap/pcapng files, or the tap's frame tables; a file too new to hold its
        magic bytes waits, and so does a Parquet file until it is closed)."""
        if not self.folder:
            name = os.path.basename(self.path)
            try:
                kind = self._sniff(name, self.path)
                return [(name, os.path.getsize(self.path))] if kind else []
            except FileNotFoundError:
                return []
        try:
            entries = list(os.scandir(self.path))
        except FileNotFoundError:
            return []
        out = []
        for e in entries:
            if not e.is_file() or e.name.startswith("."):
                continue
            if self._sniff(e.name, e.path):
                out.append((e.name, e.stat().st_size))
        if self.kind == "tap":  # by name, as the batch source reads the tap's folder
            return sorted(out)
        order = {p: i for i, p in enumerate(file_order([n for n, _s in out]))}
        return sorted(out, key=lambda f: order[f[0]])

    # -- offsets (the driver) ----------------------------------------------------
    def initial(self, starting: str = "earliest") -> Offset:
        """The offset a new stream starts from: before the first byte
        (``earliest``), or after the last whole record written so far
        (``latest``: the connections open then are caught mid-stream)."""
        if starting == "earliest":
            return Offset(fresh=True)
        if starting != "latest":
            raise ValueError(f"startingPosition must be earliest or latest, not {starting!r}")
        files = self.files()
        if not files:
            return Offset(fresh=True)
        name, size = files[-1]
        path = self._file(name)
        pos = _last_message_end(path, size) if self.kind == "tap" else _last_record_end(path, size)
        return Offset(name, pos, 0, (), True)

    def latest(self, start: Mapping | Offset, max_bytes: int | None = None,
               upto: Mapping | Offset | None = None) -> Offset:
        """The offset as far as the files go now from ``start`` (``start``
        itself when nothing is new): at most ``max_bytes`` further, and not
        past ``upto``."""
        start = Offset.of(start)
        files = self.files()
        if upto is not None:
            files = _cut(files, Offset.of(upto))
        names = [n for n, _s in files]
        if start.file and start.file not in names:
            # a file gone (rotated away): those after it in order
            later = [f for f in files if _natural(f[0]) > _natural(start.file)]
            at, pos = -1, 0
            files = later
        else:
            at = names.index(start.file) if start.file else -1
            pos = start.pos
        budget = max_bytes if max_bytes is not None else 1 << 62
        cur, cur_pos = start.file, start.pos
        passed: list[tuple[str, int]] = []
        used = 0
        todo = files[at:] if at >= 0 else files
        for k, (name, size) in enumerate(todo):
            from_ = pos if (at >= 0 and k == 0) else 0
            last = k == len(todo) - 1
            avail = max(0, size - from_)
            if avail > budget:
                cur, cur_pos = name, from_ + budget
                used += budget
                break
            budget -= avail
            used += avail
            cur, cur_pos = name, max(size, from_)
            if not last:
                passed.append((name, size))
        if used == 0 and cur == start.file:
            return start
        return Offset(cur, cur_pos, start.total + used, tuple(passed))

    def commit(self, end: Mapping | Offset, tables: Sequence[str] = ("frames",),
               columns: Mapping[str, Sequence[str]] | None = None, filters=None) -> None:
        """The reads of ``tables`` (with ``columns`` and ``filters``, as
        :meth:`read` was asked) up to ``end`` are done: the states they saved
        before it go."""
        if self.state_location is None:
            return
        end = Offset.of(end)
        digest = self._digest(tables, columns, filters)
        try:
            entries = list(os.scandir(self.state_location))
        except FileNotFoundError:
            return
        for e in entries:
            m = re.match(rf"^{digest}-(\d{{20}})-[0-9a-f]{{16}}{re.escape(_STATE)}$", e.name)
            if m and int(m.group(1)) < end.total:
                try:
                    os.unlink(e.path)
                except FileNotFoundError:
                    pass

    # -- reading (an executor) ---------------------------------------------------
    def _key(self, off: Offset, digest: str) -> str:
        """The name of the state saved for offset ``off`` by reads of ``digest``."""
        text = json.dumps([off.file, off.pos, off.total, [list(p) for p in off.passed]])
        return f"{digest}-{off.total:020d}-{hashlib.sha1(text.encode()).hexdigest()[:16]}{_STATE}"

    def _digest(self, tables, columns, filters) -> str:
        """What the saved states depend on besides the bytes (two queries over
        one capture with other options keep their states apart)."""
        filt = Filters.of(filters)
        text = json.dumps([self.name, self.ports, sorted(self.limits.items()), list(tables),
                           {k: list(v) for k, v in sorted((columns or {}).items())},
                           [list(map(str, t)) for t in filt.terms], [str(e) for e in filt.exprs],
                           self.unanswered_after],
                          default=str)
        return hashlib.sha1(text.encode()).hexdigest()[:16]

    def read(self, start: Mapping | Offset, end: Mapping | Offset, tables: Sequence[str] = ("frames",),
             columns: Mapping[str, Sequence[str]] | None = None, filters=None, *,
             problems: list | None = None, topic_ids: bool = False) -> Iterator[tuple[str, pa.RecordBatch]]:
        """The rows of ``tables`` the bytes ``[start, end)`` give, as
        ``(table, batch)``, going on from the state saved for ``start``; the
        state for ``end`` is saved once the rows are all given.  Damage met
        is added to ``problems`` (:class:`~kafkaproto.capture.CaptureProblem`);
        ``topic_ids``: the ``topic_ids`` rows too (every topic id the
        Metadata responses read so far named, the ones of earlier reads too)."""
        start, end = Offset.of(start), Offset.of(end)
        digest = self._digest(tables, columns, filters)
        acc = Accounting()
        if self._kind_at(end) == "tap":
            walk = TableFrames(acc, batch_rows=self.batch_rows,
                               max_frame_size=self.limits.get("max_frame_size", DEFAULT_MAX_FRAME_SIZE))
        else:
            walk = walker(self.ports, acc, batch_rows=self.batch_rows, batch_bytes=self.batch_bytes, **self.limits)
        record_columns = record_columns_of(tables, columns)
        decoder = CaptureDecoder(self.name, acc, record_columns)
        stop = _Stop(start.file, start.pos)
        if start.fresh:
            pass
        elif self.state_location is None:  # kept in this process
            try:
                walk, decoder, stop = self._kept.pop(self._key(start, digest))
            except KeyError:
                raise StreamStateError("no state kept for this offset: a growing capture without a state "
                                       "location is read in order, in one process", "stream state", None) from None
            stop.problems = []
        else:
            meta, state = self._load(self._key(start, digest))
            walk.load(state)
            _decoder_load(decoder, meta["decoder"])
            stop = _Stop(*meta["resume"], meta.get("newest"), meta.get("section"))
        frames = self._frames(walk, stop, end)
        yield from self._dataset.table_rows(((self.name, fb) for fb in frames), tables, columns, filters,
                                            accounts={self.name: acc}, decoders={self.name: decoder},
                                            topic_ids=topic_ids)
        if problems is not None:
            problems += [CaptureProblem(self.name, m, f) for f, m in stop.problems]
        decoder.keep_connections(walk.open_uids() if isinstance(walk, TableFrames)
                                 else {p.conn.uid for p in walk.pairings()})
        if self.state_location is None:
            self._kept = {self._key(end, digest): (walk, decoder, stop)}
            return
        self._save(self._key(end, digest), {"resume": [stop.file, stop.pos], "newest": stop.newest,
                                           "section": stop.section, "decoder": _decoder_state(decoder)}, walk.save())

    def _kind_at(self, end: Offset) -> str | None:
        """The kind of the files a read up to ``end`` reads ("pcap", "tap")."""
        for name in [n for n, _s in end.passed] + [end.file]:
            if name:
                try:
                    kind = self._sniff(name, self._file(name))
                except FileNotFoundError:
                    continue
                if kind:
                    return kind
        return self.kind

    def _segments(self, stop: _Stop, end: Offset) -> list[tuple[str, int, int, bool]]:
        """``(file, from, to, complete)`` of the bytes to read."""
        sizes = dict(end.passed)
        out = []
        names = [n for n, _s in end.passed]
        if end.file and end.file not in sizes:
            names.append(end.file)
        if stop.file and stop.file in names:
            names = names[names.index(stop.file):]
        elif stop.file:
            names = [n for n in names if _natural(n) > _natural(stop.file)]
        for name in names:
            frm = stop.pos if name == stop.file else 0
            if frm == DONE:
                continue
            to = sizes[name] if name in sizes else end.pos
            out.append((name, frm, to, name in sizes))
        return out

    def _frames(self, walk, stop: _Stop, end: Offset) -> Iterator[FrameBatch]:
        if isinstance(walk, TableFrames):
            yield from self._table_frames(walk, stop, end)
            return
        for name, frm, to, complete in self._segments(stop, end):
            if name != stop.file:
                stop.section = None
            stop.file, stop.pos = name, frm
            if to <= frm or to < 24:
                continue
            path = self._file(name)
            with open(path, "rb") as fh:
                head = fh.read(24)
                fh.seek(frm)
                read = self._pcapng if head[:4] == PCAPNG_MAGIC else self._pcap
                yield from read(walk, stop, path, head, _Slice(fh, to - frm), frm, to, complete)
            walk.flush()
        yield from self._last_batch(walk, stop)

    def _pcap(self, walk, stop: _Stop, path: str, head: bytes, src, frm: int, to: int, complete: bool
              ) -> Iterator[FrameBatch]:
        """The records of a pcap file from ``frm`` that end at or before
        ``to`` (``src``: those bytes), read by the walker itself; a record
        cut by ``to`` waits for the next read."""
        fmt = PCAP_MAGICS.get(head[:4])
        if len(head) < 24 or fmt is None:
            stop.problems.append((path, "not a pcap file"))
            stop.pos = DONE
            return
        order, ticks = fmt
        linktype = struct.unpack(order + "I", head[20:24])[0] & 0xFFFF
        if frm < 24:
            src.read(24 - frm)
            frm = 24
        walk.read_pcap(src, order == ">", ticks, linktype)
        while walk.run():
            yield self._expire(walk, take_batch(walk.sink), stop)
        error, unread = walk.error, walk.unread_bytes
        walk.error, walk.unread_bytes = None, 0
        _read_to(stop, path, error, to - unread, to, complete)

    def _pcapng(self, walk, stop: _Stop, path: str, _head: bytes, src, frm: int, to: int, complete: bool
                ) -> Iterator[FrameBatch]:
        """The blocks of a pcapng file from ``frm`` (where ``stop.section``,
        the section's byte order and interfaces read so far, holds) that end
        at or before ``to``; a block cut by ``to`` waits for the next read."""
        cap = CaptureFile(src, base=frm, read_rest=False)
        if stop.section is not None:
            cap.order, cap.interfaces = stop.section[0], [tuple(i) for i in stop.section[1]]
        sink = walk.sink
        for ts, linktype, data, _orig in cap._pcapng(b""):
            walk.packet(ts, linktype, data)
            if sink.full():
                walk.flush()
                yield self._expire(walk, take_batch(sink), stop)
        stop.section = [cap.order, [list(i) for i in cap.interfaces]]
        _read_to(stop, path, cap.error, cap.at, to, complete)

    def _last_batch(self, walk, stop: _Stop) -> Iterator[FrameBatch]:
        # the frames of every file read go on filling one batch, as in the batch source: a decoder's batch
        # costs the same whatever its size, so the micro-batch ends one batch, not one per file
        sink = walk.sink
        if sink.size or sink.unanswered or self.unanswered_after is not None:
            fb = self._expire(walk, take_batch(sink), stop)
            if len(fb) or fb.unanswered:
                yield fb

    def _table_frames(self, rows: TableFrames, stop: _Stop, end: Offset) -> Iterator[FrameBatch]:
        """:meth:`_frames` of the tap's frame tables: each file's record
        batches that end at or before ``end`` (a torn last one waits)."""
        for name, frm, to, complete in self._segments(stop, end):
            stop.file, stop.pos = name, frm
            if to <= frm:
                continue
            for batch in _table_batches(self._file(name), stop, to, complete):
                for fb in rows.add(batch):
                    yield self._expire(rows, fb, stop)
        rows.sink.flush()
        yield from self._last_batch(rows, stop)

    def _expire(self, walk, fb: FrameBatch, stop: _Stop) -> FrameBatch:
        """Requests waiting longer than ``unanswered_after`` behind the newest
        frame's time become unanswered rows of ``fb``."""
        if self.unanswered_after is not None:
            stop.newest = expire_waiting(fb, walk.pairings(), walk.sink, self.unanswered_after, stop.newest)
        return fb

    # -- states ------------------------------------------------------------------
    def _save(self, key: str, meta: dict, state: bytes) -> None:
        if self.state_location is None:
            raise ValueError("a growing capture read in pieces needs a state location")
        os.makedirs(self.state_location, exist_ok=True)
        path = os.path.join(self.state_location, key)
        tmp = f"{path}.{os.getpid()}.tmp"
        head = json.dumps(meta, separators=(",", ":")).encode()
        with open(tmp, "wb") as fh:
            fh.write(struct.pack(">I", len(head)) + head + state)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)

    def _load(self, key: str) -> tuple[dict, bytes]:
        if self.state_location is None:
            raise ValueError("a growing capture read in pieces needs a state location")
        path = os.path.join(self.state_location, key)
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            raise StreamStateError(f"no state saved for this offset ({path}): the state location was emptied "
                                   "or belongs to another query", "stream state", None) from None
        try:
            (n,) = struct.unpack_from(">I", data)
            meta = json.loads(data[4:4 + n])
            return meta, data[4 + n:]
        except (struct.error, ValueError):
            raise StreamStateError(f"damaged state {path}", "stream state", 0) from None


class _Slice:
    """``n`` bytes of a file from where it stands, as a file the walker reads."""

    def __init__(self, fh, n: int) -> None:
        self.fh, self.left = fh, n

    def readinto(self, mv) -> int:
        if self.left <= 0:
            return 0
        mv = memoryview(mv)
        if len(mv) > self.left:
            mv = mv[:self.left]
        got = self.fh.readinto(mv) or 0
        self.left -= got
        return got

    def read(self, n: int = -1) -> bytes:
        if self.left <= 0:
            return b""
        n = self.left if n is None or n < 0 else min(n, self.left)
        data = self.fh.read(n)
        self.left -= len(data)
        return data


def expire_waiting(fb: FrameBatch, pairings: Iterable, sink, after: int, newest: int | None) -> int | None:
    """Requests of ``pairings`` waiting longer than ``after`` nanoseconds
    behind the newest frame's time (``newest``, the time known before
    ``fb``, None: none yet) become unanswered rows of ``fb`` (counted in
    ``sink.acc``); the newest time after ``fb``."""
    ts = fb.rows["ts"]
    ts = ts[ts != _NO_TS]
    if len(ts):
        newest = max(newest if newest is not None else int(ts[0]), int(ts.max()))
    if newest is None:
        return None
    cutoff = newest - after
    dropped = 0
    for p in pairings:
        if not p.waiting:
            continue
        waiting = p.waiting_list()
        k = 0
        while k < len(waiting) and waiting[k][3] is not None and waiting[k][3] < cutoff:
            k += 1
        for corr, key, version, t, seq, client in waiting[:k]:
            p.drop_oldest()
            fb.unanswered.append((p.conn, corr, key, version, t, seq, client))
        dropped += k
    sink.acc.unanswered_requests += dropped
    return newest


def _read_to(stop: _Stop, path: str, error: str | None, at: int, to: int, complete: bool) -> None:
    """Where a file's read stopped: ``to``, or ``at`` (the start of what a
    cut left) when it ended in error; a cut record waits for more bytes, but
    damage (a cut in a file another follows is damage too) is a problem and
    the file is read as far as it goes."""
    stop.pos = at if error else to
    if error and ("cut short" not in error or complete):
        stop.problems.append((path, error))
        stop.pos = to if complete else DONE


def _closed_table(path: str, head: bytes) -> bool:
    """A Parquet or Arrow IPC file (not a stream) that its writer closed: it ends with its magic bytes."""
    tail = b"PAR1" if head[:4] == b"PAR1" else b"ARROW1"
    with open(path, "rb") as fh:
        fh.seek(0, os.SEEK_END)
        if fh.tell() < 2 * len(tail):
            return False
        fh.seek(-len(tail), os.SEEK_END)
        return fh.read(len(tail)) == tail


def _table_batches(path: str, stop: _Stop, to: int, complete: bool) -> Iterator[pa.RecordBatch]:
    """The record batches of a tap file from ``stop.pos`` that end at or
    before byte ``to``, ``stop.pos`` following them.  A torn batch at the
    end of a file still being written waits for the next read; in a file
    another follows (``complete``) it is damage, named in ``stop.problems``
    with whatever else cannot be read, and the file is done."""
    import pyarrow.ipc as ipc

    def damaged(why: str) -> None:
        stop.problems.append((path, why))
        stop.pos = DONE

    with open(path, "rb") as fh:
        head = fh.read(8)
    if head[:4] != b"\xff\xff\xff\xff":  # Parquet, an Arrow IPC file: listed once closed, read whole
        if stop.pos == 0 and to >= os.path.getsize(path):
            acc = Accounting()
            yield from _whole_file_batches(pa, path, head, to, acc)
            stop.problems += [(path, e) for e in acc.errors]
            stop.pos = to
        return
    with pa.memory_map(path) as mm:
        data = mm.read_at(to, 0)
    src = pa.BufferReader(data)
    try:
        schema = ipc.read_schema(ipc.MessageReader.open_stream(src).read_next_message())
    except StopIteration:
        return damaged("an Arrow stream with no schema") if complete else None
    except (OSError, pa.ArrowInvalid) as exc:
        return damaged(f"cut or damaged inside its schema header ({exc})") if complete else None
    why = _foreign_schema(schema)
    if why:
        return damaged(why)
    at = max(stop.pos, src.tell())
    src.seek(at)
    reader = ipc.MessageReader.open_stream(src)  # reads no further than each message it gives
    while at < to:
        try:
            message = reader.read_next_message()
        except StopIteration:  # the end-of-stream marker: the file was closed
            at = src.tell()
            if at < to:
                return damaged(f"{to - at} bytes after the end of the stream")
            break
        except (OSError, pa.ArrowInvalid) as exc:
            # torn: the writer is inside this batch (or was killed there)
            if complete:
                damaged(f"cut or damaged inside a batch at byte {at} ({exc})")
            return
        try:
            if message.type != "record batch":
                raise ValueError(f"a {message.type} message")
            batch = ipc.read_record_batch(message, schema)
        except (OSError, ValueError) as exc:  # ArrowInvalid is a ValueError
            return damaged(f"damaged batch at byte {at} ({exc})")
        at = stop.pos = src.tell()
        yield batch
    stop.pos = at


def _cut(files: list[tuple[str, int]], upto: Offset) -> list[tuple[str, int]]:
    """The files as they were at ``upto`` (a target no read goes past)."""
    out = []
    sizes = dict(upto.passed)
    for name, size in files:
        if upto.file and _natural(name) > _natural(upto.file):
            break
        if name == upto.file:
            out.append((name, min(size, upto.pos)))
            break
        out.append((name, min(size, sizes.get(name, size))))
    return out if upto.file else []


def _last_message_end(path: str, size: int) -> int:
    """Where the last whole record batch of a tap file being written ends."""
    stop = _Stop("", 0)
    for _b in _table_batches(path, stop, size, False):
        pass
    return max(stop.pos, 0)


def _last_record_end(path: str, size: int) -> int:
    """Where the last whole record (block) of a pcap (pcapng) file being written ends."""
    with open(path, "rb") as fh:
        head = fh.read(24)
        if head[:4] == PCAPNG_MAGIC:
            fh.seek(0)
            cap = CaptureFile(_Slice(fh, size), read_rest=False)
            for _packet in cap._pcapng(b""):
                pass
            return cap.at
        fmt = PCAP_MAGICS.get(head[:4])
        if len(head) < 24 or fmt is None:
            return 0
        rec = _REC[fmt[0]]
        pos = 24
        while pos + 16 <= size:
            fh.seek(pos)
            rh = fh.read(16)
            if len(rh) < 16:
                break
            incl = rec.unpack(rh)[2]
            if incl > _MAX_RECORD or pos + 16 + incl > size:
                break
            pos += 16 + incl
        return pos


def _decoder_state(dec: CaptureDecoder) -> dict:
    """What a decoder keeps across batches."""
    return {"topic_ids": [[k.hex(), v] for k, v in dec.topic_ids.items()],
            "conn_ids": [[u, [[t.hex(), s, n] for t, (s, n) in ids.items()]] for u, ids in dec.conn_ids.items()],
            "waits": [[k, v] for k, v in dec.waits.items()]}


def _decoder_load(dec: CaptureDecoder, st: dict) -> None:
    dec.topic_ids = {bytes.fromhex(k): v for k, v in st["topic_ids"]}
    dec.conn_ids = {u: {bytes.fromhex(t): (s, n) for t, s, n in ids} for u, ids in st["conn_ids"]}
    dec.waits = {k: v for k, v in st["waits"]}
