"""Streaming readers for pcap and pcapng files.

Only the standard library is used: a capture is read record by record from
a binary file object, so memory stays constant whatever the file's size.

- :meth:`CaptureFile.iter_records` yields ``(ts_ns, linktype, data, orig_len)`` for every
  packet of a pcap (micro- or nanosecond, either byte order) or pcapng file
  (several sections and interfaces, ``if_tsresol``/``if_tsoffset``,
  enhanced, simple and obsolete packet blocks).
- :func:`kafkaproto.capture.walker.packets.decode_tcp` takes one packet to
  a TCP segment (the link, IP and TCP layers).

A damaged file never raises out of the iterator: it stops and says why in
:attr:`CaptureFile.error`, with the bytes it could not read in
:attr:`CaptureFile.unread_bytes`.  A time stamp no 64-bit nanosecond column
can hold (a pcapng interface's coarse ``if_tsresol`` with huge raw values, a
huge or negative ``if_tsoffset``) is read as None (no time) and counted in
:attr:`CaptureFile.bad_timestamps`.
"""

from __future__ import annotations

import contextlib
import os
import struct
from collections.abc import Iterator
from typing import BinaryIO

from ..accounting import Accounting
from ..frames import FrameBatch, take_batch
from ..walker.streams import walker

__all__ = [
    "packet_batches",
    "CaptureFile",
    "CaptureFormatError",
    "PCAP_MAGICS",
    "PCAPNG_MAGIC",
    "sniff_format",
]

PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"
#: pcap magic bytes -> (byte order, ticks per second)
PCAP_MAGICS = {
    b"\xd4\xc3\xb2\xa1": ("<", 1_000_000),
    b"\xa1\xb2\xc3\xd4": (">", 1_000_000),
    b"\x4d\x3c\xb2\xa1": ("<", 1_000_000_000),
    b"\xa1\xb2\x3c\x4d": (">", 1_000_000_000),
}

_MAX_RECORD = 256 * 1024 * 1024  # larger captured lengths mean a damaged file
#: the time stamps a packet may carry: nanoseconds since the epoch that fit in
#: an int64 (1970 to 2262); every later difference (latency) fits too
TS_MAX = (1 << 63) - 1
_READ_STEP = 1 << 20


class CaptureFormatError(ValueError):
    """The file is not a pcap or pcapng capture, or its header is damaged."""


def sniff_format(head: bytes) -> str | None:
    """``"pcap"``, ``"pcapng"`` or None from the first four bytes of a file."""
    if head[:4] == PCAPNG_MAGIC:
        return "pcapng"
    if head[:4] in PCAP_MAGICS:
        return "pcap"
    return None


class CaptureFile:
    """Iterate the packet records of a pcap or pcapng file object.

    Iterating yields ``(ts_ns, linktype, data, orig_len)``.  ``ts_ns`` is
    nanoseconds since the epoch (None for pcapng simple packet blocks, which
    carry no time).  After iteration, ``error`` is None for a clean file or
    says what stopped the reader; ``unread_bytes`` counts the bytes left.
    """

    def __init__(self, f: BinaryIO, size: int | None = None, *, base: int = 0, read_rest: bool = True) -> None:
        self.f = f
        self.size = size
        self.format: str | None = None
        self.error: str | None = None
        self.unread_bytes = 0
        self.bytes_read = 0
        self.records = 0
        #: packets whose time stamp lies outside 0..TS_MAX: yielded with ts None
        self.bad_timestamps = 0
        self._magic = b""
        #: file offset of the record (pcap) or block (pcapng) being read; ``base``
        #: is the offset the file object stands at when reading starts
        self.base = base
        self.at = base
        #: file offset of the packet bytes of the record just yielded
        self.data_at = base
        #: a damaged file: read the rest to count it (False when reading a byte range)
        self.read_rest = read_rest
        # pcapng: the byte order and interfaces of the section being read
        self.order = "<"
        self.interfaces: list = []  # (linktype, ticks per second, offset seconds)

    def __iter__(self) -> Iterator[tuple[int | None, int, bytes, int]]:
        self.open()
        yield from self.iter_records()

    def open(self) -> str:
        """Read the first bytes: ``"pcap"`` or ``"pcapng"``, else CaptureFormatError."""
        head = self._read(4)
        fmt = sniff_format(head)
        if fmt is None:
            raise CaptureFormatError(f"not a pcap or pcapng file (first bytes {head.hex()})")
        self.format = fmt
        self._magic = head
        return fmt

    def iter_records(self) -> Iterator[tuple[int | None, int, bytes, int]]:
        """The packet records after :meth:`open`."""
        if self.format == "pcap":
            yield from self._pcap(*self.pcap_header())
        else:
            yield from self._pcapng(self._magic)

    def pcap_header(self) -> tuple[str, int, int]:
        """The rest of a pcap file header after :meth:`open`: byte order
        (``"<"``/``">"``), ticks per second, link type."""
        order, ticks = PCAP_MAGICS[self._magic]
        hdr = self._read(20)
        if len(hdr) < 20:
            raise CaptureFormatError(f"pcap header cut short: {4 + len(hdr)} of 24 bytes")
        major, _minor, _zone, _sigfigs, _snaplen, network = struct.unpack(order + "HHiIII", hdr)
        if major != 2:
            raise CaptureFormatError(f"pcap version {major} is not 2")
        return order, ticks, network & 0xFFFF

    # -- helpers -----------------------------------------------------------
    def _read(self, n: int) -> bytes:
        if n <= _READ_STEP:
            data = self.f.read(n)
        else:
            # A length the file claims is read in steps: a record that claims more
            # than the file holds costs what the file holds (read(n) would
            # allocate all n bytes first).
            parts = []
            while n > 0:
                chunk = self.f.read(min(n, _READ_STEP))
                if not chunk:
                    break
                parts.append(chunk)
                n -= len(chunk)
            data = b"".join(parts)
        self.bytes_read += len(data)
        return data

    def _stop(self, why: str, partial: int) -> None:
        self.error = why
        rest = 0
        while self.read_rest and (chunk := self.f.read(1 << 20)):
            rest += len(chunk)
        self.unread_bytes = partial + rest
        self.bytes_read += rest

    # -- pcap --------------------------------------------------------------
    def _pcap(self, order: str, ticks: int, linktype: int):
        rec = struct.Struct(order + "IIII")
        scale = 1_000_000_000 // ticks
        read = self._read
        while True:
            self.at = self.base + self.bytes_read
            rh = read(16)
            if not rh:
                return
            if len(rh) < 16:
                self._stop(f"record header cut short after {self.records} records", len(rh))
                return
            sec, frac, incl, orig = rec.unpack(rh)
            if incl > _MAX_RECORD:
                self._stop(f"record {self.records + 1}: implausible captured length {incl}", 16)
                return
            data = read(incl)
            if len(data) < incl:
                self._stop(f"record {self.records + 1} cut short: {len(data)} of {incl} bytes",
                           16 + len(data))
                return
            self.records += 1
            self.data_at = self.at + 16
            yield sec * 1_000_000_000 + frac * scale, linktype, data, orig

    # -- pcapng ------------------------------------------------------------
    def _pcapng(self, first: bytes):
        """Blocks from the file object's position; ``first``: bytes of the first
        block already read.  The section's byte order and interfaces are
        :attr:`order` and :attr:`interfaces` (preset them to start mid-section)."""
        order = self.order
        interfaces = self.interfaces
        pending = first
        read = self._read
        while True:
            self.at = self.base + self.bytes_read - len(pending)
            head = pending + read(8 - len(pending))
            pending = b""
            if not head:
                return
            if len(head) < 8:
                self._stop(f"block header cut short after {self.records} packets", len(head))
                return
            if head[:4] == PCAPNG_MAGIC:
                bom = read(4)
                if bom == b"\x4d\x3c\x2b\x1a":
                    order = "<"
                elif bom == b"\x1a\x2b\x3c\x4d":
                    order = ">"
                else:
                    self._stop(f"section header with bad byte-order magic {bom.hex()}", 8 + len(bom))
                    return
                (length,) = struct.unpack(order + "I", head[4:8])
                if length < 28 or length % 4 or length > _MAX_RECORD:
                    self._stop(f"section header with bad length {length}", 12)
                    return
                body = read(length - 12)
                if len(body) < length - 12:
                    self._stop("section header cut short", 12 + len(body))
                    return
                interfaces = self.interfaces = []
                self.order = order
                continue
            btype, length = struct.unpack(order + "II", head)
            if length < 12 or length % 4 or length > _MAX_RECORD:
                self._stop(f"block type {btype:#x} with bad length {length}", 8)
                return
            body = read(length - 8)
            if len(body) < length - 8:
                self._stop(f"block type {btype:#x} cut short: {8 + len(body)} of {length} bytes",
                           8 + len(body))
                return
            body = body[:-4]  # trailing copy of the length
            if btype == 1:  # interface description
                if len(body) < 8:
                    self._stop("interface block too short", 0)
                    return
                linktype = struct.unpack_from(order + "H", body, 0)[0]
                ticks, offset = _idb_options(body[8:], order)
                interfaces.append((linktype, ticks, offset))
            elif btype in (6, 2):  # enhanced packet / obsolete packet
                if len(body) < 20:
                    self._stop(f"packet block too short ({len(body)} bytes)", 0)
                    return
                if btype == 6:
                    iface, hi, lo, cap, orig = struct.unpack_from(order + "IIIII", body, 0)
                else:
                    iface, _drops, hi, lo, cap, orig = struct.unpack_from(order + "HHIIII", body, 0)
                if iface >= len(interfaces) or 20 + cap > len(body):
                    self._stop(f"packet block for unknown interface {iface} or with bad length {cap}", 0)
                    return
                linktype, ticks, offset = interfaces[iface]
                raw = (hi << 32) | lo
                ts = (raw * 1_000_000_000) // ticks + offset * 1_000_000_000
                if not 0 <= ts <= TS_MAX:
                    ts = None
                    self.bad_timestamps += 1
                self.records += 1
                self.data_at = self.at + 28
                yield ts, linktype, bytes(body[20:20 + cap]), orig
            elif btype == 3:  # simple packet: interface 0, no time stamp
                if not interfaces or len(body) < 4:
                    self._stop("simple packet block without an interface", 0)
                    return
                (orig,) = struct.unpack_from(order + "I", body, 0)
                cap = min(orig, len(body) - 4)
                self.records += 1
                self.data_at = self.at + 12
                yield None, interfaces[0][0], bytes(body[4:4 + cap]), orig
            # other blocks (statistics, name resolution, custom...) carry no packets


def _idb_options(opts: bytes, order: str) -> tuple[int, int]:
    ticks, offset = 1_000_000, 0
    pos = 0
    while pos + 4 <= len(opts):
        code, length = struct.unpack_from(order + "HH", opts, pos)
        if code == 0 or pos + 4 + length > len(opts):
            break  # the end, or an option that runs past its block: no more options to trust
        value = opts[pos + 4:pos + 4 + length]
        if code == 9 and length >= 1:  # if_tsresol
            r = value[0]
            ticks = 2 ** (r & 0x7F) if r & 0x80 else 10 ** r
        elif code == 14 and length >= 8:  # if_tsoffset, seconds
            (offset,) = struct.unpack(order + "q", value[:8])
        pos += 4 + length + (-length % 4)
    return ticks or 1_000_000, offset


def packet_batches(paths: list, ports, acc: Accounting, max_frame_size: int, batch_rows: int,
                    batch_bytes: int, limits, cut=None) -> Iterator[FrameBatch]:
    """The files of one capture, in order, through one walker (a connection
    runs on from one file into the next).

    A path may also be an open binary stream (a pipe: read record by record,
    named by its ``name``).  ``cut``: called after each packet that left
    frames in the sink; True hands them out as a batch at once (a live view
    asks whenever its input has nothing more waiting)."""
    walk = walker(ports, acc, max_frame_size, batch_rows=batch_rows, batch_bytes=batch_bytes, **(limits or {}))
    sink = walk.sink
    try:
        for path in paths:
            stream = hasattr(path, "read")
            with contextlib.nullcontext(path) if stream else open(path, "rb") as fh:
                if not stream:
                    acc.file_bytes += os.fstat(fh.fileno()).st_size
                cap = CaptureFile(fh)
                try:
                    if cap.open() == "pcap" and cut is None:
                        # classic pcap: the walker reads the records itself, in large blocks
                        order, ticks, linktype = cap.pcap_header()
                        walk.read_pcap(fh, order == ">", ticks, linktype)
                        while walk.run():
                            yield take_batch(sink)
                    else:
                        for ts, linktype, data, _orig in cap.iter_records():
                            walk.packet(ts, linktype, data)
                            if sink.full() or (cut is not None and sink.size and cut()):
                                walk.flush()
                                yield take_batch(sink)
                finally:
                    walk.flush()
                    if stream:  # a file of another filesystem says its size; a pipe, what was read
                        acc.file_bytes += getattr(path, "known_size", None) or cap.bytes_read
                    error = cap.error or walk.error
                    if error:
                        acc.errors.append(f"{path.name if stream else os.fspath(path)}: {error}")
                    acc.unread_bytes += cap.unread_bytes + walk.unread_bytes
                    acc.bad_timestamps += cap.bad_timestamps
                    walk.error, walk.unread_bytes = None, 0
    finally:
        walk.finish()
    if sink.size or sink.unanswered:
        yield take_batch(sink)
