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
