"""The tables of a capture: every column of every table typed once
(:data:`ROW_SCHEMA`), each table a selection of them (:data:`TABLE_COLUMNS`),
and :class:`CaptureDecoder`, which makes their rows from frame batches.

A frame batch (:class:`~kafkaproto.capture.frames.FrameBatch`) already holds
what the walker read once per frame: api key and version, correlation id,
client id, the pairing of each response with its request, the header's size.
The decoder adds what the bodies say, per api key and per batch, with the
vectorized decoders of :mod:`kafkaproto.arrow` over views of the batch's
bytes (no frame is copied):

- request bodies (topics; the client software name and version of
  ApiVersions v3+; Produce record sets);
- response bodies with their request's api key and version (every non-zero
  ``*error_code`` anywhere in the message; Fetch record sets; Metadata's
  topic ids, which name the topics of Produce v13+ / Fetch v13+);
- record sets: one row per record (Spark's Kafka-source columns, via
  :func:`kafkaproto.arrow.records`) and one row per record set (codec,
  batches, bytes, records).

Frames move from ``framed`` to ``decoded`` or ``undecodable`` in the
accounting as their bodies decode, as ``kafkaproto inspect`` counts them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import arrow as karrow
from ..arrow import buffers as ab
from ..arrow.buffers import masked, pick
from ..errors import KafkaProtocolError
from ..messages import APIS, api_name, removed_in_kafka4
from ..records import CODEC_NAMES
from .accounting import MARKS, Accounting
from .frames import binary_views

__all__ = ["ROW_SCHEMA", "TABLES", "TABLE_COLUMNS", "TASK_TABLES", "CaptureDecoder", "accounting_batch",
           "accounting_from_dict", "record_set_summary", "repeat", "table_batch", "table_schema"]

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
#: the tables a capture dataset reads (:func:`kafkaproto.capture.open_capture`):
#: the walker's frame table, then the decoded ones
TABLES = ("frames", *TASK_TABLES)

PRODUCE, FETCH, METADATA, API_VERSIONS = 0, 1, 3, 18
#: long polls: api key -> the request field that says how long the broker may wait
WAITS = {1: "max_wait_ms", 78: "max_wait_ms", 11: "rebalance_timeout_ms"}


# ---------------------------------------------------------------------------
# small Arrow helpers


def repeat(text: str, n: int) -> pa.Array:
    """``n`` times the same string (string), built from buffers (no Python list)."""
    return ab.constant_string(text, n, pa.string())


def _path(arr, names: Iterable[str]):
    """Follow struct fields and lists from a struct array: (values, row of each value)."""
    rows = np.arange(len(arr), dtype=np.int64)
    cur = arr
    for name in names:
        cur = cur.field(name)
        if pa.types.is_large_list(cur.type) or pa.types.is_list(cur.type):
            parents = ab.to_numpy(pc.list_parent_indices(cur))
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
        v = ab.to_numpy(v if v.null_count == 0 else ab.fill_null(v, 0))
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
    offsets = ab.numbers(offsets, pa.int32())
    if isinstance(values, pa.Array):
        return pa.ListArray.from_arrays(offsets, values.take(ab.numbers(order, pa.int64())).cast(typ))
    return pa.ListArray.from_arrays(offsets, ab.numbers(values[order], typ))


def _topic_names(msgs, api_key: int, lookup=None) -> pa.Array:
    """One list per message: the topics it names (first level of topic lists)."""
    n = len(msgs)
    names: list[pa.Array] = []
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
            names.append(vals.cast(pa.string()))
            rows.append(r)
        break
    if not rows:
        return pa.nulls(n, pa.list_(pa.string()))
    r = np.concatenate(rows)
    vals = pa.concat_arrays(names)
    keep = ab.valid(vals)
    return _lists(n, vals.filter(ab.bools(keep)), r[keep], pa.string())


# A topic id (Produce and Fetch v13+) is named in the tables from a Metadata
# response seen earlier on the same connection, else written as the id's
# text.  Naming it from other connections' Metadata would make a row depend
# on which connections a task happened to decode first; within a connection
# the order is the capture's, however the capture is read.  The ``topic_ids``
# table holds every id the capture's Metadata responses named (to join with),
# and the figures use it.


_ZERO_ID = bytes(16)


def _real_ids(ids: pa.Array) -> pa.Array:
    """True where a topic id is given and not all zeros (the no-id value)."""
    return ab.fill_null(pc.not_equal(ids, ab.scalar(_ZERO_ID, ids.type)), False)


def _uuid_text(b: bytes) -> str:
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _name_or_id(names, ids, lookup=None, rows=None) -> pa.Array:
    """Topic names; where a version carries only a topic id, ``lookup(ids,
    message rows)`` (names or nulls; ``rows``: each element's message row),
    else the id."""
    names = names.cast(pa.large_string())
    if ids.null_count == len(ids):
        return names
    # the elements to name: no name, an id that is not all zeros (most have a name)
    mask = ab.fill_null(pc.and_(pc.is_null(names), _real_ids(ids)), False)
    need = np.flatnonzero(ab.to_numpy(mask))
    if not len(need):
        return names
    tids = ids.take(ab.numbers(need, pa.int64()))
    got = lookup(tids, rows[need]) if lookup is not None else pa.nulls(len(need), pa.string())
    if got.null_count:  # no Metadata response named it before: the id's text
        texts = got.to_pylist()
        for k, tid in enumerate(tids.to_pylist()):
            if texts[k] is None:
                texts[k] = _uuid_text(tid)
        got = ab.strings(texts, pa.string())
    return pc.replace_with_mask(names, mask, got.cast(pa.large_string()))


def _id_bytes(ids) -> np.ndarray:
    """The 16 bytes of each topic id (``fixed_size_binary(16)``, none null) as an (n, 16) array."""
    n = len(ids)
    if not n:
        return np.zeros((0, 16), dtype=np.uint8)
    ids = ids.cast(pa.binary(16))
    raw = np.frombuffer(ids.buffers()[1], dtype=np.uint8)
    return raw[ids.offset * 16:(ids.offset + n) * 16].reshape(n, 16)


def _first_of_each(keys: np.ndarray) -> np.ndarray:
    """The position of the first row of each distinct row of ``keys`` (an (n, k) uint8 array)."""
    flat = np.ascontiguousarray(keys).view(f"V{keys.shape[1]}").ravel()
    return np.unique(flat, return_index=True)[1]


def _last_of_each(keys: np.ndarray) -> np.ndarray:
    """The position of the last row of each distinct row of ``keys``."""
    return len(keys) - 1 - _first_of_each(keys[::-1])


class _ConnIds:
    """Per (connection, topic id) the first Metadata response on the
    connection that named it: its seq and the name, as columns (a key of
    the connection's uid and the id, 24 bytes, per row)."""

    __slots__ = ("conn", "key", "seq", "name")

    def __init__(self) -> None:
        self.conn = np.zeros(0, dtype=np.int64)
        self.key = self._keys(self.conn, np.zeros((0, 16), dtype=np.uint8))[1]
        self.seq = np.zeros(0, dtype=np.int64)
        self.name = ab.strings([], pa.string())

    @staticmethod
    def _keys(uids: np.ndarray, tid_bytes: np.ndarray) -> tuple[np.ndarray, pa.Array]:
        """The keys, as an (n, 24) array and as the Arrow column over it."""
        n = len(uids)
        key = np.empty((n, 24), dtype=np.uint8)
        key[:, :8] = np.ascontiguousarray(uids, dtype=np.int64).view(np.uint8).reshape(n, 8)
        key[:, 8:] = tid_bytes
        return key, pa.FixedSizeBinaryArray.from_buffers(pa.binary(24), n, [None, pa.py_buffer(key)])

    def add(self, uids: np.ndarray, seqs: np.ndarray, tids, names) -> None:
        """Rows in the order they came: a (connection, id) already held keeps its first."""
        raw, keys = self._keys(uids, _id_bytes(tids))
        first = _first_of_each(raw)
        if len(self.seq):
            held = ab.to_numpy(ab.fill_null(pc.is_in(keys.take(ab.numbers(first, pa.int64())), value_set=self.key),
                                            False))
            first = first[~held]
        if not len(first):
            return
        at = ab.numbers(first, pa.int64())
        self.conn = np.concatenate([self.conn, np.asarray(uids, dtype=np.int64)[first]])
        self.key = pa.concat_arrays([self.key, keys.take(at)])
        self.seq = np.concatenate([self.seq, np.asarray(seqs, dtype=np.int64)[first]])
        self.name = pa.concat_arrays([self.name, names.take(at).cast(pa.string())])

    def names(self, uids: np.ndarray, seqs: np.ndarray, tids) -> pa.Array:
        """For each (connection, id, seq): the name a Metadata response on the
        connection gave the id before that seq, else null."""
        n = len(tids)
        if not len(self.seq):
            return pa.nulls(n, pa.string())
        pos = ab.to_numpy(ab.fill_null(pc.index_in(self._keys(uids, _id_bytes(tids))[1], value_set=self.key), -1))
        ok = pos >= 0
        ok[ok] = self.seq[pos[ok]] < np.asarray(seqs, dtype=np.int64)[ok]
        return self.name.take(ab.masked(np.where(ok, pos, 0), ok, pa.int64()))

    def keep(self, uids) -> None:
        """Only the rows of the connections in ``uids``."""
        if len(self.seq):
            kept = self.subset(np.fromiter(uids, dtype=np.int64, count=len(uids)))
            self.conn, self.key, self.seq, self.name = kept.conn, kept.key, kept.seq, kept.name

    def subset(self, conns: np.ndarray) -> _ConnIds:
        """The rows of the connections ``conns`` (a frame batch's: what its
        lookups need, a fraction of what a capture's connections named)."""
        ok = np.isin(self.conn, conns)
        if ok.all():
            return self
        out = _ConnIds()
        at = ab.numbers(np.flatnonzero(ok), pa.int64())
        out.conn, out.seq = self.conn[ok], self.seq[ok]
        out.key, out.name = self.key.take(at), self.name.take(at)
        return out

    def to_dict(self) -> dict[int, dict[bytes, tuple[int, str]]]:
        out: dict[int, dict[bytes, tuple[int, str]]] = {}
        for u, k, s, name in zip(self.conn.tolist(), self.key.to_pylist(), self.seq.tolist(), self.name.to_pylist()):
            out.setdefault(u, {})[k[8:]] = (s, name)
        return out

    @classmethod
    def from_dict(cls, d: dict[int, dict[bytes, tuple[int, str]]]) -> _ConnIds:
        c = cls()
        rows = [(u, t, s, name) for u, ids in d.items() for t, (s, name) in ids.items()]
        if rows:
            raw = b"".join(r[1] for r in rows)
            tids = pa.FixedSizeBinaryArray.from_buffers(pa.binary(16), len(rows), [None, pa.py_buffer(raw)])
            c.add(np.array([r[0] for r in rows], dtype=np.int64), np.array([r[2] for r in rows], dtype=np.int64),
                  tids, ab.strings([r[3] for r in rows], pa.string()))
        return c


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
    whole = ~ab.column(walked, "truncated")
    fb = ab.column(walked, "row")[whole]
    fc = ab.column(walked, "codec")[whole].astype(np.int64)
    fs = ab.column(walked, "bytes")[whole]
    fn = ab.column(walked, "records")[whole]
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


_NO_TS = np.iinfo(np.int64).min
_MAX_KEY = 1 << 15


def _ts(ns: np.ndarray) -> pa.Array:
    """Nanoseconds (NO_TS: none) → the tables' microsecond time stamps."""
    ok = ns != _NO_TS
    return masked(ns // 1000, ok, pa.int64()).cast(TS)


class CaptureDecoder:
    """Decodes the frame batches of one capture (:class:`~kafkaproto.capture.FrameBatch`)
    into the report's tables, batch by batch; keeps what spans batches (the
    topic ids Metadata responses named, the waits long polls asked for).

    Every column comes from the batch's columns: the walker read each
    header once (api key and version, correlation id, client id, pairing,
    header size); the bodies are decoded per api key by
    :func:`kafkaproto.arrow.messages` from there, over views of the batch's
    bytes (no frame is copied, no header read twice)."""

    def __init__(self, capture: str, acc: Accounting, record_columns: Sequence[str] | None = None) -> None:
        self.capture = capture
        self.acc = acc
        #: the columns of :func:`kafkaproto.arrow.records` the ``records`` rows
        #: carry (None: all; the others null): ``[]`` parses every record for
        #: the ``record_sets`` counts but copies no key, value or header
        self.record_columns = None if record_columns is None else list(record_columns)
        #: topic id -> name, from the capture's Metadata responses (the
        #: ``topic_ids`` table and the figures name topics with it)
        self.topic_ids: dict[bytes, str] = {}
        # per (connection, topic id) its Metadata responses named: the first
        # response's seq and the name (see _name_or_id), as columns
        self._ids = _ConnIds()
        self._batch_ids: _ConnIds | None = None  # (the rows of the batch's connections, see _bodies)
        # conn << 40 | request seq -> the wait a long-poll request asked for
        self.waits: dict[int, int] = {}
        self._names = self._api_names()
        self._removed = np.zeros((max(APIS) + 1, 64), dtype=bool)
        self._asked = np.zeros((max(APIS) + 1) * 64, dtype=np.uint8)

    def keep_connections(self, uids) -> None:
        """What is kept per connection (the topic ids its Metadata responses
        named, the waits its long polls asked for) let go for every
        connection not in ``uids`` (those still open): a capture followed for
        hours keeps what its open connections need, not its whole history."""
        self._ids.keep(uids)
        self._batch_ids = None
        self.waits = {k: v for k, v in self.waits.items() if (k >> 40) in uids}

    @property
    def conn_ids(self) -> dict[int, dict[bytes, tuple[int, str]]]:
        """conn uid -> {topic id: (seq of the first Metadata response that
        named it on the connection, name)}: what a saved state holds."""
        return self._ids.to_dict()

    @conn_ids.setter
    def conn_ids(self, value: dict[int, dict[bytes, tuple[int, str]]]) -> None:
        self._ids = _ConnIds.from_dict(value)
        self._batch_ids = None

    @staticmethod
    def _api_names() -> pa.Array:
        names = []
        for k in range(max(APIS) + 1):
            try:
                names.append(api_name(k))
            except KafkaProtocolError:
                names.append(f"api{k}")
        return ab.strings(names, pa.string())

    def _api(self, keys: np.ndarray, valid: np.ndarray) -> pa.Array:
        """The api name of each key (``api<key>`` for one without a schema; null where not valid)."""
        n = len(self._names)
        known = valid & (keys >= 0) & (keys < n)
        out = pick(self._names, np.where(known, keys, -1).astype(np.int64))
        odd = np.flatnonzero(valid & ~known)
        if len(odd):  # a key past every schema: named by its number
            texts = out.to_pylist()
            for i in odd.tolist():
                texts[i] = f"api{int(keys[i])}"
            out = ab.strings(texts, pa.string())
        return out

    def _removed_flags(self, keys: np.ndarray, versions: np.ndarray, valid: np.ndarray) -> np.ndarray:
        """Kafka 4.0 removed this (api key, version)?  Asked once per pair the capture holds."""
        t = self._removed
        ok = valid & (keys >= 0) & (keys < t.shape[0]) & (versions >= 0) & (versions < 64)
        pairs = np.unique(keys[ok] * 64 + versions[ok])
        todo = pairs[self._asked[pairs] == 0] if len(pairs) else pairs
        for pv in todo.tolist():
            t[pv // 64, pv % 64] = removed_in_kafka4(pv // 64, pv % 64)
            self._asked[pv] = 1
        out = np.zeros(len(keys), dtype=bool)
        out[ok] = t[keys[ok], versions[ok]]
        return out

    # -- one batch -------------------------------------------------------------
    def batch(self, fb, bodies: np.ndarray | None = None, record_sets: bool = True
              ) -> list[tuple[str, pa.RecordBatch]]:
        """The rows of the tables one frame batch gives, as ``(table, batch)``.

        ``bodies``: which rows' bodies to decode (a boolean per row; None:
        all).  The others keep their header columns, status ``framed`` (or
        ``unpaired``) and null body columns; a reader that asks for fewer
        rows or columns (the Spark data source) decodes no more than it
        gives, plus the rows later ones depend on (Metadata responses for
        topic ids, long-poll requests for their waits).  ``record_sets``:
        False leaves out the ``records`` and ``record_sets`` rows (the
        record batches are not walked)."""
        r = fb.rows
        n = len(r)
        if not n:
            return []
        keys = r["api_key"].astype(np.int64)
        versions = r["api_version"].astype(np.int64)
        header_sizes = r["header_size"]
        has = (r["flags"] & 1) != 0
        is_req = r["direction"] == 0
        req_idx = np.flatnonzero(is_req)
        resp_idx = np.flatnonzero(~is_req)
        uids = fb.uids()
        seqs = r["seq"]
        self._batch_ids = None
        status = r["status"].astype(np.int8)  # 0 framed, 1 unpaired; then 2 decoded, 3 undecodable
        sizes = r["end"] - fb.starts + 4
        error: dict[int, str] = {}  # row -> error text (few)
        trailing = np.full(n, -1, dtype=np.int64)
        topics: list = [None] * 0  # per-row topic lists, as (rows, list array) pieces
        topic_parts: list[tuple[np.ndarray, pa.Array]] = []
        code_parts: list[tuple[np.ndarray, pa.Array]] = []
        software: list[tuple[np.ndarray, pa.Array, pa.Array]] = []
        blobs: list = []
        wait_ms = np.full(n, -1, dtype=np.int64)
        decoded = np.zeros(n, dtype=bool)  # a body was decoded (ok or not) for the row
        del topics

        def groups(idx: np.ndarray, which: list[int] | None = None):
            k = keys[idx]
            ok = has[idx] if bodies is None else has[idx] & bodies[idx]
            for key in np.unique(k[ok]).tolist():
                if which is not None and key not in which:
                    continue
                yield key, idx[ok & (k == key)]

        def decode(key: int, rows: np.ndarray, kind: str):
            frames = fb.bodies(rows)
            try:
                # the walker read each header: the bodies are decoded from where it
                # ended (a row it could not read, header_size -1, is read again)
                msgs = karrow.messages(frames, key, kind, versions[rows], header_size=header_sizes[rows])
            except KafkaProtocolError as exc:  # an api key without a schema
                text = str(exc)
                for i in rows.tolist():
                    error[i] = text
                decoded[rows] = True
                return None
            decoded[rows] = True
            err = msgs.field("error")
            if err.null_count < len(err):
                for j in np.flatnonzero(ab.valid(err)).tolist():
                    error[int(rows[j])] = err[j].as_py()
            tb = msgs.field("trailing_bytes")
            trailing[rows] = ab.to_numpy(ab.fill_null(tb, -1))
            return msgs

        # Metadata responses first: they name the topic ids of what follows them
        for key, rows in groups(resp_idx, [METADATA]):
            msgs = decode(key, rows, "response")
            if msgs is not None:
                self._bodies(key, msgs, rows, uids, seqs, topic_parts, code_parts, blobs, "fetch", None)
        for key, rows in groups(req_idx):
            msgs = decode(key, rows, "request")
            if msgs is None:
                continue
            self._bodies(key, msgs, rows, uids, seqs, topic_parts, None, blobs, "produce", software)
            field = WAITS.get(key)
            if field is not None and msgs.type.get_field_index(field) >= 0:
                w = msgs.field(field)
                ok = ab.valid(w)
                if ok.any():
                    wv = ab.to_numpy(ab.fill_null(w, 0))
                    self.waits.update(zip(((u << 40) | s for u, s in zip(uids[rows[ok]].tolist(),
                                                                          seqs[rows[ok]].tolist())),
                                          wv[ok].tolist()))
        for key, rows in groups(resp_idx):
            if key == METADATA:
                continue
            msgs = decode(key, rows, "response")
            if msgs is not None:
                self._bodies(key, msgs, rows, uids, seqs, topic_parts, code_parts, blobs, "fetch", None)
            if key in WAITS and self.waits:
                rs = r["request_seq"][rows]
                waits = self.waits
                got = [waits.pop((u << 40) | q, -1) if q >= 0 else -1
                       for u, q in zip(uids[rows].tolist(), rs.tolist())]
                wait_ms[rows] = got
        # requests without a header, unpaired responses: nothing to decode them as
        for i in np.flatnonzero(is_req & ~has).tolist():
            error[i] = "frame shorter than a request header"
        for i in np.flatnonzero(status == 1).tolist():
            error.setdefault(i, "no request with this correlation id in the capture")
        # accounting: framed frames are now decoded or undecodable
        bad = np.zeros(n, dtype=bool)
        if error:
            bad[np.fromiter(error, dtype=np.int64, count=len(error))] = True
        framed = status == 0
        ok_rows = framed & ~bad
        bad_rows = framed & bad
        acc = self.acc
        if ok_rows.any():
            acc.move("framed", "decoded", int(sizes[ok_rows].sum()), int(ok_rows.sum()))
        if bad_rows.any():
            acc.move("framed", "undecodable", int(sizes[bad_rows].sum()), int(bad_rows.sum()))
        status[ok_rows] = 2
        status[bad_rows] = 3

        base = {
            "capture": repeat(self.capture, n),
            **{k: fb.column(k) for k in ("conn", "seq", "ts", "client", "server", "api_key")},
            "api": self._api(keys, has),
            **{k: fb.column(k) for k in ("api_version", "correlation_id", "client_id", "size")},
            "removed_in_kafka4": ab.bools(self._removed_flags(keys, versions, has)),
            "status": pick(_STATUS_TEXTS, status),
            "error": _sparse_errors(n, error),
        }
        topic_col = _scatter_lists(n, topic_parts, pa.list_(pa.string()))
        out = []
        if len(req_idx):
            take = ab.numbers(req_idx, pa.int64())
            cols = {k: v.take(take) for k, v in base.items()}
            cols["topics"] = topic_col.take(take)
            name, version = _scatter_software(n, software)
            cols["software_name"] = name.take(take)
            cols["software_version"] = version.take(take)
            cols["trailing_bytes"] = masked(trailing[req_idx], trailing[req_idx] >= 0, pa.int32())
            out.append(("requests", table_batch("requests", cols, len(req_idx))))
        if len(resp_idx):
            take = ab.numbers(resp_idx, pa.int64())
            cols = {k: v.take(take) for k, v in base.items()}
            rq = r["request_seq"][resp_idx]
            cols["request_seq"] = masked(rq, rq >= 0, pa.int64())
            rts = r["request_ts"][resp_idx]
            ts = r["ts"][resp_idx]
            lat_ok = (rts != _NO_TS) & (ts != _NO_TS)
            cols["latency_us"] = masked((ts - np.where(lat_ok, rts, 0)) // 1000, lat_ok, pa.int64())
            w = wait_ms[resp_idx]
            cols["wait_ms"] = masked(w, w >= 0, pa.int32())
            cols["error_codes"] = _scatter_lists(n, code_parts, pa.list_(pa.int16())).take(take)
            cols["trailing_bytes"] = masked(trailing[resp_idx], trailing[resp_idx] >= 0, pa.int32())
            out.append(("responses", table_batch("responses", cols, len(resp_idx))))
        if blobs and record_sets:
            out += self._record_sets(blobs, base)
        return out

    def _bodies(self, key: int, msgs, rows: np.ndarray, uids, seqs, topic_parts, code_parts, blobs, source,
                software):
        """Per api key: topics, error codes, software, record sets."""
        if key == METADATA and source == "fetch":
            names, nrows = _path(msgs, ("topics", "name"))
            ids, _ = _path(msgs, ("topics", "topic_id"))
            # the topics a response names by a name and an id that is not all zeros
            lengths = pc.binary_length(names)
            named = pc.and_(ab.fill_null(pc.greater(lengths, ab.scalar(0, lengths.type)), False), _real_ids(ids))
            keep = np.flatnonzero(ab.to_numpy(named))
            if len(keep):
                at = ab.numbers(keep, pa.int64())
                names, tids = names.take(at).cast(pa.string()), ids.take(at)
                # topic_ids: each id's last name (a few ids, named over and over)
                last = _last_of_each(_id_bytes(tids))
                self.topic_ids.update(zip(tids.take(ab.numbers(last, pa.int64())).to_pylist(),
                                          names.take(ab.numbers(last, pa.int64())).to_pylist()))
                i = rows[nrows[keep]]
                self._ids.add(uids[i], seqs[i], tids, names)
                self._batch_ids = None

        def lookup(tids, j: np.ndarray):
            if self._batch_ids is None:  # the rows of this batch's connections, once a batch
                self._batch_ids = self._ids.subset(np.unique(uids))
            i = rows[j]
            return self._batch_ids.names(uids[i], seqs[i], tids)

        tl = _topic_names(msgs, key, lookup)
        if tl.null_count < len(tl):
            lengths = pc.list_value_length(tl)
            named = ab.fill_null(pc.greater(lengths, ab.scalar(0, lengths.type)), False)
            topic_parts.append((rows, pc.if_else(named, tl, ab.scalar(None, tl.type))))
        if code_parts is not None:
            code_parts.append((rows, _nonzero_error_codes(msgs, key)))
        if key == API_VERSIONS and software is not None:
            software.append((rows, msgs.field("client_software_name"), msgs.field("client_software_version")))
        if key == PRODUCE and source == "produce":
            (tn, _), (ti, tr) = (_path(msgs, ("topic_data", a)) for a in ("name", "topic_id"))
            tnames = _name_or_id(tn, ti, lookup, tr)
            blob, brow = _path(msgs, ("topic_data", "partition_data", "records"))
            part, _ = _path(msgs, ("topic_data", "partition_data", "index"))
            _, trow = _path(msgs, ("topic_data",))  # rows of each topic element
            per_topic = pc.list_value_length(_path(msgs, ("topic_data",))[0].field("partition_data")) \
                if len(trow) else ab.numbers([], pa.int64())
            topic = tnames.take(ab.numbers(np.repeat(np.arange(len(trow)), ab.to_numpy(ab.fill_null(per_topic, 0))),
                                           pa.int64()))
            blobs.append(("produce", rows[brow], topic, part, blob))
        elif key == FETCH and source == "fetch":
            (tn, _), (ti, tr) = (_path(msgs, ("responses", a)) for a in ("topic", "topic_id"))
            tnames = _name_or_id(tn, ti, lookup, tr)
            blob, brow = _path(msgs, ("responses", "partitions", "records"))
            part, _ = _path(msgs, ("responses", "partitions", "partition_index"))
            tops, trow = _path(msgs, ("responses",))
            per_topic = pc.list_value_length(tops.field("partitions")) if len(trow) else ab.numbers([], pa.int64())
            topic = tnames.take(ab.numbers(np.repeat(np.arange(len(trow)), ab.to_numpy(ab.fill_null(per_topic, 0))),
                                           pa.int64()))
            blobs.append(("fetch", rows[brow], topic, part, blob))

    def _record_sets(self, blobs, base) -> list[tuple[str, pa.RecordBatch]]:
        out = []
        for source, rows, topic, part, blob in blobs:
            # null or empty: a partition with nothing to produce or fetch
            lengths = ab.to_numpy(ab.fill_null(pc.binary_length(blob), 0))
            ok = lengths > 0
            keep = None if ok.all() else np.flatnonzero(ok)
            if keep is not None:
                lengths = lengths[keep]
                # the kept blobs as views of their bytes (a take would copy every record set)
                at = ab.numbers(keep, pa.int64())
                rows, topic, part, blob = rows[keep], topic.take(at), part.take(at), \
                    _blob_views(blob, keep)
            m = len(blob)
            if not m:
                continue
            recs, walked = karrow.records(blob, topic=topic, partition=part, batches=True,
                                          columns=self.record_columns)
            rec_row = ab.column(recs, "row")
            set_err = [None] * m
            if recs.column("error").null_count != len(rec_row):
                for r, e in zip(rec_row.tolist(), recs.column("error").to_pylist()):
                    if e is not None:
                        set_err[r] = e
            k = len(rec_row)
            rt = ab.numbers(rows[rec_row], pa.int64())
            have = recs.schema.names
            rcols = {
                **{c: recs.column(c) if c in have else None
                   for c in ("key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers")},
                "source": repeat(source, k),
                "capture": repeat(self.capture, k), "conn": base["conn"].take(rt), "seq": base["seq"].take(rt),
                "client_id": base["client_id"].take(rt), "error": recs.column("error"),
            }
            out.append(("records", table_batch("records", rcols, k)))
            srow, codecs, nb, nrec, nbytes = record_set_summary(walked, lengths)
            errs = [set_err[j] for j in srow.tolist()] if any(e is not None for e in set_err) else None
            st = ab.numbers(srow, pa.int64())
            take = ab.numbers(rows[srow], pa.int64())
            ms = len(srow)
            scols = {
                "capture": repeat(self.capture, ms), "conn": base["conn"].take(take), "seq": base["seq"].take(take),
                "ts": base["ts"].take(take), "source": repeat(source, ms),
                "client_id": base["client_id"].take(take), "api_version": base["api_version"].take(take),
                "topic": topic.take(st), "partition": part.take(st), "codec": ab.strings(codecs, pa.string()),
                "batches": ab.numbers(nb, pa.int32()), "records": ab.numbers(nrec, pa.int64()),
                "bytes": ab.numbers(nbytes, pa.int64()),
                "error": ab.strings(errs, pa.large_string()) if errs is not None else None,
            }
            out.append(("record_sets", table_batch("record_sets", scols, ms)))
        return out

    def unanswered(self, fb) -> list[tuple[str, pa.RecordBatch]]:
        """Rows of the ``unanswered`` table: the batch's requests whose
        connection ended before their response came."""
        items = fb.unanswered
        if not items:
            return []
        n = len(items)
        conns, corr, keys, versions, ts, seqs, client = (list(x) for x in zip(*items))
        k = np.array(keys, dtype=np.int64)
        cols = {
            "capture": repeat(self.capture, n),
            "conn": ab.numbers([c.uid for c in conns], pa.int64()),
            "seq": ab.nullable(seqs, pa.int64()),
            "ts": ab.nullable([None if t is None else t // 1000 for t in ts], pa.int64()).cast(TS),
            "client": ab.strings([c.client for c in conns], pa.string()),
            "server": ab.strings([c.server for c in conns], pa.string()),
            "api_key": ab.nullable(keys, pa.int16()),
            "api": self._api(k, np.ones(n, dtype=bool)),
            "api_version": ab.nullable(versions, pa.int16()),
            "correlation_id": ab.nullable(corr, pa.int32()),
            "client_id": ab.strings([fb.clients[c] if c >= 0 else None for c in client], pa.string()),
        }
        return [("unanswered", table_batch("unanswered", cols, n))]

    def topic_id_rows(self) -> list[tuple[str, pa.RecordBatch]]:
        """Rows of the ``topic_ids`` table: every topic id the capture's
        Metadata responses named (so far)."""
        ids = self.topic_ids
        if not ids:
            return []
        items = sorted((_uuid_text(k), v) for k, v in ids.items())
        cols = {"capture": repeat(self.capture, len(items)), "topic_id": ab.strings([k for k, _ in items], pa.string()),
                "topic": ab.strings([v for _, v in items], pa.large_string())}
        return [("topic_ids", table_batch("topic_ids", cols, len(items)))]


_STATUS_TEXTS = ("framed", "unpaired", "decoded", "undecodable")


def _blob_views(blob, idx: np.ndarray):
    """The values ``blob[idx]`` of a (large) binary column as a binary_view
    column over the same bytes: nothing is copied."""
    width = np.int64 if pa.types.is_large_binary(blob.type) else np.int32
    bufs = blob.buffers()
    offsets = np.frombuffer(bufs[1], dtype=width)[blob.offset:blob.offset + len(blob) + 1].astype(np.int64)
    data = bufs[2] if bufs[2] is not None else pa.py_buffer(b"")
    return binary_views(data, offsets[idx], offsets[idx + 1])


def _sparse_errors(n: int, errors: dict[int, str]) -> pa.Array:
    """The error column: null but at the rows in ``errors``."""
    if not errors:
        return pa.nulls(n, pa.large_string())
    idx = np.fromiter(sorted(errors), dtype=np.int64, count=len(errors))
    data = [errors[int(i)].encode("utf-8") for i in idx]
    lengths = np.zeros(n, dtype=np.int64)
    lengths[idx] = [len(t) for t in data]
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    valid = np.zeros(n, dtype=bool)
    valid[idx] = True
    return pa.Array.from_buffers(pa.large_string(), n, [pa.py_buffer(np.packbits(valid, bitorder="little")),
                                                         pa.py_buffer(offsets), pa.py_buffer(b"".join(data))],
                                 null_count=n - len(idx))


def _scatter_lists(n: int, parts: list[tuple[np.ndarray, pa.Array]], typ) -> pa.Array:
    """A list column of ``n`` rows: ``parts`` give (rows, list values) for some rows; the rest null."""
    if not parts:
        return pa.nulls(n, typ)
    rows = np.concatenate([p[0] for p in parts])
    vals = pa.concat_arrays([p[1].cast(typ) for p in parts])
    # position of each row in the concatenation; rows without a part: null
    where = np.full(n, -1, dtype=np.int64)
    where[rows] = np.arange(len(rows))
    ok = where >= 0
    return vals.take(masked(np.where(ok, where, 0), ok, pa.int64()))


def _scatter_software(n: int, parts) -> tuple[pa.Array, pa.Array]:
    if not parts:
        return pa.nulls(n, pa.string()), pa.nulls(n, pa.string())
    rows = np.concatenate([p[0] for p in parts])
    names = pa.concat_arrays([p[1].cast(pa.string()) for p in parts])
    vers = pa.concat_arrays([p[2].cast(pa.string()) for p in parts])
    where = np.full(n, -1, dtype=np.int64)
    where[rows] = np.arange(len(rows))
    ok = where >= 0
    take = masked(np.where(ok, where, 0), ok, pa.int64())
    return names.take(take), vers.take(take)


def table_batch(table: str, cols: dict[str, object], n: int) -> pa.RecordBatch:
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
        "capture": repeat(capture, n),
        "ledger": ab.strings([r["ledger"] for r in rows] + ["totals"], pa.string()),
        "reason": ab.strings([r["reason"] for r in rows] + [None], pa.string()),
        "count": ab.nullable([r["count"] for r in rows] + [None], pa.int64()),
        "bytes": ab.nullable([r["bytes"] for r in rows] + [None], pa.int64()),
        "info": ab.strings([None] * len(rows) + [json.dumps(acc.to_dict())], pa.string()),
    }
    return table_batch("accounting", cols, n)


def table_schema(table: str) -> pa.Schema:
    """The Arrow schema of one of :data:`TABLE_COLUMNS`' tables."""
    return _SCHEMAS[table]


_SCHEMAS = {t: pa.schema([ROW_SCHEMA.field(c) for c in cols]) for t, cols in TABLE_COLUMNS.items()}


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
