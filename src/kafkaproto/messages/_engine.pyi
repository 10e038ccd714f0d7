"""Types of kafkaproto.messages._engine (_engine.pyx), the compiled message
engine, and of its twin _engine_py: the per-version plans the runtime
(messages/_runtime.py) builds, and the two entry points that run them.
"""

from typing import Any

from _typeshed import ReadableBuffer

from kafkaproto._codec import Writer
from kafkaproto.messages._runtime import Struct

__all__ = ["FieldPlan", "Plan", "decode_struct", "encode_struct"]

class FieldPlan:
    """One field of a plan: how it is read and written at one version."""

    def __init__(
        self,
        attr: str,
        kind: int,
        elem: int,
        nullable: bool,
        compact: bool,
        sub: Plan | None,
        default: Any,
        default_kind: int,
        ignorable: bool,
        tag: int,
        tagged: bool,
        zero_copy: bool = False,
    ) -> None: ...
    @property
    def attr(self) -> str: ...
    @property
    def kind(self) -> int: ...
    @property
    def elem(self) -> int: ...
    @property
    def nullable(self) -> bool: ...
    @property
    def compact(self) -> bool: ...
    @property
    def sub(self) -> Plan | None: ...
    @property
    def default(self) -> Any: ...
    @property
    def default_kind(self) -> int:
        """0 the value ``default``, 1 a fresh list, 2 a fresh instance of the class ``default``."""
    @property
    def ignorable(self) -> bool: ...
    @property
    def tag(self) -> int: ...
    @property
    def tagged(self) -> bool: ...
    @property
    def zero_copy(self) -> bool:
        """A records or zeroCopy bytes field: a view on decode with views, a blob on encode."""

class Plan:
    """A struct's fields at one version."""

    def __init__(
        self,
        cls: type[Struct],
        name: str,
        fields: tuple[FieldPlan, ...],
        absent: tuple[FieldPlan, ...],
        tagged: tuple[FieldPlan, ...],
        flexible: bool,
        context: str,
    ) -> None: ...
    @property
    def cls(self) -> type[Struct]: ...
    @property
    def name(self) -> str: ...
    @property
    def fields(self) -> tuple[FieldPlan, ...]: ...
    @property
    def absent(self) -> tuple[FieldPlan, ...]: ...
    @property
    def tagged(self) -> tuple[FieldPlan, ...]: ...
    @property
    def flexible(self) -> bool: ...
    @property
    def context(self) -> str: ...
    @property
    def tag_map(self) -> dict[int, FieldPlan]: ...

def decode_struct(
    plan: Plan, data: ReadableBuffer, offset: int = 0, views: memoryview | None = None
) -> tuple[Any, int]:
    """Decode one struct/message with ``plan`` → (object, end offset)."""

def encode_struct(plan: Plan, obj: Struct, writer: Writer, canonical: bool = False, lenient: bool = False) -> None: ...
