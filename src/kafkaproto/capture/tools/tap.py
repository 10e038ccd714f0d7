"""``kafkaproto tap``: a recording proxy in front of Kafka brokers.

Clients connect to the tap; it connects to the upstream broker, forwards the
bytes and records every frame (connection, direction, time, api key and
version, correlation id, latency) with a :class:`~.table.FrameTableWriter`.

Each connection runs through a :class:`~kafkaproto.proxy.ProxyConnection`,
which frames both directions and pairs responses with requests.  Frames are
forwarded whole, each once it is recorded: with the arrow format, the rows
of what was read are written to the file (handed to the operating system)
before any of it is forwarded, so killing the tap (even with SIGKILL) never
loses a frame it forwarded.  Requests pass byte for byte.  Responses too, but
Metadata, FindCoordinator and DescribeCluster responses are decoded,
each broker address in them is replaced by a port of the tap (one listener
per broker, opened the first time a broker is named,
:func:`~kafkaproto.proxy.rewrite_addresses`), and re-encoded faithfully, so
that only the addresses differ from the broker's bytes and clients keep
talking through the tap to every broker of a cluster.  Every other frame
passes unchanged.  The table keeps the frame as the broker sent it, and the
rewritten bytes in ``rewritten``.  A connection that ends (its client or
its broker closes it) gets an end row (:meth:`~.tapfiles.FrameTableWriter.end`):
readers let it go there, and its requests still waiting are unanswered;
connections cut because the tap stops get none.  At most ``max_listeners`` listeners are
opened (``--max-listeners``, default 256): a broker named past that, or
whose listener cannot be opened (the process out of file descriptors, say),
keeps its own address in the forwarded response, which is still forwarded
and recorded; ``stats["listeners_not_opened"]`` counts those brokers and
the log names how many each response had.  The tap remembers the last
:data:`UNROUTED_KEPT` of them (``unrouted``), not every name a peer ever
sent: one named again after that many others is counted again.

Memory is bounded across all connections by a budget (``memory_budget``,
``--memory-mb``, default 256 MiB; frames up to a quarter of it are held
whole, :class:`~kafkaproto.proxy.MemoryBudget`).  A frame larger than that,
or one that begins while the budget is used up, is forwarded in pieces as
its bytes arrive, never held whole, and recorded as what it is: one row
holding its first bytes (``frame``: the header, so api key, version,
correlation id and client id), the size its prefix claims (``size``) and
the bytes of it forwarded (``forwarded``: less than ``size`` when its
connection closed first).  The row is written before the frame's last
piece is forwarded, or when its direction ends; ``stats["streamed"]``
counts these frames.

A direction whose bytes stop framing (a size prefix that is negative or too
large: not Kafka, or TLS) is forwarded raw from then on and no longer
recorded; ``stats["raw_bytes"]`` counts it, and the bytes of a frame that a
direction ends inside of (forwarded as they came).  A client with
``max_outstanding`` requests waiting for their responses (default 10,000)
is read no further until some come (:class:`~kafkaproto.proxy.ProxyConnection`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
import time
from collections import OrderedDict

from ..._limits import DEFAULT_MAX_FRAME_SIZE
from ..._tap_args import DEFAULT_MAX_LISTENERS, DEFAULT_MEMORY_BUDGET, add_tap_arguments
from ...errors import KafkaProtocolError
from ...net import write_parts
from ...proxy import (
    DESCRIBE_CLUSTER,
    FIND_COORDINATOR,
    METADATA,
    MemoryBudget,
    ProxyConnection,
    ProxyRequest,
    ProxyResponse,
    Streamed,
    StreamedFrame,
    Unframed,
    rewrite_addresses,
)
from ..formats.tapfiles import FrameTableWriter
from ..objects import CapturedFrame, Connection, RequestInfo, paired_request, paired_response

__all__ = ["Tap", "add_tap_arguments", "rewrite_addresses", "run_tap_cli"]

REWRITTEN_APIS = (METADATA, FIND_COORDINATOR, DESCRIBE_CLUSTER)
#: brokers without a listener remembered at most (those named most recently):
#: while remembered, one named again is neither counted again nor its
#: listener tried again
UNROUTED_KEPT = 1024
_READ = 1 << 16


class _Responses:
    """What the requests' pump of a connection waits on while its client is held
    back: set when responses came (room for requests, perhaps), or ``ended``."""

    __slots__ = ("came", "ended")

    def __init__(self) -> None:
        self.came = asyncio.Event()
        self.ended = False


class Tap:
    """The proxy.  ``start()`` runs it on a background thread (tests, scripts);
    ``run()`` runs it in the calling thread until ``stop()`` or a signal.

    ``listen``: (host, port) for the bootstrap listener (port 0: any free
    port).  Brokers named in responses get listeners on the following ports
    when ``listen`` has a fixed port, else on free ports.  ``advertise_host``
    is the host written into rewritten responses (default: the listen host).
    ``memory_budget``: bytes the partial frames of all connections may hold
    (frames that do not fit are forwarded in pieces and recorded by their
    head); ``max_kept_frame``: the largest frame held whole (default a
    quarter of the budget).  ``max_listeners``: listeners opened at most (a
    broker named past them keeps its own address); ``max_outstanding``:
    requests of one connection waiting for a response before the tap stops
    reading its client.

    ``report``: where the rows go as they are written, besides the files: an
    object with ``start(name)`` (the tap starts; ``name`` is its folder's),
    ``push(record_batch)`` and ``close()`` (the tap stopped, every row
    pushed), such as :class:`kafkaproto.report.live.TapReport`, the live
    report ``kafkaproto tap ... --report OUT`` keeps.
    """

    def __init__(self, upstream: tuple[str, int], out_dir, *, listen: tuple[str, int] = ("127.0.0.1", 0),
                 advertise_host: str | None = None, fmt: str = "arrow", roll_bytes: int = 64 << 20,
                 rewrite: bool = True, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
                 connect_timeout: float = 10.0, memory_budget: int = DEFAULT_MEMORY_BUDGET,
                 max_kept_frame: int | None = None, log=None, max_listeners: int = DEFAULT_MAX_LISTENERS,
                 max_outstanding: int | None = 10_000, report=None) -> None:
        self.upstream = (upstream[0], int(upstream[1]))
        self.listen_host, self.listen_port = listen[0], int(listen[1])
        self.advertise_host = advertise_host or self.listen_host
        self.out_dir = out_dir
        self.fmt = fmt
        self.roll_bytes = roll_bytes
        self.rewrite = rewrite
        self.max_frame_size = max_frame_size
        self.connect_timeout = connect_timeout
        self.log = log
        self.max_listeners = max_listeners
        self.max_outstanding = max_outstanding
        self.report = report
        #: brokers named in responses that got no listener (their addresses went
        #: unchanged): the :data:`UNROUTED_KEPT` named most recently
        self.unrouted: OrderedDict[tuple[str, int], None] = OrderedDict()
        self._why_unrouted = ""
        #: arrow output: rows are written out before their frames are forwarded
        #: (parquet files are readable only once closed, so they cannot promise that)
        self.durable = fmt == "arrow"
        self.routes: dict[tuple[str, int], int] = {}  # upstream broker -> tap port
        self.budget = MemoryBudget(memory_budget, max_kept_frame)
        self.stats = {"connections": 0, "frames": 0, "rewritten": 0, "rewrite_failed": 0, "raw_bytes": 0,
                      "upstream_errors": 0, "streamed": 0, "streamed_bytes": 0, "listeners_not_opened": 0}
        self.writer: FrameTableWriter | None = None
        self._servers: list = []
        self._tasks: set = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stopped: asyncio.Event | None = None
        self._stopping = False  # connections cut from now on get no end row
        self._error: BaseException | None = None
        self._next_conn = 0
        self._next_port = self.listen_port + 1 if self.listen_port else 0

    # -- public ------------------------------------------------------------
    @property
    def port(self) -> int:
        return self.routes[self.upstream]

    @property
    def bootstrap(self) -> str:
        return f"{self.advertise_host}:{self.port}"

    def start(self, timeout: float = 10.0) -> Tap:
        self._thread = threading.Thread(target=self._thread_main, name="kafkaproto-tap", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise TimeoutError(f"tap did not start listening within {timeout}s")
        if self._error is not None:
            raise self._error
        return self

    def stop(self, timeout: float = 10.0) -> None:
        loop = self._loop
        if loop is not None and self._stopped is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._stopped.set)
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def __enter__(self) -> Tap:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def run(self, duration: float | None = None) -> None:
        asyncio.run(self._main(duration, install_signals=True))

    @property
    def files(self):
        return list(self.writer.files) if self.writer else []

    # -- event loop --------------------------------------------------------
    def _thread_main(self) -> None:
        try:
            asyncio.run(self._main(None, install_signals=False))
        except BaseException as exc:  # surfaced by start()
            self._error = exc
            self._ready.set()

    async def _main(self, duration: float | None, install_signals: bool) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopped = asyncio.Event()
        if self.report is not None:
            # named as the batch source names the tap's folder
            self.report.start(os.path.basename(os.path.abspath(self.out_dir)))
        self.writer = FrameTableWriter(self.out_dir, fmt=self.fmt, roll_bytes=self.roll_bytes,
                                       listener=None if self.report is None else self.report.push)
        try:
            await self._listen(self.upstream, self.listen_port)
            if install_signals:
                for sig in (signal.SIGINT, signal.SIGTERM):
                    with contextlib.suppress(NotImplementedError, RuntimeError):
                        self._loop.add_signal_handler(sig, self._stopped.set)
            self._ready.set()
            flusher = asyncio.ensure_future(self._flush_loop())
            try:
                if duration is None:
                    await self._stopped.wait()
                else:
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(self._stopped.wait(), duration)
            finally:
                flusher.cancel()
        finally:
            self._stopping = True
            for srv in self._servers:
                srv.close()
            tasks = list(self._tasks)
            for t in tasks:
                t.cancel()
            if tasks:
                await asyncio.wait(tasks, timeout=5)
            for srv in self._servers:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(srv.wait_closed(), 2)
            self.writer.close()
            if self.report is not None:
                self.report.close()

    async def _flush_loop(self) -> None:
        while True:
            await asyncio.sleep(0.5)
            self.writer.flush()

    async def _listen(self, upstream: tuple[str, int], port: int) -> int:
        async def handler(reader, writer):
            task = asyncio.current_task()
            self._tasks.add(task)
            try:
                await self._client(reader, writer, upstream)
            except asyncio.CancelledError:
                writer.close()  # the tap is stopping
            finally:
                self._tasks.discard(task)

        tries = 20 if port else 1
        last: OSError | None = None
        for i in range(tries):
            try:
                srv = await asyncio.start_server(handler, self.listen_host, port + i if port else 0)
            except OSError as exc:
                last = exc
                continue
            if srv.sockets:
                break
            # (out of file descriptors, asyncio logs the failed socket and returns a server without any)
            srv.close()
            last = OSError(f"no socket could be opened on {self.listen_host}")
        else:
            raise OSError(f"tap: cannot listen on {self.listen_host}:{port}..{port + tries - 1}: {last}")
        self._servers.append(srv)
        bound = srv.sockets[0].getsockname()[1]
        self.routes[upstream] = bound
        self._say(f"tap: listening on {self.listen_host}:{bound} -> {upstream[0]}:{upstream[1]}")
        return bound

    def _say(self, text: str) -> None:
        if self.log is not None:
            print(text, file=self.log, flush=True)

    async def _route(self, host: str, port: int) -> tuple[str, int] | None:
        """The tap's address for a broker, its listener opened now if need be;
        None when it gets none (max_listeners reached, or the listen failed)."""
        key = (host, int(port))
        local = self.routes.get(key)
        if local is None:
            if key in self.unrouted:
                self.unrouted.move_to_end(key)
                return None
            if len(self.routes) >= self.max_listeners:
                return self._no_listener(key, f"max_listeners={self.max_listeners} reached")
            try:
                local = await self._listen(key, self._next_port)
            except OSError as exc:
                return self._no_listener(key, str(exc))
            if self._next_port:
                self._next_port = local + 1
        return self.advertise_host, local

    def _no_listener(self, key: tuple[str, int], why: str) -> None:
        if key not in self.unrouted:
            self.unrouted[key] = None
            if len(self.unrouted) > UNROUTED_KEPT:
                # a peer naming ever new brokers cannot grow the tap: the one named longest ago goes
                self.unrouted.popitem(last=False)
            self.stats["listeners_not_opened"] += 1
            self._why_unrouted = why
        return None

    # -- one client connection ---------------------------------------------
    async def _client(self, creader, cwriter, upstream: tuple[str, int]) -> None:
        peer = cwriter.get_extra_info("peername") or ("?", 0)
        try:
            sreader, swriter = await asyncio.wait_for(asyncio.open_connection(*upstream), self.connect_timeout)
        except (OSError, asyncio.TimeoutError) as exc:
            self.stats["upstream_errors"] += 1
            self._say(f"tap: cannot reach {upstream[0]}:{upstream[1]}: {exc}")
            cwriter.close()
            return
        self._next_conn += 1
        self.stats["connections"] += 1
        client = f"[{peer[0]}]:{peer[1]}" if ":" in str(peer[0]) else f"{peer[0]}:{peer[1]}"
        conn = Connection(self._next_conn, client, f"{upstream[0]}:{upstream[1]}", time.time_ns())
        # frames, pairs, and decodes what may be rewritten; requests are forwarded
        # as they arrive (before they are whole), responses frame by frame
        middle = ProxyConnection(decode=REWRITTEN_APIS if self.rewrite else False, zero_copy=False,
                                 max_frame_size=self.max_frame_size, budget=self.budget,
                                 max_outstanding=self.max_outstanding)
        answered = _Responses()
        up = asyncio.ensure_future(self._pump(creader, swriter, conn, middle, True, answered))
        down = asyncio.ensure_future(self._pump(sreader, cwriter, conn, middle, False, answered))
        try:
            await asyncio.gather(up, down)
        finally:
            for t in (up, down):
                t.cancel()
            for w in (cwriter, swriter):
                w.close()
            middle.close()
            if not self._stopping:  # the connection ended, not the tap
                self.writer.end(conn, time.time_ns())

    def _record(self, frame: CapturedFrame, rewritten: bytes | None = None) -> None:
        self.stats["frames"] += 1
        self.writer.write(frame, rewritten)

    async def _pump(self, reader, writer, conn: Connection, middle: ProxyConnection, requests: bool,
                    answered: _Responses) -> None:
        """One direction: every chunk goes through ``middle``; each whole frame
        is recorded, the recording handed to the operating system (arrow
        format), and only then the frame forwarded, so a tap killed at any
        moment has recorded every frame it forwarded.  The client is read no
        further while ``max_outstanding`` of its requests wait for responses."""
        feed = middle.from_client if requests else middle.from_broker
        side = 0 if requests else 1
        try:
            while True:
                if requests and middle.paused():
                    events = feed(b"")  # the requests that responses made room for
                    if not events:
                        if answered.ended:
                            break
                        answered.came.clear()
                        await answered.came.wait()
                        continue
                else:
                    chunk = await reader.read(_READ)
                    if not chunk:
                        break
                    events = feed(chunk)
                out = await self._events(conn, events, requests)
                if out:
                    await write_parts(writer, out)
                if not requests:
                    answered.came.set()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            if not requests:
                answered.ended = True
                answered.came.set()
            # what the direction still holds: held requests, a streamed frame's
            # head (its row says how much of it went), a frame it ended inside of
            events = middle.finish(side)
            streaming = middle.streaming(side)
            with contextlib.suppress(OSError, RuntimeError):
                out = await self._events(conn, events, requests)
                if streaming is not None:
                    self._record_streamed(conn, streaming, requests)
                    if self.durable:
                        self.writer.flush()
                writer.writelines(out)
                if writer.can_write_eof():
                    writer.write_eof()

    async def _events(self, conn: Connection, events: list, requests: bool) -> list:
        """Record the events of one direction → the buffers to forward (the
        recording handed to the operating system first, with the arrow format)."""
        now = time.time_ns()
        out = []
        for ev in events:
            if isinstance(ev, Unframed):
                self.stats["raw_bytes"] += len(ev.data)
                out.append(ev.data)
            elif isinstance(ev, Streamed):
                self._streamed(conn, ev, now, requests)
                out.append(ev.data)
            elif requests:
                self._request(conn, ev, now)
                out += ev.parts()
            else:
                out += await self._response(conn, ev, now)
        if out and self.durable:
            self.writer.flush()
        return out

    def _streamed(self, conn: Connection, ev: Streamed, now: int, requests: bool) -> None:
        """A piece of a frame forwarded without being held: the first one notes
        the request (for its response's latency), the last one records the frame."""
        sf = ev.frame
        self.stats["streamed_bytes"] += len(ev.data)
        if ev.first:
            sf.user = [now, False]  # when it began, recorded yet
            if requests and sf.event is not None and sf.event.api_key is not None:
                req = sf.event
                req.user = RequestInfo(req.api_key, req.api_version, now, req.client_id)
            elif not requests and self.rewrite and sf.event is not None and sf.event.api_key in REWRITTEN_APIS:
                # its addresses cannot be rewritten without holding it whole
                self.stats["rewrite_failed"] += 1
                self._say(f"tap: api {sf.event.api_key} response of {sf.size} bytes is over the memory budget: "
                          f"forwarded with the broker's addresses")
        if ev.last:
            self._record_streamed(conn, sf, requests)

    def _record_streamed(self, conn: Connection, sf: StreamedFrame, requests: bool) -> None:
        if sf.user is None:
            sf.user = [time.time_ns(), False]
        ts, recorded = sf.user
        if recorded:
            return
        sf.user[1] = True
        ev = sf.event
        if requests:
            f = paired_request(conn, ts, sf.offset, sf.head, ev.user if ev is not None else None)
        else:
            info = ev.request.user if ev is not None and ev.request is not None else None
            f = paired_response(conn, ts, sf.offset, sf.head, ev.correlation_id if ev is not None else None, info)
        self.stats["streamed"] += 1
        self.stats["frames"] += 1
        self.writer.write(f, None, size=sf.size, forwarded=max(sf.passed - 4, 0))

    def _request(self, conn: Connection, ev: ProxyRequest, now: int) -> None:
        info = None
        if ev.api_key is not None:
            info = ev.user = RequestInfo(ev.api_key, ev.api_version, now, ev.client_id)
        self._record(paired_request(conn, now, ev.offset, ev.frame, info))

    async def _response(self, conn: Connection, ev: ProxyResponse, now: int) -> list:
        """Record one response → the buffers to forward: its own, or its rewrite."""
        info = ev.request.user if ev.request is not None else None
        f = paired_response(conn, now, ev.offset, ev.frame, ev.correlation_id, info)
        parts = None
        if self.rewrite and info is not None and info.api_key in REWRITTEN_APIS:
            parts = await self._rewrite(ev)
        self._record(f, None if parts is None else b"".join(parts)[4:])
        return ev.parts() if parts is None else parts

    async def _rewrite(self, ev: ProxyResponse) -> list | None:
        key, version = ev.api_key, ev.api_version
        if ev.message is None:
            self.stats["rewrite_failed"] += 1
            self._say(f"tap: cannot decode api {key} v{version} response to rewrite it: {ev.error}")
            return None
        msg = ev.message
        wanted = {}
        for obj in list(getattr(msg, "brokers", None) or ()) + list(getattr(msg, "coordinators", None) or ()) + [msg]:
            host, port = getattr(obj, "host", ""), getattr(obj, "port", -1)
            if host and port is not None and port >= 0 and (host, port) not in wanted:
                wanted[(host, port)] = await self._route(host, port)
        missed = sum(1 for v in wanted.values() if v is None)
        if missed:
            self._say(f"tap: {missed} of the {len(wanted)} brokers named in an api {key} response got no listener "
                      f"({self._why_unrouted}): their addresses are forwarded unchanged")
        if not rewrite_addresses(msg, key, lambda h, p: wanted.get((h, p))):
            return None
        try:
            # faithful: every byte but the rewritten addresses stays the broker's
            out = ev.encode(msg)
        except KafkaProtocolError as exc:
            self.stats["rewrite_failed"] += 1
            self._say(f"tap: cannot re-encode api {key} v{version} response: {exc}")
            return None
        self.stats["rewritten"] += 1
        return out


# --------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------


def run_tap_cli(args, report=None) -> int:
    """``kafkaproto tap``; ``report``: as :class:`Tap`'s (``--report``)."""
    tap = Tap(args.upstream, args.out, listen=args.listen, advertise_host=args.advertise_host, fmt=args.format,
              roll_bytes=int(args.roll_mb * (1 << 20)), rewrite=not args.no_rewrite,
              memory_budget=int(args.memory_mb * (1 << 20)), log=sys.stdout, max_listeners=args.max_listeners,
              report=report)
    try:
        tap.run(args.duration)
    except OSError as exc:
        print(f"kafkaproto tap: {exc}", file=sys.stderr)
        return 1
    s = tap.stats
    print(f"tap: {s['connections']} connections, {s['frames']} frames recorded, {s['rewritten']} responses "
          f"rewritten ({s['rewrite_failed']} failed), {s['streamed']} forwarded without being kept (over the memory "
          f"budget), {s['listeners_not_opened']} brokers without a listener, files: "
          f"{', '.join(str(f) for f in tap.files) or 'none'}",
          flush=True)
    return 0
