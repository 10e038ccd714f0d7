"""Real Kafka brokers on 127.0.0.1 for tests, plus a byte-recording TCP proxy.

* :class:`Tansu` - the static ``tansu`` broker binary (in-memory storage) that
  ``tools/peers/install_peers.sh`` unpacks into ``build/peers/bin/tansu``.
* :class:`MockCluster` - librdkafka's built-in mock cluster, kept alive in a
  child process (``mock_cluster_main.py``) because it only lives as long as
  the client handle that created it.
* :class:`RecordingProxy` - forwards bytes unchanged between clients and an
  upstream ``host:port`` and keeps each direction's raw byte stream per
  connection.

Only the standard library is used here (the mock cluster child process needs
``confluent_kafka``).  Every wait is bounded by a timeout.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent
BUILD_DIR = REPO_ROOT / "build" / "peers"
TANSU_BIN = BUILD_DIR / "bin" / "tansu"
LOG_DIR = BUILD_DIR / "logs"
MOCK_MAIN = HERE / "mock_cluster_main.py"
INSTALL_HINT = "run tools/peers/install_peers.sh (with PYTHON=<the test venv's python>)"

LOOPBACK = "127.0.0.1"
_KEEP_LOGS = 40  # newest log files kept per kind under build/peers/logs/

__all__ = [
    "LOOPBACK",
    "TANSU_BIN",
    "LOG_DIR",
    "PeerError",
    "PeerUnavailable",
    "free_port",
    "wait_for_port",
    "api_versions",
    "metadata_brokers",
    "split_frames",
    "Tansu",
    "MockCluster",
    "RecordingProxy",
    "RecordedConnection",
    "ProxiedBroker",
]


class PeerError(RuntimeError):
    """A peer failed to start, answer or stop."""


class PeerUnavailable(PeerError):
    """A peer's binary or package is not installed on this machine."""


# --------------------------------------------------------------------------
# small socket helpers
# --------------------------------------------------------------------------


def free_port(host: str = LOOPBACK) -> int:
    """Return a TCP port that was free on ``host`` a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def wait_for_port(host: str, port: int, timeout: float = 10.0) -> None:
    """Wait until a TCP connect to ``host:port`` succeeds; raise TimeoutError."""
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"{host}:{port} did not accept a connection within {timeout}s: {last!r}")
        try:
            with socket.create_connection((host, port), timeout=min(1.0, remaining)):
                return
        except OSError as exc:
            last = exc
            time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError(f"connection closed after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)


def _request_v0_header(host: str, port: int, api_key: int, api_version: int, body: bytes,
                       timeout: float, client_id: bytes = b"kafkaproto-peers-probe") -> bytes:
    """Send one request with a v1 (non-flexible) request header and return the
    response body after the correlation id (response header v0)."""
    correlation_id = 0x5EE5
    header = struct.pack(">hhih", api_key, api_version, correlation_id, len(client_id)) + client_id
    frame = header + body
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        sock.sendall(struct.pack(">i", len(frame)) + frame)
        (size,) = struct.unpack(">i", _recv_exact(sock, 4))
        if not 4 <= size <= 64 * 1024 * 1024:
            raise PeerError(f"implausible response size {size} from {host}:{port}")
        payload = _recv_exact(sock, size)
    (got_corr,) = struct.unpack_from(">i", payload, 0)
    if got_corr != correlation_id:
        raise PeerError(f"correlation id mismatch: sent {correlation_id}, got {got_corr}")
    return payload[4:]


def api_versions(host: str, port: int, timeout: float = 5.0) -> dict[int, tuple[int, int]]:
    """Ask a broker for ApiVersions (v0) and return ``{api_key: (min, max)}``."""
    body = _request_v0_header(host, port, 18, 0, b"", timeout)
    error_code, count = struct.unpack_from(">hi", body, 0)
    if error_code != 0:
        raise PeerError(f"ApiVersions error_code={error_code} from {host}:{port}")
    out: dict[int, tuple[int, int]] = {}
    for i in range(count):
        key, lo, hi = struct.unpack_from(">hhh", body, 6 + 6 * i)
        out[key] = (lo, hi)
    return out


def metadata_brokers(host: str, port: int, timeout: float = 5.0) -> list[tuple[int, str, int]]:
    """Ask a broker for Metadata (v0, no topics) and return its broker list as
    ``[(node_id, host, port)]``."""
    body = _request_v0_header(host, port, 3, 0, struct.pack(">i", 0), timeout)
    (count,) = struct.unpack_from(">i", body, 0)
    pos = 4
    brokers = []
    for _ in range(count):
        node_id, hlen = struct.unpack_from(">ih", body, pos)
        pos += 6
        bhost = body[pos:pos + hlen].decode("utf-8")
        pos += hlen
        (bport,) = struct.unpack_from(">i", body, pos)
        pos += 4
        brokers.append((node_id, bhost, bport))
    return brokers


def split_frames(stream: bytes) -> list[bytes]:
    """Split a recorded Kafka byte stream into frame payloads (size prefix
    removed).  An incomplete trailing frame is left out."""
    frames = []
    pos = 0
    while pos + 4 <= len(stream):
        (size,) = struct.unpack_from(">i", stream, pos)
        if size < 0 or pos + 4 + size > len(stream):
            break
        frames.append(bytes(stream[pos + 4:pos + 4 + size]))
        pos += 4 + size
    return frames


# --------------------------------------------------------------------------
# process helpers
# --------------------------------------------------------------------------


def _new_log_path(kind: str, port: int | None = None) -> Path:
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    old = sorted(LOG_DIR.glob(f"{kind}-*.log"), key=lambda p: p.stat().st_mtime)
    for stale in old[:-_KEEP_LOGS] if len(old) > _KEEP_LOGS else []:
        with contextlib.suppress(OSError):
            stale.unlink()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    suffix = f"-{port}" if port else ""
    return LOG_DIR / f"{kind}-{stamp}-{os.getpid()}{suffix}-{time.monotonic_ns() % 100000}.log"


def _log_tail(path: Path | None, lines: int = 40) -> str:
    if path is None:
        return "(no log)"
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        return f"(cannot read {path}: {exc})"
    tail = "\n".join(text.splitlines()[-lines:])
    return f"--- last {lines} lines of {path} ---\n{tail}\n--- end of log ---"


def _die_with_parent() -> None:  # pragma: no cover - runs in the child
    """preexec_fn: ask Linux to SIGTERM the child when the parent dies, so a
    killed test run leaves no broker behind."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except Exception:
        pass


def _popen_kwargs() -> dict:
    # PR_SET_PDEATHSIG fires when the *thread* that forked exits, so only use
    # it when starting from the main thread (pytest fixtures run there).
    if sys.platform.startswith("linux") and threading.current_thread() is threading.main_thread():
        return {"preexec_fn": _die_with_parent}
    return {}


def _stop_process(proc: subprocess.Popen | None, grace: float = 5.0) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace)


# --------------------------------------------------------------------------
# tansu
# --------------------------------------------------------------------------


def tansu_version(binary: os.PathLike | None = None, timeout: float = 10.0) -> str:
    """``tansu --version`` output, e.g. ``"tansu 0.6.0"``."""
    out = subprocess.run([str(binary or TANSU_BIN), "--version"], capture_output=True,
                         timeout=timeout, check=True, text=True)
    return out.stdout.strip()


class Tansu:
    """A tansu broker on 127.0.0.1 with in-memory storage.

    ``host``/``port``/``bootstrap`` are where it listens.  By default it
    advertises the same address in Metadata; pass ``advertised_port`` (and
    ``advertised_host``) to advertise something else, e.g. a proxy in front
    of it (see :meth:`behind_proxy`).
    """

    def __init__(self, *, port: int | None = None, advertised_host: str = LOOPBACK,
                 advertised_port: int | None = None, cluster_id: str = "kafkaproto-peers",
                 binary: os.PathLike | None = None, start_timeout: float = 20.0,
                 extra_args: Sequence[str] = ()) -> None:
        self.host = LOOPBACK
        self._requested_port = port
        self.port: int | None = port
        self.advertised_host = advertised_host
        self._requested_advertised_port = advertised_port
        self.advertised_port: int | None = advertised_port
        self.cluster_id = cluster_id
        self.binary = Path(binary) if binary else TANSU_BIN
        self.start_timeout = start_timeout
        self.extra_args = list(extra_args)
        self.proc: subprocess.Popen | None = None
        self.log_path: Path | None = None
        self.startup_seconds: float | None = None
        self.node_id: int | None = None
        self._log_file = None

    # -- public -----------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def advertised(self) -> str:
        return f"{self.advertised_host}:{self.advertised_port}"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, lines: int = 40) -> str:
        return _log_tail(self.log_path, lines)

    def start(self) -> Tansu:
        if self.running:
            return self
        if not (self.binary.is_file() and os.access(self.binary, os.X_OK)):
            raise PeerUnavailable(f"tansu binary not found at {self.binary}: {INSTALL_HINT}")
        # An automatically chosen port can be taken between free_port() and
        # tansu's bind; try a few ports before giving up.
        attempts = 1 if self._requested_port else 3
        last_error: PeerError | None = None
        for _ in range(attempts):
            try:
                self._start_once()
                return self
            except PeerError as exc:
                last_error = exc
                self.stop()
        assert last_error is not None
        raise last_error

    def stop(self) -> None:
        _stop_process(self.proc)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def __enter__(self) -> Tansu:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @classmethod
    @contextlib.contextmanager
    def behind_proxy(cls, **kwargs) -> Iterator[ProxiedBroker]:
        """Start a :class:`RecordingProxy`, then tansu advertising the proxy's
        port, so every client connection (bootstrap and the broker address
        learnt from Metadata) goes through the proxy.  Yields a
        :class:`ProxiedBroker`; clients must use its ``bootstrap``."""
        with RecordingProxy() as proxy:
            with cls(advertised_port=proxy.port, **kwargs) as broker:
                proxy.set_upstream(broker.host, broker.port)
                proxy.clear()
                yield ProxiedBroker(broker, proxy)

    # -- internals --------------------------------------------------------
    def _start_once(self) -> None:
        self.port = self._requested_port or free_port()
        self.advertised_port = self._requested_advertised_port or self.port
        self.log_path = _new_log_path("tansu", self.port)
        self._log_file = open(self.log_path, "wb")
        cmd = [
            str(self.binary), "broker",
            "--cluster-id", self.cluster_id,
            "--listener-url", f"tcp://{self.host}:{self.port}",
            "--advertised-listener-url", f"tcp://{self.advertised_host}:{self.advertised_port}",
            "--storage-engine", "memory://tansu/",
            *self.extra_args,
        ]
        env = dict(os.environ)
        # tansu also reads its settings from these; keep only the flags above.
        for var in ("CLUSTER_ID", "LISTENER_URL", "ADVERTISED_LISTENER_URL", "STORAGE_ENGINE",
                    "SCHEMA_REGISTRY", "OTEL_EXPORTER_OTLP_ENDPOINT"):
            env.pop(var, None)
        self._log_file.write(("$ " + " ".join(cmd) + "\n").encode())
        self._log_file.flush()
        t0 = time.monotonic()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self._log_file,
                                     stderr=subprocess.STDOUT, env=env, cwd=str(BUILD_DIR),
                                     **_popen_kwargs())
        self._wait_ready(t0)
        self.startup_seconds = time.monotonic() - t0

    def _wait_ready(self, t0: float) -> None:
        deadline = t0 + self.start_timeout
        last: BaseException | None = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise PeerError(f"tansu exited with code {self.proc.returncode} during start-up\n"
                                f"{self.log_tail()}")
            try:
                keys = api_versions(self.host, self.port, timeout=2.0)
                if 3 not in keys or 0 not in keys:
                    raise PeerError(f"tansu ApiVersions lacks Metadata/Produce: {sorted(keys)}")
                brokers = metadata_brokers(self.host, self.port, timeout=2.0)
                wanted = (self.advertised_host, self.advertised_port)
                match = [b for b in brokers if (b[1], b[2]) == wanted]
                if not match:
                    raise PeerError(f"tansu Metadata brokers {brokers} do not advertise {wanted}")
                self.node_id = match[0][0]
                return
            except (OSError, PeerError, struct.error) as exc:
                last = exc
                time.sleep(0.05)
        raise PeerError(f"tansu on {self.bootstrap} not ready within {self.start_timeout}s "
                        f"(last error: {last!r})\n{self.log_tail()}")


# --------------------------------------------------------------------------
# librdkafka mock cluster
# --------------------------------------------------------------------------


class MockCluster:
    """librdkafka's mock cluster (``test.mock.num.brokers``) in a child process.

    The child (``mock_cluster_main.py``) prints the brokers' addresses and
    keeps the cluster up until its stdin is closed.  The mock brokers listen
    on 127.0.0.1 ports chosen by librdkafka and advertise exactly those, so
    a proxy can only see bootstrap connections, not the ones clients open to
    the advertised brokers.

    Known limits of the mock: no CreateTopics/DeleteTopics/Describe* admin
    APIs (topics are auto-created with 4 partitions on first Metadata or
    Produce), and only the API versions librdkafka itself uses.
    """

    def __init__(self, *, num_brokers: int = 1, python: str | None = None,
                 start_timeout: float = 30.0, config: dict[str, str] | None = None,
                 max_seconds: float = 3600.0) -> None:
        self.num_brokers = num_brokers
        self.python = python or sys.executable
        self.start_timeout = start_timeout
        self.config = dict(config or {})
        self.max_seconds = max_seconds
        self.proc: subprocess.Popen | None = None
        self.log_path: Path | None = None
        self.brokers: list[tuple[str, int]] = []
        self.startup_seconds: float | None = None
        self._log_file = None

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{h}:{p}" for h, p in self.brokers)

    @property
    def host(self) -> str:
        return self.brokers[0][0]

    @property
    def port(self) -> int:
        return self.brokers[0][1]

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, lines: int = 40) -> str:
        return _log_tail(self.log_path, lines)

    def start(self) -> MockCluster:
        if self.running:
            return self
        self.log_path = _new_log_path("mock")
        self._log_file = open(self.log_path, "wb")
        cmd = [self.python, "-u", str(MOCK_MAIN), "--brokers", str(self.num_brokers),
               "--max-seconds", str(self.max_seconds)]
        for k, v in self.config.items():
            cmd += ["--conf", f"{k}={v}"]
        t0 = time.monotonic()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._log_file, **_popen_kwargs())
        try:
            line = self._read_line(t0 + self.start_timeout)
            if line.startswith("UNAVAILABLE"):
                raise PeerUnavailable(f"mock cluster: {line}: {INSTALL_HINT}")
            if not line.startswith("BOOTSTRAP "):
                raise PeerError(f"mock cluster printed {line!r}\n{self.log_tail()}")
            self.brokers = []
            for item in line.split(" ", 1)[1].split(","):
                host, _, port = item.rpartition(":")
                self.brokers.append((host, int(port)))
            remaining = max(0.5, t0 + self.start_timeout - time.monotonic())
            wait_for_port(self.host, self.port, timeout=remaining)
            keys = api_versions(self.host, self.port, timeout=5.0)
            if 0 not in keys:
                raise PeerError(f"mock cluster ApiVersions lacks Produce: {sorted(keys)}")
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - t0
        return self

    def _read_line(self, deadline: float) -> str:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        buf = b""
        while b"\n" not in buf:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise PeerError(f"mock cluster printed no address within {self.start_timeout}s\n"
                                f"{self.log_tail()}")
            ready, _, _ = select.select([fd], [], [], min(remaining, 0.5))
            if ready:
                chunk = os.read(fd, 4096)
                if not chunk:
                    self.proc.wait(timeout=5)
                    raise PeerError(f"mock cluster exited (code {self.proc.returncode}) before "
                                    f"printing its address\n{self.log_tail()}")
                buf += chunk
        return buf.split(b"\n", 1)[0].decode().strip()

    def stop(self) -> None:
        proc = self.proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(OSError):
                if proc.stdin:
                    proc.stdin.close()  # the child exits when its stdin closes
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                _stop_process(proc)
        if proc is not None and proc.stdout is not None:
            proc.stdout.close()
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def __enter__(self) -> MockCluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


# --------------------------------------------------------------------------
# recording proxy
# --------------------------------------------------------------------------


class RecordedConnection:
    """The two raw byte streams of one proxied connection.

    When the proxy decodes (``RecordingProxy(decode=True)``), ``middle`` is
    the connection's :class:`kafkaproto.proxy.ProxyConnection`, ``events``
    lists ``(to_server, event)`` in the order they came out of it, and
    ``forwarded_to_server`` / ``forwarded_to_client`` are the bytes the
    proxy wrote (its events' ``parts()``).
    """

    def __init__(self, index: int, client_address: tuple[str, int], middle=None, rewrite=None) -> None:
        self.index = index
        self.rewrite = rewrite
        self.client_address = client_address
        self.error: BaseException | None = None
        self.closed = threading.Event()
        self.middle = middle
        self.events: list = []
        self._c2s = bytearray()
        self._s2c = bytearray()
        self._fwd = (bytearray(), bytearray())  # to the client, to the server
        self._lock = threading.Lock()

    @property
    def client_to_server(self) -> bytes:
        with self._lock:
            return bytes(self._c2s)

    @property
    def server_to_client(self) -> bytes:
        with self._lock:
            return bytes(self._s2c)

    @property
    def forwarded_to_server(self) -> bytes:
        with self._lock:
            return bytes(self._fwd[1])

    @property
    def forwarded_to_client(self) -> bytes:
        with self._lock:
            return bytes(self._fwd[0])

    def client_frames(self) -> list[bytes]:
        """Complete request frames (without the 4-byte size)."""
        return split_frames(self.client_to_server)

    def server_frames(self) -> list[bytes]:
        """Complete response frames (without the 4-byte size)."""
        return split_frames(self.server_to_client)

    def request_api_keys(self) -> list[int]:
        return [struct.unpack_from(">h", f, 0)[0] for f in self.client_frames() if len(f) >= 2]

    def wait_closed(self, timeout: float = 5.0) -> bool:
        return self.closed.wait(timeout)

    def _append(self, to_server: bool, data: bytes) -> None:
        with self._lock:
            (self._c2s if to_server else self._s2c).extend(data)

    def snapshot(self) -> tuple[bytes, bytes, bytes, bytes, list]:
        """At one moment: (bytes from the client, from the server, forwarded to
        the server, forwarded to the client, events)."""
        with self._lock:
            return bytes(self._c2s), bytes(self._s2c), bytes(self._fwd[1]), bytes(self._fwd[0]), list(self.events)

    def _through_middle(self, to_server: bool, data: bytes) -> list:
        """Records the bytes and feeds them to the ProxyConnection → the buffers to forward."""
        with self._lock:  # a response is fed after the request it answers: both pumps take turns here
            (self._c2s if to_server else self._s2c).extend(data)
            events = self.middle.from_client(data) if to_server else self.middle.from_broker(data)
            self.events += [(to_server, ev) for ev in events]
            parts = []
            for ev in events:
                new = None if self.rewrite is None else self.rewrite(self, to_server, ev)
                parts += ev.parts() if new is None else new
            for p in parts:
                self._fwd[to_server].extend(p)
        return parts

    def __repr__(self) -> str:
        return (f"<RecordedConnection #{self.index} from {self.client_address} "
                f"c2s={len(self._c2s)}B s2c={len(self._s2c)}B closed={self.closed.is_set()}>")


class RecordingProxy:
    """A TCP forwarder on 127.0.0.1 that records every connection's bytes.

    ``RecordingProxy(upstream_host, upstream_port)``; the upstream may also be
    set later with :meth:`set_upstream` (a client connecting before that is
    disconnected).  ``connections`` lists :class:`RecordedConnection` objects
    in accept order.  With ``decode=True`` each connection goes through a
    :class:`kafkaproto.proxy.ProxyConnection` that decodes every frame, and
    what the proxy forwards is what that hands back (see
    :class:`RecordedConnection`); ``rewrite(connection, to_server, event)``,
    if set, may return other buffers to forward in place of an event's
    (e.g. its message changed, ``event.encode()``), or None to keep them.
    """

    POLL = 0.1  # seconds between checks of the stop flag

    def __init__(self, upstream_host: str | None = None, upstream_port: int | None = None,
                 *, host: str = LOOPBACK, port: int = 0, connect_timeout: float = 5.0,
                 decode: bool = False, rewrite=None) -> None:
        self.decode = decode
        self.rewrite = rewrite
        self.host = host
        self._bind_port = port
        self.port: int | None = None
        self.upstream: tuple[str, int] | None = (
            (upstream_host, int(upstream_port)) if upstream_host and upstream_port else None)
        self.connect_timeout = connect_timeout
        self._connections: list[RecordedConnection] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._listener: socket.socket | None = None
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def connections(self) -> list[RecordedConnection]:
        with self._lock:
            return list(self._connections)

    def clear(self, settle: float = 0.0, timeout: float = 5.0) -> None:
        """Forget the connections recorded so far (open ones keep forwarding).

        With ``settle`` > 0, first wait (at most ``timeout``) until no
        recorded connection is open and none was accepted for ``settle``
        seconds, so that a connection a finished client opened just before
        is not accepted after the clear and recorded as an empty stream.
        """
        if settle > 0:
            deadline = time.monotonic() + timeout
            seen, quiet_since = -1, time.monotonic()
            while time.monotonic() < deadline:
                conns = self.connections
                if len(conns) != seen or any(not c.closed.is_set() for c in conns):
                    seen, quiet_since = len(conns), time.monotonic()
                elif time.monotonic() - quiet_since >= settle:
                    break
                time.sleep(0.02)
        with self._lock:
            self._connections = []

    def set_upstream(self, host: str, port: int) -> None:
        self.upstream = (host, int(port))

    def wait_for_connections(self, n: int, timeout: float = 5.0) -> list[RecordedConnection]:
        deadline = time.monotonic() + timeout
        while len(self.connections) < n and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.connections

    def start(self) -> RecordingProxy:
        if self._listener is not None:
            return self
        self._stop.clear()
        lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        lst.bind((self.host, self._bind_port))
        lst.listen(64)
        lst.settimeout(self.POLL)
        self._listener = lst
        self.port = lst.getsockname()[1]
        self._spawn(self._accept_loop, "proxy-accept")
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.close()
        with self._lock:
            socks = list(self._sockets)
        for s in socks:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
        deadline = time.monotonic() + timeout
        for t in list(self._threads):
            t.join(max(0.0, deadline - time.monotonic()))
        for s in socks:
            with contextlib.suppress(OSError):
                s.close()
        self._listener = None
        self._threads = []

    def __enter__(self) -> RecordingProxy:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- internals --------------------------------------------------------
    def _spawn(self, target, name, *args) -> None:
        t = threading.Thread(target=target, args=args, name=name, daemon=True)
        self._threads.append(t)
        t.start()

    def _accept_loop(self) -> None:
        assert self._listener is not None
        while not self._stop.is_set():
            try:
                client, addr = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(None)
            upstream = self.upstream
            if upstream is None:
                client.close()
                continue
            try:
                server = socket.create_connection(upstream, timeout=self.connect_timeout)
                server.settimeout(None)
            except OSError:
                client.close()
                continue
            for s in (client, server):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            middle = None
            if self.decode:
                from kafkaproto.proxy import ProxyConnection

                middle = ProxyConnection(decode=True, zero_copy=False)
            with self._lock:
                conn = RecordedConnection(len(self._connections), addr, middle, self.rewrite)
                self._connections.append(conn)
                self._sockets += [client, server]
            done = [0]
            done_lock = threading.Lock()
            self._spawn(self._pump, f"proxy-c2s-{conn.index}", client, server, conn, True, done, done_lock)
            self._spawn(self._pump, f"proxy-s2c-{conn.index}", server, client, conn, False, done, done_lock)

    def _pump(self, src: socket.socket, dst: socket.socket, conn: RecordedConnection,
              to_server: bool, done: list, done_lock: threading.Lock) -> None:
        try:
            while not self._stop.is_set():
                ready, _, _ = select.select([src], [], [], self.POLL)
                if not ready:
                    continue
                data = src.recv(65536)
                if not data:
                    with contextlib.suppress(OSError):
                        dst.shutdown(socket.SHUT_WR)
                    break
                if conn.middle is None:
                    conn._append(to_server, data)  # record before forwarding
                    dst.sendall(data)
                else:
                    for part in conn._through_middle(to_server, data):
                        dst.sendall(part)
        except (OSError, ValueError) as exc:
            if not self._stop.is_set():
                conn.error = exc
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
        finally:
            with done_lock:
                done[0] += 1
                last = done[0] == 2
            if last:
                for s in (src, dst):
                    with contextlib.suppress(OSError):
                        s.close()
                with self._lock:
                    self._sockets = [s for s in self._sockets if s not in (src, dst)]
                conn.closed.set()


@dataclass
class ProxiedBroker:
    """A broker whose advertised address is a :class:`RecordingProxy`."""

    broker: Tansu
    proxy: RecordingProxy

    @property
    def bootstrap(self) -> str:
        return self.proxy.bootstrap

    @property
    def host(self) -> str:
        return self.proxy.host

    @property
    def port(self) -> int:
        return self.proxy.port  # type: ignore[return-value]

    @property
    def connections(self) -> list[RecordedConnection]:
        return self.proxy.connections
