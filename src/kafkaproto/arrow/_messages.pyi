"""Types of kafkaproto.arrow._messages (_messages.pyx), the compiled message loop
behind kafkaproto.arrow.messages, and of its twin _messages_py."""

from collections.abc import Sequence
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from kafkaproto.arrow._columns import _Column, _Errors
from kafkaproto.messages import Message

COMPILED: bool
#: The message engine whose plans this loop runs (the compiled engine's), None
#: for the twin (it decodes with the message classes).
ENGINE: ModuleType | None

def arrow_messages(
    arr: pa.Array,
    kind: int,
    cls: type[Message],
    plans: Sequence[Any],
    hv_table: npt.NDArray[np.int8],
    versions: npt.NDArray[np.int32] | None = None,
    vvalid: npt.NDArray[np.uint8] | None = None,
    hsizes: npt.NDArray[np.int32] | None = None,
) -> tuple[npt.NDArray[np.uint8], _Column, _Errors, npt.NDArray[np.int32]]:
    """Decode frames of one message class into the union column tree (and each
    row's bytes after its body, -1 for a failed row).

    ``plans``: the class's plan for each version 0..63 (None where it has
    none: kafkaproto.messages.version_plans); ``versions`` gives each row's
    version (responses, and requests whose ``hsizes`` are given: where each
    body starts, -1 to read the header).  Returns ``(status, tree, errors,
    trailing)``.
    """

def messages_array(
    frames: Any, cls: type[Message], api_version: Any = None, header_size: Any = None
) -> pa.Array | pa.ChunkedArray:
    """kafkaproto.arrow.messages (for message class ``cls``)."""
