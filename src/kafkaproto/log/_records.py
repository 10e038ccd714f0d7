"""The records of Kafka's own logs, decoded with the classes generated from
Kafka's schemas (``kafkaproto.messages.internal_class``): the coordinators' topics
(``__consumer_offsets``, ``__transaction_state``, ``__share_group_state``:
a key ``(record type, fields)`` and a value ``(version, fields)`` or none for
a tombstone), the metadata logs (``__cluster_metadata``,
``__remote_log_metadata``: a value framed as ``(frame version, record type,
version, fields)`` in unsigned varints), and what Kafka's ``DumpLogSegments``
prints for them with its decoders.  No numpy, no pyarrow.
"""

from __future__ import annotations

import struct

from ..errors import KafkaProtocolError
from ..messages import INTERNAL_CLASSES as CLASSES
from ..messages import INTERNAL_LOGS as LOGS
from ..messages import internal_class
from ._kjson import dumps, kafka_uuid, to_node

__all__ = ["COORDINATORS", "RecordError", "decode_coordinator", "decode_framed", "dump_parser", "record_class"]

#: the coordinators' topics, by the name of their log in the registry
COORDINATORS = {"group": "__consumer_offsets", "transaction": "__transaction_state", "share": "__share_group_state"}

#: Kafka's transaction states (TransactionState's ids and names)
TRANSACTION_STATES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead",
                      "PrepareEpochFence")



class RecordError(KafkaProtocolError):
    """A record of an internal log that its decoder cannot read (``kind``: ``"type"`` an unknown record
    type, ``"version"`` an unknown version, ``"key"`` a missing key, else ``"read"``)."""

    def __init__(self, detail: str, kind: str = "read", what: str = "record", offset=None):
        self.kind = kind
        super().__init__(detail, what, offset)


def record_class(name: str):
    """The generated class of an internal record (``"OffsetCommitValue"``, ``"TopicRecord"``...)."""
    if name not in CLASSES:
        raise KeyError(name)
    return internal_class(name)


def _read(cls, data, version: int, what: str):
    try:
        msg, _end = cls.decode(data, version, with_end=True)
    except KafkaProtocolError as exc:
        raise RecordError(f"Could not read record with version {version} from {what}'s buffer due to: "
                          f"{exc.detail}.") from None
    return msg


def decode_coordinator(log: str, key, value):
    """A coordinator's record → ``(record type, key message, value version or None, value message or None)``
    (None: a tombstone), as Kafka's CoordinatorRecordSerde reads it; raises :class:`RecordError`."""
    if key is None:
        raise RecordError("message had a missing key", "key")
    key = bytes(key)
    if len(key) < 2:
        raise RecordError("Could not read version from key's buffer.")
    rtype = struct.unpack_from(">h", key)[0]
    names = LOGS[log].get(rtype)
    if names is None or names[0] is None:
        raise RecordError(f"Found an unknown record type {rtype}", "type")
    kmsg = _read(record_class(names[0]), key[2:], 0, "key")
    if value is None:
        return rtype, kmsg, None, None
    value = bytes(value)
    if len(value) < 2:
        raise RecordError("Could not read version from value's buffer.")
    version = struct.unpack_from(">h", value)[0]
    vcls = record_class(names[1])
    if not vcls.supports(version):
        raise RecordError(f"Found an unknown record version {version} for {rtype} type", "version")
    return rtype, kmsg, version, _read(vcls, value[2:], version, "value")


def _uvarint(data: bytes, pos: int, what: str) -> tuple[int, int]:
    shift = value = 0
    while True:
        if pos >= len(data) or shift > 28:
            raise RecordError(f"Error while reading {what}")
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
    if value > 0x7FFF:
        raise RecordError(f"Value for {what} was too large.")
    return value, pos


def decode_framed(log: str, value):
    """A metadata log's record (``value``: frame version 1, record type, version, then its fields)
    → ``(record type, version, message)``, as Kafka's AbstractApiMessageSerde reads it."""
    if value is None:
        raise RecordError("a metadata record with no value")
    data = bytes(value)
    frame, pos = _uvarint(data, 0, "frame version")
    if frame == 0:
        raise RecordError("Could not deserialize metadata record with frame version 0. Note that upgrades from the "
                          "preview release of KRaft in 2.8 to newer versions are not supported.")
    if frame != 1:
        raise RecordError(f"Could not deserialize metadata record due to unknown frame version {frame}(only frame "
                          "version 1 is supported)")
    rtype, pos = _uvarint(data, pos, "type")
    version, pos = _uvarint(data, pos, "version")
    name = LOGS[log].get(rtype)
    if name is None:
        raise RecordError(f"java.lang.IllegalArgumentException: Unknown metadata id {rtype}", "type")
    try:
        msg, end = record_class(name).decode(data, version, pos, with_end=True)
    except KafkaProtocolError:
        raise RecordError(f"Failed to deserialize record with type {rtype}") from None
    if end < len(data):
        raise RecordError(f"Found {len(data) - end} byte(s) of garbage after {rtype}")
    return rtype, version, msg


def metadata_type_name(name: str) -> str:
    """Kafka's MetadataRecordType name of a record class (``TopicRecord`` → ``TOPIC_RECORD``)."""
    import re

    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()


# ---------------------------------------------------------------------------
# what DumpLogSegments prints


def _consumer_protocol(member: dict, field: str, cls_name: str) -> None:
    """Kafka's tool shows a consumer group member's subscription and assignment decoded (when they read)."""
    raw = member.get(field)
    if not isinstance(raw, (bytes, bytearray)):
        return
    from ..messages import decode_versioned

    got = decode_versioned(cls_name, raw)
    if got is not None:  # else the bytes, as they are
        member[field] = to_node(got[1], got[0])


def coordinator_node(log: str, rtype: int, kmsg, version, vmsg) -> tuple[dict, dict | None]:
    """The key and value of a coordinator's record as Kafka's tool builds their JSON."""
    key = {"type": str(rtype), "data": to_node(kmsg, 0)}
    if vmsg is None:
        return key, None
    data = to_node(vmsg, version)
    name = type(vmsg).__name__
    if name == "GroupMetadataValue" and data.get("protocolType") == "consumer":
        for member in data.get("members") or ():
            _consumer_protocol(member, "subscription", "ConsumerProtocolSubscription")
            _consumer_protocol(member, "assignment", "ConsumerProtocolAssignment")
    elif name == "TransactionLogValue":
        status = vmsg.transaction_status
        data["transactionStatus"] = TRANSACTION_STATES[status] if 0 <= status < len(TRANSACTION_STATES) else str(status)
    return key, {"version": str(version), "data": data}


def _coordinator_text(log: str, offset: int, key, value):
    try:
        rtype, kmsg, version, vmsg = decode_coordinator(log, key, value)
    except RecordError as exc:
        if exc.kind == "key":
            return (f"Failed to decode message at offset {offset} using the specified decoder (message had a "
                    "missing key)"), None
        if exc.kind == "type":
            return f"Unknown record type {struct.unpack_from('>h', bytes(key))[0]} at offset {offset}, skipping.", None
        return f"Error at offset {offset}, skipping. {exc.detail}", None
    k, v = coordinator_node(log, rtype, kmsg, version, vmsg)
    return dumps(k), "<DELETE>" if v is None else dumps(v)


def _metadata_text(offset: int, value):
    try:
        rtype, version, msg = decode_framed("metadata", value)
    except RecordError as exc:
        return None, f"Error at {offset}, skipping. {exc.detail}"
    node = {"type": metadata_type_name(type(msg).__name__), "version": version, "data": to_node(msg, version)}
    return None, dumps(node)


_SEGMENT_STATES = ("COPY_SEGMENT_STARTED", "COPY_SEGMENT_FINISHED", "DELETE_SEGMENT_STARTED", "DELETE_SEGMENT_FINISHED")
_PARTITION_STATES = ("DELETE_PARTITION_MARKED", "DELETE_PARTITION_STARTED", "DELETE_PARTITION_FINISHED")


def _state(names, v: int) -> str:
    if 0 <= v < len(names):
        return names[v]
    raise RecordError(f"Unknown state id {v}")


def _tip(tip) -> str:
    return f"{kafka_uuid(tip.id)}:{tip.name}-{tip.partition}"


def _custom(raw) -> str:
    return "Optional.empty" if raw is None else f"Optional[CustomMetadata{{{len(raw)} bytes}}]"


def _epochs(entries) -> str:
    got = {}
    for e in entries:
        got[e.leader_epoch] = e.offset
    return "{" + ", ".join(f"{k}={got[k]}" for k in sorted(got)) + "}"


def remote_text(rtype: int, msg) -> str:
    """What Kafka's RemoteLogMetadataSerde's objects print (their ``toString``)."""
    if rtype in (0, 3):
        # what RemoteLogSegmentMetadata's (and its snapshot's) constructor refuses
        if rtype == 0 and msg.start_offset < 0:
            raise RecordError(f"Unexpected start offset = {msg.start_offset}. StartOffset for a remote segment "
                              "cannot be negative")
        if rtype == 0 and msg.end_offset < msg.start_offset:
            raise RecordError(f"Unexpected end offset = {msg.end_offset}. EndOffset for a remote segment cannot "
                              f"be less than startOffset = {msg.start_offset}")
        if not msg.segment_leader_epochs:
            raise RecordError("segmentLeaderEpochs can not be null or empty")
    if rtype == 0:
        sid = msg.remote_log_segment_id
        seg = f"RemoteLogSegmentId{{topicIdPartition={_tip(sid.topic_id_partition)}, id={kafka_uuid(sid.id)}}}"
        return (f"RemoteLogSegmentMetadata{{remoteLogSegmentId={seg}, startOffset={msg.start_offset}, endOffset="
                f"{msg.end_offset}, brokerId={msg.broker_id}, maxTimestampMs={msg.max_timestamp_ms}, "
                f"eventTimestampMs={msg.event_timestamp_ms}, segmentLeaderEpochs={_epochs(msg.segment_leader_epochs)}, "
                f"segmentSizeInBytes={msg.segment_size_in_bytes}, customMetadata={_custom(msg.custom_metadata)}, "
                f"state={_state(_SEGMENT_STATES, msg.remote_log_segment_state)}, "
                f"txnIdxEmpty={str(msg.txn_index_empty).lower()}}}")
    if rtype == 1:
        sid = msg.remote_log_segment_id
        seg = f"RemoteLogSegmentId{{topicIdPartition={_tip(sid.topic_id_partition)}, id={kafka_uuid(sid.id)}}}"
        return (f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId={seg}, customMetadata="
                f"{_custom(msg.custom_metadata)}, state={_state(_SEGMENT_STATES, msg.remote_log_segment_state)}, "
                f"eventTimestampMs={msg.event_timestamp_ms}, brokerId={msg.broker_id}}}")
    if rtype == 2:
        return (f"RemotePartitionDeleteMetadata{{topicPartition={_tip(msg.topic_id_partition)}, state="
                f"{_state(_PARTITION_STATES, msg.remote_partition_delete_state)}, eventTimestampMs="
                f"{msg.event_timestamp_ms}, brokerId={msg.broker_id}}}")
    return (f"RemoteLogSegmentMetadataSnapshot{{segmentId={kafka_uuid(msg.segment_id)}, "
            f"startOffset={msg.start_offset}, "
            f"endOffset={msg.end_offset}, maxTimestampMs={msg.max_timestamp_ms}, segmentLeaderEpochs="
            f"{_epochs(msg.segment_leader_epochs)}, segmentSizeInBytes={msg.segment_size_in_bytes}, customMetadata="
            f"{_custom(msg.custom_metadata)}, state={_state(_SEGMENT_STATES, msg.remote_log_segment_state)}, "
            f"txnIdxEmpty={str(msg.txn_index_empty).lower()}}}")


def _remote_text(offset: int, value):
    try:
        rtype, _version, msg = decode_framed("remote", value)
        return None, remote_text(rtype, msg)
    except RecordError as exc:
        return None, f"Error at offset {offset}, skipping. {exc.detail}"


_DECODER_LOGS = {"offsets": "group", "transaction-log": "transaction", "share-group-state": "share"}


def dump_parser(decoder: str):
    """What Kafka's tool prints with a decoder: ``(offset, key, value) -> (key text or None, value text
    or None)``."""
    if decoder in _DECODER_LOGS:
        log = _DECODER_LOGS[decoder]
        return lambda offset, key, value: _coordinator_text(log, offset, key, value)
    if decoder == "cluster-metadata":
        return lambda offset, key, value: _metadata_text(offset, value)
    if decoder == "remote-log-metadata":
        return lambda offset, key, value: _remote_text(offset, value)
    raise ValueError(f"no decoder {decoder!r}")
