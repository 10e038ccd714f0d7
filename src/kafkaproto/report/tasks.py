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
accounting and the figures' partial tables
(:meth:`~kafkaproto.report.aggregate.TaskAggregates.parts`), as one Arrow
IPC stream of one row (each table a list of structs), serialized once;
:func:`read_manifests` gives the driver every task's tables concatenated
(:mod:`kafkaproto.report.job` folds them).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from ..capture import Accounting
from .aggregate import PARTS, UNANSWERED_ROWS_SCHEMA, TaskAggregates
from .decode import TableWriter, accounting_from_dict, decode_capture, decode_segments

__all__ = ["MANIFEST_SCHEMA", "index_task", "read_manifests", "segment_task", "whole_task"]

#: the tables of a task's manifest: the files it wrote, its captures' accounting, the figures' parts
_TABLES = {"files": pa.schema([("table", pa.string()), ("file", pa.string()), ("rows", pa.int64())]),
           "accounting": pa.schema([("capture", pa.string()), ("json", pa.string())]),
           **{name: schema for name, (schema, _, _) in PARTS.items()},
           "unanswered_rows": UNANSWERED_ROWS_SCHEMA}
#: a manifest: one row, each of its tables a list of structs
MANIFEST_SCHEMA = pa.schema([(name, pa.list_(pa.struct(list(schema)))) for name, schema in _TABLES.items()])
# lz4 frames: a quarter of the bytes for a few ms (the latency histograms by broker repeat their names)
_IPC = pa.ipc.IpcWriteOptions(compression="lz4" if pa.Codec.is_available("lz4") else None)


def _filesystem(out: str):
    from pyarrow import fs as pafs

    return pafs.FileSystem.from_uri(out)


def whole_task(items: Sequence[tuple[str, Sequence[str]]], out: str, part: str, ports=None) -> bytes:
    """Captures read whole: ``items`` ``[(name, paths)]`` (one path, or the
    files of one rolled capture in order), their rows written under ``out``
    as ``<table>/<part>.parquet``.  Returns the manifest (Arrow IPC)."""
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
                 ports=None) -> bytes:
    """Segment positions of some connections (sorted by capture, key and
    order; statistics rows of ranges anywhere among them) → their tables.
    ``names``: capture number → name; ``files``: (capture, file rank) → path.
    Returns the manifest (Arrow IPC)."""
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


def _manifest(written, accs: list[tuple[str, Accounting]], agg: TaskAggregates) -> bytes:
    tables = {"files": pa.Table.from_pylist([{"table": t, "file": f, "rows": n} for t, f, n in written],
                                            schema=_TABLES["files"]),
              "accounting": pa.Table.from_pylist([{"capture": c, "json": json.dumps(a.to_dict())} for c, a in accs],
                                                 schema=_TABLES["accounting"]),
              **agg.parts()}
    row = []
    for name, schema in _TABLES.items():
        t = tables[name]
        values = pa.StructArray.from_arrays([c.combine_chunks() for c in t.columns], fields=list(schema))
        row.append(pa.ListArray.from_arrays(pa.array([0, t.num_rows], pa.int32()), values))
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, MANIFEST_SCHEMA, options=_IPC) as w:
        w.write_batch(pa.record_batch(row, schema=MANIFEST_SCHEMA))
    return sink.getvalue().to_pybytes()


def read_manifests(manifests: Iterable[bytes]) -> dict[str, pa.Table]:
    """The tasks' manifests (:func:`whole_task`, :func:`segment_task`) as
    tables: ``files``, ``accounting`` and the figures' parts
    (:data:`~kafkaproto.report.aggregate.PARTS`), each the rows of every task
    in the tasks' order."""
    batches = [pa.ipc.open_stream(m).read_next_batch() for m in manifests]
    out = {}
    for name, schema in _TABLES.items():
        values = [pc.list_flatten(b.column(name)) for b in batches]
        out[name] = pa.Table.from_struct_array(pa.chunked_array(values, pa.struct(list(schema)))) if values \
            else schema.empty_table()
    return out
