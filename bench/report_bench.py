"""The report job over about 1 GB of synthetic captures: MB/s per core, end to end.

    python bench/report_bench.py [--size 1G] [--files 8] [--master local[2]] [--mss 1460]

Captures are written once by ``tests/support/synthetic.py`` (the
project's encoder; records via ``kafkaproto.records.encode``) under
``build/bench-report/`` and reused while their parameters do not change.
Several files, as ``tcpdump -C`` rolls them: one Spark task reads one file.

Prints the decode pass alone (one capture in this process, no Spark), then
the whole job (decode, every table written, every figure computed) twice on
one session: the first run pays for starting the JVM's and Python workers'
code paths, the second is what a long-lived session sees.  MB/s per core
divides by the cores of the master.
"""

from __future__ import annotations

import argparse
import json
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


def captures(folder: Path, size: int, files: int, mss: int, value_size: int, per_batch: int):
    write_capture = _synthetic().write_capture

    folder.mkdir(parents=True, exist_ok=True)
    params = {"size": size, "files": files, "mss": mss, "value_size": value_size, "per_batch": per_batch, "v": 1}
    stamp = folder / "params.json"
    paths = [folder / f"traffic-{i:02d}.pcap" for i in range(files)]
    if stamp.exists() and json.loads(stamp.read_text()) == params and all(p.exists() for p in paths):
        return paths
    t = time.monotonic()
    for i, p in enumerate(paths):
        m = write_capture(p, size=size // files, seed=100 + i, mss=mss, value_size=value_size,
                          records_per_batch=per_batch, connections=4)
        print(f"  wrote {p.name}: {m.file_bytes / 1e6:.0f} MB, {sum(m.frames.values()):,} frames, "
              f"{sum(m.records.values()):,} records", file=sys.stderr)
    print(f"  generated in {time.monotonic() - t:.0f}s", file=sys.stderr)
    stamp.write_text(json.dumps(params))
    return paths


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--size", default="1G")
    p.add_argument("--files", type=int, default=8)
    p.add_argument("--master", default="local[2]")
    p.add_argument("--mss", type=int, default=1460)
    p.add_argument("--value-size", type=int, default=400)
    p.add_argument("--records-per-batch", type=int, default=100)
    p.add_argument("--out", default=str(ROOT / "build" / "bench-report"))
    p.add_argument("--runs", type=int, default=2, help="runs of the job on the same session")
    args = p.parse_args(argv)
    import kafkaproto
    from kafkaproto.report import run_report
    from kafkaproto.report.decode import decode_capture
    from kafkaproto.report.job import session

    out = Path(args.out)
    paths = captures(out / "captures", _size(args.size), args.files, args.mss, args.value_size,
                     args.records_per_batch)
    total = sum(p.stat().st_size for p in paths)
    print(f"report benchmark: {len(paths)} captures, {total / 1e6:.0f} MB, MSS {args.mss}, "
          f"core {'compiled' if kafkaproto.COMPILED else 'pure Python'}")

    t = time.monotonic()
    rows = 0
    for _, batch in decode_capture(paths[0]):
        rows += batch.num_rows
    one = time.monotonic() - t
    size0 = paths[0].stat().st_size
    print(f"  decode pass, one capture, this process: {size0 / 1e6:.0f} MB in {one:.2f}s = "
          f"{size0 / 1e6 / one:.1f} MB/s on one core ({rows:,} rows)")

    t = time.monotonic()
    spark = session(args.master)
    started = time.monotonic() - t
    cores = spark.sparkContext.defaultParallelism
    runs = []
    try:
        # first run: a fresh session (JVM and Python workers start cold);
        # second: the same session again, as a long-lived cluster runs it
        for k in range(args.runs):
            t1 = time.monotonic()
            result = run_report([str(p) for p in paths], out / f"report-{k}", spark=spark, progress=k == 0)
            runs.append(time.monotonic() - t1)
    finally:
        spark.stop()
    d = result.data
    print(f"  records: {d.totals['records']:,}; frames: {d.totals['requests'] + d.totals['responses']:,}; "
          f"accounting adds up: {not d.accounting.problems()}")
    print(f"  session start {started:.1f}s; on {args.master} ({cores} cores)")
    for k, job in enumerate(runs):
        what = "first run (cold session)" if k == 0 else f"run {k + 1} (warm session)"
        rate = total / 1e6 / job
        print(f"  {what:26s} {job:6.1f}s: {rate:7.1f} MB/s = {rate / cores:6.1f} MB/s per core")
    wall = started + runs[0]
    print(f"  {'first run + session start':26s} {wall:6.1f}s: {total / 1e6 / wall:7.1f} MB/s = "
          f"{total / 1e6 / wall / cores:6.1f} MB/s per core")
    return 0


if __name__ == "__main__":
    sys.exit(main())
