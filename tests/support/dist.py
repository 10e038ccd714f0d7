"""kafkaproto's sdist and wheel, built once per state of the sources and
shared by the tests that need them (the packaging tests, and the cluster
tests whose executors import kafkaproto from its wheel): a build compiles
every module (unoptimised: a third of the optimised build's time)."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / "build" / "test-wheel"


def source_state() -> str:
    """A digest of what a build reads: the package (sources and modules built
    in place), the Cython sources beside it and the build's own files.  The C
    files Cython writes from a ``.pyx`` are left out: they follow from it, and
    the sdist step writes some of them again (which would make every build
    look like a new state)."""
    h = hashlib.blake2b(digest_size=12)
    files = [ROOT / n for n in ("setup.py", "pyproject.toml", "MANIFEST.in")]
    files += sorted((ROOT / "src").rglob("*"))
    for p in files:
        if p.suffix == ".c" and p.with_suffix(".pyx").exists():
            continue
        if p.is_file() and (p.parent == ROOT or p.suffix in (".py", ".so", ".pyx", ".pxd", ".pxi", ".pyi", ".h", ".c")):
            st = p.stat()
            h.update(f"{p.relative_to(ROOT)}|{st.st_size}|{st.st_mtime_ns}".encode())
    return h.hexdigest()


def built_dist(scratch: Path) -> tuple[Path, Path]:
    """(wheel, sdist) of this checkout: the sdist first (in this environment:
    it compiles nothing), then the wheel built from it in an isolated
    environment (``python -m build``: so MANIFEST.in and the build's
    requirements are checked too), with the compiled modules required; kept
    under build/test-wheel/<state>/ for every later test of the run and for the
    other pass of ``make test`` (which waits for a build under way)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE.parent / "test-wheel.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the two passes of `make test` run side by side
        folder = CACHE / source_state()
        if not (folder / "done").exists():
            _build(scratch, folder)
    wheels = list(folder.glob("kafkaproto-*.whl"))
    sdists = list(folder.glob("kafkaproto-*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, (wheels, sdists)
    return wheels[0], sdists[0]


def _build(scratch: Path, folder: Path) -> None:
    # every module compiled, unoptimised: what is checked is that the sdist builds
    # and its wheel loads (the optimised modules are the ones the suite runs in place)
    env = {**os.environ, "KAFKAPROTO_REQUIRE_EXTENSION": "1", "KAFKAPROTO_QUICK_BUILD": "1"}
    env.pop("KAFKAPROTO_PURE", None)

    def build(*args):
        p = subprocess.run([sys.executable, "-m", "build", "--outdir", str(scratch), *map(str, args)],
                           capture_output=True, text=True, env=env)
        assert p.returncode == 0, f"{args}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"

    build("--sdist", "--no-isolation", ROOT)
    [sdist] = scratch.glob("kafkaproto-*.tar.gz")
    with tarfile.open(sdist) as tar:
        tar.extractall(scratch / "unpacked", filter="data")
    [tree] = (scratch / "unpacked").iterdir()
    build("--wheel", tree)
    shutil.rmtree(CACHE, ignore_errors=True)  # older states
    folder.mkdir(parents=True)
    for f in scratch.glob("kafkaproto-*"):
        shutil.copy(f, folder / f.name)
    (folder / "done").touch()
