"""Kafka's protocol error codes (from the project's copy of Kafka's table).

>>> ErrorCode.of(3)
<ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: 3>
>>> ErrorCode.of(9999)          # a code this table does not know
<ErrorCode.UNKNOWN_SERVER_ERROR: -1>
"""

from __future__ import annotations

import enum

from .messages._gen.error_codes import ERRORS

__all__ = ["ErrorCode", "error_name", "is_retriable"]

_RETRIABLE = {code for code, _, retriable in ERRORS if retriable}

ErrorCode = enum.IntEnum("ErrorCode", [(name, code) for code, name, _ in ERRORS], module=__name__)
ErrorCode.__doc__ = "A Kafka protocol error code."


def _of(cls, code: int) -> ErrorCode:
    """The member for ``code``; codes this table does not know map to UNKNOWN_SERVER_ERROR (never raises)."""
    try:
        return cls(code)
    except ValueError:
        return cls.UNKNOWN_SERVER_ERROR


ErrorCode.of = classmethod(_of)
ErrorCode.retriable = property(lambda self: int(self) in _RETRIABLE)


def error_name(code: int) -> str:
    return ErrorCode.of(code).name


def is_retriable(code: int) -> bool:
    return code in _RETRIABLE
