"""What a call gave, in a form two implementations can be compared by:
``("ok", value)`` or ``("err", class name, message, offset)``.

One :func:`outcome` for every comparison of the compiled core with its twin
(the agreement tests, the fuzz targets, the thread tests); the capture
tests compare whole files instead (frames and accounting, see
tests/twins/test_capture.py).
"""

from __future__ import annotations

import math
import struct

__all__ = ["canon", "failure", "outcome"]


def canon(v):
    """A comparable form of a decoded value: structs as dicts, NaN by its bits."""
    if hasattr(v, "to_dict"):
        return canon(v.to_dict())
    if isinstance(v, dict):
        return {k: canon(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return tuple(canon(x) for x in v)
    if isinstance(v, memoryview):
        return bytes(v)
    if hasattr(v, "tolist"):  # numpy arrays
        return tuple(v.tolist())
    if isinstance(v, float) and math.isnan(v):
        return ("nan", struct.pack(">d", v))
    return v


def failure(exc):
    """``("err", class name, message, offset)`` for an exception (offset None if it has none)."""
    return ("err", type(exc).__name__, str(exc), getattr(exc, "offset", None))


def outcome(fn, *, catch=Exception, convert=None):
    """``("ok", fn())`` or the :func:`failure` of what ``fn()`` raised.

    ``catch``: the exceptions that are an outcome; any other propagates.  The
    default, any ``Exception``, suits the agreement tests (the class is what
    is compared); the fuzz targets catch only ``KafkaProtocolError``, so that
    anything else escaping a decoder is a crash.
    ``convert``: applied to the value, inside the ``try`` (e.g. :func:`canon`).
    """
    try:
        value = fn()
        return ("ok", value if convert is None else convert(value))
    except catch as exc:
        return failure(exc)
