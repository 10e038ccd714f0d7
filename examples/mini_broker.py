"""A single-node Kafka broker in memory, on asyncio and kafkaproto's public API.

    python examples/mini_broker.py --listen 127.0.0.1:9092 --partitions 3 [--log-append-time]

What it shows: one :class:`~kafkaproto.server.ServerConnection` per client
connection turns bytes into decoded requests; each request is handled in a
task of its own, and ``respond()`` hands back what may be written, in request
order, however the handlers finish (a Fetch waiting for data holds up no
other request, yet the client reads its answers in the order it asked).  Each
answer is one response object built with the newest fields and encoded
``lenient=True`` at whatever version the client speaks.  Produced batches get
their offsets (``records.assign_offsets``) and are stored as the producer
wrote them; Fetch sends them back as stored (``fetch_partition``: one stored
blob goes out by reference, not copied into the frame).
confluent-kafka, kafka-python and aiokafka produce to it with every codec
(acks=0 and idempotent producers too) and consume through consumer groups.

It is also a minimal transaction coordinator: InitProducerId for a
transactional id (a new epoch fences the previous producer, whose open
transaction is aborted), AddPartitionsToTxn, AddOffsetsToTxn,
TxnOffsetCommit (offsets applied when the transaction commits), EndTxn
(commit or abort markers written to every partition the transaction
touched); read_committed consumers get data up to the last stable offset
and the list of aborted transactions.  Admin clients can list and describe
groups and describe topic and broker configs (read-only: the values this
broker works with).

Left out: other nodes and replication (it is its own leader, coordinator and
controller), persistence and retention, fetch sessions (every Fetch is a
full one), versions that name topics by id, the KIP-848 consumer protocol
and transaction version 2 (KIP-890: partitions are added with
AddPartitionsToTxn), transaction timeouts (an open transaction stays open
until its producer ends it or a new one takes over its id), checks of
produced batches' producer epochs and sequence numbers, member session
expiry (a member gone without LeaveGroup is dropped when it fails to rejoin
a rebalance in time), ACLs, SASL, TLS, quotas, altering configs.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import contextvars
import itertools
import re
import time
import traceback
import uuid

from kafkaproto import ErrorCode as E
from kafkaproto import KafkaProtocolError, records
from kafkaproto import messages as M
from kafkaproto.net import write_parts
from kafkaproto.records import ControlType
from kafkaproto.server import ServerConnection, api_versions_response, fetch_partition

#: api key -> (lowest, highest version) answered.  The floors are Kafka 4.0's;
#: the ceilings stop before topic ids replace names (Produce 13, Fetch 13),
#: before OffsetFetch batches groups (8) and before KIP-848 (OffsetCommit 9).
#: ApiVersions stops at 3: a client opening with v4 (kafka-python) gets
#: KIP-511's answer and asks again.  The transaction APIs stop before
#: transaction version 2 (AddPartitionsToTxn 4+ is broker to broker, EndTxn 5
#: bumps the epoch), two-phase commit (InitProducerId 6) and topic ids
#: (TxnOffsetCommit 6).
VERSIONS = {0: (3, 12), 1: (4, 12), 2: (1, 6), 3: (0, 12), 8: (2, 8), 9: (1, 7), 10: (0, 4), 11: (0, 9),
            12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 6), 16: (0, 5), 18: (0, 3), 19: (2, 7), 22: (0, 5),
            24: (0, 3), 25: (0, 4), 26: (0, 4), 28: (0, 5), 32: (1, 4)}
NODE = 0
#: who sent the request being handled: (client id, host); each request is handled in a task of its own
CLIENT = contextvars.ContextVar("CLIENT", default=("", ""))


class Partition:
    """A log in memory: the stored batches of each Produce, where each starts and
    ends; the transactions open on it and those aborted (for read_committed)."""

    def __init__(self):
        self.blobs, self.starts, self.ends, self.next_offset = [], [], [], 0
        self.open = {}  # producer id -> offset of its open transaction's first record here
        self.aborted = []  # (producer id, first offset, offset of the abort marker)

    @property
    def stable_offset(self) -> int:
        """The last stable offset: read_committed consumers see nothing from the first open transaction on."""
        return min(self.open.values(), default=self.next_offset)

    def append(self, blob, log_append_time=None) -> int:
        base = self.next_offset
        stored, self.next_offset = records.assign_offsets(blob, base, log_append_time=log_append_time)
        if stored:
            self.blobs.append(stored)
            self.starts.append(base)
            self.ends.append(self.next_offset)
        return base

    def end_transaction(self, producer_id: int, epoch: int, commit: bool) -> None:
        """Write the transaction's marker (a control batch); an aborted one is remembered with its range."""
        first = self.open.pop(producer_id, None)
        marker = records.encode([records.control_record(ControlType.COMMIT if commit else ControlType.ABORT)],
                                control=True, transactional=True, producer_id=producer_id, producer_epoch=epoch)
        at = self.append(marker)
        if not commit and first is not None:
            self.aborted.append((producer_id, first, at))

    def aborted_since(self, offset: int) -> list:
        """(producer id, first offset) of the aborted transactions a read from ``offset`` may meet."""
        return [(pid, first) for pid, first, marker in self.aborted if marker >= offset]

    def read(self, offset: int, max_bytes: int, end: int | None = None) -> list:
        # from the blob holding `offset` (clients skip the records before it), up to `end`; at least one blob
        out, size = [], 0
        for i in range(bisect.bisect_right(self.ends, offset), len(self.blobs)):
            blob = self.blobs[i]
            if end is not None and self.starts[i] >= end or out and size + len(blob) > max_bytes:
                break
            out.append(blob)
            size += len(blob)
        return out

    def offset_for(self, timestamp: int, committed: bool = False) -> tuple[int, int]:
        """ListOffsets → (timestamp, offset): -2 earliest, -1 latest (stable when ``committed``), else
        the first record at or after it."""
        if timestamp in (-2, -1):
            return -1, 0 if timestamp == -2 else self.stable_offset if committed else self.next_offset
        for batch in (b for blob in self.blobs for b in records.decode(blob)):
            for r in batch.records:
                if r.timestamp >= timestamp:
                    return r.timestamp, r.offset
        return -1, -1


class Group:
    """A classic consumer group: members join, the leader assigns, everyone syncs."""

    def __init__(self):
        # member id -> {"protocols": {name: metadata}, "timeout": ms, "client": (id, host), "assignment": bytes}
        self.members = {}
        self.joining, self.syncing = {}, {}  # member id -> future of its JoinGroup / SyncGroup response
        self.generation, self.leader, self.protocol, self.protocol_type = 0, "", "", None
        self.state, self.timer = "Empty", None  # -> PreparingRebalance -> CompletingRebalance -> Stable
        self.offsets = {}  # (topic, partition) -> (offset, metadata)

    def rebalance(self):
        """Every member must join again; done when all have, or the longest rebalance timeout passes."""
        if self.state != "PreparingRebalance":
            self.state = "PreparingRebalance"
            self.answer_syncs(lambda member_id: M.SyncGroupResponse(error_code=E.REBALANCE_IN_PROGRESS))
            wait = max((m["timeout"] for m in self.members.values()), default=0) / 1000
            self.timer = asyncio.get_running_loop().call_later(wait, self.complete)
        if self.joining.keys() >= self.members.keys():
            self.complete()

    def complete(self):
        self.timer.cancel()
        self.members = {k: m for k, m in self.members.items() if k in self.joining}  # the others are out
        if not self.members:
            self.state = "Empty"
            return
        self.state, self.generation = "CompletingRebalance", self.generation + 1
        if self.leader not in self.members:
            self.leader = next(iter(self.members))
        self.protocol = next((p for p in self.members[self.leader]["protocols"]
                              if all(p in m["protocols"] for m in self.members.values())), "")
        metadata = [M.JoinGroupResponse.JoinGroupResponseMember(member_id=k, metadata=m["protocols"][self.protocol])
                    for k, m in self.members.items()]
        for member_id, fut in self.joining.items():  # the leader gets every member's metadata, to assign
            fut.set_result(M.JoinGroupResponse(
                generation_id=self.generation, protocol_type=self.protocol_type, protocol_name=self.protocol,
                leader=self.leader, member_id=member_id, members=metadata if member_id == self.leader else []))
        self.joining.clear()

    def answer_syncs(self, response):
        for member_id, fut in self.syncing.items():
            fut.set_result(response(member_id))
        self.syncing.clear()

    def assignment(self, member_id):
        return M.SyncGroupResponse(protocol_type=self.protocol_type, protocol_name=self.protocol,
                                   assignment=self.members[member_id].get("assignment", b""))

    def check(self, member_id, generation):
        """The error code for a member's Heartbeat, SyncGroup or OffsetCommit (0: none)."""
        if member_id not in self.members:
            return E.UNKNOWN_MEMBER_ID
        if generation != self.generation:
            return E.ILLEGAL_GENERATION
        return E.REBALANCE_IN_PROGRESS if self.state == "PreparingRebalance" else 0

    def describe(self, group_id):
        """As Kafka describes a group: members' metadata and assignments only once it is Stable."""
        R = M.DescribeGroupsResponse
        stable = self.state == "Stable"
        return R.DescribedGroup(
            group_id=group_id, group_state=self.state, protocol_type=self.protocol_type or "",
            protocol_data=self.protocol if stable else "",
            members=[R.DescribedGroupMember(member_id=k, client_id=m["client"][0], client_host=m["client"][1],
                                            member_metadata=m["protocols"].get(self.protocol, b"") if stable else b"",
                                            member_assignment=m.get("assignment", b"") if stable else b"")
                     for k, m in self.members.items()])


class Transaction:
    """A transactional id: its producer (id, epoch), and what its open transaction
    holds: the partitions it wrote to, the offsets it commits for groups."""

    def __init__(self, producer_id):
        self.producer_id, self.epoch = producer_id, -1
        self.partitions = set()  # (topic, partition)
        self.offsets = {}  # group id -> {(topic, partition): (offset, metadata)}, applied at commit

    def check(self, producer_id, epoch):
        """The error code for a request of producer (id, epoch) (0: none)."""
        if producer_id != self.producer_id:
            return E.INVALID_PRODUCER_ID_MAPPING
        return E.INVALID_PRODUCER_EPOCH if epoch != self.epoch else 0  # an older epoch: fenced by a newer producer


class Broker:
    def __init__(self, host: str, port: int, partitions: int, log_append_time: bool = False):
        self.host, self.port, self.partitions, self.log_append_time = host, port, partitions, log_append_time
        self.topics = {}  # name -> (topic id, [Partition])
        self.groups = {}  # group id -> Group
        self.transactions = {}  # transactional id -> Transaction
        self.producer_ids = itertools.count(1000)
        self.produced = asyncio.Event()  # set, and replaced, by every Produce: wakes the waiting Fetches
        # api key -> handler: "OffsetCommit" -> self.offset_commit(message, version)
        self.handlers = {k: getattr(self, re.sub(r"(?<!^)([A-Z])", r"_\1", M.api_name(k)).lower()) for k in VERSIONS}

    async def serve(self, reader, writer):
        conn, tasks = ServerConnection(versions=VERSIONS), set()
        answered = asyncio.Event()  # set as answers go out: room for the requests held back
        host = (writer.get_extra_info("peername") or ("",))[0]
        try:
            while True:
                if conn.paused():  # max_pending requests await answers: read no more until some go
                    requests = conn.receive()
                    if not requests:
                        answered.clear()
                        await answered.wait()
                        continue
                elif data := await reader.read(1 << 16):
                    requests = conn.receive(data)
                else:
                    break
                for req in requests:
                    if conn.accepts(req):
                        tasks.add(task := asyncio.create_task(self.answer(conn, writer, req, host, answered)))
                        task.add_done_callback(tasks.discard)
                        continue
                    # a version we do not speak: UNSUPPORTED_VERSION where the response can say it
                    # (ApiVersions: KIP-511's reply, in the v0 layout whatever version was asked)
                    out = conn.reject(req)
                    if out is None:  # it cannot, or the bytes do not decode: Kafka hangs up
                        return
                    await write_parts(writer, out)
        except (ConnectionError, KafkaProtocolError):  # a reset, or a size prefix that is not Kafka's
            pass
        finally:
            for task in tasks:
                task.cancel()
            writer.close()

    async def answer(self, conn, writer, req, host, answered):
        CLIENT.set((req.client_id or "", host))
        try:
            response = await self.handlers[req.api_key](req.message, req.api_version)
            if req.expects_response:  # all but Produce with acks=0
                # write_parts hands the buffers to the transport before it first waits: they leave in respond() order
                await write_parts(writer, conn.respond(req, response, lenient=True))
        except ConnectionError:  # the client left
            pass
        except Exception:  # a bug: give up on this request, so the answers behind it can go
            traceback.print_exc()
            await write_parts(writer, conn.abandon(req))
        finally:
            answered.set()

    def partition(self, topic, index):
        parts = self.topics.get(topic, (None, ()))[1]
        return parts[index] if 0 <= index < len(parts) else None

    def create(self, name, partitions):
        self.topics[name] = (uuid.uuid4(), [Partition() for _ in range(partitions)])
        return self.topics[name][0]

    def wake(self):
        """New data, or a transaction ended: the waiting Fetches look again."""
        self.produced.set()
        self.produced = asyncio.Event()

    def end_transaction(self, txn, commit):
        for topic, index in sorted(txn.partitions):
            self.partition(topic, index).end_transaction(txn.producer_id, txn.epoch, commit)
        if commit:
            for group_id, offsets in txn.offsets.items():
                self.groups.setdefault(group_id, Group()).offsets.update(offsets)
        txn.partitions, txn.offsets = set(), {}
        self.wake()

    # -- handlers: (request message, version) -> response message ---------

    async def api_versions(self, m, v):
        return api_versions_response(VERSIONS)

    async def metadata(self, m, v):
        R = M.MetadataResponse
        all_topics = m.topics is None or (v == 0 and not m.topics)  # v0: an empty list means all
        topics = []
        for name in self.topics if all_topics else [t.name for t in m.topics]:
            if name not in self.topics and name and (v < 4 or m.allow_auto_topic_creation):
                self.create(name, self.partitions)
            if name not in self.topics:
                topics.append(R.MetadataResponseTopic(name=name, error_code=E.UNKNOWN_TOPIC_OR_PARTITION))
                continue
            topic_id, parts = self.topics[name]
            topics.append(R.MetadataResponseTopic(name=name, topic_id=topic_id, partitions=[
                R.MetadataResponsePartition(partition_index=i, leader_id=NODE, leader_epoch=0, replica_nodes=[NODE],
                                            isr_nodes=[NODE]) for i in range(len(parts))]))
        return R(brokers=[R.MetadataResponseBroker(node_id=NODE, host=self.host, port=self.port)],
                 cluster_id="mini-broker", controller_id=NODE, topics=topics)

    async def create_topics(self, m, v):
        R = M.CreateTopicsResponse.CreatableTopicResult
        out = []
        for t in m.topics:
            n = self.partitions if t.num_partitions == -1 else t.num_partitions
            if t.name in self.topics:
                out.append(R(name=t.name, error_code=E.TOPIC_ALREADY_EXISTS))
            elif n < 1:
                out.append(R(name=t.name, error_code=E.INVALID_PARTITIONS))
            else:
                topic_id = uuid.uuid4() if m.validate_only else self.create(t.name, n)
                out.append(R(name=t.name, topic_id=topic_id, num_partitions=n, replication_factor=1))
        return M.CreateTopicsResponse(topics=out)

    async def produce(self, m, v):
        R = M.ProduceResponse
        now = int(time.time() * 1000) if self.log_append_time else None
        txn = self.transactions.get(m.transactional_id) if m.transactional_id is not None else None
        out = []
        for t in m.topic_data:
            out.append(R.TopicProduceResponse(name=t.name))
            parts = out[-1].partition_responses
            for p in t.partition_data:
                part = self.partition(t.name, p.index)
                if part is None or m.transactional_id is not None and txn is None:
                    error = E.UNKNOWN_TOPIC_OR_PARTITION if part is None else E.INVALID_PRODUCER_ID_MAPPING
                    parts.append(R.PartitionProduceResponse(index=p.index, error_code=error))
                    continue
                try:
                    base = part.append(p.records or b"", now)
                except KafkaProtocolError as exc:  # a bad CRC, a batch cut short
                    parts.append(R.PartitionProduceResponse(index=p.index, error_code=E.CORRUPT_MESSAGE,
                                                            error_message=str(exc)))
                    continue
                if txn is not None:  # the transaction is open here from its first record on
                    txn.partitions.add((t.name, p.index))
                    part.open.setdefault(txn.producer_id, base)
                parts.append(R.PartitionProduceResponse(index=p.index, base_offset=base, log_start_offset=0,
                                                        log_append_time_ms=-1 if now is None else now))
        self.wake()
        return R(responses=out)

    async def fetch(self, m, v):
        wanted = [(t.topic, p) for t in m.topics for p in t.partitions]
        committed = m.isolation_level == 1  # read_committed: up to the last stable offset

        def visible(part):
            return -1 if part is None else part.stable_offset if committed else part.next_offset

        if m.max_wait_ms > 0 and m.min_bytes > 0 and not any(
                p.fetch_offset < visible(self.partition(topic, p.partition)) for topic, p in wanted):
            try:  # nothing yet: wait for a Produce, or max_wait_ms
                await asyncio.wait_for(self.produced.wait(), m.max_wait_ms / 1000)
            except asyncio.TimeoutError:
                pass
        R = M.FetchResponse
        out = {}
        for topic, p in wanted:
            part = self.partition(topic, p.partition)
            if part is None:
                data = fetch_partition(p.partition, b"", high_watermark=-1, error_code=E.UNKNOWN_TOPIC_OR_PARTITION)
            else:
                ok = 0 <= p.fetch_offset <= part.next_offset
                blobs = part.read(p.fetch_offset, p.partition_max_bytes, visible(part)) if ok else b""
                data = fetch_partition(p.partition, blobs, high_watermark=part.next_offset,
                                       last_stable_offset=part.stable_offset, log_start_offset=0,
                                       error_code=0 if ok else E.OFFSET_OUT_OF_RANGE,
                                       aborted_transactions=part.aborted_since(p.fetch_offset) if committed else None)
            out.setdefault(topic, R.FetchableTopicResponse(topic=topic)).partitions.append(data)
        return R(session_id=0, responses=list(out.values()))  # no session: the client's next Fetch is full too

    async def list_offsets(self, m, v):
        R = M.ListOffsetsResponse
        out = []
        for t in m.topics:
            out.append(R.ListOffsetsTopicResponse(name=t.name))
            for p in t.partitions:
                part = self.partition(t.name, p.partition_index)
                ts, offset = part.offset_for(p.timestamp, m.isolation_level == 1) if part else (-1, -1)
                out[-1].partitions.append(R.ListOffsetsPartitionResponse(
                    partition_index=p.partition_index, timestamp=ts, offset=offset, leader_epoch=0,
                    error_code=0 if part else E.UNKNOWN_TOPIC_OR_PARTITION))
        return R(topics=out)

    async def init_producer_id(self, m, v):
        if m.transactional_id is None:  # an idempotent producer: an id of its own
            return M.InitProducerIdResponse(producer_id=next(self.producer_ids), producer_epoch=0)
        txn = self.transactions.get(m.transactional_id)
        if txn is None:
            txn = self.transactions[m.transactional_id] = Transaction(next(self.producer_ids))
        txn.epoch += 1  # fences the producer that had this id before
        if txn.partitions or txn.offsets:  # ... and aborts the transaction it left open
            self.end_transaction(txn, commit=False)
        return M.InitProducerIdResponse(producer_id=txn.producer_id, producer_epoch=txn.epoch)

    async def add_partitions_to_txn(self, m, v):
        R = M.AddPartitionsToTxnResponse
        txn = self.transactions.get(m.v3_and_below_transactional_id)
        error = txn.check(m.v3_and_below_producer_id, m.v3_and_below_producer_epoch) if txn else \
            E.INVALID_PRODUCER_ID_MAPPING
        wanted = [(t.name, i) for t in m.v3_and_below_topics for i in t.partitions]
        unknown = {w for w in wanted if self.partition(*w) is None}
        if not error and not unknown:
            txn.partitions.update(wanted)

        def code(w):  # Kafka adds all or none: the others were not attempted
            return error or (E.UNKNOWN_TOPIC_OR_PARTITION if w in unknown else E.OPERATION_NOT_ATTEMPTED
                             if unknown else 0)

        return R(results_by_topic_v3_and_below=[R.AddPartitionsToTxnTopicResult(name=t.name, results_by_partition=[
            R.AddPartitionsToTxnPartitionResult(partition_index=i, partition_error_code=code((t.name, i)))
            for i in t.partitions]) for t in m.v3_and_below_topics])

    async def add_offsets_to_txn(self, m, v):
        txn = self.transactions.get(m.transactional_id)
        error = txn.check(m.producer_id, m.producer_epoch) if txn else E.INVALID_PRODUCER_ID_MAPPING
        if not error:
            txn.offsets.setdefault(m.group_id, {})
        return M.AddOffsetsToTxnResponse(error_code=error)

    async def txn_offset_commit(self, m, v):
        R = M.TxnOffsetCommitResponse
        txn = self.transactions.get(m.transactional_id)
        error = txn.check(m.producer_id, m.producer_epoch) if txn else E.INVALID_PRODUCER_ID_MAPPING
        if not error and m.group_id not in txn.offsets:  # AddOffsetsToTxn comes first
            error = E.INVALID_TXN_STATE
        if not error and m.generation_id_or_member_epoch >= 0:  # v3+: a member of the group commits
            error = (self.groups.get(m.group_id) or Group()).check(m.member_id, m.generation_id_or_member_epoch)
        if not error:
            txn.offsets[m.group_id].update({(t.name, p.partition_index): (p.committed_offset,
                                                                          p.committed_metadata or "")
                                            for t in m.topics for p in t.partitions})
        return R(topics=[R.TxnOffsetCommitResponseTopic(name=t.name, partitions=[
            R.TxnOffsetCommitResponsePartition(partition_index=p.partition_index, error_code=error)
            for p in t.partitions]) for t in m.topics])

    async def end_txn(self, m, v):
        txn = self.transactions.get(m.transactional_id)
        error = txn.check(m.producer_id, m.producer_epoch) if txn else E.INVALID_PRODUCER_ID_MAPPING
        if not error:
            self.end_transaction(txn, m.committed)
        return M.EndTxnResponse(error_code=error)

    async def find_coordinator(self, m, v):
        R = M.FindCoordinatorResponse
        # one object for v0-3 (one key, answered at the top level) and v4+ (a list of keys): lenient drops the other
        return R(node_id=NODE, host=self.host, port=self.port, coordinators=[
            R.Coordinator(key=k, node_id=NODE, host=self.host, port=self.port) for k in m.coordinator_keys])

    async def join_group(self, m, v):
        g = self.groups.setdefault(m.group_id, Group())
        if m.member_id and m.member_id not in g.members:
            return M.JoinGroupResponse(error_code=E.UNKNOWN_MEMBER_ID, member_id=m.member_id)
        member_id = m.member_id or f"member-{uuid.uuid4()}"  # (v4+ may ask the client to rejoin with it: KIP-394)
        protocols = {p.name: bytes(p.metadata) for p in m.protocols}
        others = [x["protocols"] for k, x in g.members.items() if k != member_id]
        if not any(all(p in o for o in others) for p in protocols):  # no assignor every member has
            return M.JoinGroupResponse(error_code=E.INCONSISTENT_GROUP_PROTOCOL, member_id=member_id)
        timeout = m.rebalance_timeout_ms if v >= 1 else m.session_timeout_ms  # v0 has no rebalance timeout
        g.members[member_id] = {"protocols": protocols, "timeout": timeout, "client": CLIENT.get()}
        g.protocol_type = m.protocol_type
        if member_id in g.joining:  # joined twice: the first request must be answered too
            g.joining[member_id].set_result(M.JoinGroupResponse(error_code=E.REBALANCE_IN_PROGRESS))
        g.joining[member_id] = fut = asyncio.get_running_loop().create_future()
        g.rebalance()
        return await fut

    async def sync_group(self, m, v):
        g = self.groups.get(m.group_id) or Group()
        error = g.check(m.member_id, m.generation_id)
        if error or g.state == "Stable":
            return M.SyncGroupResponse(error_code=error) if error else g.assignment(m.member_id)
        if m.member_id != g.leader:  # wait for the leader's assignments
            g.syncing[m.member_id] = fut = asyncio.get_running_loop().create_future()
            return await fut
        for a in m.assignments:
            if a.member_id in g.members:
                g.members[a.member_id]["assignment"] = bytes(a.assignment)
        g.state = "Stable"
        g.answer_syncs(g.assignment)
        return g.assignment(m.member_id)

    async def heartbeat(self, m, v):
        g = self.groups.get(m.group_id) or Group()
        return M.HeartbeatResponse(error_code=g.check(m.member_id, m.generation_id))

    async def leave_group(self, m, v):
        R = M.LeaveGroupResponse
        g = self.groups.get(m.group_id) or Group()
        ids = [x.member_id for x in m.members] if v >= 3 else [m.member_id]
        for member_id in ids:
            g.members.pop(member_id, None)
            if member_id in g.joining:
                g.joining.pop(member_id).set_result(M.JoinGroupResponse(error_code=E.UNKNOWN_MEMBER_ID))
            if member_id in g.syncing:
                g.syncing.pop(member_id).set_result(M.SyncGroupResponse(error_code=E.UNKNOWN_MEMBER_ID))
        if g.members:
            g.rebalance()
        elif g.state != "Empty":
            g.complete()
        return R(members=[R.MemberResponse(member_id=i) for i in ids])

    async def offset_commit(self, m, v):
        R = M.OffsetCommitResponse
        g = self.groups.setdefault(m.group_id, Group())
        generation = m.generation_id_or_member_epoch  # -1: a consumer outside the group (assign(), not subscribe())
        error = g.check(m.member_id, generation) if generation >= 0 else 0
        for t in m.topics:
            for p in t.partitions:
                if not error:
                    g.offsets[t.name, p.partition_index] = (p.committed_offset, p.committed_metadata or "")
        return R(topics=[R.OffsetCommitResponseTopic(name=t.name, partitions=[
            R.OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=error)
            for p in t.partitions]) for t in m.topics])

    async def offset_fetch(self, m, v):
        R = M.OffsetFetchResponse
        offsets = (self.groups.get(m.group_id) or Group()).offsets
        # v7+ may ask for stable offsets only: not those an open transaction is about to commit
        pending = {tp for txn in self.transactions.values() for tp in txn.offsets.get(m.group_id, ())} \
            if m.require_stable else set()
        if m.topics is None:  # v2+: every partition the group committed
            wanted = {}
            for topic, i in offsets:
                wanted.setdefault(topic, []).append(i)
        else:
            wanted = {t.name: t.partition_indexes for t in m.topics}

        def committed(name, i):
            offset, metadata = offsets.get((name, i), (-1, ""))
            return R.OffsetFetchResponsePartition(partition_index=i, committed_offset=offset, metadata=metadata,
                                                  error_code=E.UNSTABLE_OFFSET_COMMIT if (name, i) in pending else 0)

        return R(topics=[R.OffsetFetchResponseTopic(name=name, partitions=[committed(name, i) for i in indexes])
                         for name, indexes in wanted.items()])

    async def list_groups(self, m, v):
        R = M.ListGroupsResponse
        states = {s.lower() for s in m.states_filter}  # v4+; case-insensitive, as Kafka compares them
        if m.types_filter and "classic" not in {t.lower() for t in m.types_filter}:  # v5+: only classic groups here
            return R()
        return R(groups=[R.ListedGroup(group_id=k, protocol_type=g.protocol_type or "", group_state=g.state,
                                       group_type="classic")
                         for k, g in self.groups.items() if not states or g.state.lower() in states])

    async def describe_groups(self, m, v):
        R = M.DescribeGroupsResponse
        out = []
        for group_id in m.groups:
            g = self.groups.get(group_id)
            if g is not None:
                out.append(g.describe(group_id))
            else:  # v6+ says so (KIP-1043); before, an unknown group is a Dead one
                out.append(R.DescribedGroup(group_id=group_id, group_state="Dead",
                                            error_code=E.GROUP_ID_NOT_FOUND if v >= 6 else 0))
        return R(groups=out)

    def configs(self, resource_type, name):
        """(error code, [(name, value, config type)]) of a topic (2) or this broker (4): the values it works with."""
        timestamps = "LogAppendTime" if self.log_append_time else "CreateTime"
        if resource_type == 2:
            if name not in self.topics:
                return E.UNKNOWN_TOPIC_OR_PARTITION, []
            return 0, [("cleanup.policy", "delete", 7), ("compression.type", "producer", 2),
                       ("message.timestamp.type", timestamps, 2), ("retention.bytes", "-1", 5),
                       ("retention.ms", "-1", 5)]
        if resource_type == 4 and name in ("", str(NODE)):
            return 0, [("auto.create.topics.enable", "true", 1), ("log.message.timestamp.type", timestamps, 2),
                       ("node.id", str(NODE), 3), ("num.partitions", str(self.partitions), 3)]
        return E.INVALID_REQUEST, []

    async def describe_configs(self, m, v):
        R = M.DescribeConfigsResponse
        source = {2: 5, 4: 4}  # DEFAULT_CONFIG for topics, STATIC_BROKER_CONFIG for the broker
        out = []
        for r in m.resources:
            error, configs = self.configs(r.resource_type, r.resource_name)
            keys = None if r.configuration_keys is None else set(r.configuration_keys)
            out.append(R.DescribeConfigsResult(
                error_code=error, error_message=None if not error else f"no config resource {r.resource_name!r} "
                f"of type {r.resource_type} here", resource_type=r.resource_type, resource_name=r.resource_name,
                configs=[R.DescribeConfigsResourceResult(name=k, value=value, read_only=True,
                                                         config_source=source[r.resource_type], config_type=ctype)
                         for k, value, ctype in configs if keys is None or k in keys]))
        return R(results=out)


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", default="127.0.0.1:9092", help="HOST:PORT (port 0: any free port)")
    parser.add_argument("--partitions", type=int, default=1, help="partitions of auto-created topics")
    parser.add_argument("--log-append-time", action="store_true", help="stamp batches with the broker's clock")
    args = parser.parse_args()
    host, _, port = args.listen.rpartition(":")
    broker = Broker(host, int(port), args.partitions, args.log_append_time)
    server = await asyncio.start_server(broker.serve, host, int(port))
    broker.port = server.sockets[0].getsockname()[1]  # the port to advertise
    print(f"listening on {host}:{broker.port}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
