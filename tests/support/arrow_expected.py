"""What the Arrow decoders (kafkaproto.arrow) must give, computed from the
object decoders: the oracles of the Arrow tests (frames and headers,
messages, records; against real peers and captures too) and of the fuzz
targets' ``arrow`` check.

Messages: the expected rows are computed from the objects decode_request /
decode_response return (fields a version lacks → None), or from the error
they raise (all fields None, ``error`` = the exception's text).
"""

from __future__ import annotations

import pyarrow as pa

from kafkaproto import _kinds as K
from kafkaproto import decode_request, decode_response, request_header_version
from kafkaproto import records as R
from kafkaproto.errors import KafkaProtocolError
from kafkaproto.headers import decode_request_header
from kafkaproto.messages import APIS, request_class
from kafkaproto.protocol import trailing_bytes

# ---------------------------------------------------------------------------
# request headers

HEADER_NULLS = {"api_key": None, "api_version": None, "correlation_id": None, "client_id": None,
                "header_size": None}


def expected_request_header(frame):
    if frame is None:
        return dict(HEADER_NULLS, error="null frame")
    try:
        if len(frame) < 4:
            raise KafkaProtocolError(f"need 4 bytes, {len(frame)} left", "request header", 0)
        key = int.from_bytes(frame[0:2], "big", signed=True)
        ver = int.from_bytes(frame[2:4], "big", signed=True)
        if key not in APIS:
            raise KafkaProtocolError(f"api key {key} is not known", "request header", 0)
        cls = request_class(key)
        if not cls.supports(ver):
            raise KafkaProtocolError(f"{cls.NAME} v{ver} is not supported (versions {cls.VALID_VERSIONS})",
                                     "request header", 2)
        h, end = decode_request_header(frame, request_header_version(key, ver))
    except KafkaProtocolError as exc:
        return dict(HEADER_NULLS, error=str(exc))
    return {"api_key": h.api_key, "api_version": h.api_version, "correlation_id": h.correlation_id,
            "client_id": h.client_id, "header_size": end, "error": None}


# ---------------------------------------------------------------------------
# messages


def _value(kind, struct, v, version):
    if v is None:
        return None
    if kind == K.STRUCT:
        return expected_struct(struct, v, version)
    if kind == K.UUID:
        return v.bytes
    if kind in (K.BYTES, K.RECORDS):
        return bytes(v)
    return v


def expected_struct(cls, obj, version):
    out = {}
    for f in cls._FIELDS:
        if not f.versions >> version & 1:
            out[f.attr] = None
            continue
        v = getattr(obj, f.attr)
        if f.kind == K.ARRAY:
            out[f.attr] = None if v is None else [_value(f.elem, f.struct, x, version) for x in v]
        else:
            out[f.attr] = _value(f.kind, f.struct, v, version)
    return out


def null_row(cls, error):
    row = {f.attr: None for f in cls._FIELDS}
    row["trailing_bytes"] = None
    row["error"] = error
    return row


def expected_request(cls, frame):
    if frame is None:
        return null_row(cls, "null frame")
    if len(frame) >= 2 and int.from_bytes(frame[:2], "big", signed=True) != cls.API_KEY:
        return None  # another API: only an error row is expected
    try:
        header, msg = decode_request(frame)
    except KafkaProtocolError as exc:
        return null_row(cls, str(exc))
    row = expected_struct(cls, msg, header.api_version)
    row["trailing_bytes"] = trailing_bytes(msg)
    row["error"] = None
    return row


def expected_response(cls, frame, version):
    try:
        _, msg = decode_response(frame, cls.API_KEY, version)
    except KafkaProtocolError as exc:
        return null_row(cls, str(exc))
    # KIP-511 fallback: an ApiVersions body read in the v0 layout
    used = version
    if cls.API_KEY == 18 and version > 0:
        try:
            cls.decode(frame, version, 4)
        except KafkaProtocolError:
            used = 0
    row = expected_struct(cls, msg, used)
    row["trailing_bytes"] = trailing_bytes(msg)
    row["error"] = None
    return row


# ---------------------------------------------------------------------------
# records

US_LIMIT_MS = (2**63 - 1) // 1000


def expected_records(blobs, check_crc=True, topic=None, partition=None, **caps):
    """The rows kafkaproto.arrow.records must give: what kafkaproto.records.decode
    gives (with the same ``caps``), control records left out, or one error row
    for a blob it rejects."""
    rows = []
    for i, blob in enumerate(blobs):
        base = {"topic": topic[i] if topic else None, "partition": partition[i] if partition else None, "row": i}
        try:
            if blob is None:
                raise KafkaProtocolError("null records blob")
            recs = [r for b in R.decode(blob, check_crc=check_crc, **caps) for r in b.records if r.control is None]
        except KafkaProtocolError as exc:
            rows.append(dict(base, key=None, value=None, offset=None, timestamp=None, timestampType=None,
                             headers=None, error=str(exc)))
            continue
        for r in recs:
            ts = r.timestamp * 1000 if abs(r.timestamp) <= US_LIMIT_MS else None  # beyond int64 microseconds
            rows.append(dict(base, key=r.key, value=r.value, offset=r.offset, timestamp=ts,
                             timestampType=r.timestamp_type,
                             headers=[{"key": k, "value": v} for k, v in r.headers] or None, error=None))
    return rows


def as_rows(table):
    t = table.set_column(table.schema.get_field_index("timestamp"), "timestamp",
                         table.column("timestamp").cast(pa.int64()))
    return t.to_pylist()
