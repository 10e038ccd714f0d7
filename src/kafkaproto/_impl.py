"""The one place that chooses the implementation: the compiled modules, or
their pure-Python twins.

Every compiled module (``kafkaproto._codec``, ``messages._engine``,
``records._batches``, the ``arrow`` loops, ``capture.walker._scan``) has a twin
beside it named ``<module>_py`` with the same names, values and errors.
Either all compiled modules are used or all twins: ``KAFKAPROTO_PURE=1``
forces the twins, and so does an install without the compiled core.  The
layers ask :func:`load` for their implementation instead of importing one.
"""

import importlib
import os
from types import ModuleType
from typing import TYPE_CHECKING

_FORCE_PURE = os.environ.get("KAFKAPROTO_PURE", "") not in ("", "0")


def _compiled_core_present() -> bool:
    if _FORCE_PURE:
        return False
    try:
        from . import _codec  # noqa: F401
    except ImportError:  # no compiler at install time: the twins do the work
        return False
    return True


#: True when the compiled modules are in use.
COMPILED = _compiled_core_present()


def load(name: str) -> ModuleType:
    """The implementation of compiled module ``name`` (e.g. ``"records._batches"``): the
    module itself, or its twin ``name + "_py"`` when the twins are in use."""
    return importlib.import_module(f"{__package__}.{name}" if COMPILED else f"{__package__}.{name}_py")


#: The wire primitives, frames and headers.
if TYPE_CHECKING:  # type checkers read the compiled module's stub (_codec.pyi), which the twin matches
    from . import _codec as codec
else:
    codec = load("_codec")
#: The message engine.
engine = load("messages._engine")

__all__ = ["COMPILED", "codec", "engine", "load"]
