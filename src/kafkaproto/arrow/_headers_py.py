"""Pure-Python twin of the compiled header loops (``_headers.pyx``)."""

from __future__ import annotations

import sys

import numpy as np

from .. import _kinds as K
from ..headers import decode_request_header, decode_response_header
from . import _build, _common
from ._columns_py import Col, rows

COMPILED = False


def arrow_request_headers(arr, kind, hv_table):
    frames = rows(arr)
    n = len(frames)
    status = np.zeros(n, dtype=np.uint8)
    key = np.zeros(n, dtype=np.int16)
    ver = np.zeros(n, dtype=np.int16)
    corr = np.zeros(n, dtype=np.int32)
    hsize = np.zeros(n, dtype=np.int32)
    cid = Col("var", K.STRING)
    errors = {}
    for i, frame in enumerate(frames):
        err = _common.request_header_error(frame)
        if err is not None:
            status[i] = 1
            errors[i] = err
            cid.null()
            continue
        k, v = int.from_bytes(frame[0:2], "big", signed=True), int.from_bytes(frame[2:4], "big", signed=True)
        h, end = decode_request_header(frame, int(hv_table[k, v]))
        key[i], ver[i], corr[i], hsize[i] = k, v, h.correlation_id, end
        if h.client_id is None:
            cid.null()
        else:
            cid.put(h.client_id.encode("utf-8"))
    return status, key, ver, corr, hsize, cid.export(), errors


def arrow_response_headers(arr, kind, hv_table, keys, versions, kvalid):
    frames = rows(arr)
    n = len(frames)
    status = np.zeros(n, dtype=np.uint8)
    corr = np.zeros(n, dtype=np.int32)
    hsize = np.zeros(n, dtype=np.int32)
    errors = {}
    for i, frame in enumerate(frames):
        k, v = (int(keys[i]), int(versions[i])) if kvalid[i] else (None, None)
        err = _common.response_header_error(frame, k, v)
        if err is not None:
            status[i] = 1
            errors[i] = err
            continue
        h, end = decode_response_header(frame, int(hv_table[k, v]))
        corr[i], hsize[i] = h.correlation_id, end
    return status, corr, hsize, errors


def request_headers_array(frames):
    """kafkaproto.arrow.request_headers."""
    return _build.request_headers_array(sys.modules[__name__], frames)


def response_headers_array(frames, api_key, api_version):
    """kafkaproto.arrow.response_headers."""
    return _build.response_headers_array(sys.modules[__name__], frames, api_key, api_version)
