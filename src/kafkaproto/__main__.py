"""Command line.

``kafkaproto inspect CAPTURE``  one line per frame of a pcap/pcapng file (or a
                               folder of them: one capture rolled into files),
                               a tap capture (Arrow/Parquet, file or folder) or
                               a raw stream of size-prefixed request frames
``kafkaproto tap ...``         a recording proxy in front of Kafka brokers
``kafkaproto report CAPTURE... --out DIR``
                               the traffic report on Spark: Parquet tables,
                               a terminal summary and an HTML page
``kafkaproto dump-log FILE...`` Kafka's log segments, indexes and snapshots
                               as kafka-dump-log.sh prints them, as JSON
                               lines, or as a Parquet table
"""

from __future__ import annotations

import argparse
import os
import sys

from . import COMPILED, __version__
from .capture import Accounting, CaptureFormatError, capture_kind, read_frames
from .capture.dissect import dissect, format_line, removed_in_kafka4


def inspect(path: str, out=None, ports=None, limit: int | None = None) -> int:
    """Print one line per frame, then the accounting; 1 if a frame did not decode.

    Damaged tap output (an empty file, one cut in its schema header or inside
    a batch, a file that is not a frame table) is read as far as it is whole
    and named in ``error:`` lines with the file bytes left unread; the status
    stays 0 when anything was read, and is 2 when nothing of it was readable.
    """
    out = sys.stdout if out is None else out
    acc = Accounting()
    try:
        kind = capture_kind(path)
    except OSError as exc:
        print(f"kafkaproto: cannot read {path}: {exc}", file=out)
        return 2
    n = bad = removed = 0
    frames = None
    if kind == "table" and os.path.isdir(path):
        from .capture.segments import packet_files

        rolled = packet_files(path)
        if rolled:  # a folder of pcap/pcapng files: one capture rolled into files, read as one
            from .capture.segments import read_frames_ranged

            kind = "pcap"
            frames = read_frames_ranged(rolled, 1 << 62, ports=ports, acc=acc)
    try:
        for n, d in enumerate(dissect(frames or read_frames(path, ports=ports, acc=acc), acc), 1):
            if d.error is not None:
                bad += 1
            elif removed_in_kafka4(d.frame.api_key, d.frame.api_version):
                removed += 1
            if limit is None or n <= limit:
                print(format_line(n, d, with_place=kind != "raw"), file=out)
    except CaptureFormatError as exc:
        print(f"kafkaproto: {path}: {exc}", file=out)
        return 2
    print(f"{n} frames, {bad} undecodable, {removed} using versions Kafka 4.0 removed, "
          f"{acc.bytes['truncated']} trailing bytes; core: {'compiled' if COMPILED else 'pure Python'}", file=out)
    if kind != "raw":
        print(acc.format(), file=out)
    if kind == "table" and not acc.frames_total and acc.errors:
        return 2  # damaged files, and no frame in any of them
    return 1 if bad else 0


def report(args) -> int:
    """``kafkaproto report``: run the job, print the summary and where the page is."""
    import glob
    import os

    def exists(c: str) -> bool:
        if os.path.exists(c) or glob.glob(c):
            return True
        name, _, paths = c.partition("=")
        return bool(paths) and all(os.path.exists(p) or glob.glob(p) for p in paths.split(","))

    missing = [c for c in args.captures if not exists(c)]
    if missing:
        print(f"kafkaproto report: no such capture: {', '.join(missing)}", file=sys.stderr)
        return 2
    try:
        from .report import run_report
    except ImportError as exc:  # pragma: no cover - the spark extra is missing
        print(f"kafkaproto report needs pyspark and pyarrow: pip install 'kafkaproto[spark]' ({exc})", file=sys.stderr)
        return 2
    conf = dict(kv.split("=", 1) for kv in args.conf)
    split = {k: v for k, v in (("range_bytes", args.range_bytes), ("whole_file_max", args.whole_file_max))
             if v is not None}
    result = run_report(args.captures, args.out, master=args.master, remote=args.remote, ports=args.ports,
                        progress=not args.quiet, conf=conf, **split)
    print(result.summary)
    acc = result.data.accounting
    return 0 if acc is None or not acc.problems() else 1


def dump_log(args) -> int:
    """``kafkaproto dump-log``: text (as kafka-dump-log.sh), JSON lines or Parquet."""
    files = list(args.files) + [f for group in args.files_opt for f in group.split(",") if f]
    if not files:
        print("kafkaproto dump-log: no files (give them as arguments or with --files a,b,...)", file=sys.stderr)
        return 2
    try:
        from .log import dump as kdump
    except ImportError as exc:  # pragma: no cover - the capture extra is missing
        print(f"kafkaproto dump-log needs pyarrow: pip install 'kafkaproto[capture]' ({exc})", file=sys.stderr)
        return 2
    if args.format == "parquet":
        if not args.out:
            print("kafkaproto dump-log: --format parquet needs --out FILE", file=sys.stderr)
            return 2
        try:
            rows, status = kdump.dump_parquet(files, args.out, batches=args.batches, check_crc=not args.no_check_crc,
                                              control=args.control)
        except OSError as exc:
            print(f"kafkaproto dump-log: {exc}", file=sys.stderr)
            return 2
        print(f"{rows} {'batches' if args.batches else 'rows'} written to {args.out}", file=sys.stderr)
        return status
    out = sys.stdout if not args.out else open(args.out, "w", encoding="utf-8")
    try:
        return kdump.dump(files, out, print_data_log=args.print_data_log, deep_iteration=args.deep_iteration,
                          skip_record_metadata=args.skip_record_metadata, max_bytes=args.max_bytes,
                          key_encoding=args.key_encoding, value_encoding=args.value_encoding, fmt=args.format,
                          check_crc=not args.no_check_crc)
    finally:
        if out is not sys.stdout:
            out.close()


def _bytes(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().rstrip("B")
    return int(float(text[:-1]) * units[text[-1]]) if text and text[-1] in units else int(text)


def _ports(text: str) -> set:
    return {int(p) for p in text.split(",") if p.strip()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="kafkaproto", description="Kafka wire-protocol tools")
    parser.add_argument("--version", action="version", version=f"kafkaproto {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("inspect", help="one line per frame of a capture (pcap, pcapng, tap output, raw frames)")
    p.add_argument("file")
    p.add_argument("--ports", type=_ports, default=None,
                   help="brokers' TCP ports, comma-separated (default: detect Kafka connections)")
    p.add_argument("--limit", type=int, default=None, help="print at most this many frame lines")
    from .capture.tap import add_tap_arguments, run_tap_cli

    add_tap_arguments(sub.add_parser("tap", help="recording proxy: forward bytes, record every frame"))
    r = sub.add_parser("report", help="captures -> Parquet tables, a summary and an HTML report (Spark)")
    r.add_argument("captures", nargs="+", metavar="CAPTURE",
                   help="a pcap/pcapng file; a folder of them (one capture rolled into files by tcpdump -C/-G); "
                        "NAME=FILE,FILE... (or a quoted glob); tap output (files or folders); raw request streams")
    r.add_argument("--out", required=True, help="folder (or URI) for the tables, report.html and summary.txt")
    r.add_argument("--master", default=None, help="Spark master (default local[*]); passed to Spark unchanged")
    r.add_argument("--remote", default=None, metavar="sc://HOST:PORT", help="run on a Spark Connect server instead")
    r.add_argument("--range-bytes", type=_bytes, default=None,
                   help="byte ranges a large or rolled capture is read in (default 128M)")
    r.add_argument("--whole-file-max", type=_bytes, default=None,
                   help="a capture of one file up to this size is read whole by one task (default: 256M on 6 "
                        "cores or more, else any size; 0: always in byte ranges)")
    r.add_argument("--ports", type=_ports, default=None,
                   help="brokers' TCP ports, comma-separated (default: detect Kafka connections)")
    r.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="extra Spark setting")
    r.add_argument("--quiet", action="store_true", help="no progress lines")
    d = sub.add_parser("dump-log", help="Kafka log segments, indexes and snapshots as kafka-dump-log.sh prints "
                                        "them, as JSON lines or as Parquet")
    d.add_argument("files", nargs="*", metavar="FILE",
                   help=".log, .index, .timeindex, .txnindex, .snapshot files, or partition folders "
                        "(local paths or URIs: s3://..., file://...)")
    d.add_argument("--files", dest="files_opt", action="append", default=[], metavar="A,B,...",
                   help="files, comma-separated (as kafka-dump-log.sh takes them)")
    d.add_argument("--print-data-log", action="store_true", help="print the records' keys and values")
    d.add_argument("--deep-iteration", action="store_true", help="a line per record (implied by --print-data-log)")
    d.add_argument("--skip-record-metadata", action="store_true", help="record lines without offsets and sizes")
    d.add_argument("--max-bytes", type=_bytes, default=None, help="read only the batches in a file's first bytes")
    d.add_argument("--format", choices=("text", "json", "parquet"), default="text",
                   help="text: as kafka-dump-log.sh; json: a JSON object per batch; parquet: the records table")
    d.add_argument("--out", default=None, help="write here instead of standard output (needed for parquet)")
    d.add_argument("--batches", action="store_true", help="parquet: the batches table instead of the records")
    d.add_argument("--control", action="store_true", help="parquet: control records as rows too")
    d.add_argument("--key-encoding", choices=("utf8", "hex", "base64"), default="utf8",
                   help="how keys are shown (utf8: as Kafka's string decoder)")
    d.add_argument("--value-encoding", choices=("utf8", "hex", "base64"), default="utf8",
                   help="how values (and, in JSON, header values) are shown")
    d.add_argument("--no-check-crc", action="store_true", help="do not verify batch checksums")
    args = parser.parse_args(argv)
    if args.command == "dump-log":
        return dump_log(args)
    if args.command == "report":
        return report(args)
    if args.command == "inspect":
        return inspect(args.file, ports=args.ports, limit=args.limit)
    if args.command == "tap":
        return run_tap_cli(args)
    return 2  # pragma: no cover


if __name__ == "__main__":
    sys.exit(main())
