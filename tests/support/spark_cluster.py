"""Real Spark clusters on 127.0.0.1, started from the pyspark package for the
cluster tests (report, log source, capture source): a standalone master with
two one-core workers whose Python lacks kafkaproto (kafkaproto's wheel
reaches them through ``spark.archives``, as the docs say), and a Spark
Connect server.

A process has one SparkContext: the standalone session stops the run's
shared local session (:func:`~.spark_session.stop_shared_session`), and a
Spark Connect session stops both first.  The standalone cluster is started
once for the run's tests on it (the ``standalone_spark`` fixture);
tests/conftest.py runs the cluster tests last, those on the standalone
cluster before those on Spark Connect.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from .dist import built_dist

START_TIMEOUT = 120


def spark_home() -> Path:
    import pyspark

    return Path(os.path.dirname(pyspark.__file__))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _env() -> dict:
    return {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_LOCAL_HOSTNAME": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}


class Procs:
    """Processes a test started, each in its own process group (its output in
    ``folder/<name>.log``), ended together by :meth:`stop`."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.procs: list = []

    def start(self, name: str, cmd) -> subprocess.Popen:
        log = open(self.folder / f"{name}.log", "wb")
        p = subprocess.Popen([str(c) for c in cmd], stdout=log, stderr=subprocess.STDOUT, env=_env(),
                             cwd=self.folder, start_new_session=True)
        self.procs.append((name, p))
        return p

    def log(self, name: str) -> str:
        return (self.folder / f"{name}.log").read_text(errors="replace")[-3000:]

    def wait(self, what: str, check, name: str) -> None:
        """Until ``check()`` holds; a RuntimeError with process ``name``'s log after START_TIMEOUT."""
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if check():
                return
            time.sleep(0.5)
        raise RuntimeError(f"{what} did not start in {START_TIMEOUT}s:\n{self.log(name)}")

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


def wheel_archive(scratch: Path) -> Path:
    """kafkaproto's wheel (:func:`.dist.built_dist`) as a zip that
    spark.archives unpacks."""
    wheel, _ = built_dist(scratch)
    archive = wheel.parent / "kafkaproto.zip"
    if not archive.exists():
        shutil.copy(wheel, wheel.parent / "kafkaproto.zip.part")
        os.replace(wheel.parent / "kafkaproto.zip.part", archive)
    return archive


def python_without_kafkaproto(folder: Path) -> Path:
    """A Python for the executors with pyarrow, numpy, pandas... but not the
    kafkaproto installed here: this interpreter without site processing (so
    no editable install), its site-packages on PYTHONPATH."""
    wrapper = folder / "python-no-kafkaproto"
    site = _site()
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}{site}" exec "{sys.executable}" -S "$@"\n')
    wrapper.chmod(0o755)
    check = subprocess.run([str(wrapper), "-c", "import pyarrow, numpy\ntry:\n import kafkaproto\nexcept ImportError:"
                            "\n print('absent')"], capture_output=True, text=True)
    assert check.stdout.strip() == "absent", check.stderr
    return wrapper


def _site() -> str:
    import pyarrow

    return os.path.dirname(os.path.dirname(pyarrow.__file__))


@contextlib.contextmanager
def standalone_session(folder: Path, archive: Path, app: str):
    """A session on a standalone master with two one-core workers started
    under ``folder``; its executors (and the driver's own Python workers,
    which plan Python data sources) import kafkaproto from ``archive`` only.
    Everything is stopped when the block ends."""
    procs = Procs(folder)
    home = spark_home()
    master_port, ui = free_port(), free_port()
    try:
        procs.start("master", [home / "bin" / "spark-class", "org.apache.spark.deploy.master.Master",
                               "--host", "127.0.0.1", "--port", master_port, "--webui-port", ui])
        procs.wait("the master", lambda: listening(master_port), "master")
        url = f"spark://127.0.0.1:{master_port}"
        for k in range(2):
            work = folder / f"work-{k}"
            work.mkdir()
            procs.start(f"worker-{k}", [home / "bin" / "spark-class", "org.apache.spark.deploy.worker.Worker", url,
                                        "--host", "127.0.0.1", "--cores", "1", "--memory", "1g", "--webui-port", "0",
                                        "--work-dir", work])

        def two_workers() -> bool:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=2) as r:
                    return sum(w["state"] == "ALIVE" for w in json.load(r)["workers"]) == 2
            except (OSError, ValueError):  # not listening yet, or a page while it starts
                return False

        procs.wait("two workers", two_workers, "worker-1")
        from pyspark import SparkFiles
        from pyspark.sql import SparkSession

        spark = (SparkSession.builder.master(url).appName(app)
                 .config("spark.archives", f"{archive}#kafkaproto")
                 .config("spark.executorEnv.PYTHONPATH", "kafkaproto")
                 .config("spark.pyspark.python", str(python_without_kafkaproto(folder)))
                 .config("spark.executor.memory", "1g").config("spark.executor.cores", "1")
                 .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
                 .config("spark.driver.memory", "1g").config("spark.ui.enabled", "false")
                 .config("spark.sql.session.timeZone", "UTC").getOrCreate())
        try:
            # the driver plans a Python data source's read in a Python worker of
            # spark.pyspark.python too: there the wheel is where the driver
            # unpacked spark.archives
            spark.sparkContext.environment["PYTHONPATH"] = os.pathsep.join(
                ["kafkaproto", os.path.join(SparkFiles.getRootDirectory(), "kafkaproto"), _site()])
            yield spark
        finally:
            spark.stop()
    finally:
        procs.stop()


_standalone = None  # (contextlib.ExitStack, session) of the run's standalone cluster


def shared_standalone(folder: Path, archive: Path):
    """The run's session on a standalone cluster (:func:`standalone_session`
    under ``folder``), started on first use or after :func:`stop_standalone`.
    Tests that use it put its state back, as on the shared local session."""
    global _standalone
    if _standalone is None:
        from .spark_session import stop_shared_session

        stop_shared_session()  # one SparkContext per process
        with contextlib.ExitStack() as stack:
            spark = stack.enter_context(standalone_session(folder, archive, "kafkaproto-cluster-tests"))
            _standalone = (stack.pop_all(), spark)
    return _standalone[1]


def stop_standalone() -> None:
    """Stop the run's standalone cluster and its session, if started."""
    global _standalone
    if _standalone is not None:
        stack, _ = _standalone
        _standalone = None
        stack.close()


def connect_server(procs: Procs) -> str:
    """A Spark Connect server (local[2], this Python for its workers) started
    under ``procs``; its ``sc://`` address once it listens."""
    home = spark_home()
    port = free_port()
    procs.start("connect", [home / "bin" / "spark-submit", "--master", "local[2]",
                            "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
                            "--conf", f"spark.connect.grpc.binding.port={port}",
                            "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
                            "--conf", "spark.driver.bindAddress=127.0.0.1", "--conf", "spark.driver.host=127.0.0.1",
                            "--conf", "spark.ui.enabled=false", "--conf", f"spark.pyspark.python={sys.executable}",
                            "--conf", "spark.driver.memory=1g", "spark-internal"])
    procs.wait("the Spark Connect server", lambda: listening(port), "connect")
    return f"sc://127.0.0.1:{port}"


@contextlib.contextmanager
def connect_session(remote: str):
    """A Spark Connect session on the server at ``remote`` (``sc://``; one
    server serves the run: the ``connect_remote`` fixture), stopped and the
    process's environment made classic again (pyspark marks the whole
    process as Spark Connect once a remote session was made) when the block
    ends."""
    from .spark_session import stop_shared_session

    stop_standalone()  # pyspark makes no remote session beside a live SparkContext
    stop_shared_session()
    names = ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "SPARK_LOCAL_REMOTE")
    saved = {k: os.environ.get(k) for k in names}
    try:
        from pyspark.sql import SparkSession

        spark = SparkSession.builder.remote(remote).config("spark.sql.session.timeZone", "UTC").getOrCreate()
        try:
            assert type(spark).__module__.startswith("pyspark.sql.connect")
            yield spark
        finally:
            spark.stop()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
