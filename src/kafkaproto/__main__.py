"""Command line: ``kafkaproto inspect FILE`` prints one line per request frame."""

from __future__ import annotations

import argparse
import sys

from . import COMPILED, KafkaProtocolError, __version__
from .frames import FrameReader
from .headers import decode_request_header


def inspect(path: str, out=sys.stdout) -> int:
    """One line per frame of a raw stream of size-prefixed request frames."""
    reader = FrameReader()
    n = bad = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            for body in reader.feed(chunk):
                n += 1
                try:
                    # header v1 reads v1 and v2 alike up to the client id
                    header, _ = decode_request_header(body, 1)
                except KafkaProtocolError as exc:
                    bad += 1
                    print(f"#{n:<5} undecodable header: {exc}", file=out)
                    continue
                print(f"#{n:<5} api_key={header.api_key:<3} version={header.api_version:<3} "
                      f"correlation_id={header.correlation_id:<6} client_id={header.client_id!r} "
                      f"size={len(body)}", file=out)
    tail = reader.buffered
    print(f"{n} frames ({bad} undecodable), {tail} trailing bytes; core: {'compiled' if COMPILED else 'pure Python'}",
          file=out)
    return 1 if bad else 0


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
