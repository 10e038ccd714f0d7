"""Benchmark support: a C reference and the allocation floor compiled here,
and a ratio table at the end.

Every benchmark sets ``benchmark.group`` and ``benchmark.extra_info["impl"]``;
the table gives each row's time over kafkaproto's compiled core in the same
run (> 1: kafkaproto is that many times faster), and, in a group with a
``floor`` row (``bench/_floor.pyx``: the same object tree built from values
already parsed), kafkaproto's time over the floor's; in a group with a C reference row
(a C loop allocating its buffers per call, as kafkaproto must: its impl starts
with "C reference" or "C loop"), kafkaproto's time over the C loop's.
Other ``extra_info`` entries (throughput, bytes allocated) are printed under
their row.
"""

import ctypes
import importlib.util
import pathlib
import shutil
import subprocess
import sys

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


_FLOOR_SETUP = """
import sys
from setuptools import Extension, setup
from Cython.Build import cythonize
src, inc, build = sys.argv[1:4]
setup(ext_modules=cythonize([Extension("_floor", [src], include_dirs=[inc])], build_dir=build, quiet=True,
                            include_path=[inc]),
      script_args=["-q", "build_ext", "--build-lib", build, "--build-temp", build])
"""


def load_floor():
    """bench/_floor.pyx compiled against this kafkaproto (bench code: not in the wheel)."""
    import kafkaproto

    BUILD.mkdir(parents=True, exist_ok=True)
    src = HERE / "_floor.pyx"
    inc = pathlib.Path(kafkaproto.__file__).resolve().parent.parent
    built = sorted(BUILD.glob("_floor.*.so"))
    newest = max(src.stat().st_mtime, (inc / "kafkaproto" / "_objects.pxd").stat().st_mtime)
    if not built or built[0].stat().st_mtime < newest:
        subprocess.run([sys.executable, "-c", _FLOOR_SETUP, str(src), str(inc), str(BUILD)], check=True,
                       cwd=BUILD)
        built = sorted(BUILD.glob("_floor.*.so"))
    spec = importlib.util.spec_from_file_location("_floor", built[0])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="session")
def floor_mod():
    return load_floor()


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
        floor = [b for b in items if b.extra_info.get("impl") == "floor"]
        cref = [b for b in items if b.extra_info.get("impl", "").startswith(("C reference", "C loop"))
                and "reused" not in b.extra_info["impl"]]
        if base and floor:
            tr.write_line(f"{group}    kafkaproto/floor {base / floor[0].stats.median:.2f}x")
        elif base and cref:
            tr.write_line(f"{group}    kafkaproto/C reference {base / cref[0].stats.median:.2f}x"
                          f" (min {ours[0].stats.min / cref[0].stats.min:.2f}x)")
        else:
            tr.write_line(f"{group}")
        for b in sorted(items, key=lambda b: b.stats.median):
            med = b.stats.median
            ratio = f"{med / base:7.2f}x" if base else "      -"
            tr.write_line(f"    {b.extra_info.get('impl', b.name):<28} {med * 1e3:10.3f} ms   {ratio}")
            extra = ", ".join(f"{k} {v}" for k, v in b.extra_info.items() if k != "impl")
            if extra:
                tr.write_line(f"        {extra}")
