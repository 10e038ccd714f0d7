"""Command line.

``kafkaproto inspect CAPTURE``  one line per frame of a pcap/pcapng file (or a
                               folder of them: one capture rolled into files),
                               a tap capture (Arrow/Parquet, file or folder) or
                               a raw stream of size-prefixed request frames;
                               ``-`` or a pipe read as the bytes come; filters,
                               field dumps (--verbose), JSON (--json)
``kafkaproto tap ...``         a recording proxy in front of Kafka brokers
``kafkaproto report CAPTURE... --out DIR``
                               the traffic report: Parquet tables, a terminal
                               summary and an HTML page (embedded engine, or
                               Spark with --master/--remote)
``kafkaproto report --follow DIR``
                               the report live, over a capture that grows
                               (tcpdump's rolled pcap files, or one pcap being
                               written): a terminal view, the page and tables
                               rewritten every few seconds
``kafkaproto dump-log FILE...`` Kafka's log segments, indexes and snapshots
                               as kafka-dump-log.sh prints them, as JSON
                               lines, or as a Parquet table
"""

from __future__ import annotations

import argparse
import errno
import os
import sys

from . import __version__

# The library does no linear algebra: NumPy's OpenBLAS would start a thread
# per core when NumPy is first imported (a tenth of a CPU-second, and the
# threads spin) for nothing.  Only the command does this; the library leaves
# its caller's process as it finds it.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


#: set by :func:`run`: the process is the command's own, its collector the command's to tune (a caller of
#: :func:`main` keeps its process as it is)
_own_process = False
#: the command's collector runs once this many more objects were made than freed (Python's default: 700)
_COLLECT_EVERY = 50_000


def _settle() -> None:
    """A command's imports done: the objects so far (the modules it imported:
    some fifty thousand, all kept to the end) moved out of the collector's
    reach, so that its full collections walk only what the command made (on
    the 105 MB bench capture, the report's one full collection, 60-90 ms, is
    gone)."""
    if not _own_process:
        return
    import gc

    gc.freeze()


def inspect(path: str, out=None, ports=None, limit: int | None = None, *, err=None, apis=None, clients=None,
            connections=None, since=None, until=None, errors: bool = False, json: bool = False,
            verbose: bool = False) -> int:
    """``kafkaproto inspect``: one line per frame (or a field dump, or one
    JSON object), then the summary and the accounting (see
    :func:`kafkaproto.capture.tools.inspect.inspect`).

    Damaged tap output (an empty file, one cut in its schema header or inside
    a batch, a file that is not a frame table) is read as far as it is whole
    and named in ``error:`` lines with the file bytes left unread; the status
    stays 0 when anything was read, and is 2 when nothing of it was readable.
    Input that is no capture at all gives status 2 and says why on ``err``.
    """
    from .capture.tools.inspect import FrameFilter
    from .capture.tools.inspect import inspect as run

    _settle()
    flt = FrameFilter(apis, clients, connections, since, until)
    return run(path, out, err=err, ports=ports, limit=limit, flt=flt, errors_only=errors, json_out=json,
               verbose=verbose)


def follow(args) -> int:
    """``kafkaproto report --follow``: the live view until Ctrl-C (or ``--duration``)."""
    import time

    _settle()

    if args.captures:
        print("kafkaproto report: --follow takes the capture as its value, not CAPTURE arguments", file=sys.stderr)
        return 2
    try:
        from .report.live import follow as run
    except ImportError as exc:  # pragma: no cover - the capture extra is missing
        print(f"kafkaproto report --follow needs pyarrow: pip install 'kafkaproto[capture]' ({exc})", file=sys.stderr)
        return 2
    until = None if args.duration is None else time.monotonic() + args.duration
    try:
        run(args.follow, args.out, refresh=args.refresh, window=args.window or None, ports=args.ports,
            starting="earliest" if args.from_start else "latest",
            stop=None if until is None else (lambda: time.monotonic() >= until))
    except (OSError, ValueError) as exc:
        print(f"kafkaproto report: {args.follow}: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        _stdout_gone()
    return 0


def report(args) -> int:
    """``kafkaproto report``: run the job, print the summary and where the page is."""
    import glob
    import os

    if args.follow is not None:
        return follow(args)
    if not args.captures or not args.out:
        print("kafkaproto report: give CAPTURE... and --out DIR (or --follow DIR)", file=sys.stderr)
        return 2

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
        from .report.job import ReportOutputError, WorkerError
    except ImportError as exc:  # pragma: no cover - the spark extra is missing
        print(f"kafkaproto report needs pyspark and pyarrow: pip install 'kafkaproto[spark]' ({exc})", file=sys.stderr)
        return 2
    problem = _not_captures(args.captures)
    if problem:
        print(f"kafkaproto report: {problem}", file=sys.stderr)
        return 2
    _settle()
    conf = dict(kv.split("=", 1) for kv in args.conf)
    split = {k: v for k, v in (("range_bytes", args.range_bytes), ("whole_file_max", args.whole_file_max))
             if v is not None}
    if args.workers is not None:
        split["workers"] = args.workers
    try:
        result = run_report(args.captures, args.out, master=args.master, remote=args.remote, ports=args.ports,
                            progress=not args.quiet, conf=conf, payloads=not args.no_payloads, **split)
    except (ReportOutputError, WorkerError) as exc:
        print(f"kafkaproto report: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        if exc.errno in _WRITE_ERRORS:  # the disk filled, or went read-only, while the tables were written
            print(f"kafkaproto report: {args.out}: cannot write the report: {os.strerror(exc.errno)}", file=sys.stderr)
        else:  # a capture that cannot be read (its path is in the message)
            print(f"kafkaproto report: {exc}", file=sys.stderr)
        return 2
    acc = result.data.accounting
    status = 0 if acc is None or not acc.problems() else 1
    try:
        print(result.summary)
        sys.stdout.flush()
    except BrokenPipeError:  # kafkaproto report ... | head: the tables and the page are written
        _stdout_gone()
    return status


#: errors of writing to a file system, whichever file it was: the report's output
_WRITE_ERRORS = frozenset(getattr(errno, n) for n in ("ENOSPC", "EDQUOT", "EFBIG", "EROFS") if hasattr(errno, n))


def _not_captures(captures) -> str | None:
    """Why ``captures`` cannot be reported on, as ``inspect`` would say it (a file
    that is no capture: not pcap or pcapng, not a tap table, and no Kafka
    request frame at its start; an empty file), or None."""
    from .capture import capture_kind, open_capture
    from .capture.tools.inspect import InputError, check_raw

    try:
        ds = open_capture(captures)
        for c in ds.captures:
            for path in [] if c.packets or ds.filesystem is not None else c.paths:
                if os.path.isfile(path) and capture_kind(path) == "raw":
                    check_raw(path)
    except (InputError, ValueError, OSError) as exc:
        return str(exc)
    return None


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
    _settle()
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
    try:
        out = sys.stdout if not args.out else open(args.out, "w", encoding="utf-8")
    except OSError as exc:
        print(f"kafkaproto dump-log: cannot write {args.out}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    try:
        return kdump.dump(files, out, print_data_log=args.print_data_log, deep_iteration=args.deep_iteration,
                          skip_record_metadata=args.skip_record_metadata, max_bytes=args.max_bytes,
                          key_encoding=args.key_encoding, value_encoding=args.value_encoding, fmt=args.format,
                          check_crc=not args.no_check_crc, decoder=args.decoder,
                          verify_index_only=args.verify_index_only, index_sanity_check=args.index_sanity_check,
                          max_message_size=args.max_message_size)
    finally:
        if out is not sys.stdout:
            out.close()


def _bytes(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().rstrip("B")
    return int(float(text[:-1]) * units[text[-1]]) if text and text[-1] in units else int(text)


def _ports(text: str) -> set:
    return {int(p) for p in text.split(",") if p.strip()}


def _apis(text: str) -> set:
    from .capture.tools.inspect import parse_apis

    try:
        return parse_apis(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _time(text: str):
    from .capture.tools.inspect import parse_time

    try:
        return parse_time(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a time: {text!r} (ISO 8601, UTC unless it says otherwise; "
                                         "seconds since the epoch; or a time of day as inspect prints it)") from None


def _stdout_gone() -> None:
    """Standard output was closed by its reader (``| head``): whatever is still
    buffered goes nowhere, quietly (not a BrokenPipeError at exit)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="kafkaproto", description="Kafka wire-protocol tools")
    parser.add_argument("--version", action="version", version=f"kafkaproto {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("inspect", help="the frames of a capture (pcap, pcapng, tap output, raw frames), one line "
                                       "each, as field dumps or as JSON; - or a pipe: read as the bytes come",
                       description="Decode every Kafka frame of a capture. FILE: a pcap/pcapng file, a folder of "
                                   "rolled ones, tap output (a file or folder), a raw stream of size-prefixed "
                                   "request frames; - (standard input), a FIFO or a pipe is read as a stream "
                                   "(tcpdump -w - ... | kafkaproto inspect -) and each frame printed as it comes.")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--ports", type=_ports, default=None,
                   help="brokers' TCP ports, comma-separated (default: detect Kafka connections)")
    p.add_argument("--limit", type=int, default=None,
                   help="print at most this many frames (a file is still read to its end for the summary; "
                        "a stream stops there)")
    p.add_argument("--api", type=_apis, action="append", default=None, metavar="API",
                   help="only these APIs, by name or key, comma-separated or repeated (Produce,Fetch or 0,1; "
                        "a response by its request's)")
    p.add_argument("--client", action="append", default=None, metavar="CLIENT_ID",
                   help="only frames of this client id (a shell pattern: 'billing-*'); repeat for more")
    p.add_argument("--connection", action="append", default=None, metavar="CONN",
                   help="only this connection: its number as printed (c12), an endpoint (10.0.0.5:40012, "
                        "either side) or a host; repeat for more")
    p.add_argument("--errors", action="store_true",
                   help="only frames that did not decode (unpaired responses included) or carry a non-zero "
                        "error code")
    p.add_argument("--since", type=_time, default=None, metavar="TIME",
                   help="only frames at or after TIME (2026-11-23T02:35:23.25, UTC unless it says otherwise; "
                        "epoch seconds; or a time of day as printed, on the capture's first day)")
    p.add_argument("--until", type=_time, default=None, metavar="TIME", help="only frames at or before TIME")
    shape = p.add_mutually_exclusive_group()
    shape.add_argument("--json", action="store_true",
                       help="one JSON object per frame and line (every field of its version; bytes in base64, "
                            "UUIDs as text); the summary goes to standard error")
    shape.add_argument("-v", "--verbose", action="store_true", help="each frame's header and fields, indented")
    from ._tap_args import add_tap_arguments

    add_tap_arguments(sub.add_parser("tap", help="recording proxy: forward bytes, record every frame"))
    r = sub.add_parser("report", help="captures -> Parquet tables, a summary and an HTML report "
                                      "(embedded engine, or Spark with --master/--remote)")
    r.add_argument("captures", nargs="*", metavar="CAPTURE",
                   help="a pcap/pcapng file; a folder of them (one capture rolled into files by tcpdump -C/-G); "
                        "NAME=FILE,FILE... (or a quoted glob); tap output (files or folders); raw request streams")
    r.add_argument("--out", default=None, help="folder (or URI) for the tables, report.html and summary.txt "
                                               "(with --follow: a local folder, optional)")
    r.add_argument("--follow", default=None, metavar="DIR",
                   help="follow a capture that grows (a folder tcpdump rolls pcap files into, or one pcap file "
                        "being written): a terminal view refreshed every --refresh seconds, and the page and the "
                        "window's tables under --out rewritten")
    r.add_argument("--refresh", type=float, default=2.0, help="--follow: seconds between refreshes (default 2)")
    r.add_argument("--window", type=float, default=300.0,
                   help="--follow: seconds of traffic the figures cover (default 300; 0: all since the start)")
    r.add_argument("--from-start", action="store_true", help="--follow: read the capture from its start, "
                                                            "not from what is written from now on")
    r.add_argument("--duration", type=float, default=None, help="--follow: stop after this many seconds")
    r.add_argument("--workers", type=int, default=None,
                   help="worker processes of the embedded engine (default: the machine's cores)")
    r.add_argument("--master", default=None,
                   help="run on Spark with this master (local[*], spark://..., yarn): passed to Spark unchanged")
    r.add_argument("--remote", default=None, metavar="sc://HOST:PORT", help="run on a Spark Connect server")
    r.add_argument("--range-bytes", type=_bytes, default=None,
                   help="byte ranges a large or rolled capture is read in (default 128M)")
    r.add_argument("--whole-file-max", type=_bytes, default=None,
                   help="a capture up to this size is read whole by one task (default: embedded, the larger of "
                        "64M and a core's share of the input on 4 workers or more, else any size; Spark, 256M on "
                        "6 cores or more, else any size; 0: always in byte ranges)")
    r.add_argument("--ports", type=_ports, default=None,
                   help="brokers' TCP ports, comma-separated (default: detect Kafka connections)")
    r.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="extra Spark setting")
    r.add_argument("--no-payloads", action="store_true",
                   help="the records table without the records' contents: key, value and headers null (never "
                        "copied, and no figure reads them: for traffic whose payloads must not be kept, and less "
                        "CPU); --follow keeps no records table")
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
    d.add_argument("--no-check-crc", action="store_true",
                   help="do not hold a batch whose checksum does not match for damage (print it, isvalid: false)")
    for flag, name, what in (("--offsets-decoder", "offsets", "__consumer_offsets"),
                             ("--transaction-log-decoder", "transaction-log", "__transaction_state"),
                             ("--share-group-state-decoder", "share-group-state", "__share_group_state"),
                             ("--cluster-metadata-decoder", "cluster-metadata",
                              "__cluster_metadata (and its snapshots)"),
                             ("--remote-log-metadata-decoder", "remote-log-metadata", "__remote_log_metadata")):
        d.add_argument(flag, dest="decoder", action="store_const", const=name,
                       help=f"print the records as the records of {what} (as Kafka's tool does)")
    d.add_argument("--verify-index-only", action="store_true",
                   help=".index, .timeindex: check every entry against the log, print only what disagrees")
    d.add_argument("--index-sanity-check", action="store_true",
                   help=".index, .timeindex: the check a broker makes at start-up, nothing else")
    d.add_argument("--max-message-size", type=_bytes, default=5 * 1024 * 1024,
                   help=".index: the largest batch an entry may point at (default 5 MiB, as Kafka's tool)")
    k = sub.add_parser("mock", help="an in-memory Kafka cluster on 127.0.0.1 for tests: prints the bootstrap "
                                    "servers, runs until interrupted",
                       description="Start kafkaproto's mock Kafka cluster (kafkaproto.mock) and print its bootstrap "
                                   "string on a line of its own; it runs until interrupted (Ctrl-C, SIGTERM) or "
                                   "standard input closes, with --until-eof.")
    k.add_argument("--brokers", type=int, default=3, help="brokers (default 3)")
    k.add_argument("--topic", action="append", default=[], metavar="NAME[:PARTITIONS]",
                   help="a topic to create (default 1 partition); repeat for more")
    k.add_argument("--partitions", type=int, default=1, help="partitions of topics created on first use")
    k.add_argument("--port", type=int, default=0,
                   help="the first broker's port (the others follow it); default: free ports")
    k.add_argument("--user", action="append", default=[], metavar="NAME:PASSWORD",
                   help="require SASL (PLAIN, SCRAM-SHA-256/512) with these users; repeat for more")
    k.add_argument("--until-eof", action="store_true", help="stop when standard input closes")
    args = parser.parse_args(argv)
    try:
        status = _run(args)
        sys.stdout.flush()
    except BrokenPipeError:  # kafkaproto inspect ... | head: the reader has what it wanted
        _stdout_gone()
        return 0
    return status


def mock(args) -> int:
    """``kafkaproto mock``: run a mock cluster until interrupted."""
    import signal
    import threading

    from .mock import MockCluster

    topics = {}
    for spec in args.topic:
        name, _, n = spec.partition(":")
        if not name or n and not n.isdigit():
            print(f"kafkaproto mock: --topic {spec!r}: give NAME or NAME:PARTITIONS", file=sys.stderr)
            return 2
        topics[name] = int(n or 1)
    users = {}
    for spec in args.user:
        name, sep, password = spec.partition(":")
        if not sep or not name:
            print(f"kafkaproto mock: --user {spec!r}: give NAME:PASSWORD", file=sys.stderr)
            return 2
        users[name] = password
    if args.brokers < 1:
        print("kafkaproto mock: --brokers: at least 1", file=sys.stderr)
        return 2
    try:
        # record=False: nothing reads the exchanges of a cluster run from the shell
        cluster = MockCluster(args.brokers, topics, partitions=args.partitions, users=users or None,
                              first_port=args.port or None, record=False).start()
    except OSError as exc:
        print(f"kafkaproto mock: cannot listen: {exc}", file=sys.stderr)
        return 2
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    if args.until_eof:
        threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
    print(cluster.bootstrap, flush=True)
    try:
        while not done.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        cluster.stop()
    return 0


def _run(args) -> int:
    if args.command == "mock":
        _settle()
        return mock(args)
    if args.command == "dump-log":
        return dump_log(args)
    if args.command == "report":
        return report(args)
    if args.command == "inspect":
        return inspect(args.file, ports=args.ports, limit=args.limit, apis=set().union(*args.api) if args.api else None,
                       clients=args.client, connections=args.connection, since=args.since, until=args.until,
                       errors=args.errors, json=args.json, verbose=args.verbose)
    if args.command == "tap":
        _settle()
        from .capture.tools.tap import run_tap_cli

        live = None
        if args.report is not None:
            from .report.live import TapReport

            live = TapReport(args.report, refresh=args.refresh, window=args.window or None, view=sys.stdout,
                             log=sys.stdout)
        return run_tap_cli(args, live)
    return 2  # pragma: no cover


#: commands that hand pyarrow no pandas objects.  pyarrow imports pandas (when
#: installed) on its first conversion, to look for them: a third of a
#: ``dump-log`` run on a 64 MiB segment, half a CPU-second of a report on the
#: embedded engine.  Their processes go without it (a report on Spark keeps it:
#: PySpark's Arrow exchange uses it).
_NO_PANDAS = frozenset({"dump-log", "inspect", "report"})


class _WithoutPandas:
    """A finder that answers "not installed" for pandas (see :data:`_NO_PANDAS`)."""

    def find_spec(self, name, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError("this kafkaproto command runs without pandas", name=name)
        return None


def run() -> None:
    """The process's entry (the ``kafkaproto`` script, ``python -m kafkaproto``):
    :func:`main` on ``sys.argv``, without pandas for the commands that never use it."""
    import gc

    global _own_process
    _own_process = True
    # A command makes hundreds of thousands of objects that live to its end (its imports; a report's
    # per-connection state): the collector, set off every 700 new ones, walked them about a hundred times
    # in a report of the 105 MB bench capture, 70 ms of CPU; every 50 000, 16 times, 33 ms.  Cycles are
    # still collected, later.
    gc.set_threshold(_COLLECT_EVERY, *gc.get_threshold()[1:])
    spark = any(a.split("=", 1)[0] in ("--master", "--remote") for a in sys.argv[2:])  # Spark uses pandas
    if len(sys.argv) > 1 and sys.argv[1] in _NO_PANDAS and not spark and "pandas" not in sys.modules:
        sys.meta_path.insert(0, _WithoutPandas())
    sys.exit(main())


if __name__ == "__main__":
    run()
