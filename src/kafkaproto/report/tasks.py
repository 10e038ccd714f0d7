"""The report's tasks: the work one worker does, the same whichever engine
runs it (the embedded pool of worker processes, or Spark's executors).  A
task is a capture dataset's (:mod:`kafkaproto.capture.dataset`):

- :func:`whole_task`: a :class:`~kafkaproto.capture.WholeTask` (captures
  read whole) → their tables;
- :func:`index_task`: a :class:`~kafkaproto.capture.RangeTask` (a byte range
  of a pcap/pcapng file) → TCP segment positions;
- :func:`segment_task`: the positions of some connections, sorted by
  capture, connection and capture order → their tables, the payloads read
  again from the files mapped in memory.

A task writes Parquet files under the output folder (any URI pyarrow
reaches) and returns its *manifest*: the files it wrote, each capture's
accounting and the figures' partial totals
(:class:`~kafkaproto.report.aggregate.TaskAggregates`), as plain rows the
driver folds (:mod:`kafkaproto.report.job`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from ..capture import Accounting, CaptureDataset, RangeTask, WholeTask
from ..capture.dataset import index_range
from ..capture.tables import TASK_TABLES
from .aggregate import TaskAggregates
from .write import TableWriter

__all__ = ["index_task", "segment_task", "whole_task"]


def _filesystem(out: str):
    from pyarrow import fs as pafs

    return pafs.FileSystem.from_uri(out)


def _write(rows, accounts: dict[str, Accounting], out: str, part: str) -> list[dict]:
    fs, base = _filesystem(out)
    agg = TaskAggregates()
    w = TableWriter(base, part, filesystem=fs, aggregates=agg)
    ok = False
    try:
        for table, batch in rows:
            w.write(table, batch)
        ok = True
    finally:
        written = w.close(ok)
    return _manifest(written, list(accounts.items()), agg)


def whole_task(task: WholeTask, out: str, part: str, ports=None) -> list[dict]:
    """Captures read whole, their rows written under ``out`` as
    ``<table>/<part>.parquet``.  Returns the manifest rows."""
    accounts: dict[str, Accounting] = {}
    ds = CaptureDataset([], ports=ports)
    return _write(ds.read_task(task, TASK_TABLES, accounts=accounts, topic_ids=True), accounts, out, part)


def index_task(task: RangeTask) -> list:
    """A byte range → its segment positions' record batches, the last its statistics row."""
    return index_range(task)


def segment_task(batches: Iterable, names: Mapping[int, str], files: Mapping[tuple[int, int], str], out: str,
                 part: str, ports=None) -> list[dict]:
    """Segment positions of some connections (sorted by capture, key and
    order; statistics rows of ranges anywhere among them are skipped) →
    their tables.  ``names``: capture number → name; ``files``: (capture,
    file rank) → path."""
    accounts: dict[str, Accounting] = {}
    ds = CaptureDataset([], ports=ports)
    frames = ds.position_frames(batches, names, files, accounts=accounts)
    return _write(ds.table_rows(frames, TASK_TABLES, accounts=accounts, topic_ids=True), accounts, out, part)


def _manifest(written, accs: list[tuple[str, Accounting]], agg: TaskAggregates) -> list[dict]:
    rows: list[dict] = [{"kind": "file", "table": t, "file": f, "rows": n} for t, f, n in written]
    rows += [{"kind": "accounting", "capture": c, "json": json.dumps(a.to_dict())} for c, a in accs]
    rows.append({"kind": "aggregates", "json": json.dumps(agg.to_dict())})
    return rows
