"""The tap's live report (``kafkaproto tap ... --report OUT``) between real
clients and Apache Kafka 4.4: while confluent-kafka, kafka-python and kcat
produce and consume through the tap, the live view shows their api calls;
once the tap stopped, the live report's figures and connections table are
the batch report's of the tap's output, row for row."""

from __future__ import annotations

import io
import json
import threading
import time

import pyarrow.parquet as pq

from kafkaproto.capture.tools.tap import Tap
from kafkaproto.report.job import run_job
from peers import clients

FIGURES = ("api_use", "clients", "errors", "errors_by", "latency", "latency_by", "unanswered", "topics", "codecs",
           "decode_errors", "trailing", "topic_ids")


class Views(io.TextIOBase):
    """The terminal views the report wrote, kept."""

    def __init__(self) -> None:
        self.text = []
        self.lock = threading.Lock()

    def write(self, s: str) -> int:
        with self.lock:
            self.text.append(s)
        return len(s)

    def seen(self) -> str:
        with self.lock:
            return "".join(self.text)


def wait_for(cond, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "not in the live report in time"
        time.sleep(0.1)


def figures(path):
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return {}


def test_the_tap_keeps_a_live_report_of_real_clients(kafka_broker, tmp_path):
    out, live = tmp_path / "tap", tmp_path / "live"
    views = Views()
    tap = Tap((kafka_broker.host, kafka_broker.port), out, report=live, report_window=None, report_refresh=0.25,
              report_view=views)
    with tap:
        topic = clients.unique_topic("taplive")
        clients.create_topic(tap.bootstrap, topic)
        sent = 0
        for client, codec, config in (("confluent", "lz4", {"client.id": "live-confluent"}),
                                      ("kafka_python", "gzip", {"client_id": "live-kafka-python"}),
                                      ("kcat", "none", None)):
            records = [{"key": b"%s-%d" % (client.encode(), i), "value": b"v" * (i + 1), "headers": []}
                       for i in range(20)]
            clients.produce(client, tap.bootstrap, topic, records, codec, timeout=30,
                            **({"config": config} if config else {}))
            sent += len(records)
        # while the tap runs: the clients' produce calls are in the view and the figures
        wait_for(lambda: {r["client_id"] for r in figures(live / "report.json").get("api_use", [])
                          if r["api"] == "Produce"} >= {"live-confluent", "live-kafka-python", "rdkafka"})
        assert "Produce" in views.seen() and "live-kafka-python" in views.seen()
        for client in ("confluent", "kafka_python", "kcat"):
            assert len(clients.consume(client, tap.bootstrap, topic, sent, timeout=30)) == sent
        wait_for(lambda: any(r["api"] == "Fetch" for r in figures(live / "report.json").get("api_use", [])))
    # the tap stopped: a last refresh covers every frame recorded
    got = figures(live / "report.json")
    batch = json.loads(run_job([str(out)], str(tmp_path / "batch"), workers=1, progress=False).to_json())
    assert batch["totals"]["requests"] > 30 and got["totals"]["requests"] == batch["totals"]["requests"]
    for name in FIGURES:
        assert got[name] == batch[name], name
    assert {r["api"] for r in got["api_use"]} >= {"ApiVersions", "Metadata", "CreateTopics", "Produce", "Fetch"}
    key = ["conn", "client", "server"]
    mine = pq.read_table(live / "connections" / "part-live.parquet").sort_by([(k, "ascending") for k in key])
    theirs = pq.read_table(tmp_path / "batch" / "connections")
    theirs = theirs.select(mine.column_names).cast(mine.schema).sort_by([(k, "ascending") for k in key])
    assert mine.to_pylist() == theirs.to_pylist()
    assert tap.feed.skipped_rows == 0
