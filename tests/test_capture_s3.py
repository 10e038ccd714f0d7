"""Captures on object storage for real: moto's S3 server (server mode, on
127.0.0.1) holds copies of the committed captures -- a pcap file, a capture
rolled into files, the tap's tables, a raw request stream -- read through
pyarrow's S3FileSystem, by URI and by filesystem: the same tables as the
local copies, and the report over them."""

from __future__ import annotations

import os
import shutil
import socket

import pyarrow.fs as pafs
import pytest

from kafkaproto.capture import open_capture
from kafkaproto.capture.formats.writer import PcapWriter
from support.report_helpers import SAMPLE

pytestmark = pytest.mark.peers

KEY, SECRET = "kafkaproto-test", "kafkaproto-test-secret"
TABLES = ("frames", "requests", "responses", "records", "record_sets", "unanswered")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _roll(src, folder, pieces: int = 3) -> None:
    """The packets of a pcap file in ``pieces`` files, as ``tcpdump -C`` rolls one."""
    from kafkaproto.capture.formats.pcap import CaptureFile

    folder.mkdir()
    with open(src, "rb") as fh:
        records = list(CaptureFile(fh))
    step = -(-len(records) // pieces)
    for i in range(pieces):
        with open(folder / (f"roll.pcap{i}" if i else "roll.pcap"), "wb") as out:
            w = PcapWriter(out, records[0][1], nanos=True)
            for ts, _link, data, orig in records[i * step:(i + 1) * step]:
                w.write(ts, data, orig)


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """A moto S3 server on loopback with a bucket holding copied captures → (uri base, filesystem, local copy)."""
    from moto.server import ThreadedMotoServer

    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")}
    os.environ.update(AWS_ACCESS_KEY_ID=KEY, AWS_SECRET_ACCESS_KEY=SECRET, AWS_DEFAULT_REGION="us-east-1")
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        fs = pafs.S3FileSystem(access_key=KEY, secret_key=SECRET, region="us-east-1", scheme="http",
                               endpoint_override=f"127.0.0.1:{port}", allow_bucket_creation=True)
        fs.create_dir("captures")
        root = tmp_path_factory.mktemp("s3-captures")
        shutil.copy(SAMPLE / "kafka.pcap", root / "kafka.pcap")
        shutil.copytree(SAMPLE / "tap-tansu", root / "tap-tansu")
        _roll(SAMPLE / "kafka44.pcap", root / "rolled")
        pafs.copy_files(str(root), "captures/day1", source_filesystem=pafs.LocalFileSystem(),
                        destination_filesystem=fs)
        uri = f"s3://captures/day1?endpoint_override=127.0.0.1:{port}&scheme=http&region=us-east-1"
        yield uri, fs, root
    finally:
        server.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _under(uri: str, sub: str) -> str:
    base, _, query = uri.partition("?")
    return f"{base}/{sub}?{query}"


def _rows(t):
    return sorted(repr(sorted(r.items())) for r in t.to_pylist())


@pytest.mark.parametrize("table", TABLES)
def test_captures_on_s3_read_as_their_local_copies(s3, table):
    uri, fs, root = s3
    names = ("kafka.pcap", "tap-tansu", "rolled")
    remote = open_capture([_under(uri, n) for n in names])
    local = open_capture([root / n for n in names])
    assert isinstance(remote.filesystem, pafs.S3FileSystem) and local.filesystem is None
    assert [(c.name, c.bytes, c.packets, c.files) for c in remote.captures] == \
        [(c.name, c.bytes, c.packets, c.files) for c in local.captures]
    reader = remote.read(table)
    got = reader.read_all()
    want = local.read(table)
    assert got.num_rows > 0 and _rows(got) == _rows(want.read_all())
    assert {k: v.to_dict() for k, v in reader.accounting.items()} == \
        {k: v.to_dict() for k, v in want.accounting.items()}
    # the same through a filesystem given: paths in it
    by_fs = open_capture([f"captures/day1/{n}" for n in names], filesystem=fs)
    assert _rows(by_fs.read_table(table)) == _rows(got)


def test_a_large_capture_on_s3_is_read_whole(s3):
    """Byte ranges need a file mapped in memory: on another filesystem a
    capture larger than the split is one task, whatever the split."""
    uri, _fs, root = s3
    remote = open_capture(_under(uri, "kafka.pcap"))
    plan = remote.plan(64 << 10)
    assert len(plan) == 1 and not plan.problems
    local = open_capture(root / "kafka.pcap")
    assert len(local.plan(64 << 10)) > 1
    assert _rows(remote.read_table("requests", split_bytes=64 << 10)) == _rows(local.read_table("requests"))


def test_the_report_reads_captures_on_s3(s3, tmp_path):
    from kafkaproto.report import run_report

    uri, _fs, root = s3
    remote = run_report([_under(uri, "kafka.pcap"), _under(uri, "tap-tansu")], tmp_path / "remote", progress=False)
    local = run_report([str(root / "kafka.pcap"), str(root / "tap-tansu")], tmp_path / "local", progress=False)
    assert remote.data.totals == local.data.totals and remote.data.totals["requests"] > 0
    assert remote.data.accounting.to_dict() == local.data.accounting.to_dict()
