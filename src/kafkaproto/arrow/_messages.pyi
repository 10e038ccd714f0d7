"""Types of kafkaproto.arrow._messages (_messages.pyx), the compiled message loop
behind kafkaproto.arrow.messages, and of its twin _messages_py."""

from collections.abc import Sequence
from types import ModuleType

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from kafkaproto.arrow._columns import _Column, _Errors
from kafkaproto.messages._engine import Plan
from kafkaproto.messages._runtime import Message

COMPILED: bool
#: The message engine whose plans this loop runs (the compiled loop runs the
#: compiled engine's plans, the twin the twin's).
ENGINE: ModuleType

def arrow_messages(
    arr: pa.Array,
    kind: int,
    cls: type[Message],
    plans: Sequence[Plan | None],
    hv_table: npt.NDArray[np.int8],
    versions: npt.NDArray[np.int32] | None = None,
    vvalid: npt.NDArray[np.uint8] | None = None,
) -> tuple[npt.NDArray[np.uint8], _Column, _Errors, npt.NDArray[np.int32]]:
    """Decode frames of one message class into the union column tree (and each
    row's bytes after its body, -1 for a failed row).

    ``plans``: the class's plan for each version 0..63 (None where it has
    none); ``versions`` (responses only) gives each row's version.  Returns
    ``(status, tree, errors, trailing)``.
    """
