"""Shared by the Arrow decoders and their twins: the header-version table that
the loops are handed (the rule itself is kafkaproto.protocol's), and the
header checks the twins run (the compiled loops record the same failures).
"""

from __future__ import annotations

from .. import protocol
from ..errors import KafkaProtocolError, TruncatedError, UnknownApiError, UnsupportedVersionError
from ..messages import APIS, request_class, response_class

# the header-version table the loops are handed: the rule's own (kafkaproto.protocol)
header_table = protocol.header_table


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
