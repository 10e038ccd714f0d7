"""``kafkaproto dump-log``: what Kafka's ``kafka-dump-log.sh`` (``DumpLogSegments``)
prints, line for line, for every kind of file a partition folder holds.

Text is made by the compiled walker (:mod:`kafkaproto.log._text`) over the
segment's bytes (memory-mapped), a window at a time, and written in one
write per window; the text path imports neither numpy nor pyarrow (a URI
brings in pyarrow's filesystems, ``--format json`` and ``parquet`` the Arrow
reader).  ``--format json`` writes one JSON object per batch (its records in
it with ``--deep-iteration``) and per index entry; ``--format parquet`` the
records table (or, ``--batches``, the batches table) of the files given.

Files: ``.log`` segments and KRaft ``.checkpoint`` snapshots (batches too),
``.index``, ``.timeindex``, ``.txnindex`` and producer ``.snapshot`` files,
or a partition folder (its segments in order).  Damage is printed where it
is met (``Damage: <file> at byte <n>: ...``) and, for a segment whose end is
not whole, as Kafka says it (``Found <n> invalid bytes at the end of
<name>``); the walk goes on at the next readable batch, and the status is 1.
"""

from __future__ import annotations

import base64
import json
import mmap
import os
import re
import struct
import sys

from .._impl import load
from ._segwalk import DEFAULT_WINDOW, LogProblem, SegmentWalk

# the batches' text, compiled or its twin
_TEXT = load("log._text")

__all__ = ["DECODERS", "DumpOptions", "dump", "dump_parquet"]

_CHECKPOINT = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
_SEGMENT_NAME = re.compile(r"^(\d+)\.")
_ENCODINGS = ("utf8", "hex", "base64")
#: the decoders of Kafka's tool (``--offsets-decoder`` ...): what the records of an internal topic hold
DECODERS = ("offsets", "transaction-log", "cluster-metadata", "share-group-state", "remote-log-metadata")
_I32_MAX = 2**31 - 1

# the walker's flags (log._text's T_*)
_DEEP, _DATA, _SKIP_META, _CHECK_CRC, _DECODE = 1, 2, 4, 8, 16


class DumpOptions:
    """What :func:`dump` prints; the keywords are Kafka's tool's options (and a few of ours)."""

    def __init__(self, *, print_data_log=False, deep_iteration=False, skip_record_metadata=False, max_bytes=None,
                 key_encoding="utf8", value_encoding="utf8", fmt="text", window=DEFAULT_WINDOW, check_crc=True,
                 verify_index=True, verify_index_only=False, index_sanity_check=False,
                 max_message_size=5 * 1024 * 1024, decoder=None):
        if fmt not in ("text", "json"):
            raise ValueError(f"format must be text or json, not {fmt!r}")
        for enc in (key_encoding, value_encoding):
            if enc not in _ENCODINGS:
                raise ValueError(f"encoding must be one of {', '.join(_ENCODINGS)}, not {enc!r}")
        if decoder is not None and decoder not in DECODERS:
            raise ValueError(f"decoder must be one of {', '.join(DECODERS)}, not {decoder!r}")
        # as Kafka's tool: a decoder prints the data; printing the data means walking the records
        self.print_data_log = print_data_log or decoder is not None
        self.deep = deep_iteration or self.print_data_log
        self.skip_record_metadata = skip_record_metadata
        self.max_bytes = max_bytes
        self.key_encoding, self.value_encoding = key_encoding, value_encoding
        self.fmt, self.window, self.check_crc, self.verify_index = fmt, window, check_crc, verify_index
        self.verify_index_only, self.index_sanity_check = verify_index_only, index_sanity_check
        self.max_message_size = max_message_size
        self.decoder = decoder


# ---------------------------------------------------------------------------
# files: local paths (os, mmap), or URIs through pyarrow's filesystems


class _Local:
    """A local file system with the few calls the dump makes of a pyarrow one."""

    local = True

    @staticmethod
    def size(path: str) -> int | None:
        try:
            st = os.stat(path)
        except OSError:
            return None
        return st.st_size if not os.path.isdir(path) else None

    @staticmethod
    def listdir(path: str):
        return sorted(os.path.join(path, n) for n in os.listdir(path) if os.path.isfile(os.path.join(path, n)))

    @staticmethod
    def isdir(path: str) -> bool:
        return os.path.isdir(path)

    @staticmethod
    def read_all(path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    @staticmethod
    def reader(path: str, size: int):
        """(read(pos, n), close, whole): a memory map of the file (the page cache, not a copy)."""
        if size == 0:
            return (lambda pos, n: b""), (lambda: None), True
        f = open(path, "rb")
        try:
            m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        finally:
            f.close()
        if hasattr(m, "madvise"):
            m.madvise(mmap.MADV_SEQUENTIAL)
        view = memoryview(m)

        def close():
            try:
                view.release()
                m.close()
            except BufferError:  # a window still held: the map goes with the last of them
                pass

        return (lambda pos, n: view[pos:pos + n]), close, True

    def absolute(self, path: str) -> str:
        return os.path.abspath(path)


class _Remote:
    """A path in a pyarrow filesystem (a URI: s3://..., gs://..., hdfs://...)."""

    local = False

    def __init__(self, fs):
        import pyarrow.fs as pafs

        self.fs, self._pafs = fs, pafs

    def size(self, path: str) -> int | None:
        info = self.fs.get_file_info(path)
        return info.size if info.type == self._pafs.FileType.File else None

    def listdir(self, path: str):
        sel = self._pafs.FileSelector(path)
        return sorted(i.path for i in self.fs.get_file_info(sel) if i.type == self._pafs.FileType.File)

    def isdir(self, path: str) -> bool:
        return self.fs.get_file_info(path).type == self._pafs.FileType.Directory

    def read_all(self, path: str) -> bytes:
        with self.fs.open_input_file(path) as f:
            return f.read_buffer(f.size()).to_pybytes()

    def reader(self, path: str, size: int):
        f = self.fs.open_input_file(path)
        return (lambda pos, n: f.read_at(max(0, min(n, size - pos)), pos)), f.close, False

    def absolute(self, path: str) -> str:
        return path


def _place(where, filesystem):
    """(files, path) for one argument: a local path, a URI, or a path in ``filesystem``."""
    where = os.fspath(where)
    if filesystem is not None:
        return _Remote(filesystem), where
    if "://" in where:
        import pyarrow.fs as pafs

        fs, path = pafs.FileSystem.from_uri(where)
        return _Remote(fs), path
    return _Local(), where


def _files(where, filesystem):
    """(files, path, shown) of each file an argument names (a folder: its segment files in order)."""
    files, path = _place(where, filesystem)
    if files.isdir(path):
        names = [p for p in files.listdir(path)
                 if p.endswith(".log") or _CHECKPOINT.match(os.path.basename(p))]
        shown = os.fspath(where).rstrip("/")
        return [(files, p, shown + "/" + os.path.basename(p)) for p in names]
    if files.size(path) is None:
        raise FileNotFoundError(f"no such file: {where}")
    return [(files, path, os.fspath(where))]


def _base_offset(name: str) -> int:
    """A file's offset from its name (what Kafka's tool parses; 0 for a name that holds none)."""
    m = _CHECKPOINT.match(name) or _SEGMENT_NAME.match(name)
    if m is None:
        return 0
    value = int(m.group(1))
    if value >= 2**63:
        raise _NameError(f"{name}: a base offset out of the range of offsets (above {2**63 - 1})")
    return value


class _NameError(ValueError):
    """A file whose name holds no offset Kafka could have written."""


def _sibling(path: str, suffix: str) -> str:
    return path[:path.rindex(".")] + suffix


# ---------------------------------------------------------------------------
# Java's HashMap order: the order Kafka's tool prints its per-file reports in


def _java_hash(s: str) -> int:
    """Java's String.hashCode (over UTF-16 code units), as an unsigned 32-bit number."""
    units = s.encode("utf-16-be")
    h = 0
    for k in range(0, len(units), 2):
        h = (31 * h + (units[k] << 8 | units[k + 1])) & 0xFFFFFFFF
    return h


def java_hash_order(keys) -> list:
    """``keys`` (strings, in the order Kafka's tool added them with ``computeIfAbsent``) in the order a
    java.util.HashMap iterates them: its table (16 buckets, doubled once it holds more than three
    quarters before an insert), each key at the head of its bucket, a resize keeping each bucket's order."""
    table: list[list] = [[] for _ in range(16)]
    size = 0
    for k in dict.fromkeys(keys):
        if size > len(table) * 3 // 4:
            bigger: list[list] = [[] for _ in range(2 * len(table))]
            for bucket in table:
                for key, h in bucket:
                    bigger[h & (len(bigger) - 1)].append((key, h))
            table = bigger
        h = _java_hash(k)
        h ^= h >> 16
        table[h & (len(table) - 1)].insert(0, (k, h))
        size += 1
    return [key for bucket in table for key, _ in bucket]


class _Reports:
    """What Kafka's tool prints on standard error after every file: per-file maps, printed in
    Java's HashMap order."""

    def __init__(self):
        self.index_mismatches: dict = {}     # file -> {index offset: log offset}, printed in descending order
        self.time_mismatches: dict = {}      # file -> [(index timestamp, log timestamp)]
        self.time_out_of_order: dict = {}    # file -> [(index timestamp, previous)]
        self.time_not_found: dict = {}       # file -> [(index offset, log offset)]
        self.gaps: dict = {}                 # file -> {offset: offset after}

    def write(self, err) -> None:
        lines = []
        for f in java_hash_order(self.index_mismatches):
            lines.append(f"Mismatches in :{f}")
            lines += [f"  Index offset: {a}, log offset: {b}"
                      for a, b in sorted(self.index_mismatches[f].items(), reverse=True)]
        for f in java_hash_order(self.time_mismatches):
            lines.append(f"Found timestamp mismatch in :{f}")
            lines += [f"  Index timestamp: {a}, log timestamp: {b}" for a, b in self.time_mismatches[f]]
        for f in java_hash_order(self.time_out_of_order):
            lines.append(f"Found out of order timestamp in :{f}")
            lines += [f"  Index timestamp: {a}, Previously indexed timestamp: {b}"
                      for a, b in self.time_out_of_order[f]]
        for f in java_hash_order(self.time_not_found):
            lines.append(f"The following indexed offsets are not found in :{f}")
            lines += [f"Indexed offset: {a}, found log offset: {b}" for a, b in self.time_not_found[f]]
        for f in java_hash_order(self.gaps):
            lines.append(f"Non-consecutive offsets in {f}")
            lines += [f"  {a} is followed by {b}" for a, b in sorted(self.gaps[f].items())]
        if lines:
            err.write("\n".join(lines) + "\n")


# ---------------------------------------------------------------------------
# writing


def _write(out, data: bytes) -> None:
    if data:
        _writer(out)(data)


def _line(out, text: str) -> None:
    _write(out, (text + "\n").encode("utf-8"))


def _plain(v, how):
    if v is None:
        return None
    if how == "utf8":
        return _TEXT.java_string(v).decode("utf-8")
    return v.hex() if how == "hex" else base64.b64encode(v).decode("ascii")


# ---------------------------------------------------------------------------
# segments


def _hook(opts: DumpOptions):
    """What the walker asks Python for: KRaft control records as JSON, and keys and values through a
    decoder or another encoding."""
    from . import _decoders

    decode = _decoders.value_parser(opts.decoder) if opts.decoder else None

    def encoded(v, how):
        if v is None:
            return None
        if how == "utf8":
            return _TEXT.java_string(v)
        return (v.hex() if how == "hex" else base64.b64encode(v).decode("ascii")).encode("ascii")

    def hook(kind, offset, key, value):
        if kind >= 0:
            return _decoders.control_text(kind, key, value).encode("utf-8")
        if decode is not None:
            k, v = decode(offset, key, value)
            return (None if k is None else k.encode("utf-8"), None if v is None else v.encode("utf-8"))
        return encoded(key, opts.key_encoding), encoded(value, opts.value_encoding)

    return hook


def _flags(opts: DumpOptions) -> int:
    flags = 0
    if opts.deep:
        flags |= _DEEP
    if opts.print_data_log:
        flags |= _DATA
    if opts.skip_record_metadata:
        flags |= _SKIP_META
    if opts.check_crc:
        flags |= _CHECK_CRC
    if opts.decoder is not None or opts.key_encoding != "utf8" or opts.value_encoding != "utf8":
        flags |= _DECODE
    return flags


def _dump_log(files, path: str, shown: str, opts: DumpOptions, out, reports: _Reports) -> int:
    name = os.path.basename(path)
    size = files.size(path)
    base = _base_offset(name)
    if opts.fmt == "json":
        return _dump_log_json(files, path, shown, opts, out)
    m = _CHECKPOINT.match(name)
    if name == "bootstrap.checkpoint":
        _line(out, "KRaft bootstrap snapshot")
    elif m:
        _line(out, f"Snapshot end offset: {int(m.group(1))}, epoch: {int(m.group(2))}")
    elif name.endswith(".log"):
        _line(out, f"Log starting offset: {base}")
    limited = opts.max_bytes is not None and opts.max_bytes < size
    if limited:
        size = max(opts.max_bytes, 0)
    walker = _TEXT.TextWalk(_flags(opts), _hook(opts))
    read, close, whole = files.reader(path, files.size(path))
    write = _writer(out)
    status = 0

    def walk(buf, base_, start, stop, emit_from):
        return walker.walk(buf, base_, start, stop, write)

    try:
        # the text is made a MiB of the segment at a time: its buffer stays in the processor's caches
        scan = SegmentWalk(path, size, read, walk, base_offset=base, window=min(opts.window, _TEXT_WINDOW),
                           whole_file=whole, tail_quiet=limited)
        for item in scan:
            if isinstance(item, LogProblem):
                status = 1
                write(_problem_text(item, size, name).encode("utf-8"))
    finally:
        close()
    if opts.deep and walker.gaps:
        reports.gaps.setdefault(files.absolute(path), {}).update(walker.gaps)
    return status


_TEXT_WINDOW = 1 << 20


def _writer(out):
    """A function writing bytes to ``out``: its binary buffer (flushed of the text before), or the
    text stream itself."""
    if hasattr(out, "buffer"):
        out.flush()
        return out.buffer.write
    return lambda data: out.write(bytes(data).decode("utf-8"))


def _problem_text(p: LogProblem, size: int, name: str) -> str:
    text = f"Damage: {p}\n"
    if p.end is None and p.kind in ("cut", "unreadable") and p.position is not None:
        text += f"Found {size - p.position} invalid bytes at the end of {name}\n"
    return text


# ---------------------------------------------------------------------------
# index files, snapshots


class _Emit:
    """One entry of an index or snapshot file: Kafka's text line, or a JSON object."""

    def __init__(self, out, shown: str, fmt: str):
        self.out, self.shown, self.json = out, shown, fmt == "json"

    def __call__(self, text: str, **fields) -> None:
        if self.json:
            _line(self.out, json.dumps({"file": self.shown, **fields}, separators=(",", ":")))
        else:
            _line(self.out, text)


class _Entries:
    """Fixed-size index entries (Kafka reads them all: a preallocated file's zeros too)."""

    def __init__(self, data: bytes, width: int, fmt: str):
        self.data, self.width, self.fmt = data, width, struct.Struct(fmt)
        self.count = len(data) // width

    def __getitem__(self, i):
        return self.fmt.unpack_from(self.data, i * self.width)


def _batch_at(read, size: int, pos: int, limit: int):
    """The batch whose header is at ``pos`` of a log, within ``limit`` bytes (Kafka's
    ``slice(pos, limit).batches()``): (base offset, last offset, magic) or None when no whole batch
    starts there."""
    end = min(size, pos + limit) if limit >= 0 else size
    if pos < 0 or pos + 17 > end:
        return None
    head = bytes(read(pos, min(61, end - pos)))
    if len(head) < 17:
        return None
    base, bsize, _ple, magic = struct.unpack_from(">qiib", head, 0)
    if bsize < 14 or pos + 12 + bsize > end:
        return None
    if magic >= 2:
        if len(head) < 27:
            return None
        return base, base + struct.unpack_from(">i", head, 23)[0], magic
    return base, base, magic   # a legacy message's offset is its last


def _dump_index(files, path: str, emit: _Emit, opts: DumpOptions, reports: _Reports) -> int:
    name = os.path.basename(path)
    base = _base_offset(name)
    idx = _Entries(files.read_all(path), 8, ">ii")
    if idx.count == 0:
        if not emit.json:
            emit(f"{emit.shown} is empty.")
        return 0
    if opts.index_sanity_check:
        last = base + idx[idx.count - 1][0]
        size = files.size(path)
        if last < base:
            raise _IndexError(f"Corrupt index found, index file {files.absolute(path)} has non-zero size but the "
                              f"last offset is {last} which is less than the base offset {base}")
        if size % 8:
            raise _IndexError(f"Index file {files.absolute(path)} is corrupt, found {size} bytes which is neither "
                              "positive nor a multiple of 8")
        _line(emit.out, f"{emit.shown} passed sanity check.")
        return 0
    log_size, (read, close, _whole) = _segment_of(files, path, name)
    status = 0
    try:
        for i in range(idx.count):
            rel, pos = idx[i]
            off = base + rel
            if off == base and i > 0:
                break  # a preallocated file's zeros: Kafka's tool stops at the first
            found = _batch_at(read, log_size, pos, opts.max_message_size)
            if found is None:
                raise _IndexError(f"no whole batch of at most {opts.max_message_size} bytes (--max-message-size) "
                                  f"at byte {pos} of {os.path.basename(_sibling(path, '.log'))}, where entry {i} "
                                  f"of {name} sends offset {off}")
            if found[1] != off:
                reports.index_mismatches.setdefault(files.absolute(path), {})[off] = found[1]
                status = 1
            if not opts.verify_index_only:
                emit(f"offset: {off} position: {pos}", offset=off, position=pos,
                     **({} if found[1] == off else {"logOffset": found[1]}))
    finally:
        close()
    return status


def _segment_of(files, path: str, name: str):
    """An index file's segment: (its size, its reader)."""
    log_path = _sibling(path, ".log")
    log_size = files.size(log_path)
    if log_size is None:
        raise FileNotFoundError(f"{log_path} (the segment of {name}) not found")
    return log_size, files.reader(log_path, log_size)


class _IndexError(Exception):
    """An index file that Kafka's tool would stop at (its message)."""


def _dump_timeindex(files, path: str, emit: _Emit, opts: DumpOptions, reports: _Reports) -> int:
    name = os.path.basename(path)
    base = _base_offset(name)
    tidx = _Entries(files.read_all(path), 12, ">qi")
    if opts.index_sanity_check:
        size = files.size(path)
        if tidx.count:
            last_ts, last_rel = tidx[tidx.count - 1]
            first_ts = tidx[0][0]
            where = files.absolute(path)
            if last_ts < first_ts:
                raise _IndexError(f"Corrupt time index found, time index file ({where}) has non-zero size but the "
                                  f"last timestamp is {last_ts} which is less than the first timestamp {first_ts}")
            if base + last_rel < base:
                raise _IndexError(f"Corrupt time index found, time index file ({where}) has non-zero size but the "
                                  f"last offset is {base + last_rel} which is less than the first offset {base}")
        if size % 12:
            raise _IndexError(f"Time index file {files.absolute(path)} is corrupt, found {size} bytes which is "
                              "neither positive nor a multiple of 12")
        _line(emit.out, f"{emit.shown} passed sanity check.")
        return 0
    log_size, (read, close, whole) = _segment_of(files, path, name)
    index_path = _sibling(path, ".index")
    oidx = _Entries(files.read_all(index_path), 8, ">ii") if files.size(index_path) is not None else None
    where = files.absolute(path)
    status = 0
    prev = -1
    walker = _TEXT.TextWalk(_CHECK_CRC)
    try:
        for i in range(tidx.count):
            ts, rel = tidx[i]
            off = base + rel
            if off == base and i > 0:
                break
            # the batch holding the offset: from the offset index's entry at or below it, the first whose last
            # offset reaches it (Kafka's tool reads every batch header from there on)
            pos = _index_lookup(oidx, base, off)
            found = None
            while pos < log_size:
                head = _batch_at(read, log_size, pos, -1)
                if head is None:
                    break
                if head[1] >= off:
                    found = (pos, head)
                    break
                pos += 12 + struct.unpack_from(">i", bytes(read(pos + 8, 4)))[0]
            if found is None:
                reports.time_not_found.setdefault(where, []).append((off, -1))
                status = 1
            elif found[1][1] != off:
                reports.time_not_found.setdefault(where, []).append((off, found[1][1]))
                status = 1
            else:
                at = found[0]
                buf = read(0, log_size) if whole else read(at, log_size - at)
                step = walker.walk(buf, 0 if whole else at, at, at + 1)
                max_ts = step[10] if step[4] else -1
                if max_ts != ts:
                    reports.time_mismatches.setdefault(where, []).append((ts, max_ts))
                    status = 1
                if prev >= ts:
                    reports.time_out_of_order.setdefault(where, []).append((ts, prev))
                    status = 1
            if not opts.verify_index_only:
                emit(f"timestamp: {ts} offset: {off}", timestamp=ts, offset=off)
            prev = ts
    finally:
        close()
    return status


def _index_lookup(idx, base: int, offset: int) -> int:
    """Kafka's OffsetIndex.lookup: the position of the last entry whose offset is at most ``offset`` (a
    binary search over the entries before the preallocated zeros), or 0."""
    if idx is None or idx.count == 0:
        return 0
    n = idx.count
    if n > 1 and idx[n - 1] == (0, 0):
        lo, hi = 1, n - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if idx[mid][0] == 0:
                hi = mid
            else:
                lo = mid + 1
        n = lo
    lo, hi = -1, n - 1  # Kafka's largestLowerBoundSlotFor
    if n == 0 or base + idx[0][0] > offset:
        return 0
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if base + idx[mid][0] <= offset:
            lo = mid
        else:
            hi = mid - 1
    return idx[lo][1]


def _dump_txnindex(files, path: str, emit: _Emit) -> int:
    data = files.read_all(path)
    n = len(data) // 34
    for k in range(n):
        _version, pid, first, last, lso = struct.unpack_from(">hqqqq", data, 34 * k)
        emit(f"version: 0 producerId: {pid} firstOffset: {first} lastOffset: {last} lastStableOffset: {lso}",
             version=0, producerId=pid, firstOffset=first, lastOffset=last, lastStableOffset=lso)
    left = len(data) - 34 * n
    if left:
        emit(f"Damage: {emit.shown}: {left} bytes after the last whole entry not read", damage="txnindex",
             error=f"{left} bytes after the last whole entry not read")
        return 1
    return 0


def _optional(v: int) -> str:
    return f"OptionalLong[{v}]" if v >= 0 else "OptionalLong.empty"


def _dump_snapshot(files, path: str, emit: _Emit, err) -> int:
    from ._index import SnapshotError, read_producer_snapshot

    try:
        entries = read_producer_snapshot(files.read_all(path))
    except SnapshotError as exc:
        err.write(f"{exc.kafka_text}\n")
        return 1
    for e in entries:
        line = (f"producerId: {e.producer_id} producerEpoch: {e.producer_epoch} coordinatorEpoch: "
                f"{e.coordinator_epoch} currentTxnFirstOffset: {_optional(e.current_txn_first_offset)} "
                f"lastTimestamp: {e.timestamp}")
        fields = {"producerId": e.producer_id, "producerEpoch": e.producer_epoch,
                  "coordinatorEpoch": e.coordinator_epoch,
                  "currentTxnFirstOffset": None if e.current_txn_first_offset < 0 else e.current_txn_first_offset,
                  "lastTimestamp": e.timestamp}
        if e.last_offset >= 0:
            # Kafka's decrementSequence: below zero it wraps from int32's top
            d, last_seq = e.offset_delta, e.last_sequence
            first = last_seq - d if last_seq >= d else _I32_MAX - (d - last_seq) + 1
            line += (f" firstSequence: {first} lastSequence: {e.last_sequence} lastOffset: {e.last_offset} "
                     f"offsetDelta: {e.offset_delta} timestamp: {e.timestamp}")
            fields.update(firstSequence=first, lastSequence=last_seq, lastOffset=e.last_offset, offsetDelta=d,
                          timestamp=e.timestamp)
        emit(line, **fields)
    return 0


# ---------------------------------------------------------------------------
# the command


def dump(paths, out=None, err=None, *, filesystem=None, **kw) -> int:
    """Dump files as ``kafka-dump-log.sh --files`` does → status (0; 1: damage found; 2: a file not read).

    Keyword arguments: see :class:`DumpOptions` (``print_data_log``, ``deep_iteration``,
    ``skip_record_metadata``, ``max_bytes``, ``decoder``, ``verify_index_only``,
    ``index_sanity_check``, ``max_message_size``, ``key_encoding``, ``value_encoding``, ``fmt``).
    """
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    opts = DumpOptions(**kw)
    status = 0
    reports = _Reports()
    for where in paths:
        try:
            files = _files(where, filesystem)
        except OSError as exc:
            err.write(f"kafkaproto dump-log: {exc}\n")
            status = 2
            continue
        for fs, path, shown in files:
            if opts.fmt == "text":
                _line(out, f"Dumping {shown}")
            name = os.path.basename(path)
            suffix = name[name.rindex("."):] if "." in name else ""
            emit = _Emit(out, shown, opts.fmt)
            try:
                if suffix in (".log", ".checkpoint"):
                    got = _dump_log(fs, path, shown, opts, out, reports)
                elif suffix == ".index":
                    got = _dump_index(fs, path, emit, opts, reports)
                elif suffix == ".timeindex":
                    got = _dump_timeindex(fs, path, emit, opts, reports)
                elif suffix == ".txnindex":
                    got = _dump_txnindex(fs, path, emit)
                elif suffix == ".snapshot":
                    got = _dump_snapshot(fs, path, emit, err)
                else:
                    err.write(f"Ignoring unknown file {shown}\n")
                    got = 0
            except _IndexError as exc:
                # where Kafka's tool stops with an exception: its message, and no further files
                err.write(f"kafkaproto dump-log: {shown}: {exc}\n")
                reports.write(err)
                return max(status, 1)
            except BrokenPipeError:
                raise  # the reader went away (| head): the command's caller ends quietly
            except _NameError as exc:
                err.write(f"kafkaproto dump-log: {exc}\n")
                got = 2
            except OSError as exc:
                err.write(f"kafkaproto dump-log: {shown}: {exc}\n")
                got = 2
            status = max(status, got)
    reports.write(err)
    return status


# ---------------------------------------------------------------------------
# JSON lines and Parquet: through the Arrow reader


def _dump_log_json(files, path: str, shown: str, opts: DumpOptions, out) -> int:
    from ._files import Segment, parse_partition_folder
    from ._scan import Scan

    name = os.path.basename(path)
    size = files.size(path)
    if opts.max_bytes is not None and opts.max_bytes < size:
        size = max(opts.max_bytes, 0)
    parsed = parse_partition_folder(os.path.basename(os.path.dirname(path))) or (None, None, "")
    seg = Segment(parsed[0], parsed[1], _base_offset(name), path, size)
    fs = files.fs if not files.local else None
    status = 0
    last = -1
    for item in Scan(fs, seg, columns=("key", "value", "offset", "timestamp", "headers") if opts.deep else (),
                     control=True, check_crc=opts.check_crc, window=opts.window,
                     tail_quiet=opts.max_bytes is not None):
        if isinstance(item, LogProblem):
            status = 1
            _line(out, json.dumps({"damage": item.kind, "file": item.path, "position": item.position,
                                   "end": item.end, "error": item.message}))
            continue
        last = _json_window(item, shown, opts, out, last)
    return status


_BATCH_KEYS = {"base_offset": "baseOffset", "last_offset": "lastOffset", "count": "count",
               "base_sequence": "baseSequence", "producer_id": "producerId", "producer_epoch": "producerEpoch",
               "leader_epoch": "partitionLeaderEpoch", "position": "position", "max_timestamp": "maxTimestamp",
               "base_timestamp": "baseTimestamp", "bytes": "size", "magic": "magic", "crc": "crc"}


def _next_sequence(base: int, delta: int) -> int:
    if base < 0:
        return -1
    seq = base + delta
    return seq - _I32_MAX - 1 if seq > _I32_MAX else seq


def _json_window(win, shown: str, opts: DumpOptions, out, last):
    counts = win.batches.column("records").to_pylist()
    recs = []
    if opts.deep:
        # (a tz-aware timestamp column's to_pylist() would import pandas: milliseconds from its buffer)
        from ..arrow.buffers import to_numpy, valid

        ts = win.records.column("timestamp")
        millis = [int(v) // 1000 if ok else None for v, ok in zip(to_numpy(ts), valid(ts))]
        recs = win.records.drop_columns(["timestamp"]).to_pylist()
        for r, m in zip(recs, millis):
            r["timestamp"] = m
    lines, at = [], 0
    for b, n in zip(win.batches.to_pylist(), counts):
        attrs, magic = b["attributes"], b["magic"]
        o = {"file": shown, **{v: b[k] for k, v in _BATCH_KEYS.items()}}
        o["lastSequence"] = _next_sequence(b["base_sequence"], b["last_offset"] - b["base_offset"])
        o["timestampType"] = "NoTimestampType" if magic == 0 else "LogAppendTime" if attrs & 8 else "CreateTime"
        o["isTransactional"] = bool(attrs & 0x10) and magic >= 2
        o["isControl"] = bool(attrs & 0x20) and magic >= 2
        o["deleteHorizonMs"] = b["base_timestamp"] if attrs & 0x40 and magic >= 2 else None
        codec = b["codec"]
        o["compresscodec"] = ("none", "gzip", "snappy", "lz4", "zstd")[codec] if 0 <= codec < 5 else f"unknown({codec})"
        o["isvalid"] = b["error"] is None
        if opts.deep:
            rows = []
            for r in recs[at:at + n]:
                row = {"offset": r["offset"], "timestamp": r["timestamp"],
                       "keySize": -1 if r["key"] is None else len(r["key"]),
                       "valueSize": -1 if r["value"] is None else len(r["value"])}
                if magic >= 2:
                    row["sequence"] = _next_sequence(b["base_sequence"], r["offset"] - b["base_offset"])
                    row["headerKeys"] = [h["key"] for h in r["headers"] or ()]
                if o["isControl"]:
                    from ._decoders import CONTROL_TYPES

                    t = b["control_type"]
                    row["controlType"] = CONTROL_TYPES.get(t, f"UNKNOWN({t})")
                    if t in (0, 1):
                        row["coordinatorEpoch"] = b["coordinator_epoch"]
                    else:
                        from ._decoders import control_json

                        row["control"] = control_json(t, r["value"])
                elif opts.print_data_log:
                    if opts.decoder:
                        from ._decoders import value_parser

                        k, v = value_parser(opts.decoder)(r["offset"], r["key"], r["value"])
                        row["key"], row["payload"] = k, v
                    else:
                        row["key"] = _plain(r["key"], opts.key_encoding)
                        row["payload"] = _plain(r["value"], opts.value_encoding)
                    row["headers"] = [{"key": h["key"], "value": _plain(h["value"], opts.value_encoding)}
                                      for h in r["headers"] or ()]
                rows.append(row)
            o["records"] = rows
        at += n
        lines.append(json.dumps(o, separators=(",", ":")))
    if lines:
        _line(out, "\n".join(lines))
    return last


def dump_parquet(paths, out_path: str, *, batches: bool = False, filesystem=None, columns=None,
                 window: int = DEFAULT_WINDOW, check_crc: bool = True, control: bool = False) -> tuple[int, int]:
    """The records (``columns`` of :data:`LOG_SCHEMA`), or with ``batches=True`` the batches, of
    the files given → one Parquet file; → (rows written, status as :func:`dump`).

    Every input is found before the output file is made: an input that is missing raises
    FileNotFoundError and leaves no file behind."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .. import arrow as karrow
    from ..arrow.buffers import constant_int, constant_string
    from ._files import Segment, parse_partition_folder
    from ._read import LOG_SCHEMA, NAMES, Bounds, problem_table, records_table
    from ._scan import WALK_COLUMNS, Scan

    names = NAMES if columns is None else tuple(columns)
    if batches:
        schema = pa.schema([("topic", pa.large_string()), ("partition", pa.int32()), ("segment", pa.int64())]
                           + list(karrow.BATCHES_SCHEMA))
    else:
        schema = pa.schema([LOG_SCHEMA.field(n) for n in names])
    inputs = []
    for where in paths:
        inputs += _segment_files(where, filesystem)
    rows, status = 0, 0
    with pq.ParquetWriter(out_path, schema) as writer:
        for files, path in inputs:
            parsed = parse_partition_folder(os.path.basename(os.path.dirname(path))) or (None, None, "")
            seg = Segment(parsed[0], parsed[1], _base_offset(os.path.basename(path)), path, files.size(path))
            fs = files.fs if not files.local else None
            walk = WALK_COLUMNS if not batches else ()
            for item in Scan(fs, seg, columns=walk, control=control or batches, check_crc=check_crc, window=window):
                if isinstance(item, LogProblem):
                    status = 1
                    if batches:
                        continue
                    table = problem_table(item, names)
                elif batches:
                    n = item.batches.num_rows
                    table = pa.Table.from_arrays(
                        [constant_string(seg.topic, n) if seg.topic is not None else
                         karrow._all_null(pa.large_string(), n),
                         constant_int(seg.partition, n, pa.int32()) if seg.partition is not None else
                         karrow._all_null(pa.int32(), n),
                         constant_int(seg.base_offset, n, pa.int64())] + item.batches.columns, schema=schema)
                else:
                    table = records_table(item, seg, names, Bounds(), None)
                writer.write_table(table)
                rows += table.num_rows
    return rows, status


def _segment_files(where, filesystem):
    """The segment files an argument names: a segment, a partition folder, or a topic (``<log dir>/<topic>``:
    the folders ``<topic>-<n>`` beside it), as :func:`kafkaproto.log.open_log` takes them."""
    files, path = _place(where, filesystem)
    if files.size(path) is not None:
        return [(files, path)]
    from . import open_log

    log = open_log(where, filesystem=filesystem)
    found = [(files, s.path) for p in log.partitions for s in p.segments]
    if not found:
        raise FileNotFoundError(f"no segments in {where}")
    return found
