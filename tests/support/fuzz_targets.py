"""Fuzz targets: one ``check_<name>(data)`` per public decoder.

Each check feeds ``data`` to the decoder through the public API *and* through
both implementations side by side (the compiled core and the pure twin, in
the same process), then asserts the invariants of issue 7:

1. only :class:`KafkaProtocolError` (and its documented subclasses) escapes;
2. compiled and pure give the same value, or the same error class, message
   and offset;
3. whatever decodes re-encodes to bytes that decode to an equal value.

A violated invariant raises ``AssertionError`` (or lets the unexpected
exception through): atheris reports it as a crash and saves the input.
``fuzz/run.py`` drives these under atheris; ``tests/test_fuzz.py`` runs each
one briefly in CI and replays the committed corpora.  The targets live in
the tests' support package because they share its oracles and twins (and
tests/test_regressions.py, test_limits.py and test_threads.py use them).
"""

from __future__ import annotations

import functools
import os
import random
import struct
import tempfile

import numpy as np
import pyarrow as pa

import kafkaproto
import kafkaproto.capture.walker._judge_py as _judge_twin
import kafkaproto.capture.walker._scan_py as _scan_twin
import kafkaproto.capture.walker._sink_py as _sink_twin
from kafkaproto import arrow, frames, headers, records
from kafkaproto._limits import call_caps
from kafkaproto.capture import Accounting, CaptureFormatError, read_frames
from kafkaproto.capture.formats.tapfiles import is_table_file
from kafkaproto.capture.tools.dissect import dissect
from kafkaproto.capture.walker import streams as _streams
from kafkaproto.error_codes import ErrorCode
from kafkaproto.errors import KafkaProtocolError
from kafkaproto.headers import RequestHeader, ResponseHeader
from kafkaproto.messages import APIS, CLASSES, get, request_class, response_class
from kafkaproto.messages._runtime import build_plan
from kafkaproto.protocol import (
    API_VERSIONS,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    request_header_version,
    response_header_version,
)
from kafkaproto.records import _compression
from kafkaproto.records._common import CallBudget

from .arrow_expected import (
    as_rows,
    expected_records,
    expected_request,
    expected_request_header,
    expected_response,
    null_row,
)
from .outcomes import canon, failure
from .outcomes import outcome as outcome_of
from .records_util import batch_tuple
from .twins import compiled_impl, pure_impl

__all__ = ["TARGETS", "Impl", "IMPLS", "canon", "outcome"]


class Impl:
    """One implementation (compiled or twin) with its own message plans."""

    def __init__(self, name, mods):
        self.name = name
        self.mods = mods
        self.codec = mods.module("_codec")
        self.engine = mods.module("messages._engine")
        self.records = mods.module("records._batches")  # decode_record_batches / encode_record_batch
        # the Arrow loops
        self.arrow_headers = mods.module("arrow._headers")
        self.arrow_messages = mods.module("arrow._messages")
        self.arrow_frames = mods.module("arrow._frames")
        self.arrow_records = mods.module("arrow._records")
        self._cache = {}

    def decode(self, cls, data, version, offset=0):
        """``cls.decode(data, version, offset, with_end=True)`` run by this implementation."""
        plan = build_plan(cls, version, cls.is_flexible(version), f"{cls.NAME} v{version}", eng=self.engine,
                          cache=self._cache)
        try:
            return self.engine.decode_struct(plan, data, offset)
        except KafkaProtocolError as exc:
            exc.set_context(plan.context)
            raise

    def encode(self, msg, version, mode="bytes"):
        """``msg.encode(version)`` run by this implementation → bytes; ``mode``
        "parts" (blobs kept by reference, joined here) or "size" (the sizing pass)."""
        cls = type(msg)
        plan = build_plan(cls, version, cls.is_flexible(version), f"{cls.NAME} v{version}", eng=self.engine,
                          cache=self._cache)
        w = self.codec.Writer.counting() if mode == "size" else self.codec.Writer(keep_blobs=mode == "parts")
        try:
            self.engine.encode_struct(plan, msg, w)
        except KafkaProtocolError as exc:
            exc.set_context(plan.context)
            raise
        if mode == "size":
            return len(w)
        return b"".join(bytes(memoryview(p).cast("B")) for p in w.parts()) if mode == "parts" else w.getvalue()

    def decode_request(self, frame, cls, version, header_version):
        """The codec part of :func:`kafkaproto.decode_request` (the caller checked key and version)."""
        *fields, offset = self.codec.decode_request_header(frame, header_version)
        msg, end = self.decode(cls, frame, version, offset)
        return RequestHeader(*fields), msg, end

    def decode_response(self, frame, cls, version, header_version):
        """The codec part of :func:`kafkaproto.decode_response`, ApiVersions fallback included."""
        cid, tags, offset = self.codec.decode_response_header(frame, header_version)
        try:
            msg, end = self.decode(cls, frame, version, offset)
        except KafkaProtocolError:
            if cls.API_KEY != API_VERSIONS or version == 0:
                raise
            msg, end = self.decode(cls, frame, 0, offset)
            if msg.error_code != ErrorCode.UNSUPPORTED_VERSION:
                raise
        return ResponseHeader(cid, tags), msg, end


_compiled = compiled_impl()  # None without a compiler: the twin is compared with itself, the rest still runs
PURE = Impl("pure", pure_impl())
COMPILED = Impl("compiled", _compiled) if _compiled is not None else None
IMPLS = [i for i in (COMPILED, PURE) if i is not None]
#: the implementation behind the public API in this process
ACTIVE = COMPILED if kafkaproto.COMPILED else PURE


# ---------------------------------------------------------------------------
# comparing outcomes


#: ``("ok", canonical value)`` or ``("err", class, message, offset)``.  Only
#: KafkaProtocolError is caught: anything else escaping a decoder is a crash
#: (invariant 1) and propagates to the fuzzer.
outcome = functools.partial(outcome_of, catch=KafkaProtocolError, convert=canon)


def agree(results, what):
    """Invariant 2: every implementation got the same outcome."""
    first = results[0]
    for impl, r in zip(IMPLS[1:], results[1:]):
        if r != first:
            raise AssertionError(f"{what}: {IMPLS[0].name} and {impl.name} disagree:\n  {first}\n  {r}")
    return first


def same(a, b, what):
    if a != b:
        raise AssertionError(f"{what}:\n  {a}\n  {b}")


# ---------------------------------------------------------------------------
# frames: split_frames, frame_offsets, FrameReader

FRAME_LIMITS = (-1, 0, 1, 4, 16, 255, 4096, frames.DEFAULT_MAX_FRAME_SIZE)


def _frames_all(codec, stream, limit, chunks):
    """The three frame splitters on one stream → (offsets, views, reader) outcomes."""

    def offsets():
        starts, sizes, consumed = codec.frame_offsets(stream, limit)
        return starts, sizes, consumed

    def views():
        return codec.split_frames(stream, limit)

    got, pos, reader = [], 0, codec.FrameReader(limit)
    error = None
    for size in chunks:
        try:
            got += reader.feed(stream[pos:pos + size])
        except KafkaProtocolError as exc:
            error = failure(exc)
            # the reader stays failed: the same error again, whatever comes next
            try:
                reader.feed(b"\x00")
            except KafkaProtocolError as again:
                same(error, failure(again), "FrameReader error not sticky")
            else:
                raise AssertionError("FrameReader accepted data after an error")
            break
        pos += size
    incremental = ("ok", canon((got, reader.buffered, reader.consumed))) if error is None else error
    return outcome(offsets), outcome(views), incremental, canon(got)


def check_frames(data: bytes) -> None:
    if not data:
        return
    limit = FRAME_LIMITS[data[0] & 7]
    stream = data[1:]
    rng = random.Random(data[0] >> 3)
    chunks, left = [], len(stream)
    while left > 0:
        size = rng.choice((1, 2, 3, 4, 5, 7, 64, 1 << 20))
        chunks.append(min(size, left))
        left -= size
    results = [_frames_all(impl.codec, stream, limit, chunks) for impl in IMPLS]
    offsets, views, incremental, got = agree(results, f"frames limit={limit}")
    public = outcome(lambda: frames.split_frames(stream, limit))
    same(public, views, "public split_frames vs its implementation")

    if views[0] == "err":
        # all three stop at the same bad size prefix with the same error
        same(offsets, views, "frame_offsets vs split_frames (error)")
        same(incremental, views, "FrameReader vs split_frames (error)")
        return
    frame_list, consumed = views[1]
    starts, sizes, consumed2 = offsets[1]
    same(consumed, consumed2, "consumed: split_frames vs frame_offsets")
    same(tuple(stream[s:s + n] for s, n in zip(starts, sizes)), frame_list, "frame_offsets vs split_frames")
    same(incremental, ("ok", (frame_list, len(stream) - consumed, consumed)), "FrameReader vs split_frames")
    # invariant 3: the frames, re-framed, are the bytes they came from
    same(b"".join(frames.frame(f) for f in frame_list), stream[:consumed], "re-framed frames")


# ---------------------------------------------------------------------------
# request and response headers


def check_headers(data: bytes) -> None:
    """Request header v0-v2 or response header v0-v1: the first byte chooses."""
    if not data:
        return
    sel, body = data[0], data[1:]
    if sel & 1:
        hv = (sel >> 1) % 3
        what, raw, wrap = f"request header v{hv}", "decode_request_header", RequestHeader
        decode, encode = headers.decode_request_header, headers.encode_request_header
    else:
        hv = (sel >> 1) % 2
        what, raw, wrap = f"response header v{hv}", "decode_response_header", ResponseHeader
        decode, encode = headers.decode_response_header, headers.encode_response_header
    results = [outcome(lambda: getattr(impl.codec, raw)(body, hv)) for impl in IMPLS]
    agree(results, what)

    def active():
        *fields, end = getattr(ACTIVE.codec, raw)(body, hv)
        return wrap(*fields), end

    public = outcome(lambda: decode(body, hv))
    same(public, outcome(active), f"public {what} vs its implementation")
    if public[0] == "ok":
        header, _ = decode(body, hv)
        again = encode(header, hv)
        back, end = decode(again, hv)
        same(canon(back), canon(header), f"{what}: round trip")
        same(end, len(again), f"{what}: re-encoded length")


# ---------------------------------------------------------------------------
# messages

_i16x2 = struct.Struct(">hh")
API_KEYS = sorted(APIS)
#: the schemas that are neither requests nor responses (consumer protocol, KRaft records...)
DATA_CLASSES = [n for n in sorted(CLASSES) if get(n).NAME == n and get(n).KIND not in ("request", "response")]


def _round_trip_message(cls, msg, version, what):
    """Invariant 3 for a message body: encode, decode, compare, encode again."""
    data = msg.encode(version)
    back, end = cls.decode(data, version, with_end=True)
    same(end, len(data), f"{what}: re-encoded body length")
    same(canon(back), canon(msg), f"{what}: round trip")
    same(back.encode(version), data, f"{what}: second encoding")


def check_request(data: bytes) -> None:
    """decode_request on arbitrary bytes (the api key and version are the frame's own)."""
    public = outcome(lambda: decode_request(data, with_end=True))
    if len(data) >= 4:
        key, version = _i16x2.unpack_from(data, 0)
        if key in APIS and request_class(key).supports(version):
            cls = request_class(key)
            hv = request_header_version(key, version)
            what = f"{cls.NAME} v{version}"
            results = [outcome(lambda: impl.decode_request(data, cls, version, hv)) for impl in IMPLS]
            agree(results, what)
            same(public, results[IMPLS.index(ACTIVE)], f"{what}: public decode_request vs its implementation")
    if public[0] != "ok":
        return
    header, msg, end = decode_request(data, with_end=True)
    what = f"{type(msg).NAME} v{header.api_version}"
    # canonical: Kafka's form (the faithful form keeps trailing bytes, which this length check excludes)
    frame = encode_request(msg, header.api_version, header.correlation_id, header.client_id,
                           header.unknown_tagged_fields, canonical=True)
    header2, msg2, end2 = decode_request(frame[4:], with_end=True)
    same(end2, len(frame) - 4, f"{what}: re-encoded frame length")
    same(canon((header2, msg2)), canon((header, msg)), f"{what}: round trip")
    _round_trip_message(type(msg), msg, header.api_version, what)


def check_response(data: bytes) -> None:
    """decode_response for every api key and version: the first two bytes choose them."""
    if len(data) < 2:
        return
    key = API_KEYS[data[0] % len(API_KEYS)]
    cls = response_class(key)
    version = data[1] % (cls.HIGHEST_VERSION + 2)  # one past the newest: the unsupported path too
    frame = data[2:]
    public = outcome(lambda: decode_response(frame, key, version, with_end=True))
    what = f"{cls.NAME} v{version}"
    if cls.supports(version):
        hv = response_header_version(key, version)
        results = [outcome(lambda: impl.decode_response(frame, cls, version, hv)) for impl in IMPLS]
        agree(results, what)
        same(public, results[IMPLS.index(ACTIVE)], f"{what}: public decode_response vs its implementation")
    if public[0] != "ok":
        return
    header, msg, end = decode_response(frame, key, version, with_end=True)
    again = encode_response(msg, version, header.correlation_id, header.unknown_tagged_fields, canonical=True)
    header2, msg2, end2 = decode_response(again[4:], key, version, with_end=True)
    same(end2, len(again) - 4, f"{what}: re-encoded frame length")
    same(canon((header2, msg2)), canon((header, msg)), f"{what}: round trip")
    _round_trip_message(cls, msg, version, what)


def check_messages(data: bytes) -> None:
    """``Cls.decode`` for the schemas that are not requests or responses (consumer protocol, KRaft data...)."""
    if len(data) < 2:
        return
    cls = get(DATA_CLASSES[data[0] % len(DATA_CLASSES)])
    version = data[1] % (cls.HIGHEST_VERSION + 2)
    body = data[2:]
    public = outcome(lambda: cls.decode(body, version, with_end=True))
    what = f"{cls.NAME} v{version}"
    if cls.supports(version):
        results = [outcome(lambda: impl.decode(cls, body, version)) for impl in IMPLS]
        agree(results, what)
        same(public, results[IMPLS.index(ACTIVE)], f"{what}: public decode vs its implementation")
    if public[0] == "ok":
        _round_trip_message(cls, cls.decode(body, version), version, what)


# ---------------------------------------------------------------------------
# record batches

RECORD_LIMITS = (1 << 12, 1 << 16, 1 << 20, records.DEFAULT_MAX_DECOMPRESSED_SIZE)


def _record(r):
    """What survives an encode: offset, timestamp, key, value, headers (attributes are always written 0)."""
    def plain(v):
        return None if v is None else bytes(v)

    return r.offset, r.timestamp, plain(r.key), plain(r.value), tuple((k, plain(v)) for k, v in r.headers)


def _round_trip_batch(b, what):
    """Invariant 3 for one decoded v2 batch: encode its records with its header, decode, compare."""
    again = records.encode(list(b.records), magic=2, codec=b.codec, base_offset=b.base_offset,
                           partition_leader_epoch=b.partition_leader_epoch, producer_id=b.producer_id,
                           producer_epoch=b.producer_epoch, base_sequence=b.base_sequence,
                           transactional=b.is_transactional, control=b.is_control, timestamp_type=b.timestamp_type,
                           max_timestamp=b.max_timestamp, delete_horizon=b.has_delete_horizon)
    [back] = records.decode(again, max_decompressed_size=1 << 30)
    same([_record(r) for r in back.records], [_record(r) for r in b.records], f"{what}: records round trip")
    same((back.base_offset, back.producer_id, back.producer_epoch, back.base_sequence, back.codec,
          back.timestamp_type, back.is_transactional, back.is_control, back.partition_leader_epoch),
         (b.base_offset, b.producer_id, b.producer_epoch, b.base_sequence, b.codec,
          b.timestamp_type, b.is_transactional, b.is_control, b.partition_leader_epoch), f"{what}: header round trip")


def check_records(data: bytes) -> None:
    """records.decode (every magic and codec): the first byte chooses CRC check, copy and the decompression limit."""
    if not data:
        return
    sel, blob = data[0], data[1:]
    check_crc, copy, limit = bool(sel & 1), bool(sel & 2), RECORD_LIMITS[(sel >> 2) & 3]
    what = f"records check_crc={check_crc} copy={copy} limit={limit}"

    def run(mod):
        return [batch_tuple(b) for b in mod.decode_record_batches(blob, check_crc, limit, copy)]

    results = [outcome(lambda: run(impl.records)) for impl in IMPLS]
    agree(results, what)
    public = outcome(lambda: [batch_tuple(b) for b in records.decode(blob, check_crc=check_crc,
                                                                     max_decompressed_size=limit, copy=copy)])
    same(public, results[IMPLS.index(ACTIVE)], f"public {what} vs its implementation")
    if public[0] != "ok":
        return
    for b in records.decode(blob, check_crc=check_crc, max_decompressed_size=limit, copy=copy):
        # (the encoder writes no empty batch, which Kafka's log cleaner can leave behind)
        if not b.truncated and b.magic == 2 and b.records:
            _round_trip_batch(b, f"{what}, batch at {b.offset}")


#: (max_records_per_batch, max_headers_per_record, max_headers_per_batch) the
#: packed-records target picks from (4, 2, 3: the batch cap below records x headers)
RECORD_CAPS = ((records.DEFAULT_MAX_RECORDS_PER_BATCH, records.DEFAULT_MAX_HEADERS_PER_RECORD,
                records.DEFAULT_MAX_HEADERS_PER_BATCH), (4, 2, 3), (1, 0, 0), (None, None, None))
#: (max_records_per_call, max_headers_per_call, max_decompressed_per_call) and
#: how many times the batch is repeated in the blob (issue 22: the caps count
#: across batches, so the small ones are met by the repeats)
CALL_CAPS = (((records.DEFAULT_MAX_RECORDS_PER_CALL, records.DEFAULT_MAX_HEADERS_PER_CALL,
               records.DEFAULT_MAX_DECOMPRESSED_PER_CALL), 1), ((9, 5, 300), 3), ((0, 0, 0), 2),
             ((None, None, None), 3))


def packed_batch(data: bytes) -> tuple[bytes, dict]:
    """A batch with a valid CRC around records bytes from the fuzzer, compressed
    with any codec, so that the fuzzer reaches the record walkers behind
    decompression (a CRC it would never guess stops a mutated compressed batch
    at the header).  Byte 0: codec (low 3 bits, mod 5), legacy magic 1
    wrapper (bit 3; codecs 1-3 then), the caps (bits 4-5), the per-call caps
    and how many copies of the batch the blob holds (bits 6-7); bytes 1-2: the
    v2 record count; then the records region (v2) or inner message set
    (legacy) → (blob, decoder keywords)."""
    from .legacy_sets import message
    from .records_util import raw_v2_batch

    sel, count, body = data[0], int.from_bytes(data[1:3], "big"), data[3:]
    codec = (sel & 7) % 5
    max_records, max_headers, max_batch_headers = RECORD_CAPS[(sel >> 4) & 3]
    (call_records, call_headers, call_bytes), copies = CALL_CAPS[sel >> 6]
    caps = {"max_records_per_batch": max_records, "max_headers_per_record": max_headers,
            "max_headers_per_batch": max_batch_headers, "max_records_per_call": call_records,
            "max_headers_per_call": call_headers, "max_decompressed_per_call": call_bytes}
    if sel & 8:
        codec = codec % 3 + 1
        value = bytes(_compression.compress(codec, body, 1, None))
        # the wrapper's offset from bytes 1-2 too: magic 1 inner offsets are relative to it
        return message(count, 1, codec, 1_700_000_000_000, None, value) * copies, caps
    return raw_v2_batch(body, count, records.CODEC_NAMES[codec]) * copies, caps


def check_packed_records(data: bytes) -> None:
    """records.decode and arrow.records, compiled and twin, on a packed batch
    (see packed_batch): the same records or the same error, caps included."""
    if len(data) < 3:
        return
    blob, caps = packed_batch(data)
    what = f"packed records {caps}"

    def run(mod):
        return [batch_tuple(b) for b in mod.decode_record_batches(blob, True, 1 << 20, True, *caps.values())]

    results = [outcome(lambda: run(impl.records)) for impl in IMPLS]
    agree(results, what)
    public = outcome(lambda: [batch_tuple(b) for b in records.decode(blob, max_decompressed_size=1 << 20, **caps)])
    same(public, results[IMPLS.index(ACTIVE)], f"public {what} vs its implementation")
    arr = pa.array([blob], pa.large_binary())
    columns = frozenset(arrow.RECORDS_SCHEMA.names)
    per_batch, per_call = list(caps.values())[:3], list(caps.values())[3:]
    out = _arrow_agree("packed records", lambda impl: arrow._records_table(
        impl.arrow_records, arr, 1, None, None, columns, True, 1 << 20, False, *per_batch,
        budget=CallBudget(*call_caps(*per_call))))
    same(as_rows(out), expected_records([blob], True, max_decompressed_size=1 << 20, **caps),
         f"arrow {what} vs objects")


# ---------------------------------------------------------------------------
# the write side: both engines take and refuse the same values (issue 22, row 9)

_ENCODE_PAIRS = None


def encode_pairs() -> list:
    """(class name, version) of every message the encode target picks from (bytes 0-1)."""
    global _ENCODE_PAIRS
    if _ENCODE_PAIRS is None:
        names = sorted(n for n in CLASSES if get(n).NAME == n)
        _ENCODE_PAIRS = [(n, v) for n in names for v in range(get(n).LOWEST_VERSION, get(n).HIGHEST_VERSION + 1)
                         if get(n).supports(v)]
    return _ENCODE_PAIRS


def _hostile_values():
    import array

    base = bytes(range(40))
    return [
        None, True, 1.5, float("nan"), "text", 7, -1, 2**31, 2**63, -2**63 - 1, 2**64, np.int64(5), np.int32(-3),
        np.float64(2.0), b"", base, bytearray(base), memoryview(base), memoryview(base)[::3],
        memoryview(base).cast("I"), np.frombuffer(base, np.uint8), np.frombuffer(base, np.uint8)[::2],
        np.frombuffer(base, np.int32), np.asfortranarray(np.frombuffer(base, np.uint8).reshape(4, 10)),
        array.array("B", base), array.array("q", base), [base, memoryview(base)[1::2]], (b"a", b"b"), [1, 2],
        [], (), {"k": 1}, object(),
    ]


HOSTILE_VALUES = _hostile_values()


def _slots(obj, out, depth=0):
    """Every (object, attribute) of a message tree, nested structs and list items included."""
    for f in type(obj)._FIELDS:
        out.append((obj, f.attr))
        v = getattr(obj, f.attr, None)
        if isinstance(v, list) and depth < 4:
            for item in v:
                if hasattr(type(item), "_FIELDS"):
                    _slots(item, out, depth + 1)
        elif hasattr(type(v), "_FIELDS") and depth < 4:
            _slots(v, out, depth + 1)
    return out


def check_encode(data: bytes) -> None:
    """A message of any class and version (bytes 0-1), seeded (bytes 2-3), with
    some fields set to hostile values (then pairs of bytes: which field, which
    value; a value may land in a list too), encoded by both engines as bytes,
    as parts and by the sizing pass; and records.encode with those values as
    keys, values, headers, timestamps and offsets: the same bytes or the same
    error (class and message) everywhere, never another exception."""
    from .message_values import random_message

    if len(data) < 4:
        return
    pairs = encode_pairs()
    name, version = pairs[int.from_bytes(data[:2], "big") % len(pairs)]
    msg = random_message(get(name), version, random.Random(int.from_bytes(data[2:4], "big")))
    slots = _slots(msg, [])
    picks = [(data[i], data[i + 1]) for i in range(4, len(data) - 1, 2)][:8]
    values = []
    for which, what in picks:
        obj, attr = slots[which % len(slots)]
        value = HOSTILE_VALUES[what % len(HOSTILE_VALUES)]
        values.append(value)
        current = getattr(obj, attr)
        if what & 0x80 and isinstance(current, list) and current:
            current[which % len(current)] = value
        else:
            try:
                setattr(obj, attr, value)
            except (TypeError, ValueError, AttributeError):
                pass
    what = f"encode {name} v{version}"
    for mode in ("bytes", "parts", "size"):
        agree([outcome(lambda impl=impl: impl.encode(msg, version, mode)) for impl in IMPLS], f"{what} as {mode}")
    for i, v in enumerate(values[:3]):
        batches = [[(v, b"v")], [(b"k", v)], [(b"k", b"v", [("h", v)])], [(b"k", b"v", [(v, b"1")])],
                   [(b"k", b"v", None, v)]]
        for recs in batches:
            for magic in (2, 1):
                agree([outcome(lambda impl=impl: impl.records.encode_record_batch(recs, magic, 0, None, now=0))
                       for impl in IMPLS], f"records.encode magic {magic} with hostile value {i}")
        agree([outcome(lambda impl=impl: impl.records.encode_record_batch([(b"k", b"v")], 2, 0, v, now=0))
               for impl in IMPLS], f"records.encode base offset {i}")


# ---------------------------------------------------------------------------
# the middle of a connection (issue 22, rows 6-8)

#: max_outstanding values the proxy target picks from
PROXY_OUTSTANDING = (None, 1, 3, 10_000)


def check_proxy(data: bytes) -> None:
    """ProxyConnection fed two streams in chunks, both directions interleaved:
    it never raises, never has more than ``max_outstanding`` requests waiting,
    and once both directions are finished every byte fed has come back once,
    in order (held requests, streamed pieces and cut frames included).  Byte
    0: max_outstanding (bits 0-1), decode (bit 2), a memory budget (bit 3),
    the chunk size (bits 4-7); bytes 1-2: how many of the rest the client sends."""
    from kafkaproto.proxy import MemoryBudget, ProxyConnection

    if len(data) < 3:
        return
    sel, split = data[0], int.from_bytes(data[1:3], "big")
    body = data[3:]
    up, down = body[:split], body[split:]
    limit = PROXY_OUTSTANDING[sel & 3]
    proxy = ProxyConnection(decode=bool(sel & 4), max_outstanding=limit,
                            budget=MemoryBudget(4096, 64) if sel & 8 else None)
    step = (sel >> 4) + 1
    got = ([], [])
    for i in range(0, max(len(up), len(down)) + step, step):
        got[0].extend(proxy.from_client(up[i:i + step]))
        got[1].extend(proxy.from_broker(down[i:i + step]))
        if proxy.paused():
            got[0].extend(proxy.from_client(b""))
        assert limit is None or len(proxy.pending) <= limit + 1, (limit, len(proxy.pending))  # (+1: a streamed head)
    got[0].extend(proxy.finish(0))
    got[1].extend(proxy.finish(1))
    proxy.close()
    for events, stream, side in ((got[0], up, "client"), (got[1], down, "broker")):
        back = b"".join(bytes(p) for ev in events for p in ev.parts())
        same(back, stream, f"proxy: the {side}'s bytes come back once, in order")
    assert proxy.budget is None or proxy.budget.used == 0, proxy.budget


# ---------------------------------------------------------------------------
# captures: pcap, pcapng and raw frame files, through read_frames and dissect

_CAPTURE_FILE = os.path.join("/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir(),
                             f"kafkaproto-fuzz-{os.getpid()}.cap")


def _capture_outcome(path):
    acc = Accounting()
    rows = []
    try:
        for d in dissect(read_frames(path, acc=acc), acc):
            f = d.frame
            rows.append((f.ts, f.conn.id, f.conn.client, f.conn.server, f.direction, f.offset, f.frame, f.api_key,
                         f.api_version, f.correlation_id, f.request_ts, f.status, d.error is None))
            if d.message is not None:
                canon(d.message)
    except CaptureFormatError as exc:
        return ("not a capture", str(exc)), acc
    return rows, acc


def _twin_walker():
    """The walker's units swapped for their twins (reassembly, judge, sink);
    returns what to put back."""
    saved = (_streams._scan, _streams._judge, _streams._sink, list(_streams._CHECKS))
    _streams._scan, _streams._judge, _streams._sink = _scan_twin, _judge_twin, _sink_twin
    _streams._CHECKS[:] = []
    return saved


def _compiled_walker(saved) -> None:
    _streams._scan, _streams._judge, _streams._sink, checks = saved
    _streams._CHECKS[:] = checks


def check_capture(data: bytes) -> None:
    """A capture file: read_frames + dissect.  Only CaptureFormatError (not a
    capture at all) or KafkaProtocolError may escape, and the accounting must
    add up.  With the compiled core, its walker and the twin's (reassembly,
    judge and sink) must give the same frames and accounting.  Tap tables
    (Arrow/Parquet) are pyarrow's to parse: left out."""
    if is_table_file(data[:8]):
        return
    with open(_CAPTURE_FILE, "wb") as f:
        f.write(data)
    try:
        rows, acc = _capture_outcome(_CAPTURE_FILE)
        if _streams._scan.COMPILED:
            saved = _twin_walker()
            try:
                twin_rows, twin_acc = _capture_outcome(_CAPTURE_FILE)
            finally:
                _compiled_walker(saved)
            same((rows, acc.to_dict()), (twin_rows, twin_acc.to_dict()), "capture: compiled walker vs the twin's")
    finally:
        os.unlink(_CAPTURE_FILE)
    if isinstance(rows, list):
        acc.check()


# ---------------------------------------------------------------------------
# Arrow: columns of frames and records blobs

ARROW_TYPES = (pa.large_binary(), pa.binary(), pa.binary_view())


def _rows(data):
    """Rows from the input: each a 2-byte big-endian length (0xffff: a null row), then its bytes."""
    rows, pos = [], 0
    while pos + 2 <= len(data):
        n = int.from_bytes(data[pos:pos + 2], "big")
        pos += 2
        if n == 0xFFFF:
            rows.append(None)
            continue
        rows.append(data[pos:pos + n])
        pos += n
    return rows


def _arrow_agree(what, fn):
    """The compiled loops and the twin build equal arrays (invariant 2); returns the active one's."""
    results = []
    for impl in IMPLS:
        got = fn(impl)
        results.append(got)
        if len(results) > 1 and not got.equals(results[0]):
            raise AssertionError(f"arrow {what}: {IMPLS[0].name} and {impl.name} disagree:\n"
                                 f"  {results[0].to_pylist()}\n  {got.to_pylist()}")
    return results[IMPLS.index(ACTIVE)]


def check_arrow(data: bytes) -> None:
    """The Arrow decoders on a column of rows: byte 0 chooses the decoder and the
    column type, byte 1 its parameters (limit, api key...), then the rows.
    Checks: nothing raises, compiled and twin build equal arrays, and every row
    is what the object decoders say (value, or error text), so rows in = rows
    decoded + rows with an error."""
    if len(data) < 2:
        return
    sel, aux, rows = data[0], data[1], _rows(data[2:])
    typ = ARROW_TYPES[(sel >> 3) % 3]
    arr = pa.array(rows, typ)
    decoder = sel % 5
    if decoder == 0:  # split_frames: the rows are consecutive pieces of one stream
        limit = FRAME_LIMITS[aux & 7]
        zero_copy = bool(aux & 8) and 0 <= limit <= 1 << 30
        got = [arrow._split(impl.arrow_frames, arr, limit, zero_copy) for impl in IMPLS]
        for other in got[1:]:
            same((other.frames.to_pylist(), other.tail, other.error),
                 (got[0].frames.to_pylist(), got[0].tail, got[0].error), "arrow split_frames: twins")
        stream = b"".join(r for r in rows if r is not None)
        public = outcome(lambda: frames.split_frames(stream, limit))
        split = got[IMPLS.index(ACTIVE)]
        if public[0] == "ok":
            frame_list, consumed = public[1]
            same((split.frames.to_pylist(), split.tail, split.error), (list(frame_list), stream[consumed:], None),
                 "arrow split_frames vs split_frames")
        else:  # the object splitter raises at the bad size; the Arrow one stops there and says why
            same(split.error, public[2], "arrow split_frames error vs split_frames")
    elif decoder == 1:
        out = _arrow_agree("request_headers", lambda impl: arrow._per_chunk(
            arr, lambda a, kind: arrow._request_headers(impl.arrow_headers, a, kind)))
        same(out.to_pylist(), [expected_request_header(f) for f in rows], "arrow request_headers vs objects")
    elif decoder == 2:
        key, version = API_KEYS[aux % len(API_KEYS)], aux >> 4
        n = len(rows)
        keys, vers, ok = np.full(n, key, np.int32), np.full(n, version, np.int32), np.ones(n, np.uint8)
        _arrow_agree("response_headers", lambda impl: arrow._per_chunk(
            arr, lambda a, kind: arrow._response_headers(impl.arrow_headers, a, kind, keys, ok, vers, ok)))
    elif decoder == 3:
        kind = "request" if sel & 0x40 else "response"
        key = API_KEYS[aux % len(API_KEYS)]
        cls = request_class(key) if kind == "request" else response_class(key)
        version = (sel >> 7) * 16 + (aux >> 4) if kind == "response" else None
        vers = np.full(len(rows), version or 0, np.int32)
        ok = np.full(len(rows), cls.supports(version) if version is not None else 1, np.uint8)
        rvers, rok = (vers, ok) if kind == "response" else (None, None)
        out = _arrow_agree(f"messages {cls.NAME}", lambda impl: arrow._per_chunk(
            arr, lambda a, k: arrow._message_column(impl.arrow_messages, a, k, cls, rvers, rok)))
        for frame, row in zip(rows, out.to_pylist()):
            if kind == "request":
                want = expected_request(cls, frame)
                if want is None:  # a frame of another API: an error row
                    want = null_row(cls, row["error"])
                    assert row["error"], row
            elif frame is None or not cls.supports(version):
                want = null_row(cls, row["error"])
                assert row["error"], row
            else:
                want = expected_response(cls, frame, version)
            same(canon(row), canon(want), f"arrow messages {cls.NAME} vs objects")
    else:
        check_crc, limit = bool(aux & 1), RECORD_LIMITS[(aux >> 1) & 3]
        columns = frozenset(arrow.RECORDS_SCHEMA.names)
        out = _arrow_agree("records", lambda impl: arrow._records_table(impl.arrow_records, arr, arrow._IN_KIND[typ],
                                                                        None, None, columns, check_crc, limit))
        if limit == records.DEFAULT_MAX_DECOMPRESSED_SIZE:
            same(as_rows(out), expected_records(rows, check_crc), "arrow records vs objects")


TARGETS = {
    "frames": check_frames,
    "headers": check_headers,
    "request": check_request,
    "response": check_response,
    "messages": check_messages,
    "records": check_records,
    "records_packed": check_packed_records,
    "capture": check_capture,
    "arrow": check_arrow,
    "proxy": check_proxy,
    "encode": check_encode,
}
