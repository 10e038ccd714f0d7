"""Request and response headers.

Request header v0 is api key, api version and correlation id; v1 adds the
client id; v2 (flexible requests) adds a tagged-field section.  The client id
is an int16-length nullable string in *every* version, v2 included: brokers
must read the header of an ApiVersions request of any version before they know
which versions the client speaks.  Response header v0 is the correlation id;
v1 adds a tagged-field section.
"""

from __future__ import annotations

from operator import itemgetter

from ._impl import codec
from .errors import EncodeError

__all__ = [
    "RequestHeader",
    "ResponseHeader",
    "decode_request_header",
    "decode_response_header",
    "encode_request_header",
    "encode_response_header",
]


def _by_tag(fields) -> tuple:
    # The order they are written in (ascending tags; wire order among equal tags),
    # whatever order they were read in: decoding the encoding gives the same header.
    return tuple(sorted(fields, key=itemgetter(0))) if fields else ()


class RequestHeader:
    __slots__ = ("api_key", "api_version", "correlation_id", "client_id", "unknown_tagged_fields")

    def __init__(self, api_key: int, api_version: int, correlation_id: int = 0, client_id: str | None = None,
                 unknown_tagged_fields: list | None = None):
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.client_id = client_id
        #: tagged fields this library has no name for, as (tag, raw bytes), kept for re-encoding
        self.unknown_tagged_fields = _by_tag(unknown_tagged_fields)

    def to_dict(self) -> dict:
        return {name: getattr(self, name) for name in self.__slots__}

    def __eq__(self, other):
        if type(other) is not RequestHeader:
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self.__slots__[:-1]) and \
            tuple(self.unknown_tagged_fields) == tuple(other.unknown_tagged_fields)

    def __repr__(self):
        extra = f", unknown_tagged_fields={self.unknown_tagged_fields!r}" if self.unknown_tagged_fields else ""
        return (f"RequestHeader(api_key={self.api_key}, api_version={self.api_version}, "
                f"correlation_id={self.correlation_id}, client_id={self.client_id!r}{extra})")

    def encode(self, header_version: int) -> bytes:
        return encode_request_header(self, header_version)


class ResponseHeader:
    __slots__ = ("correlation_id", "unknown_tagged_fields")

    def __init__(self, correlation_id: int = 0, unknown_tagged_fields: list | None = None):
        self.correlation_id = correlation_id
        self.unknown_tagged_fields = _by_tag(unknown_tagged_fields)

    def to_dict(self) -> dict:
        return {name: getattr(self, name) for name in self.__slots__}

    def __eq__(self, other):
        if type(other) is not ResponseHeader:
            return NotImplemented
        return (self.correlation_id == other.correlation_id
                and tuple(self.unknown_tagged_fields) == tuple(other.unknown_tagged_fields))

    def __repr__(self):
        extra = f", unknown_tagged_fields={self.unknown_tagged_fields!r}" if self.unknown_tagged_fields else ""
        return f"ResponseHeader(correlation_id={self.correlation_id}{extra})"

    def encode(self, header_version: int) -> bytes:
        return encode_response_header(self, header_version)


def _check_no_tags(tags, what, version):
    if tags:
        raise EncodeError(f"{what} v{version} has no tagged fields, but {len(tags)} were set", what)


def decode_request_header(buf, header_version: int, offset: int = 0) -> tuple[RequestHeader, int]:
    """Decode a request header at ``offset`` → ``(header, offset of the body)``."""
    api_key, api_version, cid, client_id, tags, end = codec.decode_request_header(buf, header_version, offset)
    return RequestHeader(api_key, api_version, cid, client_id, tags), end


def encode_request_header(header: RequestHeader, header_version: int) -> bytes:
    if header_version < 2:
        _check_no_tags(header.unknown_tagged_fields, "RequestHeader", header_version)
    w = codec.Writer()
    codec.encode_request_header(w, header_version, header.api_key, header.api_version, header.correlation_id,
                                header.client_id, _by_tag(header.unknown_tagged_fields))
    return w.getvalue()


def decode_response_header(buf, header_version: int, offset: int = 0) -> tuple[ResponseHeader, int]:
    """Decode a response header at ``offset`` → ``(header, offset of the body)``."""
    cid, tags, end = codec.decode_response_header(buf, header_version, offset)
    return ResponseHeader(cid, tags), end


def encode_response_header(header: ResponseHeader, header_version: int) -> bytes:
    if header_version < 1:
        _check_no_tags(header.unknown_tagged_fields, "ResponseHeader", header_version)
    w = codec.Writer()
    codec.encode_response_header(w, header_version, header.correlation_id, _by_tag(header.unknown_tagged_fields))
    return w.getvalue()
