"""Metadata, Produce, Fetch (with fetch sessions), ListOffsets,
OffsetForLeaderEpoch, DeleteRecords: the data path, with Kafka's rules on
leaders and epochs."""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid

from .. import messages as M
from ..error_codes import ErrorCode as E
from ..server import fetch_partition
from ._log import ProduceError

INT32_MIN = -(1 << 31)
#: fetch sessions a broker keeps (Kafka's max.incremental.fetch.session.cache.slots); past it the least
#: recently used one goes
FETCH_SESSIONS = 1000


class FetchSession:
    """A fetch session (KIP-227): the partitions a consumer fetches and what
    it was last told of each, so an incremental Fetch names only changes."""

    __slots__ = ("id", "epoch", "partitions")

    def __init__(self, session_id: int):
        self.id, self.epoch = session_id, 1
        self.partitions: dict[tuple[str, int], list] = {}  # -> [fetch offset, max bytes, hw, lso, log start]

    def forget_topic(self, name: str) -> None:
        for key in [k for k in self.partitions if k[0] == name]:
            del self.partitions[key]


class DataHandlers:
    _session_ids = itertools.count(1)

    # -- helpers ---------------------------------------------------------------

    def _endpoints(self, R, node_ids):
        return [R.NodeEndpoint(node_id=n, host=self.nodes[n].host, port=self.nodes[n].port, rack=self.nodes[n].rack)
                for n in sorted(node_ids) if n in self.nodes and self.nodes[n].up]

    def _leader_check(self, ctx, log, current_epoch: int = -1, replica: bool = False) -> int:
        """The error for a client that asks broker ``ctx.node`` about partition ``log``: 0 when it
        leads it (or, ``replica``, holds a replica of it: consumers may fetch from followers, KIP-392)."""
        if log.leader != ctx.node.id and not (replica and ctx.node.id in log.replicas and log.leader != -1):
            return E.NOT_LEADER_OR_FOLLOWER if log.leader != -1 else E.LEADER_NOT_AVAILABLE
        if current_epoch is not None and current_epoch >= 0:
            if current_epoch > log.leader_epoch:
                return E.UNKNOWN_LEADER_EPOCH
            if current_epoch < log.leader_epoch:
                return E.FENCED_LEADER_EPOCH
        return 0

    def _led(self, ctx, topic: str, index: int, current_epoch: int | None = None):
        """(the partition, the error for asking broker ``ctx.node`` about it: an injected
        one, UNKNOWN_TOPIC_OR_PARTITION, not its leader, a stale epoch; 0 for none)."""
        log = self.partition(topic, index)
        error = ctx.error_for(topic, index) or (E.UNKNOWN_TOPIC_OR_PARTITION if log is None else
                                                self._leader_check(ctx, log, current_epoch))
        return log, error

    def _topic_named(self, name, topic_id):
        if topic_id is not None and topic_id.int:
            return self.topic_ids.get(topic_id)
        return self.topics.get(name)

    # -- Metadata, DescribeCluster ----------------------------------------------

    def metadata(self, ctx, m, v):
        R = M.MetadataResponse
        if m.topics is None or (v == 0 and not m.topics):
            wanted = [(t.name, None) for t in self.topics.values()]
        else:
            wanted = [(t.name, t.topic_id if v >= 10 else None) for t in m.topics]
        out = []
        for name, topic_id in wanted:
            topic = self._topic_named(name, topic_id)
            if topic is None and name and self.auto_create_topics and (v < 4 or m.allow_auto_topic_creation) \
                    and not name.startswith("__") and not ctx.error_for(name):
                topic = self.create_topic(name, self.default_partitions)
            error = ctx.error_for(name or "")
            if topic is None or error:
                missing = E.UNKNOWN_TOPIC_ID if name is None and topic_id is not None else E.UNKNOWN_TOPIC_OR_PARTITION
                out.append(R.MetadataResponseTopic(
                    name=name, topic_id=topic.id if topic is not None else topic_id or uuid.UUID(int=0),
                    error_code=error or missing))
                continue
            parts = []
            for log in topic.partitions:
                isr = [r for r in log.replicas if self.nodes[r].up]
                parts.append(R.MetadataResponsePartition(
                    partition_index=log.index, leader_id=log.leader, leader_epoch=log.leader_epoch,
                    replica_nodes=list(log.replicas), isr_nodes=isr,
                    offline_replicas=[r for r in log.replicas if not self.nodes[r].up],
                    error_code=0 if log.leader != -1 else E.LEADER_NOT_AVAILABLE))
            out.append(R.MetadataResponseTopic(name=topic.name, topic_id=topic.id, partitions=parts,
                                               topic_authorized_operations=INT32_MIN if not
                                               m.include_topic_authorized_operations else 0b111111111000))
        live = self.live()
        return R(brokers=[R.MetadataResponseBroker(node_id=n, host=self.nodes[n].host, port=self.nodes[n].port,
                                                   rack=self.nodes[n].rack) for n in live],
                 cluster_id=self.cluster_id, controller_id=min(live, default=-1), topics=out)

    def describe_cluster(self, ctx, m, v):
        R = M.DescribeClusterResponse
        if v >= 1 and m.endpoint_type != 1:  # 2: the controllers' endpoints, which this cluster does not show
            return R(error_code=E.UNSUPPORTED_ENDPOINT_TYPE, endpoint_type=m.endpoint_type,
                     error_message="only broker endpoints are known here")
        live = self.live()
        return R(cluster_id=self.cluster_id, controller_id=min(live, default=-1), endpoint_type=1,
                 brokers=[R.DescribeClusterBroker(broker_id=n, host=self.nodes[n].host, port=self.nodes[n].port,
                                                  rack=self.nodes[n].rack) for n in live],
                 cluster_authorized_operations=INT32_MIN if not m.include_cluster_authorized_operations else 0)

    # -- Produce ---------------------------------------------------------------

    def produce(self, ctx, m, v):
        R = M.ProduceResponse
        txn = None
        if m.transactional_id is not None:
            txn = self.transactions.get(m.transactional_id)
        out, leaders = [], set()
        for t in m.topic_data:
            topic = self._topic_named(t.name, t.topic_id if v >= 13 else None)
            name = topic.name if topic is not None else t.name
            out.append(R.TopicProduceResponse(name=t.name, topic_id=t.topic_id if v >= 13 else None))
            for p in t.partition_data:
                pr = R.PartitionProduceResponse(index=p.index, base_offset=-1, log_start_offset=-1,
                                                log_append_time_ms=-1)
                out[-1].partition_responses.append(pr)
                log = topic.partitions[p.index] if topic is not None and 0 <= p.index < len(topic.partitions) \
                    else None
                error = ctx.error_for(name, p.index)
                if not error and m.acks not in (-1, 0, 1):
                    error = E.INVALID_REQUIRED_ACKS
                if not error and log is None:
                    error = E.UNKNOWN_TOPIC_ID if v >= 13 and topic is None else E.UNKNOWN_TOPIC_OR_PARTITION
                if not error:
                    error = self._leader_check(ctx, log)
                    if error == E.NOT_LEADER_OR_FOLLOWER:
                        pr.current_leader = R.LeaderIdAndEpoch(leader_id=log.leader, leader_epoch=log.leader_epoch)
                        leaders.add(log.leader)
                if not error and m.transactional_id is not None:
                    error = self.txn_produce_check(txn, name, p.index, v, p.records)
                if not error:
                    limit = int(self.topic_config(topic, "max.message.bytes"))
                    if p.records is not None and len(p.records) > limit:
                        error = E.MESSAGE_TOO_LARGE
                if error:
                    pr.error_code = error
                    continue
                append_time = int(time.time() * 1000) \
                    if self.topic_config(topic, "message.timestamp.type") == "LogAppendTime" else None
                try:
                    pr.base_offset, pr.log_append_time_ms = log.append(
                        p.records, log_append_time=append_time, transactional_id=m.transactional_id,
                        compacted="compact" in self.topic_config(topic, "cleanup.policy"))
                except ProduceError as exc:  # Kafka says why only of records refused, and the log start of a
                    pr.error_code = exc.code  # batch it read
                    pr.error_message = exc.message if exc.code == E.INVALID_RECORD else None
                    pr.log_start_offset = log.log_start if exc.code != E.CORRUPT_MESSAGE else -1
                    if exc.record_errors:
                        pr.record_errors = [R.BatchIndexAndErrorMessage(batch_index=i, batch_index_error_message=t)
                                            for i, t in exc.record_errors]
                    continue
                pr.log_start_offset = log.log_start
                if txn is not None:
                    self.txn_wrote(txn, log)
        self.wake()
        if v >= 10 and leaders:
            return R(responses=out, node_endpoints=self._endpoints(R, leaders))
        return R(responses=out)

    # -- Fetch -----------------------------------------------------------------

    async def fetch(self, ctx, m, v):
        R = M.FetchResponse
        node = ctx.node
        session, full = None, True
        if v >= 7 and m.session_epoch != -1 and (m.session_id or m.session_epoch):
            if m.session_epoch == 0:  # a new full session (the old one, if named, is closed)
                node.fetch_sessions.pop(m.session_id, None)
            else:
                session = node.fetch_sessions.pop(m.session_id, None)
                if session is not None:
                    node.fetch_sessions[m.session_id] = session  # the most recently used, last
                if session is None:
                    return R(error_code=E.FETCH_SESSION_ID_NOT_FOUND, session_id=0)
                if session.epoch != m.session_epoch:
                    return R(error_code=E.INVALID_FETCH_SESSION_EPOCH, session_id=0)
                full = False
        elif v >= 7 and m.session_epoch == -1 and m.session_id:
            node.fetch_sessions.pop(m.session_id, None)
        if v >= 7 and m.session_epoch == 0:
            session = FetchSession(next(self._session_ids))
            node.fetch_sessions[session.id] = session
            while len(node.fetch_sessions) > FETCH_SESSIONS:
                del node.fetch_sessions[next(iter(node.fetch_sessions))]

        unknown_ids = []
        asked = []  # (topic name, partition, fetch offset, max bytes, current leader epoch, topic id)
        for t in m.topics:
            topic = self._topic_named(t.topic, t.topic_id if v >= 13 else None)
            if topic is None and v >= 13:
                unknown_ids.append(t)
                continue
            name = topic.name if topic is not None else t.topic
            for p in t.partitions:
                asked.append((name, p.partition, p.fetch_offset, p.partition_max_bytes, p.current_leader_epoch,
                              t.topic_id if v >= 13 else None))
        if session is not None:
            if full:
                session.partitions.clear()
            if v >= 7:
                for f in m.forgotten_topics_data:
                    topic = self._topic_named(f.topic, f.topic_id if v >= 13 else None)
                    name = topic.name if topic is not None else f.topic
                    for i in f.partitions:
                        session.partitions.pop((name, i), None)
            for name, i, offset, max_bytes, _epoch, _tid in asked:
                state = session.partitions.setdefault((name, i), [offset, max_bytes, None, None, None])
                state[0], state[1] = offset, max_bytes
            session.epoch += 0 if full else 1
            if not full:
                given = {(a[0], a[1]) for a in asked}
                asked += [(name, i, st[0], st[1], -1, None) for (name, i), st in session.partitions.items()
                          if (name, i) not in given]
            if full:
                session.epoch = 1
        committed = m.isolation_level == 1

        def visible(log):
            return log.stable_offset if committed else log.next_offset

        def available() -> int:
            n = 0
            for name, i, offset, max_bytes, _epoch, _ in asked:
                log = self.partition(name, i)
                if log is not None and node.id in log.replicas and log.log_start <= offset < visible(log):
                    n += sum(len(b) for b in log.read(offset, max_bytes, visible(log)))
                elif log is None or node.id not in log.replicas:
                    return 1 << 30  # an error to tell at once
            return n

        if m.max_wait_ms > 0 and m.min_bytes > 0:
            deadline = asyncio.get_running_loop().time() + m.max_wait_ms / 1000
            while available() < m.min_bytes:
                left = deadline - asyncio.get_running_loop().time()
                if left <= 0:
                    break
                try:
                    await asyncio.wait_for(self._wake.wait(), left)
                except asyncio.TimeoutError:
                    break

        out, leaders, budget = {}, set(), m.max_bytes
        for name, i, offset, max_bytes, epoch, topic_id in asked:
            log = self.partition(name, i)
            error = ctx.error_for(name, i)
            if not error and log is None:
                error = E.UNKNOWN_TOPIC_OR_PARTITION
            if not error:
                error = self._leader_check(ctx, log, epoch, replica=True)
            blobs, aborted = [], None
            if not error and not log.log_start <= offset <= log.next_offset:
                error = E.OFFSET_OUT_OF_RANGE
            if error:
                data = fetch_partition(i, b"", high_watermark=-1, error_code=error,
                                       aborted_transactions=[] if committed else None)
                if error in (E.NOT_LEADER_OR_FOLLOWER, E.FENCED_LEADER_EPOCH) and log is not None and v >= 12:
                    data.current_leader = R.LeaderIdAndEpoch(leader_id=log.leader, leader_epoch=log.leader_epoch)
                    leaders.add(log.leader)
            else:
                end = visible(log)
                blobs = log.read(offset, min(max_bytes, budget), end, first=budget == m.max_bytes) \
                    if offset < end else []
                budget -= sum(len(b) for b in blobs)
                if committed:
                    aborted = log.aborted_since(offset, end)
                data = fetch_partition(i, blobs, high_watermark=log.next_offset,
                                       last_stable_offset=log.stable_offset, log_start_offset=log.log_start,
                                       aborted_transactions=aborted)
            if session is not None:
                state = session.partitions.get((name, i))
                if state is not None:
                    seen = (data.high_watermark, data.last_stable_offset, data.log_start_offset)
                    changed = blobs or error or tuple(state[2:]) != seen
                    state[2:] = list(seen)
                    if not full and not changed:
                        continue
            key = topic_id if v >= 13 else name
            if key not in out:
                tid = topic_id if topic_id is not None else (self.topics[name].id if name in self.topics else None)
                out[key] = R.FetchableTopicResponse(topic=name, topic_id=tid)
            out[key].partitions.append(data)
        for t in unknown_ids:
            out[t.topic_id] = R.FetchableTopicResponse(topic_id=t.topic_id, partitions=[
                fetch_partition(p.partition, b"", high_watermark=-1, error_code=E.UNKNOWN_TOPIC_ID,
                                aborted_transactions=[])
                for p in t.partitions])
        response = R(session_id=session.id if session is not None else 0, responses=list(out.values()))
        if v >= 16 and leaders:
            response.node_endpoints = self._endpoints(R, leaders)
        return response

    # -- ListOffsets, OffsetForLeaderEpoch, DeleteRecords ---------------------------

    def list_offsets(self, ctx, m, v):
        R = M.ListOffsetsResponse
        out = []
        for t in m.topics:
            out.append(R.ListOffsetsTopicResponse(name=t.name))
            for p in t.partitions:
                log, error = self._led(ctx, t.name, p.partition_index, p.current_leader_epoch)
                pr = R.ListOffsetsPartitionResponse(partition_index=p.partition_index, timestamp=-1, offset=-1)
                out[-1].partitions.append(pr)
                if error:
                    pr.error_code = error
                    continue
                ts = p.timestamp
                if ts == -1:  # latest: the high watermark, or the last stable offset for read_committed
                    pr.offset = log.stable_offset if m.isolation_level == 1 else log.next_offset
                    pr.leader_epoch = log.leader_epoch
                elif ts in (-2, -4):  # earliest, earliest local (no tiered storage here: the same)
                    pr.offset = log.log_start
                    pr.leader_epoch = self._epoch_at(log, log.log_start)
                elif ts == -3:  # the record with the largest timestamp (KIP-734)
                    pr.timestamp, pr.offset = log.max_timestamp
                    if pr.offset >= 0:
                        pr.leader_epoch = self._epoch_at(log, pr.offset)
                elif ts < 0:  # -5 (earliest pending upload) and others: nothing, as without tiered storage
                    pass
                else:
                    pr.timestamp, pr.offset = log.offset_for_time(ts)
                    if pr.offset >= 0:
                        pr.leader_epoch = self._epoch_at(log, pr.offset)
        return R(topics=out)

    @staticmethod
    def _epoch_at(log, offset: int) -> int:
        epoch = log.epochs[0][0]
        for e, start in log.epochs:
            if start <= offset:
                epoch = e
        return epoch

    def offset_for_leader_epoch(self, ctx, m, v):
        R = M.OffsetForLeaderEpochResponse
        out = []
        for t in m.topics:
            out.append(R.OffsetForLeaderTopicResult(topic=t.topic))
            for p in t.partitions:
                log, error = self._led(ctx, t.topic, p.partition, p.current_leader_epoch)
                if error:
                    out[-1].partitions.append(R.EpochEndOffset(partition=p.partition, error_code=error))
                    continue
                epoch, end = log.end_offset_for_epoch(p.leader_epoch)
                out[-1].partitions.append(R.EpochEndOffset(partition=p.partition, leader_epoch=epoch, end_offset=end))
        return R(topics=out)

    def delete_records(self, ctx, m, v):
        R = M.DeleteRecordsResponse
        out = []
        for t in m.topics:
            out.append(R.DeleteRecordsTopicResult(name=t.name))
            for p in t.partitions:
                log, error = self._led(ctx, t.name, p.partition_index)
                if not error and (p.offset > log.next_offset or p.offset < -1):
                    error = E.OFFSET_OUT_OF_RANGE
                if error:
                    out[-1].partitions.append(R.DeleteRecordsPartitionResult(partition_index=p.partition_index,
                                                                             low_watermark=-1, error_code=error))
                    continue
                log.delete_before(p.offset)
                out[-1].partitions.append(R.DeleteRecordsPartitionResult(partition_index=p.partition_index,
                                                                         low_watermark=log.log_start))
        self.wake()
        return R(topics=out)
