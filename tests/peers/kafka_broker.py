"""Apache Kafka 4.4.0 itself on 127.0.0.1: single-node and three-node KRaft
clusters, and Kafka's own command-line tools.

The jars come from Maven Central (``tools/peers/fetch_kafka.sh``, run here
when needed; quick and offline once done) into ``build/peers/kafka-4.4.0/``.

Every node runs in combined mode (``process.roles=broker,controller``) with a
static voter set (``controller.quorum.voters``): one JVM per node, ephemeral
ports on 127.0.0.1 only, plaintext listeners, storage formatted by Kafka's own
``StorageTool``, internal topics with replication factor 1 on a single node
(the cluster size otherwise) and one partition, so that a first consumer group
or transaction does not wait for fifty partitions to be made.

Each cluster has a work folder under the system's temporary folder::

    kafkaproto-kafka-XXXX/
        node-1/server.properties    the node's configuration
        node-1/server.log           its log (log4j 2, INFO)
        node-1/data/                its log dir: <topic>-<partition>/ segment files,
                                    __cluster_metadata-0/, meta.properties

It is removed on :meth:`KafkaCluster.stop` unless ``keep=True`` (the pytest
fixtures keep it, and print where, when a test of the session failed or the
cluster did not start).

    with KafkaCluster() as kafka:                        # one node
        kafka.bootstrap                                  # "127.0.0.1:PORT"
        kafka.log_dir                                    # Path of node 1's data/
        kafka.tool("kafka-topics", "--bootstrap-server", kafka.bootstrap, "--list")
        kafka.dump_log_segments(kafka.segment_files("t", 0)[0], "--deep-iteration")

    with KafkaCluster(nodes=3) as cluster:               # leaders can move
        cluster.stop_node(2); cluster.start_node(2)
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from .brokers import (
    BUILD_DIR,
    LOOPBACK,
    REPO_ROOT,
    PeerError,
    PeerUnavailable,
    _log_tail,
    _popen_kwargs,
    api_versions,
    free_port,
    metadata_brokers,
)

__all__ = [
    "KAFKA_VERSION",
    "KAFKA_DIR",
    "TOOLS",
    "KafkaCluster",
    "KafkaNode",
    "ensure_kafka",
    "kafka_classpath",
    "random_cluster_id",
    "run_kafka_tool",
]

KAFKA_VERSION = "4.4.0"
KAFKA_DIR = BUILD_DIR / f"kafka-{KAFKA_VERSION}"
FETCH_SCRIPT = REPO_ROOT / "tools" / "peers" / "fetch_kafka.sh"
LOG4J_CONFIG = REPO_ROOT / "tools" / "peers" / "kafka" / "log4j2.properties"
FETCH_HINT = "run `make peers` (tools/peers/fetch_kafka.sh needs mvn, Java 17 and Maven Central once)"

# The scripts of Kafka's bin/ folder, by the classes they run.
TOOLS = {
    "kafka-acls": "org.apache.kafka.tools.AclCommand",
    "kafka-broker-api-versions": "org.apache.kafka.tools.BrokerApiVersionsCommand",
    "kafka-client-metrics": "org.apache.kafka.tools.ClientMetricsCommand",
    "kafka-cluster": "org.apache.kafka.tools.ClusterTool",
    "kafka-configs": "org.apache.kafka.tools.ConfigCommand",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-delegation-tokens": "org.apache.kafka.tools.DelegationTokenCommand",
    "kafka-delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "kafka-dump-log": "org.apache.kafka.tools.DumpLogSegments",
    "kafka-features": "org.apache.kafka.tools.FeatureCommand",
    "kafka-groups": "org.apache.kafka.tools.GroupsCommand",
    "kafka-leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "kafka-log-dirs": "org.apache.kafka.tools.LogDirsCommand",
    "kafka-metadata-quorum": "org.apache.kafka.tools.MetadataQuorumCommand",
    "kafka-reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "kafka-share-groups": "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
    "kafka-storage": "kafka.tools.StorageTool",
    "kafka-streams-groups": "org.apache.kafka.tools.streams.StreamsGroupCommand",
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-transactions": "org.apache.kafka.tools.TransactionsCommand",
}

# Short-lived tools: a small heap, no JIT beyond C1 (they start faster).
TOOL_JVM_ARGS = ("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
# The broker: a bounded heap (three nodes share a small machine), the serial
# collector and the C1 compiler only: both start faster than G1 and C2 and are
# enough for test loads (a cluster's jvm_args=["-XX:TieredStopAtLevel=4"] turns
# C2 back on).  With the class-data archive below a node starts in about half
# the time.
NODE_JVM_ARGS = ("-Xms128m", "-Xmx768m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss1m")

_fetch_lock = threading.Lock()
_fetched = False


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        raise PeerUnavailable("no java on PATH (install Java 17 or set JAVA_HOME)")
    return found


def ensure_kafka() -> list[Path]:
    """The Kafka 4.4.0 jars, fetched first if needed (once per process)."""
    global _fetched
    with _fetch_lock:
        if not _fetched:
            bash = shutil.which("bash")
            if bash is None:
                raise PeerUnavailable(f"bash is needed to run {FETCH_SCRIPT.name}")
            proc = subprocess.run([bash, str(FETCH_SCRIPT)], cwd=str(REPO_ROOT), stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=1800)
            if proc.returncode != 0:
                out = proc.stdout.decode("utf-8", "replace")[-4000:]
                raise PeerUnavailable(f"{FETCH_SCRIPT.name} failed (exit {proc.returncode}): {FETCH_HINT}\n{out}")
            _fetched = True
    listing = KAFKA_DIR / ".jars"
    if not listing.exists():
        raise PeerUnavailable(f"{listing} is missing: {FETCH_HINT}")
    return [KAFKA_DIR / name for name in listing.read_text().split()]


def kafka_classpath() -> str:
    return os.pathsep.join(str(p) for p in ensure_kafka())


def run_kafka_tool(main: str, *args: str, timeout: float = 120.0, input: str | None = None,
                   check: bool = True, jvm_args: Sequence[str] = TOOL_JVM_ARGS) -> subprocess.CompletedProcess:
    """Runs one of Kafka's command-line tools: ``main`` is a script name of
    :data:`TOOLS` (``"kafka-topics"``) or a class name; returns the finished
    process (text output).  With ``check`` a non-zero exit raises PeerError
    with both outputs."""
    cls = TOOLS.get(main, main)
    cmd = [_java(), *jvm_args, *_cds_args(cds_archive()), f"-Dlog4j2.configurationFile={LOG4J_CONFIG}",
           "-Dkafkaproto.log.level=WARN",
           "-Dkafkaproto.log.target=SYSTEM_ERR", "-cp", kafka_classpath(), cls, *args]
    proc = subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=timeout,
                          cwd=str(BUILD_DIR))
    if check and proc.returncode != 0:
        raise PeerError(f"{main} {' '.join(args)} exited with {proc.returncode}\n"
                        f"--- stdout ---\n{proc.stdout[-4000:]}\n--- stderr ---\n{proc.stderr[-4000:]}")
    return proc


# Class-data sharing (JEP 350): the classes a broker loads, parsed and checked
# once, mapped by every later JVM on the same classpath (nodes and tools).  The
# first node of the first cluster a process starts without an archive writes
# one when it exits in order; the name carries the JVM's version and the jar
# set, so another Java or another fetch makes a new one.
_cds_lock = threading.Lock()
_cds_claimed = False


@functools.lru_cache(maxsize=1)
def cds_archive() -> Path:
    """Where the archive for this JVM and these jars is (it may not exist yet)."""
    version = subprocess.run([_java(), "-version"], capture_output=True, text=True, timeout=60).stderr
    key = hashlib.sha256((version + kafka_classpath()).encode()).hexdigest()[:16]
    return KAFKA_DIR / f"classes-{key}.jsa"


def _cds_args(archive: Path | None, train: bool = False) -> list[str]:
    """JVM options that use the archive, or (``train``, once per process) that
    write it at exit, to a temporary name moved into place once complete."""
    global _cds_claimed
    if archive is None:
        return []
    if archive.exists():
        return [f"-XX:SharedArchiveFile={archive}"]
    if train:
        with _cds_lock:
            if not _cds_claimed:
                _cds_claimed = True
                for stale in archive.parent.glob("classes-*.jsa.*.tmp"):  # left by killed runs
                    with contextlib.suppress(OSError):
                        if stale.stat().st_mtime < time.time() - 3600:
                            stale.unlink()
                return [f"-XX:ArchiveClassesAtExit={archive}.{os.getpid()}.tmp"]
    return []


def random_cluster_id() -> str:
    """A cluster id as Kafka's ``Uuid.randomUuid()`` makes one: 16 random bytes
    in URL-safe base64 without padding, never starting with '-' (Kafka
    refuses those on the command line) and never the reserved zero/one ids."""
    while True:
        u = uuid.uuid4().bytes
        text = base64.urlsafe_b64encode(u).decode().rstrip("=")
        if not text.startswith("-") and u not in (bytes(16), bytes(15) + b"\x01"):
            return text


class KafkaNode:
    """One combined broker + controller JVM of a :class:`KafkaCluster`."""

    def __init__(self, cluster: KafkaCluster, node_id: int, port: int, internal_port: int,
                 controller_port: int) -> None:
        self.cluster = cluster
        self.node_id = node_id
        self.host = LOOPBACK
        self.port = port
        self.internal_port = internal_port
        self.controller_port = controller_port
        # what Metadata tells clients; the nodes reach each other on internal_port
        self.advertised_host, self.advertised_port = cluster.advertised.get(node_id, (self.host, port))
        self.dir = cluster.work_dir / f"node-{node_id}"
        self.log_dir = self.dir / "data"
        self.config_path = self.dir / "server.properties"
        self.log_path = self.dir / "server.log"
        self.proc: subprocess.Popen | None = None
        self.startup_seconds: float | None = None
        self.writes_cds: Path | None = None  # the archive this JVM writes at exit
        self._log_file = None

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def advertised(self) -> str:
        return f"{self.advertised_host}:{self.advertised_port}"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, lines: int = 60) -> str:
        return _log_tail(self.log_path, lines)

    def properties(self) -> dict[str, str]:
        c = self.cluster
        n = len(c.nodes)
        rf = str(min(n, 3))
        props = {
            "process.roles": "broker,controller",
            "node.id": str(self.node_id),
            "controller.quorum.voters": c.voters,
            # clients (PLAINTEXT, maybe advertised as a proxy), replication (INTERNAL), the quorum
            "listeners": f"PLAINTEXT://{self.host}:{self.port},INTERNAL://{self.host}:{self.internal_port},"
                         f"CONTROLLER://{self.host}:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://{self.advertised},INTERNAL://{self.host}:{self.internal_port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "INTERNAL",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.log_dir),
            "num.partitions": "1",
            "default.replication.factor": rf,
            "offsets.topic.replication.factor": rf,
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": rf,
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "1",
            "share.coordinator.state.topic.replication.factor": rf,
            "share.coordinator.state.topic.min.isr": "1",
            "share.coordinator.state.topic.num.partitions": "1",
            "group.initial.rebalance.delay.ms": "0",
            # a stopped node's partitions get new leaders quickly
            "broker.session.timeout.ms": "6000",
            "broker.heartbeat.interval.ms": "1000",
        }
        props.update(c.extra_properties)
        props.update(c.node_properties.get(self.node_id, {}))
        return props

    def write_config(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        lines = [f"{k}={v}" for k, v in self.properties().items()]
        self.config_path.write_text("\n".join(lines) + "\n")

    def format_command(self) -> list[str]:
        c = self.cluster
        args = ["format", "-t", c.cluster_id, "-c", str(self.config_path), "--ignore-formatted"]
        if c.release_version:
            args += ["--release-version", c.release_version]
        for name, level in c.features.items():
            args += ["--feature", f"{name}={level}"]
        return args

    def launch(self) -> None:
        """Starts the JVM (the storage is formatted); does not wait."""
        if self.running:
            return
        self._log_file = open(self.log_path, "ab")
        # an archive is written with Kafka's jars alone: a longer class path would not fit the other JVMs
        cds = _cds_args(self.cluster.cds, train=not self.cluster.extra_classpath)
        if cds and cds[0].startswith("-XX:ArchiveClassesAtExit="):
            self.writes_cds = Path(cds[0].split("=", 1)[1])
        cmd = [_java(), *NODE_JVM_ARGS, *cds, *self.cluster.jvm_args, f"-Dlog4j2.configurationFile={LOG4J_CONFIG}",
               "-Djava.awt.headless=true", "-cp", self.cluster.classpath, "kafka.Kafka", str(self.config_path)]
        self._log_file.write(("$ " + " ".join(cmd[:2]) + " ... kafka.Kafka " + str(self.config_path) + "\n").encode())
        self._log_file.flush()
        self._t0 = time.monotonic()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self._log_file,
                                     stderr=subprocess.STDOUT, cwd=str(self.dir), **_popen_kwargs())

    def wait_ready(self, deadline: float, expect_nodes: Iterable[int]) -> None:
        """Until the node answers ApiVersions and its Metadata lists every
        node of ``expect_nodes`` at its advertised address."""
        wanted = {(n.node_id, n.advertised_host, n.advertised_port) for n in self.cluster.nodes
                  if n.node_id in set(expect_nodes)}
        last: BaseException | None = None
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                code = None if self.proc is None else self.proc.returncode
                raise PeerError(f"Kafka node {self.node_id} exited with code {code} during start-up "
                                f"(work folder {self.cluster.work_dir})\n{self.log_tail()}")
            try:
                keys = api_versions(self.host, self.port, timeout=2.0)
                if 0 not in keys or 3 not in keys:
                    raise PeerError(f"ApiVersions lacks Produce/Metadata: {sorted(keys)}")
                got = set(metadata_brokers(self.host, self.port, timeout=2.0))
                if not wanted <= got:
                    raise PeerError(f"Metadata lists {sorted(got)}, waiting for {sorted(wanted)}")
                self.startup_seconds = time.monotonic() - self._t0
                return
            except (OSError, PeerError, ValueError) as exc:
                last = exc
                time.sleep(0.1)
        raise PeerError(f"Kafka node {self.node_id} on {self.bootstrap} not ready within "
                        f"{self.cluster.start_timeout:.0f}s (last error: {last!r}; work folder "
                        f"{self.cluster.work_dir})\n{self.log_tail()}")

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM (Kafka's orderly shutdown), SIGKILL after ``grace`` seconds."""
        self.signal_stop()
        self.wait_stopped(grace)

    def signal_stop(self) -> None:
        if self.running:
            self.proc.terminate()

    def wait_stopped(self, grace: float = 10.0) -> None:
        proc = self.proc
        if proc is not None:
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=grace)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        self._keep_cds()

    def _keep_cds(self) -> None:
        tmp, self.writes_cds = self.writes_cds, None
        if tmp is None or self.proc is None:
            return
        # an orderly exit (SIGTERM is 143 from the JVM) has written the whole archive
        if self.proc.returncode in (0, 143) and tmp.exists() and tmp.stat().st_size > 0:
            os.replace(tmp, self.cluster.cds)
            for other in self.cluster.cds.parent.glob("classes-*.jsa"):  # another JVM's or jar set's
                if other != self.cluster.cds:
                    with contextlib.suppress(OSError):
                        other.unlink()
        else:
            with contextlib.suppress(OSError):
                tmp.unlink()

    def kill(self) -> None:
        if self.running:
            self.proc.kill()
        self.wait_stopped()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<KafkaNode {self.node_id} {self.bootstrap} controller :{self.controller_port} {state}>"


class KafkaCluster:
    """``nodes`` combined KRaft nodes of Apache Kafka 4.4.0 on 127.0.0.1.

    ``extra_properties`` are added to (and override) every node's
    ``server.properties``, e.g. an authorizer::

        {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
         "super.users": "User:ANONYMOUS"}

    ``node_properties`` ({node_id: {...}}) apply to one node only.
    ``advertised`` ({node_id: (host, port)}) is the client address a node's
    Metadata gives instead of its own, e.g. a proxy in front of it (start the
    proxy first; it forwards to ``node.bootstrap``); the nodes replicate and
    talk among themselves on a listener of their own, never through it.
    ``features`` ({"share.version": 1}) and ``release_version`` ("4.4-IV2")
    are handed to the storage format (the defaults: the release's latest
    production metadata version and features).  ``extra_classpath``: more
    classes for the nodes (a metrics reporter, an authorizer of one's own),
    after Kafka's jars.
    """

    def __init__(self, nodes: int = 1, *, extra_properties: Mapping[str, object] | None = None,
                 node_properties: Mapping[int, Mapping[str, object]] | None = None,
                 features: Mapping[str, int] | None = None, release_version: str | None = None,
                 advertised: Mapping[int, tuple[str, int]] | None = None,
                 jvm_args: Sequence[str] = (), extra_classpath: Sequence[os.PathLike | str] = (),
                 start_timeout: float = 120.0, name: str = "kafka") -> None:
        if nodes < 1:
            raise ValueError("a cluster needs at least one node")
        self.size = nodes
        self.extra_properties = {k: str(v) for k, v in (extra_properties or {}).items()}
        self.node_properties = {int(n): {k: str(v) for k, v in p.items()} for n, p in (node_properties or {}).items()}
        self.features = dict(features or {})
        self.release_version = release_version
        self.advertised = {int(n): (h, int(p)) for n, (h, p) in (advertised or {}).items()}
        self.jvm_args = list(jvm_args)
        self.extra_classpath = [str(p) for p in extra_classpath]
        self.start_timeout = start_timeout
        self.name = name
        self.cluster_id = random_cluster_id()
        self.work_dir: Path | None = None
        self.nodes: list[KafkaNode] = []
        self.classpath = ""
        self.startup_seconds: float | None = None
        self.format_seconds: float | None = None
        self.cds: Path | None = None

    # -- addresses --------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        """Every node's client listener, comma-separated."""
        return ",".join(n.bootstrap for n in self.nodes)

    @property
    def host(self) -> str:
        return self.nodes[0].host

    @property
    def port(self) -> int:
        return self.nodes[0].port

    @property
    def log_dir(self) -> Path:
        """Node 1's log dir (for one node: the only one)."""
        return self.nodes[0].log_dir

    @property
    def voters(self) -> str:
        return ",".join(f"{n.node_id}@{n.host}:{n.controller_port}" for n in self.nodes)

    @property
    def running(self) -> bool:
        return bool(self.nodes) and all(n.running for n in self.nodes)

    def node(self, node_id: int) -> KafkaNode:
        for n in self.nodes:
            if n.node_id == node_id:
                return n
        raise KeyError(f"no node {node_id} in {self.nodes}")

    def log_tails(self, lines: int = 40) -> str:
        return "\n".join(n.log_tail(lines) for n in self.nodes)

    # -- segment files -----------------------------------------------------
    def partition_dir(self, topic: str, partition: int = 0, node_id: int | None = None) -> Path:
        """Where a node (by default the first that has it) keeps a partition's segments."""
        nodes = [self.node(node_id)] if node_id is not None else self.nodes
        for n in nodes:
            d = n.log_dir / f"{topic}-{partition}"
            if d.is_dir():
                return d
        raise FileNotFoundError(f"no node of {[n.node_id for n in nodes]} has {topic}-{partition}")

    def segment_files(self, topic: str, partition: int = 0, node_id: int | None = None) -> list[Path]:
        """The partition's ``*.log`` segment files, oldest first."""
        return sorted(self.partition_dir(topic, partition, node_id).glob("*.log"))

    # -- tools -------------------------------------------------------------
    def tool(self, main: str, *args: str, **kwargs) -> subprocess.CompletedProcess:
        """:func:`run_kafka_tool`; ``{bootstrap}`` in an argument is this cluster's address."""
        return run_kafka_tool(main, *(a.replace("{bootstrap}", self.bootstrap) for a in args), **kwargs)

    def dump_log_segments(self, *files: os.PathLike | str, args: Sequence[str] = ("--deep-iteration",),
                          timeout: float = 120.0) -> str:
        """Kafka's ``DumpLogSegments`` over segment (or index) files: its text output."""
        return self.tool("kafka-dump-log", *args, "--files", ",".join(str(f) for f in files),
                         timeout=timeout).stdout

    # -- life cycle --------------------------------------------------------
    def start(self) -> KafkaCluster:
        if self.running:
            return self
        self.classpath = os.pathsep.join([kafka_classpath(), *self.extra_classpath])
        self.cds = cds_archive()
        t0 = time.monotonic()
        # A port chosen by free_port() can be taken before the JVM binds it:
        # try with fresh ports (and a fresh folder) a few times.
        last: PeerError | None = None
        for _ in range(3):
            try:
                self._start_once()
                self.startup_seconds = time.monotonic() - t0
                return self
            except PeerError as exc:
                last = exc
                bound = "Address already in use" in self.log_tails(200)
                self.stop(keep=not bound)
                if not bound:
                    break
        assert last is not None
        raise last

    def _start_once(self) -> None:
        self.work_dir = Path(tempfile.mkdtemp(prefix=f"kafkaproto-{self.name}-"))
        ports = set()
        while len(ports) < 3 * self.size:
            ports.add(free_port())
        p = sorted(ports)
        self.nodes = [KafkaNode(self, i + 1, *p[3 * i:3 * i + 3]) for i in range(self.size)]
        for n in self.nodes:
            n.write_config()
        t0 = time.monotonic()
        self._format(self.nodes)
        self.format_seconds = time.monotonic() - t0
        for n in self.nodes:
            n.launch()
        deadline = time.monotonic() + self.start_timeout
        every = [n.node_id for n in self.nodes]
        for n in self.nodes:
            n.wait_ready(deadline, every)

    def _format(self, nodes: Sequence[KafkaNode]) -> None:
        """Kafka's StorageTool on every node's storage, the nodes at once."""
        procs = []
        for n in nodes:
            cls = TOOLS["kafka-storage"]
            cmd = [_java(), *TOOL_JVM_ARGS, *_cds_args(self.cds), f"-Dlog4j2.configurationFile={LOG4J_CONFIG}",
                   "-cp", self.classpath,
                   cls, *n.format_command()]
            out = open(n.dir / "format.log", "wb")
            procs.append((n, out, subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out,
                                                   stderr=subprocess.STDOUT, cwd=str(n.dir))))
        failed = []
        for n, out, proc in procs:
            try:
                code = proc.wait(timeout=self.start_timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                code = "timeout"
            out.close()
            if code != 0:
                failed.append(f"node {n.node_id} (exit {code}):\n{_log_tail(n.dir / 'format.log')}")
        if failed:
            raise PeerError(f"Kafka's StorageTool format failed (work folder {self.work_dir}):\n" + "\n".join(failed))

    def stop_node(self, node_id: int, grace: float = 10.0) -> None:
        """Stops one node (its storage stays): its partitions move to others."""
        self.node(node_id).stop(grace)

    def start_node(self, node_id: int, timeout: float | None = None) -> None:
        """Starts a stopped node again and waits until it is back in the cluster's Metadata."""
        n = self.node(node_id)
        n.launch()
        n.wait_ready(time.monotonic() + (timeout or self.start_timeout), [x.node_id for x in self.nodes if x.running])

    def stop(self, keep: bool = False, grace: float = 5.0) -> None:
        """Stops every node.  With ``keep`` the work folder stays and the nodes
        get Kafka's orderly shutdown (SIGTERM, SIGKILL after ``grace``), so
        their logs end cleanly; without, the nodes are killed (their data is
        thrown away: an orderly shutdown of a whole combined-mode cluster
        waits for controllers that are going away) and the folder removed."""
        for n in self.nodes:
            if n.writes_cds is not None:  # the archive is written in an orderly exit only
                n.stop(grace=60.0)
        for n in self.nodes:
            if keep:
                n.signal_stop()
            elif n.running:
                n.proc.kill()
        for n in self.nodes:
            n.wait_stopped(grace)
        if self.work_dir is not None and not keep:
            shutil.rmtree(self.work_dir, ignore_errors=True)

    def __enter__(self) -> KafkaCluster:
        return self.start()

    def __exit__(self, exc_type, *exc) -> None:
        self.stop(keep=exc_type is not None)

    def __repr__(self) -> str:
        return f"<KafkaCluster {self.name} {self.cluster_id} nodes={self.nodes}>"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m peers.kafka_broker [--nodes 3] [--property k=v ...]`` (from
    tests/): a cluster on 127.0.0.1 until Ctrl-C, for trying clients by hand."""
    import argparse
    import signal

    parser = argparse.ArgumentParser(prog="python -m peers.kafka_broker", description=main.__doc__)
    parser.add_argument("--nodes", type=int, default=1, help="combined broker+controller nodes (default 1)")
    parser.add_argument("--property", action="append", default=[], metavar="KEY=VALUE",
                        help="an extra server property for every node (repeatable)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder when stopping")
    args = parser.parse_args(argv)
    extra = dict(p.split("=", 1) for p in args.property)
    cluster = KafkaCluster(args.nodes, extra_properties=extra)
    cluster.start()
    print(f"Apache Kafka {KAFKA_VERSION}, {args.nodes} node(s) up in {cluster.startup_seconds:.1f} s\n"
          f"  bootstrap   {cluster.bootstrap}\n  cluster id  {cluster.cluster_id}\n"
          f"  work folder {cluster.work_dir}\nCtrl-C stops it.", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        while not stop.wait(0.5) and cluster.running:
            pass
    except KeyboardInterrupt:
        pass
    finally:
        cluster.stop(keep=args.keep)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
