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

from .._impl import load as _load
from .._limits import DEFAULT_MAX_FRAME_SIZE
from .accounting import Accounting
from .pcap import CaptureFile, CaptureFormatError, TcpSegment, decode_tcp, sniff_format
from .streams import REQUEST, RESPONSE, CapturedFrame, Connection, Extractor, KafkaHalf

# the packet scanner: capture._scan (compiled, with its fast path) or its twin
_scan = _load("capture._scan")

__all__ = [
    "Accounting",
    "CaptureFile",
    "CaptureFormatError",
    "CapturedFrame",
    "Connection",
    "Extractor",
    "REQUEST",
    "RESPONSE",
    "TcpSegment",
    "capture_kind",
    "decode_tcp",
    "numbered",
    "read_frames",
]


def capture_kind(path) -> str:
    """``"pcap"``, ``"pcapng"``, ``"table"`` (tap output: Arrow IPC or Parquet,
    a file or a folder of them) or ``"raw"`` (size-prefixed request frames)."""
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
    """Every Kafka frame of a capture, in capture order, paired.

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
    acc = acc if acc is not None else Accounting()
    yield from numbered(_frames(path, ports, acc, max_frame_size, unanswered, limits), acc)


def numbered(frames: Iterable[CapturedFrame], acc: Accounting) -> Iterator[CapturedFrame]:
    """Number ``frames`` within their connections (``seq``, and a request's
    ``request.seq``) and count the connections that gave one as Kafka: the
    one rule for every reader (whole files, byte ranges, tap tables)."""
    for f in frames:
        conn = f.conn
        seq = conn.frames
        if not seq:
            acc.kafka_connections += 1
        conn.frames = seq + 1
        f.seq = seq
        if f.direction == REQUEST and f.request is not None:
            f.request.seq = seq
        yield f


def _frames(path, ports, acc: Accounting, max_frame_size: int, unanswered=None, limits=None
            ) -> Iterator[CapturedFrame]:
    kind = capture_kind(path)
    if kind == "table":
        from .table import iter_table_frames

        yield from iter_table_frames(path, acc)
        return
    if kind == "raw":
        yield from _raw_frames(path, acc, max_frame_size)
        return
    ext = Extractor(ports, acc, max_frame_size, **(limits or {}))
    ext.unanswered = unanswered
    out = ext.out
    with open(path, "rb") as fh:
        acc.file_bytes += os.fstat(fh.fileno()).st_size
        cap = CaptureFile(fh)
        scan = ext.scanner(_scan)
        try:
            if cap.open() == "pcap":
                # classic pcap: the scanner reads the records itself, in large blocks
                order, ticks, linktype = cap.pcap_header()
                scan.read_pcap(fh, order == ">", ticks, linktype)
                while scan.run():
                    yield from out
                    out.clear()
            else:
                for ts, linktype, data, _orig in cap.iter_records():
                    scan.packet(ts, linktype, data)
                    if out:
                        scan.flush()
                        yield from out
                        out.clear()
        finally:
            scan.flush()
            ext.finish()
            error = cap.error or scan.error
            if error:
                acc.errors.append(f"{os.fspath(path)}: {error}")
            acc.unread_bytes += cap.unread_bytes + scan.unread_bytes
            acc.bad_timestamps += cap.bad_timestamps
    yield from out
    out.clear()


def _raw_frames(path, acc: Accounting, max_frame_size: int) -> Iterator[CapturedFrame]:
    """A file of size-prefixed request frames, as one connection."""
    out: list = []
    conn = Connection(1, "client", os.path.basename(os.fspath(path)))
    acc.connections += 1
    half = KafkaHalf(conn, True, out.append, acc, synced=True, max_frame_size=max_frame_size)
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            acc.file_bytes += len(chunk)
            acc.payload_bytes_total += len(chunk)
            half.data(None, chunk)
            yield from out
            out.clear()
    half.end()
    conn.outstanding.clear()
