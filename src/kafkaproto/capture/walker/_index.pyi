"""Types of kafkaproto.capture.walker._index, the byte-range index of pcap files, and of its twin
_index_py (same names)."""

from typing import Any

import numpy as np

COMPILED: bool
#: the fields of a segment position row (the byte-range index), in order
POS_FIELDS: tuple[tuple[str, str], ...]
POS_DTYPE: np.dtype[Any]
#: order = file rank << OFFSET_BITS | record offset
OFFSET_BITS: int

def connection_key(family: int, a: bytes, ap: int, b: bytes, bp: int) -> int:
    """The byte-range index's key of a 4-tuple (the same both ways; never 0)."""

def index_pcap(buf: Any, start: int, end: int, big_endian: bool, ticks: int, linktype: int, rank: int
               ) -> tuple[np.ndarray[Any, Any], list[tuple[int, int, int, int]], dict[str, int], int, int, str | None]:
    """``(rows, others, reasons, stop, records, error)`` of the records starting in ``[start, end)``."""

def pcap_boundary(buf: Any, start: int, end: int, big_endian: bool, ticks: int, max_incl: int, ref_sec: int,
                  confirm: int) -> int:
    """The first plausible record boundary in ``[start, end)`` confirmed by ``confirm`` records; -1: none."""
