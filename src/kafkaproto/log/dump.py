"""``kafkaproto dump-log``: what Kafka's ``kafka-dump-log.sh`` prints, from the
same walk as the records tables, a window of a segment at a time.

Text is Kafka's own layout, line for line (``--print-data-log`` and
``--deep-iteration`` as there), built column-wise with Arrow's string
kernels, not a line of Python per record.  ``--format json`` writes one JSON
object per batch (its records in it with ``--deep-iteration``), and
``--format parquet`` the records table (or, ``--batches``, the batches
table) of the files given.

Files: ``.log`` segments (and KRaft ``.checkpoint`` snapshots, which are
batches too), ``.index``, ``.timeindex``, ``.txnindex`` and producer
``.snapshot`` files, or a partition folder (its segments in order).
Damage is printed where it is met (``Damage: <file> at byte <n>: ...``)
and, for a segment whose end is not whole, as Kafka says it (``Found <n>
invalid bytes at the end of <name>``); the status is then 1.
"""

from __future__ import annotations

import base64
import json
import os
import re
import struct
import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

from .._impl import load
from ..records import _compression
from ._files import Segment, parse_partition_folder, resolve
from ._index import OffsetIndex, SnapshotError, TimeIndex, read_producer_snapshot, read_txn_index
from ._read import LOG_SCHEMA, NAMES, Bounds, records_table
from ._scan import DEFAULT_WINDOW, WALK_COLUMNS, LogProblem, Scan, Window

# the lines of a window in one pass, compiled or its twin
_TEXT = load("log._text")

__all__ = ["DumpOptions", "dump", "dump_parquet"]

_CODEC_NAMES = ("none", "gzip", "snappy", "lz4", "zstd")
_CONTROL_NAMES = {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER", 4: "SNAPSHOT_FOOTER",
                  5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"}
_CHECKPOINT = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
_I32_MAX = 2**31 - 1
_ENCODINGS = ("utf8", "hex", "base64")


class DumpOptions:
    def __init__(self, *, print_data_log=False, deep_iteration=False, skip_record_metadata=False, max_bytes=None,
                 key_encoding="utf8", value_encoding="utf8", fmt="text", window=DEFAULT_WINDOW, check_crc=True,
                 verify_index=True):
        if fmt not in ("text", "json"):
            raise ValueError(f"format must be text or json, not {fmt!r}")
        for enc in (key_encoding, value_encoding):
            if enc not in _ENCODINGS:
                raise ValueError(f"encoding must be one of {', '.join(_ENCODINGS)}, not {enc!r}")
        self.print_data_log = print_data_log
        # as Kafka's tool: printing the data means walking the records
        self.deep = deep_iteration or print_data_log
        self.skip_record_metadata = skip_record_metadata
        self.max_bytes = max_bytes
        self.key_encoding, self.value_encoding = key_encoding, value_encoding
        self.fmt, self.window, self.check_crc, self.verify_index = fmt, window, check_crc, verify_index


# ---------------------------------------------------------------------------
# files


def _files(where, filesystem):
    """(fs, path) of each file a path names (a folder: its segment files in order)."""
    fs, path = resolve(where, filesystem)
    info = fs.get_file_info(path)
    if info.type == pafs.FileType.Directory:
        names = sorted(i.path for i in fs.get_file_info(pafs.FileSelector(path))
                       if i.type == pafs.FileType.File and (i.base_name.endswith(".log") or
                                                            _CHECKPOINT.match(i.base_name)))
        return [(fs, p, where.rstrip("/") + "/" + os.path.basename(p)) for p in names]
    if info.type == pafs.FileType.NotFound:
        raise FileNotFoundError(f"no such file: {where}")
    return [(fs, path, os.fspath(where))]


def _sibling(fs, path: str, suffix: str):
    stem = path.rsplit(".", 1)[0]
    info = fs.get_file_info(stem + suffix)
    return (info.path, info.size) if info.type == pafs.FileType.File else (None, 0)


def _segment(fs, path: str, size: int | None = None) -> Segment:
    """A Segment for one .log file (topic and partition from its folder's name, when it has one)."""
    name = os.path.basename(path)
    stem = name.rsplit(".", 1)[0]
    m = _CHECKPOINT.match(name)
    base = int(m.group(1)) if m else int(stem) if stem.isdigit() else 0
    parsed = parse_partition_folder(os.path.basename(os.path.dirname(path))) or (None, None, "")
    if size is None:
        size = fs.get_file_info(path).size
    index, index_size = _sibling(fs, path, ".index")
    return Segment(parsed[0], parsed[1], base, path, size, index=index, index_size=index_size)


# ---------------------------------------------------------------------------
# text, column-wise


def _str(arr) -> pa.Array:
    return pc.cast(arr, pa.large_string())


def _lit(x):
    return pa.scalar(x, pa.large_string()) if isinstance(x, str) or x is None else x


_EMPTY = pa.scalar("", pa.large_string())


def _join(*parts) -> pa.Array:
    return pc.binary_join_element_wise(*map(_lit, parts), _EMPTY, null_handling="replace", null_replacement="")


def _java_string(values: pa.Array) -> pa.Array:
    """Bytes as Java's ``new String(bytes, UTF_8)`` shows them (bad sequences as U+FFFD)."""
    try:
        return values.cast(pa.large_string())
    except pa.ArrowInvalid:
        return pa.array([None if v is None else v.decode("utf-8", "replace") for v in values.to_pylist()],
                        pa.large_string())


def _encode(values: pa.Array, how: str) -> pa.Array:
    if how == "utf8":
        return _java_string(values)
    conv = bytes.hex if how == "hex" else (lambda b: base64.b64encode(b).decode("ascii"))
    return pa.array([None if v is None else conv(v) for v in values.to_pylist()], pa.large_string())


def _next_sequence(base: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """Kafka's sequence arithmetic: -1 stays -1, past int32's top it wraps to 0."""
    seq = base.astype(np.int64) + delta
    seq = np.where(seq > _I32_MAX, seq - _I32_MAX - 1, seq)
    return np.where(base < 0, -1, seq)


def _ts_type(magic: np.ndarray, attrs: np.ndarray) -> pa.Array:
    names = np.where(magic == 0, "NoTimestampType", np.where((attrs & 0x08) != 0, "LogAppendTime", "CreateTime"))
    return pa.array(names, pa.large_string())


def batch_lines(b: pa.Table) -> pa.Array:
    """The batch lines of DumpLogSegments for the batches of ``b`` (BATCHES_SCHEMA, positions in the file)."""
    magic = b.column("magic").to_numpy()
    attrs = b.column("attributes").to_numpy()
    base = b.column("base_offset").to_numpy()
    last = b.column("last_offset").to_numpy()
    bseq = b.column("base_sequence").to_numpy()
    codec = b.column("codec").to_numpy()
    horizon = np.where((attrs & 0x40) != 0, 1, 0)
    dh = _join(pa.array(np.where(horizon, "OptionalLong[", "OptionalLong.empty"), pa.large_string()),
               pc.if_else(pa.array(horizon.astype(bool)), _join(_str(b.column("base_timestamp")), "]"), _EMPTY))
    tail = _join(" position: ", _str(b.column("position")), " ", _ts_type(magic, attrs), ": ",
                 _str(b.column("max_timestamp")), " size: ", _str(b.column("bytes")), " magic: ",
                 _str(b.column("magic")), " compresscodec: ",
                 pa.array([_CODEC_NAMES[c] if 0 <= c < 5 else f"unknown({c})" for c in codec], pa.large_string())
                 if len(codec) < 64 else pa.array(np.array(_CODEC_NAMES + ("?",) * 3)[codec & 7], pa.large_string()),
                 " crc: ", _str(b.column("crc")), " isvalid: ",
                 pa.array(np.where(b.column("error").is_null().to_numpy(zero_copy_only=False), "true", "false"),
                          pa.large_string()), "\n")
    v2 = _join("baseOffset: ", _str(b.column("base_offset")), " lastOffset: ", _str(b.column("last_offset")),
               " count: ", _str(b.column("count")), " baseSequence: ", _str(b.column("base_sequence")),
               " lastSequence: ", _str(pa.array(_next_sequence(bseq, last - base))),
               " producerId: ", _str(b.column("producer_id")), " producerEpoch: ", _str(b.column("producer_epoch")),
               " partitionLeaderEpoch: ", _str(b.column("leader_epoch")),
               " isTransactional: ", _str(pa.array((attrs & 0x10) != 0)),
               " isControl: ", _str(pa.array((attrs & 0x20) != 0)), " deleteHorizonMs: ", dh, tail)
    if (magic >= 2).all():
        return v2
    legacy = _join("offset: ", _str(b.column("last_offset")), tail)
    return pc.if_else(pa.array(magic >= 2), v2, legacy)


def record_lines(recs: pa.Table, b: pa.Table, which: np.ndarray, opts: DumpOptions, crcs=None) -> pa.Array:
    """The ``| offset: ...`` lines of the records of ``recs`` (``which``: each one's batch in ``b``)."""
    magic = b.column("magic").to_numpy()[which]
    attrs = b.column("attributes").to_numpy()[which]
    control = ((attrs & 0x20) != 0) & (magic >= 2)
    parts = []
    if not opts.skip_record_metadata:
        ts = pc.divide(pc.cast(recs.column("timestamp"), pa.int64()), 1000)
        key, value = recs.column("key"), recs.column("value")
        ksize = pc.fill_null(pc.cast(pc.binary_length(key), pa.int64()), -1)
        vsize = pc.fill_null(pc.cast(pc.binary_length(value), pa.int64()), -1)
        parts += ["| offset: ", _str(recs.column("offset")), " ", _ts_type(magic, attrs), ": ", _str(ts),
                  " keySize: ", _str(ksize), " valueSize: ", _str(vsize)]
        seq = _next_sequence(b.column("base_sequence").to_numpy()[which],
                             recs.column("offset").to_numpy() - b.column("base_offset").to_numpy()[which])
        headers = recs.column("headers")
        if isinstance(headers, pa.ChunkedArray):
            headers = headers.combine_chunks()
        keys = pa.LargeListArray.from_arrays(
            pc.fill_null(headers.offsets, 0) if headers.null_count else headers.offsets,
            headers.values.field("key"))
        hk = pc.binary_join(keys, _lit(","))
        v2 = _join(" sequence: ", _str(pa.array(seq.astype(np.int32))), " headerKeys: [", hk, "]")
        if (magic >= 2).all():
            parts.append(v2)
        else:
            legacy = _join(" isValid: true crc: ", _str(pa.array(crcs)))
            parts.append(pc.if_else(pa.array(magic >= 2), v2, legacy))
        if control.any():
            ctype = b.column("control_type").to_numpy()[which]
            epoch = b.column("coordinator_epoch").to_numpy()[which]
            marker = [(f" endTxnMarker: {_CONTROL_NAMES[t]} coordinatorEpoch: {e}" if t in (0, 1) else
                       f" controlType: {_CONTROL_NAMES.get(int(t), 'UNKNOWN')}({t})") if c else None
                      for c, t, e in zip(control, ctype, epoch)]
            parts.append(pa.array(marker, pa.large_string()))
        prefix = " "
    else:
        prefix = "| "
    if opts.print_data_log and not control.all():
        key = _encode(recs.column("key").combine_chunks() if isinstance(recs.column("key"), pa.ChunkedArray)
                      else recs.column("key"), opts.key_encoding)
        value = _encode(recs.column("value").combine_chunks() if isinstance(recs.column("value"), pa.ChunkedArray)
                        else recs.column("value"), opts.value_encoding)
        data = pa.array(~control)
        kpart = pc.if_else(data, _join_null(prefix + "key: ", key), _lit(None))
        if opts.skip_record_metadata:
            # the prefix is "| " for whichever part comes first
            vprefix = pc.if_else(pc.is_null(key), _lit("| payload: "), _lit(" payload: "))
            vpart = pc.if_else(data, _join_null(vprefix, value), _lit(None))
        else:
            vpart = pc.if_else(data, _join_null(" payload: ", value), _lit(None))
        parts += [kpart, vpart]
    parts.append("\n")
    if len(parts) == 1:
        return pa.array(["\n"] * recs.num_rows, pa.large_string())
    return _join(*parts)


def _join_null(prefix, values) -> pa.Array:
    """``prefix + value``, null where the value is null."""
    return pc.binary_join_element_wise(_lit(prefix), values, _EMPTY, null_handling="emit_null")


def _arr(x) -> pa.Array:
    if isinstance(x, pa.ChunkedArray):
        return x.chunk(0) if x.num_chunks == 1 else x.combine_chunks()
    return x


def _interleave(blines: pa.Array, rlines: pa.Array | None, counts: np.ndarray) -> pa.Array:
    blines = _arr(blines)
    if rlines is None or len(rlines) == 0:
        return blines
    rlines = _arr(rlines)
    nb, nr = len(blines), len(rlines)
    starts = np.cumsum(counts) - counts
    order = np.empty(nb + nr, dtype=np.int64)
    bslot = np.arange(nb) + starts
    which = np.repeat(np.arange(nb), counts)
    rslot = which + 1 + np.arange(nr)
    order[bslot] = np.arange(nb)
    order[rslot] = nb + np.arange(nr)
    return pa.concat_arrays([blines, rlines]).take(pa.array(order))


def _write_lines(lines: pa.Array, out) -> None:
    """Every line (each ending in a newline) in one write: the string column's data buffer."""
    if isinstance(lines, pa.ChunkedArray):
        lines = lines.combine_chunks()
    if len(lines) == 0:
        return
    if lines.null_count:
        lines = pc.fill_null(lines, "")
    lines = lines.cast(pa.large_string())
    offs = np.frombuffer(lines.buffers()[1], dtype=np.int64, count=len(lines) + 1, offset=lines.offset * 8)
    data = lines.buffers()[2]
    chunk = memoryview(data)[offs[0]:offs[-1]]
    if hasattr(out, "buffer"):
        out.flush()
        out.buffer.write(chunk)
    else:
        out.write(bytes(chunk).decode("utf-8"))


# ---------------------------------------------------------------------------
# legacy: the inner records' own checksums (what Kafka prints for each)


def _legacy_crcs(buf, b: pa.Table) -> list:
    """Per record of the legacy batches of a window: the CRC of its own message."""
    out = []
    mv = memoryview(buf)
    for row in b.select(["position", "magic", "codec", "crc", "bytes"]).to_pylist():
        out_batch = []
        if row["magic"] >= 2:
            pass
        elif row["codec"] == 0:
            out_batch = [row["crc"]]
        else:
            at = row["position"]
            size = struct.unpack_from(">i", mv, at + 8)[0]
            body = mv[at + 12:at + 12 + size]
            p = 6 + (8 if row["magic"] == 1 else 0)
            klen = struct.unpack_from(">i", body, p)[0]
            p += 4 + max(klen, 0)
            vlen = struct.unpack_from(">i", body, p)[0]
            inner = _compression.decompress(row["codec"], body[p + 4:p + 4 + vlen], row["magic"], 64 << 20, 0)
            q = 0
            while q + 12 <= len(inner):
                isize = struct.unpack_from(">i", inner, q + 8)[0]
                out_batch.append(struct.unpack_from(">I", inner, q + 12)[0])
                q += 12 + isize
        out.append(out_batch)
    return out


# ---------------------------------------------------------------------------
# dumping


def _dump_log(fs, path: str, shown: str, opts: DumpOptions, out, err) -> int:
    seg = _segment(fs, path)
    name = os.path.basename(path)
    m = _CHECKPOINT.match(name)
    if opts.fmt == "json":
        pass
    elif m:
        print(f"Snapshot end offset: {int(m.group(1))}, epoch: {int(m.group(2))}", file=out)
    else:
        print(f"Log starting offset: {seg.base_offset}", file=out)
    limited = opts.max_bytes is not None and opts.max_bytes < seg.size
    if limited:
        seg = Segment(seg.topic, seg.partition, seg.base_offset, seg.path, opts.max_bytes, index=seg.index,
                      index_size=seg.index_size)
    scan = Scan(fs, seg, columns=WALK_COLUMNS if opts.deep else (), control=True, check_crc=opts.check_crc,
                window=opts.window)
    gaps: dict = {}
    last = -1  # as Kafka's tool: a first record at an offset other than 0 follows "-1"
    status = 0
    with fs.open_input_file(path) as f:
        for item in scan:
            if isinstance(item, LogProblem):
                if limited and item.kind == "cut" and item.end is None:
                    continue  # --max-bytes ends the file inside a batch
                status = 1
                _print_problem(item, seg, name, opts, out)
                continue
            if opts.fmt == "json":
                last = _json_window(item, seg, opts, out, last, gaps)
            else:
                last = _text_window(item, opts, out, last, gaps, f)
    if gaps:
        print(f"Non-consecutive offsets in {_absolute(fs, path)}", file=err)
        for a in sorted(gaps):
            print(f"  {a} is followed by {gaps[a]}", file=err)
    return status


def _absolute(fs, path: str) -> str:
    return os.path.abspath(path) if isinstance(fs, pafs.LocalFileSystem) else path


def _print_problem(p: LogProblem, seg: Segment, name: str, opts: DumpOptions, out) -> None:
    if opts.fmt == "json":
        print(json.dumps({"damage": p.kind, "file": p.path, "position": p.position, "end": p.end,
                          "error": p.message}), file=out)
        return
    print(f"Damage: {p}", file=out)
    if p.end is None and p.kind in ("cut", "unreadable") and p.position is not None:
        print(f"Found {seg.size - p.position} invalid bytes at the end of {name}", file=out)


def _window_records(win: Window, opts: DumpOptions):
    counts = win.batches.column("records").to_numpy()
    which = np.repeat(np.arange(len(counts)), counts)
    return counts, which


def _gaps(offsets: np.ndarray, last: int, gaps: dict) -> int:
    """Record pairs whose offsets do not follow each other (``gaps``: offset before → offset after)."""
    if len(offsets) == 0:
        return last
    if offsets[0] != last + 1:
        gaps[int(last)] = int(offsets[0])
    if len(offsets) > 1:
        for i in np.flatnonzero(np.diff(offsets) != 1):
            gaps[int(offsets[i])] = int(offsets[i + 1])
    return int(offsets[-1])


def _legacy_window_crcs(win: Window, f, counts, which):
    magic = win.batches.column("magic").to_numpy()
    if (magic >= 2).all():
        return None
    lo = int(win.batches.column("position")[0].as_py())
    last = win.batches.num_rows - 1
    hi = int(win.batches.column("position")[last].as_py()) + int(win.batches.column("bytes")[last].as_py())
    f.seek(lo)
    buf = f.read_buffer(hi - lo)
    shifted = win.batches.set_column(1, "position", pc.subtract(win.batches.column("position"), lo))
    per_batch = _legacy_crcs(buf, shifted)
    crcs = np.zeros(len(which), dtype=np.int64)
    starts = np.cumsum(counts) - counts
    for k, got in enumerate(per_batch):
        if got:
            crcs[starts[k]:starts[k] + len(got)] = got
    return crcs


def _var_parts(arr):
    """A large binary/string array → (int64 offsets, uint8 data from the first offset on, uint8 validity)."""
    arr = _arr(arr)
    n = len(arr)
    bufs = arr.buffers()
    offs = np.frombuffer(bufs[1], dtype=np.int64, count=n + 1, offset=arr.offset * 8)
    data = np.frombuffer(bufs[2], dtype=np.uint8)[offs[0]:offs[-1]] if bufs[2] is not None and n else \
        np.empty(0, np.uint8)
    ok = arr.is_valid().to_numpy(zero_copy_only=False).view(np.uint8)
    return offs, np.ascontiguousarray(data), ok


def _i64(values) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.int64)


def _text_lines(win: Window, blines: pa.Array, opts: DumpOptions, crcs) -> bytes:
    """The window's lines in one compiled pass (keys and values as Kafka's string decoder shows them)."""
    b, recs = win.batches, win.records
    bl_offs, bl_data, _ = _var_parts(blines)
    n = recs.num_rows
    if opts.deep:
        stamps = _arr(recs.column("timestamp"))
        ts_ok = stamps.is_valid().to_numpy(zero_copy_only=False).view(np.uint8)
        ts_ms = pc.fill_null(stamps.cast(pa.int64()), 0).to_numpy() // 1000
        k = _var_parts(recs.column("key"))
        v = _var_parts(recs.column("value"))
        headers = _arr(recs.column("headers"))
        h_offs = np.frombuffer(headers.buffers()[1], dtype=np.int64, count=n + 1, offset=headers.offset * 8)
        keys = headers.values.field("key").slice(int(h_offs[0]), int(h_offs[-1] - h_offs[0]))
        hk_offs, hk_data, _ = _var_parts(keys)
        h_offs = _i64(h_offs - h_offs[0])
        offsets = _i64(recs.column("offset").to_numpy())
    else:
        empty_i, empty_u = np.zeros(1, np.int64), np.zeros(0, np.uint8)
        ts_ok = empty_u
        ts_ms = offsets = np.zeros(0, np.int64)
        k = v = (empty_i, empty_u, empty_u)
        h_offs = hk_offs = empty_i
        hk_data = empty_u
    return _TEXT.dump_lines(
        _i64(b.column("records").to_numpy()), _i64(bl_offs), bl_data, _i64(b.column("magic").to_numpy()),
        _i64(b.column("attributes").to_numpy()), _i64(b.column("base_offset").to_numpy()),
        _i64(b.column("base_sequence").to_numpy()), _i64(b.column("control_type").to_numpy()),
        _i64(b.column("coordinator_epoch").to_numpy()), offsets, _i64(ts_ms), np.ascontiguousarray(ts_ok),
        _i64(k[0]), k[1], np.ascontiguousarray(k[2]), _i64(v[0]), v[1], np.ascontiguousarray(v[2]), h_offs,
        _i64(hk_offs), hk_data, _i64(np.zeros(n, np.int64) if crcs is None else crcs), opts.deep,
        opts.print_data_log, opts.skip_record_metadata)


def _text_window(win: Window, opts: DumpOptions, out, last, gaps, f):
    blines = batch_lines(win.batches)
    counts = win.batches.column("records").to_numpy()
    crcs = None
    if opts.deep:
        last = _gaps(win.records.column("offset").to_numpy(), last, gaps)
        crcs = _legacy_window_crcs(win, f, counts, np.repeat(np.arange(len(counts)), counts))
    if opts.key_encoding == "utf8" and opts.value_encoding == "utf8":
        _write_bytes(_text_lines(win, blines, opts, crcs), out)
        return last
    rlines = None
    if opts.deep:
        which = np.repeat(np.arange(len(counts)), counts)
        rlines = record_lines(win.records, win.batches, which, opts, crcs)
    _write_lines(_interleave(blines, rlines, counts if opts.deep else np.zeros(len(blines), np.int64)), out)
    return last


def _write_bytes(data: bytes, out) -> None:
    if hasattr(out, "buffer"):
        out.flush()
        out.buffer.write(data)
    else:
        out.write(data.decode("utf-8"))


def _plain(v, how):
    if v is None:
        return None
    if how == "utf8":
        return v.decode("utf-8", "replace")
    return v.hex() if how == "hex" else base64.b64encode(v).decode("ascii")


_BATCH_KEYS = {"base_offset": "baseOffset", "last_offset": "lastOffset", "count": "count",
               "base_sequence": "baseSequence", "producer_id": "producerId", "producer_epoch": "producerEpoch",
               "leader_epoch": "partitionLeaderEpoch", "position": "position", "max_timestamp": "maxTimestamp",
               "base_timestamp": "baseTimestamp", "bytes": "size", "magic": "magic", "crc": "crc"}


def _json_window(win: Window, seg: Segment, opts: DumpOptions, out, last, gaps):
    counts = win.batches.column("records").to_numpy()
    recs, stamps = [], None
    if opts.deep:
        recs = win.records.to_pylist()
        stamps = pc.divide(pc.cast(win.records.column("timestamp"), pa.int64()), 1000).to_pylist()
        last = _gaps(win.records.column("offset").to_numpy(), last, gaps)
    lines, at = [], 0
    for b, n in zip(win.batches.to_pylist(), counts):
        attrs, magic = b["attributes"], b["magic"]
        o = {"file": seg.path, **{v: b[k] for k, v in _BATCH_KEYS.items()}}
        o["lastSequence"] = int(_next_sequence(np.array([b["base_sequence"]]),
                                               np.array([b["last_offset"] - b["base_offset"]]))[0])
        o["timestampType"] = "NoTimestampType" if magic == 0 else "LogAppendTime" if attrs & 8 else "CreateTime"
        o["isTransactional"] = bool(attrs & 0x10) and magic >= 2
        o["isControl"] = bool(attrs & 0x20) and magic >= 2
        o["deleteHorizonMs"] = b["base_timestamp"] if attrs & 0x40 and magic >= 2 else None
        o["compresscodec"] = _CODEC_NAMES[b["codec"]] if 0 <= b["codec"] < 5 else f"unknown({b['codec']})"
        o["isvalid"] = b["error"] is None
        if opts.deep:
            rows = []
            for r, ts in zip(recs[at:at + n], stamps[at:at + n]):
                row = {"offset": r["offset"], "timestamp": ts,
                       "keySize": -1 if r["key"] is None else len(r["key"]),
                       "valueSize": -1 if r["value"] is None else len(r["value"])}
                if magic >= 2:
                    row["sequence"] = int(_next_sequence(np.array([b["base_sequence"]]),
                                                         np.array([r["offset"] - b["base_offset"]]))[0])
                    row["headerKeys"] = [h["key"] for h in r["headers"] or ()]
                if o["isControl"]:
                    t = b["control_type"]
                    row["controlType"] = _CONTROL_NAMES.get(t, f"UNKNOWN({t})")
                    if t in (0, 1):
                        row["coordinatorEpoch"] = b["coordinator_epoch"]
                elif opts.print_data_log:
                    row["key"] = _plain(r["key"], opts.key_encoding)
                    row["payload"] = _plain(r["value"], opts.value_encoding)
                    row["headers"] = [{"key": h["key"], "value": _plain(h["value"], opts.value_encoding)}
                                      for h in r["headers"] or ()]
                rows.append(row)
            o["records"] = rows
        at += n
        lines.append(json.dumps(o, separators=(",", ":")))
    if lines:
        out.write("\n".join(lines) + "\n")
    return last


class _Emit:
    """One entry of an index or snapshot file: Kafka's text line, or a JSON object."""

    def __init__(self, out, shown: str, fmt: str):
        self.out, self.shown, self.json = out, shown, fmt == "json"

    def __call__(self, text: str, **fields) -> None:
        if self.json:
            print(json.dumps({"file": self.shown, **fields}, separators=(",", ":")), file=self.out)
        else:
            print(text, file=self.out)


def _dump_index(fs, path: str, emit: _Emit, err, verify: bool) -> int:
    info = fs.get_file_info(path)
    seg = _segment(fs, path[:-len(".index")] + ".log", size=0)
    idx = OffsetIndex(fs, path, info.size, seg.base_offset)
    if idx.count == 0:
        if not emit.json:
            emit(f"{emit.shown} is empty.")
        return 0
    log_path = path[:-len(".index")] + ".log"
    log_info = fs.get_file_info(log_path)
    mismatches = []
    with fs.open_input_file(log_path) if verify and log_info.type == pafs.FileType.File else _Null() as f:
        for off, pos in idx.entries():
            found = None
            if f is not None:
                found = _last_offset_at(f, pos, log_info.size)
                if found != off:
                    mismatches.append((off, found))
            emit(f"offset: {off} position: {pos}", offset=off, position=pos,
                 **({} if found is None else {"logOffset": found}))
    if mismatches:
        print(f"Mismatches in :{_absolute(fs, path)}", file=err)
        for a, b in sorted(dict(mismatches).items(), reverse=True):
            print(f"  Index offset: {a}, log offset: {b}", file=err)
    return 1 if mismatches else 0


class _Null:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def _last_offset_at(f, pos: int, size: int):
    """The last offset of the batch at ``pos`` (from its header), or -1 when there is none."""
    if pos + 61 > size:
        return -1
    f.seek(pos)
    head = f.read_buffer(61).to_pybytes()
    base, _size, _ple, magic = struct.unpack_from(">qiib", head, 0)
    if magic == 2:
        return base + struct.unpack_from(">i", head, 23)[0]
    return base  # a legacy message's offset is its last


def _dump_timeindex(fs, path: str, emit: _Emit) -> int:
    info = fs.get_file_info(path)
    seg = _segment(fs, path[:-len(".timeindex")] + ".log", size=0)
    idx = TimeIndex(fs, path, info.size, seg.base_offset)
    for ts, off in idx.entries():
        emit(f"timestamp: {ts} offset: {off}", timestamp=ts, offset=off)
    return 0


def _read_all(fs, path: str) -> bytes:
    with fs.open_input_file(path) as f:
        return f.read_buffer(fs.get_file_info(path).size).to_pybytes()


def _dump_txnindex(fs, path: str, emit: _Emit) -> int:
    entries, left = read_txn_index(_read_all(fs, path))
    for e in entries:
        emit(f"version: {e.version} producerId: {e.producer_id} firstOffset: {e.first_offset} "
             f"lastOffset: {e.last_offset} lastStableOffset: {e.last_stable_offset}", version=e.version,
             producerId=e.producer_id, firstOffset=e.first_offset, lastOffset=e.last_offset,
             lastStableOffset=e.last_stable_offset)
    if left:
        emit(f"Damage: {emit.shown}: {left} bytes after the last whole entry not read", damage="txnindex",
             error=f"{left} bytes after the last whole entry not read")
        return 1
    return 0


def _optional(v: int) -> str:
    return f"OptionalLong[{v}]" if v >= 0 else "OptionalLong.empty"


def _dump_snapshot(fs, path: str, emit: _Emit, err) -> int:
    try:
        entries = read_producer_snapshot(_read_all(fs, path))
    except SnapshotError as exc:
        print(f"Damage: {emit.shown}: {exc}", file=err)
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


def dump(paths, out=None, err=None, *, filesystem=None, **kw) -> int:
    """Dump files as ``kafka-dump-log.sh --files`` does → status (0; 1: damage found; 2: a file not read).

    Keyword arguments: see :class:`DumpOptions` (``print_data_log``, ``deep_iteration``,
    ``skip_record_metadata``, ``max_bytes``, ``key_encoding``, ``value_encoding``, ``fmt``).
    """
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    opts = DumpOptions(**kw)
    status = 0
    for where in paths:
        try:
            files = _files(where, filesystem)
        except (OSError, FileNotFoundError) as exc:
            print(f"kafkaproto dump-log: {exc}", file=err)
            status = 2
            continue
        for fs, path, shown in files:
            if opts.fmt == "text":
                print(f"Dumping {shown}", file=out)
            name = os.path.basename(path)
            try:
                if name.endswith(".log") or _CHECKPOINT.match(name):
                    got = _dump_log(fs, path, shown, opts, out, err)
                elif name.endswith(".index"):
                    got = _dump_index(fs, path, _Emit(out, shown, opts.fmt), err, opts.verify_index)
                elif name.endswith(".timeindex"):
                    got = _dump_timeindex(fs, path, _Emit(out, shown, opts.fmt))
                elif name.endswith(".txnindex"):
                    got = _dump_txnindex(fs, path, _Emit(out, shown, opts.fmt))
                elif name.endswith(".snapshot"):
                    got = _dump_snapshot(fs, path, _Emit(out, shown, opts.fmt), err)
                else:
                    print(f"Ignoring unknown file {shown}", file=err)
                    got = 0
            except OSError as exc:
                print(f"kafkaproto dump-log: {shown}: {exc}", file=err)
                got = 2
            status = max(status, got)
    return status


def dump_parquet(paths, out_path: str, *, batches: bool = False, filesystem=None, columns=None,
                 window: int = DEFAULT_WINDOW, check_crc: bool = True, control: bool = False) -> tuple[int, int]:
    """The records (``columns`` of :data:`LOG_SCHEMA`), or with ``batches=True`` the batches, of
    the files given → one Parquet file; → (rows written, status as :func:`dump`)."""
    import pyarrow.parquet as pq

    from .. import arrow as karrow

    names = NAMES if columns is None else tuple(columns)
    if batches:
        schema = pa.schema([("topic", pa.large_string()), ("partition", pa.int32()), ("segment", pa.int64())]
                           + list(karrow.BATCHES_SCHEMA))
    else:
        schema = pa.schema([LOG_SCHEMA.field(n) for n in names])
    rows, status = 0, 0
    with pq.ParquetWriter(out_path, schema) as writer:
        for where in paths:
            for fs, path, _shown in _files(where, filesystem):
                if not path.endswith(".log"):
                    continue
                seg = _segment(fs, path)
                walk = WALK_COLUMNS if not batches else ()
                for item in Scan(fs, seg, columns=walk, control=control or batches, check_crc=check_crc,
                                 window=window):
                    if isinstance(item, LogProblem):
                        status = 1
                        if batches:
                            continue
                        from ._read import problem_table

                        table = problem_table(item, names)
                    elif batches:
                        n = item.batches.num_rows
                        table = pa.Table.from_arrays(
                            [pa.array([seg.topic] * n, pa.large_string()), pa.array([seg.partition] * n, pa.int32()),
                             pa.array(np.full(n, seg.base_offset))] + item.batches.columns, schema=schema)
                    else:
                        table = records_table(item, seg, names, Bounds(), None)
                    writer.write_table(table)
                    rows += table.num_rows
    return rows, status

