"""Command line: ``kafkaproto inspect FILE`` prints one line per request frame."""

from __future__ import annotations

import argparse
import sys

from . import COMPILED, KafkaProtocolError, __version__
from .frames import FrameReader
from .messages import api_name
from .protocol import decode_request


def _summary(msg) -> str:
    topics = getattr(msg, "topics", None) or getattr(msg, "topic_data", None)
    if topics:
        names = [getattr(t, "name", None) or getattr(t, "topic", None) for t in topics]
        return "topics=" + ",".join(str(n) for n in names)
    if getattr(msg, "client_software_name", ""):
        return f"software={msg.client_software_name}/{msg.client_software_version}"
    if getattr(msg, "key", ""):
        return f"key={msg.key}"
    return ""


def inspect(path: str, out=None) -> int:
    """One line per frame of a raw stream of size-prefixed request frames."""
    out = sys.stdout if out is None else out
    reader = FrameReader()
    n = bad = 0
    removed = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            for body in reader.feed(chunk):
                n += 1
                try:
                    header, msg = decode_request(body)
                except KafkaProtocolError as exc:
                    bad += 1
                    print(f"#{n:<4} undecodable: {exc}", file=out)
                    continue
                gone = not type(msg).NEWEST_VERSIONS or str(header.api_version) not in _versions(msg.NEWEST_VERSIONS)
                removed += gone
                print(f"#{n:<4} {api_name(header.api_key):<16} v{header.api_version:<3} "
                      f"cid={header.correlation_id:<4} client={header.client_id!r:<14} {_summary(msg)}"
                      f"{'  [removed in Kafka 4.0]' if gone else ''}", file=out)
    print(f"{n} frames, {bad} undecodable, {removed} using versions Kafka 4.0 removed, "
          f"{reader.buffered} trailing bytes; core: {'compiled' if COMPILED else 'pure Python'}", file=out)
    return 1 if bad else 0


def _versions(spec: str) -> set:
    out = set()
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        out.update(str(v) for v in range(int(lo), int(hi or lo) + 1))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="kafkaproto", description="Kafka wire-protocol tools")
    parser.add_argument("--version", action="version", version=f"kafkaproto {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("inspect", help="print one line per request frame of a raw frame stream")
    p.add_argument("file")
    args = parser.parse_args(argv)
    if args.command == "inspect":
        return inspect(args.file)
    return 2  # pragma: no cover


if __name__ == "__main__":
    sys.exit(main())
