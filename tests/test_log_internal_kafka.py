"""dump-log's decoders against Kafka 4.4.0's own DumpLogSegments on every record
type of Kafka's internal logs: each schema's every version with seeded random
values (the metadata log, the coordinators' topics, tiered storage's metadata),
tombstones, consumer-protocol members, transaction states, and records a
decoder cannot read (an unknown type or version, a missing key, garbage).
The same segments go through Kafka's class (its jars) and through ours: the
same text, line for line.  Also the typed tables of those records against the
same messages."""

from __future__ import annotations

import random
import struct

import pytest

from support.internal_logs import coordinator_records, framed_records, remote_fix, tame_message, write_log
from support.kafka_log import T0, PartitionWriter, kafka_dump_log, our_dump_log

pytestmark = pytest.mark.peers

def _both(files, *args):
    """Kafka's tool and ours over the same files, Kafka's options → (theirs, ours) as text (decoded from the
    exact bytes each wrote)."""
    theirs, _ = kafka_dump_log(files, *args)
    kw = {"print_data_log": "--print-data-log" in args, "deep_iteration": "--deep-iteration" in args,
          "skip_record_metadata": "--skip-record-metadata" in args}
    for flag in args:
        if flag.endswith("-decoder"):
            kw["decoder"] = flag[2:-len("-decoder")]
    ours, _, _ = our_dump_log(files, **kw)
    return theirs.decode("utf-8"), ours.decode("utf-8")


_CASES = {
    "cluster-metadata": ("__cluster_metadata", lambda rng: framed_records("metadata", rng)),
    "remote-log-metadata": ("__remote_log_metadata", lambda rng: framed_records("remote", rng, remote_fix)),
    "offsets": ("__consumer_offsets", lambda rng: coordinator_records("group", rng)),
    "transaction-log": ("__transaction_state", lambda rng: coordinator_records("transaction", rng)),
    "share-group-state": ("__share_group_state", lambda rng: coordinator_records("share", rng)),
}


@pytest.mark.parametrize("decoder", sorted(_CASES))
def test_every_record_type_as_kafka_prints_it(tmp_path, decoder):
    topic, make = _CASES[decoder]
    files = write_log(tmp_path, topic, make(random.Random(decoder)))
    theirs, ours = _both(files, f"--{decoder}-decoder")
    assert theirs.count("\n") > 8
    for a, b in zip(theirs.split("\n"), ours.split("\n")):
        assert a == b
    assert ours == theirs


@pytest.mark.parametrize("args", [("--deep-iteration",), ("--cluster-metadata-decoder",),
                                  ("--print-data-log", "--skip-record-metadata")])
def test_kraft_control_records_as_kafka_prints_them(tmp_path, args):
    """LeaderChange (its own version field 0 and 1), SnapshotHeader, SnapshotFooter, KRaftVersion, Voters
    and a type Kafka does not know, as JSON where Kafka prints JSON."""
    from kafkaproto import messages
    from kafkaproto import records as R

    rng = random.Random(7)
    w = PartitionWriter(tmp_path, "__cluster_metadata", 0, segment_bytes=1 << 20)
    names = {2: "LeaderChangeMessage", 3: "SnapshotHeaderRecord", 4: "SnapshotFooterRecord", 5: "KRaftVersionRecord",
             6: "VotersRecord"}
    for rtype, name in names.items():
        cls = getattr(messages, name)
        for k in range(3):
            msg = tame_message(cls, 0, rng)
            msg.version = k % 2 if cls.supports(1) else 0
            recs = [(struct.pack(">hh", 0, rtype), msg.encode(0), None, T0 + k)]
            w.append_blob(R.encode(recs, control=True, base_offset=w.next_offset))
    w.append_blob(R.encode([(struct.pack(">hh", 0, 9), b"\x00\x00", None, T0)], control=True,
                           base_offset=w.next_offset))
    metadata = framed_records("metadata", rng)[:5]
    w.append([(k, v, [], T0) for k, v in metadata])
    w.close()
    files = sorted(w.folder.glob("*.log"))
    theirs, ours = _both(files, *args)
    assert ("LeaderChange: {" in theirs) == ("--skip-record-metadata" not in args)
    for a, b in zip(theirs.split("\n"), ours.split("\n")):
        assert a == b
    assert ours == theirs


def test_a_segment_that_does_not_start_at_zero(tmp_path):
    """--deep-iteration on healthy segments whose offsets start above 0, several files at once: the
    gaps Kafka's tool reports (from -1 to each file's first offset: every file starts again at -1),
    on standard error in the order its HashMap gives, exactly."""
    w = PartitionWriter(tmp_path, "later", 0, base_offset=3000, segment_bytes=400)
    for _ in range(30):
        w.append([(b"k", b"v" * 40, [], T0)] * 3)
    w.close()
    segs = sorted(w.folder.glob("*.log"))
    assert len(segs) > 14  # past the first resize of Java's HashMap
    theirs, theirs_err = kafka_dump_log(segs, "--deep-iteration")
    ours, ours_err, status = our_dump_log(segs, deep_iteration=True)
    assert (ours, status) == (theirs, 0)
    assert ours_err.splitlines() == theirs_err.splitlines()
    assert "  -1 is followed by 3000" in ours_err


# ---------------------------------------------------------------------------
# the typed tables against what Kafka's decoders print for the same records


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def _kafka_form(v):
    """One of our table's values as Kafka's JSON shows it (bytes as base64, a 16-byte UUID Kafka's way)."""
    import base64

    if isinstance(v, dict):
        return {_camel(k): _kafka_form(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_kafka_form(x) for x in v]
    if isinstance(v, bytes):
        return base64.b64encode(v).decode("ascii")
    return v


def _agrees(kafka, ours, path="") -> None:
    """Every field Kafka prints has our value (ours may hold more: other versions' fields at their defaults)."""
    import base64

    if isinstance(kafka, dict):
        for k, v in kafka.items():
            mine = ours.get(k) if isinstance(ours, dict) else None
            if isinstance(v, dict) and k in ("subscription", "assignment"):
                mine = ours.get("consumer" + k[:1].upper() + k[1:])
                mine = {a: b for a, b in mine.items() if a != "version"}
            _agrees(v, mine, f"{path}.{k}")
    elif isinstance(kafka, list):
        assert isinstance(ours, list) and len(ours) == len(kafka), (path, kafka, ours)
        for k, (a, b) in enumerate(zip(kafka, ours)):
            _agrees(a, b, f"{path}[{k}]")
    elif isinstance(kafka, str) and isinstance(ours, str) and len(ours) == 24 and len(kafka) == 22:
        # a UUID: Kafka's URL-safe base64 without padding; ours the 16 bytes in plain base64
        assert base64.urlsafe_b64encode(base64.b64decode(ours)).decode().rstrip("=") == kafka, path
    else:
        assert kafka == ours, (path, kafka, ours)


@pytest.mark.parametrize("decoder", ["cluster-metadata", "offsets", "transaction-log", "share-group-state"])
def test_the_typed_tables_agree_with_kafkas_decoders(tmp_path, decoder):
    import json

    from kafkaproto import log
    from kafkaproto.log._records import TRANSACTION_STATES

    topic, make = _CASES[decoder]
    files = write_log(tmp_path, topic, make(random.Random(decoder)))
    theirs, _ = _both(files, f"--{decoder}-decoder")
    printed = {}
    for line in theirs.splitlines():
        if line.startswith("| offset: "):
            offset = int(line.split()[2])
            key = line.split(" key: ", 1)[1].split(" payload: ")[0] if " key: " in line else None
            payload = line.split(" payload: ", 1)[1] if " payload: " in line else None
            printed[offset] = (key, payload)
    table = log.open_log(tmp_path).read_table(decoder=decoder)
    assert table.num_rows == len(printed)
    checked = 0
    for row in table.to_pylist():
        key, payload = printed[row["offset"]]
        if row["error"] is not None:
            assert (key or payload).startswith(("Error at", "Unknown record type")), (row, key, payload)
            continue
        column = [c for c in table.column_names[10:] if row[c] is not None]
        assert len(column) == 1
        ours = _kafka_form(row[column[0]])
        if decoder == "cluster-metadata":
            got = json.loads(payload)
            assert got["version"] == row["version"]
            _agrees(got["data"], ours)
        else:
            k = json.loads(key)
            _agrees(k["data"], ours)
            if payload == "<DELETE>":
                assert row["tombstone"] and row["version"] is None
                continue
            v = json.loads(payload)
            assert int(v["version"]) == row["version"]
            if "transactionStatus" in v["data"]:
                status = ours["transactionStatus"]
                ours["transactionStatus"] = TRANSACTION_STATES[status] if status < len(TRANSACTION_STATES) \
                    else str(status)
            _agrees(v["data"], ours)
        checked += 1
    assert checked >= 4


def test_max_message_size_as_kafkas_tool_takes_it(tmp_path):
    """--max-message-size bounds the batch an index entry may point at: large enough, the same text;
    too small, Kafka's tool stops with an exception after the entries before it, and so does ours
    (one line, no stack trace, status 1)."""
    import subprocess

    from peers import kafka_broker as kb

    w = PartitionWriter(tmp_path, "sized", 0, index_interval=200)
    for i in range(40):
        w.append([(b"k", b"v" * (10 + 30 * (i % 5)), [], T0)] * 3)
    w.close()
    index = w.segment_file(0).with_suffix(".index")
    theirs, _ = kafka_dump_log([index], "--max-message-size", "100000")
    ours, _, status = our_dump_log([index], max_message_size=100000)
    assert ours == theirs and status == 0 and theirs.count(b"offset: ") > 3
    cmd = [kb._java(), *kb.TOOL_JVM_ARGS, "-cp", kb.kafka_classpath(), kb.TOOLS["kafka-dump-log"],
           "--max-message-size", "150", "--files", str(index)]
    proc = subprocess.run(cmd, capture_output=True, timeout=300)
    ours, err, status = our_dump_log([index], max_message_size=150)
    assert proc.returncode != 0 and status == 1
    assert ours == proc.stdout and err.count("\n") == 1 and "--max-message-size" in err
