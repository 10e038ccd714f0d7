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
rewritten bytes in ``rewritten``.

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
recorded; ``stats["raw_bytes"]`` counts it.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import threading
import time

from .._limits import DEFAULT_MAX_FRAME_SIZE
from ..errors import KafkaProtocolError
from ..net import write_parts
from ..proxy import (
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
from .streams import CapturedFrame, Connection, RequestInfo, paired_request, paired_response
from .table import FrameTableWriter

__all__ = ["Tap", "add_tap_arguments", "rewrite_addresses", "run_tap_cli"]

REWRITTEN_APIS = (METADATA, FIND_COORDINATOR, DESCRIBE_CLUSTER)
_READ = 1 << 16
DEFAULT_MEMORY_BUDGET = 256 << 20


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
    quarter of the budget).
    """

    def __init__(self, upstream: tuple[str, int], out_dir, *, listen: tuple[str, int] = ("127.0.0.1", 0),
                 advertise_host: str | None = None, fmt: str = "arrow", roll_bytes: int = 64 << 20,
                 rewrite: bool = True, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
                 connect_timeout: float = 10.0, memory_budget: int = DEFAULT_MEMORY_BUDGET,
                 max_kept_frame: int | None = None, log=None) -> None:
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
        #: arrow output: rows are written out before their frames are forwarded
        #: (parquet files are readable only once closed, so they cannot promise that)
        self.durable = fmt == "arrow"
        self.routes: dict[tuple[str, int], int] = {}  # upstream broker -> tap port
        self.budget = MemoryBudget(memory_budget, max_kept_frame)
        self.stats = {"connections": 0, "frames": 0, "rewritten": 0, "rewrite_failed": 0, "raw_bytes": 0,
                      "upstream_errors": 0, "streamed": 0, "streamed_bytes": 0}
        self.writer: FrameTableWriter | None = None
        self._servers: list = []
        self._tasks: set = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stopped: asyncio.Event | None = None
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
        self.writer = FrameTableWriter(self.out_dir, fmt=self.fmt, roll_bytes=self.roll_bytes)
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
                break
            except OSError as exc:
                last = exc
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

    async def _route(self, host: str, port: int) -> tuple[str, int]:
        key = (host, int(port))
        local = self.routes.get(key)
        if local is None:
            local = await self._listen(key, self._next_port)
            if self._next_port:
                self._next_port = local + 1
        return self.advertise_host, local

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
                                 max_frame_size=self.max_frame_size, budget=self.budget)
        up = asyncio.ensure_future(self._pump(creader, swriter, conn, middle, True))
        down = asyncio.ensure_future(self._pump(sreader, cwriter, conn, middle, False))
        try:
            await asyncio.gather(up, down)
        finally:
            for t in (up, down):
                t.cancel()
            for w in (cwriter, swriter):
                w.close()
            middle.close()

    def _record(self, frame: CapturedFrame, rewritten: bytes | None = None) -> None:
        self.stats["frames"] += 1
        self.writer.write(frame, rewritten)

    async def _pump(self, reader, writer, conn: Connection, middle: ProxyConnection, requests: bool) -> None:
        """One direction: every chunk goes through ``middle``; each whole frame
        is recorded, the recording handed to the operating system (arrow
        format), and only then the frame forwarded, so a tap killed at any
        moment has recorded every frame it forwarded."""
        feed = middle.from_client if requests else middle.from_broker
        try:
            while True:
                chunk = await reader.read(_READ)
                if not chunk:
                    break
                now = time.time_ns()
                out = []
                for ev in feed(chunk):
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
                if out:
                    if self.durable:
                        self.writer.flush()
                    await write_parts(writer, out)
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            # a frame cut by the end of its direction: its row says how much of it went
            side = 0 if requests else 1
            if middle.streaming(side) is not None:
                rest = middle.flush_stream(side)
                for ev in rest:
                    self._streamed(conn, ev, time.time_ns(), requests)
                self._record_streamed(conn, middle.streaming(side), requests)
                if self.durable:
                    self.writer.flush()
                with contextlib.suppress(OSError, RuntimeError):
                    writer.writelines([ev.data for ev in rest])
            with contextlib.suppress(OSError, RuntimeError):
                if writer.can_write_eof():
                    writer.write_eof()

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
            if host and port is not None and port >= 0:
                wanted[(host, port)] = await self._route(host, port)
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


def _hostport(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"expected HOST:PORT, got {text!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def add_tap_arguments(p) -> None:
    p.add_argument("--listen", required=True, type=_hostport, help="HOST:PORT for clients (PORT 0: any)")
    p.add_argument("--upstream", required=True, type=_hostport, help="the bootstrap broker, HOST:PORT")
    p.add_argument("--out", required=True, help="folder for the recorded frames")
    p.add_argument("--format", choices=("arrow", "parquet"), default="arrow",
                   help="Arrow IPC stream files (default) or Parquet")
    p.add_argument("--roll-mb", type=float, default=64.0, help="start a new file past this size (MB)")
    p.add_argument("--advertise-host", default=None, help="host written into rewritten broker addresses")
    p.add_argument("--no-rewrite", action="store_true", help="forward Metadata/FindCoordinator/DescribeCluster "
                   "responses unchanged (single broker advertising the tap itself)")
    p.add_argument("--memory-mb", type=float, default=DEFAULT_MEMORY_BUDGET / (1 << 20),
                   help="memory the frames of all connections may hold (MB, default 256); a frame over a quarter "
                        "of it, or arriving when it is used up, is forwarded in pieces and recorded by its head")
    p.add_argument("--duration", type=float, default=None, help="stop after this many seconds")


def run_tap_cli(args) -> int:
    tap = Tap(args.upstream, args.out, listen=args.listen, advertise_host=args.advertise_host, fmt=args.format,
              roll_bytes=int(args.roll_mb * (1 << 20)), rewrite=not args.no_rewrite,
              memory_budget=int(args.memory_mb * (1 << 20)), log=sys.stdout)
    try:
        tap.run(args.duration)
    except OSError as exc:
        print(f"kafkaproto tap: {exc}", file=sys.stderr)
        return 1
    s = tap.stats
    print(f"tap: {s['connections']} connections, {s['frames']} frames recorded, {s['rewritten']} responses "
          f"rewritten ({s['rewrite_failed']} failed), {s['streamed']} forwarded without being kept (over the memory "
          f"budget), files: {', '.join(str(f) for f in tap.files) or 'none'}",
          flush=True)
    return 0
