"""What a consumer does with a Fetch partition's records, as plain functions.

Each step takes and gives an iterable, so they chain::

    batches = records.decode(partition.records)
    batches = read_committed(batches, partition.aborted_transactions)
    batches = drop_control_batches(batches)
    for record in records_from(batches, fetch_offset):
        ...

or, in one call, ``consume(partition.records, fetch_offset, aborted_transactions=...)``.
The rules are those of Kafka's own consumer (``READ_COMMITTED`` isolation):
a transactional batch is skipped when its producer has an aborted
transaction that started at or before the batch's last offset and whose
ABORT marker has not been passed yet.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator

from . import records as _records
from .records import ControlType

__all__ = ["consume", "drop_control_batches", "read_committed", "records_from"]


def drop_control_batches(batches: Iterable) -> Iterator:
    """Leave out control batches (transaction markers and other control records)."""
    for batch in batches:
        if not batch.truncated and batch.is_control:
            continue
        yield batch


def _aborted_pairs(aborted_transactions) -> list:
    pairs = []
    for item in aborted_transactions or ():
        if isinstance(item, tuple):
            producer_id, first_offset = item
        else:  # a FetchResponse AbortedTransaction (or anything with these attributes)
            producer_id, first_offset = item.producer_id, item.first_offset
        pairs.append((first_offset, producer_id))
    heapq.heapify(pairs)
    return pairs


def _is_abort_marker(batch) -> bool:
    for record in batch.records:
        control = record.control
        return control is not None and control.type == ControlType.ABORT
    return False


def read_committed(batches: Iterable, aborted_transactions) -> Iterator:
    """Leave out the batches of aborted transactions.

    ``aborted_transactions`` is the Fetch partition's list: ``(producer_id,
    first_offset)`` pairs, or objects with ``producer_id`` and
    ``first_offset`` attributes.  Control batches pass through (chain
    :func:`drop_control_batches` to remove them).
    """
    pending = _aborted_pairs(aborted_transactions)
    aborted = set()
    for batch in batches:
        if batch.truncated or batch.magic < 2 or batch.producer_id < 0:
            yield batch
            continue
        while pending and pending[0][0] <= batch.last_offset:
            aborted.add(heapq.heappop(pending)[1])
        if batch.is_control:
            if _is_abort_marker(batch):
                aborted.discard(batch.producer_id)
            yield batch
        elif not (batch.is_transactional and batch.producer_id in aborted):
            yield batch


def records_from(batches: Iterable, fetch_offset: int | None = None) -> Iterator:
    """The records of ``batches``, skipping those below ``fetch_offset``.

    A Fetch answers with whole batches, so the first one (compressed ones
    especially) may start before the offset asked for.
    """
    for batch in batches:
        if fetch_offset is not None and not batch.truncated and batch.last_offset < fetch_offset:
            continue
        for record in batch.records:
            if fetch_offset is None or record.offset >= fetch_offset:
                yield record


def consume(blob, fetch_offset: int | None = None, *, aborted_transactions=None, isolation_level: int = 1,
            **decode_options) -> list:
    """Decode a Fetch partition's records the way a consumer sees them → list of Records.

    ``isolation_level`` as in the Fetch request: 0 READ_UNCOMMITTED, 1
    READ_COMMITTED (aborted transactions left out).  Control batches are
    always left out; a truncated last batch is ignored.
    """
    batches = _records.decode(blob, **decode_options)
    if isolation_level == 1:
        batches = read_committed(batches, aborted_transactions)
    return list(records_from(drop_control_batches(batches), fetch_offset))
