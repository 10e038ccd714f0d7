"""Captured Kafka traffic: pcap/pcapng files, the tap's frame tables and raw
frame streams, turned into paired, accounted Kafka frames.

>>> from kafkaproto.capture import read_frames, Accounting
>>> acc = Accounting()
>>> for f in read_frames("traffic.pcap", acc=acc):           # doctest: +SKIP
...     print(f.conn.client, f.direction, f.api_key, f.api_version, f.correlation_id, f.latency_ns)
>>> acc.check()                                               # doctest: +SKIP

The room, by what each part is:

- :mod:`.formats` -- the readers (and writers) of capture files: pcap and
  pcapng (:mod:`.formats.pcap`), the tap's frame tables
  (:mod:`.formats.tapfiles`), raw request streams (:mod:`.formats.raw`), byte
  ranges of large files as TCP segment positions (:mod:`.formats.ranges`),
  pcap/pcapng writers (:mod:`.formats.writer`);
- :mod:`.walker` -- packets to frames: link/IP/TCP headers
  (:mod:`.walker.packets`), reassembly, detection of Kafka connections,
  resynchronization, framing, pairing; compiled units, each beside its twin;
- :mod:`.frames` -- frames as columns (:class:`FrameBatch`), :mod:`.objects`
  -- frames and connections as objects, :mod:`.accounting` -- where every
  byte went;
- :mod:`.tools` -- the tap (a recording proxy), ``inspect`` and the frame
  dissector behind it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from .._limits import DEFAULT_MAX_FRAME_SIZE
from .accounting import Accounting
from .dataset import (
    CaptureDamageError,
    CaptureDataset,
    CaptureProblem,
    CaptureReader,
    CaptureSource,
    RangeTask,
    SegmentTask,
    WholeTask,
    open_capture,
)
from .formats.pcap import CaptureFile, CaptureFormatError, sniff_format
from .frames import FrameBatch
from .objects import REQUEST, RESPONSE, CapturedFrame, Connection
from .read import capture_kind, read_frame_batches
from .walker.packets import TcpSegment, decode_tcp
from .walker.streams import Extractor

__all__ = [
    "Accounting",
    "CaptureDamageError",
    "CaptureDataset",
    "CaptureProblem",
    "CaptureReader",
    "CaptureSource",
    "RangeTask",
    "SegmentTask",
    "WholeTask",
    "open_capture",
    "CaptureFile",
    "CaptureFormatError",
    "CapturedFrame",
    "Connection",
    "Extractor",
    "FrameBatch",
    "REQUEST",
    "RESPONSE",
    "TcpSegment",
    "capture_kind",
    "decode_tcp",
    "read_frame_batches",
    "read_frames",
    "sniff_format",
]


def read_frames(path, *, ports: Iterable[int] | None = None, acc: Accounting | None = None,
                max_frame_size: int = DEFAULT_MAX_FRAME_SIZE, unanswered: list | None = None, **limits: int
                ) -> Iterator[CapturedFrame]:
    """Every Kafka frame of a capture, in capture order, paired, as objects
    (:func:`read_frame_batches` gives the same frames as columns, the fast way).

    ``ports`` (pcap/pcapng): the brokers' ports; None detects Kafka
    connections from their traffic.  ``acc`` receives the accounting; it is
    complete once the iterator is exhausted.  A damaged or cut file ends the
    iteration early with the reason in ``acc.errors``; a file that is no
    capture at all raises :class:`CaptureFormatError`.  Frames are numbered
    (``seq``) within their connection, in the order they come; a response's
    ``request.seq`` is its request's.  A connection counts as a Kafka
    connection (``acc.kafka_connections``) once it has given a frame.
    ``unanswered``: a list that receives ``(connection, correlation id,
    RequestInfo)`` for each request (of a pcap/pcapng capture) whose
    response never came.  ``limits``: the state a pcap/pcapng reader keeps
    (:class:`~kafkaproto.capture.walker.streams.Extractor`'s
    ``max_open_connections``, ``max_pending_bytes``, ``max_pending_total``).
    """
    from .objects import RequestInfo

    for batch in read_frame_batches(path, ports=ports, acc=acc, max_frame_size=max_frame_size, **limits):
        yield from batch.frames()
        if unanswered is not None:
            for conn, corr, key, version, ts, seq, client in batch.unanswered:
                unanswered.append((conn, corr, RequestInfo(key, version, ts,
                                                           batch.clients[client] if client >= 0 else None, seq)))
