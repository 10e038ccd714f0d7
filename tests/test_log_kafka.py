"""kafkaproto.log and dump-log against Apache Kafka 4.4.0 itself: segments the
broker wrote (every codec, headers, null keys and values, transactions
committed, aborted and left open, a compacted topic with tombstones; rolled
segments and their index files), dumped by Kafka's own ``DumpLogSegments``
and by ``kafkaproto dump-log``: the same text, line for line; and the
reader's records equal what Kafka's consumers fetch.  Kafka 4 writes record
batches v2 only, so no legacy message sets come from it (those are checked
in tests/test_log_dump.py).
"""

from __future__ import annotations

import random
import shutil
import time

import pytest

from kafkaproto import log
from peers import clients
from support.kafka_log import kafka_dump_log, our_dump_log

pytestmark = pytest.mark.peers

T0 = 1_700_000_000_000
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def _create(kafka, topic, **config):
    config.setdefault("retention_ms", -1)  # the records are stamped in 2023: time retention would delete them
    args = ["--bootstrap-server", "{bootstrap}", "--create", "--topic", topic, "--partitions", "1",
            "--replication-factor", "1"]
    for k, v in config.items():
        args += ["--config", f"{k.replace('_', '.')}={v}"]
    kafka.tool("kafka-topics", *args)


def _records(tag: str, n: int, start: int = 0):
    out = []
    for i in range(start, start + n):
        out.append({"key": None if i % 7 == 3 else b"%s-k%d" % (tag.encode(), i % 40),
                    "value": None if i % 11 == 5 else (b"%s-v%d " % (tag.encode(), i)) * (1 + i % 5),
                    "headers": [("h", b"%d" % i), ("h", None), ("\u00e9", b"")][:i % 4],
                    "timestamp_ms": T0 + 10 * i})
    return out


@pytest.fixture(scope="module")
def written(kafka_broker):
    """Topics the broker wrote: every codec in rolled segments; transactions; a compacted topic."""
    kafka = kafka_broker
    roll = {"segment_ms": 500, "index_interval_bytes": 512}
    codecs = clients.unique_topic("log-codecs")
    _create(kafka, codecs, **roll)
    n = 0
    for _round in range(3):
        for codec in CODECS:
            clients.produce_confluent(kafka.bootstrap, codecs, _records(codec, 60, n), codec, timeout=30,
                                      config={"batch.num.messages": 13, "enable.idempotence": True})
            n += 60
        time.sleep(0.7)  # past segment.ms: the next append rolls the segment
    txn = clients.unique_topic("log-txn")
    _create(kafka, txn, **roll)
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": kafka.bootstrap, "transactional.id": f"{txn}-p", "linger.ms": 5,
                  "compression.type": "lz4", "transaction.timeout.ms": 600_000})
    p.init_transactions(30)
    outcome = []
    for k in range(6):
        p.begin_transaction()
        for i in range(25):
            p.produce(txn, key=b"t%d" % k, value=b"txn%d-%d" % (k, i), partition=0, timestamp=T0 + k * 100 + i)
        p.flush(30)
        if k % 3 == 1:
            p.abort_transaction(30)
            outcome.append("aborted")
        else:
            p.commit_transaction(30)
            outcome.append("committed")
        if k == 2:
            time.sleep(0.7)
    clients.produce_confluent(kafka.bootstrap, txn, _records("plain", 20), "zstd", timeout=30)
    p.begin_transaction()  # left open
    for i in range(10):
        p.produce(txn, key=b"open", value=b"open-%d" % i, partition=0, timestamp=T0 + 5000 + i)
    p.flush(30)
    compact = clients.unique_topic("log-compact")
    _create(kafka, compact, cleanup_policy="compact", segment_ms=300, min_cleanable_dirty_ratio="0.01",
            delete_retention_ms=3_600_000, min_compaction_lag_ms=0, index_interval_bytes=256)
    m = 0
    for rnd in range(6):
        recs = [{"key": b"key-%d" % (i % 30), "value": None if (i + rnd) % 9 == 0 else b"v%d-%d" % (rnd, i),
                 "headers": [], "timestamp_ms": T0 + m + i} for i in range(90)]
        clients.produce_confluent(kafka.bootstrap, compact, recs, CODECS[rnd % 5], timeout=30)
        m += 90
        time.sleep(0.4)
    binary = clients.unique_topic("log-binary")
    _create(kafka, binary, **roll)
    rng = random.Random(32)
    clients.produce_confluent(kafka.bootstrap, binary, [
        {"key": None if i % 9 == 0 else bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 24))),
         "value": bytes(rng.getrandbits(8) for _ in range(64)),
         "headers": [("h\u00e9", bytes([i % 256]))] if i % 3 == 0 else [], "timestamp_ms": T0 + i}
        for i in range(700)], "none", timeout=30)
    _internal_activity(kafka, codecs)
    deadline = time.monotonic() + 120
    while True:  # the log cleaner has run once it has dropped the superseded records
        kept = log.open_log(kafka.partition_dir(compact, 0)).read_table(["offset"]).num_rows
        if kept < m:
            break
        if time.monotonic() > deadline:
            raise AssertionError(f"the log cleaner did not compact {compact} within 120 s ({kept} of {m} left)")
        time.sleep(1)
    yield {"kafka": kafka, "codecs": (codecs, n), "txn": (txn, outcome), "compact": (compact, m), "open": p,
           "binary": (binary, 700)}
    try:
        p.abort_transaction(10)
    except Exception:  # the broker may be gone first; the transaction then times out with it
        pass


def _internal_activity(kafka, topic):
    """What fills the broker's own logs: a classic group and a consumer-protocol group committing offsets
    (with metadata), a client id's quota (a double), a SCRAM user, a topic's configuration changed, a topic
    deleted."""
    from confluent_kafka import Consumer, TopicPartition

    for group, protocol in (("log-classic", "classic"), ("log-kip848", "consumer")):
        c = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": group, "group.protocol": protocol,
                      "auto.offset.reset": "earliest", "enable.auto.commit": False})
        c.subscribe([topic])
        got, deadline = 0, time.monotonic() + 60
        while got < 30 and time.monotonic() < deadline:
            m = c.poll(1)
            if m is not None and not m.error():
                got += 1
        c.commit(offsets=[TopicPartition(topic, 0, 17, "commit-metadata \u00e9")], asynchronous=False)
        c.close()
    # (a client id of its own: the broker is the session's, and a default quota would throttle every test's client)
    kafka.tool("kafka-configs", "--bootstrap-server", "{bootstrap}", "--alter", "--entity-type", "clients",
               "--entity-name", "log-quota-client", "--add-config",
               "producer_byte_rate=1048576,request_percentage=12.5")
    kafka.tool("kafka-configs", "--bootstrap-server", "{bootstrap}", "--alter", "--entity-type", "users",
               "--entity-name", "log-alice", "--add-config", "SCRAM-SHA-256=[iterations=4096,password=pw]")
    kafka.tool("kafka-configs", "--bootstrap-server", "{bootstrap}", "--alter", "--entity-type", "topics",
               "--entity-name", topic, "--add-config", "max.message.bytes=2000000")
    gone = clients.unique_topic("log-gone")
    _create(kafka, gone)
    kafka.tool("kafka-topics", "--bootstrap-server", "{bootstrap}", "--delete", "--topic", gone)


def _copy(folder, tmp_path):
    """A partition folder as it is now (the broker goes on writing the live one), its segments cut after
    their last whole batch (a copy may catch one being written)."""
    dest = tmp_path / folder.name
    shutil.copytree(folder, dest)
    for seg in dest.glob("*.log"):
        data = seg.read_bytes()
        pos = 0
        while pos + 12 <= len(data):
            size = int.from_bytes(data[pos + 8:pos + 12], "big", signed=True)
            if size < 14 or pos + 12 + size > len(data):
                break
            pos += 12 + size
        seg.write_bytes(data[:pos])
    return dest


def _same(files, *args, **kw):
    """Kafka's DumpLogSegments and ours over the same files: the same bytes out, the same lines on
    standard error (its per-file reports in Java's HashMap order)."""
    theirs, theirs_err = kafka_dump_log(files, *args)
    ours, ours_err, _status = our_dump_log(files, **kw)
    for a, b in zip(theirs.split(b"\n"), ours.split(b"\n")):
        assert a == b
    assert ours == theirs
    assert ours_err.splitlines() == theirs_err.splitlines()
    return ours, ours_err


_ARGS = {(): {}, ("--deep-iteration",): {"deep_iteration": True}, ("--print-data-log",): {"print_data_log": True},
         ("--print-data-log", "--skip-record-metadata"): {"print_data_log": True, "skip_record_metadata": True},
         ("--deep-iteration", "--skip-record-metadata"): {"deep_iteration": True, "skip_record_metadata": True},
         ("--max-bytes", "3000", "--print-data-log"): {"max_bytes": 3000, "print_data_log": True}}


@pytest.mark.parametrize("which", ["codecs", "txn", "compact", "binary"])
@pytest.mark.parametrize("args", list(_ARGS))
def test_dump_log_prints_what_kafka_prints(written, which, args, tmp_path):
    kafka = written["kafka"]
    folder = _copy(kafka.partition_dir(written[which][0], 0), tmp_path)
    segs = sorted(folder.glob("*.log"))
    if which not in ("txn", "binary"):
        assert len(segs) >= 2, segs
    ours, err = _same(segs, *args, **_ARGS[args])
    if which == "compact" and "--deep-iteration" in args:
        assert "is followed by" in err  # compaction left gaps
    if which == "binary" and "--print-data-log" in args and "--max-bytes" not in args:
        assert "\ufffd".encode() in ours  # bytes that are not UTF-8, as Java's decoder shows them


_DECODERS = {"__consumer_offsets": ("--offsets-decoder", "offsets"),
             "__transaction_state": ("--transaction-log-decoder", "transaction-log"),
             "__cluster_metadata": ("--cluster-metadata-decoder", "cluster-metadata")}


@pytest.mark.parametrize("log", sorted(_DECODERS))
@pytest.mark.parametrize("how", ["decoder", "deep", "data"])
def test_the_brokers_own_logs_print_what_kafka_prints(written, log, how, tmp_path):
    """__consumer_offsets (both group protocols), __transaction_state, and the KRaft log with its
    snapshots (.checkpoint), with and without their decoders."""
    kafka = written["kafka"]
    folder = _copy(kafka.partition_dir(log, 0), tmp_path)
    files = sorted(f for f in folder.iterdir() if f.suffix in (".log", ".checkpoint"))
    flag, decoder = _DECODERS[log]
    args, kw = {"decoder": ((flag,), {"decoder": decoder}), "deep": (("--deep-iteration",), {"deep_iteration": True}),
                "data": (("--print-data-log",), {"print_data_log": True})}[how]
    ours, _ = _same(files, *args, **kw)
    text = ours.decode("utf-8")
    if log == "__cluster_metadata":
        assert " LeaderChange: {" in text and (how == "decoder") == ('"type":"FEATURE_LEVEL_RECORD"' in text)
        assert any(f.suffix == ".checkpoint" for f in files) and " SnapshotHeader {" in text
        if how == "decoder":
            assert '"type":"CLIENT_QUOTA_RECORD"' in text and '"type":"USER_SCRAM_CREDENTIAL_RECORD"' in text
            assert '"type":"REMOVE_TOPIC_RECORD"' in text
    elif log == "__consumer_offsets" and how == "decoder":
        # (librdkafka ends a commit's metadata with a NUL: Jackson writes it \u0000)
        assert '"metadata":"commit-metadata \u00e9' in text and '"subscription":{"topics":' in text
    elif how == "decoder":
        assert '"transactionStatus":"CompleteAbort"' in text


@pytest.mark.parametrize("which", ["codecs", "txn", "compact", "__cluster_metadata"])
@pytest.mark.parametrize("args", [(), ("--verify-index-only",), ("--index-sanity-check",)])
def test_index_files_and_snapshots_as_kafka_prints_them(written, which, args, tmp_path):
    kafka = written["kafka"]
    topic = written[which][0] if which in written else which
    folder = _copy(kafka.partition_dir(topic, 0), tmp_path)
    files = sorted(p for p in folder.iterdir() if p.suffix in (".index", ".timeindex", ".txnindex", ".snapshot"))
    if "--index-sanity-check" in args:
        # the active segment's time index is preallocated: Kafka's check fails on it and stops the tool
        files = [f for f in files if f.suffix == ".index" or f.stem != max(p.stem for p in files)]
    assert any(p.suffix == ".index" and p.stat().st_size for p in files)
    if which == "txn":
        assert any(p.suffix == ".txnindex" for p in files)
    kw = {"verify_index_only": "--verify-index-only" in args, "index_sanity_check": "--index-sanity-check" in args}
    _same(files, *args, **kw)


def test_every_codec_reads_as_the_consumer_fetches(written):
    kafka = written["kafka"]
    topic, n = written["codecs"]
    kl = log.open_log(kafka.partition_dir(topic, 0))
    table = kl.read_table()
    assert table.num_rows == n and table.column("error").null_count == n
    assert set(table.column("codec").to_pylist()) == set(CODECS)
    got = clients.consume_confluent(kafka.bootstrap, topic, n, timeout=60)
    ours = [{"key": r["key"], "value": r["value"], "headers": [(h["key"], h["value"]) for h in r["headers"] or ()],
             "timestamp_ms": int(r["timestamp"].timestamp() * 1000), "offset": r["offset"]}
            for r in table.to_pylist()]
    assert ours == [{k: r[k] for k in ("key", "value", "headers", "timestamp_ms", "offset")} for r in got]
    assert all(pid >= 0 for pid in table.column("producerId").to_pylist())  # idempotent producers
    # seeks by offset and time agree with the whole
    mid = kl.read_table(["offset"], offsets=(333, 401)).column("offset").to_pylist()
    assert mid == list(range(333, 401))
    t = kl.read_table(["offset"], timestamps=(T0 + 5000, T0 + 6000)).column("offset").to_pylist()
    assert t == [r["offset"] for r in ours if T0 + 5000 <= r["timestamp_ms"] < T0 + 6000]


def test_read_committed_as_a_read_committed_consumer(written):
    kafka = written["kafka"]
    topic, outcome = written["txn"]
    kl = log.open_log(kafka.partition_dir(topic, 0))
    committed = kl.read_table(["offset", "key", "value"], isolation="read_committed")
    values = committed.column("value").to_pylist()
    want = [b"txn%d-%d" % (k, i) for k, o in enumerate(outcome) if o == "committed" for i in range(25)]
    assert [v for v in values if v and v.startswith(b"txn")] == want
    assert not any(v and v.startswith(b"open") for v in values)  # the transaction left open
    # a read_committed consumer stops at the open transaction (the last stable offset): up to there, the same
    n_before_open = len(want) + 20
    got = clients.consume_confluent(kafka.bootstrap, topic, n_before_open, timeout=60,
                                    config={"isolation.level": "read_committed"})
    assert [(r["offset"], r["value"]) for r in got] == \
        [(o, v) for o, v in zip(committed.column("offset").to_pylist(), values)][:n_before_open]
    markers = kl.read_table(["isControl"], control=True).column("isControl").to_pylist()
    assert sum(markers) == len(outcome)


def test_compacted_topic_with_tombstones(written):
    kafka = written["kafka"]
    topic, m = written["compact"]
    kl = log.open_log(kafka.partition_dir(topic, 0))
    table = kl.read_table(["offset", "key", "value"])
    assert 0 < table.num_rows < m
    offsets = table.column("offset").to_pylist()
    assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)
    got = clients.consume_confluent(kafka.bootstrap, topic, table.num_rows, timeout=60)
    assert [(r["offset"], r["key"], r["value"]) for r in got] == \
        list(zip(offsets, table.column("key").to_pylist(), table.column("value").to_pylist()))
    assert None in table.column("value").to_pylist()  # tombstones kept (delete.retention.ms not past)
