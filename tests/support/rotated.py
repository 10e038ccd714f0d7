"""A tcpdump-style writer for the live tests: a capture's records rolled
into files where a Kafka frame is cut in a chosen way, and written the way
a capture grows (appended in pieces that cut records anywhere).

- :func:`pcap_records` -- a classic pcap file's header and its records;
- :func:`resegment` -- a capture whose data segments are cut in three
  (inside the size prefix, inside the header, inside the body), as a
  sender with a small window would send them: the same frames;
- :func:`boundaries` -- the records after which a connection's byte stream
  is cut between frames, inside a frame's size prefix or header
  (``mid-header``), or inside its body (``mid-frame``);
- :func:`roll` -- the records rolled into files at given records, named as
  ``tcpdump -C`` names them (``cap.pcap``, ``cap.pcap1``...);
- :func:`grow` -- those files written in random pieces, yielding after each;
- :func:`to_pcapng` -- a rolled file's records as a pcapng file (``dumpcap``'s format);
- :func:`tap_files` -- a capture's frames written by the tap's own writer
  (small record batches, rolled mid-connection): the files' contents, and
  :func:`message_ends`, where each Arrow message of one of them ends.
"""

from __future__ import annotations

import os
import struct
from collections import defaultdict

from kafkaproto.capture import open_capture
from kafkaproto.capture.formats.writer import tcp_packet
from kafkaproto.capture.walker.packets import SYN, decode_tcp

__all__ = ["CLASSES", "boundaries", "grow", "message_ends", "pcap_records", "resegment", "roll", "tap_files",
           "to_pcapng", "write_as_tap"]

CLASSES = ("between", "mid-header", "mid-frame")


def pcap_records(path) -> tuple[bytes, list[bytes], int]:
    """``(file header, records, link type)`` of a classic pcap file."""
    data = open(path, "rb").read()
    order = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    linktype = struct.unpack_from(order + "I", data, 20)[0] & 0xFFFF
    out, pos = [], 24
    while pos + 16 <= len(data):
        incl = struct.unpack_from(order + "I", data, pos + 8)[0]
        if pos + 16 + incl > len(data):
            break
        out.append(data[pos:pos + 16 + incl])
        pos += 16 + incl
    return data[:24], out, linktype


def resegment(path, out) -> None:
    """``path`` written to ``out`` with each data segment of 16 bytes or more
    sent as four: its bytes cut after 2 (a size prefix), 7 (a header) and
    half of them (a body)."""
    head, recs, linktype = pcap_records(path)
    order = "<" if head[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    rec = struct.Struct(order + "IIII")
    with open(out, "wb") as fh:
        fh.write(head)
        for r in recs:
            seg = decode_tcp(linktype, r[16:])
            sec, frac, _incl, _orig = rec.unpack_from(r)
            if isinstance(seg, str) or len(seg.payload) < 16 or seg.flags & SYN:
                fh.write(r)
                continue
            n = len(seg.payload)
            edges = [0, 2, 7, max(8, n // 2), n]
            for a, b in zip(edges, edges[1:]):
                pk = tcp_packet(linktype, seg.src, seg.sport, seg.dst, seg.dport, seg.seq + a, seg.ack, seg.flags,
                                seg.payload[a:b])
                fh.write(rec.pack(sec, frac, len(pk), len(pk)) + pk)


def _endpoint(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def boundaries(path) -> dict[str, list[int]]:
    """For each class of :data:`CLASSES`, the records (indices) whose payload
    ends a connection's bytes there: rolling the capture right after one of
    them cuts that direction's stream that way across two files."""
    frames = open_capture(path).read_table("frames", columns=["client", "server", "direction", "offset", "size"])
    spans: dict = defaultdict(list)
    for f in frames.to_pylist():
        src = f["client"] if f["direction"] == "request" else f["server"]
        dst = f["server"] if f["direction"] == "request" else f["client"]
        spans[(src, dst)].append((f["offset"], f["offset"] + f["size"], 12 if f["direction"] == "request" else 8))
    _head, recs, linktype = pcap_records(path)
    base: dict = {}
    out: dict[str, list[int]] = {c: [] for c in CLASSES}
    for i, rec in enumerate(recs):
        seg = decode_tcp(linktype, rec[16:])
        if isinstance(seg, str):
            continue
        key = (_endpoint(seg.src, seg.sport), _endpoint(seg.dst, seg.dport))
        if seg.flags & SYN:
            base[key] = (seg.seq + 1) & 0xFFFFFFFF
            continue
        if not seg.payload or key not in spans:
            continue
        b = base.setdefault(key, seg.seq)
        end = ((seg.seq - b) & 0xFFFFFFFF) + len(seg.payload)
        for start, stop, head in spans[key]:
            if end == start or end == stop:
                out["between"].append(i)
                break
            if start < end < start + head:
                out["mid-header"].append(i)
                break
            if start + head <= end < stop:
                out["mid-frame"].append(i)
                break
    return out


def roll(path, folder, cuts, name: str = "cap.pcap") -> list[bytes]:
    """The file contents of ``path`` rolled after each record of ``cuts``
    (their names: ``name``, ``name1``...; not written: see :func:`grow`)."""
    head, recs, _lt = pcap_records(path)
    edges = [0, *sorted({c + 1 for c in cuts if 0 <= c + 1 < len(recs)}), len(recs)]
    return [head + b"".join(recs[a:b]) for a, b in zip(edges, edges[1:])]


def to_pcapng(blob: bytes) -> bytes:
    """The records of a pcap file's contents (its header first) in a pcapng
    section (one interface, nanosecond time stamps)."""
    import io

    from kafkaproto.capture.formats.writer import PcapngWriter

    order = "<" if blob[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    scale = 1 if blob[:4] in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d") else 1000
    out = io.BytesIO()
    w = PcapngWriter(out)
    w.interface(struct.unpack_from(order + "I", blob, 20)[0] & 0xFFFF, tsresol=9)
    pos = 24
    while pos + 16 <= len(blob):
        sec, frac, incl, orig = struct.unpack_from(order + "IIII", blob, pos)
        w.write(sec * 1_000_000_000 + frac * scale, blob[pos + 16:pos + 16 + incl], orig_len=orig)
        pos += 16 + incl
    return out.getvalue()


def grow(folder, blobs: list[bytes], rng, most: int = 60_000, name: str = "cap.pcap", names=None, cuts=None):
    """Write each of ``blobs`` as the next rolled file of ``folder`` (named
    ``names[k]``, or as tcpdump names them after ``name``), in pieces of 1
    to ``most`` bytes (cutting records anywhere), or ending at each of
    ``cuts[k]`` (positions in blob ``k``): yields after each piece."""
    os.makedirs(folder, exist_ok=True)
    for k, blob in enumerate(blobs):
        path = os.path.join(folder, names[k] if names else f"{name}{k}" if k else name)
        at = 0
        ends = iter(sorted(set(cuts[k]) | {len(blob)})) if cuts else None
        while at < len(blob):
            step = (next(ends) - at) if ends else rng.randint(1, most)
            with open(path, "ab") as fh:
                fh.write(blob[at:at + step])
            at += step
            yield path


def tap_files(capture, work, *, batch_rows: int = 24, roll_bytes: int = 24_000,
              ends: bool = True) -> list[tuple[str, bytes]]:
    """``[(name, contents)]`` of the files the tap's writer makes of the
    frames of ``capture`` (a pcap file, or a tap folder): a record batch
    every ``batch_rows`` rows, a new file once one passes ``roll_bytes``
    (so connections go on across files), written in ``work``; ``ends``: each
    connection's end row after its last frame (else none: the tap stopped
    with every connection open)."""
    from kafkaproto.capture import read_frames
    from kafkaproto.capture.formats.tapfiles import FrameTableWriter

    with FrameTableWriter(work, batch_rows=batch_rows, roll_bytes=roll_bytes, flush_seconds=1e9) as w:
        if ends:
            write_as_tap(w, read_frames(capture))
        else:
            for f in read_frames(capture):
                w.write(f)
    return [(p.name, p.read_bytes()) for p in w.files]


def write_as_tap(writer, frames) -> None:
    """``frames`` (of a finished capture) written as the tap writes them: each
    connection's end row after its last frame."""
    frames = list(frames)
    last = {f.conn.id: i for i, f in enumerate(frames)}
    for i, f in enumerate(frames):
        writer.write(f)
        if last[f.conn.id] == i:
            writer.end(f.conn, f.ts)


def message_ends(blob: bytes) -> list[int]:
    """Where each message (the schema, each record batch, the end-of-stream
    marker) of an Arrow IPC stream ends."""
    import pyarrow as pa

    src = pa.BufferReader(pa.py_buffer(blob))
    reader = pa.ipc.MessageReader.open_stream(src)
    out = []
    while True:
        try:
            reader.read_next_message()
        except StopIteration:
            if src.tell() > (out[-1] if out else 0):
                out.append(src.tell())
            return out
        out.append(src.tell())
