"""One capture → Arrow record batches of the report's rows (the work of one
Spark task, and testable without Spark).

:func:`decode_capture` reads a capture with :func:`kafkaproto.capture.read_frames`
(reassembly, framing, resynchronization, pairing by connection and
correlation id), and for every chunk of frames decodes, with the vectorized
decoders of :mod:`kafkaproto.arrow`:

- request headers (client id) and bodies (topics; the client software name
  and version of ApiVersions v3+; Produce record sets);
- response bodies with their request's api key and version (every non-zero
  ``*error_code`` anywhere in the message; Fetch record sets; Metadata's
  topic ids, which name the topics of Produce v13+ / Fetch v13+);
- record sets: one row per record (Spark's Kafka-source columns, via
  :func:`kafkaproto.arrow.records`) and one row per record set (codec,
  batches, bytes, records).

Every column of every table is typed once, in :data:`ROW_SCHEMA`; each
table is a selection of those columns (:data:`TABLE_COLUMNS`), and the pass
yields ``(table, batch)`` pairs.  One pass over the capture feeds every
table.  The capture's accounting comes last, as ``accounting`` rows; frames
move from ``framed`` to ``decoded`` or ``undecodable`` as their bodies
decode, as ``kafkaproto inspect`` counts them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import arrow as karrow
from ..capture import Accounting, read_frames
from ..capture.accounting import MARKS
from ..capture.dissect import removed_in_kafka4
from ..capture.streams import REQUEST, RESPONSE
from ..capture.table import _append as _append_frame
from ..capture.table import _columns as _frame_columns
from ..errors import KafkaProtocolError
from ..messages import api_name
from ..records._compression import CODEC_NAMES

__all__ = ["ROW_SCHEMA", "TABLE_COLUMNS", "TASK_TABLES", "FrameDecoder", "TableWriter", "accounting_batch",
           "accounting_from_dict", "decode_capture", "decode_segments", "record_set_summary", "table_schema",
           "write_segment_tables", "write_tables"]

TS = pa.timestamp("us", tz="UTC")
# The records columns keep the types kafkaproto.arrow.records gives them (64-bit
# offsets): a cast to binary/string would copy every value once more.  Parquet
# stores both alike (BYTE_ARRAY), so Spark reads them as binary and string.
HEADER = pa.struct([("key", pa.large_string()), ("value", pa.large_binary())])

#: Every column of every table, in output order.
ROW_SCHEMA = pa.schema([
    ("capture", pa.string()),
    ("conn", pa.int64()),
    ("seq", pa.int64()),  # index of the frame in its capture
    ("ts", TS),
    ("client", pa.string()),  # the client's address and port
    ("server", pa.string()),
    ("api_key", pa.int16()),
    ("api", pa.string()),
    ("api_version", pa.int16()),
    ("correlation_id", pa.int32()),
    ("client_id", pa.string()),
    ("size", pa.int64()),  # bytes on the wire, size prefix included
    ("removed_in_kafka4", pa.bool_()),
    ("topics", pa.list_(pa.string())),
    ("software_name", pa.string()),
    ("software_version", pa.string()),
    ("status", pa.string()),  # decoded / undecodable / unpaired
    ("trailing_bytes", pa.int32()),  # bytes a frame had after its message body (null: not decoded)
    ("request_seq", pa.int64()),
    ("latency_us", pa.int64()),
    ("wait_ms", pa.int32()),  # the wait the request asked for (Fetch max_wait_ms...): a long poll's latency
    ("error_codes", pa.list_(pa.int16())),
    ("source", pa.string()),  # produce / fetch
    ("key", pa.large_binary()),
    ("value", pa.large_binary()),
    ("topic", pa.large_string()),
    ("partition", pa.int32()),
    ("offset", pa.int64()),
    ("timestamp", TS),
    ("timestampType", pa.int32()),
    ("headers", pa.large_list(HEADER)),
    ("codec", pa.string()),
    ("batches", pa.int32()),
    ("records", pa.int64()),
    ("ledger", pa.string()),
    ("reason", pa.string()),
    ("count", pa.int64()),
    ("bytes", pa.int64()),
    ("info", pa.string()),
    ("topic_id", pa.string()),
    ("error", pa.large_string()),
])

_FRAME = ("capture", "conn", "seq", "ts", "client", "server", "api_key", "api", "api_version", "correlation_id",
          "client_id", "size", "removed_in_kafka4", "status", "error")
#: The columns of each table (the Parquet files hold these, in this order).
TABLE_COLUMNS: dict[str, tuple[str, ...]] = {
    "requests": _FRAME[:12] + ("removed_in_kafka4", "topics", "software_name", "software_version", "status",
                               "trailing_bytes", "error"),
    "responses": _FRAME[:12] + ("removed_in_kafka4", "request_seq", "latency_us", "wait_ms", "error_codes", "status",
                                "trailing_bytes", "error"),
    "records": ("key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers", "source",
                "capture", "conn", "seq", "client_id", "error"),
    "record_sets": ("capture", "conn", "seq", "ts", "source", "client_id", "api_version", "topic", "partition",
                    "codec", "batches", "records", "bytes", "error"),
    "unanswered": ("capture", "conn", "seq", "ts", "client", "server", "api_key", "api", "api_version",
                   "correlation_id", "client_id"),
    "accounting": ("capture", "ledger", "reason", "count", "bytes", "info"),
    "topic_ids": ("capture", "topic_id", "topic"),
}
#: tables the tasks write (``connections`` too, from their totals); the
#: driver writes ``accounting`` and ``topic_ids`` from the merged totals
TASK_TABLES = ("requests", "responses", "records", "record_sets", "unanswered")
CHUNK_FRAMES = 4096
CHUNK_BYTES = 32 << 20

PRODUCE, FETCH, METADATA, API_VERSIONS = 0, 1, 3, 18
#: long polls: api key -> the request field that says how long the broker may wait
WAITS = {1: "max_wait_ms", 78: "max_wait_ms", 11: "rebalance_timeout_ms"}


# ---------------------------------------------------------------------------
# small Arrow helpers


def _repeat(text: str, n: int) -> pa.Array:
    """``n`` times the same string, built from buffers (no Python list)."""
    raw = text.encode()
    offsets = np.arange(n + 1, dtype=np.int32) * len(raw)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(raw * n)])


def _binary(items: list[bytes]) -> pa.Array:
    """A binary array of ``items``: one join and one cumulative sum, instead
    of a builder that reallocates as it grows."""
    n = len(items)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, items), dtype=np.int64, count=n), out=offsets[1:])
    typ = pa.binary()
    if offsets[-1] < (1 << 31):
        offsets = offsets.astype(np.int32)
    else:
        typ = pa.large_binary()
    return pa.Array.from_buffers(typ, n, [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(items))])


def _path(arr, names: Iterable[str]):
    """Follow struct fields and lists from a struct array: (values, row of each value)."""
    rows = np.arange(len(arr), dtype=np.int64)
    cur = arr
    for name in names:
        cur = cur.field(name)
        if pa.types.is_large_list(cur.type) or pa.types.is_list(cur.type):
            parents = pc.list_parent_indices(cur).to_numpy(zero_copy_only=False)
            rows = rows[parents]
            cur = pc.list_flatten(cur)
    return cur, rows


def _error_code_paths(typ, prefix=()) -> list[tuple[str, ...]]:
    """Paths to every ``*error_code`` int16 field of a message struct type."""
    out = []
    for f in typ:
        t = f.type
        if (pa.types.is_large_list(t) or pa.types.is_list(t)) and pa.types.is_struct(t.value_type):
            out += _error_code_paths(t.value_type, prefix + (f.name,))
        elif pa.types.is_struct(t):
            out += _error_code_paths(t, prefix + (f.name,))
        elif f.name.endswith("error_code") and pa.types.is_int16(t):
            out.append(prefix + (f.name,))
    return out


_PATHS: dict[int, list] = {}


def _nonzero_error_codes(msgs, api_key: int) -> pa.Array:
    """One list per message: its non-zero error codes (repeats kept)."""
    paths = _PATHS.get(api_key)
    if paths is None:
        paths = _PATHS[api_key] = _error_code_paths(msgs.type)
    n = len(msgs)
    vals, rows = [], []
    for path in paths:
        v, r = _path(msgs, path)
        v = v.to_numpy(zero_copy_only=False) if v.null_count == 0 else v.fill_null(0).to_numpy(zero_copy_only=False)
        keep = v != 0
        vals.append(v[keep].astype(np.int16))
        rows.append(r[keep])
    return _lists(n, np.concatenate(vals) if vals else np.zeros(0, np.int16),
                  np.concatenate(rows) if rows else np.zeros(0, np.int64), pa.int16())


def _lists(n: int, values: np.ndarray, rows: np.ndarray, typ) -> pa.Array:
    """A list array of ``n`` rows from (value, row) pairs."""
    order = np.argsort(rows, kind="stable")
    counts = np.bincount(rows, minlength=n) if len(rows) else np.zeros(n, np.int64)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(values[order], typ))


def _topic_names(msgs, api_key: int, lookup=None) -> pa.Array:
    """One list per message: the topics it names (first level of topic lists)."""
    n = len(msgs)
    names: list[str] = []
    rows: list[np.ndarray] = []
    typ = msgs.type
    for top in ("topics", "topic_data", "responses", "creatable_topics"):
        i = typ.get_field_index(top)
        if i < 0:
            continue
        t = typ.field(i).type
        if not (pa.types.is_large_list(t) and pa.types.is_struct(t.value_type)):
            continue
        elem = t.value_type
        got = None
        for attr in ("name", "topic"):
            if elem.get_field_index(attr) >= 0 and pa.types.is_large_string(elem.field(attr).type):
                got = _path(msgs, (top, attr))
                break
        if elem.get_field_index("topic_id") >= 0:
            ids, id_rows = _path(msgs, (top, "topic_id"))
            if got is None:
                got = (pa.nulls(len(ids), pa.large_string()), id_rows)
            got = (_name_or_id(got[0], ids, lookup, id_rows), got[1])
        if got is not None:
            vals, r = got
            names += vals.to_pylist()
            rows.append(r)
        break
    if not rows:
        return pa.nulls(n, pa.list_(pa.string()))
    r = np.concatenate(rows)
    keep = np.array([v is not None for v in names], dtype=bool)
    return _lists(n, np.array(names, dtype=object)[keep], r[keep], pa.string())


# A topic id (Produce and Fetch v13+) is named in the tables from a Metadata
# response seen earlier on the same connection, else written as the id's
# text.  Naming it from other connections' Metadata would make a row depend
# on which connections a task happened to decode first; within a connection
# the order is the capture's, however the capture is read.  The ``topic_ids``
# table holds every id the capture's Metadata responses named (to join with),
# and the figures use it.


_NO_IDS: dict[bytes, tuple[int, str]] = {}


def _uuid_text(b: bytes) -> str:
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _name_or_id(names, ids, lookup=None, rows=None) -> pa.Array:
    """Topic names; where a version carries only a topic id, ``lookup(id,
    message row)`` (``rows``: each element's message row), else the id."""
    if ids.null_count == len(ids):
        return names.cast(pa.large_string())
    out = names.to_pylist()
    for i, tid in enumerate(ids.to_pylist()):
        if out[i] is None and tid is not None and any(tid):
            out[i] = (lookup(tid, int(rows[i])) if lookup is not None else None) or _uuid_text(tid)
    return pa.array(out, pa.large_string())


# ---------------------------------------------------------------------------
# record sets


# codec names by attribute value (0-7), then 8: a blob without one whole batch
_CODEC_LABELS = np.array(list(CODEC_NAMES) + [f"codec{c}" for c in range(len(CODEC_NAMES), 8)] + ["-"],
                         dtype=object)


def record_set_summary(walked: pa.Table, lengths: np.ndarray):
    """Record sets by codec, from the batches the records walk went through
    (:func:`kafkaproto.arrow.records` with ``batches=True``): no second walk.

    ``lengths``: each blob's bytes.  Returns ``(blob, codec, batches, records,
    bytes)`` arrays, one row per (blob, codec) in the order the codecs first
    appear in the blob; a blob without one whole batch gets a row with codec
    ``-``.  ``records`` are those the walk gave the records table (none for a
    blob with an error); the first codec's bytes include what is not in a
    whole batch (a partial last batch, or what an error left unread).
    """
    m = len(lengths)
    whole = pc.invert(walked.column("truncated")).to_numpy(zero_copy_only=False)
    fb = walked.column("row").to_numpy()[whole]
    fc = walked.column("codec").to_numpy()[whole].astype(np.int64)
    fs = walked.column("bytes").to_numpy()[whole]
    fn = walked.column("records").to_numpy()[whole]
    order_in_blob = np.arange(len(fb), dtype=np.int64)
    # blobs with no whole batch: one "-" group of nothing
    none = np.setdiff1d(np.arange(m, dtype=np.int64), fb)
    fb = np.concatenate([fb, none])
    fc = np.concatenate([fc, np.full(len(none), 8, np.int64)])  # 8: the "-" label
    fs, fn = (np.concatenate([x, np.zeros(len(none), np.int64)]) for x in (fs, fn))
    order_in_blob = np.concatenate([order_in_blob, np.zeros(len(none), np.int64)])
    batches = np.concatenate([np.ones(len(fb) - len(none), np.int64), np.zeros(len(none), np.int64)])
    # groups (blob, codec), in the order of their first batch within the blob
    key = fb * 9 + fc
    uniq, first, inv = np.unique(key, return_index=True, return_inverse=True)
    g_blob = uniq // 9
    g_codec = uniq % 9
    g_first = order_in_blob[first]
    g_batches = np.bincount(inv, weights=batches, minlength=len(uniq)).astype(np.int64)
    g_bytes = np.bincount(inv, weights=fs, minlength=len(uniq)).astype(np.int64)
    g_records = np.bincount(inv, weights=fn, minlength=len(uniq)).astype(np.int64)
    order = np.lexsort((g_first, g_blob))
    g_blob, g_codec, g_batches, g_bytes, g_records = (x[order] for x in (g_blob, g_codec, g_batches, g_bytes,
                                                                         g_records))
    lead = np.ones(len(g_blob), dtype=bool)
    lead[1:] = g_blob[1:] != g_blob[:-1]
    set_bytes = np.bincount(g_blob, weights=g_bytes, minlength=m).astype(np.int64)
    rest = np.asarray(lengths, dtype=np.int64) - set_bytes
    nbytes = g_bytes + np.where(lead, rest[g_blob], 0)
    return g_blob, _CODEC_LABELS[g_codec], g_batches, g_records, nbytes


# ---------------------------------------------------------------------------
# the per-capture pass


class _Chunk:
    """The frames of one chunk, as columns: the capture layer's frame-table
    columns (:mod:`kafkaproto.capture.table`), plus what its pairing gives
    (seq, the request's seq and client id) and status."""

    def __init__(self) -> None:
        self.cols: dict[str, list] = _frame_columns()
        for extra in ("seq", "status", "request_seq", "paired_client_id"):
            self.cols[extra] = []
        self.nbytes = 0

    def add(self, f) -> None:
        _append_frame(self.cols, f)
        c = self.cols
        c["conn"][-1] = f.conn.uid  # the id that does not depend on how the capture was read
        c["seq"].append(f.seq)
        c["status"].append(f.status)
        req = f.request if f.direction == RESPONSE else None
        c["request_seq"].append(None if req is None else req.seq)
        c["paired_client_id"].append(f.client_id)
        self.nbytes += len(f.frame)

    def __len__(self) -> int:
        return len(self.cols["seq"])


class CaptureDecoder:
    """Decodes the frames of one capture chunk by chunk; keeps what spans
    chunks (the topic ids Metadata responses named)."""

    def __init__(self, capture: str, acc: Accounting) -> None:
        self.capture = capture
        self.acc = acc
        #: topic id -> name, from the capture's Metadata responses (the
        #: ``topic_ids`` table and the figures name topics with it)
        self.topic_ids: dict[bytes, str] = {}
        # conn -> {topic id: (seq of the Metadata response, name)}: see _name_or_id
        self.conn_ids: dict[int, dict[bytes, tuple[int, str]]] = {}
        # (conn, request seq) -> the wait a long-poll request asked for
        self.waits: dict[tuple[int, int], int] = {}
        self._names: dict[int, str] = {}
        self._removed: dict[tuple[int, int], bool] = {}

    # -- per-row lookups (a few distinct values per chunk) ---------------------
    def _api(self, keys: list[int | None]) -> list[str | None]:
        out = []
        for k in keys:
            if k is None:
                out.append(None)
                continue
            name = self._names.get(k)
            if name is None:
                try:
                    name = api_name(k)
                except KafkaProtocolError:
                    name = f"api{k}"
                self._names[k] = name
            out.append(name)
        return out

    def _removed_flags(self, keys, versions) -> list[bool]:
        out = []
        for k, v in zip(keys, versions):
            got = self._removed.get((k, v))
            if got is None:
                got = self._removed[(k, v)] = removed_in_kafka4(k, v)
            out.append(got)
        return out

    # -- one chunk -------------------------------------------------------------
    def chunk(self, ch: _Chunk) -> list[tuple[str, pa.RecordBatch]]:
        c = ch.cols
        n = len(ch)
        frame = c["frame"]
        is_req = np.array([d == REQUEST for d in c["direction"]], dtype=bool)
        req_idx = np.flatnonzero(is_req)
        resp_idx = np.flatnonzero(~is_req)
        client_id: list[str | None] = [None] * n
        error: list[str | None] = [None] * n
        status = list(c["status"])
        topics: list[list | None] = [None] * n
        software: dict[int, tuple[str, str]] = {}
        error_codes: list[list | None] = [None] * n
        trailing: list[int | None] = [None] * n
        self._trailing = trailing
        blobs: list[tuple[int, str, pa.Array, pa.Array, pa.Array]] = []  # (source, rows, topic, partition, blob)

        self._cols = c
        request_seq = c["request_seq"]
        for i in resp_idx:
            client_id[i] = c["paired_client_id"][i]
        resp_keys = np.array([-1 if c["api_key"][i] is None else c["api_key"][i] for i in resp_idx])

        def responses(which):
            for key in which:
                if key < 0:
                    continue  # unpaired: no api key, cannot decode
                sel = np.flatnonzero(resp_keys == key)
                rows = resp_idx[sel]
                versions = pa.array([c["api_version"][i] for i in rows], pa.int16())
                try:
                    msgs = karrow.messages(_binary([frame[i] for i in rows]), int(key), "response", versions)
                except KafkaProtocolError as exc:
                    for i in rows:
                        error[i] = str(exc)
                    continue
                self._bodies(int(key), msgs, rows, error, topics, error_codes, blobs, "fetch", None)

        # Metadata responses first: they name the topic ids of what follows them
        keys_present = sorted(np.unique(resp_keys).tolist()) if len(resp_idx) else []
        responses([k for k in keys_present if k == METADATA])
        # requests: headers, then each api key's bodies
        if len(req_idx):
            req_frames = _binary([frame[i] for i in req_idx])
            heads = karrow.request_headers(req_frames)
            cids = heads.field("client_id").to_pylist()
            for j, i in enumerate(req_idx):
                client_id[i] = cids[j]
            keys = np.array([-1 if c["api_key"][i] is None else c["api_key"][i] for i in req_idx])
            for key in np.unique(keys):
                sel = np.flatnonzero(keys == key)
                rows = req_idx[sel]
                if key < 0:
                    for i in rows:
                        error[i] = "frame shorter than a request header"
                    continue
                try:
                    msgs = karrow.messages(req_frames.take(pa.array(sel)), int(key))
                except KafkaProtocolError as exc:  # an api key without a schema
                    for i in rows:
                        error[i] = str(exc)
                    continue
                self._bodies(int(key), msgs, rows, error, topics, None, blobs, "produce", software)
                field = WAITS.get(int(key))
                if field is not None and msgs.type.get_field_index(field) >= 0:
                    for i, w in zip(rows, msgs.field(field).to_pylist()):
                        if w is not None:
                            self.waits[(c["conn"][i], c["seq"][i])] = w
        # the other responses of each api key, with their request's version
        responses([k for k in keys_present if k != METADATA])
        # accounting: framed frames are now decoded or undecodable
        acc = self.acc
        for i in range(n):
            if status[i] == "framed":
                status[i] = "decoded" if error[i] is None else "undecodable"
                acc.move("framed", status[i], len(c["frame"][i]) + 4)
            elif status[i] == "unpaired" and error[i] is None:
                error[i] = "no request with this correlation id in the capture"

        api = self._api(c["api_key"])
        removed = self._removed_flags(c["api_key"], c["api_version"])
        sizes = [len(b) + 4 for b in c["frame"]]
        base = {
            "capture": _repeat(self.capture, n),
            "conn": pa.array(c["conn"], pa.int64()),
            "seq": pa.array(c["seq"], pa.int64()),
            "ts": pa.array(c["ts"], pa.int64()).cast(TS),
            "client": pa.array(c["client"], pa.string()),
            "server": pa.array(c["server"], pa.string()),
            "api_key": pa.array(c["api_key"], pa.int16()),
            "api": pa.array(api, pa.string()),
            "api_version": pa.array(c["api_version"], pa.int16()),
            "correlation_id": pa.array(c["correlation_id"], pa.int32()),
            "client_id": pa.array(client_id, pa.string()),
            "size": pa.array(sizes, pa.int64()),
            "removed_in_kafka4": pa.array(removed, pa.bool_()),
            "status": pa.array(status, pa.string()),
            "error": pa.array(error, pa.large_string()),
        }
        out = []
        if len(req_idx):
            take = pa.array(req_idx)
            cols = {k: v.take(take) for k, v in base.items()}
            cols["topics"] = pa.array([topics[i] for i in req_idx], pa.list_(pa.string()))
            cols["software_name"] = pa.array([software.get(int(i), (None, None))[0] for i in req_idx], pa.string())
            cols["software_version"] = pa.array([software.get(int(i), (None, None))[1] for i in req_idx],
                                                pa.string())
            cols["trailing_bytes"] = pa.array([trailing[i] for i in req_idx], pa.int32())
            out.append(("requests", _batch("requests", cols, len(req_idx))))
        if len(resp_idx):
            take = pa.array(resp_idx)
            cols = {k: v.take(take) for k, v in base.items()}
            cols["request_seq"] = pa.array([request_seq[i] for i in resp_idx], pa.int64())
            cols["latency_us"] = pa.array(c["latency_us"], pa.int64()).take(take)
            waits = self.waits
            cols["wait_ms"] = pa.array([waits.pop((c["conn"][i], request_seq[i]), None) if request_seq[i] is not None
                                        and c["api_key"][i] in WAITS else None for i in resp_idx], pa.int32())
            cols["error_codes"] = pa.array([error_codes[i] for i in resp_idx], pa.list_(pa.int16()))
            cols["trailing_bytes"] = pa.array([trailing[i] for i in resp_idx], pa.int32())
            out.append(("responses", _batch("responses", cols, len(resp_idx))))
        if blobs:
            out += self._record_sets(blobs, base)
        return out

    def _bodies(self, key: int, msgs, rows: np.ndarray, error, topics, error_codes, blobs, source, software):
        """Per api key: errors, topics, error codes, software, record sets."""
        errs = msgs.field("error").to_pylist()
        for j, e in enumerate(errs):
            if e is not None:
                error[rows[j]] = e
        trailing = self._trailing
        for j, t in enumerate(msgs.field("trailing_bytes").to_pylist()):
            trailing[rows[j]] = t
        c = self._cols
        conns, seqs = c["conn"], c["seq"]
        if key == METADATA and source == "fetch":
            names, nrows = _path(msgs, ("topics", "name"))
            ids, _ = _path(msgs, ("topics", "topic_id"))
            for name, tid, j in zip(names.to_pylist(), ids.to_pylist(), nrows.tolist()):
                if name and tid and any(tid):
                    self.topic_ids[tid] = name
                    i = rows[j]
                    self.conn_ids.setdefault(conns[i], {}).setdefault(tid, (seqs[i], name))
        conn_ids = self.conn_ids

        def lookup(tid: bytes, j: int) -> str | None:
            i = rows[j]
            got = conn_ids.get(conns[i], _NO_IDS).get(tid)
            return got[1] if got is not None and got[0] < seqs[i] else None

        tl = _topic_names(msgs, key, lookup).to_pylist()
        for j, t in enumerate(tl):
            if t:
                topics[rows[j]] = t
        if error_codes is not None:
            for j, codes in enumerate(_nonzero_error_codes(msgs, key).to_pylist()):
                error_codes[rows[j]] = codes
        if key == API_VERSIONS and software is not None:
            names = msgs.field("client_software_name").to_pylist()
            vers = msgs.field("client_software_version").to_pylist()
            for j, (nm, vs) in enumerate(zip(names, vers)):
                if nm:
                    software[int(rows[j])] = (nm, vs)
        if key == PRODUCE and source == "produce":
            (tn, _), (ti, tr) = (_path(msgs, ("topic_data", a)) for a in ("name", "topic_id"))
            tnames = _name_or_id(tn, ti, lookup, tr)
            blob, brow = _path(msgs, ("topic_data", "partition_data", "records"))
            part, _ = _path(msgs, ("topic_data", "partition_data", "index"))
            _, trow = _path(msgs, ("topic_data",))  # rows of each topic element
            per_topic = pc.list_value_length(_path(msgs, ("topic_data",))[0].field("partition_data")) \
                if len(trow) else pa.array([], pa.int64())
            topic = tnames.take(pa.array(np.repeat(np.arange(len(trow)), per_topic.fill_null(0).to_numpy())))
            blobs.append(("produce", rows[brow], topic, part, blob))
        elif key == FETCH and source == "fetch":
            (tn, _), (ti, tr) = (_path(msgs, ("responses", a)) for a in ("topic", "topic_id"))
            tnames = _name_or_id(tn, ti, lookup, tr)
            blob, brow = _path(msgs, ("responses", "partitions", "records"))
            part, _ = _path(msgs, ("responses", "partitions", "partition_index"))
            tops, trow = _path(msgs, ("responses",))
            per_topic = pc.list_value_length(tops.field("partitions")) if len(trow) else pa.array([], pa.int64())
            topic = tnames.take(pa.array(np.repeat(np.arange(len(trow)), per_topic.fill_null(0).to_numpy())))
            blobs.append(("fetch", rows[brow], topic, part, blob))

    def _record_sets(self, blobs, base) -> list[tuple[str, pa.RecordBatch]]:
        out = []
        for source, rows, topic, part, blob in blobs:
            # null or empty: a partition with nothing to produce or fetch
            ok = pc.fill_null(pc.greater(pc.binary_length(blob), 0), False).to_numpy(zero_copy_only=False)
            keep = None if ok.all() else np.flatnonzero(ok)
            if keep is not None:
                rows, topic, part, blob = rows[keep], topic.take(pa.array(keep)), part.take(pa.array(keep)), \
                    blob.take(pa.array(keep))
            m = len(blob)
            if not m:
                continue
            recs, walked = karrow.records(blob, topic=topic, partition=part, batches=True)
            rec_row = recs.column("row").to_numpy()
            set_err = [None] * m
            if recs.column("error").null_count != len(rec_row):
                for r, e in zip(rec_row.tolist(), recs.column("error").to_pylist()):
                    if e is not None:
                        set_err[r] = e
            k = len(rec_row)
            rt = pa.array(rows[rec_row]) if k else pa.array([], pa.int64())
            rcols = {
                "key": recs.column("key"), "value": recs.column("value"), "topic": recs.column("topic"),
                "partition": recs.column("partition"), "offset": recs.column("offset"),
                "timestamp": recs.column("timestamp"), "timestampType": recs.column("timestampType"),
                "headers": recs.column("headers"),
                "source": _repeat(source, k),
                "capture": _repeat(self.capture, k), "conn": base["conn"].take(rt), "seq": base["seq"].take(rt),
                "client_id": base["client_id"].take(rt), "error": recs.column("error"),
            }
            out.append(("records", _batch("records", rcols, k)))
            lengths = pc.binary_length(blob).to_numpy(zero_copy_only=False)
            srow, codecs, nb, nrec, nbytes = record_set_summary(walked, lengths)
            errs = [set_err[j] for j in srow.tolist()] if any(e is not None for e in set_err) else None
            st = pa.array(srow)
            take = pa.array(rows[srow])
            ms = len(srow)
            scols = {
                "capture": _repeat(self.capture, ms), "conn": base["conn"].take(take), "seq": base["seq"].take(take),
                "ts": base["ts"].take(take), "source": _repeat(source, ms),
                "client_id": base["client_id"].take(take), "api_version": base["api_version"].take(take),
                "topic": topic.take(st), "partition": part.take(st), "codec": pa.array(codecs, pa.string()),
                "batches": pa.array(nb, pa.int32()), "records": pa.array(nrec, pa.int64()),
                "bytes": pa.array(nbytes, pa.int64()),
                "error": pa.array(errs, pa.large_string()) if errs is not None else None,
            }
            out.append(("record_sets", _batch("record_sets", scols, ms)))
        return out


def _batch(table: str, cols: dict[str, object], n: int) -> pa.RecordBatch:
    """A record batch of one table (:func:`table_schema`; missing columns null).
    Columns come in their table's types: nothing is converted twice."""
    schema = _SCHEMAS[table]
    arrays = []
    for f in schema:
        v = cols.get(f.name)
        if v is None:
            arrays.append(pa.nulls(n, f.type))
            continue
        if isinstance(v, pa.ChunkedArray):
            v = v.chunk(0) if v.num_chunks == 1 else v.combine_chunks()
        if v.type != f.type:
            raise TypeError(f"{table}.{f.name}: built as {v.type}, the table holds {f.type}")
        arrays.append(v)
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def accounting_batch(capture: str, acc: Accounting) -> pa.RecordBatch:
    """The ``accounting`` table's rows of a capture: one per (ledger, reason), then
    one ``totals`` row whose ``info`` holds :meth:`Accounting.to_dict` as JSON."""
    rows = acc.rows()
    n = len(rows) + 1
    cols = {
        "capture": pa.array([capture] * n, pa.string()),
        "ledger": pa.array([r["ledger"] for r in rows] + ["totals"], pa.string()),
        "reason": pa.array([r["reason"] for r in rows] + [None], pa.string()),
        "count": pa.array([r["count"] for r in rows] + [None], pa.int64()),
        "bytes": pa.array([r["bytes"] for r in rows] + [None], pa.int64()),
        "info": pa.array([None] * len(rows) + [json.dumps(acc.to_dict())], pa.string()),
    }
    return _batch("accounting", cols, n)


class FrameDecoder:
    """The frames of one capture, in the order a reader gives them, to
    ``(table, batch)`` pairs: chunks of :data:`CHUNK_FRAMES` frames (or
    :data:`CHUNK_BYTES`) decoded by a :class:`CaptureDecoder`.  Both ways
    of reading a capture (a whole file in one task, or its connections spread
    over tasks) go through here."""

    def __init__(self, capture: str, acc: Accounting, chunk_frames: int = CHUNK_FRAMES,
                 chunk_bytes: int = CHUNK_BYTES) -> None:
        self.capture = capture
        self.acc = acc
        self.decoder = CaptureDecoder(capture, acc)
        self.chunk = _Chunk()
        self.chunk_frames, self.chunk_bytes = chunk_frames, chunk_bytes

    def add(self, f) -> list[tuple[str, pa.RecordBatch]]:
        ch = self.chunk
        ch.add(f)
        if len(ch) >= self.chunk_frames or ch.nbytes >= self.chunk_bytes:
            return self.flush()
        return []

    def flush(self) -> list[tuple[str, pa.RecordBatch]]:
        if not len(self.chunk):
            return []
        ch, self.chunk = self.chunk, _Chunk()
        return self.decoder.chunk(ch)

    def topic_ids(self) -> list[tuple[str, pa.RecordBatch]]:
        """Rows of the ``topic_ids`` table: every topic id the capture's
        Metadata responses named (so far)."""
        ids = self.decoder.topic_ids
        if not ids:
            return []
        items = sorted((_uuid_text(k), v) for k, v in ids.items())
        cols = {"capture": _repeat(self.capture, len(items)), "topic_id": pa.array([k for k, _ in items], pa.string()),
                "topic": pa.array([v for _, v in items], pa.large_string())}
        return [("topic_ids", _batch("topic_ids", cols, len(items)))]

    def unanswered(self, items) -> list[tuple[str, pa.RecordBatch]]:
        """Rows of the ``unanswered`` table: ``(connection, correlation id,
        RequestInfo)`` of requests whose response never came."""
        if not items:
            return []
        n = len(items)
        keys = [i.api_key for _, _, i in items]
        versions = [i.api_version for _, _, i in items]
        cols = {
            "capture": _repeat(self.capture, n),
            "conn": pa.array([c.uid for c, _, _ in items], pa.int64()),
            "seq": pa.array([i.seq for _, _, i in items], pa.int64()),
            "ts": pa.array([None if i.ts is None else i.ts // 1000 for _, _, i in items], pa.int64()).cast(TS),
            "client": pa.array([c.client for c, _, _ in items], pa.string()),
            "server": pa.array([c.server for c, _, _ in items], pa.string()),
            "api_key": pa.array(keys, pa.int16()),
            "api": pa.array(self.decoder._api(keys), pa.string()),
            "api_version": pa.array(versions, pa.int16()),
            "correlation_id": pa.array([corr for _, corr, _ in items], pa.int32()),
            "client_id": pa.array([i.client_id for _, _, i in items], pa.string()),
        }
        return [("unanswered", _batch("unanswered", cols, n))]


def decode_capture(path, *, capture: str | None = None, ports=None, chunk_frames: int = CHUNK_FRAMES,
                   chunk_bytes: int = CHUNK_BYTES) -> Iterator[tuple[str, pa.RecordBatch]]:
    """Every row of one capture file as ``(table, batch)`` pairs (batches of
    :func:`table_schema`), the accounting last.

    ``capture`` names the capture in the rows (default: the file name).  A
    file that is no capture at all gives only accounting rows, with the
    reason in ``errors``.
    """
    capture = capture or os.path.basename(os.fspath(path).rstrip("/"))
    acc = Accounting()
    dec = FrameDecoder(capture, acc, chunk_frames, chunk_bytes)
    unanswered: list = []
    try:
        for f in read_frames(path, ports=ports, acc=acc, unanswered=unanswered):
            yield from dec.add(f)
    except (ValueError, OSError) as exc:  # CaptureFormatError is a ValueError
        acc.errors.append(f"{capture}: {exc}")
    yield from dec.flush()
    yield from dec.unanswered(unanswered)
    yield from dec.topic_ids()
    yield "accounting", accounting_batch(capture, acc)


def decode_segments(batches, names: Sequence[str], *, ports=None, accs: dict[str, Accounting] | None = None,
                    chunk_frames: int = CHUNK_FRAMES, chunk_bytes: int = CHUNK_BYTES
                    ) -> Iterator[tuple[str, pa.RecordBatch]]:
    """The rows of the connections whose TCP segments are in ``batches``
    (record batches of :func:`kafkaproto.capture.segments.segment_schema`,
    sorted by capture, connection key and order: what one task gets after
    the shuffle).  ``names``: capture number -> name.  Each capture's
    accounting is left in ``accs[name]`` (statistics rows of its ranges
    included); no accounting rows are yielded."""
    from ..capture import _scan, numbered
    from ..capture.segments import STATS_KEY, feed, range_accounting
    from ..capture.streams import Extractor

    accs = accs if accs is not None else {}
    state: dict[int, tuple] = {}  # capture number -> (extractor, frame decoder, stats rows, scanner)

    def of(cap: int):
        got = state.get(cap)
        if got is None:
            name = names[cap]
            acc = accs.setdefault(name, Accounting())
            ext = Extractor(ports, acc)
            ext.unanswered = []
            got = state[cap] = (ext, FrameDecoder(name, acc, chunk_frames, chunk_bytes), [], ext.scanner(_scan))
        return got

    def drain(ext, dec):
        out = []
        for f in numbered(ext.out, dec.acc):
            out += dec.add(f)
        ext.out.clear()
        return out

    current = None  # (capture, key) being fed
    for batch in batches:
        if not batch.num_rows:
            continue
        caps = batch.column(0).to_numpy()
        keys = batch.column(1).to_numpy()
        # runs of one (capture, key)
        change = np.flatnonzero((caps[1:] != caps[:-1]) | (keys[1:] != keys[:-1])) + 1
        bounds = [0, *change.tolist(), batch.num_rows]
        for a, b in zip(bounds[:-1], bounds[1:]):
            cap, key = int(caps[a]), int(keys[a])
            ext, dec, stats, scan = of(cap)
            if key == STATS_KEY:
                stats += [json.loads(p) for p in batch.column("payload").slice(a, b - a).to_pylist()]
                continue
            if current is not None and current != (cap, key):
                pext, pdec, _, _ = of(current[0])
                pext.close_all()  # the previous connection's last segment was fed
                yield from drain(pext, pdec)
                yield from pdec.unanswered(pext.unanswered)
                pext.unanswered.clear()
            current = (cap, key)
            feed(ext, batch.slice(a, b - a), scan)
            yield from drain(ext, dec)
    for _cap, (ext, dec, cap_stats, _unused) in sorted(state.items()):
        ext.close_all()
        yield from drain(ext, dec)
        yield from dec.flush()
        yield from dec.unanswered(ext.unanswered)
        yield from dec.topic_ids()
        if cap_stats:  # this capture's own statistics rows, never another's
            dec.acc.merge(range_accounting(cap_stats))


def table_schema(table: str) -> pa.Schema:
    """The Arrow schema of one of :data:`TABLE_COLUMNS`' tables."""
    return _SCHEMAS[table]


_SCHEMAS = {t: pa.schema([ROW_SCHEMA.field(c) for c in cols]) for t, cols in TABLE_COLUMNS.items()}


class TableWriter:
    """Writes one task's rows: one Parquet file per table under
    ``out/<table>/<part>.parquet`` (every table of :data:`TASK_TABLES`, empty
    ones too, so each table can be read whatever the captures held), and the
    ``connections`` rows from the totals it keeps of what it wrote.

    ``filesystem``: a :class:`pyarrow.fs.FileSystem` for ``out`` (default:
    the local one).  ``aggregates``: a
    :class:`~kafkaproto.report.aggregate.TaskAggregates` that sees every row
    written (a fresh one otherwise).
    """

    def __init__(self, out: str, part: str, *, filesystem=None, aggregates=None) -> None:
        from pyarrow import fs as pafs

        from .aggregate import TaskAggregates

        self.out, self.part = out, part
        self.fs = filesystem or pafs.LocalFileSystem()
        self.agg = aggregates if aggregates is not None else TaskAggregates()
        self.writers: dict[str, object] = {}
        self.counts = {t: 0 for t in TASK_TABLES}

    def _writer(self, table: str):
        import pyarrow.parquet as pq

        w = self.writers.get(table)
        if w is None:
            self.fs.create_dir(f"{self.out}/{table}", recursive=True)
            w = self.writers[table] = pq.ParquetWriter(f"{self.out}/{table}/{self.part}.parquet", table_schema(table),
                                                       filesystem=self.fs)
        return w

    def write(self, table: str, batch: pa.RecordBatch) -> None:
        if table == "accounting" or not batch.num_rows:
            return
        if table == "topic_ids":  # the driver writes this table from every task's
            self.agg.add(table, batch)
            return
        self._writer(table).write_batch(batch)
        self.agg.add(table, batch)
        self.counts[table] += batch.num_rows

    def close(self, ok: bool = True) -> list[tuple[str, str, int]]:
        """Close every file; ``[(table, file, rows)]`` with ``connections``."""
        import pyarrow.parquet as pq

        if ok:
            for table in TASK_TABLES:
                self._writer(table)
        for w in self.writers.values():
            w.close()
        if not ok:
            return []
        conns = self.agg.connections()
        self.fs.create_dir(f"{self.out}/connections", recursive=True)
        conn_file = f"{self.out}/connections/{self.part}.parquet"
        pq.write_table(conns, conn_file, filesystem=self.fs)
        return [(t, f"{self.out}/{t}/{self.part}.parquet", self.counts[t]) for t in TASK_TABLES] + \
            [("connections", conn_file, conns.num_rows)]


def write_tables(path, out: str, part: str, *, capture: str | None = None, ports=None,
                 filesystem=None, aggregates=None) -> tuple[list[tuple[str, str, int]], Accounting]:
    """Decode one capture file and write its rows (:class:`TableWriter`).
    Returns ``([(table, file, rows)], accounting)``."""
    w = TableWriter(out, part, filesystem=filesystem, aggregates=aggregates)
    acc_info = None
    ok = False
    try:
        for table, batch in decode_capture(path, capture=capture, ports=ports):
            if table == "accounting":
                acc_info = batch.column(batch.schema.get_field_index("info"))[batch.num_rows - 1].as_py()
            w.write(table, batch)
        ok = True
    finally:
        written = w.close(ok)
    return written, accounting_from_dict(json.loads(acc_info or "{}"))


def write_segment_tables(batches, names: Sequence[str], out: str, part: str, *, ports=None, filesystem=None,
                         aggregates=None) -> tuple[list[tuple[str, str, int]], dict[str, Accounting]]:
    """Decode the connections of ``batches`` (:func:`decode_segments`) and
    write their rows.  Returns ``([(table, file, rows)], {capture: accounting})``."""
    w = TableWriter(out, part, filesystem=filesystem, aggregates=aggregates)
    accs: dict[str, Accounting] = {}
    ok = False
    try:
        for table, batch in decode_segments(batches, names, ports=ports, accs=accs):
            w.write(table, batch)
        ok = True
    finally:
        written = w.close(ok)
    return written, accs


def accounting_from_dict(d: dict[str, object]) -> Accounting:
    """The inverse of :meth:`Accounting.to_dict` (accounting travels as JSON)."""
    acc = Accounting()
    for name in ("packets", "bytes", "frames"):
        getattr(acc, name).update(d.get(name, {}))
    for name in ("packets_total", "payload_bytes_total", "missing_bytes", "gaps", "connections",
                 "kafka_connections", "syn_only", "unanswered_requests", "file_bytes", "unread_bytes", *MARKS):
        setattr(acc, name, int(d.get(name, 0)))
    acc.errors = list(d.get("errors", []))
    return acc
