"""The report, live: ``kafkaproto report --follow DIR`` (and ``kafkaproto tap
... --report OUT``) reads a capture as it grows and keeps a terminal view
and the report's page and tables up to date.

>>> from kafkaproto.report.live import LiveReport
>>> live = LiveReport("/var/capture/", "live-out", window=300)     # doctest: +SKIP
>>> data = live.step()                  # read what is new; the window's figures
>>> print(live.view(data))              # doctest: +SKIP

A running tap hands its rows over as it writes them (:class:`FrameFeed`:
``LiveReport(feed, ...)``); a capture in files is read with
:class:`~kafkaproto.capture.stream.GrowingCapture`
(a folder of rolled pcap files, or one pcap file being written; the
walker's state kept in memory between reads), the rows folded into the
report's partial aggregates (:class:`~kafkaproto.report.aggregate.TaskAggregates`)
of the current time slice, and the figures of the slices of the window
merged as the report merges its tasks' (:func:`~kafkaproto.report.aggregate.merge`).
The state is bounded by the window: slices older than it are let go
(``window=None`` keeps everything), and the walker's by its own limits.

Each refresh rewrites ``out/report.html`` (the report's page,
:func:`~kafkaproto.report.render.html_page`), ``out/report.json`` and the
window's ``connections`` table (``out/connections/part-live.parquet``),
each written beside and renamed over the old one: a reader never sees a
half-written file.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import deque

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..arrow import buffers as ab
from ..capture.accounting import Accounting
from ..capture.dataset import CaptureDataset
from ..capture.formats.tapfiles import TableFrames
from ..capture.frames import take_batch
from ..capture.stream import GrowingCapture, expire_waiting
from .aggregate import CONNECTIONS_SCHEMA, TaskAggregates, merge
from .job import ReportData
from .render import _mb, _ms, _num, _table, html_page

__all__ = ["FrameFeed", "LiveReport", "TapReport", "follow"]

#: the tables the figures are made of
_TABLES = ("requests", "responses", "record_sets", "unanswered")
_CONN_SUMS = ("requests", "responses", "bytes_to_broker", "bytes_from_broker")


class FrameFeed:
    """The frame-table rows of a running tap, handed over as they are
    written (``FrameTableWriter(listener=feed.push)``): what a live report
    follows instead of files.  :meth:`push` may be called from any thread;
    the rows wait for the report's next read, ``max_bytes`` of them at most:
    past that (the report fell behind), the rows are not waited for but
    counted (``skipped_rows``, named in the view).  :meth:`end`: no more
    rows; requests still waiting then are not counted, as the batch read of
    the tap's tables does not count them.  ``unanswered_after``
    (nanoseconds; set by the :class:`LiveReport` that follows the feed): a
    request waiting longer than that behind the newest frame's time is an
    unanswered row at once, as in a growing capture."""

    def __init__(self, name: str = "tap", max_bytes: int = 64 << 20) -> None:
        self.name = name
        self.max_bytes = max_bytes
        self.skipped_rows = 0
        self.acc = Accounting()
        self._frames = TableFrames(self.acc)
        self._decoders: dict = {}
        self._dataset = CaptureDataset([])
        self._queue: deque = deque()
        self._queued = 0
        self._lock = threading.Lock()
        self._woken = threading.Event()
        self._ended = False
        self._finished = False
        self.unanswered_after: int | None = None
        self._newest: int | None = None

    def push(self, batch: pa.RecordBatch) -> None:
        """Rows just written (a record batch of the tap's frame schema)."""
        with self._lock:
            if self._queued + batch.nbytes > self.max_bytes and self._queue:
                self.skipped_rows += batch.num_rows
                return
            self._queue.append(batch)
            self._queued += batch.nbytes

    def end(self) -> None:
        """No more rows (the tap stopped): the next read is the last."""
        self._ended = True
        self._woken.set()

    def ended(self) -> bool:
        return self._ended

    def wait(self, seconds: float) -> None:
        """Sleep ``seconds``, or until :meth:`end`."""
        self._woken.wait(seconds)

    def rows(self, tables):
        """``(table, batch)`` of the rows pushed since the last read (and the
        ``topic_ids`` rows: every topic id the Metadata responses named so far)."""
        with self._lock:
            batches = list(self._queue)
            self._queue.clear()
            self._queued = 0
        if self._decoders:  # what the last read kept of connections that ended since is let go
            open_uids = self._frames.open_uids()
            for dec in self._decoders.values():
                dec.keep_connections(open_uids)
        last = self._ended and not self._finished
        self._finished = self._finished or last
        return self._dataset.table_rows(((self.name, fb) for fb in self._frame_batches(batches, last)), tables,
                                        accounts={self.name: self.acc}, decoders=self._decoders, topic_ids=True)

    def _frame_batches(self, batches, last: bool):
        frames = self._frames
        for batch in batches:
            for fb in frames.add(batch):
                yield self._expire(fb)
        if frames.sink.size or self.unanswered_after is not None:
            fb = self._expire(take_batch(frames.sink))
            if len(fb) or fb.unanswered:
                yield fb
        if last:
            yield from frames.finish()

    def _expire(self, fb):
        if self.unanswered_after is not None:
            self._newest = expire_waiting(fb, self._frames.pairings(), self._frames.sink, self.unanswered_after,
                                          self._newest)
        return fb


class TapReport:
    """The live report a running tap keeps (``Tap(report=TapReport(out))``,
    ``kafkaproto tap ... --report OUT``): the rows the tap writes are pushed
    to a :class:`FrameFeed` and followed (:func:`follow`) on a thread of its
    own, every ``refresh`` seconds, over ``window`` seconds (None: all), the
    view written to ``view`` (a text stream; None: none); requests waiting
    longer than ``unanswered_after`` nanoseconds are unanswered rows (None:
    never, as in the batch read of the tap's tables); :meth:`close` (the
    tap stopped) makes a last refresh with every row and waits for it."""

    def __init__(self, out, *, refresh: float = 2.0, window: float | None = 300.0, view=None, log=None,
                 unanswered_after: int | None = 30_000_000_000) -> None:
        self.out, self.refresh, self.window, self.view, self.log = out, refresh, window, view, log
        self.unanswered_after = unanswered_after
        self.feed: FrameFeed | None = None
        self._thread: threading.Thread | None = None

    def start(self, name: str) -> None:
        self.feed = feed = FrameFeed(name)

        def main():
            try:
                follow(feed, self.out, refresh=self.refresh, window=self.window, stream=self.view,
                       stop=feed.ended, wait=feed.wait, unanswered_after=self.unanswered_after)
            except Exception as exc:  # the tap goes on recording
                if self.log is not None:
                    print(f"tap: the live report stopped: {type(exc).__name__}: {exc}", file=self.log, flush=True)

        self._thread = threading.Thread(target=main, name="kafkaproto-tap-report", daemon=True)
        self._thread.start()

    def push(self, batch: pa.RecordBatch) -> None:
        if self.feed is not None:
            self.feed.push(batch)

    def close(self) -> None:
        if self.feed is not None:
            self.feed.end()
        if self._thread is not None:
            self._thread.join()
            self._thread = None


class LiveReport:
    """A capture followed as it grows (see the module's text).  ``window``:
    the seconds of traffic the figures cover (None: all since the start);
    ``slices``: how many pieces the window is kept in (the figures move by
    one piece at a time); ``starting``: ``latest`` (what is written from now
    on) or ``earliest`` (the capture from its start); ``unanswered_after``:
    nanoseconds of capture time a request may wait before it is an
    unanswered row (None: until its connection closes; in a tap's rows,
    never).  ``clock``: seconds, as time.monotonic."""

    def __init__(self, path, out=None, *, ports=None, window: float | None = 300.0, slices: int = 30,
                 starting: str = "latest", unanswered_after: int | None = 30_000_000_000, clock=time.monotonic,
                 **limits: int) -> None:
        self.feed = path if isinstance(path, FrameFeed) else None
        self.path = self.feed.name if self.feed is not None else os.fspath(path)
        self.out = None if out is None else os.fspath(out)
        self.window = window
        self.slice = None if window is None else max(window / max(slices, 1), 0.001)
        self.clock = clock
        if self.feed is None:
            self.capture = GrowingCapture(path, None, ports=ports, unanswered_after=unanswered_after, **limits)
            self.offset = self.capture.initial(starting)
        else:
            self.feed.unanswered_after = unanswered_after
        self.name = self.feed.name if self.feed is not None else self.capture.name
        self.started = clock()
        #: (start time, figures) of each slice, oldest first
        self.slices: deque[tuple[float, TaskAggregates]] = deque()
        self.read_bytes = 0

    # -- reading -----------------------------------------------------------------
    def step(self) -> ReportData:
        """Read what was written since the last step; the window's figures."""
        now = self.clock()
        if not self.slices or (self.slice is not None and now - self.slices[-1][0] >= self.slice):
            self.slices.append((now, TaskAggregates()))
        agg = self.slices[-1][1]
        if self.feed is not None:
            before = self.feed.acc.payload_bytes_total
            for table, batch in self.feed.rows(_TABLES):
                agg.add(table, batch)
            self.read_bytes += self.feed.acc.payload_bytes_total - before
            return self._drop_old(now)
        end = self.capture.latest(self.offset)
        if end != self.offset:
            for table, batch in self.capture.read(self.offset, end, _TABLES, topic_ids=True):
                agg.add(table, batch)
            self.read_bytes += end.total - self.offset.total
            self.offset = end
        return self._drop_old(now)

    def _drop_old(self, now: float) -> ReportData:
        if self.window is not None:
            while self.slices and self.slices[0][0] <= now - self.window:
                self.slices.popleft()
        return self.data(now)

    def data(self, now: float | None = None) -> ReportData:
        """The figures of the slices kept (a :class:`~kafkaproto.report.job.ReportData`)."""
        now = self.clock() if now is None else now
        parts: dict[str, list] = {}
        conns = []
        for _t, agg in self.slices:
            for name, t in agg.parts().items():
                parts.setdefault(name, []).append(t)
            conns.append(agg.connections())
        d = ReportData(out=self.out or "", master="live", engine="live")
        d.captures = [{"name": self.name, "path": self.path}]
        d.seconds = now - (self.slices[0][0] if self.slices else now)
        d.input_bytes = self.read_bytes
        merge({name: pa.concat_tables(ts) for name, ts in parts.items()}, d)
        c = connections(conns)
        d.totals.update(connections=c.num_rows, requests=_sum(c, "requests"), responses=_sum(c, "responses"),
                        unanswered=sum(r["requests"] for r in d.unanswered))
        d.tables = {"connections": os.path.join(self.out or "", "connections")}
        self._connections = c
        return d

    # -- showing -----------------------------------------------------------------
    def view(self, d: ReportData, limit: int = 8) -> str:
        """The terminal view: rates by api and client, latency, errors,
        requests without a response, bytes each way, the busiest connections."""
        c = self._connections
        span = traffic_seconds(c)
        to_b, from_b = _sum(c, "bytes_to_broker"), _sum(c, "bytes_from_broker")
        window = "all since the start" if self.window is None else f"the last {self.window:g}s"
        lines = [f"kafkaproto live: {self.path} ({window}: {span:,.1f}s of traffic; {_mb(self.read_bytes)} read)",
                 f"  {_num(d.totals.get('connections'))} connections, {_num(d.totals.get('requests'))} requests "
                 f"({d.totals.get('requests', 0) / span:,.1f}/s), bytes to brokers {_mb(to_b)} "
                 f"({_mb(to_b / span)}/s), from brokers {_mb(from_b)} ({_mb(from_b / span)}/s), "
                 f"{_num(d.totals.get('unanswered'))} unanswered", ""]
        if self.feed is not None and self.feed.skipped_rows:
            lines[-1:-1] = [f"  {_num(self.feed.skipped_rows)} frames recorded but not in these figures "
                            "(the report fell behind the tap)"]
        lat = {r["api"]: r for r in d.latency}
        by_api: dict = {}
        by_client: dict = {}
        for r in d.api_use:
            by_api[r["api"]] = by_api.get(r["api"], 0) + r["requests"]
            by_client[r["client_id"]] = by_client.get(r["client_id"], 0) + r["requests"]
        rows = [(api, f"{n / span:,.1f}", _ms(lat[api]["p50"]) if api in lat else "-",
                 _ms(lat[api]["p99"]) if api in lat else "-")
                for api, n in sorted(by_api.items(), key=lambda kv: -kv[1])[:limit]]
        lines += _table(rows, ("API", "requests/s", "p50 ms", "p99 ms"))
        lines += [""] + _table([(cid, f"{n / span:,.1f}") for cid, n in
                                sorted(by_client.items(), key=lambda kv: -kv[1])[:limit]], ("client id", "requests/s"))
        lines += ["", "Errors:" if d.errors else "Errors: none"]
        if d.errors:
            lines += _table([(e["api"], e["error"], e["code"], e["count"]) for e in d.errors[:limit]],
                            ("API", "error", "code", "count"))
        if d.unanswered:
            lines += ["", "Requests without a response:"]
            lines += _table([(r["api"], r["client_id"], r["requests"]) for r in d.unanswered[:limit]],
                            ("API", "client id", "requests"))
        if c.num_rows:
            top = c.append_column("bytes", pc.add(c["bytes_to_broker"], c["bytes_from_broker"])).sort_by(
                [("bytes", "descending")]).slice(0, limit).select(["client", "server", "client_ids", "requests",
                                                                   "bytes_to_broker", "bytes_from_broker"])
            lines += ["", "Busiest connections:"]
            lines += _table([(r["client"], r["server"], ",".join(r["client_ids"] or []), r["requests"],
                              _mb(r["bytes_to_broker"]), _mb(r["bytes_from_broker"])) for r in top.to_pylist()],
                            ("client", "broker", "client ids", "requests", "to broker", "from broker"))
        return "\n".join(lines)

    def write(self, d: ReportData) -> None:
        """The page, the figures and the window's connections under ``out``, each atomically."""
        if self.out is None:
            return
        os.makedirs(os.path.join(self.out, "connections"), exist_ok=True)
        _replace(os.path.join(self.out, "report.html"), html_page(d).encode())
        _replace(os.path.join(self.out, "report.json"), d.to_json().encode())
        path = os.path.join(self.out, "connections", "part-live.parquet")
        tmp = f"{path}.{os.getpid()}.tmp"
        pq.write_table(self._connections, tmp)
        os.replace(tmp, path)


def connections(tables: list[pa.Table]) -> pa.Table:
    """The ``connections`` rows of several slices, one row per connection."""
    t = pa.concat_tables([ab.empty_table(CONNECTIONS_SCHEMA), *tables])
    if not t.num_rows:
        return t
    t = t.append_column("row", ab.numbers(np.arange(t.num_rows), pa.int64()))
    g = ab.group_by(t, ["capture", "conn"],
                    [("first_ts", "min"), ("last_ts", "max"), *((k, "sum") for k in _CONN_SUMS), ("row", "max")])
    last = t.take(g["row_max"])  # its addresses and client ids as its latest slice has them
    return pa.table({"capture": g["capture"], "conn": g["conn"], "client": last["client"],
                     "server": last["server"], "first_ts": g["first_ts_min"], "last_ts": g["last_ts_max"],
                     **{k: g[f"{k}_sum"] for k in _CONN_SUMS}, "client_ids": last["client_ids"]})


def traffic_seconds(conns: pa.Table) -> float:
    """The seconds of capture time the connections' frames span (at least one:
    the rates of a view are per second of traffic, however fast it was read)."""
    if not conns.num_rows:
        return 1.0
    lo, hi = pc.min(conns["first_ts"]).value, pc.max(conns["last_ts"]).value
    return 1.0 if lo is None or hi is None else max(1.0, (hi - lo) / 1e6)


def _sum(t: pa.Table, col: str) -> int:
    return int(pc.sum(t[col]).as_py() or 0) if t.num_rows else 0


def _replace(path: str, data: bytes) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


def follow(path, out=None, *, refresh: float = 2.0, window: float | None = 300.0, ports=None,
           starting: str = "latest", stream=sys.stdout, stop=None, wait=time.sleep, **kw) -> None:
    """Follow ``path`` (files, or a :class:`FrameFeed`) until ``stop()`` says
    so (or Ctrl-C): every ``refresh`` seconds (``wait(seconds)`` between
    two), the terminal view on ``stream`` (redrawn in place on a terminal;
    None: none) and the page and tables under ``out``; once more after
    ``stop()`` said so, with what came until then."""
    live = LiveReport(path, out, ports=ports, window=window, starting=starting, **kw)
    tty = getattr(stream, "isatty", lambda: False)()
    try:
        while True:
            last = stop is not None and stop()
            t0 = time.monotonic()
            d = live.step()
            live.write(d)
            if stream is not None:
                stream.write(("\x1b[H\x1b[2J" if tty else "\n") + live.view(d) + "\n")
                stream.flush()
            if last:
                break
            wait(max(0.0, refresh - (time.monotonic() - t0)))
    except KeyboardInterrupt:
        pass
