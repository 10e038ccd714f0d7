"""Pure-Python twin of the compiled message loop (``_messages.pyx``).

Each row is decoded with the object decoders (the message classes), then
written into the same column tree; a row that fails gets the text they raise.
"""

from __future__ import annotations

import sys

import numpy as np

from ..errors import KafkaProtocolError, UnsupportedVersionError
from ..headers import decode_request_header, decode_response_header
from ..messages import request_class
from ..protocol import decode_response_body
from . import _build, _common
from ._columns_py import put_struct, rows, struct_cols

COMPILED = False
#: The engine whose plans arrow_messages runs: none (the message classes decode here).
ENGINE = None


class _RowError(Exception):
    pass


def _decode_request(frame, cls, table):
    """decode_request's checks in its order (the header by its own api key), then the column's api key."""
    err = _common.request_header_error(frame)
    if err is not None:
        raise _RowError(err)
    api_key, version = int.from_bytes(frame[0:2], "big", signed=True), int.from_bytes(frame[2:4], "big", signed=True)
    if api_key != cls.API_KEY:
        other = request_class(api_key).NAME
        raise _RowError(f"a {other} (api key {api_key}) in a column of {cls.NAME} (api key {cls.API_KEY})")
    _, body = decode_request_header(frame, int(table[api_key, version]))
    obj, end = cls.decode(frame, version, body, with_end=True)
    return obj, version, len(frame) - end


def _header_size(frame, hs):
    if hs > len(frame):
        raise _RowError(f"header size {hs} past the end of a {len(frame)}-byte frame")
    return hs


def _decode_request_body(frame, cls, version, hs):
    """A request body at ``hs`` (its header already read by the caller), at ``version``."""
    if not cls.supports(version):
        raise UnsupportedVersionError(f"{cls.NAME} v{version} is not supported (versions {cls.VALID_VERSIONS})",
                                      "request header", 2)
    obj, end = cls.decode(frame, version, _header_size(frame, hs), with_end=True)
    return obj, version, len(frame) - end


def _decode_response(frame, cls, version, table, hs):
    if version is None:
        raise _RowError("null api version")
    if not cls.supports(version):
        raise UnsupportedVersionError(f"{cls.NAME} v{version} is not supported (versions {cls.VALID_VERSIONS})",
                                      cls.NAME)
    if hs >= 0:
        body = _header_size(frame, hs)
    else:
        _, body = decode_response_header(frame, int(table[cls.API_KEY, version]))
    obj, v, end = decode_response_body(cls, frame, version, body)
    return obj, v, len(frame) - end


def arrow_messages(arr, kind, cls, plans, hv_table, versions=None, vvalid=None, hsizes=None):
    frames = rows(arr)
    n = len(frames)
    status = np.zeros(n, dtype=np.uint8)
    trailing = np.full(n, -1, dtype=np.int32)
    errors = {}
    root = struct_cols(cls)
    for i, frame in enumerate(frames):
        hs = -1 if hsizes is None else int(hsizes[i])
        try:
            if frame is None:
                raise _RowError("null frame")
            if cls.KIND == "request":
                if hs >= 0 and (vvalid is None or vvalid[i]):
                    obj, v, trailing[i] = _decode_request_body(frame, cls, int(versions[i]), hs)
                else:
                    obj, v, trailing[i] = _decode_request(frame, cls, hv_table)
            else:
                ver = None if vvalid is not None and not vvalid[i] else int(versions[i])
                obj, v, trailing[i] = _decode_response(frame, cls, ver, hv_table, hs)
        except (KafkaProtocolError, _RowError) as exc:
            status[i] = 1
            errors[i] = str(exc)
            for kid in root.kids:
                kid.null()
            root.valid.append(1)
            continue
        put_struct(root, cls, obj, v)
    return status, root.export(), errors, trailing


def messages_array(frames, cls, api_version=None, header_size=None):
    """kafkaproto.arrow.messages (for message class ``cls``)."""
    return _build.messages_array(sys.modules[__name__], frames, cls, api_version, header_size)
