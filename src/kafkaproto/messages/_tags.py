"""The order of a struct's tagged fields on the way out, shared by the
compiled engine and its twin (it runs only for structs that have tags)."""

from __future__ import annotations

from operator import itemgetter

from ..errors import EncodeError

__all__ = ["tag_section"]


def tag_section(known: list, unknown, wire) -> list:
    """The (tag, bytes) entries of a tagged-field section, in the order to write them.

    ``known``: the known fields to write, ascending; ``unknown``: the struct's
    ``unknown_tagged_fields``; ``wire``: the tags in the order a decoded struct
    had them (None: Kafka's order, ascending).  Tags the wire did not carry go
    where ascending order puts them if the wire was ascending, else last.
    """
    entries = known
    if unknown:
        have = {t for t, _ in known}
        for t, _ in unknown:
            if t in have:
                raise EncodeError(f"unknown tagged field {t} has the tag of a known field", "tagged fields")
        entries = sorted(known + list(unknown), key=itemgetter(0))
    if wire is None or len(entries) < 2 or all(wire[k] < wire[k + 1] for k in range(len(wire) - 1)):
        return entries
    rank = {t: k for k, t in enumerate(wire)}
    return sorted(entries, key=lambda e: (0, rank[e[0]]) if e[0] in rank else (1, e[0]))
