"""A small program on kafkaproto's public API.

tests/test_source.py type-checks it with mypy, through the package's stubs
(the generated messages' .pyi, the compiled modules' .pyi): it must check
cleanly.  The same test runs it, so that it stays a true program.
"""

from __future__ import annotations

import uuid

import pyarrow as pa

from kafkaproto import (
    FrameReader,
    Reader,
    Writer,
    arrow,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    frame_offsets,
    records,
    split_frames,
)
from kafkaproto.messages import ApiVersionsResponse, MetadataRequest, MetadataResponse, request_class


def metadata_request() -> bytes:
    topic = MetadataRequest.MetadataRequestTopic(name="orders")
    request = MetadataRequest(topics=[topic], allow_auto_topic_creation=False)
    frame = encode_request(request, version=12, correlation_id=1, client_id="tool")
    frames, consumed = split_frames(frame)
    assert consumed == len(frame)
    header, decoded = decode_request(frames[0])
    assert header.correlation_id == 1 and decoded == request

    body = request.encode(12)
    again = MetadataRequest.decode(body, 12)
    topics = again.topics
    assert topics is not None
    name: str | None = topics[0].name
    assert name == "orders"
    same, end = MetadataRequest.decode(body, 12, with_end=True)
    assert same == again and end == len(body)
    assert MetadataRequest.supports(12) and MetadataRequest.is_flexible(12)
    lowest: int = MetadataRequest.LOWEST_VERSION
    assert request_class(3) is MetadataRequest and lowest == 0
    return frame


def metadata_response() -> bytes:
    partition = MetadataResponse.MetadataResponsePartition(partition_index=0, leader_id=1, replica_nodes=[1, 2],
                                                           isr_nodes=[1])
    topic = MetadataResponse.MetadataResponseTopic(name="orders", topic_id=uuid.uuid4(), partitions=[partition])
    broker = MetadataResponse.MetadataResponseBroker(node_id=1, host="127.0.0.1", port=9092, rack=None)
    response = MetadataResponse(brokers=[broker], topics=[topic], cluster_id="c")
    frame = encode_response(response, version=12, correlation_id=1)
    _, decoded = decode_response(frame[4:], api_key=3, version=12)
    assert decoded == response
    ports: list[int] = [b.port for b in response.brokers]
    leaders = {t.name: [p.leader_id for p in t.partitions] for t in response.topics}
    assert ports == [9092] and leaders == {"orders": [1]}
    versions = ApiVersionsResponse(api_keys=[ApiVersionsResponse.ApiVersion(api_key=3, min_version=0, max_version=13)])
    assert versions.api_keys[0].max_version == 13
    return frame


def primitives() -> None:
    w = Writer()
    w.write_int32(7)
    w.write_compact_string("x")
    w.write_compact_bytes(None)
    w.write_uuid(uuid.UUID(int=1))
    r = Reader(w.getvalue())
    n: int = r.read_int32()
    s: str = r.read_compact_string()
    b: bytes | None = r.read_compact_bytes(True)
    u: uuid.UUID = r.read_uuid()
    assert (n, s, b, u.int, r.remaining) == (7, "x", None, 1, 0)


def frames(stream: bytes) -> None:
    starts, sizes, consumed = frame_offsets(stream)
    assert int(sizes.sum()) + 4 * len(starts) == consumed
    reader = FrameReader(max_frame_size=1 << 20)
    got: list[bytes] = []
    for i in range(0, len(stream), 7):
        got += reader.feed(stream[i:i + 7])
    assert len(got) == len(starts) and reader.buffered == 0


def record_batches() -> None:
    blob = records.encode([(b"key", b"value", [("trace", b"1")], 1_700_000_000_000)], codec="zstd", base_offset=42)
    for batch in records.decode(blob):
        assert not batch.truncated
        for record in batch.records:
            assert record.offset == 42 and record.key == b"key"
    table = arrow.records(pa.array([blob], pa.binary()), columns=["offset", "timestamp"])
    assert table.column("offset").to_pylist() == [42]


def arrow_columns(request_frame: bytes) -> None:
    column = arrow.messages(pa.array([request_frame[4:]], pa.binary()), 3)
    assert column.field("topics").to_pylist()[0][0]["name"] == "orders"


def main() -> None:
    request = metadata_request()
    response = metadata_response()
    primitives()
    frames(request + response)
    record_batches()
    arrow_columns(request)


if __name__ == "__main__":
    main()
