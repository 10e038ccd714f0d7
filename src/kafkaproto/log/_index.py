"""Kafka's per-segment index files, and the producer-state snapshots.

Layouts (big-endian):

- ``.index``: 8-byte entries, (offset - segment base: int32, byte position
  in the .log: int32).  The broker adds one after every
  ``index.interval.bytes`` (4 KiB) of batches: the entry holds the last offset
  of the batch at that position.  An active segment's index is preallocated
  (``segment.index.bytes``, 10 MiB) and so ends in zero entries.
- ``.timeindex``: 12-byte entries, (the largest timestamp so far: int64,
  the offset of the batch holding it - base: int32), added with the offset
  entries when the timestamp grew, and once more when the segment is rolled.
- ``.txnindex``: 34-byte entries, (version: int16, producer id: int64, first
  offset: int64, last offset (the ABORT marker's): int64, last stable
  offset: int64), one per transaction aborted in the segment.
- ``<offset>.snapshot``: version int16 (1), CRC-32C of what follows (uint32),
  then an array (int32 count) of producers: id int64, epoch int16, last
  sequence int32, last offset int64, offset delta int32, timestamp int64,
  coordinator epoch int32, first offset of its open transaction int64 (-1:
  none).

Index files are read a page at a time through a cache: a lookup is a binary
search that touches about log2(pages) pages, never the whole file.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

import crc32c as _crc32c

__all__ = ["AbortedTxn", "IndexFile", "OffsetIndex", "ProducerEntry", "TimeIndex", "read_producer_snapshot",
           "read_txn_index"]

PAGE = 16 << 10

_OFF = struct.Struct(">ii")
_TIME = struct.Struct(">qi")
_TXN = struct.Struct(">hqqqq")
_PRODUCER = struct.Struct(">qhiqiqiq")


class IndexFile:
    """Pages of one file, read on demand (``PAGE`` bytes each) and kept."""

    def __init__(self, fs, path: str, size: int, page: int = PAGE):
        self.fs, self.path, self.size, self.page = fs, path, size, page
        self._pages: dict[int, bytes] = {}
        self._file = None

    def read(self, at: int, n: int) -> bytes:
        first, last = at // self.page, (at + n - 1) // self.page
        parts = []
        for k in range(first, last + 1):
            got = self._pages.get(k)
            if got is None:
                if self._file is None:
                    self._file = self.fs.open_input_file(self.path)
                start = k * self.page
                self._file.seek(start)
                got = self._pages[k] = bytes(self._file.read_buffer(min(self.page, self.size - start)))
            parts.append(got)
        blob = parts[0] if len(parts) == 1 else b"".join(parts)
        off = at - first * self.page
        return blob[off:off + n]

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class _Entries:
    """Fixed-size entries whose valid ones are a prefix (the rest: preallocated zeros)."""

    WIDTH = 8

    def __init__(self, fs, path: str | None, size: int, base_offset: int, page: int = PAGE):
        self.base_offset = base_offset
        self.file = None if path is None or size < self.WIDTH else IndexFile(fs, path, size, page)
        self.slots = 0 if self.file is None else size // self.WIDTH
        self._count: int | None = None

    def _raw(self, i: int):
        raise NotImplementedError

    def _blank(self, i: int) -> bool:
        raise NotImplementedError

    @property
    def count(self) -> int:
        """Entries before the zeros (a closed segment's index has none: its last entry says so in one read)."""
        if self._count is None:
            n = self.slots
            if n and self._blank(n - 1):
                lo, hi = 0, n - 1  # the first blank slot is in [lo, hi]
                while lo < hi:
                    mid = (lo + hi) // 2
                    if self._blank(mid):
                        hi = mid
                    else:
                        lo = mid + 1
                n = lo
            self._count = n
        return self._count

    def close(self) -> None:
        if self.file is not None:
            self.file.close()


class OffsetIndex(_Entries):
    """A segment's ``.index``: offset → byte position of the batch holding it."""

    WIDTH = 8

    def _raw(self, i: int) -> tuple[int, int]:
        return _OFF.unpack(self.file.read(i * 8, 8))

    def _blank(self, i: int) -> bool:
        return self._raw(i) == (0, 0)

    def entry(self, i: int) -> tuple[int, int]:
        """Entry ``i`` as (absolute offset, position)."""
        rel, pos = self._raw(i)
        return self.base_offset + rel, pos

    def lookup(self, offset: int) -> tuple[int, int, int]:
        """The last entry whose offset is at most ``offset`` → (its number, offset, position);
        (-1, base offset, 0) when there is none: read from the segment's start."""
        lo, hi = 0, self.count  # entries [0, lo) are <= offset, [hi, count) are above
        while lo < hi:
            mid = (lo + hi) // 2
            if self.base_offset + self._raw(mid)[0] <= offset:
                lo = mid + 1
            else:
                hi = mid
        if lo == 0:
            return -1, self.base_offset, 0
        off, pos = self.entry(lo - 1)
        return lo - 1, off, pos

    def position_after(self, offset: int) -> int | None:
        """A byte position from which on every batch holds only offsets above ``offset``
        (the entry after the first one whose offset reaches it), or None: the segment's end."""
        k, _, _ = self.lookup(offset)
        nxt = k + 2  # entry k+1 holds an offset above ``offset`` in a batch that may start below it
        if nxt < self.count:
            return self.entry(nxt)[1]
        return None

    def from_position(self, position: int) -> tuple[int, int, int] | None:
        """The first entry at byte ``position`` or after → (its number, offset, position), or None."""
        lo, hi = 0, self.count
        while lo < hi:
            mid = (lo + hi) // 2
            if self._raw(mid)[1] < position:
                lo = mid + 1
            else:
                hi = mid
        if lo == self.count:
            return None
        off, pos = self.entry(lo)
        return lo, off, pos

    def entries(self):
        for i in range(self.count):
            yield self.entry(i)


class TimeIndex(_Entries):
    """A segment's ``.timeindex``: the largest timestamp so far → the offset of the batch holding it."""

    WIDTH = 12

    def _raw(self, i: int) -> tuple[int, int]:
        return _TIME.unpack(self.file.read(i * 12, 12))

    def _blank(self, i: int) -> bool:
        return self._raw(i) == (0, 0)

    def entry(self, i: int) -> tuple[int, int]:
        """Entry ``i`` as (timestamp, absolute offset)."""
        ts, rel = self._raw(i)
        return ts, self.base_offset + rel

    def last_below(self, timestamp: int) -> tuple[int, int] | None:
        """The last entry whose timestamp is below ``timestamp`` → (timestamp, offset): every record
        up to that offset is older than ``timestamp``.  None when there is none."""
        lo, hi = 0, self.count
        while lo < hi:
            mid = (lo + hi) // 2
            if self._raw(mid)[0] < timestamp:
                lo = mid + 1
            else:
                hi = mid
        return None if lo == 0 else self.entry(lo - 1)

    def last(self) -> tuple[int, int] | None:
        """The last entry: for a rolled segment, its largest timestamp and where it is."""
        n = self.count
        return self.entry(n - 1) if n else None

    def entries(self):
        for i in range(self.count):
            yield self.entry(i)


class AbortedTxn(NamedTuple):
    version: int
    producer_id: int
    first_offset: int
    last_offset: int        # the ABORT marker's offset
    last_stable_offset: int


def read_txn_index(data: bytes) -> tuple[list[AbortedTxn], int]:
    """The entries of a ``.txnindex`` → (entries, bytes left over after the last whole one)."""
    n = len(data) // 34
    return [AbortedTxn(*_TXN.unpack_from(data, 34 * k)) for k in range(n)], len(data) - 34 * n


class ProducerEntry(NamedTuple):
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int   # -1: no open transaction

    @property
    def first_sequence(self) -> int:
        return self.last_sequence - self.offset_delta if self.last_sequence >= 0 else -1


class SnapshotError(ValueError):
    """A producer snapshot that is not whole (what, where); ``kafka_text``: what Kafka's tools say of it."""

    def __init__(self, text: str, kafka_text: str | None = None):
        super().__init__(text)
        self.kafka_text = kafka_text or text


def read_producer_snapshot(data: bytes) -> list[ProducerEntry]:
    """The producers of a ``.snapshot`` file; raises :class:`SnapshotError` for a damaged one."""
    if len(data) < 10:
        raise SnapshotError(f"{len(data)} bytes: shorter than a snapshot's header (10)")
    version, crc = struct.unpack_from(">hI", data, 0)
    if version != 1:
        raise SnapshotError(f"unknown snapshot version {version} at byte 0",
                            f"Snapshot contained an unknown file version {version}")
    computed = _crc32c.crc32c(data[6:])
    if computed != crc:
        raise SnapshotError(f"CRC-32C mismatch at byte 2: stored {crc:#010x}, computed {computed:#010x}",
                            f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. Computed crc: "
                            f"{computed}")
    (count,) = struct.unpack_from(">i", data, 6)
    if count < 0 or 10 + count * _PRODUCER.size != len(data):
        raise SnapshotError(f"{count} producers at byte 6 do not fill the {len(data) - 10} bytes after it")
    return [ProducerEntry(*_PRODUCER.unpack_from(data, 10 + k * _PRODUCER.size)) for k in range(count)]

