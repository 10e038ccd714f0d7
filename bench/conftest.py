"""Benchmark support: a C reference compiled here, and a ratio table at the end.

Every benchmark sets ``benchmark.group`` and ``benchmark.extra_info["impl"]``;
the table compares each implementation with kafkaproto's compiled core in
the same run (``ratio`` > 1 means kafkaproto is that many times faster).
Other ``extra_info`` entries (throughput, bytes allocated) are printed under
their row.
"""

import ctypes
import pathlib
import shutil
import subprocess

import pytest

HERE = pathlib.Path(__file__).resolve().parent
BUILD = HERE.parent / "build" / "bench"


@pytest.fixture(scope="session")
def cref():
    """The C reference loops as a ctypes library."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.fail("no C compiler for the reference loops")
    BUILD.mkdir(parents=True, exist_ok=True)
    lib = BUILD / "libkpref.so"
    src = HERE / "c_reference.c"
    if not lib.exists() or lib.stat().st_mtime < src.stat().st_mtime:
        subprocess.run([cc, "-O2", "-shared", "-fPIC", str(src), "-o", str(lib)], check=True)
    return ctypes.CDLL(str(lib))


def pytest_terminal_summary(terminalreporter, config):
    bs = getattr(config, "_benchmarksession", None)
    if bs is None or not bs.benchmarks:
        return
    groups = {}
    for b in bs.benchmarks:
        if not b.stats:
            continue
        groups.setdefault(b.group, []).append(b)
    tr = terminalreporter
    tr.section("kafkaproto vs peers (same run, median)")
    for group, items in sorted(groups.items(), key=lambda kv: str(kv[0])):
        ours = [b for b in items if b.extra_info.get("impl") == "kafkaproto"]
        base = ours[0].stats.median if ours else None
        tr.write_line(f"{group}")
        for b in sorted(items, key=lambda b: b.stats.median):
            med = b.stats.median
            ratio = f"{med / base:7.2f}x" if base else "      -"
            tr.write_line(f"    {b.extra_info.get('impl', b.name):<28} {med * 1e3:10.3f} ms   {ratio}")
            extra = ", ".join(f"{k} {v}" for k, v in b.extra_info.items() if k != "impl")
            if extra:
                tr.write_line(f"        {extra}")
