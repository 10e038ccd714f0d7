"""Compare this checkout's benchmarks with another build of kafkaproto, in one run.

A restructuring must not make any benchmark row slower; this runs the same
benchmark files for both sides, alternating A and B several times (the
machine's speed drifts by up to a third within minutes, so one pass each
would measure the drift), and prints each row's best median on both sides.

    python bench/compare.py --base-python OLD_VENV/bin/python --base-bench OLD_CHECKOUT/bench \\
        bench_messages.py bench_records.py --passes 3

``--base-python`` is an interpreter with the other build installed (e.g. its
wheel in a fresh virtualenv with the bench extra); ``--base-bench`` that
build's own bench folder (benchmarks may name private modules that moved).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent


def run(python: str, bench_dir: pathlib.Path, files: list, out: pathlib.Path) -> dict:
    cmd = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "python_files=bench_*.py",
           f"--benchmark-json={out}", "--benchmark-disable-gc"] + [str(bench_dir / f) for f in files]
    proc = subprocess.run(cmd, cwd=bench_dir.parent, capture_output=True, text=True)
    if proc.returncode:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        raise SystemExit(f"benchmarks failed under {python}")
    data = json.loads(out.read_text())
    return {f"{b['group']} :: {b['name']}": b["stats"]["median"] for b in data["benchmarks"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", help="bench_*.py files (names inside the bench folders)")
    ap.add_argument("--base-python", required=True)
    ap.add_argument("--base-bench", required=True, type=pathlib.Path)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--only", default="kafkaproto", help="rows whose name contains this (default: kafkaproto's own)")
    args = ap.parse_args(argv)
    best: dict = {"base": {}, "this": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.passes):
            for side, python, bench in (("base", args.base_python, args.base_bench),
                                        ("this", sys.executable, HERE)):
                got = run(python, bench, args.files, pathlib.Path(tmp) / f"{side}{i}.json")
                for row, median in got.items():
                    if args.only in row:
                        best[side][row] = min(median, best[side].get(row, median))
    rows = sorted(set(best["base"]) & set(best["this"]))
    width = max((len(r) for r in rows), default=10)
    print(f"{'row':<{width}}  {'base':>12}  {'this':>12}  this/base")
    for row in rows:
        a, b = best["base"][row], best["this"][row]
        print(f"{row:<{width}}  {a * 1e3:10.4f}ms  {b * 1e3:10.4f}ms  {b / a:8.3f}")
    for side in ("base", "this"):
        missing = sorted(set(best[side]) - set(rows))
        if missing:
            print(f"only in {side}: {', '.join(missing)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
