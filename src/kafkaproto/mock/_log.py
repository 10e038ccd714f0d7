"""A partition's log in memory, and its producers' state.

Batches are stored as the producer wrote them (every codec, never
recompressed), with the offsets the broker gives them patched in
(:func:`kafkaproto.records.assign_offsets`) and the partition leader epoch
set, as Kafka's ``LogValidator`` does in its in-place cases.  Idempotent and
transactional producers are checked as Kafka's ``ProducerAppendInfo`` checks
them (epochs, sequences, a retried batch answered with its first offsets).
:func:`write_segments` lays a log out as Kafka writes it on disk.
"""

from __future__ import annotations

import bisect
import struct
from collections import deque
from pathlib import Path

from .. import records
from ..error_codes import ErrorCode as E
from ..records import ControlType

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_TRANSACTIONAL, _CONTROL = 0x10, 0x20
#: batches of a producer remembered to answer a retry (Kafka: NUM_BATCHES_TO_RETAIN)
RETAINED_BATCHES = 5
INT32_MAX = (1 << 31) - 1


class ProduceError(Exception):
    """A batch refused: the Produce partition's error code and message."""

    def __init__(self, code: int, message: str | None = None, record_errors=()):
        super().__init__(message)
        self.code, self.message, self.record_errors = code, message, list(record_errors)


class Producer:
    """What a partition knows of one producer id (Kafka's ``ProducerStateEntry``)."""

    __slots__ = ("epoch", "batches", "txn_first", "coordinator_epoch", "last_timestamp")

    def __init__(self, epoch: int = -1):
        self.epoch = epoch
        self.batches: deque = deque(maxlen=RETAINED_BATCHES)  # (first seq, last seq, base offset, last offset, ts)
        self.txn_first = -1  # first offset of its open transaction here
        self.coordinator_epoch = -1
        self.last_timestamp = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1][1] if self.batches else -1


class PartitionLog:
    """One partition: its stored batches, where each starts and ends, its
    producers, its open and aborted transactions, its leader."""

    def __init__(self, topic: str, index: int, replicas: list[int]):
        self.topic, self.index = topic, index
        self.replicas = list(replicas)
        self.leader = replicas[0] if replicas else -1
        self.leader_epoch = 0
        self.epochs = [(0, 0)]  # (leader epoch, its first offset), for OffsetForLeaderEpoch
        self.blobs: list = []
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.infos: list = []  # per blob: [AppendedBatch]
        self.log_start = 0
        self.next_offset = 0
        self.size = 0
        self.producers: dict[int, Producer] = {}
        self.aborted: list[tuple[int, int, int]] = []  # (producer id, first offset, marker offset)
        self.max_timestamp = (-1, -1)  # (timestamp, offset of its batch's last record) for ListOffsets -3

    # -- reading

    @property
    def stable_offset(self) -> int:
        """The last stable offset: read_committed consumers see nothing from the first open transaction on."""
        return min((p.txn_first for p in self.producers.values() if p.txn_first >= 0), default=self.next_offset)

    def read(self, offset: int, max_bytes: int, end: int | None = None, first: bool = True) -> list:
        """The stored batches from the one holding ``offset`` (clients skip the
        records before it) up to ``end``, at most ``max_bytes`` except the
        first one when ``first`` (KIP-74: a batch larger than the limit still
        goes out, alone)."""
        out, size = [], 0
        for i in range(bisect.bisect_right(self.ends, offset), len(self.blobs)):
            blob = self.blobs[i]
            if end is not None and self.starts[i] >= end:
                break
            if size + len(blob) > max_bytes and (out or not first):
                break
            out.append(blob)
            size += len(blob)
        return out

    def batches(self):
        """(stored blob, its AppendedBatch list) of the log, from its start."""
        i = bisect.bisect_right(self.ends, self.log_start)
        return zip(self.blobs[i:], self.infos[i:])

    def aborted_since(self, offset: int, end: int) -> list:
        """(producer id, first offset) of the aborted transactions a read of [offset, end) may meet."""
        return [(pid, first) for pid, first, marker in self.aborted if marker >= offset and first < end]

    def offset_for_time(self, timestamp: int) -> tuple[int, int]:
        """(timestamp, offset) of the first record at or after ``timestamp`` ((-1, -1): none)."""
        for blob, infos in self.batches():
            for info in infos:
                if info.max_timestamp < timestamp:
                    continue
                for batch in records.decode(blob[info.position:info.position + info.size]):
                    for r in batch.records:
                        if r.timestamp >= timestamp and r.offset >= self.log_start:
                            return r.timestamp, r.offset
        return -1, -1

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch: (the largest epoch ≤ ``epoch``, the first offset of the
        epoch after it, or the log end)."""
        best = None
        for i, (e, _) in enumerate(self.epochs):
            if e <= epoch:
                best = i
        if best is None:
            return -1, -1
        end = self.epochs[best + 1][1] if best + 1 < len(self.epochs) else self.next_offset
        return self.epochs[best][0], end

    # -- writing

    def new_leader(self, node: int) -> None:
        self.leader = node
        self.leader_epoch += 1
        if self.epochs[-1][1] == self.next_offset:
            self.epochs[-1] = (self.leader_epoch, self.next_offset)
        else:
            self.epochs.append((self.leader_epoch, self.next_offset))

    def _store(self, stored: bytes, infos, nxt: int) -> None:
        self.blobs.append(stored)
        self.starts.append(self.next_offset)
        self.ends.append(nxt)
        self.infos.append(infos)
        self.next_offset = nxt
        self.size += len(stored)
        for info in infos:
            if info.max_timestamp > self.max_timestamp[0]:
                self.max_timestamp = (info.max_timestamp, info.last_offset)

    def append(self, blob, *, log_append_time: int | None = None, transactional_id: str | None = None,
               compacted: bool = False) -> tuple[int, int]:
        """Store a Produce partition's records → (base offset, log append time or
        -1); ProduceError when they are refused.

        A ``compacted`` topic takes only records with keys.  A retried batch of
        an idempotent producer is not stored twice: its first offset is answered
        again, with its timestamp as the append time, as Kafka does.
        """
        if blob is None or not len(blob):
            raise ProduceError(E.CORRUPT_MESSAGE, "no records")
        try:
            stored, nxt, infos = records.assign_offsets(blob, self.next_offset, log_append_time=log_append_time,
                                                        batches=True)
        except Exception:  # a bad CRC, a batch cut short, a codec that does not decompress (Kafka says no more)
            raise ProduceError(E.CORRUPT_MESSAGE) from None
        if compacted:
            keyless = [i for i, r in enumerate(r for b in records.decode(stored) for r in b.records) if r.key is None]
            if keyless:
                where = f"{self.topic}-{self.index}"
                raise ProduceError(E.INVALID_RECORD, f"One or more records have been rejected due to {len(keyless)} "
                                   f"record errors in total, and only showing the first {len(keyless)} records "
                                   f"errors, for topic-partition {where}.",
                                   [(i, f"Compacted topic cannot accept message without key in topic partition "
                                        f"{where}") for i in keyless])
        buf = bytearray(stored)
        scratch: dict[int, Producer] = {}  # producers as this request leaves them, kept if all its batches pass
        for info in infos:
            magic = buf[info.position + 16]
            attrs = _I16.unpack_from(buf, info.position + 21)[0] if magic == 2 else 0
            if attrs & _CONTROL:
                raise ProduceError(E.INVALID_RECORD, "control batches come from the transaction coordinator only")
            transactional = bool(attrs & _TRANSACTIONAL)
            if transactional and transactional_id is None:
                raise ProduceError(E.INVALID_RECORD, "a transactional batch in a request without a transactional id")
            if magic == 2:
                _I32.pack_into(buf, info.position + 12, self.leader_epoch)  # outside the CRC
            if info.producer_id < 0:
                continue
            p = scratch.get(info.producer_id)
            if p is None:
                p = scratch[info.producer_id] = self._copy(self.producers.get(info.producer_id))
            dup = _check(p, info, transactional)
            if dup is not None:
                if len(infos) == 1:
                    return dup
                raise ProduceError(E.DUPLICATE_SEQUENCE_NUMBER)
        self.producers.update(scratch)
        base = self.next_offset
        self._store(bytes(buf), infos, nxt)
        return base, -1 if log_append_time is None else log_append_time

    @staticmethod
    def _copy(p: Producer | None) -> Producer:
        q = Producer()
        if p is not None:
            q.epoch, q.txn_first, q.coordinator_epoch, q.last_timestamp = (p.epoch, p.txn_first,
                                                                          p.coordinator_epoch, p.last_timestamp)
            q.batches.extend(p.batches)
        return q

    def end_transaction(self, producer_id: int, epoch: int, commit: bool, timestamp: int,
                        coordinator_epoch: int = 0) -> int:
        """Write a COMMIT or ABORT marker for the producer → its offset; an aborted
        transaction is remembered for read_committed consumers."""
        p = self.producers.setdefault(producer_id, Producer(epoch))
        marker = records.encode([records.control_record(ControlType.COMMIT if commit else ControlType.ABORT,
                                                        coordinator_epoch, timestamp)],
                                control=True, transactional=True, producer_id=producer_id, producer_epoch=epoch,
                                partition_leader_epoch=self.leader_epoch)
        at = self.next_offset
        stored, nxt, infos = records.assign_offsets(marker, at, batches=True)
        self._store(stored, infos, nxt)
        if p.txn_first >= 0 and not commit:
            self.aborted.append((producer_id, p.txn_first, at))
        p.txn_first = -1
        if epoch > p.epoch:  # transactions version 2: the marker carries the producer's next epoch
            p.epoch = epoch
            p.batches.clear()
        p.coordinator_epoch = coordinator_epoch
        return at

    def delete_before(self, offset: int) -> None:
        """DeleteRecords: the log starts at ``offset`` (-1: the high watermark)."""
        self.log_start = max(self.log_start, self.next_offset if offset == -1 else offset)

    def truncate_all(self) -> None:
        """The partition's data is gone (a topic deleted and made again keeps no log)."""
        self.__init__(self.topic, self.index, self.replicas)


def _check(p: Producer, info, transactional: bool):
    """Kafka's checks of one batch of producer ``p`` (updated when it passes) → a
    retried batch's first offset, else None."""
    pid, epoch, first_seq = info.producer_id, info.producer_epoch, info.base_sequence
    count = info.last_offset - info.base_offset + 1
    last_seq = (first_seq + count - 1) % (INT32_MAX + 1) if first_seq >= 0 else -1
    if epoch < p.epoch:
        raise ProduceError(E.INVALID_PRODUCER_EPOCH,
                           f"producer {pid} epoch {epoch} is older than the last seen {p.epoch}")
    if first_seq >= 0 and epoch == p.epoch:
        for f, last, base, _last_offset, ts in p.batches:
            if f == first_seq and last == last_seq:
                return base, ts
    if first_seq >= 0:
        if epoch != p.epoch:
            if first_seq != 0 and p.epoch != -1:
                raise ProduceError(E.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                   f"producer {pid}: sequence {first_seq} for its new epoch {epoch}")
        elif p.epoch != -1 and not (first_seq == p.last_seq + 1 or (first_seq == 0 and p.last_seq == INT32_MAX)):
            raise ProduceError(E.OUT_OF_ORDER_SEQUENCE_NUMBER,
                               f"producer {pid}: sequence {first_seq}, expected {p.last_seq + 1}")
    if p.txn_first >= 0 and not transactional:
        raise ProduceError(E.INVALID_TXN_STATE, f"producer {pid} writes outside its open transaction")
    if epoch != p.epoch:
        p.batches.clear()
    p.epoch = epoch
    p.batches.append((first_seq, last_seq, info.base_offset, info.last_offset, info.max_timestamp))
    p.last_timestamp = info.max_timestamp
    if transactional and p.txn_first < 0:
        p.txn_first = info.base_offset
    return None


# -- Kafka's files ------------------------------------------------------------

INDEX_INTERVAL = 4096
SEGMENT_BYTES = 1 << 30


def write_segments(log: PartitionLog, folder: Path, *, segment_bytes: int = SEGMENT_BYTES,
                   index_interval: int = INDEX_INTERVAL) -> Path:
    """Write ``log`` into ``folder/<topic>-<partition>`` as a Kafka broker lays
    it out: ``.log`` segments rolled past ``segment_bytes``, each with its
    ``.index`` (an entry after every ``index_interval`` bytes: the batch's
    last offset and position), ``.timeindex`` (the largest timestamp so far
    and its batch's last offset, when it grew; a last entry when the segment
    is closed) and, for aborted transactions, ``.txnindex``.  The batches are
    the stored bytes, those before the log start offset left out (whole
    batches only, as Kafka deletes)."""
    out = Path(folder) / f"{log.topic}-{log.index}"
    out.mkdir(parents=True, exist_ok=True)
    segments = []  # [base, log bytes, index, timeindex, since_entry, (max ts, offset), last time entry ts]

    def roll(base):
        segments.append([base, bytearray(), bytearray(), bytearray(), 0, (-1, -1), None])

    def time_entry(seg):
        ts, off = seg[5]
        if off >= 0 and (seg[6] is None or ts > seg[6]):
            seg[3] += struct.pack(">qi", ts, off - seg[0])
            seg[6] = ts

    for blob, infos in log.batches():
        for info in infos:
            if info.last_offset < log.log_start:
                continue
            raw = blob[info.position:info.position + info.size]
            if not segments or (segments[-1][1] and len(segments[-1][1]) + len(raw) > segment_bytes):
                if segments:
                    time_entry(segments[-1])
                roll(info.base_offset)
            seg = segments[-1]
            if info.max_timestamp > seg[5][0]:
                seg[5] = (info.max_timestamp, info.last_offset)
            if seg[4] > index_interval:
                seg[2] += struct.pack(">ii", info.last_offset - seg[0], len(seg[1]))
                time_entry(seg)
                seg[4] = 0
            seg[1] += raw
            seg[4] += len(raw)
    if not segments:
        roll(log.log_start)
    time_entry(segments[-1])
    txn = {}
    for pid, first, marker in log.aborted:
        for seg in reversed(segments):
            if seg[0] <= marker:
                txn.setdefault(seg[0], bytearray()).extend(
                    struct.pack(">hqqqq", 0, pid, first, marker, _lso_after(log, marker)))
                break
    for seg in segments:
        stem = out / f"{seg[0]:020d}"
        stem.with_suffix(".log").write_bytes(bytes(seg[1]))
        stem.with_suffix(".index").write_bytes(bytes(seg[2]))
        stem.with_suffix(".timeindex").write_bytes(bytes(seg[3]))
        if seg[0] in txn:
            stem.with_suffix(".txnindex").write_bytes(bytes(txn[seg[0]]))
    return out


def _lso_after(log: PartitionLog, marker: int) -> int:
    """The last stable offset once the abort at ``marker`` was written: the
    first offset of a transaction still open across it, else the marker's
    next offset."""
    opens = [first for pid, first, m in log.aborted if first < marker < m]
    return min(opens, default=marker + 1)
