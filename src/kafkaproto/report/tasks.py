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
accounting and the figures' partial tables
(:meth:`~kafkaproto.report.aggregate.TaskAggregates.parts`), as one Arrow
IPC stream of one row (each table a list of structs), serialized once;
:func:`read_manifests` gives the driver every task's tables concatenated
(:mod:`kafkaproto.report.job` folds them).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

import pyarrow as pa
import pyarrow.compute as pc

from ..arrow import buffers as ab
from ..capture import Accounting, CaptureDataset, RangeTask, WholeTask
from ..capture.dataset import index_range
from ..capture.tables import TASK_TABLES, table_schema
from .aggregate import PARTS, UNANSWERED_ROWS_SCHEMA, TaskAggregates
from .write import TableWriter

__all__ = ["MANIFEST_SCHEMA", "PAYLOADS", "accounting_manifest", "index_task", "read_manifests", "segment_task",
           "whole_task"]

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


def _write(rows, accounts: dict[str, Accounting], out: str, part: str) -> bytes:
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


#: the records table's columns that hold what producers sent; ``payloads=False`` leaves them null
PAYLOADS = ("key", "value", "headers")


def _columns(payloads: bool) -> dict[str, list[str]] | None:
    """The columns a task builds: every one, or the records without :data:`PAYLOADS`."""
    if payloads:
        return None
    return {"records": [n for n in table_schema("records").names if n not in PAYLOADS]}


def whole_task(task: WholeTask, out: str, part: str, ports=None, payloads: bool = True) -> bytes:
    """Captures read whole, their rows written under ``out`` as
    ``<table>/<part>.parquet`` (``payloads=False``: the records' key, value
    and headers left null, never copied).  Returns the manifest (Arrow IPC)."""
    accounts: dict[str, Accounting] = {}
    ds = CaptureDataset([], ports=ports)
    return _write(ds.read_task(task, TASK_TABLES, _columns(payloads), accounts=accounts, topic_ids=True), accounts,
                  out, part)


def index_task(task: RangeTask) -> list:
    """A byte range → its segment positions' record batches, the last its statistics row."""
    return index_range(task)


def segment_task(batches: Iterable, names: Mapping[int, str], files: Mapping[tuple[int, int], str], out: str,
                 part: str, ports=None, payloads: bool = True) -> bytes:
    """Segment positions of some connections (sorted by capture, key and
    order; statistics rows of ranges anywhere among them are skipped) →
    their tables.  ``names``: capture number → name; ``files``: (capture,
    file rank) → path."""
    accounts: dict[str, Accounting] = {}
    ds = CaptureDataset([], ports=ports)
    frames = ds.position_frames(batches, names, files, accounts=accounts)
    return _write(ds.table_rows(frames, TASK_TABLES, _columns(payloads), accounts=accounts, topic_ids=True), accounts,
                  out, part)


def accounting_manifest(accs: list[tuple[str, Accounting]]) -> bytes:
    """A manifest of accounting alone (the driver's ledgers of the captures read in ranges)."""
    return _manifest([], accs, None)


def _manifest(written, accs: list[tuple[str, Accounting]], agg: TaskAggregates | None) -> bytes:
    tables = {"files": pa.table([ab.strings([t for t, _, _ in written], pa.string()),
                                 ab.strings([f for _, f, _ in written], pa.string()),
                                 ab.numbers([n for _, _, n in written], pa.int64())], schema=_TABLES["files"]),
              "accounting": pa.table([ab.strings([c for c, _ in accs], pa.string()),
                                      ab.strings([json.dumps(a.to_dict()) for _, a in accs], pa.string())],
                                     schema=_TABLES["accounting"]),
              **(agg.parts() if agg is not None else {})}
    row = []
    for name, schema in _TABLES.items():
        t = tables[name] if name in tables else ab.empty_table(schema)
        values = pa.StructArray.from_arrays([ab.array(c) for c in t.columns], fields=list(schema))
        row.append(pa.ListArray.from_arrays(ab.numbers([0, t.num_rows], pa.int32()), values))
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
            else ab.empty_table(schema)
    return out
