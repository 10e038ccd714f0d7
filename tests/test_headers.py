import pytest

from kafkaproto import (
    EncodeError,
    RequestHeader,
    ResponseHeader,
    TruncatedError,
    Writer,
    decode_request_header,
    decode_response_header,
    encode_request_header,
    encode_response_header,
    frame,
)

# DESIGN.md's worked example: ApiVersions v3 request, correlation id 7, client "c1".
API_VERSIONS_V3 = bytes.fromhex(
    "00000026"          # frame size 38
    "0012" "0003"       # api key 18, version 3
    "00000007"          # correlation id
    "00026331"          # client id: int16 length, even in header v2
    "00"                # header tagged fields
    "12" + b"apache-kafka-java".hex() +
    "06" + b"3.9.1".hex() +
    "00"
)


def test_worked_example_byte_for_byte():
    header = RequestHeader(api_key=18, api_version=3, correlation_id=7, client_id="c1")
    w = Writer()
    w.write_compact_string("apache-kafka-java")
    w.write_compact_string("3.9.1")
    w.write_tagged_fields([])
    assert frame(encode_request_header(header, 2) + w.getvalue()) == API_VERSIONS_V3
    got, end = decode_request_header(API_VERSIONS_V3, 2, offset=4)
    assert got == header and end == 17


@pytest.mark.parametrize("version,hexed", [
    (0, "0003000c0000002a"),
    (1, "0003000c0000002a000361626300"[:-2]),
    (2, "0003000c0000002a00036162630103027878"),
])
def test_request_header_versions(version, hexed):
    tags = [(3, b"xx")] if version == 2 else []
    h = RequestHeader(3, 12, 42, "abc" if version else None, tags)
    assert encode_request_header(h, version).hex() == hexed
    got, end = decode_request_header(bytes.fromhex(hexed), version)
    assert got == h and end == len(hexed) // 2


def test_request_header_v0_drops_client_id():
    # ClientId is ignorable: header v0 (ControlledShutdown v0) has none.
    assert encode_request_header(RequestHeader(7, 0, 1, "x"), 0).hex() == "000700000000" "0001"


def test_null_client_id():
    data = encode_request_header(RequestHeader(0, 9, 1, None), 2)
    assert data.hex() == "0000000900000001ffff00"
    assert decode_request_header(data, 2)[0].client_id is None


def test_response_headers():
    assert encode_response_header(ResponseHeader(7), 0).hex() == "00000007"
    assert encode_response_header(ResponseHeader(7, [(1, b"a")]), 1).hex() == "000000070101" "0161"
    got, end = decode_response_header(bytes.fromhex("0000000700"), 1)
    assert got == ResponseHeader(7) and end == 5
    assert decode_response_header(bytes.fromhex("0000000700"), 0)[1] == 4


def test_unknown_header_tags_kept_sorted():
    h = RequestHeader(1, 1, 1, "c", [(9, b"b"), (2, b"a")])
    got, _ = decode_request_header(encode_request_header(h, 2), 2)
    assert got.unknown_tagged_fields == ((2, b"a"), (9, b"b"))


def test_header_errors():
    with pytest.raises(EncodeError, match="RequestHeader v1 has no tagged fields"):
        encode_request_header(RequestHeader(1, 1, 1, "c", [(1, b"")]), 1)
    with pytest.raises(EncodeError, match="ResponseHeader v0 has no tagged fields"):
        encode_response_header(ResponseHeader(1, [(1, b"")]), 0)
    with pytest.raises(TruncatedError, match="string at byte 8: need 5 bytes, 1 left"):
        decode_request_header(bytes.fromhex("0001000200000003000561"), 1)
    with pytest.raises(ValueError):
        decode_request_header(b"\x00" * 20, 3)


def test_header_repr_and_dict():
    h = RequestHeader(18, 3, 7, "c1")
    assert repr(h) == "RequestHeader(api_key=18, api_version=3, correlation_id=7, client_id='c1')"
    assert h.to_dict()["client_id"] == "c1"
    assert repr(ResponseHeader(5)) == "ResponseHeader(correlation_id=5)"
