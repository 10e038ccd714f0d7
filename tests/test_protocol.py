"""Version negotiation and the sans-IO connection."""

import pytest

from kafkaproto import Connection, CorrelationError, encode_response, negotiate_versions
from kafkaproto.messages import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse
from kafkaproto.protocol import supported_versions


def test_supported_versions_cover_every_api():
    ours = supported_versions()
    assert ours[0] == (0, 13) and ours[18] == (0, 5) and ours[3] == (0, 13) and ours[2] == (0, 11)
    assert ours[93] == (0, 0) and ours[94] == (0, 0)
    assert len(ours) == 95


def test_negotiation_takes_the_highest_common_version():
    R = ApiVersionsResponse
    broker = R(api_keys=[R.ApiVersion(api_key=3, min_version=0, max_version=9),
                         R.ApiVersion(api_key=0, min_version=3, max_version=20),
                         R.ApiVersion(api_key=18, min_version=6, max_version=7),   # no overlap with 0-5
                         R.ApiVersion(api_key=500, min_version=0, max_version=1)])  # unknown to us
    assert negotiate_versions(broker) == {3: 9, 0: 13}
    assert negotiate_versions({1: (0, 3)}, ours={1: (4, 18)}) == {}
    assert negotiate_versions({1: (0, 12)}, ours={1: (4, 18)}) == {1: 12}


def test_connection_round_trip():
    conn = Connection(client_id="tool")
    a = b"".join(conn.send(ApiVersionsRequest(), version=3))  # buffers to write: joined here
    b = b"".join(conn.send(MetadataRequest(topics=None), version=12))
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


# ---------------------------------------------------------------------------
# the handshake against brokers of two generations (a loopback broker of our own)


def _fake_broker(max_api_versions: int):
    """A broker that speaks ApiVersions up to ``max_api_versions``: a newer request
    gets the KIP-511 reply (UNSUPPORTED_VERSION in the v0 layout, naming its range)."""
    import socket
    import threading

    from kafkaproto import FrameReader, decode_request
    from kafkaproto.error_codes import ErrorCode

    srv = socket.create_server(("127.0.0.1", 0))
    seen = []

    def serve():
        for _ in range(2):  # the handshake opens a connection per attempt, one request each
            try:
                sock, _ = srv.accept()
            except OSError:
                return
            with sock:
                reader, frames = FrameReader(), []
                while not frames:
                    chunk = sock.recv(65536)
                    if not chunk:
                        break
                    frames = reader.feed(chunk)
                if not frames:
                    continue
                header, req = decode_request(frames[0])
                seen.append((header.api_version, req))
                R = ApiVersionsResponse
                keys = [R.ApiVersion(api_key=18, min_version=0, max_version=max_api_versions),
                        R.ApiVersion(api_key=3, min_version=0, max_version=13)]
                if header.api_version > max_api_versions:
                    reply = encode_response(R(error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=keys[:1]), 0,
                                            header.correlation_id)
                else:
                    reply = encode_response(R(error_code=0, api_keys=keys), header.api_version,
                                            header.correlation_id)
                sock.sendall(reply)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return srv, seen


@pytest.mark.parametrize("broker_max,used", [(5, 5), (4, 4)])
def test_handshake_uses_api_versions_v5_against_a_kafka_4_4_broker(broker_max, used):
    from kafkaproto.protocol import api_versions_handshake

    srv, seen = _fake_broker(broker_max)
    with srv:
        version, resp = api_versions_handshake(*srv.getsockname(), timeout=5)
    assert version == used and resp.error_code == 0
    assert seen[0][0] == 5  # our highest first: Kafka 4.4's ApiVersions v5
    assert [v for v, _ in seen] == ([5] if broker_max == 5 else [5, 4])
    assert negotiate_versions(resp)[18] == used
