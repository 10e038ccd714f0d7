"""kafkaproto.arrow.messages agrees with the object decoders, for every API key,
requests and responses, every version, and damaged frames.

The expected rows are computed by support.arrow_expected from the objects
decode_request / decode_response return (fields a version lacks → None), or
from the error they raise (all fields None, ``error`` = the exception's text).
"""

import random

import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401
import pytest

from kafkaproto import arrow, encode_request, encode_response
from kafkaproto.messages import APIS, request_class, response_class
from support.arrow_expected import expected_request, expected_response, null_row
from support.message_values import random_message

REQUEST_KEYS = sorted(k for k, (rq, _) in APIS.items() if rq)
RESPONSE_KEYS = sorted(k for k, (_, rs) in APIS.items() if rs)


def versions(cls):
    return [v for v in range(cls.LOWEST_VERSION, cls.HIGHEST_VERSION + 1) if cls.supports(v)]


def damaged(frame, rng):
    """The frame itself, cut short, and with a few bytes replaced."""
    out = [frame, frame[: len(frame) // 2], frame[:-1]]
    for _ in range(4):
        b = bytearray(frame)
        b[rng.randrange(len(b))] = rng.choice([0x00, 0xFF, 0x7F, 0x80, rng.randrange(256)])
        out.append(bytes(b))
    return out


def request_frames(api_key, rng, per_version=2):
    cls = request_class(api_key)
    frames = []
    for v in versions(cls):
        for k in range(per_version):
            msg = random_message(cls, v, rng)
            frame = encode_request(msg, v, rng.randint(-5, 10**6), rng.choice([None, "", "client-é", "c" * 40]))[4:]
            frames += damaged(frame, rng) if k == 0 else [frame]
    return frames


def response_frames(api_key, rng, per_version=2):
    cls = response_class(api_key)
    frames, vers = [], []
    for v in versions(cls):
        for k in range(per_version):
            msg = random_message(cls, v, rng)
            frame = encode_response(msg, v, rng.randint(-5, 10**6))[4:]
            got = damaged(frame, rng) if k == 0 else [frame]
            frames += got
            vers += [v] * len(got)
    return frames, vers


def check_counts(out):
    errors = len(out) - out.field("error").null_count
    decoded = sum(1 for e in out.field("error").to_pylist() if e is None)
    assert decoded + errors == len(out)


@pytest.mark.parametrize("api_key", REQUEST_KEYS)
def test_requests_agree_with_objects(api_key):
    cls = request_class(api_key)
    rng = random.Random(f"req{api_key}")
    frames = request_frames(api_key, rng) + [None, b"", b"\x00"]
    out = arrow.messages(pa.array(frames, pa.binary()), api_key)
    assert out.type == arrow.message_type(api_key)
    check_counts(out)
    rows = out.to_pylist()
    assert len(rows) == len(frames)
    for frame, row in zip(frames, rows):
        want = expected_request(cls, frame)
        if want is not None:
            assert row == want, (frame.hex() if frame else frame)
        else:
            assert row["error"] and row == null_row(cls, row["error"])


@pytest.mark.parametrize("api_key", RESPONSE_KEYS)
def test_responses_agree_with_objects(api_key):
    cls = response_class(api_key)
    rng = random.Random(f"resp{api_key}")
    frames, vers = response_frames(api_key, rng)
    out = arrow.messages(pa.array(frames, pa.large_binary()), api_key, "response", pa.array(vers, pa.int16()))
    assert out.type == arrow.message_type(api_key, "response")
    check_counts(out)
    for frame, v, row in zip(frames, vers, out.to_pylist()):
        assert row == expected_response(cls, frame, v), (v, frame.hex())


def test_request_of_another_api_key_is_an_error_row():
    produce = encode_request(request_class(18)(), 3, 1, "c")[4:]
    out = arrow.messages(pa.array([produce]), 3)
    row = out.to_pylist()[0]
    assert row["topics"] is None
    assert row["error"] == "a ApiVersionsRequest (api key 18) in a column of MetadataRequest (api key 3)"


def test_mixed_versions_share_one_schema():
    cls = request_class(3)
    rng = random.Random(3)
    frames = [encode_request(random_message(cls, v, rng), v, v)[4:] for v in versions(cls)]
    out = arrow.messages(pa.array(frames), 3)
    assert out.field("error").null_count == len(frames)
    # topic_id exists from v10: null before, bytes after
    firsts = [r["topics"][0]["topic_id"] if r["topics"] else "none" for r in out.to_pylist()]
    assert all(x is None or x == "none" for x in firsts[:10])


def test_response_versions_as_int_and_with_nulls():
    cls = response_class(18)
    msg = cls(api_keys=[cls.ApiVersion(api_key=1, min_version=0, max_version=3)])
    f3 = encode_response(msg, 3, 9)[4:]
    out = arrow.messages(pa.array([f3, f3]), 18, "response", 3)
    assert out.field("error").null_count == 2
    out = arrow.messages(pa.array([f3, f3]), 18, "response", pa.array([3, None], pa.int32()))
    assert out.to_pylist()[1] == null_row(cls, "null api version")
    out = arrow.messages(pa.array([f3]), 18, "response", 99)
    assert "ApiVersionsResponse v99 is not supported" in out.to_pylist()[0]["error"]


def test_api_versions_v0_fallback():
    """KIP-511: a v3 request answered with a v0 body carrying UNSUPPORTED_VERSION."""
    cls = response_class(18)
    v0 = encode_response(cls(error_code=35, api_keys=[cls.ApiVersion(api_key=18, min_version=0, max_version=2)]),
                         0, 5)[4:]
    row = arrow.messages(pa.array([v0]), 18, "response", 3).to_pylist()[0]
    assert row["error"] is None and row["error_code"] == 35
    assert row["api_keys"] == [{"api_key": 18, "min_version": 0, "max_version": 2}]
    assert row["throttle_time_ms"] is None  # v0 has none
    assert row == expected_response(cls, v0, 3)


def test_inputs_chunked_view_string_and_lists():
    cls = request_class(18)
    frames = [encode_request(cls(client_software_name="a", client_software_version="1"), 3, i, "x")[4:]
              for i in range(5)]
    want = arrow.messages(pa.array(frames), 18)
    chunked = arrow.messages(pa.chunked_array([pa.array(frames[:2]), pa.array(frames[2:])]), 18)
    assert isinstance(chunked, pa.ChunkedArray) and chunked.combine_chunks().equals(want)
    assert arrow.messages(pa.array(frames, pa.binary_view()), 18).equals(want)
    assert arrow.messages(frames, 18).equals(want)
    assert arrow.messages(pa.array(frames)[1:4], 18).equals(want[1:4])
    with pytest.raises(TypeError):
        arrow.messages(frames[0], 18)
    with pytest.raises(TypeError):
        arrow.messages(pa.array([1, 2]), 18)


def test_empty_inputs():
    assert len(arrow.messages(pa.array([], pa.binary()), 3)) == 0
    assert len(arrow.messages(pa.array([], pa.binary()), 3, "response", 1)) == 0
    assert arrow.messages(pa.chunked_array([], pa.binary()), 3).type == arrow.message_type(3)


def test_every_message_type_is_spark_friendly():
    """No unsigned ints, no view types: every type maps to a Spark SQL type."""
    def walk(t):
        assert not pa.types.is_unsigned_integer(t)
        for k in range(t.num_fields):
            walk(t.field(k).type)
    for key in REQUEST_KEYS:
        walk(arrow.message_type(key))
    for key in RESPONSE_KEYS:
        walk(arrow.message_type(key, "response"))


def test_kafka_4_4_fields_in_a_column_that_mixes_versions():
    """ApiVersions v4 and v5 requests in one column: v5's ClusterId/NodeId are
    columns of the one struct type, null for the v4 row."""
    R = request_class(18)
    frames = pa.array([encode_request(R(client_software_name="a", client_software_version="1"), 4, 1, "c")[4:],
                       encode_request(R(client_software_name="b", client_software_version="2", cluster_id="k1",
                                        node_id=3), 5, 2, "c")[4:]], pa.large_binary())
    rows = arrow.messages(frames, 18).to_pylist()
    assert [(r["client_software_name"], r["cluster_id"], r["node_id"], r["error"]) for r in rows] == \
        [("a", None, None, None), ("b", "k1", 3, None)]
    T = request_class(28)
    topic = T.TxnOffsetCommitRequestTopic(topic_id=__import__("uuid").UUID(int=7), partitions=[])
    frame = encode_request(T(transactional_id="t", group_id="g", topics=[topic]), 6, 3, "c")[4:]
    row = arrow.messages(pa.array([frame], pa.large_binary()), 28).to_pylist()[0]
    assert row["topics"][0]["topic_id"] == (7).to_bytes(16, "big") and row["topics"][0]["name"] is None


def test_trailing_bytes_are_a_column():
    frame = encode_request(request_class(3)(topics=None), 12, 1, "c")[4:]
    out = arrow.messages(pa.array([frame, frame + b"xyz", b"\x00\x03"]), 3).to_pylist()
    assert [r["trailing_bytes"] for r in out] == [0, 3, None]
    resp = encode_response(response_class(18)(), 3, 1)[4:] + b"\x00" * 5
    (row,) = arrow.messages(pa.array([resp]), 18, "response", 3).to_pylist()
    assert row["trailing_bytes"] == 5 and row["error"] is None


@pytest.mark.parametrize("kind", ["request", "response"])
@pytest.mark.parametrize("api_key", [0, 1, 3, 18, 19, 60])
def test_header_sizes_given_same_rows(api_key, kind):
    """Bodies decoded from the header sizes a caller read: the same rows, errors and
    trailing bytes as reading every header again."""
    rng = random.Random(f"hs{kind}{api_key}")
    if kind == "request":
        frames = request_frames(api_key, rng) + [None, b"", b"\x00"]
        want = arrow.messages(pa.array(frames, pa.binary()), api_key)
        heads = arrow.request_headers(pa.array(frames, pa.binary()))
        # the caller vouches for the api key: it gives sizes only for frames of this one
        # (a row whose header did not read, or of another key, has a null size: read as usual)
        mine = pa.compute.equal(heads.field("api_key"), api_key)
        hs = pa.compute.if_else(mine, heads.field("header_size"), None)
        got = arrow.messages(pa.array(frames, pa.binary()), api_key, api_version=heads.field("api_version"),
                             header_size=hs)
        assert pa.compute.sum(mine.cast(pa.int64())).as_py() > len(frames) // 2
    else:
        frames, v = response_frames(api_key, rng)
        frames += [None]
        v += [v[-1]]
        want = arrow.messages(pa.array(frames, pa.binary()), api_key, "response", pa.array(v, pa.int16()))
        heads = arrow.response_headers(pa.array(frames, pa.binary()), api_key, pa.array(v, pa.int16()))
        hs = heads.field("header_size")
        got = arrow.messages(pa.array(frames, pa.binary()), api_key, "response", pa.array(v, pa.int16()),
                             header_size=hs)
        # as numpy columns, and as a chunked input
        got2 = arrow.messages(pa.chunked_array([pa.array(frames[:3], pa.binary()), pa.array(frames[3:], pa.binary())]),
                              api_key, "response", np.array(v), header_size=hs.fill_null(-1).to_numpy())
        assert got2.combine_chunks().equals(want)
    assert got.equals(want)


def test_header_size_arguments():
    cls = response_class(18)
    f3 = encode_response(cls(api_keys=[]), 3, 9)[4:]
    ok = arrow.messages(pa.array([f3]), 18, "response", 3).to_pylist()
    assert arrow.messages(pa.array([f3]), 18, "response", 3, header_size=4).to_pylist() == ok
    assert arrow.messages(pa.array([f3]), 18, "response", 3, header_size=pa.array([None], pa.int32())).to_pylist() == ok
    # a size past the frame: an error row
    row = arrow.messages(pa.array([f3]), 18, "response", 3, header_size=len(f3) + 1).to_pylist()[0]
    assert row == null_row(cls, f"header size {len(f3) + 1} past the end of a {len(f3)}-byte frame")
    # requests: the versions given, not read
    req = request_class(18)
    fr = encode_request(req(client_software_name="a", client_software_version="1"), 3, 1, "abc")[4:]
    hs = arrow.request_headers(pa.array([fr])).field("header_size")[0].as_py()
    want = arrow.messages(pa.array([fr]), 18)
    assert arrow.messages(pa.array([fr]), 18, api_version=3, header_size=hs).equals(want)
    row = arrow.messages(pa.array([fr]), 18, api_version=77, header_size=hs).to_pylist()[0]
    assert row["error"] == ("request header at byte 2: ApiVersionsRequest v77 is not supported "
                            f"(versions {req.VALID_VERSIONS})")
    with pytest.raises(TypeError, match="header_size needs api_version"):
        arrow.messages(pa.array([fr]), 18, header_size=hs)
    with pytest.raises(ValueError, match="header_size: 2 values for 1 frames"):
        arrow.messages(pa.array([fr]), 18, api_version=3, header_size=[hs, hs])


def test_api_versions_fallback_is_the_protocol_rule():
    """One KIP-511 rule: the Arrow loops apply kafkaproto.protocol's (decode_response_body)."""
    from kafkaproto import protocol

    cls = response_class(protocol.KIP511_API_KEY)
    for code in (protocol.KIP511_ERROR, 0):
        v0 = encode_response(cls(error_code=code, api_keys=[]), protocol.KIP511_VERSION, 5)[4:]
        row = arrow.messages(pa.array([v0]), 18, "response", 3).to_pylist()[0]
        try:
            msg, read, _ = protocol.decode_response_body(cls, v0, 3, 4)
        except Exception as exc:
            assert row == null_row(cls, str(exc)) or row["error"].endswith(str(exc).split(": ", 1)[1])
        else:
            assert read == protocol.KIP511_VERSION and row["error"] is None and row["error_code"] == msg.error_code
