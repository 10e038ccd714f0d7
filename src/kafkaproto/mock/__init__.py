"""An in-memory Kafka cluster that speaks the wire protocol, for tests.

Any client (librdkafka and confluent-kafka, kafka-python, aiokafka, kafkajs,
kcat, Kafka's Java clients) connects to it as to Kafka 4.4::

    from kafkaproto.mock import MockCluster

    with MockCluster(brokers=3, topics={"orders": 6}) as cluster:
        producer = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap})
        ...
        assert [r.value for r in cluster.records("orders", 0)] == [b"..."]
        assert cluster.requests(api="Produce")[0].request.acks == -1

The cluster runs on a thread of its own (its own event loop), every broker
listening on 127.0.0.1 on a port of its own.  Tests steer it: errors
injected for the next requests of an api, broker or partition, latency,
connections dropped or half-closed, brokers stopped and started, leaders
moved; every request and its response is recorded as message objects; the
data reads back as records, or as Kafka's own log files (:meth:`MockCluster.write_log`).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from ..error_codes import ErrorCode
from ._faults import Disconnect, Exchange, Injection, Latency, api_key_of

__all__ = ["Exchange", "MockCluster", "MockRecord"]


class MockRecord(NamedTuple):
    """A record as stored by the mock."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list


def _topic_spec(spec) -> tuple[int, dict, int | None]:
    """``6`` or ``{"partitions": 6, "configs": {...}, "replication_factor": 2}`` → (partitions, configs, rf)."""
    if isinstance(spec, int):
        return spec, {}, None
    if isinstance(spec, Mapping):
        unknown = set(spec) - {"partitions", "configs", "replication_factor"}
        if unknown:
            raise ValueError(f"a topic spec has partitions, configs, replication_factor; not {sorted(unknown)}")
        return int(spec.get("partitions", 1)), {k: str(v) for k, v in (spec.get("configs") or {}).items()}, \
            spec.get("replication_factor")
    raise TypeError(f"a topic spec is a partition count or a dict, not {spec!r}")


def _error_code(code) -> int:
    if isinstance(code, str):
        return int(ErrorCode[code])
    return int(code)


class MockCluster:
    """A Kafka cluster in memory: ``brokers`` brokers on 127.0.0.1.

    ``topics``: name → partition count, or a dict with ``partitions``,
    ``configs`` and ``replication_factor``.  ``partitions``: the partitions of
    a topic created on first use (Metadata with auto-creation, as Kafka's
    ``num.partitions``).  ``users``: name → password turns on SASL (PLAIN,
    SCRAM-SHA-256, SCRAM-SHA-512; ``sasl_mechanisms`` narrows them): every
    connection must then authenticate.  ``record=False`` keeps no
    :class:`Exchange` of each request.  ``heartbeat_interval_ms`` and
    ``session_timeout_ms`` are the consumer protocol's (KIP-848) group
    settings, Kafka's defaults unless given.  Brokers are numbered from
    ``first_node_id``; they listen on free ports, or on ``first_port`` and
    the ports after it.  ``broker_configs``: the brokers' settings, those
    that topics inherit (``log.message.timestamp.type``,
    ``log.retention.ms``...) among them.

    Start it with ``with``, ``async with`` or :meth:`start`; it stops with
    the block, or :meth:`stop`.
    """

    def __init__(self, brokers: int = 3, topics: Mapping | None = None, *, partitions: int = 1,
                 replication_factor: int | None = None, auto_create_topics: bool = True,
                 users: Mapping[str, str] | None = None,
                 sasl_mechanisms=("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"), record: bool = True,
                 cluster_id: str | None = None, host: str = "127.0.0.1", heartbeat_interval_ms: int = 5000,
                 session_timeout_ms: int = 45000, racks=None, first_node_id: int = 1,
                 first_port: int | None = None, broker_configs: Mapping[str, str] | None = None):
        self._options = dict(broker_configs=broker_configs, host=host, cluster_id=cluster_id,
                             default_partitions=partitions,
                             replication_factor=replication_factor, auto_create_topics=auto_create_topics,
                             users=users, sasl_mechanisms=sasl_mechanisms, record=record,
                             heartbeat_interval_ms=heartbeat_interval_ms, group_session_timeout_ms=session_timeout_ms,
                             racks=racks, first_node_id=first_node_id, first_port=first_port)
        self._brokers = brokers
        self._topics = {name: _topic_spec(spec) for name, spec in (topics or {}).items()}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._cluster = None

    # -- life ------------------------------------------------------------------

    def start(self) -> MockCluster:
        """Start the brokers (on a thread of their own) → self."""
        if self._thread is not None:
            raise RuntimeError("this cluster is running")
        from ._cluster import Cluster

        loop = asyncio.new_event_loop()
        ready = threading.Event()
        failure: list = []

        async def begin():
            self._cluster = Cluster(self._brokers, **self._options)
            for name, (n, configs, rf) in self._topics.items():
                self._cluster.create_topic(name, n, configs, rf)
            for node in self._cluster.nodes.values():
                await self._cluster.listen(node)
            self._cluster.start_sweeper()

        def run():
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(begin())
            except BaseException as exc:  # noqa: BLE001 - handed to the starting thread
                failure.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._shutdown())
            loop.close()

        self._loop = loop
        self._thread = threading.Thread(target=run, name="kafkaproto-mock", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            self._thread.join()
            self._thread = self._loop = None
            raise failure[0]
        return self

    async def _shutdown(self):
        c = self._cluster
        if c._sweeper is not None:
            c._sweeper.cancel()
        for node in c.nodes.values():
            await c.shut(node)
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def stop(self) -> None:
        """Stop every broker and the cluster's thread (its data goes with it)."""
        if self._thread is None:
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._thread = self._loop = None

    def __enter__(self) -> MockCluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    async def __aenter__(self) -> MockCluster:
        await asyncio.to_thread(self.start)
        return self

    async def __aexit__(self, *exc) -> None:
        await asyncio.to_thread(self.stop)

    def __repr__(self) -> str:
        state = self.bootstrap if self._thread is not None else "stopped"
        return f"<MockCluster {self._brokers} brokers {state}>"

    def _call(self, fn, *args, **kw):
        """Run ``fn`` on the cluster's loop and wait for its result."""
        if self._thread is None:
            raise RuntimeError("the cluster is not running: start() it first")
        if threading.current_thread() is self._thread:
            result = fn(*args, **kw)
            if asyncio.iscoroutine(result):
                raise RuntimeError("cannot wait for the cluster from its own thread")
            return result

        async def call():
            result = fn(*args, **kw)
            if asyncio.iscoroutine(result):
                result = await result
            return result

        return asyncio.run_coroutine_threadsafe(call(), self._loop).result()

    # -- where it is -------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        """``"127.0.0.1:p1,127.0.0.1:p2,..."``: every broker, also those stopped."""
        return ",".join(f"{n.host}:{n.port}" for n in self._require().nodes.values())

    @property
    def brokers(self) -> dict[int, str]:
        """node id → ``"host:port"``."""
        return {i: f"{n.host}:{n.port}" for i, n in self._require().nodes.items()}

    @property
    def cluster_id(self) -> str:
        return self._require().cluster_id

    def _require(self):
        if self._cluster is None or self._thread is None:
            raise RuntimeError("the cluster is not running: start() it first")
        return self._cluster

    # -- what happened -----------------------------------------------------------------

    def requests(self, api=None, broker: int | None = None) -> list[Exchange]:
        """The requests received so far (oldest first), each an :class:`Exchange`
        with its decoded ``request`` and ``response``; ``api`` ("Produce", or an
        api key) and ``broker`` (node id) narrow them."""
        key = api_key_of(api)
        return self._call(lambda: [x for x in self._cluster.exchanges
                                   if (key is None or x.api_key == key) and (broker is None or x.broker == broker)])

    def responses(self, api=None, broker: int | None = None) -> list:
        """The responses sent so far, as message objects (see :meth:`requests`)."""
        return [x.response for x in self.requests(api, broker) if x.response is not None]

    def clear_requests(self) -> None:
        """Forget the requests recorded so far."""
        self._call(self._cluster.exchanges.clear)

    def records(self, topic: str, partition: int | None = None, *, committed: bool = False) -> list[MockRecord]:
        """The records of a topic (of one partition, or of each in turn), from the
        log start offset on, control records left out; ``committed``: those of
        aborted and still open transactions left out too (what a
        read_committed consumer reads)."""
        from ..consumer import consume

        def collect():
            t = self._cluster.topics.get(topic)
            if t is None:
                raise KeyError(f"no topic {topic!r}")
            logs = t.partitions if partition is None else [t.partitions[partition]]
            out = []
            for log in logs:
                end = log.stable_offset if committed else log.next_offset
                blobs = [b for b, start in zip(log.blobs, log.starts) if start < end]
                got = consume(b"".join(blobs), log.log_start, isolation_level=1 if committed else 0,
                              aborted_transactions=[(p, f) for p, f in log.aborted_since(log.log_start, end)])
                out += [MockRecord(topic, log.index, r.offset, r.timestamp, r.key, r.value, list(r.headers or ()))
                        for r in got if r.offset < end]
            return out

        return self._call(collect)

    def topics(self) -> dict[str, int]:
        """topic → its partition count."""
        return self._call(lambda: {n: len(t.partitions) for n, t in self._cluster.topics.items()})

    def leader(self, topic: str, partition: int) -> int:
        """The node id leading a partition (-1: none)."""
        return self._call(lambda: self._cluster.partition(topic, partition).leader)

    def end_offsets(self, topic: str) -> list[int]:
        """Each partition's high watermark."""
        return self._call(lambda: [p.next_offset for p in self._cluster.topics[topic].partitions])

    def committed(self, group: str) -> dict[tuple[str, int], int]:
        """(topic, partition) → offset committed by a group."""
        def get():
            g = self._cluster.groups.get(group)
            return {} if g is None else {tp: v[0] for tp, v in g.offsets.items()}

        return self._call(get)

    def write_log(self, folder, *, segment_bytes: int = 1 << 30, index_interval: int = 4096) -> Path:
        """Write every partition as Kafka lays it out on disk, one folder a
        partition (``<topic>-<partition>/``: ``.log`` segments with their
        ``.index`` and ``.timeindex``, ``.txnindex`` for aborted transactions)
        → ``folder``.  :func:`kafkaproto.log.open_log` reads it, and so does
        Kafka's ``DumpLogSegments``."""
        from ._log import write_segments

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)

        def write():
            for t in self._cluster.topics.values():
                for log in t.partitions:
                    write_segments(log, folder, segment_bytes=segment_bytes, index_interval=index_interval)

        self._call(write)
        return folder

    # -- steering ---------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int = 1, configs: Mapping | None = None,
                     replication_factor: int | None = None) -> None:
        def create():
            if name in self._cluster.topics:
                raise ValueError(f"topic {name!r} exists")
            self._cluster.create_topic(name, partitions, {k: str(v) for k, v in (configs or {}).items()},
                                       replication_factor)

        self._call(create)

    def inject_error(self, api, error_code, count: int | None = 1, broker: int | None = None,
                     topic: str | None = None, partition: int | None = None) -> None:
        """Answer the next ``count`` requests of ``api`` (None: every api; count
        None: until :meth:`clear_faults`) with ``error_code`` (a number or a
        name such as "NOT_LEADER_OR_FOLLOWER").

        ``broker`` narrows it to one broker; ``topic`` and ``partition`` to
        the requests that name them, whose answers carry the error for those
        only.  Without them the error goes where the answer has one for the
        whole request, or into each topic and partition of a Produce, Fetch,
        ListOffsets, Metadata, OffsetCommit... answer.  A partition given an
        error is not acted on (a Produce's records are not stored)."""
        inj = Injection(api_key_of(api), _error_code(error_code), count, broker, topic, partition)
        self._call(self._cluster.faults.injections.append, inj)

    def add_latency(self, api=None, broker: int | None = None, ms: float = 0) -> None:
        """Delay the answers to ``api`` (None: every api) by ``ms`` milliseconds
        (added to those already asked)."""
        self._call(self._cluster.faults.latencies.append, Latency(api_key_of(api), broker, ms))

    def disconnect(self, api=None, count: int | None = 1, broker: int | None = None, mode: str = "close") -> None:
        """Instead of answering the next ``count`` requests of ``api``: "close"
        the connection (a reset), "half_close" it (the client reads the end of
        the stream), or "drop" the request (never answered)."""
        if mode not in ("close", "half_close", "drop"):
            raise ValueError("mode is 'close', 'half_close' or 'drop'")
        self._call(self._cluster.faults.disconnects.append, Disconnect(api_key_of(api), mode, count, broker))

    def drop_connections(self, broker: int | None = None) -> None:
        """Close every open connection (of one broker) now; the listeners stay."""
        def drop():
            for node in self._cluster.nodes.values():
                if broker is None or node.id == broker:
                    for w in list(node.writers):
                        w.transport.abort()

        self._call(drop)

    def clear_faults(self) -> None:
        """Forget the injected errors, latencies and disconnections."""
        self._call(self._cluster.faults.clear)

    def stop_broker(self, node_id: int) -> None:
        """Take a broker down: its listener and connections close, the
        partitions it led move to a live replica (or have no leader)."""
        async def down():
            node = self._cluster.nodes[node_id]
            await self._cluster.shut(node)
            self._cluster.elect_leaders()

        self._call(down)

    def start_broker(self, node_id: int) -> None:
        """Bring a broker back, on its old port; partitions without a leader that
        it replicates get it as their leader."""
        async def up():
            node = self._cluster.nodes[node_id]
            if not node.up:
                await self._cluster.listen(node)
            self._cluster.elect_leaders()

        self._call(up)

    def move_leader(self, topic: str, partition: int, node_id: int) -> None:
        """Make ``node_id`` the partition's leader (a new leader epoch): clients
        asking the old leader get NOT_LEADER_OR_FOLLOWER."""
        self._call(self._cluster.move_leader, topic, partition, node_id)
