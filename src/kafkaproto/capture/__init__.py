"""Captured Kafka traffic: pcap/pcapng files, the tap's frame tables and raw
frame streams, turned into paired, accounted Kafka frames.

>>> from kafkaproto.capture import read_frames, Accounting
>>> acc = Accounting()
>>> for f in read_frames("traffic.pcap", acc=acc):           # doctest: +SKIP
...     print(f.conn.client, f.direction, f.api_key, f.api_version, f.correlation_id, f.latency_ns)
>>> acc.check()                                               # doctest: +SKIP

Layers: :mod:`.pcap` (file formats, link/IP/TCP), :mod:`.tcp` (reassembly),
:mod:`.streams` (framing, resynchronization, Kafka detection, pairing),
:mod:`.accounting`, :mod:`.dissect` (decoding and one-line summaries),
:mod:`.table` (Arrow/Parquet frame tables), :mod:`.tap` (recording proxy),
:mod:`.writer` (writing pcap/pcapng).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

from .._limits import DEFAULT_MAX_FRAME_SIZE
from .accounting import Accounting
from .frames import FrameBatch, read_frame_batches
from .pcap import CaptureFile, CaptureFormatError, TcpSegment, decode_tcp, sniff_format
from .streams import REQUEST, RESPONSE, CapturedFrame, Connection, Extractor

__all__ = [
    "Accounting",
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
]


def capture_kind(path) -> str:
    """``"pcap"``, ``"pcapng"``, ``"table"`` (tap output: Arrow IPC or Parquet,
    a file or a folder of them; or a folder of rolled pcap/pcapng files) or
    ``"raw"`` (size-prefixed request frames)."""
    if os.path.isdir(path):
        return "table"
    with open(path, "rb") as f:
        head = f.read(8)
    fmt = sniff_format(head)
    if fmt:
        return fmt
    from .table import is_table_file

    return "table" if is_table_file(head) else "raw"


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
    (:class:`~kafkaproto.capture.streams.Extractor`'s
    ``max_open_connections``, ``max_pending_bytes``, ``max_pending_total``).
    """
    from .streams import RequestInfo

    for batch in read_frame_batches(path, ports=ports, acc=acc, max_frame_size=max_frame_size, **limits):
        yield from batch.frames()
        if unanswered is not None:
            for conn, corr, key, version, ts, seq, client in batch.unanswered:
                unanswered.append((batch.conns[conn], corr, RequestInfo(key, version, ts,
                                                                        batch.clients[client] if client >= 0 else None,
                                                                        seq)))
