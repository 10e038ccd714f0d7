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
from kafkaproto.report.live import TapReport
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
    report = TapReport(live, window=None, refresh=0.25, view=views)
    tap = Tap((kafka_broker.host, kafka_broker.port), out, report=report)
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
        # (a refresh writes its figures, then its table, then its view: the view may come a moment later)
        wait_for(lambda: "Produce" in views.seen() and "live-kafka-python" in views.seen())
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
    assert report.feed.skipped_rows == 0


def test_tap_report_on_the_command_line(tmp_path):
    """``kafkaproto tap ... --report OUT``: the view on its output, and the
    page and figures in OUT, the last refresh's once it stopped (Ctrl-C)."""
    import os
    import signal
    import socket
    import struct
    import subprocess
    import sys
    from pathlib import Path

    from kafkaproto import encode_request, encode_response
    from kafkaproto.messages import ApiVersionsRequest, ApiVersionsResponse
    from test_tap import ScriptedBroker, _recv

    root = Path(__file__).resolve().parents[1]
    upstream = ScriptedBroker(lambda key, version, corr: encode_response(ApiVersionsResponse(), 0, corr))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root / "src"), os.environ.get("PYTHONPATH", "")]))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "kafkaproto", "tap", "--listen", f"127.0.0.1:{port}", "--upstream",
                             f"127.0.0.1:{upstream.port}", "--out", str(tmp_path / "tap"), "--report",
                             str(tmp_path / "live"), "--refresh", "0.2", "--duration", "60"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=5)
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.1)
        with s:
            for corr in range(3):
                s.sendall(encode_request(ApiVersionsRequest(), 0, corr, "cli-client"))
                head = _recv(s, 4, 10)
                assert len(head) == 4
                _recv(s, struct.unpack(">i", head)[0], 10)
        proc.send_signal(signal.SIGINT)  # stops the tap; the report's last refresh has every frame
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
        upstream.close()
    assert proc.returncode == 0, stderr
    assert "kafkaproto live:" in stdout and "cli-client" in stdout
    got = figures(tmp_path / "live" / "report.json")
    assert [(r["api"], r["client_id"], r["requests"]) for r in got["api_use"]] == [("ApiVersions", "cli-client", 3)]
    assert (tmp_path / "live" / "report.html").read_text().rstrip().endswith("</html>")
