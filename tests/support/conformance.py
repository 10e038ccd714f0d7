"""Every frame of recorded client↔broker connections, checked in one pass.

:func:`check_events` takes what a :class:`kafkaproto.proxy.ProxyConnection`
handed back for one connection (``(to_server, event)`` pairs, as a decoding
``RecordingProxy`` keeps them) and checks each frame: it decoded (request
and response, paired by correlation id), it re-encodes to its exact bytes
(header tags and bytes after the body included), and it yields the values
to hold against Kafka's own classes: the body's bytes and the message in
Kafka's JSON form.

:func:`replay` does the same from the raw byte streams alone, through a new
ProxyConnection: run in another process with the other engine
(``python -m support.conformance STREAMS.pickle OUT.json``, with or without
``KAFKAPROTO_PURE=1``), it says whether both engines read every frame to
the same values.
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
import pickle
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from kafkaproto import _kinds as K
from kafkaproto import encode_request, request_header_version, response_header_version
from kafkaproto.headers import decode_request_header, decode_response_header
from kafkaproto.protocol import trailing_bytes
from kafkaproto.proxy import ProxyConnection, Unframed

from .message_values import compare_with_java, tagged_paths, to_kafka_json

__all__ = ["FrameCheck", "check_events", "digest", "java_disagreements", "other_engine_disagreements",
           "records_fields", "records_summary", "replay"]


@dataclass
class FrameCheck:
    """One frame of a connection and what became of it."""

    conn: int
    kind: str  # "request" | "response"
    api_key: int | None
    version: int | None
    correlation_id: int | None
    client_id: str | None
    decoded: bool = False
    error: str | None = None
    reencoded: bool = False
    body: bytes = b""  # the message body: what Kafka's classes read
    trailing: int = 0  # bytes after the body (kept, written back)
    json: dict | None = None
    message: object = field(default=None, repr=False)
    records: list = field(default_factory=list, repr=False)  # every records field's bytes (Produce, Fetch...)

    @property
    def where(self) -> str:
        return (f"connection {self.conn} {self.kind} api {self.api_key} v{self.version} "
                f"correlation {self.correlation_id} client {self.client_id!r}")


def digest(json_value) -> str:
    return hashlib.sha256(json.dumps(json_value, sort_keys=True).encode()).hexdigest()[:16]


def records_fields(obj) -> list[bytes]:
    """The bytes of every non-empty ``records`` field of a decoded message, in field order."""
    out, todo = [], [obj]
    while todo:
        o = todo.pop()
        for f in reversed(type(o)._FIELDS):
            v = getattr(o, f.attr)
            if f.kind == K.RECORDS and v:
                out.append(bytes(v))
            elif f.kind == K.STRUCT and v is not None:
                todo.append(v)
            elif f.kind == K.ARRAY and f.elem == K.STRUCT and v:
                todo.extend(reversed(v))
    return out


def _request(conn: int, ev) -> FrameCheck:
    fc = FrameCheck(conn, "request", ev.api_key, ev.api_version, ev.correlation_id, ev.client_id)
    if ev.message is None:
        fc.error = str(ev.error)
        return fc
    fc.decoded, fc.message = True, ev.message
    h = ev.header
    again = encode_request(ev.message, ev.api_version, h.correlation_id, h.client_id,
                           header_tagged_fields=h.unknown_tagged_fields or None)
    fc.reencoded = again[4:] == bytes(ev.frame)
    _, start = decode_request_header(memoryview(ev.frame), request_header_version(ev.api_key, ev.api_version))
    fc.trailing = trailing_bytes(ev.message)
    fc.body = bytes(ev.frame[start:])
    fc.json = to_kafka_json(ev.message, ev.api_version)
    fc.records = records_fields(ev.message)
    return fc


def _response(conn: int, ev) -> FrameCheck:
    req = ev.request
    fc = FrameCheck(conn, "response", ev.api_key, ev.api_version, ev.correlation_id,
                    None if req is None else req.client_id)
    if ev.message is None:
        fc.error = "unpaired response" if req is None else str(ev.error)
        return fc
    fc.decoded, fc.message = True, ev.message
    fc.reencoded = b"".join(bytes(p) for p in ev.encode()) == b"".join(bytes(p) for p in ev.parts())
    _, start = decode_response_header(memoryview(ev.frame), response_header_version(ev.api_key, ev.api_version))
    fc.trailing = trailing_bytes(ev.message)
    fc.body = bytes(ev.frame[start:])
    fc.json = to_kafka_json(ev.message, ev.api_version)
    fc.records = records_fields(ev.message)
    return fc


def check_events(conn: int, events) -> list[FrameCheck]:
    """One FrameCheck per frame event of a connection; an Unframed event is
    a failed check of its own (Kafka frames never stop framing)."""
    out = []
    for to_server, ev in events:
        if isinstance(ev, Unframed):
            out.append(FrameCheck(conn, "request" if to_server else "response", None, None, None, None,
                                  error=f"{len(ev.data)} bytes stopped framing: {ev.error}"))
        else:
            out.append(_request(conn, ev) if to_server else _response(conn, ev))
    return out


def replay(streams) -> list[FrameCheck]:
    """``[(client bytes, broker bytes), ...]`` → the checks, through fresh
    ProxyConnections (the requests of a connection fed before its responses:
    the pairing waits for nothing else)."""
    out = []
    for i, (c2s, s2c) in enumerate(streams):
        middle = ProxyConnection(decode=True, zero_copy=False)
        events = [(True, ev) for ev in middle.from_client(c2s)] + [(False, ev) for ev in middle.from_broker(s2c)]
        out += check_events(i, events)
    return out


def records_summary(blob: bytes) -> list:
    """kafkaproto's reading of a records field, as plain data comparable with
    the Java oracle's ``records_decode``: whole batches only (the last batch
    of a Fetch may be cut short)."""
    from kafkaproto import records as R

    def plain(v):
        return None if v is None else bytes(v).hex()

    out = []
    for b in R.decode(blob):
        if b.truncated:
            continue
        out.append({"base_offset": b.base_offset, "last_offset": b.last_offset, "magic": b.magic,
                    "crc": b.crc, "transactional": b.is_transactional, "control": b.is_control,
                    "producer_id": b.producer_id, "producer_epoch": b.producer_epoch,
                    "base_sequence": b.base_sequence, "partition_leader_epoch": b.partition_leader_epoch,
                    "max_timestamp": b.max_timestamp, "count": b.record_count,
                    "records": [[r.offset, r.timestamp, plain(r.key), plain(r.value),
                                 [[k, plain(v)] for k, v in r.headers]] for r in b.records]})
    return out


def summary(checks) -> list[list]:
    """What the other engine must agree on, per frame, as JSON."""
    ordered = sorted(checks, key=lambda c: (c.conn, c.kind))  # stable: each direction in its order
    return [[c.conn, c.kind, c.api_key, c.version, c.correlation_id, c.decoded, c.reencoded, c.trailing,
             None if c.json is None else digest(c.json), digest([records_summary(r) for r in c.records])]
            for c in ordered]


JAVA_BATCH_FIELDS = ("base_offset", "last_offset", "magic", "crc", "transactional", "control", "producer_id",
                     "producer_epoch", "base_sequence", "partition_leader_epoch", "max_timestamp", "count")


def java_disagreements(checks, oracle) -> tuple[list[str], collections.Counter, collections.Counter]:
    """Kafka's classes (``oracle``) against every checked frame, in two round
    trips: each body read by Kafka to the same value in every field, with the
    same bytes left unread (a field of ours missing from Kafka's reading
    must be a tagged one at its default), and each records field to the same
    batches and records → (failures, frames Kafka writes back otherwise by
    (kind, api, version, client id), the codecs of the batches compared)."""
    failures: list[str] = []
    rewritten: collections.Counter = collections.Counter()
    reqs = [{"op": "decode", "api_key": c.api_key, "kind": c.kind, "version": c.version, "hex": c.body.hex()}
            for c in checks]
    for c, rep in zip(checks, oracle.request_many(reqs)):
        if "error" in rep:
            failures.append(f"{c.where}: Kafka cannot read it: {rep['error'][:200]}")
            continue
        if rep["trailing"] != c.trailing:
            failures.append(f"{c.where}: Kafka left {rep['trailing']} bytes unread, we {c.trailing}")
        problems: list[str] = []
        compare_with_java(c.json, rep["json"], "", type(c.message).NAME, problems, tagged_paths(c.message, c.version))
        if problems:
            failures.append(f"{c.where}: values differ from Kafka's reading: {problems[:3]}")
        if bytes.fromhex(rep["hex"]) != c.body[:len(c.body) - c.trailing]:
            # a client that writes what Kafka's classes would not (a default-valued tag...)
            rewritten[(c.kind, c.api_key, c.version, c.client_id)] += 1
    blobs = [(c, blob) for c in checks for blob in c.records]
    codecs: collections.Counter = collections.Counter()
    replies = oracle.request_many({"op": "records_decode", "hex": blob.hex()} for _, blob in blobs)
    for (c, blob), rep in zip(blobs, replies):
        java = [{k: b[k] for k in JAVA_BATCH_FIELDS} | {"records": [
            [r["offset"], r["timestamp"], r["key_hex"], r["value_hex"], [list(h) for h in r["headers"]]]
            for r in b["records"]]} for b in rep.get("batches", [])]
        for b in java:
            b["crc"] &= 0xFFFFFFFF
        if "error" in rep or records_summary(blob) != java:
            failures.append(f"{c.where}: record batches: {rep.get('error') or 'they differ from Kafka reading'}")
        codecs.update(b["compression"] for b in rep.get("batches", []))
    return failures, rewritten, codecs


def other_engine_disagreements(streams, checks, work: Path) -> list:
    """The byte streams (``[(client bytes, broker bytes)]``) through a
    ProxyConnection of the other engine in a child process (the twin when
    this one is compiled, and the other way round) → the frames where its
    summary differs from ``checks``'.  Fails when there is no other engine."""
    import kafkaproto

    src, dst = work / "streams.pickle", work / "other.json"
    with open(src, "wb") as f:
        pickle.dump(list(streams), f)
    env = dict(os.environ)
    if kafkaproto.COMPILED:
        env["KAFKAPROTO_PURE"] = "1"
    else:
        env.pop("KAFKAPROTO_PURE", None)
    tests = Path(__file__).resolve().parent.parent
    proc = subprocess.run([sys.executable, "-m", "support.conformance", str(src), str(dst)], cwd=str(tests),
                          env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise AssertionError(f"the other engine's pass failed:\n{proc.stderr[-3000:]}")
    other = json.loads(dst.read_text())
    if other["compiled"] == kafkaproto.COMPILED:
        raise AssertionError("the compiled core is not built: no other engine to compare with")
    ours = json.loads(json.dumps(summary(checks)))
    if len(other["frames"]) != len(ours):
        return [("frame count", len(ours), len(other["frames"]))]
    return [(a, b) for a, b in zip(ours, other["frames"]) if a != b]


def main(argv=None) -> int:
    import kafkaproto

    src, dst = (argv or sys.argv[1:])[:2]
    with open(src, "rb") as f:
        streams = pickle.load(f)
    checks = replay(streams)
    with open(dst, "w") as f:
        json.dump({"compiled": kafkaproto.COMPILED, "frames": summary(checks)}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
