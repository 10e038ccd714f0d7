"""How the report lays its tables out in Parquet: the nearly unique rising
numbers as deltas, dictionaries for the rest, min/max statistics where a
filter can use them, and the values as written."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from kafkaproto.capture.dataset import decode_capture
from kafkaproto.report import run_report
from support.report_helpers import SAMPLE

DELTA = {"ts", "first_ts", "last_ts", "timestamp", "offset", "conn"}
NO_STATS = {"client", "server", "client_id", "client_ids", "software_name", "software_version", "topics",
            "headers", "key", "value"}


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("written")
    run_report([str(SAMPLE / "kafka.pcap")], out, progress=False, workers=1)
    return out


@pytest.mark.parametrize("table", ["requests", "responses", "records", "record_sets", "unanswered", "connections"])
def test_each_column_is_encoded_for_what_it_holds(report, table):
    (path,) = (report / table).glob("*.parquet")
    meta = pq.ParquetFile(path).metadata
    assert meta.num_rows > 0
    seen = set()
    for g in range(meta.num_row_groups):
        for i in range(meta.num_columns):
            col = meta.row_group(g).column(i)
            top = col.path_in_schema.split(".")[0]
            seen.add(top)
            if top in DELTA:
                assert "DELTA_BINARY_PACKED" in col.encodings and "RLE_DICTIONARY" not in col.encodings, top
            elif col.physical_type != "BOOLEAN":
                assert "RLE_DICTIONARY" in col.encodings, top
            if top in NO_STATS:
                assert not col.is_stats_set, top
            elif top in ("capture", "ts", "conn", "status", "api_key", "topic"):
                assert col.is_stats_set and col.statistics.has_min_max, top
    assert seen & DELTA and "capture" in seen


@pytest.mark.parametrize("table", ["requests", "responses", "records"])
def test_the_tables_read_back_as_the_decode_pass_gave_them(report, table):
    """Deltas and dictionaries change the bytes on disk, not the values."""
    got = pq.read_table(report / table)
    want = [b for t, b in decode_capture(SAMPLE / "kafka.pcap", capture="kafka.pcap") if t == table]
    want = pa.Table.from_batches(want)
    assert got.num_rows == want.num_rows
    assert got.cast(want.schema).equals(want)
    assert pc.min(got["ts" if "ts" in got.column_names else "timestamp"]).is_valid
