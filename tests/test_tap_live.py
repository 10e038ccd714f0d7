"""The tap's live side under hostile upstreams and clients (issue 22, rows 5, 6, 8).

- Row 5: a Metadata response naming 2,000 brokers made the tap open 2,001
  listeners; at the file-descriptor limit ``_listen`` raised IndexError, the
  client's connection dropped and the response was neither forwarded nor
  recorded.  Listeners are now capped (``max_listeners``), a listen that fails
  is counted, and such brokers keep their own address in a response that is
  still forwarded and recorded.
- Rows 6 and 8 on sockets: a client past ``max_outstanding`` requests is read
  no further until responses come (then every request goes, in order), and
  the bytes of a frame a direction ends inside of are forwarded.
"""

from __future__ import annotations

import io
import os
import socket
import struct
import subprocess
import sys
import textwrap
import time

from kafkaproto import decode_response, encode_request, encode_response, split_frames
from kafkaproto.capture.tools.tap import UNROUTED_KEPT, Tap
from kafkaproto.messages import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse
from test_tap import LoopbackUpstream, ScriptedBroker, _recv, recorded

B = MetadataResponse.MetadataResponseBroker


def many_brokers(n):
    def reply(key, version, corr):
        if key == 3:
            return encode_response(MetadataResponse(brokers=[B(node_id=i, host=f"10.0.{i // 250}.{i % 250}",
                                                               port=9092) for i in range(n)]), version, corr)
        return encode_response(ApiVersionsResponse(), 0, corr)
    return reply


def metadata_through(tap, corr=7):
    with socket.create_connection(("127.0.0.1", tap.port), timeout=20) as s:
        s.sendall(encode_request(MetadataRequest(topics=None), 12, corr, "c"))
        head = _recv(s, 4, 20)
        assert len(head) == 4, "the tap dropped the connection"
        _, meta = decode_response(_recv(s, struct.unpack(">i", head)[0], 20), 3, 12)
    return meta


def test_listeners_are_capped_and_the_rest_keep_their_addresses(tmp_path):
    upstream = ScriptedBroker(many_brokers(50))
    log = io.StringIO()
    try:
        with Tap(("127.0.0.1", upstream.port), tmp_path / "tap", max_listeners=10, log=log) as tap:
            meta = metadata_through(tap)
            again = metadata_through(tap, 8)  # the same brokers: no listener tried twice, none more counted
            routes, stats = dict(tap.routes), dict(tap.stats)
    finally:
        upstream.close()
    assert len(routes) == 10  # the bootstrap and the first 9 brokers named
    ours = [b for b in meta.brokers if b.host == "127.0.0.1"]
    assert [b.port for b in ours] == [routes[(f"10.0.0.{i}", 9092)] for i in range(9)]
    assert [(b.host, b.port) for b in meta.brokers[9:]] == [(f"10.0.0.{i}", 9092) for i in range(9, 50)]
    assert [(b.host, b.port) for b in again.brokers] == [(b.host, b.port) for b in meta.brokers]
    assert stats["listeners_not_opened"] == 41 and stats["rewritten"] == 2
    assert "41 of the 50 brokers named in an api 3 response got no listener (max_listeners=10 reached)" \
        in log.getvalue()
    items, _ = recorded(tmp_path / "tap")
    assert [(d.frame.direction, d.frame.correlation_id) for d in items] == [("request", 7), ("response", 7),
                                                                          ("request", 8), ("response", 8)]
    assert all(len(d.message.brokers) == 50 for d in items if d.frame.direction == "response")


def test_the_brokers_without_a_listener_the_tap_remembers_are_bounded_over_time(tmp_path):
    """Issue 33, item 7: a peer that names ever new brokers, response after
    response, grew the tap's set of brokers without a listener for its whole
    life (each response was bounded, their sum was not)."""
    served = iter([0, 600, 1200, 1800, 1800, 0])  # the first broker each Metadata response names, 600 of them

    def reply(key, version, corr):
        if key == 3:
            first = next(served)
            return encode_response(MetadataResponse(brokers=[B(node_id=i, host=f"10.0.{i // 250}.{i % 250}",
                                                                port=9092) for i in range(first, first + 600)]),
                                   version, corr)
        return encode_response(ApiVersionsResponse(), 0, corr)

    upstream = ScriptedBroker(reply)
    counted = []
    try:
        with Tap(("127.0.0.1", upstream.port), tmp_path / "tap", max_listeners=10) as tap:
            for corr in range(6):
                meta = metadata_through(tap, corr)
                assert len(meta.brokers) == 600
                counted.append(tap.stats["listeners_not_opened"])
                assert len(tap.unrouted) <= UNROUTED_KEPT
            routes, unrouted = dict(tap.routes), list(tap.unrouted)
    finally:
        upstream.close()
    assert len(routes) == 10 and len(unrouted) == UNROUTED_KEPT == 1024
    # 591 + 3 x 600 named without a listener; the 4th batch again: remembered, not counted again; the
    # first again: forgotten since (the 1,024 named last are kept), counted again
    assert counted == [591, 1191, 1791, 2391, 2391, 2982]
    assert (unrouted[0], unrouted[-1]) == (("10.0.7.217", 9092), ("10.0.2.99", 9092))  # brokers 1967, 599


_FD_LIMIT = textwrap.dedent("""
    import resource, sys, tempfile
    sys.path.insert(0, sys.argv[1])
    resource.setrlimit(resource.RLIMIT_NOFILE, (200, 200))
    from test_tap import ScriptedBroker, recorded
    from test_tap_live import many_brokers, metadata_through
    from kafkaproto.capture.tools.tap import UNROUTED_KEPT, Tap

    upstream = ScriptedBroker(many_brokers(2000))
    out = tempfile.mkdtemp()
    try:
        with Tap(("127.0.0.1", upstream.port), out, max_listeners=5000) as tap:
            meta = metadata_through(tap)
            stats = dict(tap.stats)
    finally:
        upstream.close()
    items, _ = recorded(out)
    print(len(meta.brokers), len({b.port for b in meta.brokers if b.host == "127.0.0.1"}),
          stats["listeners_not_opened"], [d.frame.direction for d in items])
""")


def test_at_the_file_descriptor_limit_the_response_is_forwarded_and_recorded():
    tests = os.path.dirname(os.path.abspath(__file__))
    run = subprocess.run([sys.executable, "-c", _FD_LIMIT, tests], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "IndexError" not in run.stderr
    named, routed, refused, directions = run.stdout.split(" ", 3)
    assert int(named) == 2000 and 0 < int(routed) < 200 and int(routed) + int(refused) == 2000
    assert directions.strip() == "['request', 'response']"


class Silent(LoopbackUpstream):
    """An upstream that reads everything and answers only when told: ``answer(n)``
    sends n ApiVersions responses for the oldest requests it has."""

    def __init__(self) -> None:
        self.got = b""
        self.conn = None
        self.sent = 0
        super().__init__()

    def _conn(self, conn) -> None:
        self.conn = conn
        conn.settimeout(0.2)
        while not self.stop.is_set():
            try:
                data = conn.recv(65536)
            except TimeoutError:
                continue
            if not data:
                return
            self.got += data

    def requests(self):
        return split_frames(self.got)[0]

    def answer(self, n):
        frames = self.requests()[self.sent:self.sent + n]
        for f in frames:
            self.conn.sendall(encode_response(ApiVersionsResponse(), 0, struct.unpack_from(">i", f, 4)[0]))
        self.sent += len(frames)


def wait_for(cond, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_a_client_past_max_outstanding_waits_for_responses_then_every_request_goes(tmp_path):
    upstream = Silent()
    stream = b"".join(encode_request(ApiVersionsRequest(), 0, i, "c") for i in range(40))
    try:
        with Tap(("127.0.0.1", upstream.port), tmp_path / "tap", max_outstanding=5) as tap:
            with socket.create_connection(("127.0.0.1", tap.port), timeout=10) as s:
                s.sendall(stream)
                wait_for(lambda: len(upstream.requests()) == 5)
                time.sleep(0.3)
                assert len(upstream.requests()) == 5  # held back: no answer yet
                while upstream.sent < 40:
                    wait_for(lambda: len(upstream.requests()) > upstream.sent)
                    assert len(upstream.requests()) - upstream.sent <= 5  # never more than 5 unanswered
                    upstream.answer(2)
                got = _recv(s, 40 * 14)
    finally:
        upstream.close()
    assert upstream.got == stream
    frames, _ = split_frames(got)
    assert [struct.unpack_from(">i", f)[0] for f in frames] == list(range(40))


def test_the_tail_of_a_frame_a_client_ends_inside_of_is_forwarded(tmp_path):
    upstream = Silent()
    one = encode_request(MetadataRequest(topics=None), 12, 1, "c")
    stream = one * 3 + one[:9]
    try:
        with Tap(("127.0.0.1", upstream.port), tmp_path / "tap") as tap:
            with socket.create_connection(("127.0.0.1", tap.port), timeout=10) as s:
                s.sendall(stream)
                s.shutdown(socket.SHUT_WR)  # the client's direction ends inside the fourth frame
                wait_for(lambda: upstream.got == stream)
                wait_for(lambda: tap.stats["raw_bytes"] == 9)
            stats = dict(tap.stats)
    finally:
        upstream.close()
    assert stats["frames"] == 3
