"""Pure-Python twin of the compiled message loop (``_messages.pyx``).

Each row is decoded with the object decoders (the twin engine), then written
into the same column tree; a row that fails gets the text they raise.
"""

from __future__ import annotations

import numpy as np

from ..errors import KafkaProtocolError, UnsupportedVersionError
from ..headers import decode_request_header, decode_response_header
from ..messages import _engine_py as ENGINE  # noqa: F401  (arrow reads lib.ENGINE: the engine of these loops)
from ..messages import request_class
from . import _common
from ._columns_py import put_struct, rows, struct_cols

COMPILED = False


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


def _decode_response(frame, cls, version, table):
    if version is None:
        raise _RowError("null api version")
    if not cls.supports(version):
        raise UnsupportedVersionError(f"{cls.NAME} v{version} is not supported (versions {cls.VALID_VERSIONS})",
                                      cls.NAME)
    _, body = decode_response_header(frame, int(table[cls.API_KEY, version]))
    try:
        obj, end = cls.decode(frame, version, body, with_end=True)
        return obj, version, len(frame) - end
    except KafkaProtocolError:
        # KIP-511: an unknown ApiVersions version is answered with a v0 body and error 35
        if cls.API_KEY != 18 or version == 0:
            raise
        msg, end = cls.decode(frame, 0, body, with_end=True)
        if msg.error_code != 35:
            raise
        return msg, 0, len(frame) - end


def arrow_messages(arr, kind, cls, plans, hv_table, versions=None, vvalid=None):
    frames = rows(arr)
    n = len(frames)
    status = np.zeros(n, dtype=np.uint8)
    trailing = np.full(n, -1, dtype=np.int32)
    errors = {}
    root = struct_cols(cls)
    for i, frame in enumerate(frames):
        try:
            if frame is None:
                raise _RowError("null frame")
            if cls.KIND == "request":
                obj, v, trailing[i] = _decode_request(frame, cls, hv_table)
            else:
                ver = None if vvalid is not None and not vvalid[i] else int(versions[i])
                obj, v, trailing[i] = _decode_response(frame, cls, ver, hv_table)
        except (KafkaProtocolError, _RowError) as exc:
            status[i] = 1
            errors[i] = str(exc)
            for kid in root.kids:
                kid.null()
            root.valid.append(1)
            continue
        put_struct(root, cls, obj, v)
    return status, root.export(), errors, trailing
