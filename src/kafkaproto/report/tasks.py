"""The report's tasks: the work one worker does, the same whichever engine
runs it (the embedded pool of worker processes, or Spark's executors).

- :func:`whole_task`: captures read whole (one or several small ones per
  task) → their tables;
- :func:`index_task`: byte ranges of pcap/pcapng files → TCP segment
  positions (:func:`kafkaproto.capture.formats.ranges.read_range`);
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
from collections.abc import Iterable, Sequence

from ..capture import Accounting
from .aggregate import TaskAggregates
from .decode import TableWriter, accounting_from_dict, decode_capture, decode_segments

__all__ = ["index_task", "segment_task", "whole_task"]


def _filesystem(out: str):
    from pyarrow import fs as pafs

    return pafs.FileSystem.from_uri(out)


def whole_task(items: Sequence[tuple[str, Sequence[str]]], out: str, part: str, ports=None) -> list[dict]:
    """Captures read whole: ``items`` ``[(name, paths)]`` (one path, or the
    files of one rolled capture in order), their rows written under ``out``
    as ``<table>/<part>.parquet``.  Returns the manifest rows."""
    fs, base = _filesystem(out)
    agg = TaskAggregates()
    w = TableWriter(base, part, filesystem=fs, aggregates=agg)
    accs: list[tuple[str, Accounting]] = []
    ok = False
    try:
        for name, paths in items:
            info = None
            src = paths[0] if len(paths) == 1 else list(paths)
            for table, batch in decode_capture(src, capture=name, ports=ports):
                if table == "accounting":
                    info = batch.column(batch.schema.get_field_index("info"))[batch.num_rows - 1].as_py()
                w.write(table, batch)
            accs.append((name, accounting_from_dict(json.loads(info or "{}"))))
        ok = True
    finally:
        written = w.close(ok)
    return _manifest(written, accs, agg)


def index_task(items: Iterable[tuple]) -> list:
    """Byte ranges → segment positions: ``items`` ``[(capture, rank, path,
    start, end, first)]`` (``first``: where the range's first record is known
    to start, else None).  Returns, for each range, its record batches; the
    last is its statistics row."""
    from ..capture.formats.ranges import read_range

    return [list(read_range(path, start, end, capture=cap, rank=rank, first=first))
            for cap, rank, path, start, end, first in items]


def segment_task(batches, names: Sequence[str], files: dict[tuple[int, int], str], out: str, part: str,
                 ports=None) -> list[dict]:
    """Segment positions of some connections (sorted by capture, key and
    order; statistics rows of ranges anywhere among them) → their tables.
    ``names``: capture number → name; ``files``: (capture, file rank) → path."""
    from ..capture.formats.ranges import Files

    fs, base = _filesystem(out)
    agg = TaskAggregates()
    w = TableWriter(base, part, filesystem=fs, aggregates=agg)
    accs: dict[str, Accounting] = {}
    mapped = Files(files)
    ok = False
    try:
        for table, batch in decode_segments(batches, names, mapped, ports=ports, accs=accs):
            w.write(table, batch)
        ok = True
    finally:
        mapped.close()
        written = w.close(ok)
    return _manifest(written, list(accs.items()), agg)


def _manifest(written, accs: list[tuple[str, Accounting]], agg: TaskAggregates) -> list[dict]:
    rows: list[dict] = [{"kind": "file", "table": t, "file": f, "rows": n} for t, f, n in written]
    rows += [{"kind": "accounting", "capture": c, "json": json.dumps(a.to_dict())} for c, a in accs]
    rows.append({"kind": "aggregates", "json": json.dumps(agg.to_dict())})
    return rows
