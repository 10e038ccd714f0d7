"""The report's tables on disk: one Parquet file per table and task (any
pyarrow filesystem), written as the rows come."""

from __future__ import annotations

import pyarrow as pa

from ..capture.tables import TASK_TABLES, table_batch, table_schema

__all__ = ["TableWriter", "parquet_options"]


def _leaves(t: pa.DataType, path: str):
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t):
        yield from _leaves(t.value_type, f"{path}.list.element")
    elif pa.types.is_struct(t):
        for f in t:
            yield from _leaves(f.type, f"{path}.{f.name}")
    elif pa.types.is_map(t):
        yield from _leaves(t.key_type, f"{path}.key_value.key")
        yield from _leaves(t.item_type, f"{path}.key_value.value")
    else:
        yield path, t


#: int64 and time stamp columns nearly unique and rising within a file (times, connection numbers, offsets):
#: written as deltas, bit-packed (DELTA_BINARY_PACKED), not through a dictionary that would hash every value
#: to find few repeats; a third of their size, less CPU
_DELTA = frozenset({"ts", "first_ts", "last_ts", "timestamp", "offset", "conn"})
#: string columns whose values interleave in any row group (addresses, client ids, software, topic lists,
#: header keys): a row group's min/max spans nearly all of them, so no filter skips on it; not paid per value
_INTERLEAVED = frozenset({"client", "server", "client_id", "client_ids", "software_name", "software_version",
                          "topics", "headers"})


def parquet_options(schema: pa.Schema) -> dict:
    """How the report writes a table: zstd at level 1 (a quarter of snappy's
    size for the records table, for less CPU); dictionaries, but deltas for
    the nearly unique rising numbers (:data:`_DELTA`); min/max statistics
    for every column but the payload bytes (keys, values, header values) and
    the strings that interleave (:data:`_INTERLEAVED`): statistics no filter
    uses, paid per value."""
    delta = [f.name for f in schema if f.name in _DELTA and (pa.types.is_integer(f.type) or
                                                           pa.types.is_timestamp(f.type))]
    stats = [path for f in schema if f.name not in _INTERLEAVED for path, t in _leaves(f.type, f.name)
             if not (pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t))]
    return {"compression": "zstd", "compression_level": 1, "write_statistics": stats,
            "use_dictionary": [path for f in schema if f.name not in delta for path, _ in _leaves(f.type, f.name)],
            "column_encoding": dict.fromkeys(delta, "DELTA_BINARY_PACKED")}


class TableWriter:
    """Writes one task's rows: one Parquet file per table under
    ``out/<table>/<part>.parquet`` (every table of :data:`TASK_TABLES`, empty
    ones too, so each table can be read whatever the captures held), and the
    ``connections`` rows from the totals it keeps of what it wrote.

    ``filesystem``: a :class:`pyarrow.fs.FileSystem` for ``out`` (default:
    the local one).  ``aggregates``: a
    :class:`~kafkaproto.report.aggregate.TaskAggregates` that sees every row
    written (a fresh one otherwise).
    """

    def __init__(self, out: str, part: str, *, filesystem=None, aggregates=None) -> None:
        from pyarrow import fs as pafs

        from .aggregate import TaskAggregates

        self.out, self.part = out, part
        self.fs = filesystem or pafs.LocalFileSystem()
        self.agg = aggregates if aggregates is not None else TaskAggregates()
        self.writers: dict[str, object] = {}
        self.counts = {t: 0 for t in TASK_TABLES}

    def _writer(self, table: str):
        import pyarrow.parquet as pq

        w = self.writers.get(table)
        if w is None:
            self.fs.create_dir(f"{self.out}/{table}", recursive=True)
            schema = table_schema(table)
            w = self.writers[table] = pq.ParquetWriter(f"{self.out}/{table}/{self.part}.parquet", schema,
                                                       filesystem=self.fs, **parquet_options(schema))
        return w

    def write(self, table: str, batch: pa.RecordBatch) -> None:
        if table == "accounting" or not batch.num_rows:
            return
        if table == "topic_ids":  # the driver writes this table from every task's
            self.agg.add(table, batch)
            return
        w = self._writer(table)
        if batch.num_columns != len(w.schema):  # columns not built (the payloads left out): null
            batch = table_batch(table, dict(zip(batch.schema.names, batch.columns)), batch.num_rows)
        w.write_batch(batch)
        self.agg.add(table, batch)
        self.counts[table] += batch.num_rows

    def close(self, ok: bool = True) -> list[tuple[str, str, int]]:
        """Close every file; ``[(table, file, rows)]`` with ``connections``."""
        import pyarrow.parquet as pq

        if ok:
            for table in TASK_TABLES:
                self._writer(table)
        for w in self.writers.values():
            w.close()
        if not ok:
            return []
        conns = self.agg.connections()
        self.fs.create_dir(f"{self.out}/connections", recursive=True)
        conn_file = f"{self.out}/connections/{self.part}.parquet"
        pq.write_table(conns, conn_file, filesystem=self.fs, **parquet_options(conns.schema))
        return [(t, f"{self.out}/{t}/{self.part}.parquet", self.counts[t]) for t in TASK_TABLES] + \
            [("connections", conn_file, conns.num_rows)]
