"""The pure-Python twin of kafkaproto._pairing: the requests of one
connection waiting for their responses, paired oldest first per correlation
id (the rule every connection of kafkaproto follows)."""

from __future__ import annotations

from collections import deque

__all__ = ["COMPILED", "NO_TS", "Pairing"]

COMPILED = False
NO_TS = -(1 << 63)
_NONE = object()


class Pairing:
    """See the compiled module."""

    __slots__ = ("waiting", "pending", "_order", "_next", "_first")

    def __init__(self) -> None:
        self.waiting = 0
        #: correlation id -> its waiting requests, oldest first:
        #: [number, (ts, seq, client, corr, key, version), payload]
        self.pending: dict[int, deque] = {}
        self._order: dict[int, list] = {}  # send number -> the same entries, oldest first
        self._next = 0
        self._first = 0  # no request sent before this number waits

    def __len__(self) -> int:
        return self.waiting

    def push(self, req: tuple, payload=None) -> bool:
        """``req``: (ts, seq, client, correlation id, api key, api version)."""
        entry = [self._next, req, payload]
        self._order[self._next] = entry
        self._next += 1
        self.waiting += 1
        got = self.pending.get(req[3])
        if got is None:
            self.pending[req[3]] = deque((entry,))
            return False
        got.append(entry)
        return True

    def _take(self, corr: int):
        got = self.pending.get(corr)
        if got is None:
            return None
        entry = got.popleft()
        if not got:
            del self.pending[corr]
        del self._order[entry[0]]
        self.waiting -= 1
        return entry

    def pop(self, corr: int):
        """The oldest request waiting with ``corr`` (its tuple), taken; None when none waits."""
        entry = self._take(corr)
        return None if entry is None else entry[1]

    def _oldest(self):
        order = self._order
        if not order:
            return None
        n = self._first
        while n not in order:
            n += 1
        self._first = n
        return order[n]

    def drop_oldest(self) -> None:
        entry = self._oldest()
        if entry is not None:
            self._take(entry[1][3])

    def add(self, correlation_id: int, payload=None, api_key: int = 0, api_version: int = 0, ts=None, seq: int = -1,
            client: int = -1) -> bool:
        return self.push((NO_TS if ts is None else ts, seq, client, correlation_id, api_key, api_version), payload)

    def take(self, correlation_id: int, default=None):
        entry = self._take(correlation_id)
        return default if entry is None else entry[2]

    def oldest(self):
        entry = self._oldest()
        return None if entry is None else (entry[1][3], entry[2])

    def request_of(self, corr: int):
        got = self.pending.get(corr)
        return None if got is None else (got[0][1][4], got[0][1][5])

    def waiting_list(self) -> list:
        return [(corr, key, version, None if ts == NO_TS else ts, seq, client)
                for _n, (ts, seq, client, corr, key, version), _p in self._order.values()]

    def take_waiting(self) -> list:
        out = self.waiting_list()
        self.clear()
        return out

    def clear(self) -> None:
        self.pending.clear()
        self._order.clear()
        self._first = self._next
        self.waiting = 0
