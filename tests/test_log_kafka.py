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

import io
import time

import pytest

from kafkaproto import log
from kafkaproto.log import dump as kdump
from peers import clients

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
    deadline = time.monotonic() + 120
    while True:  # the log cleaner has run once it has dropped the superseded records
        kept = log.open_log(kafka.partition_dir(compact, 0)).read_table(["offset"]).num_rows
        if kept < m:
            break
        if time.monotonic() > deadline:
            raise AssertionError(f"the log cleaner did not compact {compact} within 120 s ({kept} of {m} left)")
        time.sleep(1)
    yield {"kafka": kafka, "codecs": (codecs, n), "txn": (txn, outcome), "compact": (compact, m), "open": p}
    try:
        p.abort_transaction(10)
    except Exception:  # the broker may be gone first; the transaction then times out with it
        pass


def _kafka_dump(kafka, files, *args):
    proc = kafka.tool("kafka-dump-log", *args, "--files", ",".join(str(f) for f in files), timeout=300)
    return proc.stdout, proc.stderr


def _ours(files, *args):
    out, err = io.StringIO(), io.StringIO()
    status = kdump.dump([str(f) for f in files], out, err, print_data_log="--print-data-log" in args,
                        deep_iteration="--deep-iteration" in args)
    assert status == 0, out.getvalue()[-2000:]
    return out.getvalue(), err.getvalue()


def _stderr_blocks(text: str) -> set:
    """Kafka's tool keeps its per-file reports in a hash map: compare them as a set of blocks."""
    blocks, cur = set(), []
    for line in text.splitlines():
        if not line.startswith(" ") and cur:
            blocks.add(tuple(cur))
            cur = []
        cur.append(line)
    if cur:
        blocks.add(tuple(cur))
    return {b for b in blocks if not b[0].startswith(("SLF4J", "WARN", "log4j"))}


@pytest.mark.parametrize("which", ["codecs", "txn", "compact"])
@pytest.mark.parametrize("args", [(), ("--deep-iteration",), ("--deep-iteration", "--print-data-log")])
def test_dump_log_prints_what_kafka_prints(written, which, args):
    kafka = written["kafka"]
    folder = kafka.partition_dir(written[which][0], 0)
    segs = sorted(folder.glob("*.log"))
    if which != "txn":
        assert len(segs) >= 2, segs
    theirs, theirs_err = _kafka_dump(kafka, segs, *args)
    ours, ours_err = _ours(segs, *args)
    assert ours == theirs
    assert _stderr_blocks(ours_err) == _stderr_blocks(theirs_err)
    if which == "compact" and args:
        assert "is followed by" in ours_err  # compaction left gaps


@pytest.mark.parametrize("which", ["codecs", "txn", "compact"])
def test_index_files_and_snapshots_as_kafka_prints_them(written, which):
    kafka = written["kafka"]
    folder = kafka.partition_dir(written[which][0], 0)
    files = sorted(p for p in folder.iterdir() if p.suffix in (".index", ".timeindex", ".txnindex", ".snapshot"))
    assert any(p.suffix == ".index" and p.stat().st_size for p in files)
    if which == "txn":
        assert any(p.suffix == ".txnindex" for p in files)
    theirs, theirs_err = _kafka_dump(kafka, files)
    ours, ours_err = _ours(files)
    assert ours == theirs
    assert _stderr_blocks(ours_err) == _stderr_blocks(theirs_err)


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
