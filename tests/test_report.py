"""The traffic report job on Spark (local[2], the run's shared session):
the committed sample's records equal what its clients produced, damaged
captures finish with balanced books, and the tables and figures agree with
the capture layer."""

from __future__ import annotations

import base64
import collections
import json
import re
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from kafkaproto import arrow as karrow
from kafkaproto import records as krecords
from kafkaproto.capture import Accounting, read_frames
from kafkaproto.capture.tables import TABLE_COLUMNS
from kafkaproto.capture.tools.dissect import dissect, format_line
from kafkaproto.errors import KafkaProtocolError
from kafkaproto.report import run_report
from kafkaproto.report.render import PALETTE, REMOVED, VERSION_SHADES
from support.report_helpers import SAMPLE, damaged_captures, run_chromium

MANIFEST = json.loads((SAMPLE / "produced.json").read_text())
SAMPLE_CAPTURES = [SAMPLE / "kafka.pcap", SAMPLE / "tap-tansu", SAMPLE / "tap-mock"]


@pytest.fixture(scope="module")
def sample_report(spark, tmp_path_factory):
    out = tmp_path_factory.mktemp("sample-report")
    return run_report([str(p) for p in SAMPLE_CAPTURES], out, spark=spark, progress=False)


@pytest.fixture(scope="module")
def damaged_report(spark, tmp_path_factory):
    folder = tmp_path_factory.mktemp("damaged")
    manifest, paths = damaged_captures(folder / "in")
    result = run_report([str(p) for p in paths.values()], folder / "out", spark=spark, progress=False)
    return manifest, paths, result


def table(result, name):
    return pq.read_table(Path(result.data.out) / name)


def _key(rec_key, value, headers, ts_ms):
    return (rec_key, value, tuple((k, v) for k, v in headers or ()), ts_ms)


def test_sample_records_equal_what_the_clients_produced(sample_report):
    recs = table(sample_report, "records")
    assert recs.column("error").null_count == recs.num_rows
    pcap = recs.filter(pc.equal(recs["capture"], "kafka.pcap"))
    seen = collections.defaultdict(collections.Counter)
    fetched = collections.defaultdict(set)
    # Fetch v13+ names topics by id: named in the table where the same connection's Metadata named them
    # before, else joined through the topic_ids table (every id the capture's Metadata responses named)
    names = {r["topic_id"]: r["topic"] for r in table(sample_report, "topic_ids").to_pylist()
             if r["capture"] == "kafka.pcap"}
    for r in pcap.to_pylist():
        r["topic"] = names.get(r["topic"], r["topic"])
        ts_ms = int(r["timestamp"].timestamp() * 1000) if r["timestamp"] is not None else None
        k = _key(r["key"], r["value"], [(h["key"], h["value"]) for h in r["headers"] or ()], ts_ms)
        if r["source"] == "produce":
            seen[(r["topic"], r["partition"])][k] += 1
        else:
            fetched[(r["topic"], r["partition"])].add((r["offset"],) + k)
    runs = collections.defaultdict(collections.Counter)
    for run in MANIFEST["produced"]:
        for rec in run["records"]:
            dec = lambda s: None if s is None else base64.b64decode(s)  # noqa: E731
            runs[(run["topic"], rec["partition"])][_key(dec(rec["key"]), dec(rec["value"]),
                                                        [(h, dec(v)) for h, v in rec["headers"]],
                                                        rec["timestamp_ms"])] += 1
    assert len(runs) >= 25
    for tp, expected in runs.items():
        got = seen[tp]
        if any(k[3] is None for k in expected):  # kcat stamps its records itself: the manifest has no time
            got = collections.Counter({k[:3] + (None,): n for k, n in got.items()})
        # each produced record is in a Produce request, and nothing else is
        assert not expected - got, tp
        assert set(got) == set(expected), tp
    # and what the consumers fetched back carries the broker's offsets
    for run in MANIFEST["consumed"]:
        tp = (run["topic"], 0)
        for rec in run["records"]:
            dec = lambda s: None if s is None else base64.b64decode(s)  # noqa: E731
            want = (rec["offset"],) + _key(dec(rec["key"]), dec(rec["value"]), [(h, dec(v)) for h, v in rec["headers"]],
                                            rec["timestamp_ms"])
            assert want in fetched[tp], (tp, rec)


def test_sample_record_sets_and_codecs_match_the_record_layer(sample_report):
    sets = table(sample_report, "record_sets").filter(pc.equal(table(sample_report, "record_sets")["capture"],
                                                               "kafka.pcap"))
    d = sample_report.data
    codecs = {(r["source"], r["codec"]) for r in d.codecs}
    assert {("produce", c) for c in ("none", "gzip", "snappy", "lz4", "zstd")} <= codecs
    # the record counts of the sets equal the records decoded one batch at a time
    total = 0
    for frame in (f for f in read_frames(SAMPLE / "kafka.pcap") if f.direction == "request" and f.api_key == 0):
        from kafkaproto import decode_request

        _, msg = decode_request(frame.frame)
        for t in msg.topic_data:
            for p in t.partition_data:
                if p.records:
                    total += sum(len(b.records) for b in krecords.decode(p.records))
    produced = pc.sum(sets.filter(pc.equal(sets["source"], "produce"))["records"]).as_py()
    assert produced == total > 50


def test_sample_tables_agree_with_the_capture_layer(sample_report):
    d = sample_report.data
    for name, cols in TABLE_COLUMNS.items():
        assert tuple(table(sample_report, name).column_names) == cols
    conns = table(sample_report, "connections")
    req = table(sample_report, "requests")
    resp = table(sample_report, "responses")
    acc = Accounting()
    items = list(dissect(read_frames(SAMPLE / "kafka.pcap", acc=acc), acc))
    mine = d.accounting_by_capture["kafka.pcap"]
    assert mine.to_dict() == acc.to_dict()
    assert not d.accounting.problems()
    pr = req.filter(pc.equal(req["capture"], "kafka.pcap"))
    assert pr.num_rows == sum(1 for i in items if i.frame.direction == "request")
    assert sorted(pr["client_id"].to_pylist(), key=str) == \
        sorted((i.client_id for i in items if i.frame.direction == "request"), key=str)
    presp = resp.filter(pc.equal(resp["capture"], "kafka.pcap"))
    assert presp["latency_us"].null_count == 0 and pc.min(presp["latency_us"]).as_py() >= 0
    assert presp["request_seq"].null_count == 0
    # a response points at its request: same connection and correlation id
    by_seq = {(r["conn"], r["seq"]): r for r in pr.to_pylist()}
    for r in presp.to_pylist():
        q = by_seq[(r["conn"], r["request_seq"])]
        assert (q["correlation_id"], q["api_key"], q["api_version"], q["client_id"]) == \
            (r["correlation_id"], r["api_key"], r["api_version"], r["client_id"])
    assert conns.num_rows == d.totals["connections"] == sum(a.kafka_connections
                                                           for a in d.accounting_by_capture.values())
    software = {s for c in d.clients for s in c["software"]}
    assert any(s.startswith("kafka-python ") for s in software)
    assert any(s.startswith("confluent-kafka-python ") for s in software)
    errors = {(e["api"], e["error"]) for e in d.errors}
    assert ("ApiVersions", "UNSUPPORTED_VERSION") in errors  # clients probing with a version too new
    assert {r["api"] for r in d.latency} >= {"Produce", "Fetch", "Metadata", "ApiVersions"}
    html = Path(sample_report.html_path).read_text()
    assert "<script" not in html and "http://" not in html and "https://" not in html
    assert "kafka-python 3.0.12" in html and sample_report.html_path in sample_report.summary


def test_damaged_captures_finish_and_the_accounting_adds_up(damaged_report):
    manifest, paths, result = damaged_report
    d = result.data
    assert set(d.accounting_by_capture) == set(paths)
    for name, acc in d.accounting_by_capture.items():
        assert not acc.problems(), (name, acc.problems())
    assert not d.accounting.problems()
    accs = d.accounting_by_capture
    assert any("cut short" in e for e in accs["truncated.pcap"].errors)
    assert accs["truncated.pcap"].unread_bytes > 0
    assert accs["gaps.pcap"].gaps > 0 and accs["gaps.pcap"].missing_bytes > 0
    assert accs["gaps.pcap"].bytes["decoded"] > 0
    assert accs["not-kafka.pcap"].kafka_connections == 0 and accs["not-kafka.pcap"].bytes["not_kafka"] > 0
    assert accs["noise.bin"].bytes["decoded"] == 0
    # damaged tap output: the whole file read, each damaged one named and its bytes counted
    t = accs["tap-damaged"]
    assert t.frames_total == 725 and t.unread_bytes == 300 + 12
    assert sorted(e.split(": ", 1)[1].split(" (")[0] for e in t.errors) == [
        "cut or damaged inside its schema header", "empty file", "not a frame table"]
    assert t.file_bytes == sum(p.stat().st_size for p in paths["tap-damaged"].iterdir())
    t = accs["tap-cut"]
    assert t.frames_total == 49 + 154 + 54 + 51 and t.unread_bytes == 100_000 - 69792
    assert len(t.errors) == 1 and "cut or damaged inside batch 5 at byte 69792" in t.errors[0]
    assert "file bytes unread" in result.summary and "inside its schema header" in result.summary
    c = accs["corrupt.pcap"]
    assert c.bytes["decoded"] > 0 and (c.errors or set(c.bytes) - {"decoded", "duplicate"}
                                       or set(c.packets) - {"tcp"})
    # the accounting table holds the same rows
    rows = table(result, "accounting").to_pylist()
    assert {r["capture"] for r in rows} == set(paths)
    assert "adds up: yes" in result.summary


def test_clean_synthetic_capture_is_reported_exactly(damaged_report):
    manifest, paths, result = damaged_report
    d = result.data
    acc = d.accounting_by_capture["clean.pcap"]
    assert set(acc.frames) == {"decoded"} and acc.gaps == 0
    sets = table(result, "record_sets")
    clean = sets.filter(pc.equal(sets["capture"], "clean.pcap"))
    got = collections.Counter()
    for r in clean.to_pylist():
        got[(r["source"], r["topic"])] += r["records"]
    assert got == manifest.records
    recs = table(result, "records")
    prod = recs.filter(pc.and_(pc.equal(recs["capture"], "clean.pcap"), pc.equal(recs["source"], "produce")))
    seen = collections.defaultdict(list)
    for r in prod.to_pylist():
        seen[(r["topic"], r["partition"])].append(
            (r["offset"], r["key"], r["value"], [(h["key"], h["value"]) for h in r["headers"] or ()]))
    for tp, expected in manifest.produced.items():
        assert sorted(seen[tp]) == sorted((o, k, v, h) for o, k, v, h, _ in expected), tp
    resp = table(result, "responses")
    cresp = resp.filter(pc.equal(resp["capture"], "clean.pcap"))
    errors = collections.Counter()
    from kafkaproto.error_codes import error_name

    for r in cresp.to_pylist():
        for code in r["error_codes"] or ():
            errors[(r["api_key"], error_name(code))] += 1
    assert errors == manifest.errors
    removed = {(r["client_id"], r["api"], r["api_version"]) for r in d.removed}
    # CreateTopics v1: Kafka 4.0 raised its lower bound to v2 (the newest schemas start there)
    assert {("legacy-reporting", "Produce", 2), ("legacy-reporting", "Fetch", 3),
            ("legacy-reporting", "OffsetCommit", 1), ("legacy-reporting", "OffsetFetch", 0),
            ("legacy-reporting", "CreateTopics", 1)} <= removed
    assert not {r for r in removed if r[0] != "legacy-reporting"}
    software = {c["client_id"]: c["software"] for c in d.clients}
    assert software["orders-producer"] == ["apache-kafka-java 3.9.1"]
    assert software["legacy-reporting"] == []
    assert "Versions removed in Kafka 4.0 still in use:" in result.summary and "legacy-reporting" in result.summary


# ---------------------------------------------------------------------------
# the figures: the tasks' partial totals against Spark SQL over the tables


def _spark_figures(spark, out: Path):
    """The report's figures computed the straightforward way, by Spark SQL
    over the written tables (the oracle of the merged partial totals)."""
    from pyspark.sql import functions as F

    col = F.col
    read = {t: spark.read.parquet(str(out / t)) for t in ("requests", "responses", "record_sets")}
    frames = read["requests"].select("capture", "conn", "client", "server", "ts", "size", "client_id", "status",
                                     F.lit("request").alias("table")) \
        .unionByName(read["responses"].select("capture", "conn", "client", "server", "ts", "size", "client_id",
                                              "status", F.lit("response").alias("table")))
    conns = frames.groupBy("capture", "conn").agg(
        F.min("ts").alias("first_ts"), F.max("ts").alias("last_ts"),
        F.sum(F.when(col("table") == "request", 1).otherwise(0)).alias("requests"),
        F.sum(F.when(col("table") == "response", 1).otherwise(0)).alias("responses"),
        F.sum(F.when(col("table") == "request", col("size")).otherwise(0)).alias("bytes_to_broker"),
        F.sum(F.when(col("table") == "response", col("size")).otherwise(0)).alias("bytes_from_broker"),
        F.array_sort(F.collect_set("client_id")).alias("client_ids"),
        F.sum(F.when(col("status") == "undecodable", 1).otherwise(0)).alias("undecodable"))
    sw = read["requests"].where(col("software_name").isNotNull()).groupBy("capture", "conn") \
        .agg(F.concat_ws(" ", F.first("software_name"), F.first("software_version")).alias("software"))
    use = read["requests"].join(sw, ["capture", "conn"], "left") \
        .groupBy("client_id", "software", "api_key", "api", "api_version", "removed_in_kafka4").count()
    errs = read["responses"].select("api", F.explode("error_codes").alias("code")).groupBy("api", "code").count()
    lat = read["responses"].where(col("latency_us").isNotNull()).groupBy("api") \
        .agg(F.sort_array(F.collect_list("latency_us")).alias("v"))
    # topics named by id are named through the topic_ids table, as the report's figures name them
    ids = spark.read.parquet(str(out / "topic_ids")).select(col("topic_id"), col("topic").alias("named")).distinct()
    sets = read["record_sets"].join(ids, read["record_sets"]["topic"] == ids["topic_id"], "left") \
        .withColumn("topic", F.coalesce(col("named"), col("topic"))).drop("named", "topic_id")
    topics = sets.groupBy("source", "topic").agg(F.count("*").alias("sets"), F.sum("batches").alias("batches"),
                                                 F.sum("records").alias("records"), F.sum("bytes").alias("bytes"))
    codecs = sets.groupBy("source", "codec").agg(F.sum("batches").alias("batches"), F.sum("records").alias("records"),
                                                 F.sum("bytes").alias("bytes"), F.count("*").alias("sets"))
    bad = read["requests"].select(F.lit("requests").alias("table"), "api", "status", "error") \
        .unionByName(read["responses"].select(F.lit("responses").alias("table"), "api", "status", "error")) \
        .unionByName(sets.select(F.lit("record_sets").alias("table"), F.lit(None).cast("string").alias("api"),
                                 F.lit(None).cast("string").alias("status"), "error")) \
        .where(col("error").isNotNull()).groupBy("table", "api", "status", "error").count()
    rows = lambda df: [r.asDict() for r in df.collect()]  # noqa: E731
    return {"conns": rows(conns), "use": rows(use), "errors": rows(errs), "latency": rows(lat),
            "topics": rows(topics), "codecs": rows(codecs), "bad": rows(bad)}


def _sorted(rows):
    return sorted(rows, key=repr)


@pytest.mark.parametrize("which", ["sample", "damaged"])
def test_merged_figures_equal_spark_sql_over_the_tables(spark, sample_report, damaged_report, which):
    result = sample_report if which == "sample" else damaged_report[2]
    d = result.data
    want = _spark_figures(spark, Path(d.out))
    conns = table(result, "connections").to_pylist()
    mine = {(c["capture"], c["conn"]): c for c in conns}
    assert len(mine) == len(want["conns"]) == d.totals["connections"] > 0
    for w in want["conns"]:
        got = mine[(w.pop("capture"), w.pop("conn"))]
        for k in ("first_ts", "last_ts"):  # Spark gives naive UTC datetimes
            got[k] = got[k].replace(tzinfo=None)
        assert {k: got[k] for k in w} == w
    assert _sorted((r["client_id"], r["software"], r["api_key"], r["api"], r["api_version"],
                   r["removed_in_kafka4"], r["count"]) for r in want["use"]) == \
        _sorted((r["client_id"], r["software"], r["api_key"], r["api"], r["api_version"], r["removed"],
                r["requests"]) for r in d.api_use)
    assert _sorted((r["api"], r["code"], r["count"]) for r in want["errors"]) == \
        _sorted((r["api"], r["code"], r["count"]) for r in d.errors)
    assert len(want["latency"]) == len(d.latency)
    for w in want["latency"]:
        got = next(r for r in d.latency if r["api"] == w["api"])
        v = w["v"]
        assert got["count"] == len(v) and got["max"] == v[-1] / 1000
        for q in (0.5, 0.9, 0.99):
            exact = v[max(1, -(-int(q * 1000) * len(v) // 1000)) - 1] / 1000  # nearest rank
            assert abs(got[f"p{int(q * 100)}"] - exact) <= exact / 128 + 1e-9, (w["api"], q)
    assert _sorted((r["source"], r["topic"], r["sets"], r["batches"], r["records"], r["bytes"])
                  for r in want["topics"]) == \
        _sorted((r["source"], r["topic"], r["sets"], r["batches"], r["records"], r["bytes"]) for r in d.topics)
    assert _sorted((r["source"], r["codec"], r["batches"], r["records"], r["bytes"], r["sets"])
                  for r in want["codecs"]) == \
        _sorted((r["source"], r["codec"], r["batches"], r["records"], r["bytes"], r["sets"]) for r in d.codecs)
    bad = sorted(((r["table"], r["api"], r["status"], r["error"], r["count"]) for r in want["bad"]),
                 key=lambda r: (-r[4], tuple(str(x) for x in r[:4])))[:50]
    assert bad == [(r["table"], r["api"], r["status"], r["error"], r["count"]) for r in d.decode_errors]
    if which == "damaged":
        assert d.decode_errors


# ---------------------------------------------------------------------------
# the HTML page in headless Chromium

CHARTS = ("chart-versions", "chart-errors", "chart-latency", "chart-topic-bytes", "chart-topic-records",
          "chart-codecs", "chart-accounting")
BOX = 420  # pixels of page height given to each chart in the screenshot test


def _rgb(colour: str):
    return tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))


def test_html_opens_in_chromium_without_console_errors(damaged_report, tmp_path):
    _, _, result = damaged_report
    dom, log = run_chromium(Path(result.html_path).as_uri(), tmp_path / "profile", "--dump-dom")
    for chart in CHARTS:  # the DOM Chromium built holds every chart, with bars
        m = re.search(rf'<figure id="{chart}">(.*?)</figure>', dom, re.S)
        assert m and "<svg" in m.group(1) and "<rect" in m.group(1), chart
    bad = [line for line in log.splitlines()
           if "CONSOLE" in line or "Uncaught" in line or "net::ERR" in line or "Failed to load" in line]
    assert not bad, bad


def test_html_screenshot_draws_every_chart(damaged_report, tmp_path):
    """The page's charts, each in a box of known place, screenshotted once:
    every box has ink in the chart's colours; removed versions show in red."""
    from PIL import Image

    _, _, result = damaged_report
    html = Path(result.html_path).read_text()
    style = re.search(r"<style>.*?</style>", html, re.S).group(0)
    boxes = "".join(f'<div style="position:absolute;left:0;top:{i * BOX}px;width:800px;height:{BOX}px;'
                    f'overflow:hidden">' + re.search(rf'<figure id="{c}">.*?</figure>', html, re.S).group(0)
                    + "</div>" for i, c in enumerate(CHARTS))
    page = tmp_path / "charts.html"
    page.write_text(f'<!DOCTYPE html><html><head><meta charset="utf-8">{style}</head>'
                    f'<body style="margin:0;padding:0">{boxes}</body></html>')
    png = tmp_path / "charts.png"
    run_chromium(page.as_uri(), tmp_path / "profile", f"--window-size=800,{BOX * len(CHARTS)}",
                 "--hide-scrollbars", f"--screenshot={png}")
    img = Image.open(png).convert("RGB")
    assert img.size == (800, BOX * len(CHARTS))
    palette = {_rgb(c) for c in PALETTE + VERSION_SHADES + (REMOVED,)}
    for i, chart in enumerate(CHARTS):
        region = img.crop((0, i * BOX, 800, (i + 1) * BOX))
        colours = region.getcolors(800 * BOX)
        ink = sum(n for n, c in colours if c != (255, 255, 255))
        drawn = sum(n for n, c in colours if c in palette)
        assert ink > 3000 and drawn > 1000, (chart, ink, drawn)
    versions = img.crop((0, 0, 800, BOX)).getcolors(800 * BOX)
    assert sum(n for n, c in versions if c == _rgb(REMOVED)) > 100


# ---------------------------------------------------------------------------
# the latency histogram


def _nearest_rank(values, q):
    v = sorted(values)
    return v[max(1, -(-int(q * 1000) * len(v) // 1000)) - 1]


@pytest.mark.parametrize("seed", range(5))
def test_latency_percentiles_from_merged_histograms_are_within_a_128th(seed):
    import numpy as np

    from kafkaproto.report.aggregate import latency_bucket, percentile

    rng = np.random.default_rng(seed)
    values = np.concatenate([rng.integers(0, 300, 500), rng.lognormal(8, 2, 3000).astype(np.int64),
                             np.array([0, 127, 128, 255, 256, 257, 2 ** 31 - 1, 2 ** 40 + 12345])])
    buckets = latency_bucket(values)
    assert (buckets <= values).all()
    small = values < 256
    assert (buckets[small] == values[small]).all()
    assert ((values - buckets) <= values / 128).all()
    # histograms of any split merge to the same one, and the percentile is close
    hist = collections.Counter()
    for part in np.array_split(values, 7):
        hist.update(collections.Counter(latency_bucket(part).tolist()))
    assert hist == collections.Counter(buckets.tolist())
    for q in (0.5, 0.9, 0.99, 1.0):
        exact = _nearest_rank(values.tolist(), q)
        got = percentile(hist, q, int(values.max()))
        assert abs(got - exact) <= exact / 128, (q, got, exact)


# ---------------------------------------------------------------------------
# record-set summaries: from the records walk, against the object decoder blob by blob


def _summary_one_blob_at_a_time(blobs):
    """What records.decode says of each blob: (blob, codec, batches, records, bytes)
    per codec in first-appearance order; records none for a blob with an error."""
    rows = []
    for j, blob in enumerate(blobs):
        groups = {}
        failed = False
        try:
            for b in krecords.decode(blob):
                if b.truncated:
                    continue
                g = groups.setdefault(b.compression, [0, 0, 0])
                g[0] += 1
                g[1] += len([r for r in b.records if r.control is None])
                g[2] += b.size
        except KafkaProtocolError:
            failed = True
        groups = groups or {"-": [0, 0, 0]}
        rest = len(blob) - sum(g[2] for g in groups.values())
        for k, (codec, (batches, records, size)) in enumerate(groups.items()):
            rows.append((j, codec, batches, 0 if failed else records, size + (rest if k == 0 else 0)))
    return rows


def _blobs_for_summary():
    import random

    rng = random.Random(11)
    recs = [krecords.Record(key=b"k%d" % i, value=bytes(rng.randrange(256) for _ in range(rng.randrange(40))))
            for i in range(5)]
    batches = [krecords.encode(recs, codec=c) for c in ("none", "gzip", "snappy", "lz4", "zstd")]
    batches += [krecords.encode(recs, magic=m, codec=c) for m in (0, 1) for c in ("none", "gzip", "snappy")]
    blobs = list(batches)
    for _ in range(300):
        parts = [rng.choice(batches) for _ in range(rng.randrange(1, 5))]
        blob = b"".join(parts)
        cut = rng.random()
        if cut < 0.2:
            blob = blob[:rng.randrange(len(blob))]  # a partial last batch
        elif cut < 0.3:
            at = rng.randrange(len(blob))
            blob = blob[:at] + bytes([rng.randrange(256)]) + blob[at + 1:]
        elif cut < 0.35:
            blob = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 80)))
        blobs.append(blob)
    return blobs


@pytest.mark.parametrize("kind", ["binary", "large_binary", "sliced"])
def test_record_set_summary_equals_the_per_blob_walk(kind):
    import numpy as np
    import pyarrow as pa

    from kafkaproto.capture.tables import record_set_summary

    blobs = _blobs_for_summary()
    for frame in (f for f in read_frames(SAMPLE / "kafka.pcap") if f.direction == "request" and f.api_key == 0):
        from kafkaproto import decode_request

        _, msg = decode_request(frame.frame)
        blobs += [p.records for t in msg.topic_data for p in t.partition_data if p.records]
    arr = pa.array(blobs, pa.large_binary() if kind == "large_binary" else pa.binary())
    if kind == "sliced":
        arr = pa.array([b"x" * 9] + blobs + [b"y"], pa.binary()).slice(1, len(blobs))
    _, walked = karrow.records(arr, batches=True)
    lengths = np.array([len(b) for b in blobs])
    got = list(zip(*(x.tolist() for x in record_set_summary(walked, lengths))))
    assert got == _summary_one_blob_at_a_time(blobs)


def test_connection_counts_agree_everywhere(sample_report, tmp_path):
    """The headline, the connections table, the accounting and inspect count the
    same Kafka connections (those that gave a frame)."""
    import io

    from kafkaproto.__main__ import inspect

    d = sample_report.data
    conns = table(sample_report, "connections")
    assert conns.num_rows == d.totals["connections"] == d.accounting.kafka_connections
    assert f"{d.totals['connections']:,} Kafka connections" in sample_report.summary
    assert f"{d.accounting.connections} TCP connections: {d.accounting.kafka_connections} Kafka" in \
        sample_report.summary
    out = io.StringIO()
    inspect(str(SAMPLE / "kafka.pcap"), out=out, limit=0)
    mine = d.accounting_by_capture["kafka.pcap"]
    assert f"{mine.connections} TCP connections: {mine.kafka_connections} Kafka" in out.getvalue()
    assert conns.filter(pc.equal(conns["capture"], "kafka.pcap")).num_rows == mine.kafka_connections
    html = Path(sample_report.html_path).read_text()
    assert f"<b>{d.totals['connections']:,}</b><span>Kafka connections" in html
    assert " 0.0 MB/s" not in sample_report.summary and " 0.0 MB/s" not in html
    # charts have axes with units; the version shades have a legend
    assert html.count('class="unit"') >= 7 and "lowest version in use" in html
    # long polls against their wait, requests without a response listed
    fetch = next(r for r in d.latency if r["api"] == "Fetch")
    assert fetch["wait_ms"] > 0 and 0 <= fetch["waited_out"] <= 1
    assert d.unanswered and d.unanswered_rows and d.totals["unanswered"] == sum(r["requests"] for r in d.unanswered)
    assert table(sample_report, "unanswered").num_rows == d.totals["unanswered"] == d.accounting.unanswered_requests
    assert {r["broker"] for r in d.latency_by} and d.errors_by


def test_frames_with_bytes_after_their_body(sample_report):
    """librdkafka writes 3 bytes after its all-topics Metadata request body and
    the mock cluster answers ApiVersions with a short error reply whose v0 body
    is followed by 5 bytes: both tables count them per frame, the report per
    kind, API and client, and inspect flags the line; 'trailing bytes' is that
    one thing everywhere."""
    d = sample_report.data
    want: collections.Counter = collections.Counter()
    nbytes = 0
    in_kafka_pcap = 0
    for kind in ("requests", "responses"):
        t = table(sample_report, kind)
        decoded = pc.equal(t["status"], "decoded").fill_null(False)
        assert t.filter(decoded)["trailing_bytes"].null_count == 0
        extra = t.filter(pc.greater(t["trailing_bytes"], 0).fill_null(False)).to_pylist()
        assert extra, kind
        want.update((kind, r["api"], r["client_id"]) for r in extra)
        nbytes += sum(r["trailing_bytes"] for r in extra)
        in_kafka_pcap += sum(1 for r in extra if r["capture"] == "kafka.pcap")
        if kind == "requests":
            assert {(r["api"], r["trailing_bytes"]) for r in extra} == {("Metadata", 3)}
        else:
            assert ("ApiVersions", 5) in {(r["api"], r["trailing_bytes"]) for r in extra}
    assert {(r["kind"], r["api"], r["client_id"]): r["frames"] for r in d.trailing} == dict(want)
    assert sum(r["bytes"] for r in d.trailing) == nbytes
    lines = [format_line(i, x) for i, x in enumerate(dissect(read_frames(SAMPLE / "kafka.pcap")))]
    assert len([line for line in lines if re.search(r"\[\d+ bytes after the body\]", line)]) == in_kafka_pcap
    assert "Frames with bytes after their message body" in Path(sample_report.html_path).read_text()
