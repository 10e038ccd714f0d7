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

from kafkaproto import _kinds as K
from kafkaproto.messages import ConsumerProtocolAssignment, ConsumerProtocolSubscription
from kafkaproto.messages._internal import LOGS
from kafkaproto.log._records import record_class
from support.kafka_log import T0, PartitionWriter, kafka_dump_log, our_dump_log
from support.message_values import random_message

pytestmark = pytest.mark.peers

_NICE_DOUBLES = (0.0, 1.5, -2.25, 1024.0, 1e300, 0.001, 12345678.0, 1e-7)


def _uvarint(v: int) -> bytes:
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _tame(obj, rng):
    """Random values the JVM prints as we do (doubles Java 17 prints in its shortest form)."""
    for f in obj._FIELDS:
        v = getattr(obj, f.attr, None)
        if f.kind == K.FLOAT64:
            setattr(obj, f.attr, rng.choice(_NICE_DOUBLES))
        elif f.kind == K.STRUCT and v is not None:
            _tame(v, rng)
        elif f.kind == K.ARRAY and f.elem == K.STRUCT and v:
            for x in v:
                _tame(x, rng)
    return obj


def _message(cls, version, rng):
    return _tame(random_message(cls, version, rng, unknown_tags=False), rng)


def _versions(cls):
    return [v for v in range(cls.LOWEST_VERSION, cls.HIGHEST_VERSION + 1) if cls.supports(v)]


def _framed(log: str, rng, fix=None):
    """Every record type of a metadata log at every version, framed as Kafka's serde frames them."""
    out = []
    for rtype, name in sorted(LOGS[log].items()):
        cls = record_class(name)
        for v in _versions(cls):
            for _ in range(2):
                msg = _message(cls, v, rng)
                if fix:
                    fix(msg, rng)
                out.append((None, _uvarint(1) + _uvarint(rtype) + _uvarint(v) + msg.encode(v)))
    return out


def _remote_fix(msg, rng):
    if hasattr(msg, "remote_log_segment_state"):
        msg.remote_log_segment_state = rng.randint(0, 3)
    if hasattr(msg, "remote_partition_delete_state"):
        msg.remote_partition_delete_state = rng.randint(0, 2)


def _consumer_bytes(rng, cls) -> bytes:
    v = rng.choice(_versions(cls))
    return struct.pack(">h", v) + _message(cls, v, rng).encode(v)


def _coordinator(log: str, rng):
    out = []
    for rtype, (kname, vname) in sorted(LOGS[log].items()):
        if kname is None or vname is None:
            continue
        kcls, vcls = record_class(kname), record_class(vname)
        for v in _versions(vcls):
            for k in range(2):
                key = struct.pack(">h", rtype) + _message(kcls, 0, rng).encode(0)
                value = _message(vcls, v, rng)
                if vname == "GroupMetadataValue":
                    value.protocol_type = "consumer" if k == 0 else value.protocol_type
                    for m in value.members:
                        m.subscription = _consumer_bytes(rng, ConsumerProtocolSubscription) if rng.random() < 0.7 \
                            else b"\x00\x07garbage"
                        m.assignment = _consumer_bytes(rng, ConsumerProtocolAssignment)
                if vname == "TransactionLogValue":
                    value.transaction_status = rng.randint(0, 8)
                out.append((key, struct.pack(">h", v) + value.encode(v)))
            out.append((key, None))  # a tombstone
    # what the decoder cannot read
    out.append((struct.pack(">h", 999) + b"\x00\x01x", b"\x00\x00"))
    some = sorted(LOGS[log].items())[-1]
    out.append((struct.pack(">h", some[0]) + _message(record_class(some[1][0]), 0, rng).encode(0), b"\x7f\x00"))
    return out


def _write(root, topic: str, recs) -> list:
    w = PartitionWriter(root, topic, 0, segment_bytes=1 << 20)
    for i in range(0, len(recs), 7):
        w.append([(k, v, [], T0 + i) for k, v in recs[i:i + 7]])
    w.close()
    return sorted(w.folder.glob("*.log"))


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
    "cluster-metadata": ("__cluster_metadata", lambda rng: _framed("metadata", rng)),
    "remote-log-metadata": ("__remote_log_metadata", lambda rng: _framed("remote", rng, _remote_fix)),
    "offsets": ("__consumer_offsets", lambda rng: _coordinator("group", rng)),
    "transaction-log": ("__transaction_state", lambda rng: _coordinator("transaction", rng)),
    "share-group-state": ("__share_group_state", lambda rng: _coordinator("share", rng)),
}


@pytest.mark.parametrize("decoder", sorted(_CASES))
def test_every_record_type_as_kafka_prints_it(tmp_path, decoder):
    topic, make = _CASES[decoder]
    files = _write(tmp_path, topic, make(random.Random(decoder)))
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
            msg = _message(cls, 0, rng)
            msg.version = k % 2 if cls.supports(1) else 0
            recs = [(struct.pack(">hh", 0, rtype), msg.encode(0), None, T0 + k)]
            w.append_blob(R.encode(recs, control=True, base_offset=w.next_offset))
    w.append_blob(R.encode([(struct.pack(">hh", 0, 9), b"\x00\x00", None, T0)], control=True,
                           base_offset=w.next_offset))
    metadata = _framed("metadata", rng)[:5]
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
    assert f"  -1 is followed by 3000" in ours_err
