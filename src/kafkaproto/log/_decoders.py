"""What ``DumpLogSegments`` prints for the records it decodes: KRaft's control
records (leader change, snapshot header and footer, KRaft version, voters) as
JSON, and with a decoder (``--offsets-decoder``, ``--transaction-log-decoder``,
``--share-group-state-decoder``, ``--cluster-metadata-decoder``,
``--remote-log-metadata-decoder``) the records of Kafka's internal topics.
"""

from __future__ import annotations

from ..errors import KafkaProtocolError
from ._kjson import message_json

__all__ = ["CONTROL_TYPES", "control_text", "value_parser"]

#: control record types (the key's second int16), as Kafka's ControlRecordType names them
CONTROL_TYPES = {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER", 4: "SNAPSHOT_FOOTER",
                 5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"}

# type -> (the message class's name, how Kafka's tool labels it)
_KRAFT = {2: ("LeaderChangeMessage", " LeaderChange: "), 3: ("SnapshotHeaderRecord", " SnapshotHeader "),
          4: ("SnapshotFooterRecord", " SnapshotFooter "), 5: ("KRaftVersionRecord", " KRaftVersion "),
          6: ("VotersRecord", " KRaftVoters ")}


def control_message(kind: int, value: bytes | None):
    """A KRaft control record's value as its message (read at version 0, as Kafka reads it), or None
    for a type that has none."""
    if kind not in _KRAFT:
        return None
    from .. import messages

    cls = getattr(messages, _KRAFT[kind][0])
    msg, _end = cls.decode(value or b"", 0, with_end=True)
    return msg


def control_text(kind: int, key: bytes, value: bytes | None) -> str:
    """What Kafka's tool prints after a control record's metadata (`` LeaderChange: {...}``): the
    message as JSON at the version its own ``version`` field names."""
    label = _KRAFT.get(kind)
    if label is None:
        return f" controlType: {CONTROL_TYPES.get(kind, 'UNKNOWN')}({kind})"
    try:
        msg = control_message(kind, value)
        return label[1] + message_json(msg, msg.version)
    except (KafkaProtocolError, ValueError) as exc:
        return f" controlType: {CONTROL_TYPES[kind]}({kind}) (not read: {exc})"


def control_json(kind: int, value: bytes | None):
    """A KRaft control record's message as a JSON object (``--format json``), or None."""
    import json

    try:
        msg = control_message(kind, value)
    except (KafkaProtocolError, ValueError):
        return None
    return None if msg is None else json.loads(message_json(msg, msg.version))


def value_parser(decoder: str):
    """A decoder's parser: ``(offset, key, value) -> (key text or None, value text or None)``."""
    from ._records import dump_parser

    return dump_parser(decoder)
