"""Shared by the Arrow decoders and their twins: the header-version table that
the loops are handed (the rule itself is kafkaproto.protocol's), and the
header checks the twins run (the compiled loops record the same failures).
"""

from __future__ import annotations

import numpy as np

from ..errors import KafkaProtocolError, TruncatedError, UnknownApiError, UnsupportedVersionError
from ..messages import APIS, request_class, response_class

_TABLES: dict = {}


def header_versions(api_key: int, request: bool) -> np.ndarray:
    """int8[64]: the header version of each version of ``api_key`` (-1: unsupported)."""
    from ..protocol import request_header_version, response_header_version

    cls = request_class(api_key) if request else response_class(api_key)
    fn = request_header_version if request else response_header_version
    out = np.full(64, -1, dtype=np.int8)
    for v in range(64):
        if cls.supports(v):
            out[v] = fn(api_key, v)
    return out


def header_table(request: bool) -> np.ndarray:
    """int8[keys, 64] for every api key: header versions, -1 unsupported version, -2 unknown key."""
    got = _TABLES.get(request)
    if got is None:
        nkeys = max(APIS) + 1
        got = np.full((nkeys, 64), -2, dtype=np.int8)
        for key, (req, resp) in APIS.items():
            if req if request else resp:
                got[key] = header_versions(key, request)
        _TABLES[request] = got
    return got


def _message(exc: KafkaProtocolError) -> str:
    return str(exc)


def request_header_error(frame) -> str | None:
    """Why the request header of ``frame`` cannot be read (None if it can)."""
    from ..headers import decode_request_header
    from ..protocol import request_header_version

    if frame is None:
        return "null frame"
    mv = memoryview(frame)
    try:
        if len(mv) < 4:
            raise TruncatedError(f"need 4 bytes, {len(mv)} left", "request header", 0)
        api_key = int.from_bytes(mv[0:2], "big", signed=True)
        api_version = int.from_bytes(mv[2:4], "big", signed=True)
        if api_key not in APIS or not APIS[api_key][0]:
            raise UnknownApiError(f"api key {api_key} is not known", "request header", 0)
        cls = request_class(api_key)
        if not cls.supports(api_version):
            raise UnsupportedVersionError(
                f"{cls.NAME} v{api_version} is not supported (versions {cls.VALID_VERSIONS})", "request header", 2)
        decode_request_header(mv, request_header_version(api_key, api_version))
    except KafkaProtocolError as exc:
        return _message(exc)
    return None


def response_header_error(frame, api_key, api_version) -> str | None:
    """Why the response header of ``frame`` (answering api_key/api_version) cannot be read."""
    from ..headers import decode_response_header
    from ..protocol import response_header_version

    if frame is None:
        return "null frame"
    if api_key is None or api_version is None:
        return "null api key or api version"
    try:
        if api_key not in APIS or not APIS[api_key][1]:
            raise UnknownApiError(f"api key {api_key} is not known", "api key")
        cls = response_class(api_key)
        if not cls.supports(api_version):
            raise UnsupportedVersionError(
                f"{cls.NAME} v{api_version} is not supported (versions {cls.VALID_VERSIONS})", cls.NAME)
        decode_response_header(memoryview(frame), response_header_version(api_key, api_version))
    except KafkaProtocolError as exc:
        return _message(exc)
    return None
