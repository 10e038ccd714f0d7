"""``spark.read.format("kafkaproto.capture")`` (kafkaproto.sources): the
source's tables are the report's, row for row, read whole or indexed and
split by connection; filters give exactly the rows they name and decode no
other body; a user's own DataFrame queries give the report's figures.

The reader runs here in this process first (what a Spark task runs,
without a JVM: both engines), then through Spark (local[2])."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pyspark.sql.datasource import (
    CaseInsensitiveDict,
    EqualTo,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    LessThan,
    LessThanOrEqual,
    StringStartsWith,
)

from kafkaproto import sources
from kafkaproto.capture import CaptureDamageError, SegmentTask, open_capture
from kafkaproto.capture.frames import frame_schema
from kafkaproto.report import run_report
from support.report_helpers import SAMPLE, damaged_captures
from support.spark_session import conf_kept
from support.synthetic import write_capture

TABLES = ("requests", "responses", "records", "record_sets", "unanswered")
#: whole: every capture read by one task; split: the pcaps past 256 kB indexed and dealt by connection
SPLITS = {"whole": "128m", "split": "256k"}


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    folder = tmp_path_factory.mktemp("source-in")
    synthetic = folder / "synthetic.pcap"
    write_capture(synthetic, size=1_500_000, seed=41, connections=2)
    return [str(SAMPLE / "kafka.pcap"), str(SAMPLE / "tap-mock"), str(SAMPLE / "tap-tansu"), str(synthetic)]


@pytest.fixture(scope="module")
def report(captures, tmp_path_factory):
    """The report over the same captures (embedded engine): its tables and figures."""
    out = tmp_path_factory.mktemp("source-report")
    return run_report(captures, out, progress=False)


def _table(report, name: str) -> pa.Table:
    return pq.read_table(Path(report.data.out) / name)


def _rows(t: pa.Table) -> list[str]:
    return sorted(repr(sorted(r.items())) for r in t.to_pylist())


def _local(paths, table: str, filters=(), **options):
    """The source's reader in this process: (rows, partitions, filters left to Spark)."""
    opts = CaseInsensitiveDict({"table": table, "paths": json.dumps([str(p) for p in paths]),
                                **{k: str(v) for k, v in options.items()}})
    ds = sources.KafkaCaptureDataSource(opts)
    reader = ds.reader(ds.schema())
    left = list(reader.pushFilters(list(filters)))
    parts = reader.partitions()
    got = [b for p in parts for b in reader.read(p)]
    schema = sources.spark_schema(table, reader.names)
    from pyspark.sql.pandas.types import to_arrow_schema

    return pa.Table.from_batches(got, schema=to_arrow_schema(schema, timezone="UTC")), parts, left


# ---------------------------------------------------------------------------
# in this process


@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("table", TABLES)
def test_tables_are_the_reports(captures, report, table, split):
    got, parts, _ = _local(captures, table, splitBytes=SPLITS[split])
    assert got.num_rows == _table(report, table).num_rows > 0
    assert _rows(got) == _rows(_table(report, table))
    indexed = [p.task for p in parts if isinstance(p.task, SegmentTask)]
    if split == "whole":
        assert len(parts) == 1 and not indexed  # four small captures share a task
    else:  # kafka.pcap and the synthetic capture indexed, each dealt into partitions of whole connections
        assert {p.name for p in indexed} == {"kafka.pcap", "synthetic.pcap"} and len(indexed) >= 4


@pytest.mark.parametrize("columns", ["topic,partition,offset,timestamp,client_id", "headers,seq", "error"])
def test_records_columns_asked_for_are_the_reports(captures, report, columns):
    """The records walk copies only the columns asked for (no key, value or
    header unless named): the same values in those columns."""
    got, _, _ = _local(captures, "records", columns=columns, splitBytes="256k")
    assert got.schema.names == columns.split(",")
    assert _rows(got) == _rows(_table(report, "records").select(columns.split(",")))


@pytest.mark.parametrize("filters", [[("partition", "=", 0)], pc.field("timestamp").is_valid(),
                                     [("timestampType", "=", 0), ("key", "!=", b"")]])
def test_records_filtered_on_columns_not_asked_for(captures, report, filters):
    """The records walk copies what the filters read too (it once copied only
    the columns asked for, and a filter on another then left no row)."""
    got = open_capture(captures).read_table("records", columns=["conn", "seq", "offset"], filters=filters)
    records = _table(report, "records")
    want = records.filter(filters if isinstance(filters, pc.Expression) else pq.filters_to_expression(filters))
    assert want.num_rows and _rows(got) == _rows(want.select(["conn", "seq", "offset"]))

@pytest.mark.parametrize("split", SPLITS)
def test_frames_give_the_header_columns_of_requests_and_responses(captures, report, split):
    frames, _, _ = _local(captures, "frames", splitBytes=SPLITS[split])
    assert frames.schema.names == ["capture", *frame_schema().names]
    shared = ("capture", "conn", "seq", "ts", "client", "server", "api_key", "api_version", "correlation_id",
              "client_id", "size")
    for direction, table, extra in (("request", "requests", ()),
                                    ("response", "responses", ("request_seq", "latency_us"))):
        mine = frames.filter(pa.compute.equal(frames["direction"], direction)).select(shared + extra)
        assert _rows(mine) == _rows(_table(report, table).select(shared + extra))
    # every frame's bytes: its size prefix's worth
    sizes = np.array(frames["size"]) - 4
    assert (np.array(pa.compute.binary_length(frames["frame"])) == sizes).all()


def _report_filtered(report, table, keep) -> list[str]:
    return _rows(pa.Table.from_pylist([r for r in _table(report, table).to_pylist() if keep(r)],
                                      schema=_table(report, table).schema))


def _ts_bounds(report):
    ts = sorted(t for t in _table(report, "responses")["ts"].to_pylist() if t is not None)
    return ts[len(ts) // 3], ts[2 * len(ts) // 3]


FILTERS = {
    "api_key": ("requests", lambda lo, hi: [EqualTo(("api_key",), 1), IsNotNull(("api_key",))],
                lambda r, lo, hi: r["api_key"] == 1),
    "api": ("responses", lambda lo, hi: [In(("api",), ("Fetch", "Metadata", "Nonsense"))],
            lambda r, lo, hi: r["api"] in ("Fetch", "Metadata")),
    "time": ("responses", lambda lo, hi: [GreaterThanOrEqual(("ts",), lo), LessThan(("ts",), hi)],
             lambda r, lo, hi: r["ts"] is not None and lo <= r["ts"] < hi),
    "broker": ("requests", lambda lo, hi: [EqualTo(("server",), "127.0.0.1:40249")],
               lambda r, lo, hi: r["server"] == "127.0.0.1:40249"),
    "broker+key+time": ("responses", lambda lo, hi: [In(("server",), ("10.0.0.1:9092", "127.0.0.1:35037")),
                                                     EqualTo(("api_key",), 1), LessThanOrEqual(("ts",), hi)],
                        lambda r, lo, hi: r["server"] in ("10.0.0.1:9092", "127.0.0.1:35037") and
                        r["api_key"] == 1 and r["ts"] is not None and r["ts"] <= hi),
    "source": ("records", lambda lo, hi: [EqualTo(("source",), "fetch")], lambda r, lo, hi: r["source"] == "fetch"),
    "capture": ("record_sets", lambda lo, hi: [EqualTo(("capture",), "kafka.pcap"), GreaterThanOrEqual(("ts",), lo)],
                lambda r, lo, hi: r["capture"] == "kafka.pcap" and r["ts"] is not None and r["ts"] >= lo),
    "unanswered": ("unanswered", lambda lo, hi: [In(("api_key",), (1, 3))], lambda r, lo, hi: r["api_key"] in (1, 3)),
}


@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("case", FILTERS)
def test_filters_give_exactly_the_rows_they_name(captures, report, case, split):
    table, make, keep = FILTERS[case]
    lo, hi = _ts_bounds(report)
    not_taken = StringStartsWith(("client_id",), "orders")
    got, _, left = _local(captures, table, [*make(lo, hi), not_taken], splitBytes=SPLITS[split])
    assert left == [not_taken]  # every filter on the columns it knows is applied here, exactly
    want = _report_filtered(report, table, lambda r: keep(r, lo, hi))
    assert want and _rows(got) == want


class _Decoded:
    """Counts the bodies the report's decoder decodes, by (api key, direction)."""

    def __init__(self, monkeypatch) -> None:
        from kafkaproto.capture import tables as decode

        self.counts: dict[tuple[int, str], int] = {}
        real = decode.karrow.messages

        def counted(frames, key, direction="request", *a, **kw):
            self.counts[(key, direction)] = self.counts.get((key, direction), 0) + len(frames)
            return real(frames, key, direction, *a, **kw)

        monkeypatch.setattr(decode.karrow, "messages", counted)


@pytest.mark.parametrize("split", SPLITS)
def test_only_the_bodies_a_query_needs_are_decoded(captures, report, split, monkeypatch):
    seen = _Decoded(monkeypatch)
    opts = {"splitBytes": SPLITS[split]}
    # header columns alone: no body at all
    got, _, _ = _local(captures, "requests", columns="capture,client_id,api,api_version", **opts)
    assert got.num_rows == _table(report, "requests").num_rows and seen.counts == {}
    # one api key: its responses, nothing else
    got, _, _ = _local(captures, "responses", [EqualTo(("api_key",), 1)], columns="client_id,latency_us,error_codes",
                       **opts)
    assert seen.counts == {(1, "response"): got.num_rows} and got.num_rows > 0
    seen.counts.clear()
    # waits: the Fetch requests that asked for them too
    got, _, _ = _local(captures, "responses", [EqualTo(("api",), "Fetch")], columns="latency_us,wait_ms", **opts)
    fetch_requests = pa.compute.sum(pa.compute.equal(_table(report, "requests")["api_key"], 1)).as_py()
    assert seen.counts == {(1, "response"): got.num_rows, (1, "request"): fetch_requests}
    pairs = sorted((r["latency_us"], r["wait_ms"]) for r in got.to_pylist())
    assert pairs == sorted((r["latency_us"], r["wait_ms"]) for r in _table(report, "responses").to_pylist()
                           if r["api"] == "Fetch")
    assert any(w is not None for _, w in pairs)
    seen.counts.clear()
    # topic names: Produce requests, and the Metadata responses that name topic ids
    got, _, _ = _local(captures, "requests", [EqualTo(("api_key",), 0)], columns="topics", **opts)
    assert set(seen.counts) == {(0, "request"), (3, "response")}
    assert seen.counts[(0, "request")] == got.num_rows



#: pyarrow expressions as filters of the dataset (alone, or in a list with terms), and the same test of a row
EXPRESSIONS = {
    "header": ("responses", pc.field("api").isin(["Fetch", "Metadata"]), lambda r: r["api"] in ("Fetch", "Metadata")),
    # columns of the bodies: decoded because the expression reads them, though no column asked for them
    "body": ("requests", pc.field("software_name").is_valid() & (pc.field("api_version") >= 3),
             lambda r: r["software_name"] is not None and r["api_version"] >= 3),
    "records": ("records", pc.binary_length(pc.field("value")) > 20,
                lambda r: r["value"] is not None and len(r["value"]) > 20),
    "with terms": ("responses", [("api", "=", "Fetch"), pc.field("wait_ms").is_valid()],
                   lambda r: r["api"] == "Fetch" and r["wait_ms"] is not None),
}


@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("case", EXPRESSIONS)
def test_pyarrow_expressions_filter_the_rows(captures, report, case, split):
    table, filters, keep = EXPRESSIONS[case]
    split_bytes = {"whole": None, "split": 256 << 10}[split]
    got = open_capture(captures).read_table(table, columns=["capture", "conn", "seq"] if table != "records" else
                                            ["capture", "conn", "seq", "offset"], filters=filters,
                                            split_bytes=split_bytes)
    want = _rows(pa.Table.from_pylist([{c: r[c] for c in got.schema.names} for r in _table(report, table).to_pylist()
                                       if keep(r)], schema=got.schema))
    assert want and _rows(got) == want


def test_an_expression_that_cannot_filter_the_table_is_a_value_error(captures):
    ds = open_capture(captures[:1])
    for expr, why in ((pc.field("nope") == 1, "no column nope"),
                      (pc.field("api_key") == "x", "no kernel matching input types"),
                      (pc.field("api"), "must evaluate to bool")):
        with pytest.raises(ValueError, match=why):
            ds.read_table("requests", filters=expr)
    # several tables read at once: an expression applies where it can, and must apply somewhere
    task = ds.plan()[0]
    counts: dict[str, int] = {}
    for table, batch in ds.read_task(task, ("requests", "frames"), filters=pc.field("software_name") == "librdkafka"):
        counts[table] = counts.get(table, 0) + batch.num_rows
    assert counts["frames"] == ds.read_table("frames").num_rows and 0 < counts["requests"]
    with pytest.raises(ValueError, match="applies to none of the tables read"):
        list(ds.read_task(task, ("frames",), filters=pc.field("topics") == "x"))


def test_indexed_capture_plans_only_the_connections_filters_leave(captures):
    """Indexed while Spark plans: other brokers' connections, and connections
    with no packet in the time range, are never read."""
    pcap = [captures[0]]
    _, every, _ = _local(pcap, "frames", splitBytes="64k")
    total = sum(p.task.segments for p in every)
    _, one, _ = _local(pcap, "frames", [EqualTo(("server",), "127.0.0.1:40249")], splitBytes="64k")
    assert 0 < sum(p.task.segments for p in one) < total
    import datetime

    late = datetime.datetime(2100, 1, 1, tzinfo=datetime.timezone.utc)
    got, none, _ = _local(pcap, "frames", [GreaterThanOrEqual(("ts",), late)], splitBytes="64k")
    assert got.num_rows == 0 and not any(isinstance(p.task, SegmentTask) for p in none)


@pytest.mark.parametrize("split", SPLITS)
def test_damaged_captures_fail_the_read_unless_ignored(tmp_path, split):
    """A capture cut or damaged fails the query (while planning, for one that
    is indexed), naming the file; ignoreCorruptFiles reads what the report reads."""
    _, paths = damaged_captures(tmp_path / "in")
    opts = {"splitBytes": "64k" if split == "split" else "128m"}
    for name in ("truncated.pcap", "corrupt.pcap", "tap-cut"):
        with pytest.raises(CaptureDamageError, match=f"{name}.*ignoreCorruptFiles=true"):
            _local([paths[name]], "requests", **opts)
    report = run_report([str(p) for p in paths.values()], tmp_path / "out", progress=False)
    for table in ("requests", "responses", "records"):
        got, _, _ = _local(list(paths.values()), table, ignoreCorruptFiles="true", **opts)
        if split == "whole":
            assert _rows(got) == _rows(_table(report, table)), table
        else:
            # each byte range starts afresh: a range after the damage reads what
            # follows it, which a read of the whole file, stopped there, does not
            assert set(_rows(_table(report, table))) <= set(_rows(got)), table


# ---------------------------------------------------------------------------
# through Spark


@pytest.fixture(scope="module")
def spark(spark):
    """The run's shared session with the sources registered (the filter
    pushdown setting put back after the module)."""
    from kafkaproto.log.spark import PUSHDOWN_CONF

    with conf_kept(spark, PUSHDOWN_CONF):
        sources.register(spark)
        yield spark


def _read(spark, captures, table: str, split: str = "128m"):
    return (spark.read.format("kafkaproto.capture").option("table", table).option("splitBytes", split)
            .load([str(p) for p in captures]))


def _spark_rows(df) -> list[str]:
    return _rows(df.toArrow())


@pytest.mark.spark
@pytest.mark.parametrize("split", SPLITS)
def test_spark_reads_the_reports_tables(spark, captures, report, split):
    for table in TABLES:
        df = _read(spark, captures, table, SPLITS[split])
        assert df.schema == sources.spark_schema(table)
        assert _spark_rows(df) == _rows(_table(report, table)), table
    # a schema names the columns to build, as the columns option does
    df = spark.read.format("kafkaproto.capture").schema("client_id string, latency_us bigint") \
        .option("table", "responses").option("splitBytes", SPLITS[split]).load(captures)
    assert _spark_rows(df) == _rows(_table(report, "responses").select(["client_id", "latency_us"]))
    parts = _read(spark, captures, "frames", SPLITS[split]).rdd.getNumPartitions()
    assert parts == 1 if split == "whole" else parts >= 5


@pytest.mark.spark
def test_register_gives_both_of_kafkaprotos_sources(spark, tmp_path):
    """One call registers the capture source and the log source
    (kafkaproto.log.spark), with the filter pushdown both take."""
    from support.kafka_log import simple_partition

    simple_partition(tmp_path, 60, topic="orders", partition=0)
    assert spark.read.format("kafkaproto.log").load(str(tmp_path)).where("offset >= 10").count() == 50
    assert spark.conf.get("spark.sql.python.filterPushdown.enabled") == "true"


WHERE = [
    ("requests", "api_key = 1"),
    ("responses", "api IN ('Fetch', 'Metadata') AND ts >= '{lo}' AND ts < '{hi}'"),
    ("responses", "server = '127.0.0.1:35037' AND api_key IN (0, 1, 3) AND ts <= '{hi}'"),
    ("records", "source = 'produce' AND capture = 'synthetic.pcap'"),
    ("requests", "api_key > 10 OR client_id = 'orders-producer'"),  # not pushed (OR): Spark filters
]


@pytest.mark.spark
@pytest.mark.parametrize("split", SPLITS)
def test_spark_filters_give_the_rows_of_the_reports_tables(spark, captures, report, split):
    lo, hi = (t.strftime("%Y-%m-%d %H:%M:%S.%f") for t in _ts_bounds(report))
    for table, where in WHERE:
        cond = where.format(lo=lo, hi=hi)
        df = _read(spark, captures, table, SPLITS[split]).where(cond)
        want = spark.read.parquet(str(Path(report.data.out) / table)).where(cond)
        assert _spark_rows(df) == _spark_rows(want) and df.count() > 0, cond
        plan = df._jdf.queryExecution().executedPlan().toString()
        assert ("Filter (" in plan) == (" OR " in cond), plan  # taken whole by the source, or left to Spark


#: the report's latency histogram (report.aggregate.latency_bucket) in Spark SQL: a user can
#: reproduce its figures exactly (a bucket is the value's top 8 bits; the middle of the bucket
#: holding the nearest rank, never above the maximum)
_LOW = "shiftleft(shiftright(greatest(latency_us, 0), greatest(length(bin(greatest(latency_us, 0))) - 8, 0)), " \
       "greatest(length(bin(greatest(latency_us, 0))) - 8, 0))"


def _bucketed(q: float) -> str:
    p = f"percentile_disc({q}) WITHIN GROUP (ORDER BY {_LOW})"
    return f"least({p} + (shiftleft(1, greatest(length(bin({p})) - 8, 0)) - 1) / 2, max(latency_us)) / 1000"


@pytest.mark.spark
def test_user_queries_give_the_reports_figures(spark, captures, report):
    from pyspark.sql import functions as F

    d = report.data
    responses = _read(spark, captures, "responses", "256k").where("latency_us IS NOT NULL")
    # latency by api: the report's figures, exactly
    got = responses.groupBy("api").agg(
        F.count("*").alias("count"), (F.max("latency_us") / 1000).alias("max"),
        *(F.expr(_bucketed(q)).alias(f"p{int(q * 100)}") for q in (0.5, 0.9, 0.99))).collect()
    assert sorted((r.asDict() for r in got), key=repr) == sorted(
        ({k: r[k] for k in ("api", "count", "max", "p50", "p90", "p99")} for r in d.latency), key=repr)
    # ... and by capture and broker
    got = responses.groupBy("capture", "server", "api").agg(F.count("*").alias("count"),
                                                           F.expr(_bucketed(0.99)).alias("p99")).collect()
    assert sorted((r["capture"], r["server"], r["api"], r["count"], r["p99"]) for r in got) == \
        sorted((r["capture"], r["broker"], r["api"], r["count"], r["p99"]) for r in d.latency_by)
    # p99 Fetch latency by client id (docs/sources.md's query): the same numbers from the
    # source as from the report's own table, and within a 128th of the report's p99
    p99 = F.expr("percentile_disc(0.99) WITHIN GROUP (ORDER BY latency_us) / 1000").alias("p99_ms")

    def by_client(df):
        return sorted(tuple(r) for r in df.where("api = 'Fetch'").groupBy("client_id")
                      .agg(F.count("*").alias("fetches"), p99).collect())

    mine = by_client(responses)
    assert mine == by_client(spark.read.parquet(str(Path(d.out) / "responses")).where("latency_us IS NOT NULL"))
    fetch = next(r for r in d.latency if r["api"] == "Fetch")
    assert sum(n for _, n, _ in mine) == fetch["count"] and len(mine) >= 2
    # the report's p99 comes from its histogram: within a 128th of the exact one
    exact = responses.where("api = 'Fetch'").agg(p99).collect()[0][0]
    assert abs(fetch["p99"] - exact) <= exact / 128
    # api versions per client: the report's api use, summed over the software each connection named
    requests = _read(spark, captures, "requests").select("client_id", "api_key", "api", "api_version")
    use = requests.groupBy("client_id", "api_key", "api", "api_version").count().collect()
    want: dict = {}
    for r in d.api_use:
        k = (r["client_id"], r["api_key"], r["api"], r["api_version"])
        want[k] = want.get(k, 0) + r["requests"]
    assert {(r["client_id"], r["api_key"], r["api"], r["api_version"]): r["count"] for r in use} == want
