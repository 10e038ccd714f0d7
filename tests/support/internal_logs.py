"""Segments of Kafka's internal logs made of every record type and version of their
schemas (the classes generated from Kafka's jars), seeded random values: the
metadata logs' framed records, the coordinators' keys and values, tombstones,
consumer-protocol members, records a decoder cannot read."""

from __future__ import annotations

import struct

from kafkaproto import _kinds as K
from kafkaproto.log._records import record_class
from kafkaproto.messages import ConsumerProtocolAssignment, ConsumerProtocolSubscription
from kafkaproto.messages._internal import LOGS

from .kafka_log import T0, PartitionWriter
from .message_values import random_message

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


def tame_message(cls, version, rng):
    return _tame(random_message(cls, version, rng, unknown_tags=False), rng)


def _versions(cls):
    return [v for v in range(cls.LOWEST_VERSION, cls.HIGHEST_VERSION + 1) if cls.supports(v)]


def framed_records(log: str, rng, fix=None):
    """Every record type of a metadata log at every version, framed as Kafka's serde frames them."""
    out = []
    for rtype, name in sorted(LOGS[log].items()):
        cls = record_class(name)
        for v in _versions(cls):
            for _ in range(2):
                msg = tame_message(cls, v, rng)
                if fix:
                    fix(msg, rng)
                out.append((None, _uvarint(1) + _uvarint(rtype) + _uvarint(v) + msg.encode(v)))
    return out


def remote_fix(msg, rng):
    if hasattr(msg, "remote_log_segment_state"):
        msg.remote_log_segment_state = rng.randint(0, 3)
    if hasattr(msg, "remote_partition_delete_state"):
        msg.remote_partition_delete_state = rng.randint(0, 2)


def _consumer_bytes(rng, cls) -> bytes:
    v = rng.choice(_versions(cls))
    return struct.pack(">h", v) + tame_message(cls, v, rng).encode(v)


def coordinator_records(log: str, rng):
    out = []
    for rtype, (kname, vname) in sorted(LOGS[log].items()):
        if kname is None or vname is None:
            continue
        kcls, vcls = record_class(kname), record_class(vname)
        for v in _versions(vcls):
            for k in range(2):
                key = struct.pack(">h", rtype) + tame_message(kcls, 0, rng).encode(0)
                value = tame_message(vcls, v, rng)
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
    out.append((struct.pack(">h", some[0]) + tame_message(record_class(some[1][0]), 0, rng).encode(0), b"\x7f\x00"))
    return out


def write_log(root, topic: str, recs) -> list:
    w = PartitionWriter(root, topic, 0, segment_bytes=1 << 20)
    for i in range(0, len(recs), 7):
        w.append([(k, v, [], T0 + i) for k, v in recs[i:i + 7]])
    w.close()
    return sorted(w.folder.glob("*.log"))


