"""The mock cluster's state and its brokers' connections, on one event loop.

Every broker is a listener of its own; all of them share one state (topics,
groups, transactions), as a Kafka cluster's brokers share the controller's
metadata.  Each request is decoded by a :class:`~kafkaproto.server.ServerConnection`,
handled by the method named for its api (``produce``, ``join_group``, ...: the
handler mixins), and answered in request order whatever order the handlers
finish in.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import socket
import time
import traceback
import uuid

from .. import messages as M
from ..error_codes import ErrorCode as E
from ..errors import KafkaProtocolError
from ..messages import response_class
from ..net import write_parts
from ..server import ServerConnection, api_versions_response
from ._admin import AdminHandlers
from ._data import DataHandlers
from ._faults import Exchange, Faults
from ._groups import GroupHandlers
from ._log import PartitionLog
from ._sasl import SaslHandlers, SaslState
from ._txn import TxnHandlers

#: api key -> (lowest, highest version) the mock answers: Kafka 4.4's ranges
#: for what it implements.
VERSIONS = {
    0: (3, 13), 1: (4, 18), 2: (1, 11), 3: (0, 13), 8: (2, 10), 9: (1, 10), 10: (0, 6), 11: (0, 9), 12: (0, 4),
    13: (0, 5), 14: (0, 5), 15: (0, 6), 16: (0, 5), 17: (0, 1), 18: (0, 5), 19: (2, 7), 20: (1, 6), 21: (0, 2),
    22: (0, 5), 23: (2, 4), 24: (0, 3), 25: (0, 4), 26: (0, 5), 28: (0, 6), 32: (1, 4), 33: (0, 2), 36: (0, 2),
    37: (0, 3), 42: (0, 3), 44: (0, 1), 47: (0, 0), 60: (0, 2), 61: (0, 0), 65: (0, 0), 66: (0, 2), 68: (0, 1),
    69: (0, 1),
}

#: apis whose answers carry an error code per topic or partition: an error
#: injected for the whole request goes into each of them
PARTITIONED = {0, 1, 2, 3, 8, 9, 19, 20, 21, 23, 24, 28, 37, 47}

#: what a cluster offers as features (ApiVersions v3+): Kafka 4.4's, less
#: share and streams groups (not implemented: their apis are not offered)
SUPPORTED_FEATURES = [("group.version", 0, 1), ("kraft.version", 0, 1), ("metadata.version", 7, 33),
                      ("transaction.version", 0, 2), ("eligible.leader.replicas.version", 0, 1)]  # Kafka's order
FINALIZED_FEATURES = [("group.version", 1), ("transaction.version", 2), ("eligible.leader.replicas.version", 1),
                      ("metadata.version", 33)]


def _handler_name(api_key: int) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", M.api_name(api_key)).lower()


class Topic:
    __slots__ = ("name", "id", "partitions", "configs")

    def __init__(self, name: str, topic_id: uuid.UUID, partitions: list[PartitionLog], configs: dict[str, str]):
        self.name, self.id, self.partitions, self.configs = name, topic_id, partitions, configs


class Node:
    """One broker: its listener and open connections."""

    def __init__(self, node_id: int, host: str, rack: str | None = None):
        self.id, self.host, self.port, self.rack = node_id, host, 0, rack
        self.server: asyncio.AbstractServer | None = None
        self.writers: set = set()
        self.sock: socket.socket | None = None
        self.fetch_sessions: dict[int, object] = {}

    @property
    def up(self) -> bool:
        return self.server is not None


class Ctx:
    """What a handler knows of the request beyond its message."""

    __slots__ = ("node", "client_id", "host", "force", "scoped", "hit", "sasl", "exchange")

    def __init__(self, node: Node, client_id, host, force, scoped, sasl, exchange):
        self.node, self.client_id, self.host, self.force, self.scoped = node, client_id or "", host, force, scoped
        self.hit: set = set()
        self.sasl = sasl
        self.exchange = exchange

    def error_for(self, topic: str, partition: int | None = None) -> int:
        """An error injected for this topic (and partition), 0 for none."""
        if self.force:
            return self.force
        for inj in self.scoped:
            if inj.covers(topic, partition):
                self.hit.add(id(inj))
                return inj.error_code
        return 0


class Cluster(DataHandlers, GroupHandlers, TxnHandlers, AdminHandlers, SaslHandlers):
    """The state of a mock cluster and its protocol behaviour (loop thread only)."""

    def __init__(self, brokers: int = 3, *, host: str = "127.0.0.1", cluster_id: str | None = None,
                 default_partitions: int = 1, replication_factor: int | None = None,
                 auto_create_topics: bool = True, users: dict[str, str] | None = None,
                 sasl_mechanisms=("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"), record: bool = True,
                 group_session_timeout_ms: int = 45000, heartbeat_interval_ms: int = 5000,
                 transaction_timeout_ms: int = 900000, racks: list[str] | None = None, first_node_id: int = 1,
                 first_port: int | None = None, broker_configs: dict[str, str] | None = None):
        if brokers < 1:
            raise ValueError("a cluster has at least one broker")
        self.host = host
        self.cluster_id = cluster_id or _cluster_id()
        self.nodes = {first_node_id + i: Node(first_node_id + i, host, racks[i] if racks else None)
                      for i in range(brokers)}
        if first_port:
            for i, node in enumerate(self.nodes.values()):
                node.port = first_port + i
        self.default_partitions = default_partitions
        self.replication_factor = min(brokers, 3) if replication_factor is None else replication_factor
        self.auto_create_topics = auto_create_topics
        self.users = dict(users) if users else None
        self.sasl_mechanisms = tuple(sasl_mechanisms)
        self.record = record
        self.group_session_timeout_ms = group_session_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.max_transaction_timeout_ms = transaction_timeout_ms
        self.topics: dict[str, Topic] = {}
        self.topic_ids: dict[uuid.UUID, Topic] = {}
        self.exchanges: list[Exchange] = []
        self.faults = Faults()
        self.broker_configs: dict[str, str] = {k: str(v) for k, v in (broker_configs or {}).items()}
        self._placement = itertools.count()
        self._wake = asyncio.Event()
        self.handlers = {k: getattr(self, _handler_name(k)) for k in VERSIONS}
        self.versions = dict(VERSIONS)
        GroupHandlers.__init__(self)
        TxnHandlers.__init__(self)

    # -- topology -----------------------------------------------------------

    def live(self) -> list[int]:
        return [n for n, node in self.nodes.items() if node.up]

    def create_topic(self, name: str, partitions: int, configs: dict[str, str] | None = None,
                     replication_factor: int | None = None, assignments: dict[int, list[int]] | None = None) -> Topic:
        topic = Topic(name, uuid.uuid4(), [], dict(configs or {}))
        self.topics[name] = topic
        self.topic_ids[topic.id] = topic
        self.add_partitions(topic, partitions, replication_factor, assignments)
        return topic

    def add_partitions(self, topic: Topic, count: int, replication_factor: int | None = None,
                       assignments: dict[int, list[int]] | None = None) -> None:
        ids = sorted(self.nodes)
        rf = min(len(ids), replication_factor or self.replication_factor)
        start = next(self._placement)
        for i in range(len(topic.partitions), count):
            if assignments and i in assignments:
                replicas = list(assignments[i])
            else:
                replicas = [ids[(start + i + k) % len(ids)] for k in range(rf)]
            log = PartitionLog(topic.name, i, replicas)
            live = [r for r in replicas if self.nodes[r].up] if any(n.up for n in self.nodes.values()) else replicas
            log.leader = live[0] if live else -1
            topic.partitions.append(log)

    def delete_topic(self, topic: Topic) -> None:
        self.topics.pop(topic.name, None)
        self.topic_ids.pop(topic.id, None)
        for node in self.nodes.values():
            for session in node.fetch_sessions.values():
                session.forget_topic(topic.name)
        self.wake()

    def partition(self, topic: str, index: int) -> PartitionLog | None:
        t = self.topics.get(topic)
        return t.partitions[index] if t is not None and 0 <= index < len(t.partitions) else None

    def move_leader(self, topic: str, index: int, node_id: int) -> None:
        log = self.partition(topic, index)
        if log is None:
            raise KeyError(f"no partition {topic}-{index}")
        if node_id not in self.nodes:
            raise KeyError(f"no broker {node_id}")
        if node_id not in log.replicas:
            log.replicas.append(node_id)
        log.new_leader(node_id)
        self.wake()

    def elect_leaders(self) -> None:
        """Partitions led by a broker that is down move to a live replica (or to
        none: leader -1), as the controller does when a broker leaves."""
        for topic in self.topics.values():
            for log in topic.partitions:
                if log.leader != -1 and self.nodes[log.leader].up:
                    continue
                live = [r for r in log.replicas if self.nodes[r].up]
                new = live[0] if live else -1
                if new != log.leader:
                    log.new_leader(new)
        self.wake()

    def wake(self) -> None:
        """New data, a transaction ended, a leader moved: the waiting Fetches look again."""
        self._wake.set()
        self._wake = asyncio.Event()

    def coordinator(self, key: str) -> int:
        """The broker coordinating a group or transactional id: a hash of the
        key over the live brokers (Kafka: the leader of the key's partition of
        ``__consumer_offsets`` / ``__transaction_state``); -1 with none up."""
        live = self.live()
        if not live:
            return -1
        h = 0
        for ch in key:
            h = (31 * h + ord(ch)) & 0xFFFFFFFF
        return live[(h if h < 1 << 31 else (1 << 32) - h) % len(live)]

    # -- connections -----------------------------------------------------------

    async def listen(self, node: Node) -> None:
        """Open (or reopen, on its old port) the broker's listener."""
        if node.sock is None:
            node.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            node.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            node.sock.bind((node.host, node.port))
            node.port = node.sock.getsockname()[1]
        node.server = await asyncio.start_server(lambda r, w: self.serve(node, r, w), sock=node.sock,
                                                 limit=1 << 20)

    async def shut(self, node: Node) -> None:
        """Close the broker's listener and every connection it has."""
        server, node.server = node.server, None
        if server is not None:
            server.close()
        for w in list(node.writers):
            w.transport.abort()
        node.writers.clear()
        node.fetch_sessions.clear()
        node.sock = None  # closed with the server; listen() binds the same port again
        if server is not None:
            await server.wait_closed()

    async def serve(self, node: Node, reader, writer) -> None:
        conn = ServerConnection(versions=self.versions)
        tasks: set = set()
        answered = asyncio.Event()
        host = (writer.get_extra_info("peername") or ("",))[0]
        sasl = SaslState() if self.users is not None else None
        node.writers.add(writer)
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while True:
                if conn.paused():
                    requests = conn.receive()
                    if not requests:
                        answered.clear()
                        await answered.wait()
                        continue
                else:
                    data = await reader.read(1 << 18)
                    if not data:
                        break
                    requests = conn.receive(data)
                for req in requests:
                    if not conn.accepts(req):
                        out = conn.reject(req)
                        if out is None:
                            return
                        await write_parts(writer, out)
                        continue
                    if sasl is not None and not sasl.allows(req.api_key):
                        return  # Kafka closes a connection that skips authentication
                    task = asyncio.ensure_future(self.answer(node, conn, writer, req, host, sasl, answered))
                    if not task.done():
                        tasks.add(task)
                        task.add_done_callback(tasks.discard)
        except (ConnectionError, KafkaProtocolError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:  # the cluster stops: end quietly (asyncio logs a cancelled client task)
            pass
        finally:
            for task in tasks:
                task.cancel()
            node.writers.discard(writer)
            writer.close()

    async def answer(self, node: Node, conn, writer, req, host, sasl, answered) -> None:
        key, v = req.api_key, req.api_version
        exchange = Exchange(node.id, key, v, req.correlation_id, req.client_id, req.message)
        if self.record:
            self.exchanges.append(exchange)
        try:
            delay = self.faults.latency(key, node.id)
            if delay:
                await asyncio.sleep(delay)
            mode = self.faults.disconnect(key, node.id)
            if mode is not None:
                exchange.error = f"connection {mode}" if mode != "drop" else "dropped"
                if mode == "close":
                    writer.transport.abort()
                elif mode == "half_close":
                    if writer.can_write_eof():
                        writer.write_eof()
                elif req.expects_response:
                    await write_parts(writer, conn.abandon(req))
                return
            force, scoped = self.faults.take(key, node.id)
            ctx = Ctx(node, req.client_id, host, force if key in PARTITIONED else 0, scoped, sasl, exchange)
            cls = response_class(key)
            if force and key not in PARTITIONED and "error_code" in {f.name for f in cls.fields(v)}:
                response = cls(error_code=force)
            else:
                response = self.handlers[key](ctx, req.message, v)
                if asyncio.iscoroutine(response):
                    response = await response
                if force and key not in PARTITIONED:
                    _set_error_codes(response, force)
            for inj in scoped:
                if id(inj) in ctx.hit:
                    inj.spend()
            if scoped:
                self.faults.injections = [i for i in self.faults.injections if i.count is None or i.count > 0]
            if req.expects_response:
                exchange.response = response
                await write_parts(writer, conn.respond(req, response, lenient=True))
            if sasl is not None and sasl.close_after:
                writer.transport.abort()
        except (ConnectionError, asyncio.CancelledError):
            exchange.error = exchange.error or "connection closed"
        except Exception as exc:  # a bug: UNKNOWN_SERVER_ERROR as Kafka answers one, or no answer, so that
            exchange.error = f"{type(exc).__name__}: {exc}"  # the answers behind it can go
            traceback.print_exc()
            if req.expects_response:
                cls = response_class(key)
                try:
                    if "error_code" in {f.name for f in cls.fields(v)}:
                        exchange.response = cls(error_code=E.UNKNOWN_SERVER_ERROR)
                        out = conn.respond(req, exchange.response, lenient=True)
                    else:
                        out = conn.abandon(req)
                    await write_parts(writer, out)
                except ConnectionError:
                    pass
        finally:
            answered.set()

    # -- ApiVersions -----------------------------------------------------------

    def api_versions(self, ctx, m, v):
        R = M.ApiVersionsResponse
        out = api_versions_response(self.versions)
        out.supported_features = [R.SupportedFeatureKey(name=n, min_version=lo, max_version=hi)
                                  for n, lo, hi in SUPPORTED_FEATURES]
        out.finalized_features_epoch = 1
        out.finalized_features = [R.FinalizedFeatureKey(name=n, max_version_level=lv, min_version_level=lv)
                                  for n, lv in FINALIZED_FEATURES]
        return out


def _set_error_codes(message, code: int) -> None:
    """Every error code of a response (its entries' too) → ``code``."""
    fields = getattr(message, "__slots__", ())
    for name in fields:
        value = getattr(message, name, None)
        if name.endswith("error_code") and isinstance(value, int):
            setattr(message, name, code)
        elif isinstance(value, list):
            for item in value:
                if hasattr(item, "__slots__"):
                    _set_error_codes(item, code)
        elif hasattr(value, "__slots__") and not isinstance(value, (bytes, str)):
            _set_error_codes(value, code)


def _cluster_id() -> str:
    import base64

    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def now_ms() -> int:
    return int(time.time() * 1000)
