"""Kafka's protocol error codes (from the project's copy of Kafka's table).

>>> ErrorCode.of(3)
<ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: 3>
>>> ErrorCode(9999)             # a code this table does not know (ErrorCode.of is the same)
<ErrorCode.UNKNOWN_SERVER_ERROR: -1>
"""

from __future__ import annotations

from .messages import RETRIABLE_CODES as _RETRIABLE
from .messages import ErrorCode

__all__ = ["ErrorCode", "error_name", "is_retriable"]


def error_name(code: int) -> str:
    return ErrorCode.of(code).name


def is_retriable(code: int) -> bool:
    return code in _RETRIABLE
