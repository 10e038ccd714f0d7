"""Frames as Arrow tables: the tap's capture format, and the shape in which
any capture (pcap, pcapng, tap) is handed to Arrow/Spark.

One row per frame (size prefix removed), columns :data:`FRAME_FIELDS`.
Files are Arrow IPC streams (``.arrows``: readable up to the last batch
even if the writer was killed) or Parquet (``.parquet``: valid once closed),
rolled when a file passes ``roll_bytes``.  Needs pyarrow (the ``capture``
extra).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from pathlib import Path

from ..accounting import Accounting
from ..frames import take_batch
from ..objects import CapturedFrame, Connection
from .pcap import TS_MAX

_NO_TS = -(1 << 63)

__all__ = ["END", "FRAME_FIELDS", "FrameTableWriter", "frame_schema", "frames_to_table", "iter_table_frames",
           "TableFrames", "table_frame_batches", "table_files"]

FRAME_FIELDS = ("ts", "conn", "client", "server", "direction", "offset", "api_key", "api_version",
                "correlation_id", "latency_us", "frame", "rewritten", "size", "forwarded")
#: the ``direction`` of the row that says a connection ended (:meth:`FrameTableWriter.end`)
END = "end"
#: columns that files written before them lack (read as null)
LATER_FIELDS = ("size", "forwarded")
SUFFIXES = (".arrows", ".arrow", ".parquet")


def _pa():
    try:
        import pyarrow
    except ImportError as exc:  # pragma: no cover - pyarrow is in the capture extra
        raise ImportError("kafkaproto capture tables need pyarrow: pip install 'kafkaproto[capture]'") from exc
    return pyarrow


def frame_schema():
    pa = _pa()
    return pa.schema([
        ("ts", pa.timestamp("us", tz="UTC")),
        ("conn", pa.int64()),
        ("client", pa.string()),
        ("server", pa.string()),
        ("direction", pa.string()),
        ("offset", pa.int64()),
        ("api_key", pa.int16()),
        ("api_version", pa.int16()),
        ("correlation_id", pa.int32()),
        ("latency_us", pa.int64()),
        ("frame", pa.binary()),
        ("rewritten", pa.binary()),
        # a frame forwarded without being kept (over the tap's memory budget):
        # ``frame`` holds its first bytes, ``size`` what its prefix claims and
        # ``forwarded`` the bytes of it that went (null for frames kept whole)
        ("size", pa.int32()),
        ("forwarded", pa.int64()),
    ])


def _columns() -> dict[str, list]:
    return {name: [] for name in FRAME_FIELDS}


def _append(cols: dict[str, list], f: CapturedFrame, rewritten: bytes | None = None, size: int | None = None,
            forwarded: int | None = None) -> None:
    cols["ts"].append(None if f.ts is None else f.ts // 1000)
    cols["conn"].append(f.conn.id)
    cols["client"].append(f.conn.client)
    cols["server"].append(f.conn.server)
    cols["direction"].append(f.direction)
    cols["offset"].append(f.offset)
    cols["api_key"].append(f.api_key)
    cols["api_version"].append(f.api_version)
    cols["correlation_id"].append(f.correlation_id)
    lat = f.latency_ns
    cols["latency_us"].append(None if lat is None else lat // 1000)
    cols["frame"].append(f.frame)
    cols["rewritten"].append(rewritten)
    cols["size"].append(size)
    cols["forwarded"].append(forwarded)


def frames_to_table(frames: Iterable[CapturedFrame]):
    """A pyarrow Table of the frames (one row each)."""
    pa = _pa()
    cols = _columns()
    for f in frames:
        _append(cols, f)
    return pa.table(cols, schema=frame_schema())


class FrameTableWriter:
    """Appends frames to ``out_dir/frames-<time>-<n>.arrows`` (or ``.parquet``),
    starting a new file once one passes ``roll_bytes``.  A batch is written
    every ``batch_rows`` frames or ``flush_seconds`` (checked on each write
    and by :meth:`flush`); ``listener`` is handed each record batch as it is
    written (a live report follows the frames so, :class:`~kafkaproto.report.live.FrameFeed`)."""

    def __init__(self, out_dir, *, fmt: str = "arrow", roll_bytes: int = 64 << 20, batch_rows: int = 512,
                 flush_seconds: float = 1.0, listener=None) -> None:
        if fmt not in ("arrow", "parquet"):
            raise ValueError(f"format must be 'arrow' or 'parquet', not {fmt!r}")
        self.pa = _pa()
        self.schema = frame_schema()
        self.dir = Path(out_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.fmt = fmt
        self.roll_bytes = roll_bytes
        self.batch_rows = batch_rows
        self.flush_seconds = flush_seconds
        self.listener = listener
        self.stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        self.files: list[Path] = []
        self.rows = 0
        self._cols = _columns()
        self._pending = 0
        self._pending_bytes = 0
        self._last_flush = time.monotonic()
        self._writer = None
        self._sink = None
        self._file_bytes = 0

    def write(self, f: CapturedFrame, rewritten: bytes | None = None, *, size: int | None = None,
              forwarded: int | None = None) -> None:
        """One frame's row; ``size`` and ``forwarded`` for a frame not kept
        (``f.frame`` is then its first bytes only)."""
        _append(self._cols, f, rewritten, size, forwarded)
        self._added(len(f.frame) + (len(rewritten) if rewritten else 0))

    def end(self, conn: Connection, ts: int | None = None) -> None:
        """The row that says connection ``conn`` ended (its client or its
        broker closed it) at ``ts`` (nanoseconds): ``direction`` ``"end"``,
        no frame.  A reader lets the connection go there: its requests still
        waiting are unanswered rows, and a reader that follows the folder
        keeps nothing of it.  A connection cut because the tap stopped gets
        none (the tap stopped, not the connection)."""
        row = {"ts": None if ts is None else ts // 1000, "conn": conn.id, "client": conn.client,
               "server": conn.server, "direction": END}
        for name in FRAME_FIELDS:
            self._cols[name].append(row.get(name))
        self._added(0)

    def _added(self, nbytes: int) -> None:
        """A row of ``nbytes`` of frames was appended: a batch written once it is due."""
        self._pending += 1
        self._pending_bytes += nbytes + 64
        if (self._pending >= self.batch_rows or self._file_bytes + self._pending_bytes >= self.roll_bytes
                or time.monotonic() - self._last_flush >= self.flush_seconds):
            self.flush()

    def flush(self) -> None:
        self._last_flush = time.monotonic()
        if not self._pending:
            return
        batch = self.pa.record_batch(self._cols, schema=self.schema)
        self._cols = _columns()
        self.rows += self._pending
        self._pending = 0
        self._pending_bytes = 0
        if self._writer is None:
            self._open()
        if self.fmt == "arrow":
            self._writer.write_batch(batch)
            self._sink.flush()
            self._file_bytes = self._sink.tell()
        else:
            self._writer.write_batch(batch)
            self._file_bytes += batch.nbytes
        if self.listener is not None:
            self.listener(batch)
        if self._file_bytes >= self.roll_bytes:
            self._close_file()

    def _open(self) -> None:
        n = len(self.files) + 1
        suffix = ".arrows" if self.fmt == "arrow" else ".parquet"
        path = self.dir / f"frames-{self.stamp}-{os.getpid()}-{n:05d}{suffix}"
        self.files.append(path)
        self._file_bytes = 0
        if self.fmt == "arrow":
            self._sink = open(path, "wb")
            self._writer = self.pa.ipc.new_stream(self._sink, self.schema)
        else:
            import pyarrow.parquet as pq

            self._writer = pq.ParquetWriter(str(path), self.schema, compression="zstd")

    def _close_file(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self._sink is not None:
            self._sink.close()
            self._sink = None

    def close(self) -> None:
        self.flush()
        self._close_file()

    def __enter__(self) -> FrameTableWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def table_files(path, acc: Accounting | None = None, filesystem=None, *, sizes: bool = False) -> list:
    """The frame-table files at ``path`` (a file, or a folder of them, sorted;
    ``filesystem``: the pyarrow filesystem it is in, None: local); with
    ``sizes``, ``(file, bytes)`` pairs.

    With ``acc``, every other file of a folder is named in ``acc.errors``
    and its bytes counted as read from the files and left unread: a tap
    folder holds nothing else, so nothing in it is passed over silently."""
    from .files import file_size, is_folder, listing

    if not is_folder(filesystem, path):
        p = path if filesystem is not None else Path(path)
        return [(p, file_size(filesystem, os.fspath(path)))] if sizes else [p]
    out = []
    for q, size in listing(filesystem, os.fspath(path)):
        if os.path.splitext(q)[1] in SUFFIXES:
            item = q if filesystem is not None else Path(q)
            out.append((item, size) if sizes else item)
        elif acc is not None:
            acc.file_bytes += size
            acc.unread_bytes += size
            acc.errors.append(f"{q}: not a frame table ({size} bytes), not read")
    return out


def is_table_file(head: bytes) -> bool:
    """Parquet, Arrow IPC file or Arrow IPC stream, from a file's first bytes."""
    return head[:4] == b"PAR1" or head[:6] == b"ARROW1" or head[:4] == b"\xff\xff\xff\xff"


def _damaged(acc: Accounting, path: Path, why: str, unread: int) -> None:
    acc.errors.append(f"{path}: {why}; {unread} bytes not read")
    acc.unread_bytes += unread


def _foreign_schema(schema) -> str | None:
    """Why a table is not the tap's (a column missing or of another type), or None."""
    want = frame_schema()
    for field in want:
        if field.name in LATER_FIELDS and field.name not in schema.names:
            continue  # written before the column existed
        if field.name not in schema.names:
            return f"not a frame table (no column {field.name!r})"
        if not schema.field(field.name).type.equals(field.type):
            return f"not a frame table (column {field.name!r} is {schema.field(field.name).type})"
    return None


def _batches(path, acc: Accounting, filesystem=None, size: int | None = None):
    """The record batches of one file, as far as it is whole: what is damaged,
    cut or foreign is named in ``acc.errors`` and its bytes in ``acc.unread_bytes``."""
    from .files import file_size
    from .files import head as read_head

    pa = _pa()
    if hasattr(path, "read"):
        yield from _ipc_stream_batches(pa, path, path.name, None, acc)
        return
    size = file_size(filesystem, os.fspath(path)) if size is None else size
    head = read_head(filesystem, os.fspath(path), 8)
    if not size:
        # the tap creates a file at its first flush and writes its first batch
        # then: killed in between, it forwarded nothing recorded there
        acc.errors.append(f"{path}: empty file (no batch was written to it)")
        return
    if not is_table_file(head):
        _damaged(acc, path, "not an Arrow or Parquet file", size)
        return
    if head[:4] == b"PAR1" or head[:6] == b"ARROW1":
        yield from _whole_file_batches(pa, path, head, size, acc, filesystem)
        return
    with (pa.OSFile(str(path), "rb") if filesystem is None else filesystem.open_input_file(path)) as src:
        yield from _ipc_stream_batches(pa, src, path, size, acc)


def _ipc_stream_batches(pa, src, path, size: int | None, acc: Accounting):
    """The batches of an Arrow IPC stream read from ``src``; ``size`` None: a
    pipe, whose bytes left after damage are counted by reading them."""

    def left(end: int) -> int:
        if size is None:
            while src.read(1 << 20):
                pass
            return src.tell() - end
        return size - end

    try:
        reader = pa.ipc.open_stream(src)
    except (OSError, pa.ArrowInvalid) as exc:
        _damaged(acc, path, f"cut or damaged inside its schema header ({exc})", left(0))
        return
    why = _foreign_schema(reader.schema)
    if why:
        _damaged(acc, path, why, left(0))
        return
    n, end = 0, src.tell()
    while True:
        try:
            batch = reader.read_next_batch()
        except StopIteration:
            end = src.tell()  # past the end-of-stream marker of a closed file
            break
        except (OSError, pa.ArrowInvalid) as exc:
            # a writer killed mid-batch leaves a cut last message
            _damaged(acc, path, f"cut or damaged inside batch {n + 1} at byte {end} ({exc})", left(end))
            return
        n += 1
        end = src.tell()
        yield batch
    rest = left(end)
    if rest:
        _damaged(acc, path, f"{rest} bytes after the end of the stream", rest)


def _whole_file_batches(pa, path, head: bytes, size: int, acc: Accounting, filesystem=None):
    # Parquet and Arrow IPC files are readable only whole (their index is at the end)
    src = str(path) if filesystem is None else filesystem.open_input_file(path)
    try:
        if head[:4] == b"PAR1":
            import pyarrow.parquet as pq

            pf = pq.ParquetFile(src)
            schema = pf.schema_arrow
        else:
            pf = pa.ipc.open_file(src)
            schema = pf.schema
    except (OSError, pa.ArrowInvalid) as exc:
        _damaged(acc, path, f"cut or damaged, unreadable ({exc})", size)
        return
    why = _foreign_schema(schema)
    if why:
        _damaged(acc, path, why, size)
        return
    if head[:4] == b"PAR1":
        parts = pf.num_row_groups
        md = pf.metadata
        cost = [sum(md.row_group(g).column(c).total_compressed_size for c in range(md.num_columns))
                for g in range(parts)]
        read = pf.read_row_group
    else:
        parts = pf.num_record_batches
        cost = [size // max(parts, 1)] * parts  # an IPC file does not say where its batches end: a share each
        read = pf.get_batch
    for g in range(parts):
        try:
            part = read(g)
        except (OSError, pa.ArrowInvalid) as exc:
            _damaged(acc, path, f"damaged from part {g + 1} of {parts} on ({exc})", sum(cost[g:]))
            return
        yield from (part.to_batches() if hasattr(part, "to_batches") else (part,))


def table_frame_batches(path, acc: Accounting | None = None, *, max_frame_size: int = 1 << 31,
                        batch_rows: int = 65536, cut=None, filesystem=None):
    """Frame batches (:class:`~kafkaproto.capture.frames.FrameBatch`) from
    frame-table files, with their accounting.  The frames go through the
    walker's sink as columns (no Python object per row), so they are paired
    and numbered by its one rule (a response with the oldest waiting request
    of its correlation id on its connection).  Rows that are no frame (no
    frame bytes, no connection or direction) are counted in ``acc.bad_rows``
    and skipped; a time stamp or latency no nanosecond clock holds is no
    time, counted in ``acc.bad_timestamps``.

    ``path`` may be an open binary stream of one Arrow IPC stream (a pipe,
    named by its ``name``, with ``tell()``); ``cut``: called after each
    record batch that left frames in the sink, True hands them out at once.
    ``filesystem``: the pyarrow filesystem ``path`` is in (None: local)."""
    acc = acc if acc is not None else Accounting()
    rows = TableFrames(acc, max_frame_size=max_frame_size, batch_rows=batch_rows)
    stream = hasattr(path, "read")
    for file, size in [(path, None)] if stream else table_files(path, acc, filesystem, sizes=True):
        if not stream:
            acc.file_bytes += size
        for batch in _batches(file, acc, filesystem, size):
            yield from rows.add(batch)
            if cut is not None and rows.sink.size and cut():
                yield take_batch(rows.sink)
        if stream:
            acc.file_bytes += path.tell()
    yield from rows.finish()


class TableFrames:
    """Rows of frame tables (record batches of :func:`frame_schema`), added
    as they come, as frame batches (:class:`~kafkaproto.capture.frames.FrameBatch`):
    what :func:`table_frame_batches` reads files with, and what follows a
    running tap (its rows handed over as it writes them), and what a
    growing tap folder is read with, a piece at a time.  Its connections
    and their waiting requests are kept from one :meth:`add` to the next;
    :meth:`save` gives them as bytes, which :meth:`load` takes back in a
    reader that goes on where this one stopped (another process)."""

    def __init__(self, acc: Accounting, *, max_frame_size: int = 1 << 31, batch_rows: int = 65536) -> None:
        from ..walker import streams

        self.acc = acc
        self.max_frame_size = max_frame_size
        self.sink = streams.new_sink(acc, batch_rows, 32 << 20)
        # (conn, client, server) -> its number; states[2 * number + (0 request, 1 response)]
        self.conns: dict[tuple, int] = {}
        self._pairings: list = []
        self.states: list = []
        #: numbers of connections that ended, given to the next new ones
        self._free: list[int] = []
        #: connections of a state loaded that no row has named since: key -> frame count
        self._dormant: dict[tuple, int] = {}

    def pairings(self) -> list:
        """Each open connection's pairing (its waiting requests, its frame count)."""
        return [self._pairings[n] for n in self.conns.values()]

    def open_uids(self) -> set[int]:
        """The uids of the connections that have not ended (those of a loaded
        state that no row has named since too)."""
        return {p.conn.uid for p in self.pairings()} | {Connection(*k).uid for k in self._dormant}

    def _connection(self, k: tuple):
        """A new connection ``(conn, client, server)``: its pairing and its two directions' states."""
        from ..walker import streams

        scan = streams._sink
        c = Connection(*k)
        pairing = self.sink.connection(c)
        states = [scan.KafkaState(c, pairing, self.sink, True, True, self.max_frame_size),
                  scan.KafkaState(c, pairing, self.sink, False, True, self.max_frame_size)]
        if self._free:
            n = self._free.pop()
            self._pairings[n] = pairing
            self.states[2 * n:2 * n + 2] = states
        else:
            n = len(self._pairings)
            self._pairings.append(pairing)
            self.states += states
        self.conns[k] = n
        return pairing

    def _end(self, keys) -> None:
        """Connections ``(conn, client, server)`` ended (an end row): their
        requests still waiting become unanswered rows, and nothing of them is
        kept."""
        for k in keys:
            n = self.conns.pop(k, None)
            if n is None:
                self._dormant.pop(k, None)
                continue
            self.sink.close(self._pairings[n])
            self._pairings[n] = self.states[2 * n] = self.states[2 * n + 1] = None
            self._free.append(n)

    def limits(self) -> list:
        """What a saved state depends on besides the rows (it loads only where these are the same)."""
        return ["tap", self.max_frame_size]

    def save(self) -> bytes:
        """Every connection met that has not ended (its key and frame count,
        as an Arrow IPC stream) and the requests waiting (client ids as
        text), as bytes (:mod:`~kafkaproto.capture.walker.snapshot`'s
        encoding): a few dozen bytes per connection and per request waiting.
        A connection without an end row (tables of a tap before end rows, or
        cut when the tap stopped) is kept."""
        from ...arrow import buffers as ab
        from ..walker import snapshot

        pa = _pa()
        schema = _state_schema()
        clients = self.sink.clients
        pairings = self.pairings()
        keys = list(self._dormant) + list(self.conns)
        frames = list(self._dormant.values()) + [p.frames for p in pairings]
        base = len(self._dormant)
        waiting = [[base + n, corr, key, version, _NO_TS if ts is None else ts, seq, clients[cl] if cl >= 0 else None]
                   for n, p in enumerate(pairings) if p.waiting
                   for corr, key, version, ts, seq, cl in p.waiting_list()]
        table = pa.table({"conn": ab.numbers([k[0] for k in keys], pa.int64()),
                          "client": ab.strings([k[1] for k in keys], pa.string()),
                          "server": ab.strings([k[2] for k in keys], pa.string()),
                          "frames": ab.numbers(frames, pa.int64())}, schema=schema)
        out = pa.BufferOutputStream()
        with pa.ipc.new_stream(out, schema) as w:
            w.write_table(table)
        return snapshot.dump(self.limits(), [out.getvalue().to_pybytes(), waiting])

    def load(self, data) -> None:
        """The connections a :meth:`save` gave (before the first row);
        :class:`~kafkaproto.capture.walker.snapshot.WalkerStateError` when
        ``data`` is damaged or saved with other limits.  A connection with no
        request waiting is made again only when a row of it comes."""
        from ..walker import snapshot

        if self.conns or self._dormant:
            raise ValueError("frame tables load a state before their first row")
        pa = _pa()
        schema = _state_schema()
        state = snapshot.load(data, self.limits())
        try:
            blob, waiting = state
            table = pa.ipc.open_stream(blob).read_all()
            if not table.schema.equals(schema) or table.column("frames").null_count:
                raise ValueError("schema")
            keys = list(zip(table.column("conn").to_pylist(), table.column("client").to_pylist(),
                            table.column("server").to_pylist()))
            self._dormant = dict(zip(keys, table.column("frames").to_pylist()))
            for n, corr, key, version, ts, seq, cl in waiting:
                k = keys[n]
                pairing = self._pairings[self.conns[k]] if k in self.conns else self._wake(k)
                pairing.add(corr, None, key, version, None if ts == _NO_TS else ts, seq,
                            -1 if cl is None else self.sink.client_of(cl))
        except (TypeError, ValueError, OverflowError, IndexError, KeyError, OSError):
            raise snapshot.WalkerStateError("not the connections of frame tables", "frame tables state",
                                            None) from None

    def _wake(self, k: tuple):
        """A connection of the state loaded, made again (its frames go on being numbered from where they were)."""
        frames = self._dormant.pop(k)
        pairing = self._connection(k)
        pairing.frames = frames
        return pairing

    def add(self, batch):
        """The frame batches the sink fills up with ``batch``'s rows (what is
        left in it: :meth:`take`, :meth:`finish`); the connections its end
        rows name are let go once its frames are in the sink (a connection's
        end row follows its frames)."""
        import pyarrow.compute as pc

        from ...arrow import buffers as ab

        pa = _pa()
        direction = batch.column("direction")
        ended = ab.fill_null(pc.and_(pc.equal(direction, ab.scalar(END, direction.type)),
                                     batch.column("conn").is_valid()), False)
        keys = None
        if batch.num_rows and pc.any(ended).as_py():
            e = batch.filter(ended)
            keys = list(zip(e.column("conn").cast(pa.int64()).to_pylist(), e.column("client").to_pylist(),
                            e.column("server").to_pylist()))
            batch = batch.filter(pc.invert(ended))
        yield from self._add(batch)
        if keys:
            self._end(keys)

    def _add(self, batch):
        import numpy as np
        import pyarrow.compute as pc

        from ...arrow import buffers as ab

        pa = _pa()
        acc, sink, conns, states = self.acc, self.sink, self.conns, self.states
        direction = batch.column("direction")
        ok = pc.and_(pc.and_(batch.column("frame").is_valid(), batch.column("conn").is_valid()),
                     pc.is_in(direction, ab.strings(["request", "response"], pa.string())))
        ok = ab.fill_null(ok, False)
        bad = batch.num_rows - pc.sum(ok.cast(pa.int64())).as_py() if batch.num_rows else 0
        if bad:
            acc.bad_rows += bad
            batch = batch.filter(ok)
        if not batch.num_rows:
            return
        # each row's connection: (conn, client, server), numbered once per connection
        conn = batch.column("conn").cast(pa.int64())
        client, server = batch.column("client"), batch.column("server")
        key = pc.binary_join_element_wise(conn.cast(pa.string()), ab.fill_null(client, "\x00"),
                                          ab.fill_null(server, "\x00"), ab.scalar("\x01", pa.string())
                                          ).dictionary_encode()
        number = np.empty(len(key.dictionary), dtype=np.int32)
        for j, text in enumerate(key.dictionary.to_pylist()):
            cid, cl, sv = text.split("\x01")
            k = (int(cid), None if cl == "\x00" else cl, None if sv == "\x00" else sv)
            got = conns.get(k)
            if got is None:
                if k in self._dormant:
                    self._wake(k)
                else:
                    self._connection(k)
                    acc.connections += 1
                got = conns[k]
            number[j] = got
        state = number[ab.to_numpy(key.indices)] * 2 + \
            ab.to_numpy(pc.equal(batch.column("direction"), ab.scalar("response", direction.type))).astype(np.int32)
        # forwarded in pieces, never held whole (over the tap's memory
        # budget): the row holds its first bytes only
        if "size" in batch.schema.names:
            kept = batch.column("size").is_valid()
            if pc.any(kept).as_py():
                went = ab.fill_null(batch.column("forwarded").filter(kept), 0).cast(pa.int64())
                nk = len(went)
                nbytes = pc.sum(went).as_py() + 4 * nk
                acc.payload_bytes_total += nbytes
                acc.frames["not_kept"] += nk
                acc.bytes["not_kept"] += nbytes
                keep = pc.invert(kept)
                batch, state = batch.filter(keep), state[ab.to_numpy(keep)]
                if not batch.num_rows:
                    return
        ts, request_ts = _times(batch, acc)
        frames = batch.column("frame")
        if pa.types.is_large_binary(frames.type) or pa.types.is_binary(frames.type):
            frames = frames.cast(pa.large_binary()) if pa.types.is_binary(frames.type) else frames
        else:
            frames = frames.cast(pa.large_binary())
        bufs = frames.buffers()
        offsets = np.frombuffer(bufs[1], dtype=np.int64)[frames.offset:frames.offset + len(frames) + 1]
        data = bufs[2] if bufs[2] is not None else pa.py_buffer(b"")
        starts, ends = offsets[:-1].copy(), offsets[1:].copy()
        acc.payload_bytes_total += int((ends - starts).sum()) + 4 * len(starts)
        offset = ab.to_numpy(ab.fill_null(batch.column("offset"), 0).cast(pa.int64()))
        i = 0
        while i < len(state):
            i = sink.add_rows(states, np.ascontiguousarray(state, dtype=np.int32), ts, offset, request_ts,
                              starts, ends, data, i)
            if sink.full():
                yield take_batch(sink)

    def take(self):
        """The rows the sink holds now, as one frame batch (None: none)."""
        return take_batch(self.sink) if self.sink.size else None

    def finish(self):
        """The last frame batches: the tables end when the tap stopped, so a
        request waiting then is not counted (the tap stopped, not its broker)."""
        for pairing in self.pairings():
            pairing.take_waiting()
        self.sink.flush()
        if self.sink.size:
            yield take_batch(self.sink)


def _state_schema():
    """The connections of a saved state (:meth:`TableFrames.save`)."""
    pa = _pa()
    return pa.schema([("conn", pa.int64()), ("client", pa.string()), ("server", pa.string()),
                      ("frames", pa.int64())])


def _times(batch, acc: Accounting):
    """The rows' times in nanoseconds (``ts``, the tap's microseconds) and
    their requests' (``ts`` less the tap's ``latency_us``): NO_TS where a
    time is null or no int64 nanosecond clock from 1970 holds it (counted in
    ``acc.bad_timestamps``)."""
    import numpy as np
    import pyarrow as pa

    from ...arrow import buffers as ab

    no_ts = np.iinfo(np.int64).min
    us = batch.column("ts").cast(pa.int64())
    valid = ab.valid(us)
    t = ab.to_numpy(ab.fill_null(us, 0))
    ok = valid & (t >= 0) & (t <= TS_MAX // 1000)
    acc.bad_timestamps += int((valid & ~ok).sum())
    ts = np.where(ok, t * 1000, no_ts)
    lat_col = batch.column("latency_us")
    lat = ab.to_numpy(ab.fill_null(lat_col, 0).cast(pa.int64()))
    has = ok & ab.valid(lat_col)
    # the request's time, ts - latency, within 0..TS_MAX (checked without overflow)
    fits = has & (lat <= np.where(ok, ts, 0) // 1000) & (lat >= -((TS_MAX - np.where(ok, ts, 0)) // 1000))
    acc.bad_timestamps += int((has & ~fits).sum())
    request_ts = np.where(fits, np.where(ok, ts, 0) - np.where(fits, lat, 0) * 1000, no_ts)
    return ts, request_ts


def iter_table_frames(path, acc: Accounting | None = None):
    """CapturedFrame objects from frame-table files, with their accounting."""
    for batch in table_frame_batches(path, acc):
        yield from batch.frames()
