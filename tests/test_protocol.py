"""Version negotiation and the sans-IO connection."""

import pytest

from kafkaproto import Connection, CorrelationError, encode_response, negotiate_versions
from kafkaproto.messages import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse
from kafkaproto.protocol import supported_versions


def test_supported_versions_cover_every_api():
    ours = supported_versions()
    assert ours[0] == (0, 13) and ours[18] == (0, 4) and ours[3] == (0, 13)
    assert len(ours) == 93


def test_negotiation_takes_the_highest_common_version():
    R = ApiVersionsResponse
    broker = R(api_keys=[R.ApiVersion(api_key=3, min_version=0, max_version=9),
                         R.ApiVersion(api_key=0, min_version=3, max_version=20),
                         R.ApiVersion(api_key=18, min_version=5, max_version=7),   # no overlap with 0-4
                         R.ApiVersion(api_key=500, min_version=0, max_version=1)])  # unknown to us
    assert negotiate_versions(broker) == {3: 9, 0: 13}
    assert negotiate_versions({1: (0, 3)}, ours={1: (4, 18)}) == {}
    assert negotiate_versions({1: (0, 12)}, ours={1: (4, 18)}) == {1: 12}


def test_connection_round_trip():
    conn = Connection(client_id="tool")
    a = conn.send(ApiVersionsRequest(), version=3)
    b = conn.send(MetadataRequest(topics=None), version=12)
    assert conn.pending == 2
    assert a[8:12] == b"\x00\x00\x00\x01" and b[8:12] == b"\x00\x00\x00\x02"  # increasing correlation ids
    reply1 = encode_response(ApiVersionsResponse(error_code=0), 3, 1)
    reply2 = encode_response(MetadataResponse(cluster_id="c"), 12, 2)
    stream = reply1 + reply2
    got = []
    for i in range(0, len(stream), 3):  # any chunking
        got += conn.receive(stream[i:i + 3])
    assert [(cid, type(m).__name__) for cid, _, m in got] == [(1, "ApiVersionsResponse"), (2, "MetadataResponse")]
    assert got[1][2].cluster_id == "c" and conn.pending == 0


def test_connection_rejects_a_correlation_mismatch():
    conn = Connection()
    conn.send(MetadataRequest(topics=None), version=1)
    with pytest.raises(CorrelationError, match="expected correlation id 1, got 7"):
        conn.receive(encode_response(MetadataResponse(), 1, 7))
    idle = Connection()
    with pytest.raises(CorrelationError, match="no request is outstanding"):
        idle.receive(encode_response(MetadataResponse(), 1, 1))


def test_send_without_response():
    conn = Connection()
    conn.send(MetadataRequest(topics=None), version=1, expect_response=False)
    assert conn.pending == 0
