"""Which transactional records a read_committed reader leaves out.

A transactional batch of producer P belongs to P's transaction that ends at
P's next control batch (COMMIT or ABORT).  Kafka keeps the aborted ones in
each segment's ``.txnindex`` (producer, first offset, offset of the ABORT
marker): a batch of P starting inside such a range is aborted.  A
transaction with no marker yet was still open when the log was copied; a
consumer would hold every record from its first offset on back (the last
stable offset) until it ended, and the coordinator aborts such a
transaction once it times out.  A copy of a log will not see it end: its
records are left out too, and the records after it (other producers',
committed) are read.

The open transactions are found from the newest producer snapshot (the
producers' state at its offset: each one's open transaction) and the
batches after it; without a snapshot, from the whole log.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..arrow.buffers import column
from ._files import Partition
from ._index import OffsetIndex, SnapshotError, read_producer_snapshot, read_txn_index
from ._scan import LogProblem, Scan, Window

__all__ = ["Transactions", "partition_transactions"]

ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
_NEVER = np.iinfo(np.int64).max


@dataclass
class Transactions:
    """Per producer id: the offset ranges of its aborted transactions, and the first
    offset of its open one (a transaction with no marker in the log)."""

    aborted: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    open: dict[int, int] = field(default_factory=dict)
    #: where the state came from (for reports): the snapshot's offset, or None (the whole log was walked)
    snapshot: int | None = None
    _ranges: dict | None = field(default=None, repr=False, compare=False)

    def add_aborted(self, pid: int, first: int, last: int) -> None:
        self.aborted.setdefault(pid, []).append((first, last))
        self._ranges = None

    def _by_producer(self) -> dict:
        if self._ranges is None:
            ranges = {}
            for pid in set(self.aborted) | set(self.open):
                spans = sorted(set(self.aborted.get(pid, ())))
                if pid in self.open:
                    spans.append((self.open[pid], int(_NEVER)))
                firsts = np.array([a for a, _ in spans], dtype=np.int64)
                lasts = np.maximum.accumulate(np.array([b for _, b in spans], dtype=np.int64))
                ranges[pid] = (firsts, lasts)
            self._ranges = ranges
        return self._ranges

    def dropped(self, magic: np.ndarray, attributes: np.ndarray, producer_id: np.ndarray,
                base_offset: np.ndarray) -> np.ndarray:
        """Per batch: True for a transactional data batch of an aborted or open transaction."""
        txn = (magic >= 2) & ((attributes & ATTR_TRANSACTIONAL) != 0) & ((attributes & ATTR_CONTROL) == 0)
        out = np.zeros(len(magic), dtype=bool)
        if not txn.any():
            return out
        ranges = self._by_producer()
        for pid in np.unique(producer_id[txn]):
            got = ranges.get(int(pid))
            if got is None:
                continue
            firsts, lasts = got
            sel = txn & (producer_id == pid)
            bases = base_offset[sel]
            k = np.searchsorted(firsts, bases, side="right") - 1
            out[sel] = (k >= 0) & (lasts[np.maximum(k, 0)] >= bases)
        return out


def _segment_of(part: Partition, offset: int):
    found = None
    for seg in part.segments:
        if seg.base_offset <= offset:
            found = seg
    return found


def partition_transactions(fs, part: Partition, problems: list, *, window: int, check_crc: bool = True,
                           limits=None) -> Transactions:
    """The aborted and open transactions of a partition (reads its .txnindex files,
    its newest readable producer snapshot and the batches after it)."""
    out = Transactions()
    for seg in part.segments:
        if seg.txnindex is None or not seg.txnindex_size:
            continue
        with fs.open_input_file(seg.txnindex) as f:
            data = f.read_buffer(seg.txnindex_size).to_pybytes()
        entries, left = read_txn_index(data)
        if left:
            problems.append(LogProblem("txnindex", seg.txnindex, len(data) - left, None,
                                       f"{left} bytes after the last whole entry (34 bytes each) not read",
                                       seg.topic, seg.partition, seg.base_offset))
        for e in entries:
            out.add_aborted(e.producer_id, e.first_offset, e.last_offset)
    start = part.segments[0].base_offset if part.segments else 0
    for snap in reversed(part.snapshots):
        with fs.open_input_file(snap.path) as f:
            data = f.read_buffer(snap.size).to_pybytes()
        try:
            entries = read_producer_snapshot(data)
        except SnapshotError as exc:
            problems.append(LogProblem("snapshot", snap.path, None, None, f"producer snapshot not read: {exc}",
                                       part.topic, part.partition, None))
            continue
        out.open = {e.producer_id: e.current_txn_first_offset for e in entries if e.current_txn_first_offset >= 0}
        out.snapshot = start = snap.offset
        break
    # the batches after the snapshot: transactions begun and ended since
    first = _segment_of(part, start)
    walking = False
    for seg in part.segments:
        if seg is first:
            walking = True
        if not walking:
            continue
        begin, check = 0, None
        if seg is first and start > seg.base_offset and seg.index is not None:
            k, off, pos = OffsetIndex(fs, seg.index, seg.index_size, seg.base_offset).lookup(start)
            if k >= 0:
                begin, check = pos, off
        for item in Scan(fs, seg, start=begin, check_offset=check, columns=(), control=True, check_crc=check_crc,
                         window=window, limits=limits):
            if isinstance(item, Window):
                _follow(out, item, start)
    return out


def _follow(out: Transactions, win: Window, start: int) -> None:
    b = win.batches
    magic = column(b, "magic")
    attrs = column(b, "attributes")
    pid = column(b, "producer_id")
    base = column(b, "base_offset")
    ctype = column(b, "control_type")
    txn = (magic >= 2) & ((attrs & ATTR_TRANSACTIONAL) != 0) & (column(b, "last_offset") >= start)
    for k in np.flatnonzero(txn):
        p = int(pid[k])
        if attrs[k] & ATTR_CONTROL:
            first = out.open.pop(p, None)
            if ctype[k] == 0 and first is not None:  # an ABORT marker: its transaction, were a .txnindex missing
                out.add_aborted(p, first, int(base[k]))
        elif p not in out.open:
            out.open[p] = int(base[k])
    out._ranges = None
