"""Types of kafkaproto.log._text (_text.pyx), DumpLogSegments' lines in one pass, and of its twin _text_py."""

import numpy as np
import numpy.typing as npt

COMPILED: bool

_I64 = npt.NDArray[np.int64]
_U8 = npt.NDArray[np.uint8]

def dump_lines(
    counts: _I64, bl_offs: _I64, bl_data: _U8, magic: _I64, attrs: _I64, base_offset: _I64, base_seq: _I64,
    ctl_type: _I64, ctl_epoch: _I64, offset: _I64, ts_ms: _I64, ts_ok: _U8, k_offs: _I64, k_data: _U8, k_ok: _U8,
    v_offs: _I64, v_data: _U8, v_ok: _U8, h_offs: _I64, hk_offs: _I64, hk_data: _U8, crcs: _I64, deep: bool,
    data: bool, skip_meta: bool,
) -> bytes:
    """Every batch line, each followed (``deep``) by its records' lines."""
