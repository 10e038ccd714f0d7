"""The write side for proxies and brokers: frames as parts (records by
reference) and into caller buffers, zero-copy decode, faithful re-encoding,
the pairing rule (acks=0 Produce), the sans-IO proxy, and send_parts over
real sockets.  Runs against the compiled core and the twin alike."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import struct
import threading
import uuid
from pathlib import Path

import numpy as np
import pytest

from kafkaproto import FrameReader, FrameSizeError
from kafkaproto.capture import read_frames
from kafkaproto.errors import EncodeError, KafkaProtocolError
from kafkaproto.messages import (
    APIS,
    ApiVersionsRequest,
    ApiVersionsResponse,
    FetchResponse,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    ProduceResponse,
    PushTelemetryRequest,
    response_class,
)
from kafkaproto.net import send_parts, write_parts
from kafkaproto.protocol import (
    Connection,
    PendingRequests,
    RequestRef,
    decode_request,
    decode_response,
    encode_request,
    encode_request_into,
    encode_request_parts,
    encode_response,
    encode_response_into,
    encode_response_parts,
    expects_response,
    produce_acks,
    read_request,
    read_response,
    request_expects_response,
    request_size,
    response_size,
)
from kafkaproto.proxy import ProxyConnection, ProxyRequest, ProxyResponse, Unframed, rewrite_addresses

ROOT = Path(__file__).resolve().parent.parent
P = ProduceRequest
F = FetchResponse


def produce(blobs, acks=-1, topic="t"):
    return P(acks=acks, timeout_ms=1000, topic_data=[P.TopicProduceData(
        name=topic, partition_data=[P.PartitionProduceData(index=i, records=b) for i, b in enumerate(blobs)])])


def shares(a, b) -> bool:
    return np.shares_memory(np.frombuffer(a, np.uint8), np.frombuffer(b, np.uint8))


def joined(parts) -> bytes:
    return b"".join(bytes(p) for p in parts)


# --------------------------------------------------------------------------
# encoding to parts


@pytest.mark.parametrize("version", [0, 3, 7, 8, 9, 11, 12, 13])
def test_request_parts_keep_every_records_blob_by_identity(version):
    blobs = [os.urandom(5000), bytearray(os.urandom(70)), memoryview(os.urandom(300_000))]
    msg = produce(blobs)
    parts = encode_request_parts(msg, version, 7, "client")
    assert len(parts) <= 2 * len(blobs) + 1
    for blob in blobs:
        assert sum(p is blob for p in parts) == 1  # the caller's own object, not a copy
    assert joined(parts) == encode_request(msg, version, 7, "client")
    assert len(joined(parts)) == request_size(msg, version, "client")
    header, back = decode_request(joined(parts)[4:])
    assert header.correlation_id == 7
    assert [bytes(p.records) for p in back.topic_data[0].partition_data] == [bytes(b) for b in blobs]


@pytest.mark.parametrize("version", [4, 11, 12, 16, 17])
def test_response_parts_keep_fetched_records_by_identity(version):
    blobs = [os.urandom(1000), os.urandom(2000)]
    topic = {"topic_id": uuid.uuid4()} if version >= 13 else {"topic": "t"}
    msg = F(responses=[F.FetchableTopicResponse(**topic, partitions=[
        F.PartitionData(partition_index=i, high_watermark=10, records=b) for i, b in enumerate(blobs)])])
    parts = encode_response_parts(msg, version, 3)
    assert len(parts) <= 5 and [p for p in parts if p is blobs[0]] and [p for p in parts if p is blobs[1]]
    assert joined(parts) == encode_response(msg, version, 3) and len(joined(parts)) == response_size(msg, version)


def test_zero_copy_bytes_fields_are_parts_too():
    metrics = os.urandom(10_000)
    msg = PushTelemetryRequest(client_instance_id=uuid.uuid4(), subscription_id=1, metrics=metrics)
    parts = encode_request_parts(msg, 0, 1, "c")
    assert len(parts) == 3 and parts[1] is metrics
    assert joined(parts) == encode_request(msg, 0, 1, "c")


def test_a_message_without_blobs_is_one_part_and_empty_blobs_are_not_cut():
    meta = MetadataResponse(brokers=[MetadataResponse.MetadataResponseBroker(node_id=1, host="h", port=9092)])
    parts = encode_response_parts(meta, 12, 5)
    assert len(parts) == 1 and bytes(parts[0]) == encode_response(meta, 12, 5)
    for records in (b"", None):
        msg = produce([records])
        parts = encode_request_parts(msg, 9, 1, None)
        assert len(parts) == 1 and joined(parts) == encode_request(msg, 9, 1, None)


# --------------------------------------------------------------------------
# encoding into a caller's buffer


def test_encode_into_a_bytearray_resizes_it_from_the_offset():
    msg = produce([os.urandom(100)])
    whole = encode_request(msg, 9, 4, "c")
    buf = bytearray(b"keep" + b"x" * 1000)
    end = encode_request_into(buf, msg, 9, 4, "c", offset=4)
    assert end == len(buf) == 4 + len(whole) and bytes(buf) == b"keep" + whole
    buf2 = bytearray()
    meta = MetadataResponse(cluster_id="c")
    assert encode_response_into(buf2, meta, 12, 9) == len(encode_response(meta, 12, 9))
    assert bytes(buf2) == encode_response(meta, 12, 9)


def test_encode_into_a_fixed_buffer_needs_the_room():
    msg = produce([os.urandom(100)])
    whole = encode_request(msg, 9, 4, "c")
    arr = np.zeros(len(whole) + 10, np.uint8)
    assert encode_request_into(arr, msg, 9, 4, "c", offset=10) == len(arr)
    assert arr[10:].tobytes() == whole
    small = np.zeros(len(whole) - 1, np.uint8)
    with pytest.raises(EncodeError, match="room for"):
        encode_request_into(small, msg, 9, 4, "c")
    with pytest.raises(TypeError, match="writable"):
        encode_request_into(b"\0" * 1000, msg, 9, 4, "c")


# --------------------------------------------------------------------------
# zero-copy decode


def test_zero_copy_decode_gives_views_of_the_frame():
    blobs = [os.urandom(3000), os.urandom(10)]
    frame = encode_request(produce(blobs), 9, 1, "c")
    body = memoryview(frame)[4:]
    _, copied = decode_request(body)
    _, viewed = decode_request(body, zero_copy=True)
    assert copied == viewed
    for p, blob in zip(viewed.topic_data[0].partition_data, blobs):
        assert isinstance(p.records, memoryview) and shares(p.records, frame) and bytes(p.records) == blob
    for p in copied.topic_data[0].partition_data:
        assert type(p.records) is bytes and not shares(p.records, frame)
    # a response's records, and a zeroCopy bytes field
    fetch = F(responses=[F.FetchableTopicResponse(topic="t", partitions=[F.PartitionData(records=blobs[0])])])
    fr = encode_response(fetch, 11, 2)
    _, got = decode_response(memoryview(fr)[4:], 1, 11, zero_copy=True)
    assert shares(got.responses[0].partitions[0].records, fr)
    push = encode_request(PushTelemetryRequest(metrics=blobs[0]), 0, 1, None)
    _, got = decode_request(memoryview(push)[4:], zero_copy=True)
    assert shares(got.metrics, push) and bytes(got.metrics) == blobs[0]
    # a view is forwarded as a part without a copy
    parts = encode_request_parts(viewed, 9, 1, "c")
    assert joined(parts) == frame and any(p is viewed.topic_data[0].partition_data[0].records for p in parts)


# --------------------------------------------------------------------------
# faithful re-encoding


def _with_tags(body: bytes, section: bytes) -> bytes:
    """A flexible top-level body whose (empty) tag section is replaced."""
    assert body.endswith(b"\x00")
    return body[:-1] + section


def test_known_tags_at_their_defaults_and_their_wire_order_come_back():
    msg = ApiVersionsResponse(error_code=0, api_keys=[ApiVersionsResponse.ApiVersion(api_key=3, max_version=12)])
    canonical = msg.encode(3)
    # ZkMigrationReady (3) = false, then FinalizedFeaturesEpoch (1) = -1: both defaults, descending
    wire = _with_tags(canonical, b"\x02" + b"\x03\x01\x00" + b"\x01\x08" + b"\xff" * 8)
    got = ApiVersionsResponse.decode(wire, 3)
    assert got == msg  # the wire's form is not part of the value
    assert got.encode(3) == wire
    assert got.encode(3, canonical=True) == canonical
    got.error_code = 35  # a changed field is written as changed, the rest as it was
    assert got.encode(3) == wire[:0] + struct.pack(">h", 35) + wire[2:]
    got.zk_migration_ready = True
    assert got.encode(3).endswith(b"\x02\x03\x01\x01\x01\x08" + b"\xff" * 8)
    got.finalized_features_epoch = 5  # still in the wire's order
    assert got.encode(3).endswith(b"\x03\x01\x01\x01\x08" + struct.pack(">q", 5))


def test_a_tag_set_later_goes_where_ascending_order_puts_it():
    msg = ApiVersionsResponse()
    wire = _with_tags(msg.encode(3), b"\x01\x03\x01\x00")
    got = ApiVersionsResponse.decode(wire, 3)
    got.finalized_features_epoch = 9
    out = got.encode(3)
    assert out.endswith(b"\x02\x01\x08" + struct.pack(">q", 9) + b"\x03\x01\x00")


def test_trailing_bytes_after_a_request_body_come_back():
    frame = encode_request(MetadataRequest(topics=None), 12, 5, "c") + b"xyz"
    body = struct.pack(">i", len(frame) - 4) + frame[4:]
    header, msg = decode_request(body[4:])
    assert encode_request(msg, 12, 5, "c") == body
    assert encode_request(msg, 12, 5, "c", canonical=True) == encode_request(MetadataRequest(topics=None), 12, 5, "c")
    assert joined(encode_request_parts(msg, 12, 5, "c")) == body


def test_unknown_tags_out_of_order_come_back():
    data = (ROOT / "tests/data/regressions/request-unknown-tags-out-of-order.bin").read_bytes()
    header, msg = decode_request(data)
    again = encode_request(msg, header.api_version, header.correlation_id, header.client_id,
                           header.unknown_tagged_fields)
    assert again[4:] == data


def _committed_frames():
    """(what, frame without its size prefix, api key, version, is_request) of every
    committed capture, sample and corpus."""
    for path in [ROOT / "samples/capture/kafka.pcap", ROOT / "samples/capture/tap-tansu",
                 ROOT / "samples/capture/tap-mock", ROOT / "samples/capture/kafka44.pcap",
                 ROOT / "samples/capture/tap-kafka44"]:
        for f in read_frames(path):
            if f.api_key is not None:
                yield path.name, bytes(f.frame), f.api_key, f.api_version, f.direction == "request"
    raw = (ROOT / "samples/requests.bin").read_bytes()
    for frame in FrameReader().feed(raw):
        yield "requests.bin", frame, None, None, True
    for p in sorted((ROOT / "fuzz/corpus/request").iterdir()):
        yield p.name, p.read_bytes(), None, None, True
    keys = sorted(APIS)
    for p in sorted((ROOT / "fuzz/corpus/response").iterdir()):
        d = p.read_bytes()
        if len(d) >= 2:
            key = keys[d[0] % len(keys)]
            yield p.name, d[2:], key, d[1] % (response_class(key).HIGHEST_VERSION + 2), False
    for p in sorted((ROOT / "tests/data/regressions").glob("request-*.bin")):
        yield p.name, p.read_bytes(), None, None, True


def test_every_committed_frame_re_encodes_byte_for_byte():
    decoded = same = 0
    differ = []
    for what, frame, key, version, is_request in _committed_frames():
        try:
            if is_request:
                header, msg = decode_request(frame)
                again = encode_request(msg, header.api_version, header.correlation_id, header.client_id,
                                       header.unknown_tagged_fields)
            else:
                header, msg = decode_response(frame, key, version)
                again = encode_response(msg, version, header.correlation_id, header.unknown_tagged_fields)
        except KafkaProtocolError:
            continue  # undecodable frames of the corpora (they are there to fail)
        decoded += 1
        if again[4:] == frame:
            same += 1
        else:
            differ.append((what, type(msg).__name__))
    assert decoded > 4000
    assert same == decoded, f"{len(differ)} of {decoded} differ: {differ[:10]}"


def test_received_frames_re_encode_as_they_came():
    """ReceivedRequest.encode() and ReceivedResponse.encode() on every committed
    frame that decodes give back the frame's parts byte for byte (header tags and
    bytes after the body included)."""
    seen = {"request": 0, "response": 0}
    for _what, frame, key, version, is_request in _committed_frames():
        if is_request:
            ev = read_request(frame)
        else:
            cid = struct.unpack_from(">i", frame)[0] if len(frame) >= 4 else 0
            ev = read_response(frame, 0, RequestRef(key, version, cid))
        if ev.message is None:
            with pytest.raises(ValueError, match="no decoded"):
                ev.encode()
            continue
        assert joined(ev.encode()) == joined(ev.parts()), _what
        seen["request" if is_request else "response"] += 1
    assert seen["request"] > 1000 and seen["response"] > 1000, seen


def test_a_received_request_is_rewritten_without_rebuilding_its_header():
    frame = encode_request(produce([b"r" * 300, b"s" * 20], acks=-1, topic="orders"), 9, 41, "app",
                           [(3, b"hdr")]) + b"tail"
    frame = struct.pack(">i", len(frame) - 4) + frame[4:]
    req = read_request(frame[4:])
    assert req.header.unknown_tagged_fields == ((3, b"hdr"),) and joined(req.encode()) == frame
    req.message.topic_data[0].name = "ORDERS"      # same length: only those bytes change
    out = joined(req.encode())
    assert len(out) == len(frame) and [i for i, (a, b) in enumerate(zip(out, frame)) if a != b] == list(
        range(frame.index(b"orders"), frame.index(b"orders") + 6))
    header, back = decode_request(out[4:])
    assert (header.correlation_id, header.client_id, header.unknown_tagged_fields) == (41, "app", ((3, b"hdr"),))
    assert back.topic_data[0].name == "ORDERS" and out.endswith(b"tail")
    req.header.client_id = "proxied"                # header fields as they are when encode() runs
    header, _ = decode_request(joined(req.encode(canonical=True))[4:])
    assert header.client_id == "proxied" and not joined(req.encode(canonical=True)).endswith(b"tail")
    replaced = joined(req.encode(MetadataRequest(topics=None)))  # another message, same header
    assert decode_request(replaced[4:])[0].correlation_id == 41
    undecoded = read_request(frame[4:], decode=False)
    with pytest.raises(ValueError, match="no decoded request"):
        undecoded.encode()


# --------------------------------------------------------------------------
# the pairing rule


@pytest.mark.parametrize("version", range(0, 14))
def test_produce_acks_from_the_frame(version):
    if not P.supports(version):
        pytest.skip(f"Produce v{version} is not supported")
    for acks in (-1, 0, 1):
        msg = produce([b"x"], acks=acks)
        msg.transactional_id = "tx" if version >= 3 else None
        frame = encode_request(msg, version, 1, "client")[4:]
        assert produce_acks(frame) == acks
        assert request_expects_response(frame) == (acks != 0) == expects_response(msg)
    assert produce_acks(encode_request(MetadataRequest(), 4, 1, None)[4:]) is None
    assert produce_acks(b"\x00\x00\x00") is None


def test_the_connection_does_not_wait_for_an_acks_0_produce():
    conn = Connection(client_id="c")
    conn.send(produce([b"r"], acks=0), 9)
    assert conn.pending == 0
    conn.send(MetadataRequest(topics=None), 12)
    got = conn.receive(encode_response(MetadataResponse(cluster_id="x"), 12, 2))
    assert [(cid, m.cluster_id) for cid, _, m in got] == [(2, "x")]


def test_pending_requests_stay_bounded():
    pending = PendingRequests(max_outstanding=3)
    for cid in range(5):
        pending.add(cid, f"r{cid}")
    assert len(pending) == 3 and pending.dropped == 2 and pending.oldest() == (2, "r2")
    assert pending.pop(4) == "r4" and pending.pop(4) is None


# --------------------------------------------------------------------------
# the proxy


def _conversation():
    requests = [
        encode_request(ApiVersionsRequest(client_software_name="x", client_software_version="1"), 3, 1, "c"),
        encode_request(produce([os.urandom(2000)], acks=0), 9, 2, "c"),
        encode_request(MetadataRequest(topics=None), 12, 3, "c"),
        encode_request(produce([os.urandom(500)], acks=-1), 9, 4, "c"),
    ]
    meta = MetadataResponse(brokers=[MetadataResponse.MetadataResponseBroker(node_id=1, host="broker-1", port=9092),
                                     MetadataResponse.MetadataResponseBroker(node_id=2, host="broker-2", port=9093)],
                            cluster_id="cl")
    responses = [
        encode_response(ApiVersionsResponse(api_keys=[ApiVersionsResponse.ApiVersion(api_key=0, max_version=9)]),
                        3, 1),
        encode_response(meta, 12, 3),
        encode_response(ProduceResponse(), 9, 4),
    ]
    return requests, responses


@pytest.mark.parametrize("chunk", [1, 7, 1 << 16])
def test_the_proxy_pairs_decodes_and_gives_every_byte_back(chunk):
    requests, responses = _conversation()
    proxy = ProxyConnection()
    up, down = b"".join(requests), b"".join(responses)
    req_events = [ev for i in range(0, len(up), chunk) for ev in proxy.from_client(up[i:i + chunk])]
    resp_events = [ev for i in range(0, len(down), chunk) for ev in proxy.from_broker(down[i:i + chunk])]
    assert joined(p for ev in req_events for p in ev.parts()) == up
    assert joined(p for ev in resp_events for p in ev.parts()) == down
    assert all(isinstance(ev, ProxyRequest) for ev in req_events)
    assert [ev.expects_response for ev in req_events] == [True, False, True, True]
    assert [ev.offset for ev in req_events] == [sum(map(len, requests[:i])) for i in range(4)]
    assert req_events[1].message.acks == 0 and req_events[0].client_id == "c"
    assert [(ev.correlation_id, ev.api_key, ev.api_version) for ev in resp_events] == [(1, 18, 3), (3, 3, 12),
                                                                                      (4, 0, 9)]
    assert all(ev.request is req.ref for ev, req in zip(resp_events, [req_events[0], req_events[2], req_events[3]]))
    assert resp_events[0].request.client_id == "c"  # the request's fields, not its frame, wait for the answer
    assert resp_events[1].message.cluster_id == "cl" and len(proxy.pending) == 0


def test_the_proxy_rewrites_an_address_and_nothing_else():
    requests, responses = _conversation()
    proxy = ProxyConnection(decode={3})  # decode Metadata only
    proxy.from_client(b"".join(requests))
    events = proxy.from_broker(b"".join(responses))
    assert events[0].message is None and events[2].message is None
    meta = events[1]
    assert rewrite_addresses(meta.message, 3, lambda h, p: ("tap", 10000 + p) if h == "broker-2" else None)
    out = joined(meta.encode())
    assert out != joined(meta.parts())
    _, back = decode_response(out[4:], 3, 12)
    assert [(b.host, b.port) for b in back.brokers] == [("broker-1", 9092), ("tap", 19093)]
    back.brokers[1].host, back.brokers[1].port = "broker-2", 9093
    assert encode_response(back, 12, 3) == joined(meta.parts())


def test_the_proxy_rewrites_a_request_on_its_way_to_the_broker():
    requests, _ = _conversation()
    proxy = ProxyConnection()
    events = proxy.from_client(b"".join(requests))
    assert [joined(ev.encode()) for ev in events] == requests
    meta = events[2]
    meta.message.topics = [MetadataRequest.MetadataRequestTopic(name="only-this")]
    header, msg = decode_request(joined(meta.encode())[4:])
    assert (header.api_version, header.correlation_id, header.client_id) == (12, 3, "c")
    assert [t.name for t in msg.topics] == ["only-this"]


def test_the_proxy_without_decoding_still_pairs_and_reads_headers():
    requests, responses = _conversation()
    proxy = ProxyConnection(decode=False)
    reqs = proxy.from_client(b"".join(requests))
    resps = proxy.from_broker(b"".join(responses))
    assert all(ev.message is None and ev.error is None for ev in reqs + resps)
    assert [ev.header.client_id for ev in reqs] == ["c"] * 4 and reqs[1].expects_response is False
    assert [ev.api_key for ev in resps] == [18, 3, 0]


def test_bytes_that_stop_framing_come_back_unframed():
    good = encode_request(MetadataRequest(topics=None), 4, 1, "c")
    proxy = ProxyConnection()
    events = proxy.from_client(good + b"GET / HTTP/1.1\r\n")
    assert isinstance(events[0], ProxyRequest) and isinstance(events[1], Unframed)
    assert isinstance(events[1].error, FrameSizeError) and events[1].offset == len(good)
    more = proxy.from_client(b"Host: x\r\n\r\n")
    assert [type(e) for e in more] == [Unframed]
    assert joined(p for ev in events + more for p in ev.parts()) == good + b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
    unpaired = ProxyConnection().from_broker(encode_response(MetadataResponse(), 4, 99))
    assert isinstance(unpaired[0], ProxyResponse) and unpaired[0].request is None and unpaired[0].message is None
    short = ProxyConnection().from_client(b"\x00\x00\x00\x02ab")
    assert short[0].api_key is None and isinstance(short[0].error, KafkaProtocolError)


def test_frame_reader_hands_over_what_came_before_and_after_a_bad_size():
    good = encode_request(MetadataRequest(topics=None), 4, 1, "c")
    reader = FrameReader(max_frame_size=1000)
    with pytest.raises(FrameSizeError) as err:
        reader.feed(good + b"\x7f\x00\x00\x00rest")
    assert err.value.frames == [good[4:]]
    assert reader.unframed() == b"\x7f\x00\x00\x00rest" and reader.unframed() == b""
    with pytest.raises(FrameSizeError) as again:
        reader.feed(b"more")
    assert again.value.frames == []
    # the size prefix arriving in pieces
    reader = FrameReader(max_frame_size=1000)
    assert reader.feed(b"\x7f\x00") == []
    with pytest.raises(FrameSizeError):
        reader.feed(b"\x00\x00tail")
    assert reader.unframed() == b"\x7f\x00\x00\x00tail"


# --------------------------------------------------------------------------
# sending parts


def test_send_parts_survives_partial_writes():
    a, b = socket.socketpair()
    a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    b.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    parts = encode_request_parts(produce([os.urandom(3 << 20), os.urandom(100), os.urandom(1 << 20)]), 9, 1, "c")
    expected = joined(parts)
    got = bytearray()

    def drain():
        while len(got) < len(expected):
            chunk = b.recv(1 << 16)
            if not chunk:
                break
            got.extend(chunk)

    reader = threading.Thread(target=drain)
    reader.start()
    try:
        assert send_parts(a, parts) == len(expected)
    finally:
        reader.join(10)
        a.close()
        b.close()
    assert bytes(got) == expected


def test_write_parts_to_an_asyncio_stream():
    parts = encode_request_parts(produce([os.urandom(200_000)]), 9, 1, "c")
    expected = joined(parts)

    async def main():
        got = asyncio.get_running_loop().create_future()

        async def serve(reader, writer):
            got.set_result(await reader.readexactly(len(expected)))
            writer.close()

        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        _, writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
        await write_parts(writer, parts)
        data = await asyncio.wait_for(got, 10)
        writer.close()
        server.close()
        return data

    assert asyncio.run(main()) == expected


def test_write_parts_waits_while_the_peer_does_not_read():
    # drain() must block once the transport holds more than its high-water mark
    async def main():
        loop = asyncio.get_running_loop()
        release, served = asyncio.Event(), loop.create_future()

        async def serve(reader, writer):
            await release.wait()  # reads nothing
            writer.close()
            served.set_result(None)

        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        _, writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
        part, written = bytes(1 << 20), 0
        with contextlib.suppress(asyncio.TimeoutError):
            while written < 256 << 20:
                await asyncio.wait_for(write_parts(writer, [part]), 0.5)
                written += len(part)
        buffered = writer.transport.get_write_buffer_size()
        release.set()
        await served
        writer.transport.abort()
        server.close()
        return written, buffered

    written, buffered = asyncio.run(main())
    # what the kernel's socket buffers took, plus one part past the high-water mark
    assert written < 64 << 20 and buffered < 8 << 20, (written, buffered)


def test_header_tags_and_parts_compose():
    parts = encode_request_parts(produce([b"r" * 10]), 9, 1, "c", [(7, b"x")])
    assert joined(parts) == encode_request(produce([b"r" * 10]), 9, 1, "c", [(7, b"x")])
    header, _ = decode_request(joined(parts)[4:])
    assert header.unknown_tagged_fields == ((7, b"x"),)
