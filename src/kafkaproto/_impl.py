"""Chooses the implementation: the compiled core, or its pure-Python twin.

``KAFKAPROTO_PURE=1`` forces the twin.  Everything else in the package imports
the primitives from here, so one switch covers the whole library.
"""

import os

_FORCE_PURE = os.environ.get("KAFKAPROTO_PURE", "") not in ("", "0")

if _FORCE_PURE:
    from . import _codec_py as codec
else:
    try:
        from . import _codec as codec
    except ImportError:  # no compiler at install time: the twin does the work
        from . import _codec_py as codec

if codec.COMPILED:
    engine = codec
else:
    from . import _engine_py as engine

#: True when the compiled core is in use.
COMPILED = codec.COMPILED

#: The compiled fast path of the capture layer (None with the twin).
capture = codec if COMPILED else None

__all__ = ["codec", "engine", "capture", "COMPILED"]
