"""The traffic report job on Spark (local[2], one session for the module):
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

from kafkaproto.capture import Accounting, read_frames
from kafkaproto.capture.dissect import dissect
from kafkaproto.report import run_report
from kafkaproto.report.decode import TABLE_COLUMNS, record_set_codecs
from kafkaproto import records as krecords

from kafkaproto.report.render import PALETTE, REMOVED, VERSION_SHADES

from report_helpers import SAMPLE, damaged_captures, run_chromium, spark_session, stop_session

MANIFEST = json.loads((SAMPLE / "produced.json").read_text())
SAMPLE_CAPTURES = [SAMPLE / "kafka.pcap", SAMPLE / "tap-tansu", SAMPLE / "tap-mock"]


@pytest.fixture(scope="module")
def spark():
    yield spark_session()
    stop_session()


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
    for r in pcap.to_pylist():
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
                    assert record_set_codecs(p.records)
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
    assert {("legacy-reporting", "Produce", 2), ("legacy-reporting", "Fetch", 3),
            ("legacy-reporting", "OffsetCommit", 1), ("legacy-reporting", "OffsetFetch", 0)} <= removed
    assert not {r for r in removed if r[0] != "legacy-reporting"}
    software = {c["client_id"]: c["software"] for c in d.clients}
    assert software["orders-producer"] == ["apache-kafka-java 3.9.1"]
    assert software["legacy-reporting"] == []
    assert "Versions removed in Kafka 4.0 still in use:" in result.summary and "legacy-reporting" in result.summary


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
