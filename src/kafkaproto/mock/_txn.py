"""The transaction coordinator: producer ids and epochs, transactions from
InitProducerId to EndTxn (markers written to every partition a transaction
touched, offsets committed with it), timeouts, and the admin views of them
(DescribeProducers, ListTransactions, DescribeTransactions).

The cluster finalizes ``transaction.version`` 2, as Kafka 4.4 does: a
client that sends Produce v12+ may leave AddPartitionsToTxn out (the
partition joins the transaction with its first transactional batch), and
EndTxn v5+ ends a transaction with its producer's epoch bumped (KIP-890).
Older clients' transactions (version 1) work as before."""

from __future__ import annotations

import itertools
import re
import time

from .. import messages as M
from ..error_codes import ErrorCode as E


def _now() -> int:
    return int(time.time() * 1000)


class Transaction:
    """A transactional id: its producer (id, epoch), and what its open
    transaction holds: the partitions it wrote to, the offsets it commits."""

    def __init__(self, transactional_id: str, producer_id: int, timeout_ms: int):
        self.id = transactional_id
        self.producer_id, self.epoch = producer_id, -1
        self.last_epoch = -1  # the epoch EndTxn v5 bumped from: a retry of that EndTxn carries it
        self.timeout_ms = timeout_ms
        self.state = "Empty"  # Ongoing, CompleteCommit, CompleteAbort
        self.started = -1
        self.partitions: set = set()  # (topic, partition)
        self.offsets: dict = {}  # group id -> {(topic, partition): (offset, leader epoch, metadata)}

    def check(self, producer_id: int, epoch: int) -> int:
        """The error code for a request of producer (id, epoch) (0: none)."""
        if producer_id != self.producer_id:
            return E.INVALID_PRODUCER_ID_MAPPING
        if epoch < self.epoch:
            return E.PRODUCER_FENCED
        return E.INVALID_PRODUCER_EPOCH if epoch != self.epoch else 0

    def begin(self) -> None:
        if self.state != "Ongoing":
            self.state, self.started = "Ongoing", _now()


#: the first version of each transaction api that may answer PRODUCER_FENCED
#: (KIP-588); older ones get INVALID_PRODUCER_EPOCH instead
FENCED_SINCE = {22: 4, 24: 2, 25: 2, 26: 2, 28: 3}


def _fenced(error: int, api_key: int, version: int) -> int:
    if error == E.PRODUCER_FENCED and version < FENCED_SINCE[api_key]:
        return E.INVALID_PRODUCER_EPOCH
    return error


def _batch_epoch(blob) -> int | None:
    """The producer epoch of a records blob's first batch (v2), None if it has none."""
    if blob is None or len(blob) < 61 or blob[16] != 2:
        return None
    return int.from_bytes(bytes(blob[51:53]), "big", signed=True)


class TxnHandlers:
    def __init__(self):
        self.transactions: dict[str, Transaction] = {}
        self.producer_ids = itertools.count(1000)

    def _txn_coordinator_error(self, ctx, transactional_id: str) -> int:
        return 0 if self.coordinator(transactional_id) == ctx.node.id else E.NOT_COORDINATOR

    # -- the data path's part ---------------------------------------------------------

    def txn_produce_check(self, txn, topic: str, partition: int, version: int, records) -> int:
        """May a transactional producer write to this partition now?  (Produce
        v12+, transactions version 2: the partition joins the transaction here.)"""
        if txn is None:
            return E.INVALID_PRODUCER_ID_MAPPING
        if (topic, partition) in txn.partitions and txn.state == "Ongoing":
            return 0
        if version >= 12:
            epoch = _batch_epoch(records)
            if epoch is not None and epoch != txn.epoch:
                return E.INVALID_PRODUCER_EPOCH
            txn.begin()
            txn.partitions.add((topic, partition))
            return 0
        return E.INVALID_TXN_STATE

    def txn_wrote(self, txn, log) -> None:
        pass  # the partition's producer state holds where the transaction starts there

    def end_transaction(self, txn: Transaction, commit: bool) -> None:
        now = _now()
        for topic, index in sorted(txn.partitions):
            log = self.partition(topic, index)
            if log is not None:
                log.end_transaction(txn.producer_id, txn.epoch, commit, now)
        if commit:
            for group_id, offsets in txn.offsets.items():
                g = self.groups.get(group_id)
                if g is None:
                    from ._groups import ClassicGroup

                    g = self.groups[group_id] = ClassicGroup()
                g.offsets.update(offsets)
        txn.partitions, txn.offsets = set(), {}
        txn.state = "CompleteCommit" if commit else "CompleteAbort"
        self.wake()

    def expire_transactions(self) -> None:
        """Transactions open longer than their timeout are aborted, and their
        producer fenced (its epoch bumped), as Kafka's coordinator does."""
        now = _now()
        for txn in self.transactions.values():
            if txn.state == "Ongoing" and now - txn.started > txn.timeout_ms:
                txn.epoch, txn.last_epoch = txn.epoch + 1, -1
                self.end_transaction(txn, commit=False)

    # -- handlers ------------------------------------------------------------------------

    def init_producer_id(self, ctx, m, v):
        R = M.InitProducerIdResponse
        if m.transactional_id is None:  # an idempotent producer: an id of its own (KIP-360: or its epoch bumped)
            if v >= 3 and m.producer_id >= 0 and m.producer_epoch >= 0:
                return R(producer_id=m.producer_id, producer_epoch=m.producer_epoch + 1)
            return R(producer_id=next(self.producer_ids), producer_epoch=0)
        error = self._txn_coordinator_error(ctx, m.transactional_id)
        if not error and not 0 < m.transaction_timeout_ms <= self.max_transaction_timeout_ms:
            error = E.INVALID_TRANSACTION_TIMEOUT
        if error:
            return R(error_code=error, producer_id=-1, producer_epoch=-1)
        txn = self.transactions.get(m.transactional_id)
        if txn is None:
            txn = self.transactions[m.transactional_id] = Transaction(m.transactional_id, next(self.producer_ids),
                                                                      m.transaction_timeout_ms)
        elif v >= 3 and m.producer_id >= 0 and (m.producer_id, m.producer_epoch) != (txn.producer_id, txn.epoch):
            return R(error_code=_fenced(E.PRODUCER_FENCED, 22, v), producer_id=-1, producer_epoch=-1)
        txn.timeout_ms = m.transaction_timeout_ms
        txn.epoch, txn.last_epoch = txn.epoch + 1, -1  # fences the producer that had this id before
        if txn.state == "Ongoing":  # ... and aborts the transaction it left open
            self.end_transaction(txn, commit=False)
        txn.state = "Empty"
        return R(producer_id=txn.producer_id, producer_epoch=txn.epoch)

    def add_partitions_to_txn(self, ctx, m, v):
        R = M.AddPartitionsToTxnResponse
        txn = self.transactions.get(m.v3_and_below_transactional_id)
        error = self._txn_coordinator_error(ctx, m.v3_and_below_transactional_id)
        if not error:
            error = txn.check(m.v3_and_below_producer_id, m.v3_and_below_producer_epoch) if txn else \
                E.INVALID_PRODUCER_ID_MAPPING
        error = _fenced(error, 24, v)
        wanted = [(t.name, i) for t in m.v3_and_below_topics for i in t.partitions]
        failed = {w: ctx.error_for(*w) or (E.UNKNOWN_TOPIC_OR_PARTITION if self.partition(*w) is None else 0)
                  for w in wanted}
        failed = {w: c for w, c in failed.items() if c}
        if not error and not failed:
            txn.begin()
            txn.partitions.update(wanted)

        def code(w):  # Kafka adds all or none: the others were not attempted
            return error or failed.get(w) or (E.OPERATION_NOT_ATTEMPTED if failed else 0)

        return R(results_by_topic_v3_and_below=[R.AddPartitionsToTxnTopicResult(name=t.name, results_by_partition=[
            R.AddPartitionsToTxnPartitionResult(partition_index=i, partition_error_code=code((t.name, i)))
            for i in t.partitions]) for t in m.v3_and_below_topics])

    def add_offsets_to_txn(self, ctx, m, v):
        txn = self.transactions.get(m.transactional_id)
        error = self._txn_coordinator_error(ctx, m.transactional_id)
        if not error:
            error = txn.check(m.producer_id, m.producer_epoch) if txn else E.INVALID_PRODUCER_ID_MAPPING
        if not error:
            txn.begin()
            txn.offsets.setdefault(m.group_id, {})
        return M.AddOffsetsToTxnResponse(error_code=_fenced(error, 25, v))

    def txn_offset_commit(self, ctx, m, v):
        R = M.TxnOffsetCommitResponse
        txn = self.transactions.get(m.transactional_id)
        error = self._coordinator_error(ctx, m.group_id)
        if not error:
            error = txn.check(m.producer_id, m.producer_epoch) if txn else E.INVALID_PRODUCER_ID_MAPPING
        error = _fenced(error, 28, v)
        if not error and v >= 5 and m.group_id not in txn.offsets:  # transactions version 2: no AddOffsetsToTxn
            txn.begin()
            txn.offsets.setdefault(m.group_id, {})
        if not error and (m.group_id not in txn.offsets or txn.state != "Ongoing"):  # AddOffsetsToTxn comes first
            error = E.INVALID_TXN_STATE
        if not error and v >= 3 and m.generation_id_or_member_epoch >= 0:  # a member of the group commits
            error = self._commit_check(self.groups.get(m.group_id), m.member_id, m.generation_id_or_member_epoch)
            if error == E.REBALANCE_IN_PROGRESS:
                error = 0
        out = []
        for t in m.topics:
            topic = self.topic_ids.get(t.topic_id) if v >= 6 else self.topics.get(t.name)
            name = topic.name if topic is not None else t.name
            out.append(R.TxnOffsetCommitResponseTopic(name=t.name, topic_id=t.topic_id if v >= 6 else None))
            for p in t.partitions:
                code = error or ctx.error_for(name, p.partition_index)
                if not code and v >= 6 and topic is None:
                    code = E.UNKNOWN_TOPIC_ID
                if not code:
                    txn.offsets[m.group_id][name, p.partition_index] = (
                        p.committed_offset, p.committed_leader_epoch if v >= 2 else -1, p.committed_metadata or "")
                out[-1].partitions.append(R.TxnOffsetCommitResponsePartition(partition_index=p.partition_index,
                                                                             error_code=code))
        return R(topics=out)

    def end_txn(self, ctx, m, v):
        R = M.EndTxnResponse
        txn = self.transactions.get(m.transactional_id)
        error = self._txn_coordinator_error(ctx, m.transactional_id)
        done = "CompleteCommit" if m.committed else "CompleteAbort"
        if not error and txn is not None and v >= 5 and txn.state in ("CompleteCommit", "CompleteAbort") \
                and m.producer_id == txn.producer_id and m.producer_epoch == txn.last_epoch:
            if txn.state == done:  # a retry of the EndTxn that bumped the epoch, answered again
                return R(producer_id=txn.producer_id, producer_epoch=txn.epoch)
            return R(error_code=E.INVALID_TXN_STATE, producer_id=-1, producer_epoch=-1)
        if not error:
            error = txn.check(m.producer_id, m.producer_epoch) if txn else E.INVALID_PRODUCER_ID_MAPPING
        if not error:
            if txn.state == "Ongoing" or v >= 5 and txn.state in ("Empty", "CompleteCommit", "CompleteAbort") \
                    and not m.committed:
                if v >= 5:  # transactions version 2: every transaction ends with a new epoch
                    txn.last_epoch, txn.epoch = txn.epoch, txn.epoch + 1
                self.end_transaction(txn, m.committed)
            elif txn.state != done:  # a retry is answered again
                error = E.INVALID_TXN_STATE
        if error:
            return R(error_code=_fenced(error, 26, v), producer_id=-1, producer_epoch=-1)
        return R(producer_id=txn.producer_id, producer_epoch=txn.epoch)

    # -- views for admins ---------------------------------------------------------------

    def describe_producers(self, ctx, m, v):
        R = M.DescribeProducersResponse
        out = []
        for t in m.topics:
            out.append(R.TopicResponse(name=t.name))
            for i in t.partition_indexes:
                log, error = self._led(ctx, t.name, i)
                if error:
                    out[-1].partitions.append(R.PartitionResponse(partition_index=i, error_code=error))
                    continue
                out[-1].partitions.append(R.PartitionResponse(partition_index=i, active_producers=[
                    R.ProducerState(producer_id=pid, producer_epoch=p.epoch, last_sequence=p.last_seq,
                                    last_timestamp=p.last_timestamp, coordinator_epoch=p.coordinator_epoch,
                                    current_txn_start_offset=p.txn_first)
                    for pid, p in sorted(log.producers.items())]))
        return R(topics=out)

    def list_transactions(self, ctx, m, v):
        R = M.ListTransactionsResponse
        known = {"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort",
                 "PrepareEpochFence", "Dead"}
        states = set(m.state_filters)
        pids = set(m.producer_id_filters)
        pattern = re.compile(m.transactional_id_pattern) if v >= 2 and m.transactional_id_pattern else None
        now = _now()
        out = []
        for tid, txn in self.transactions.items():
            if self.coordinator(tid) != ctx.node.id:
                continue
            if states and txn.state not in states or pids and txn.producer_id not in pids:
                continue
            if v >= 1 and m.duration_filter >= 0 and not (txn.state == "Ongoing"
                                                           and now - txn.started >= m.duration_filter):
                continue
            if pattern is not None and not pattern.fullmatch(tid):
                continue
            out.append(R.TransactionState(transactional_id=tid, producer_id=txn.producer_id,
                                          transaction_state=txn.state))
        return R(unknown_state_filters=sorted(states - known), transaction_states=out)

    def describe_transactions(self, ctx, m, v):
        R = M.DescribeTransactionsResponse
        out = []
        for tid in m.transactional_ids:
            error = self._txn_coordinator_error(ctx, tid)
            txn = self.transactions.get(tid)
            if not error and txn is None:
                error = E.TRANSACTIONAL_ID_NOT_FOUND
            if error:
                out.append(R.TransactionState(transactional_id=tid, error_code=error, transaction_state="",
                                              producer_id=-1, producer_epoch=-1, transaction_start_time_ms=-1))
                continue
            by_topic: dict = {}
            for topic, i in sorted(txn.partitions):
                by_topic.setdefault(topic, []).append(i)
            out.append(R.TransactionState(
                transactional_id=tid, transaction_state=txn.state, transaction_timeout_ms=txn.timeout_ms,
                transaction_start_time_ms=txn.started if txn.state == "Ongoing" else -1,
                producer_id=txn.producer_id, producer_epoch=txn.epoch,
                topics=[R.TopicData(topic=t, partitions=ps) for t, ps in by_topic.items()]))
        return R(transaction_states=out)
