"""Types of kafkaproto.arrow._headers (_headers.pyx), the compiled header loops
behind kafkaproto.arrow.request_headers / response_headers, and of its twin
_headers_py.

``arr`` is a binary, large_binary or binary_view array of frames (``kind`` 0,
1 or 2); ``hv_table`` the header versions, int8[api keys, 64]
(arrow._common.header_table).
"""

from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from kafkaproto.arrow._columns import _Column, _Errors

COMPILED: bool

def arrow_request_headers(
    arr: pa.Array, kind: int, hv_table: npt.NDArray[np.int8]
) -> tuple[
    npt.NDArray[np.uint8],
    npt.NDArray[np.int16],
    npt.NDArray[np.int16],
    npt.NDArray[np.int32],
    npt.NDArray[np.int32],
    _Column,
    _Errors,
]:
    """→ (status, api_key, api_version, correlation_id, header_size, client_id column, errors)."""

def arrow_response_headers(
    arr: pa.Array,
    kind: int,
    hv_table: npt.NDArray[np.int8],
    keys: npt.NDArray[np.int32],
    versions: npt.NDArray[np.int32],
    kvalid: npt.NDArray[np.uint8],
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int32], npt.NDArray[np.int32], _Errors]:
    """→ (status, correlation_id, header_size, errors); kvalid 0: the row's api key or version is null."""

def request_headers_array(frames: Any) -> pa.Array | pa.ChunkedArray:
    """kafkaproto.arrow.request_headers."""

def response_headers_array(frames: Any, api_key: Any, api_version: Any) -> pa.Array | pa.ChunkedArray:
    """kafkaproto.arrow.response_headers."""
