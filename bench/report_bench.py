"""The report job over synthetic captures: MB/s per core, end to end.

    python bench/report_bench.py [--size 1G] [--big 2G] [--master local[2]] [--mss 1460]

One synthetic capture of ``--size`` (``tests/support/synthetic.py``: the
project's encoder, records via ``kafkaproto.records.encode``) is written
once under ``build/bench-report/`` and rolled as ``tcpdump -C`` would into 8
and 64 files; a second capture of ``--big`` is one file.  Each case runs on a
fresh session, twice: the first run pays for starting the JVM's and Python
workers' code paths (cold), the second is what a long-lived session sees
(warm); "with start" adds the session's start to the cold run.

- 1 file, 8 files, 64 files: the same bytes, one capture; the 1-file case
  also runs whole (one task: ``whole_file_max`` above its size);
- the big file: in byte ranges (at least 8 tasks), and once whole in one
  task: the figures must be equal;
- the shuffle's cost, on the 1-file capture: the read stage alone, the read
  stage plus the repartition and sort by connection, and the whole job.

Each case runs in a fresh process (its own JVM and Python workers).

MB/s per core divides by the cores of the master.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _synthetic():
    """tests/support/synthetic.py: the capture generator is test support, not
    part of the installed package, so this script takes it from tests/."""
    tests = str(ROOT / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    from support import synthetic

    return synthetic


def _size(text: str) -> int:
    return _synthetic()._size(text)


def _capture(path: Path, size: int, args, seed: int) -> Path:
    params = {"size": size, "mss": args.mss, "value_size": args.value_size, "per_batch": args.records_per_batch,
              "seed": seed, "v": 2}
    stamp = path.with_suffix(".json")
    if stamp.exists() and path.exists() and json.loads(stamp.read_text()) == params:
        return path
    t = time.monotonic()
    m = _synthetic().write_capture(path, size=size, seed=seed, mss=args.mss, value_size=args.value_size,
                                   records_per_batch=args.records_per_batch, connections=4)
    print(f"  wrote {path.name}: {m.file_bytes / 1e6:.0f} MB, {sum(m.frames.values()):,} frames, "
          f"{sum(m.records.values()):,} records in {time.monotonic() - t:.0f}s", file=sys.stderr)
    stamp.write_text(json.dumps(params))
    return path


def _rolled(src: Path, folder: Path, files: int):
    stamp = folder / "source.json"
    want = {"source": src.stat().st_mtime_ns, "files": files}
    if stamp.exists() and json.loads(stamp.read_text()) == want:
        return sorted(str(p) for p in folder.iterdir() if p.name != "source.json")
    folder.mkdir(parents=True, exist_ok=True)
    for p in folder.iterdir():
        p.unlink()
    paths = _synthetic().roll_capture(src, folder, -(-src.stat().st_size // files) + 4096, "traffic.pcap")
    stamp.write_text(json.dumps(want))
    return paths


def _mb(nbytes: int, seconds: float, cores: int) -> str:
    return f"{nbytes / 1e6 / seconds:7.1f} MB/s = {nbytes / 1e6 / seconds / cores:6.1f} MB/s per core"


def case(name: str, captures, nbytes: int, args, out: Path, **split) -> dict:
    """A fresh session, the job twice; prints and returns the timings."""
    from kafkaproto.report import run_report
    from kafkaproto.report.job import session

    t = time.monotonic()
    spark = session(args.master)
    started = time.monotonic() - t
    cores = spark.sparkContext.defaultParallelism
    runs = []
    try:
        for k in range(args.runs):
            t1 = time.monotonic()
            result = run_report(captures, out / f"{name.replace(' ', '-')}-{k}", spark=spark, progress=False,
                                **split)
            runs.append(time.monotonic() - t1)
    finally:
        spark.stop()
    d = result.data
    print(f"  {name} ({nbytes / 1e6:.0f} MB): {d.tasks}; {d.totals['records']:,} records, "
          f"{d.totals['requests'] + d.totals['responses']:,} frames; accounting adds up: {not d.accounting.problems()}")
    print(f"    session start {started:5.1f}s")
    for k, job in enumerate(runs):
        what = "cold (first run)" if k == 0 else "warm"
        print(f"    {what:18s} {job:6.1f}s: {_mb(nbytes, job, cores)}")
    print(f"    {'cold + start':18s} {started + runs[0]:6.1f}s: {_mb(nbytes, started + runs[0], cores)}")
    return {"name": name, "started": started, "runs": runs, "cores": cores, "data": d}


def shuffle_cost(path: str, nbytes: int, args) -> None:
    """The segment path's stages on one capture: the read stage alone, read +
    repartition + sort by connection, and the whole job (warm session)."""
    from kafkaproto.capture import open_capture
    from kafkaproto.report import run_report
    from kafkaproto.report.job import _SEGMENT_DDL, RANGE_BYTES, _spark_index, session

    spark = session(args.master)
    cores = spark.sparkContext.defaultParallelism
    try:
        _, ranges = open_capture({"traffic": path}).layout(RANGE_BYTES, whole_max=0)
        n = len(ranges)

        def read():
            return spark.range(0, n, 1, n).mapInArrow(_spark_index([[r] for r in ranges]), _SEGMENT_DDL)

        def count(batches):
            import pyarrow as pa

            rows = 0
            for b in batches:
                rows += b.num_rows
            yield pa.RecordBatch.from_pylist([{"rows": rows}])

        stages = {
            "read stage alone": lambda: read().selectExpr("sum(length(payload))").collect(),
            "read + shuffle + sort": lambda: read().repartition(max(n, cores), "capture", "key")
            .sortWithinPartitions("capture", "key", "order").mapInArrow(count, "rows bigint").collect(),
            "whole job": lambda: run_report({"traffic": path}, Path(args.out) / "shuffle-job", spark=spark,
                                            progress=False, whole_file_max=0),
        }
        stages["read stage alone"]()  # warm the session
        print(f"  where the time goes, {n} byte ranges (warm session):")
        for what, fn in stages.items():
            t = time.monotonic()
            fn()
            s = time.monotonic() - t
            print(f"    {what:22s} {s:6.1f}s: {_mb(nbytes, s, cores)}")
    finally:
        spark.stop()


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--size", default="1G")
    p.add_argument("--big", default="2G", help="the single large file (0: skip)")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--mss", type=int, default=1460)
    p.add_argument("--value-size", type=int, default=400)
    p.add_argument("--records-per-batch", type=int, default=100)
    p.add_argument("--out", default=str(ROOT / "build" / "bench-report"))
    p.add_argument("--runs", type=int, default=2, help="runs of the job on each session")
    p.add_argument("--cases", default="decode,1,8,64,whole,big,shuffle")
    p.add_argument("--in-process", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    cases = args.cases.split(",")
    if len(cases) > 1 and not args.in_process:
        # each case in a fresh process: a cold run starts its own JVM
        rest = [a for a in (argv if argv is not None else sys.argv[1:])]
        code = 0
        for c in cases:
            code |= subprocess.run([sys.executable, __file__, *rest, "--cases", c, "--in-process"]).returncode
        return code
    import kafkaproto
    from kafkaproto.capture.dataset import decode_capture

    out = Path(args.out)
    folder = out / "captures"
    folder.mkdir(parents=True, exist_ok=True)
    one = _capture(folder / "traffic.pcap", _size(args.size), args, 100)
    nbytes = one.stat().st_size
    cases = set(cases)
    if "decode" in cases:
        print(f"report benchmark: {nbytes / 1e6:.0f} MB capture, MSS {args.mss}, "
              f"core {'compiled' if kafkaproto.COMPILED else 'pure Python'}, {args.master}; each case in a fresh "
              f"process (cold: its session's first run, warm: the second)", flush=True)
    if "decode" in cases:
        t = time.monotonic()
        rows = sum(b.num_rows for _, b in decode_capture(one))
        s = time.monotonic() - t
        print(f"  decode pass, the whole capture in this process (no Spark): {s:.1f}s = "
              f"{nbytes / 1e6 / s:.1f} MB/s on one core ({rows:,} rows)")
    if "1" in cases:
        case("1 file in byte ranges", {"traffic": str(one)}, nbytes, args, out, whole_file_max=0)
    if "whole" in cases:
        case("1 file, one task", {"traffic": str(one)}, nbytes, args, out, whole_file_max=1 << 62)
    for files in (8, 64):
        if str(files) in cases:
            paths = _rolled(one, folder / f"rolled-{files}", files)
            case(f"{files} files", {"traffic": paths}, nbytes, args, out)
    if "shuffle" in cases:
        shuffle_cost(str(one), nbytes, args)
    big_size = _size(args.big)
    if "big" in cases and big_size:
        big = _capture(folder / "big.pcap", big_size, args, 200)
        bb = big.stat().st_size
        ranged = case(f"{bb / 1e9:.1f} GB file in byte ranges", {"big": str(big)}, bb, args, out, whole_file_max=0)
        assert ranged["data"].tasks["byte ranges"] >= 8, ranged["data"].tasks
        whole = case(f"{bb / 1e9:.1f} GB file, one task", {"big": str(big)}, bb, args, out, whole_file_max=1 << 62)
        from support.report_helpers import report_figures

        same = report_figures(ranged["data"]) == report_figures(whole["data"])
        print(f"  {bb / 1e9:.1f} GB file: figures in {ranged['data'].tasks['byte ranges']} byte ranges equal the "
              f"one-task run's: {same}")
        if not same:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
