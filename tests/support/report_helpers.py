"""Shared pieces of the report tests: damaged synthetic captures and headless
Chromium (their Spark session is the run's shared one: the ``spark`` fixture,
tests/support/spark_session.py)."""

from __future__ import annotations

import os
import random
import shutil
import struct
import subprocess
from pathlib import Path

from kafkaproto.capture.formats.pcap import CaptureFile
from kafkaproto.capture.formats.writer import PcapngWriter, PcapWriter, TcpConversation
from kafkaproto.capture.walker.packets import LINKTYPE_ETHERNET

# comparing two report outputs: the package's own comparison, under the names the tests use
from kafkaproto.report.compare import TABLE_NAMES  # noqa: F401
from kafkaproto.report.compare import figures as report_figures  # noqa: F401
from kafkaproto.report.compare import tables as report_tables  # noqa: F401

from .synthetic import write_capture

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "capture"

# ---------------------------------------------------------------------------
# damaged captures


def damaged_captures(folder: Path):
    """A clean synthetic capture (with its manifest) and damaged ones; returns
    (manifest, {name: path})."""
    folder.mkdir(parents=True, exist_ok=True)
    clean = folder / "clean.pcap"
    manifest = write_capture(clean, size=600_000, seed=7, keep_records=True, connections=1)
    data = clean.read_bytes()
    paths = {"clean.pcap": clean}
    # cut in the middle of a packet record
    (folder / "truncated.pcap").write_bytes(data[: len(data) // 2 + 7])
    paths["truncated.pcap"] = folder / "truncated.pcap"
    # random bytes over the middle: damaged records, frames and batches
    rng = random.Random(3)
    buf = bytearray(data)
    for _ in range(40):
        at = rng.randrange(1000, len(buf) - 64)
        buf[at:at + 16] = bytes(rng.randrange(256) for _ in range(16))
    (folder / "corrupt.pcap").write_bytes(bytes(buf))
    paths["corrupt.pcap"] = folder / "corrupt.pcap"
    # packets lost by the capture: every 9th data packet dropped
    paths["gaps.pcap"] = _drop_packets(clean, folder / "gaps.pcap", every=9)
    # web and database traffic, no Kafka
    paths["not-kafka.pcap"] = _not_kafka(folder / "not-kafka.pcap")
    # not a capture at all
    (folder / "noise.bin").write_bytes(bytes(rng.randrange(256) for _ in range(5000)))
    paths["noise.bin"] = folder / "noise.bin"
    # tap output: a whole file beside an empty one (killed between creating it and
    # its first batch), one cut inside its schema header and a foreign file; and
    # a file cut inside a batch
    tap = next((SAMPLE / "tap-mock").glob("*.arrows")).read_bytes()
    damaged = folder / "tap-damaged"
    damaged.mkdir()
    (damaged / "frames-1.arrows").write_bytes(tap)
    (damaged / "frames-2.arrows").write_bytes(b"")
    (damaged / "frames-3.arrows").write_bytes(tap[:300])
    (damaged / "notes.txt").write_bytes(b"not a table\n")
    paths["tap-damaged"] = damaged
    cut = folder / "tap-cut"
    cut.mkdir()
    (cut / "frames-1.arrows").write_bytes(tap[:100_000])
    paths["tap-cut"] = cut
    return manifest, paths


def hostile_pcapngs(clean: Path, folder: Path) -> dict[str, Path]:
    """The packets of ``clean`` (a pcap) rewritten as pcapng files whose time
    stamps no time column can hold: a 1-second resolution with huge raw
    values, a huge or very negative ``if_tsoffset``, raw values with the top
    bit set (negative when read as signed), and a file where good and bad
    time stamps alternate within each connection."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(clean, "rb") as fh:
        packets = [(ts, data) for ts, _lt, data, _orig in CaptureFile(fh)]
    top = (1 << 64) - 1
    cases = {
        # if_tsresol 0: one tick a second; raw values near 2**64 seconds
        "coarse-huge.pcapng": (dict(tsresol=0), lambda i, ts: top - len(packets) + i),
        # 2**62 seconds added to every time stamp
        "huge-offset.pcapng": (dict(tsresol=9, tsoffset=1 << 62), None),
        # before 1970 by far: -2**62 seconds
        "negative-offset.pcapng": (dict(tsresol=9, tsoffset=-(1 << 62)), None),
        # top bit set: 2**63 ns and more
        "top-bit.pcapng": (dict(tsresol=9), lambda i, ts: (1 << 63) + i),
        # every other packet's time stamp is out of range
        "mixed.pcapng": (dict(tsresol=0), lambda i, ts: ts // 1_000_000_000 if i % 2 else top - i),
    }
    out = {}
    for name, (iface, ticks) in cases.items():
        with open(folder / name, "wb") as fh:
            w = PcapngWriter(fh)
            w.interface(LINKTYPE_ETHERNET, **iface)
            for i, (ts, data) in enumerate(packets):
                w.write(ts, data, ticks=None if ticks is None else ticks(i, ts))
        out[name] = folder / name
    return out


def hostile_tap(folder: Path) -> Path:
    """A tap table whose time stamps no nanosecond column can hold (2**62 µs,
    before 1970), with a paired request and response and a request left
    unanswered."""
    from kafkaproto import encode_request, encode_response
    from kafkaproto.capture.formats.tapfiles import FrameTableWriter
    from kafkaproto.capture.objects import CapturedFrame
    from kafkaproto.capture.walker.streams import Connection
    from kafkaproto.messages import MetadataRequest, MetadataResponse

    conn = Connection(1, "127.0.0.1:1", "127.0.0.1:9092")
    out = folder / "hostile-tap"
    with FrameTableWriter(out, fmt="arrow") as w:
        for i, ts in enumerate(((1 << 62) * 1000, -(10 ** 18), (1 << 62) * 1000 + 5)):
            w.write(CapturedFrame(ts, conn, "request", i * 100,
                                  encode_request(MetadataRequest(topics=[]), 9, i, "c")[4:], 3, 9, i))
            if i < 2:
                w.write(CapturedFrame(ts + 1000, conn, "response", i * 100,
                                      encode_response(MetadataResponse(brokers=[]), 9, i)[4:], 3, 9, i, ts))
    return out


def _records(data: bytes):
    pos = 24
    while pos + 16 <= len(data):
        incl = struct.unpack_from("<I", data, pos + 8)[0]
        yield data[pos:pos + 16 + incl]
        pos += 16 + incl


def _drop_packets(src: Path, dst: Path, every: int) -> Path:
    data = src.read_bytes()
    out = [data[:24]]
    n = 0
    for rec in _records(data):
        if len(rec) > 16 + 54 + 100:  # a data packet (Ethernet + IP + TCP headers, then payload)
            n += 1
            if n % every == 0:
                continue
        out.append(rec)
    dst.write_bytes(b"".join(out))
    return dst


def _not_kafka(path: Path) -> Path:
    with open(path, "wb") as fh:
        w = PcapWriter(fh, LINKTYPE_ETHERNET)
        for port, ask, answer in ((80, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"HTTP/1.1 200 OK\r\n\r\n" + b"x" * 3000),
                                  (5432, b"\x00\x00\x00\x08\x04\xd2\x16\x2f", b"N")):
            conv = TcpConversation(("10.9.0.2", 50000 + port), ("10.9.0.1", port))
            for ts, pkt in conv.handshake() + conv.send(True, ask) + conv.send(False, answer) + conv.close():
                w.write(ts, pkt)
    return path


# ---------------------------------------------------------------------------
# PNG and Chromium


def chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        raise RuntimeError("chromium is not installed: run tools/peers/install_peers.sh (Debian package chromium)")
    return exe


def run_chromium(url: str, profile: Path, *args: str, timeout: float = 90):
    """Headless Chromium on ``url`` with a fresh profile; (stdout, stderr)."""
    cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
           f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *args, url]
    env = dict(os.environ, HOME=str(profile))
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    return p.stdout, p.stderr

