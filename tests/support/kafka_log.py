"""Partition folders laid out as a Kafka broker writes them, for the log tests
(the batches from kafkaproto's encoder): segments rolled at a size, an
``.index`` entry (batch's last offset, its position) after every
``index_interval`` bytes, a ``.timeindex`` entry (largest timestamp so far,
its batch's last offset) beside it when the timestamp grew and once more
when the segment is rolled, ``.txnindex`` entries for aborted transactions,
and producer snapshots at each roll and at the end.  Written from the file
formats, independently of kafkaproto.log."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

import crc32c

from kafkaproto import records as R

T0 = 1_700_000_000_000


@dataclass
class _Producer:
    epoch: int = 0
    last_seq: int = -1
    last_offset: int = -1
    offset_delta: int = 0
    timestamp: int = -1
    coordinator_epoch: int = -1
    txn_first: int = -1
    next_seq: int = 0


@dataclass
class _Segment:
    base: int
    log: bytearray = field(default_factory=bytearray)
    index: bytearray = field(default_factory=bytearray)
    timeindex: bytearray = field(default_factory=bytearray)
    txnindex: bytearray = field(default_factory=bytearray)
    since_entry: int = 0
    max_ts: int = -1
    max_ts_offset: int = -1
    last_time_entry: int | None = None


class PartitionWriter:
    """Appends batches to a partition folder ``<root>/<topic>-<partition>``."""

    def __init__(self, root: Path, topic: str = "orders", partition: int = 0, *, segment_bytes: int = 64 << 10,
                 index_interval: int = 4096, base_offset: int = 0, snapshots: bool = True):
        self.folder = Path(root) / f"{topic}-{partition}"
        self.folder.mkdir(parents=True, exist_ok=True)
        self.segment_bytes, self.index_interval = segment_bytes, index_interval
        self.next_offset = base_offset
        self.segments = [_Segment(base_offset)]
        self.producers: dict[int, _Producer] = {}
        self.snapshots = snapshots
        self.batches: list[tuple[int, int, int, bytes]] = []  # (segment base, position, base offset, bytes)

    # -- appending

    def _roll(self) -> None:
        self._time_entry(self.segments[-1], final=True)
        self.segments.append(_Segment(self.next_offset))
        if self.snapshots:
            self._snapshot(self.next_offset)

    def _time_entry(self, seg: _Segment, final: bool = False) -> None:
        if seg.max_ts_offset < 0:
            return
        if seg.last_time_entry is None or seg.max_ts > seg.last_time_entry:
            seg.timeindex += struct.pack(">qi", seg.max_ts, seg.max_ts_offset - seg.base)
            seg.last_time_entry = seg.max_ts

    def append_blob(self, blob: bytes) -> None:
        """Append encoded batches (their offsets already right), as LogSegment.append does."""
        seg = self.segments[-1]
        if seg.log and len(seg.log) + len(blob) > self.segment_bytes:
            self._roll()
            seg = self.segments[-1]
        pos = len(seg.log)
        for b in R.decode(blob):
            assert not b.truncated
            raw = blob[b.offset:b.offset + b.size]
            if b.max_timestamp > seg.max_ts:
                seg.max_ts, seg.max_ts_offset = b.max_timestamp, b.last_offset
            if seg.since_entry > self.index_interval:
                seg.index += struct.pack(">ii", b.last_offset - seg.base, pos)
                self._time_entry(seg)
                seg.since_entry = 0
            self.batches.append((seg.base, pos, b.base_offset, raw))
            pos += len(raw)
            seg.since_entry += len(raw)
            self.next_offset = b.last_offset + 1
        seg.log += blob

    def append(self, records, *, codec="none", producer_id=-1, producer_epoch=-1, transactional=False,
               magic=2, timestamp_type=0, max_timestamp=None, leader_epoch=0) -> tuple[int, int]:
        """One batch of ``records`` ((key, value[, headers[, timestamp]])) at the next offset → (base, last)."""
        base = self.next_offset
        seq = -1
        if producer_id >= 0:
            p = self.producers.setdefault(producer_id, _Producer(epoch=producer_epoch))
            seq = p.next_seq
            p.next_seq += len(records)
            if transactional and p.txn_first < 0:
                p.txn_first = base
        kw = {}
        if magic == 2:
            kw = dict(producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=seq,
                      transactional=transactional, partition_leader_epoch=leader_epoch, timestamp_type=timestamp_type,
                      max_timestamp=max_timestamp)
        blob = R.encode(records, magic=magic, codec=codec, base_offset=base, **kw)
        self.append_blob(blob)
        last = self.next_offset - 1
        if producer_id >= 0:
            p = self.producers[producer_id]
            p.last_seq, p.last_offset, p.offset_delta = seq + len(records) - 1, last, last - base
            p.timestamp = max((r[3] for r in records if len(r) > 3 and r[3] is not None), default=T0)
        return base, last

    def end_transaction(self, producer_id: int, commit: bool, coordinator_epoch: int = 0,
                        timestamp: int | None = None) -> int:
        """A COMMIT or ABORT marker for the producer's open transaction → its offset (an abort goes
        into the segment's .txnindex)."""
        p = self.producers[producer_id]
        at = self.next_offset
        kind = R.ControlType.COMMIT if commit else R.ControlType.ABORT
        blob = R.encode([R.control_record(kind, coordinator_epoch, timestamp or T0)], base_offset=at, control=True,
                        transactional=True, producer_id=producer_id, producer_epoch=p.epoch)
        self.append_blob(blob)
        if not commit:
            seg = self.segments[-1]
            lso = min([q.txn_first for q in self.producers.values() if q.txn_first >= 0 and q is not p] + [at + 1])
            seg.txnindex += struct.pack(">hqqqq", 0, producer_id, p.txn_first, at, lso)
        p.txn_first = -1
        p.coordinator_epoch = coordinator_epoch
        return at

    # -- files

    def _snapshot(self, offset: int) -> None:
        entries = [(pid, p.epoch, p.last_seq, p.last_offset, p.offset_delta, p.timestamp, p.coordinator_epoch,
                    p.txn_first) for pid, p in sorted(self.producers.items())]
        body = struct.pack(">i", len(entries)) + b"".join(struct.pack(">qhiqiqiq", *e) for e in entries)
        (self.folder / f"{offset:020d}.snapshot").write_bytes(struct.pack(">hI", 1, crc32c.crc32c(body)) + body)

    def close(self, *, final_time_entry: bool = False, preallocate: int = 0) -> Path:
        """Write the files.  The last (active) segment's time index gets its final entry only with
        ``final_time_entry`` (a broker adds it on a roll); ``preallocate``: its index files padded with
        that many zero bytes, as an active segment's are."""
        for k, seg in enumerate(self.segments):
            stem = self.folder / f"{seg.base:020d}"
            last = k == len(self.segments) - 1
            if last and final_time_entry:
                self._time_entry(seg, final=True)
            Path(f"{stem}.log").write_bytes(bytes(seg.log))
            pad = preallocate if last else 0
            Path(f"{stem}.index").write_bytes(bytes(seg.index) + bytes(pad - pad % 8))
            Path(f"{stem}.timeindex").write_bytes(bytes(seg.timeindex) + bytes(pad - pad % 12))
            if seg.txnindex:
                Path(f"{stem}.txnindex").write_bytes(bytes(seg.txnindex))
        if self.snapshots:
            self._snapshot(self.next_offset)
        return self.folder

    def segment_file(self, k: int) -> Path:
        return self.folder / f"{self.segments[k].base:020d}.log"


def simple_partition(root: Path, n: int = 600, *, topic: str = "orders", partition: int = 0, per_batch: int = 5,
                     codecs=("none", "gzip", "snappy", "lz4", "zstd"), segment_bytes: int = 8 << 10,
                     value_bytes: int = 60) -> PartitionWriter:
    """``n`` records in batches of ``per_batch``, every codec in turn, timestamps growing
    (with a step back now and then, as producers' clocks do)."""
    w = PartitionWriter(root, topic, partition, segment_bytes=segment_bytes, index_interval=1024)
    for i in range(0, n, per_batch):
        recs = []
        for j in range(i, min(n, i + per_batch)):
            ts = T0 + 1000 * j - (3000 if j % 17 == 0 else 0)
            headers = [("h", b"%d" % j)] if j % 3 else []
            recs.append((b"k%d" % (j % 50), (b"v%d-" % j) * (value_bytes // 6), headers, ts))
        w.append(recs, codec=codecs[(i // per_batch) % len(codecs)], producer_id=7, producer_epoch=0)
    w.close()
    return w


def kafka_dump_log(files, *args, timeout: float = 300.0) -> tuple[bytes, str]:
    """Kafka 4.4.0's own DumpLogSegments (its jars, no broker) over ``files`` → (standard output as bytes,
    standard error less the JVM's logging): bytes, since keys and values may hold any byte, ``\\r`` too."""
    import subprocess

    from peers import kafka_broker as kb

    cmd = [kb._java(), *kb.TOOL_JVM_ARGS, *kb._cds_args(kb.cds_archive()),
           f"-Dlog4j2.configurationFile={kb.LOG4J_CONFIG}", "-cp", kb.kafka_classpath(), kb.TOOLS["kafka-dump-log"],
           *args, "--files", ",".join(str(f) for f in files)]
    proc = subprocess.run(cmd, capture_output=True, timeout=timeout, cwd=str(kb.BUILD_DIR))
    err = "\n".join(ln for ln in proc.stderr.decode("utf-8", "replace").splitlines()
                    if not ln.startswith(("SLF4J", "WARN", "log4j")))
    if proc.returncode != 0:
        raise AssertionError(f"DumpLogSegments {' '.join(args)} exited with {proc.returncode}: {err[-3000:]}")
    return proc.stdout, err


def our_dump_log(files, **kw) -> tuple[bytes, str, int]:
    """``kafkaproto.log.dump.dump`` over ``files`` → (standard output as bytes, standard error, status)."""
    import io

    from kafkaproto.log import dump as kdump

    out, err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8"), io.StringIO()
    status = kdump.dump([str(f) for f in files], out, err, **kw)
    out.flush()
    return out.buffer.getvalue(), err.getvalue(), status
