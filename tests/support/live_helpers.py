"""Helpers for the live tests (tansu, librdkafka's mock cluster, recorded clients).

* :class:`LiveConnection` - one TCP connection driven by the sans-IO
  :class:`kafkaproto.Connection`; every socket operation has a timeout.
* :func:`read_batch_headers` - the fixed 61-byte header of each v2 record
  batch, read by hand with ``struct`` (independent of kafkaproto), plus a
  CRC-32C check of each complete batch.
* :func:`decode_recorded` - split a recorded connection's two byte streams
  into frames, decode every request, pair each response with its request by
  correlation id and decode it.
* :func:`consume_aiokafka_group` - read records as a member of a consumer
  group with aiokafka (FindCoordinator, JoinGroup, SyncGroup, OffsetFetch,
  OffsetCommit on the wire).
* :func:`settled` - a recording proxy's connections, once the clients are done.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import time
import uuid
from dataclasses import dataclass
from typing import Any

from kafkaproto import Connection, decode_request, decode_response, split_frames

__all__ = [
    "BATCH_HEADER_SIZE",
    "Exchange",
    "LiveConnection",
    "consume_aiokafka_group",
    "crc32c",
    "decode_recorded",
    "read_batch_headers",
]


# ---------------------------------------------------------------------------
# a blocking connection


class LiveConnection:
    """A socket to one broker plus a :class:`kafkaproto.Connection`.

    ``request`` sends one request and returns the decoded response;
    ``request_raw`` also returns the response frame (without its size prefix);
    ``pipeline`` writes several requests before reading any answer.
    """

    def __init__(self, host: str, port: int, client_id: str | None = "kafkaproto-live", timeout: float = 10.0):
        self.timeout = timeout
        self.conn = Connection(client_id)
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.settimeout(timeout)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> LiveConnection:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _receive(self, n: int):
        """Read until ``n`` responses have arrived: (decoded responses, their frames)."""
        out: list = []
        raw = bytearray()
        deadline = time.monotonic() + self.timeout
        while len(out) < n:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(out)} of {n} responses within {self.timeout}s")
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError(f"broker closed the connection after {len(out)} of {n} responses")
            raw += chunk
            out.extend(self.conn.receive(chunk))
        frames, used = split_frames(bytes(raw))
        assert used == len(raw), "bytes beyond the responses asked for"
        return out, [bytes(f) for f in frames]

    def pipeline(self, requests) -> list:
        """Send ``[(msg, version), ...]`` back to back; return ``[(frame, response), ...]``."""
        data = b"".join(part for msg, version in requests for part in self.conn.send(msg, version))
        self.sock.sendall(data)
        got, frames = self._receive(len(requests))
        assert len(frames) == len(got)
        return [(frame, resp) for frame, (_, _, resp) in zip(frames, got)]

    def request_raw(self, msg, version: int):
        return self.pipeline([(msg, version)])[0]

    def request(self, msg, version: int):
        return self.request_raw(msg, version)[1]


# ---------------------------------------------------------------------------
# record batches, read by hand

BATCH_HEADER_SIZE = 61
_BATCH = struct.Struct(">qiibIhiqqqhii")  # base_offset .. records_count (61 bytes)
assert _BATCH.size == BATCH_HEADER_SIZE

_CRC32C_TABLE = []
for _n in range(256):
    _c = _n
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC32C_TABLE.append(_c)


def crc32c(data) -> int:
    """CRC-32C (Castagnoli), the checksum of record batch v2."""
    crc = 0xFFFFFFFF
    table = _CRC32C_TABLE
    for b in bytes(data):
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def read_batch_headers(data) -> list:
    """The header fields of every v2 batch in ``data`` (a ``records`` field).

    Each entry is a dict with base_offset, batch_length, partition_leader_epoch,
    magic, crc, attributes, last_offset_delta, base_timestamp, max_timestamp,
    producer_id, producer_epoch, base_sequence, records_count, plus ``raw`` (the
    whole batch) and ``crc_ok``.  A trailing partial batch (which a Fetch may
    legitimately end with) is reported as ``{"partial": n_bytes}``.
    """
    data = bytes(data or b"")
    out = []
    pos = 0
    while pos < len(data):
        if len(data) - pos < 12:
            out.append({"partial": len(data) - pos})
            break
        length = struct.unpack_from(">i", data, pos + 8)[0]
        end = pos + 12 + length
        if end > len(data) or length < BATCH_HEADER_SIZE - 12:
            out.append({"partial": len(data) - pos})
            break
        names = ("base_offset", "batch_length", "partition_leader_epoch", "magic", "crc", "attributes",
                 "last_offset_delta", "base_timestamp", "max_timestamp", "producer_id", "producer_epoch",
                 "base_sequence", "records_count")
        h = dict(zip(names, _BATCH.unpack_from(data, pos)))
        h["raw"] = data[pos:end]
        h["crc_ok"] = h["magic"] == 2 and crc32c(data[pos + 21:end]) == h["crc"]
        out.append(h)
        pos = end
    return out


# ---------------------------------------------------------------------------
# recorded traffic


@dataclass
class Exchange:
    """One request frame and the response frame that answered it (both without size prefix)."""

    request_frame: bytes
    request_header: Any
    request: Any
    request_end: int
    response_frame: bytes | None = None
    response_header: Any = None
    response: Any = None
    response_end: int | None = None

    @property
    def api_key(self) -> int:
        return self.request_header.api_key

    @property
    def version(self) -> int:
        return self.request_header.api_version


def decode_recorded(conn) -> tuple:
    """Decode one :class:`RecordedConnection`: ``(exchanges, leftovers)``.

    Every request frame is decoded with ``decode_request``; every response is
    matched to its request by correlation id and decoded with
    ``decode_response``.  ``leftovers`` lists what could not be paired
    (responses with an unknown correlation id, bytes after the last whole
    frame); a request without an answer keeps ``response_frame`` None (e.g.
    Produce with acks=0, or a connection closed while a request was in flight).
    """
    leftovers = []
    requests, used_c = split_frames(conn.client_to_server)
    responses, used_s = split_frames(conn.server_to_client)
    if used_c != len(conn.client_to_server):
        leftovers.append(f"{len(conn.client_to_server) - used_c} bytes after the last whole request frame")
    if used_s != len(conn.server_to_client):
        leftovers.append(f"{len(conn.server_to_client) - used_s} bytes after the last whole response frame")
    by_cid = {}
    exchanges = []
    for frame in requests:
        frame = bytes(frame)
        header, msg, end = decode_request(frame, with_end=True)
        ex = Exchange(frame, header, msg, end)
        exchanges.append(ex)
        by_cid[header.correlation_id] = ex
    for frame in responses:
        frame = bytes(frame)
        cid = struct.unpack_from(">i", frame, 0)[0]
        ex = by_cid.pop(cid, None)
        if ex is None:
            leftovers.append(f"response with unknown correlation id {cid}")
            continue
        ex.response_frame = frame
        ex.response_header, ex.response, ex.response_end = decode_response(
            frame, ex.api_key, ex.version, with_end=True)
    return exchanges, leftovers


# ---------------------------------------------------------------------------
# aiokafka as a group member


def consume_aiokafka_group(bootstrap: str, topic: str, n: int, timeout: float = 15.0,
                           group_id: str | None = None) -> list:
    """Read the first ``n`` records of ``topic`` as a consumer-group member, commit
    the offsets, leave the group.  Returns ``[(partition, offset, key, value)]``."""
    from aiokafka import AIOKafkaConsumer

    group_id = group_id or f"live-{uuid.uuid4().hex[:8]}"

    async def run():
        consumer = AIOKafkaConsumer(
            topic, bootstrap_servers=bootstrap, group_id=group_id, auto_offset_reset="earliest",
            enable_auto_commit=False, request_timeout_ms=int(timeout * 1000), fetch_max_wait_ms=100,
            session_timeout_ms=10000, heartbeat_interval_ms=1000)
        await consumer.start()
        out = []
        try:
            while len(out) < n:
                batches = await consumer.getmany(timeout_ms=200, max_records=n - len(out))
                for msgs in batches.values():
                    out.extend((m.partition, m.offset, m.key, m.value) for m in msgs)
            await consumer.commit()
        finally:
            await consumer.stop()
        return out

    try:
        return asyncio.run(asyncio.wait_for(run(), timeout))
    except asyncio.TimeoutError as exc:
        raise TimeoutError(f"aiokafka group consumer: fewer than {n} records from {topic!r} "
                           f"within {timeout}s") from exc


def settled(proxy, quiet=0.2, timeout=10.0):
    """The proxy's connections once all are closed and none was opened for ``quiet`` s."""
    deadline = time.monotonic() + timeout
    seen, since = -1, time.monotonic()
    while time.monotonic() < deadline:
        conns = proxy.connections
        if len(conns) != seen or not all(c.closed.is_set() for c in conns):
            seen, since = len(conns), time.monotonic()
        elif time.monotonic() - since >= quiet:
            return conns
        time.sleep(0.02)
    raise TimeoutError(f"client connections still open after {timeout}s: {proxy.connections}")
