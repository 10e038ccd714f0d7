"""What a bare import loads: the wire layers (frames, headers, messages,
records, the sans-IO connections) without numpy, pandas or pyarrow, which
the Arrow, capture and log layers import when they are used."""

import subprocess
import sys

import pytest

HEAVY = ("numpy", "pandas", "pyarrow")
WIRE = (
    "kafkaproto",
    "kafkaproto.frames",
    "kafkaproto.headers",
    "kafkaproto.primitives",
    "kafkaproto.messages",
    "kafkaproto.records",
    "kafkaproto.protocol",
    "kafkaproto.server",
    "kafkaproto.proxy",
    "kafkaproto.consumer",
)


def _loaded_after(code: str) -> set:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys\nprint(' '.join(sorted(sys.modules)))"],
        capture_output=True, text=True, check=True,
    ).stdout
    return {name.split(".")[0] for name in out.split()}


def test_bare_import_loads_no_numpy_pandas_or_pyarrow():
    loaded = _loaded_after("import " + ", ".join(WIRE))
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_wire_layers_work_without_numpy():
    # the round trip of a frame and of a record batch, with numpy refused
    code = (
        "import sys\n"
        "class Refuse:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('numpy', 'pandas', 'pyarrow'):\n"
        "            raise ImportError(name)\n"
        "sys.meta_path.insert(0, Refuse())\n"
        "from kafkaproto import decode_request, encode_request, split_frames, records\n"
        "from kafkaproto.messages import ApiVersionsRequest\n"
        "f = encode_request(ApiVersionsRequest(), version=3, correlation_id=1, client_id='c')\n"
        "frames, _ = split_frames(f)\n"
        "h, m = decode_request(frames[0])\n"
        "assert h.api_key == 18 and h.correlation_id == 1\n"
        "blob = records.encode([(b'k', b'v', [], 1)])\n"
        "assert [r.value for b in records.decode(blob) for r in b.records] == [b'v']\n"
    )
    _loaded_after(code)


@pytest.mark.parametrize("fn", ["frame_offsets", "decode_uvarints"])
def test_array_functions_import_numpy_when_called(fn):
    args = "(b'\\x00\\x00\\x00\\x01x')" if fn == "frame_offsets" else "(b'\\x01\\x02')"
    loaded = _loaded_after(f"from kafkaproto._impl import codec\ncodec.{fn}{args}")
    assert "numpy" in loaded


_DECODE = r'''
import sys
from kafkaproto.capture import open_capture
from kafkaproto.capture.tables import TABLES
from kafkaproto.capture.formats.pcap import CaptureFile
from kafkaproto.capture.formats.writer import PcapngWriter
samples, tmp = sys.argv[1], sys.argv[2]
with open(samples + "/capture/kafka.pcap", "rb") as fh, open(tmp + "/kafka.pcapng", "wb") as out:
    w = PcapngWriter(out)
    w.interface(1, tsresol=9)
    for ts, _lt, data, _orig in CaptureFile(fh):
        w.write(ts, data)
rows = {}
for capture in [samples + "/capture/kafka.pcap", tmp + "/kafka.pcapng", samples + "/capture/tap-mock",
                samples + "/capture/tap-tansu", samples + "/requests.bin"]:
    ds = open_capture(capture)
    for table in TABLES:
        rows[capture, table] = sum(b.num_rows for b in ds.read(table))
    rows[capture, "ranges"] = sum(b.num_rows for b in open_capture(capture).read("requests", split_bytes=64 << 10))
    rows[capture, "filtered"] = sum(b.num_rows for b in open_capture(capture).read(
        "responses", filters=[("api_key", "in", [0, 1, 3]), ("client_id", "!=", "x"), ("latency_us", ">=", 0)]))
    list(open_capture(capture).read("frames", columns=["conn", "ts", "api_key", "latency_us"]))
print("ROWS", sum(rows.values()), min(rows[c, "requests"] for c, _ in rows))
'''


def test_the_capture_decode_pass_never_imports_pandas(tmp_path):
    """pyarrow imports pandas (when installed) on its first pyarrow.array(),
    scalar or to_numpy(), empty table, tz-aware to_pylist() or group-by
    aggregate; the capture dataset builds and reads its columns through
    kafkaproto.arrow.buffers, so reading every table of each kind of capture
    (pcap, pcapng, tap tables, raw frames; whole, in byte ranges, filtered)
    loads no pandas."""
    from pathlib import Path

    from support.cli import no_pandas_lookup, run_watching_pandas

    samples = Path(__file__).resolve().parent.parent / "samples"
    p = run_watching_pandas(_DECODE, [samples, tmp_path])
    assert no_pandas_lookup(p), (p.stdout + p.stderr)[-4000:]
    counts = p.stdout.split("ROWS ", 1)[1].split()[:2]
    assert int(counts[0]) > 0 and int(counts[1]) > 0, p.stdout
