"""Frames as columns: what the capture walker gives, batch by batch.

A :class:`FrameBatch` holds the frames the walker (capture.walker._scan) gathered:
one fixed-size row per frame (its time, connection, direction, stream
offset, api key and version, correlation id, client id, number in its
connection, the request a response answers, header size, flags) and the
frames' bytes back to back in one buffer.  Nothing per frame is a Python
object: :meth:`FrameBatch.to_arrow` gives the frame table as Arrow columns
built from those buffers, :meth:`FrameBatch.bodies` the frames as a binary
view column over the same bytes (no copy), and every consumer -- the
decoded tables of the report, ``inspect``, the Spark data sources -- starts
from there.  :meth:`FrameBatch.frames` gives :class:`CapturedFrame` objects
for code that wants one object per frame.

:func:`read_frame_batches` reads a capture (pcap, pcapng, a folder of
rolled files, tap tables, raw request streams) into frame batches.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from .._impl import load as _load
from .objects import REQUEST, RESPONSE, CapturedFrame, Connection, RequestInfo

_sink = _load("capture.walker._sink")

__all__ = ["FLAGS", "FRAME_FIELDS", "FrameBatch", "binary_views", "frame_schema", "take_batch"]

#: frame flags (the ``flags`` column): bit -> name
FLAGS = dict(_sink.FLAGS)
_FL_HEADER = FLAGS["header"]
_STATUS = _sink.STATUS
_NO_TS = _sink.NO_TS
#: rows per batch, bytes per batch (whichever comes first)
BATCH_ROWS = 65536
BATCH_BYTES = 32 << 20

#: the frame table's columns
FRAME_FIELDS = ("conn", "seq", "ts", "client", "server", "direction", "offset", "api_key", "api_version",
                "correlation_id", "client_id", "size", "status", "request_seq", "latency_us", "flags", "frame")


def frame_schema():
    """The Arrow schema of :meth:`FrameBatch.to_arrow` (the ``frames`` table)."""
    import pyarrow as pa

    return pa.schema([
        ("conn", pa.int64()),  # the connection's uid (Connection.uid: the same however the capture is read)
        ("seq", pa.int64()),  # the frame's number in its connection (both directions)
        ("ts", pa.timestamp("us", tz="UTC")),
        ("client", pa.string()),  # the client's address and port
        ("server", pa.string()),
        ("direction", pa.string()),  # request / response
        ("offset", pa.int64()),  # stream offset of the size prefix in its direction
        ("api_key", pa.int16()),  # a response: its request's (null: unpaired)
        ("api_version", pa.int16()),
        ("correlation_id", pa.int32()),
        ("client_id", pa.string()),  # a response: its request's
        ("size", pa.int64()),  # bytes on the wire, size prefix included
        ("status", pa.string()),  # framed / unpaired
        ("request_seq", pa.int64()),  # a response: the seq of the request it answers
        ("latency_us", pa.int64()),  # a response: microseconds since its request
        ("flags", pa.int16()),  # FLAGS bits
        ("frame", pa.large_binary()),  # the frame, size prefix removed
    ])


class FrameBatch:
    """Frames gathered by the walker (see the module's text).

    ``rows``: a numpy array of ``capture.walker._sink.ROW_DTYPE``; ``data``: the
    frames' bytes, any object with the buffer protocol (row i's are
    ``memoryview(data)[starts[i]:rows["end"][i]]``);
    ``conns``: the Connection objects the rows name, by the rows' ``conn``
    index (a batch's own: the same connection may have another index in
    another batch); ``clients``: client ids, by the rows' ``client`` index;
    ``unanswered``: requests whose connection ended before their response
    came, as ``(Connection, correlation id, api key, api version, ts, seq,
    client index)``.
    """

    __slots__ = ("rows", "data", "conns", "clients", "unanswered", "_starts", "_buffer", "_uids", "_cols")

    def __init__(self, rows, data, conns: Sequence[Connection], clients: Sequence[str],
                 unanswered: list | None = None) -> None:
        self.rows = rows
        self.data = data
        self.conns = conns
        self.clients = clients
        self.unanswered = unanswered or []
        self._starts = None
        self._buffer = None
        self._uids = None
        self._cols: dict = {}

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def nbytes(self) -> int:
        return len(self.data)

    @property
    def starts(self) -> np.ndarray:
        """Where each frame's bytes start in :attr:`data` (int64)."""
        if self._starts is None:
            ends = self.rows["end"]
            starts = np.empty(len(ends), dtype=np.int64)
            if len(ends):
                starts[0] = 0
                starts[1:] = ends[:-1]
            self._starts = starts
        return self._starts

    def frame(self, i: int) -> memoryview:
        """Row ``i``'s frame bytes (a view of :attr:`data`)."""
        return memoryview(self.data)[int(self.starts[i]):int(self.rows["end"][i])]

    # -- columns ---------------------------------------------------------------
    def buffer(self):
        """:attr:`data` as a pyarrow buffer (no copy)."""
        if self._buffer is None:
            import pyarrow as pa

            self._buffer = pa.py_buffer(self.data)
        return self._buffer

    def uids(self) -> np.ndarray:
        """Each row's connection uid (int64)."""
        if self._uids is None:
            table = np.array([c.uid for c in self.conns], dtype=np.int64)
            self._uids = table[self.rows["conn"]]
        return self._uids

    def bodies(self, idx=None, offset=None):
        """The frames (or those at rows ``idx``) as a ``binary_view`` column over
        :attr:`data`: no byte is copied.  ``offset``: a per-row number of bytes
        to leave out at the start of each (e.g. the header size)."""

        starts = self.starts
        ends = self.rows["end"]
        if idx is not None:
            starts, ends = starts[idx], ends[idx]
        if offset is not None:
            starts = starts + offset
        return binary_views(self.buffer(), starts, ends)

    def column(self, name: str):
        """One column of the frame table (:func:`frame_schema`), built once per
        batch: the frame table and the decoded tables share it."""
        got = self._cols.get(name)
        if got is None:
            got = self._cols[name] = self._build(name)
        return got

    def _build(self, name: str):
        import pyarrow as pa

        from ..arrow.buffers import masked, numbers, pick

        r = self.rows
        if name == "conn":
            return numbers(self.uids(), pa.int64())
        if name in ("seq", "offset"):
            return numbers(r[name], pa.int64())
        if name == "ts":
            ts = r["ts"]
            return masked(ts // 1000, ts != _NO_TS, pa.int64()).cast(pa.timestamp("us", tz="UTC"))
        if name in ("client", "server"):
            return pick([getattr(c, name) for c in self.conns], r["conn"])
        if name == "direction":
            return pick([REQUEST, RESPONSE], r["direction"])
        if name in ("api_key", "api_version"):
            return masked(r[name], (r["flags"] & _FL_HEADER) != 0, pa.int16())
        if name == "correlation_id":
            return masked(r["correlation_id"], ((r["flags"] & _FL_HEADER) != 0) | (r["direction"] != 0), pa.int32())
        if name == "client_id":
            return pick(self.clients, r["client"])
        if name == "size":
            return numbers(r["end"] - self.starts + 4, pa.int64())
        if name == "status":
            return pick(list(_STATUS), r["status"])
        if name == "request_seq":
            return masked(r["request_seq"], r["request_seq"] >= 0, pa.int64())
        if name == "latency_us":
            ts = r["ts"]
            ok = (ts != _NO_TS) & (r["request_ts"] != _NO_TS) & (r["direction"] != 0)
            return masked((ts - r["request_ts"]) // 1000, ok, pa.int64())
        if name == "flags":
            return numbers(r["flags"], pa.int16())
        if name == "frame":
            offsets = np.empty(len(r) + 1, dtype=np.int64)
            offsets[0] = 0
            offsets[1:] = r["end"]
            return pa.Array.from_buffers(pa.large_binary(), len(r), [None, pa.py_buffer(offsets), self.buffer()])
        raise KeyError(name)

    def to_arrow(self):
        """The frame table (:func:`frame_schema`) as one record batch."""
        import pyarrow as pa

        schema = frame_schema()
        return pa.RecordBatch.from_arrays([self.column(f.name) for f in schema], schema=schema)

    # -- objects ---------------------------------------------------------------
    def frames(self) -> Iterator[CapturedFrame]:
        """Each row as a :class:`CapturedFrame` (one object per frame: for code
        that wants them; the columns are the fast way)."""
        r = self.rows
        starts = self.starts.tolist()
        cols = {name: r[name].tolist() for name in ("ts", "offset", "seq", "request_seq", "request_ts", "end", "conn",
                                                      "correlation_id", "client", "api_key", "api_version",
                                                      "direction", "status", "flags")}
        data = memoryview(self.data)
        conns, clients = self.conns, self.clients
        for i in range(len(r)):
            flags = cols["flags"][i]
            ts = cols["ts"][i]
            ts = None if ts == _NO_TS else ts
            conn = conns[cols["conn"][i]]
            frame = bytes(data[starts[i]:cols["end"][i]])
            ci = cols["client"][i]
            client_id = clients[ci] if ci >= 0 else None
            if cols["direction"][i] == 0:
                if not flags & _FL_HEADER:
                    f = CapturedFrame(ts, conn, REQUEST, cols["offset"][i], frame, seq=cols["seq"][i], flags=flags)
                else:
                    info = RequestInfo(cols["api_key"][i], cols["api_version"][i], ts, client_id, cols["seq"][i])
                    f = CapturedFrame(ts, conn, REQUEST, cols["offset"][i], frame, info.api_key, info.api_version,
                                      cols["correlation_id"][i], None, "framed", client_id, info, cols["seq"][i],
                                      flags)
            elif cols["status"][i]:
                f = CapturedFrame(ts, conn, RESPONSE, cols["offset"][i], frame, None, None, cols["correlation_id"][i],
                                  None, "unpaired", seq=cols["seq"][i], flags=flags)
            else:
                rts = cols["request_ts"][i]
                rts = None if rts == _NO_TS else rts
                info = RequestInfo(cols["api_key"][i], cols["api_version"][i], rts, client_id, cols["request_seq"][i])
                f = CapturedFrame(ts, conn, RESPONSE, cols["offset"][i], frame, info.api_key, info.api_version,
                                  cols["correlation_id"][i], rts, "framed", client_id, info, cols["seq"][i], flags)
            yield f

    def __repr__(self) -> str:
        return f"FrameBatch({len(self)} frames, {self.nbytes} bytes)"


def binary_views(buffer, starts: np.ndarray, ends: np.ndarray):
    """A ``binary_view`` column of ``buffer[starts[i]:ends[i]]`` (values up to 12
    bytes inline, longer ones by reference: the view layout of the Arrow spec)."""
    import pyarrow as pa

    n = len(starts)
    lengths = (ends - starts).astype(np.int32)
    views = np.zeros((n, 4), dtype=np.int32)
    views[:, 0] = lengths
    long = lengths > 12
    starts32 = starts.astype(np.int64)
    if long.any():
        raw = np.frombuffer(buffer, dtype=np.uint8)
        li = np.flatnonzero(long)
        # prefix: the first 4 bytes; buffer index 0; offset
        s = starts32[li]
        prefix = raw[s[:, None] + np.arange(4)].copy().view(np.int32).reshape(-1)
        views[li, 1] = prefix
        views[li, 2] = 0
        if len(buffer) >= (1 << 31):
            raise ValueError("a frame batch's bytes past 2 GiB cannot be viewed")
        views[li, 3] = s.astype(np.int32)
    short = np.flatnonzero(~long)
    if len(short):
        raw = np.frombuffer(buffer, dtype=np.uint8)
        inline = views.view(np.uint8).reshape(n, 16)
        for k in range(12):
            sel = short[lengths[short] > k]
            if not len(sel):
                break
            inline[sel, 4 + k] = raw[starts32[sel] + k]
    return pa.Array.from_buffers(pa.binary_view(), n, [None, pa.py_buffer(views), buffer])


def take_batch(sink) -> FrameBatch:
    """What a FrameSink gathered (and the requests it saw left unanswered), as a FrameBatch; the sink starts afresh."""
    rows, data, conns = sink.take()
    unanswered, sink.unanswered = sink.unanswered, []
    return FrameBatch(rows, data, conns, sink.clients, unanswered)
