"""The report on real clusters, started here on 127.0.0.1 from the pyspark
package: a standalone master with two workers (kafkaproto reaching the
executors as the README says: its wheel, shipped through ``spark.archives``,
to executors whose Python does not have it), and a Spark Connect server.
Their tables and figures equal a local[2] run's."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from kafkaproto.report import run_report
from support.report_helpers import ROOT, SAMPLE, report_figures, report_tables
from support.spark_session import stop_shared_session
from support.synthetic import roll_capture, write_capture

MB = 1_000_000
SPLIT = {"whole_file_max": 2 * MB, "range_bytes": MB}  # the 3 MB single file goes in ranges too
START_TIMEOUT = 120

# A cluster of processes, a SparkContext of its own (after every test on the
# run's shared session: conftest orders cluster tests last), a wheel built.
pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.wheel]


def _spark_home() -> str:
    import pyspark

    return os.path.dirname(pyspark.__file__)


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env() -> dict:
    return {**os.environ, "SPARK_HOME": _spark_home(), "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_LOCAL_HOSTNAME": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}


class _Procs:
    """Processes this module started, each in its own process group, ended by their ids."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.procs = []

    def start(self, name: str, cmd) -> subprocess.Popen:
        log = open(self.folder / f"{name}.log", "wb")
        p = subprocess.Popen([str(c) for c in cmd], stdout=log, stderr=subprocess.STDOUT, env=_env(),
                             cwd=self.folder, start_new_session=True)
        self.procs.append((name, p))
        return p

    def log(self, name: str) -> str:
        return (self.folder / f"{name}.log").read_text(errors="replace")[-3000:]

    def stop(self) -> None:
        for _name, p in reversed(self.procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for _name, p in reversed(self.procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=10)


def _wait(what: str, check, procs: _Procs, name: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    raise RuntimeError(f"{what} did not start in {START_TIMEOUT}s:\n{procs.log(name)}")


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cluster-in")
    single = folder / "single.pcap"
    write_capture(single, size=3 * MB, seed=31, connections=2)
    rolled = folder / "rolled-src.pcap"
    write_capture(rolled, size=3 * MB, seed=32, connections=2)
    return {"sample": str(SAMPLE / "kafka.pcap"), "tap-tansu": str(SAMPLE / "tap-tansu"), "single": str(single),
            "rolled": roll_capture(rolled, folder / "rolled", MB, "traffic.pcap")}


@pytest.fixture(scope="module")
def local_run(spark, captures, tmp_path_factory):
    out = tmp_path_factory.mktemp("cluster-local")
    try:
        result = run_report(captures, out, spark=spark, progress=False, **SPLIT)
    finally:
        stop_shared_session()  # one SparkContext per process: the clusters' sessions come next
    assert result.data.tasks["byte ranges"] >= 6 and result.data.tasks["whole files"] == 2
    return result


def _source_state() -> str:
    """A digest of the package as built here (sources and compiled modules)."""
    import hashlib

    h = hashlib.blake2b(digest_size=12)
    for p in sorted((ROOT / "src" / "kafkaproto").rglob("*")):
        if p.is_file() and p.suffix in (".py", ".so", ".pyx", ".pxd", ".pxi"):
            st = p.stat()
            h.update(f"{p.relative_to(ROOT)}|{st.st_size}|{st.st_mtime_ns}".encode())
    return h.hexdigest()


@pytest.fixture(scope="module")
def wheel_archive(tmp_path_factory):
    """kafkaproto's wheel (a zip), named so that spark.archives unpacks it; built
    once per state of the sources (kept under build/test-wheel/, shared by both
    passes of ``make test``)."""
    folder = ROOT / "build" / "test-wheel" / _source_state()
    archive = folder / "kafkaproto.zip"
    if not archive.exists():
        tmp = tmp_path_factory.mktemp("wheel")
        env = {**os.environ, "KAFKAPROTO_REQUIRE_EXTENSION": "1"}
        p = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                            str(tmp), str(ROOT)], capture_output=True, text=True, env=env)
        assert p.returncode == 0, p.stderr[-3000:]
        wheel = next(tmp.glob("kafkaproto-*.whl"))
        shutil.rmtree(folder.parent, ignore_errors=True)  # older states
        folder.mkdir(parents=True)
        shutil.copy(wheel, folder / "kafkaproto.zip.part")
        os.replace(folder / "kafkaproto.zip.part", archive)
    return archive


def _python_without_kafkaproto(folder: Path) -> Path:
    """A Python for the executors with pyarrow, numpy, pandas... but not the
    kafkaproto installed here: this interpreter without site processing (so
    no editable install), its site-packages on PYTHONPATH."""
    import pyarrow

    site = os.path.dirname(os.path.dirname(pyarrow.__file__))
    wrapper = folder / "python-no-kafkaproto"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}{site}" exec "{sys.executable}" -S "$@"\n')
    wrapper.chmod(0o755)
    check = subprocess.run([str(wrapper), "-c", "import pyarrow, numpy\ntry:\n import kafkaproto\nexcept ImportError:"
                            "\n print('absent')"], capture_output=True, text=True)
    assert check.stdout.strip() == "absent", check.stderr
    return wrapper


def _same(a, b) -> None:
    ta, tb = report_tables(a.data.out), report_tables(b.data.out)
    for name in ta:
        assert ta[name] == tb[name], name
    assert report_figures(a.data) == report_figures(b.data)


def test_standalone_cluster_with_two_workers(local_run, captures, wheel_archive, tmp_path):
    procs = _Procs(tmp_path)
    home = Path(_spark_home())
    master_port, ui = _port(), _port()
    try:
        procs.start("master", [home / "bin" / "spark-class", "org.apache.spark.deploy.master.Master",
                               "--host", "127.0.0.1", "--port", master_port, "--webui-port", ui])
        _wait("the master", lambda: _listening(master_port), procs, "master")
        url = f"spark://127.0.0.1:{master_port}"
        for k in range(2):
            work = tmp_path / f"work-{k}"
            work.mkdir()
            procs.start(f"worker-{k}", [home / "bin" / "spark-class", "org.apache.spark.deploy.worker.Worker", url,
                                        "--host", "127.0.0.1", "--cores", "1", "--memory", "1g", "--webui-port", "0",
                                        "--work-dir", work])

        def two_workers() -> bool:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=2) as r:
                    import json

                    return sum(w["state"] == "ALIVE" for w in json.load(r)["workers"]) == 2
            except OSError:
                return False

        _wait("two workers", two_workers, procs, "worker-1")
        from pyspark.sql import SparkSession

        spark = (SparkSession.builder.master(url).appName("kafkaproto-report-cluster-test")
                 .config("spark.archives", f"{wheel_archive}#kafkaproto")
                 .config("spark.executorEnv.PYTHONPATH", "kafkaproto")
                 .config("spark.pyspark.python", str(_python_without_kafkaproto(tmp_path)))
                 .config("spark.executor.memory", "1g").config("spark.executor.cores", "1")
                 .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
                 .config("spark.driver.memory", "1g").config("spark.ui.enabled", "false")
                 .config("spark.sql.session.timeZone", "UTC").getOrCreate())
        def where_kafkaproto(batches):  # a closure: pickled by value (executors lack this test module)
            import pyarrow as pa

            import kafkaproto

            for _ in batches:
                yield pa.RecordBatch.from_pylist([{"file": kafkaproto.__file__, "compiled": kafkaproto.COMPILED}])

        try:
            where = spark.range(0, 2, 1, 2).mapInArrow(where_kafkaproto, "file string, compiled boolean").collect()
            for row in where:  # the executors import the wheel the archive brought
                assert f"{os.sep}kafkaproto{os.sep}kafkaproto{os.sep}__init__.py" in row["file"], row
                assert str(ROOT) not in row["file"]
                assert row["compiled"] == (os.environ.get("KAFKAPROTO_PURE", "") in ("", "0"))
            result = run_report(captures, tmp_path / "out", spark=spark, progress=False, **SPLIT)
        finally:
            spark.stop()
    finally:
        procs.stop()
    assert result.data.master == url
    _same(local_run, result)


@pytest.fixture
def classic_afterwards():
    """pyspark marks the whole process as Spark Connect once a remote session was
    made (environment variables): undo it, so later tests get classic sessions."""
    names = ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "SPARK_LOCAL_REMOTE")
    saved = {k: os.environ.get(k) for k in names}
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def connect_server(procs: _Procs) -> str:
    """A Spark Connect server (local[2], this Python for its workers) started
    under ``procs``; its ``sc://`` address once it listens."""
    home = Path(_spark_home())
    port = _port()
    procs.start("connect", [home / "bin" / "spark-submit", "--master", "local[2]",
                            "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
                            "--conf", f"spark.connect.grpc.binding.port={port}",
                            "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
                            "--conf", "spark.driver.bindAddress=127.0.0.1", "--conf", "spark.driver.host=127.0.0.1",
                            "--conf", "spark.ui.enabled=false", "--conf", f"spark.pyspark.python={sys.executable}",
                            "--conf", "spark.driver.memory=1g", "spark-internal"])
    _wait("the Spark Connect server", lambda: _listening(port), procs, "connect")
    return f"sc://127.0.0.1:{port}"


def test_spark_connect_server(local_run, captures, tmp_path, classic_afterwards):
    procs = _Procs(tmp_path)
    try:
        remote = connect_server(procs)
        from pyspark.sql import SparkSession

        spark = SparkSession.builder.remote(remote).getOrCreate()
        try:
            assert type(spark).__module__.startswith("pyspark.sql.connect")
            result = run_report(captures, tmp_path / "out", spark=spark, progress=False, **SPLIT)
        finally:
            spark.stop()
    finally:
        procs.stop()
    assert result.data.cores == 2
    _same(local_run, result)
