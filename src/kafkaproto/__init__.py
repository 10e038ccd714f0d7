"""kafkaproto: encode and decode every byte of the Apache Kafka wire protocol.

Layers, top to bottom on decode: :mod:`kafkaproto.frames` (size-prefixed
frames), :mod:`kafkaproto.headers`, messages, records, arrow.  The hot code
lives in the compiled ``kafkaproto._codec``; ``kafkaproto._codec_py`` is its
pure-Python twin (``KAFKAPROTO_PURE=1`` forces it).
"""

from ._impl import COMPILED
from .error_codes import ErrorCode
from .errors import (
    CorruptRecordError,
    EncodeError,
    FrameSizeError,
    InvalidValueError,
    KafkaProtocolError,
    RecordLimitError,
    TruncatedError,
    UnknownApiError,
    UnsupportedVersionError,
)
from .frames import FrameReader, frame, frame_offsets, split_frames
from .headers import (
    RequestHeader,
    ResponseHeader,
    decode_request_header,
    decode_response_header,
    encode_request_header,
    encode_response_header,
)
from .primitives import Reader, Writer
from .protocol import (
    Connection,
    CorrelationError,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    negotiate_versions,
    request_header_version,
    response_header_version,
)

__version__ = "0.1.0"

__all__ = [
    "COMPILED",
    "Connection",
    "CorrelationError",
    "ErrorCode",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
    "negotiate_versions",
    "request_header_version",
    "response_header_version",
    "CorruptRecordError",
    "RecordLimitError",
    "EncodeError",
    "FrameReader",
    "FrameSizeError",
    "InvalidValueError",
    "KafkaProtocolError",
    "Reader",
    "RequestHeader",
    "ResponseHeader",
    "TruncatedError",
    "UnknownApiError",
    "UnsupportedVersionError",
    "Writer",
    "decode_request_header",
    "decode_response_header",
    "encode_request_header",
    "encode_response_header",
    "frame",
    "frame_offsets",
    "split_frames",
]
