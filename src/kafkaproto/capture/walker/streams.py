"""The walker, set up: what the compiled units need from the layers above
them (the message programs the judge walks, the request versions this
library knows, the header tables, the connection objects), handed to them.

:func:`walker` makes a :class:`~kafkaproto.capture.walker._scan.Walker`
(compiled, or its twin with ``KAFKAPROTO_PURE=1``): packets in, frames out
into its sink, keeping an :class:`Accounting` of everything it saw.  A
response is paired with the oldest waiting request of its connection that
has its correlation id, which gives it the api key and version it must be
decoded with, and a latency.

After a gap (or when a capture starts in the middle of a connection) a
direction is out of sync; it resynchronizes at the next plausible frame:

- requests: a size prefix, a known api key with a version this library
  knows, a client id of printable characters inside the frame
  (walker._judge.find_frame_start, in constant time per byte), and the
  frame reading as that request -- walked whole up to :data:`CHECK_BYTES`;
  a larger one as far as its first CHECK_BYTES, followed by another
  plausible header (walker._judge.BodyCheck, in C: a bounded amount of work
  per position, whatever size the frame claims);
- responses: a size prefix and a correlation id of a request still waiting
  for its response on this connection, and the first bytes decoding as the
  response to that request;
- either way, no frame that reads may start inside the bytes a candidate
  is judged on: a claimed size never hides the frames behind it.

The bytes skipped are counted as ``gap``.  A direction whose size prefix
makes no sense (negative, or larger than ``max_frame_size``) is not Kafka
from there on: it resynchronizes the same way, counting ``not_kafka``; so
does a direction in step whose first request (of a connection seen from
its start) or a request claiming more than CHECK_BYTES is judged to be no
frame (walker._judge.judge_frame).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..._impl import load as _load
from ..._limits import DEFAULT_MAX_FRAME_SIZE
from ...errors import KafkaProtocolError
from ...messages import APIS, request_class, response_class, version_masks
from ...protocol import header_table
from ..accounting import Accounting
from ..objects import Connection

# the walker's units: compiled, or the twins.  Everything of the capture
# layer takes them from here.
_sink = _load("capture.walker._sink")
_judge = _load("capture.walker._judge")
_scan = _load("capture.walker._scan")

__all__ = ["CHECK_BYTES", "DETECT_BYTES", "Extractor", "MAX_OPEN_CONNECTIONS", "MAX_OUTSTANDING",
           "MAX_PENDING_BYTES", "MAX_PENDING_TOTAL", "body_check", "new_sink", "request_start",
           "request_versions", "walker"]

MAX_OUTSTANDING = 1 << 16  # per connection; older requests count as unanswered
#: bytes per direction looked at to tell whether a connection is Kafka
DETECT_BYTES = _scan.DETECT_BYTES
#: connections open at once, at most: past it the one opened first is closed
#: (counted as ``evicted_connections``; its later packets start a new one)
MAX_OPEN_CONNECTIONS = _scan.MAX_OPEN_CONNECTIONS
#: bytes waiting behind holes, per direction and in all
MAX_PENDING_BYTES = _scan.MAX_PENDING_BYTES
MAX_PENDING_TOTAL = _scan.MAX_PENDING_TOTAL
#: a candidate frame up to this size is judged by walking it whole; a larger
#: one by walking its first CHECK_BYTES and by the next frame's header right
#: after it: a position costs a bounded amount of work, whatever the size its
#: prefix claims
CHECK_BYTES = 512

_versions: dict[int, tuple[int, int]] = {}


def request_versions() -> dict[int, tuple[int, int]]:
    """``{api_key: (lowest, highest)}`` request versions this library decodes."""
    if not _versions:
        for key in APIS:
            valid = version_masks(key)[0]  # (the classes' versions, without loading them)
            if valid:
                _versions[key] = ((valid & -valid).bit_length() - 1, valid.bit_length() - 1)
    return _versions


_VERSIONS: list[bytes] = []


def _version_table() -> bytes:
    """Lowest and highest request version of each api key below 256 (512 bytes)."""
    if not _VERSIONS:
        table = bytearray(b"\xff\x00" * 256)
        for key, (lo, hi) in request_versions().items():
            if 0 <= key < 256:
                table[2 * key], table[2 * key + 1] = min(lo, 255), min(hi, 255)
        _VERSIONS.append(bytes(table))
    return _VERSIONS[0]


def request_start(buf, max_frame_size: int, final: bool = False) -> bool | None:
    """Could a request frame start at ``buf[0]`` (its header alone judged)?
    None: not enough bytes to say yet (False once ``final``)."""
    p, verdict = _judge.find_frame_start(buf, 0, True, max_frame_size, _version_table(), {})
    if p == 0 and verdict:
        return True
    if p == 0 or (p < 0 and len(buf) < 14):
        return False if final else None
    return False


def _plan_of(is_request: bool, key: int, version: int):
    """The message program of (kind, api key, version), or None without one."""
    try:
        cls = request_class(key) if is_request else response_class(key)
        return cls.plan(version)
    except (KafkaProtocolError, AttributeError):
        return None


_CHECKS: list = []


def body_check():
    """The judge of candidate frames (walker._judge.BodyCheck): one per process."""
    if not _CHECKS or type(_CHECKS[0]) is not _judge.BodyCheck:
        _CHECKS[:] = [_judge.BodyCheck(_plan_of, header_table(True), header_table(False), CHECK_BYTES)]
    return _CHECKS[0]


def new_sink(acc: Accounting, batch_rows: int = 65536, batch_bytes: int = 32 << 20):
    """A FrameSink (capture.walker._sink): where every frame lands."""
    return _sink.FrameSink(acc, header_table(True), header_table(False), MAX_OUTSTANDING, batch_rows, batch_bytes)


def walker(ports: Iterable[int] | None = None, acc: Accounting | None = None,
           max_frame_size: int = DEFAULT_MAX_FRAME_SIZE, *, max_open_connections: int = MAX_OPEN_CONNECTIONS,
           max_pending_bytes: int = MAX_PENDING_BYTES, max_pending_total: int = MAX_PENDING_TOTAL,
           batch_rows: int = 65536, batch_bytes: int = 32 << 20):
    """A Walker (capture.walker._scan, compiled or the twin) with a fresh
    sink (its ``sink``, drained with ``take_batch``): packets in (``packet``,
    ``read_pcap`` + ``run``, ``segments``, ``stream``), frames out.

    ``ports``: the brokers' ports; a connection is Kafka when either end uses
    one.  None: detect Kafka connections from their first bytes, each
    connection on its own.

    The state kept is bounded: ``max_open_connections`` open at once (past
    it the one opened first is closed: ``acc.evicted_connections``), and the
    bytes waiting behind holes, ``max_pending_bytes`` per direction and
    ``max_pending_total`` in all (past either a hole is given up on:
    ``acc.gaps_forced``); the bytes held while detection decides whether a
    connection is Kafka count against ``max_pending_total`` too (past it the
    oldest undecided connection is judged on what it sent:
    ``acc.detections_forced``).  Every step costs the same whatever the
    number of connections open."""
    acc = acc if acc is not None else Accounting()
    return _scan.Walker(acc, new_sink(acc, batch_rows, batch_bytes), Connection, body_check(), _version_table(),
                        ports, max_frame_size=max_frame_size, max_open_connections=max_open_connections,
                        max_pending_bytes=max_pending_bytes, max_pending_total=max_pending_total)


#: the walker's former name (kafkaproto.capture.Extractor)
Extractor = walker
