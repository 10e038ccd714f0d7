"""Record the shipped capture sample: real clients, real brokers, loopback.

    python tools/record_sample.py [--out samples/capture]
    python tools/record_sample.py --kafka [--out samples/capture]

Starts tansu and librdkafka's mock cluster (2 brokers) on 127.0.0.1, a
``kafkaproto`` tap in front of each, and tcpdump on the loopback interface
for the brokers' ports (so the pcap holds the tap -> broker side, the same
frames the tap records).  Then confluent-kafka, kafka-python, aiokafka and
kcat produce through the taps with every codec, consumers read in a group,
and admin calls run.  Writes to the output folder:

- ``kafka.pcap``      tcpdump's capture (Ethernet link type, loopback)
- ``tap-tansu/``, ``tap-mock/``   the taps' frame tables (Arrow IPC streams)
- ``produced.json``   every record the clients produced, and what the
                      consumers read back, with the brokers' ports
                      (needed to tell tshark which ports are Kafka)

With ``--kafka``: Apache Kafka 4.4.0 itself (one node, with the authorizer
and the client-telemetry reporter of the conformance tests) behind a tap,
tcpdump on the broker's client port, and every client scenario of
``tests/peers/kafka_scenarios.py`` through the tap: Kafka's Java admin
client, producers (idempotent, transactional) and consumers (classic,
KIP-848, share), confluent-kafka, kafka-python, aiokafka, kafkajs and
kafkaproto's own requests.  Writes ``kafka44.pcap``, ``tap-kafka44/`` and
``kafka44.json`` (the broker's port, each scenario step and the clients'
versions) and leaves the other files of the folder alone; the tap's rows
are then written again in one record batch (the same rows, a quarter of
the size).

Needs root (or CAP_NET_RAW) for tcpdump; tools/peers/install_peers.sh
installs the peers and tcpdump (``make peers`` also fetches Kafka).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "src"))

from kafkaproto.capture.tools.tap import Tap  # noqa: E402
from peers import clients  # noqa: E402
from peers.brokers import MockCluster, Tansu  # noqa: E402

T0 = 1_700_000_000_000
CODECS = clients.CODECS


def records_for(client: str, codec: str):
    """Three small records: duplicate header keys, a null key, a tombstone."""
    headers = [("source", client.encode()), ("dup", b"1"), ("dup", b"2")]
    recs = [
        {"key": f"{client}-{codec}-0".encode(), "value": f"hello from {client} ({codec}) ".encode() * 3,
         "headers": headers, "timestamp_ms": T0},
        {"key": None, "value": bytes(range(64)), "headers": [], "timestamp_ms": T0 + 1},
        {"key": f"{client}-{codec}-2".encode(), "value": None, "headers": [("empty", b"")], "timestamp_ms": T0 + 2},
    ]
    if clients.LIMITS[client].get("empty_key_null_value") or clients.LIMITS[client].get("null_key_empty_value"):
        recs[1]["key"] = f"{client}-{codec}-1".encode()
        recs[2]["value"] = b"-"
    if clients.LIMITS[client].get("timestamp"):
        for r in recs:
            r["timestamp_ms"] = None
    return recs


def _b64(v):
    return None if v is None else base64.b64encode(v).decode()


def _jsonable(rec):
    return {"key": _b64(rec.get("key")), "value": _b64(rec.get("value")),
            "headers": [[k, _b64(v)] for k, v in rec.get("headers") or []],
            "timestamp_ms": rec.get("timestamp_ms"), "partition": rec.get("partition"),
            "offset": rec.get("offset"), **({"timestamp_type": rec["timestamp_type"]}
                                            if "timestamp_type" in rec else {})}


def consume_group(bootstrap: str, topic: str, n: int, group: str, timeout: float = 20.0):
    """confluent-kafka in a consumer group (JoinGroup/SyncGroup/OffsetCommit...)."""
    from confluent_kafka import Consumer

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
                  "fetch.wait.max.ms": 100, "client.id": "sample-group-consumer"})
    out = []
    deadline = time.monotonic() + timeout
    try:
        c.subscribe([topic])
        while len(out) < n and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            out.append({"key": m.key(), "value": m.value(), "headers": list(m.headers() or []),
                        "timestamp_ms": m.timestamp()[1], "partition": m.partition(), "offset": m.offset()})
        if out:
            c.commit(asynchronous=False)
    finally:
        c.close()
    if len(out) < n:
        raise TimeoutError(f"group consumer read {len(out)} of {n} records from {topic}")
    return sorted(out, key=lambda r: (r["partition"], r["offset"]))


def admin_calls(bootstrap: str, log, mock: bool = False) -> None:
    """A few admin requests; a broker may refuse some, which is traffic too."""
    from confluent_kafka.admin import AdminClient, ConfigResource

    admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": "sample-admin"})
    node = str(min(admin.list_topics(timeout=5).brokers))
    calls = {
        "list_topics": lambda: admin.list_topics(timeout=5),
        "describe_cluster": lambda: admin.describe_cluster(request_timeout=5).result(timeout=6),
        "list_consumer_groups": lambda: admin.list_consumer_groups(request_timeout=5).result(timeout=6),
        "describe_configs": lambda: list(admin.describe_configs(
            [ConfigResource(ConfigResource.Type.BROKER, node)], request_timeout=5).values())[0].result(timeout=6),
    }
    for name, call in calls.items():
        try:
            call()
            log(f"  admin {name}: ok")
        except Exception as exc:  # the broker's refusal is recorded traffic, not a failure
            log(f"  admin {name}: {type(exc).__name__}: {str(exc)[:100]}")
    try:
        from kafka.admin import KafkaAdminClient

        ka = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="sample-kafka-python-admin",
                              request_timeout_ms=5000,
                              **(clients.KAFKA_PYTHON_MOCK_CONFIG if mock else {}))
        try:
            ka.list_topics()
            ka.describe_cluster()
            log("  admin kafka-python list_topics/describe_cluster: ok")
        finally:
            ka.close()
    except Exception as exc:
        log(f"  admin kafka-python: {type(exc).__name__}: {str(exc)[:100]}")


def start_tcpdump(path: Path, ports, log):
    tcpdump = shutil.which("tcpdump")
    if tcpdump is None:
        raise SystemExit("tcpdump is not installed: run tools/peers/install_peers.sh")
    expr = " or ".join(f"tcp port {p}" for p in ports)
    # -U: write each packet at once; -s 0: whole packets; -Z root: keep writing as root
    cmd = [tcpdump, "-i", "lo", "-s", "0", "-U", "-n", "-Z", "root", "-w", str(path), expr]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 10
    line = ""
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if "listening on" in line or proc.poll() is not None:
            break
    if proc.poll() is not None or "listening on" not in line:
        err = proc.stderr.read() if proc.poll() is not None else ""
        raise SystemExit(f"tcpdump did not start: {line.strip()} {err}")
    log(f"tcpdump: {line.strip()}")
    return proc


def stop_tcpdump(proc) -> None:
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


KAFKA_FILES = ("kafka44.pcap", "tap-kafka44", "kafka44.json")


def compact_tap_output(tap_dir: Path, log) -> None:
    """The tap writes a record batch per read (durable: a row is on disk
    before its frame is forwarded), each with its own IPC message: about a
    kilobyte of framing per frame for short exchanges.  The same rows in one
    batch take a quarter of the room."""
    import pyarrow as pa

    for path in sorted(tap_dir.glob("*.arrows")):
        with pa.ipc.open_stream(path) as reader:
            table = reader.read_all()
        tmp = path.with_suffix(".tmp")
        with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table.combine_chunks())
        before = path.stat().st_size
        tmp.replace(path)
        log(f"{path.name}: {table.num_rows} rows, {before} -> {path.stat().st_size} bytes in one batch")


def record_kafka(out: Path, log) -> int:
    """Apache Kafka 4.4 and every client scenario, through a tap, under tcpdump."""
    import gc

    from peers import kafka_scenarios as scenarios
    from peers.kafka_broker import KAFKA_VERSION, KafkaCluster

    out.mkdir(parents=True, exist_ok=True)
    for name in KAFKA_FILES:
        old = out / name
        if old.is_dir():
            shutil.rmtree(old)
        elif old.exists():
            old.unlink()
    pcap, tap_dir, manifest_path = (out / name for name in KAFKA_FILES)
    with KafkaCluster(extra_properties=scenarios.CONFORMANCE_PROPERTIES,
                      extra_classpath=scenarios.telemetry_classpath()) as kafka:
        log(f"Apache Kafka {KAFKA_VERSION} on {kafka.bootstrap} (up in {kafka.startup_seconds:.1f} s)")
        dump = start_tcpdump(pcap, [kafka.port], log)
        try:
            with Tap((kafka.host, kafka.port), tap_dir) as tap:
                steps = scenarios.run_all(tap.bootstrap, "sample", log=log)
                gc.collect()  # clients left to the collector close their connections
                time.sleep(1.0)
                log(f"tap: {tap.stats}")
        finally:
            stop_tcpdump(dump)
    compact_tap_output(tap_dir, log)
    manifest = {
        "brokers": {"kafka": [kafka.port]},
        "pcap": pcap.name,
        "taps": {"kafka": tap_dir.name},
        "kafka": KAFKA_VERSION,
        # the broker's own answers name its work folder (log dirs): not in the manifest
        "steps": [{"client": s.client, "step": s.name, "ok": s.ok,
                   "detail": s.detail.replace(str(kafka.work_dir), "<work folder>")[:200]} for s in steps],
        "versions": {"confluent_kafka": __import__("confluent_kafka").version()[0],
                     "librdkafka": __import__("confluent_kafka").libversion()[0],
                     "kafka_python": __import__("kafka").__version__,
                     "aiokafka": __import__("aiokafka").__version__,
                     "kafkajs": json.loads((scenarios.NODE_MODULES / "kafkajs" / "package.json").read_text())[
                         "version"],
                     "kafka_clients": KAFKA_VERSION},
    }
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    total = sum(f.stat().st_size for name in KAFKA_FILES for f in ([out / name] if (out / name).is_file()
                                                                    else (out / name).rglob("*")) if f.is_file())
    log(f"wrote {', '.join(KAFKA_FILES)} in {out}: {total} bytes; {len(steps)} steps, "
        f"{sum(not s.ok for s in steps)} refused by the broker")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "samples" / "capture"))
    ap.add_argument("--kafka", action="store_true",
                    help="Apache Kafka 4.4 and every client scenario instead (kafka44.pcap, tap-kafka44/, "
                         "kafka44.json); the other files of --out stay")
    args = ap.parse_args(argv)
    out = Path(args.out)
    log = lambda text: print(text, flush=True)  # noqa: E731
    if args.kafka:
        return record_kafka(out, log)
    if out.exists():  # everything but the Kafka 4.4 recording, which --kafka redoes
        for old in out.iterdir():
            if old.name not in KAFKA_FILES:
                shutil.rmtree(old) if old.is_dir() else old.unlink()
    out.mkdir(parents=True, exist_ok=True)

    produced, consumed, failures = [], [], []
    with Tansu() as tansu, MockCluster(num_brokers=2) as mock:
        ports = {"tansu": [tansu.port], "mock": [p for _, p in mock.brokers]}
        log(f"tansu on {tansu.bootstrap}, mock cluster on {mock.bootstrap}")
        dump = start_tcpdump(out / "kafka.pcap", ports["tansu"] + ports["mock"], log)
        try:
            with Tap((tansu.host, tansu.port), out / "tap-tansu") as tap_t, \
                    Tap(mock.brokers[0], out / "tap-mock") as tap_m:
                for broker, tap, producers, codecs in (
                        ("tansu", tap_t, clients.PRODUCERS, CODECS),
                        ("mock", tap_m, ("confluent", "kafka_python", "kcat"), ("none", "gzip", "zstd"))):
                    log(f"{broker}: clients through the tap at {tap.bootstrap}")
                    for client in producers:
                        for codec in codecs:
                            topic = f"sample-{broker}-{client.replace('_', '-')}-{codec}"
                            kw = {}
                            if broker == "mock" and client == "kafka_python":
                                kw["config"] = dict(clients.KAFKA_PYTHON_MOCK_CONFIG)
                            if broker == "tansu" and client == "kcat":
                                # Debian's librdkafka 2.0.2 misreads tansu's ApiVersions reply
                                kw["librdkafka"] = "bundled"
                            try:
                                clients.create_topic(tap.bootstrap, topic, timeout=20)
                                sent = clients.produce(client, tap.bootstrap, topic, records_for(client, codec), codec,
                                                       timeout=20, **kw)
                            except Exception as exc:
                                failures.append(f"{broker} {client} {codec}: {exc}")
                                log(f"  produce {client} {codec}: FAILED {exc}")
                                continue
                            produced.append({"broker": broker, "client": client, "codec": codec, "topic": topic,
                                             "records": [_jsonable(r) for r in sent]})
                            log(f"  produce {client} {codec}: {len(sent)} records")
                            if codec == "none":
                                group = f"sample-group-{uuid.uuid4().hex[:6]}"
                                got = consume_group(tap.bootstrap, topic, len(sent), group)
                            else:
                                got = clients.consume_confluent(tap.bootstrap, topic, len(sent), timeout=20)
                            consumed.append({"broker": broker, "topic": topic,
                                             "records": [_jsonable(r) for r in got]})
                    if broker == "tansu":
                        got = clients.consume_kafka_python(tap.bootstrap, "sample-tansu-aiokafka-lz4", 3, timeout=20)
                        consumed.append({"broker": broker, "topic": "sample-tansu-aiokafka-lz4",
                                         "client": "kafka_python", "records": [_jsonable(r) for r in got]})
                    admin_calls(tap.bootstrap, log, mock=broker == "mock")
                log(f"tap tansu: {tap_t.stats}")
                log(f"tap mock: {tap_m.stats}")
        finally:
            stop_tcpdump(dump)
    manifest = {
        "brokers": ports,
        "pcap": "kafka.pcap",
        "taps": {"tansu": "tap-tansu", "mock": "tap-mock"},
        "produced": produced,
        "consumed": consumed,
        "failures": failures,
        "versions": {"confluent_kafka": __import__("confluent_kafka").version()[0],
                     "librdkafka": __import__("confluent_kafka").libversion()[0],
                     "kafka_python": __import__("kafka").__version__,
                     "aiokafka": __import__("aiokafka").__version__,
                     "kcat": clients.kcat_version(), "tansu": "0.6.0"},
    }
    (out / "produced.json").write_text(json.dumps(manifest, indent=1) + "\n")
    total = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    log(f"wrote {out}: {total} bytes; {len(produced)} produce runs, {len(failures)} failures")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
