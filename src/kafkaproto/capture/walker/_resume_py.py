"""The pure-Python twin of kafkaproto.capture.walker._resume: a walker's
connections as plain values and back (what ``Walker.save()`` and
``Walker.load()`` write with walker/snapshot.py), the same values as the
compiled module's.

The state is ``[serial, next_id, open, closed, waiting]``:

- ``open``: the open connections, oldest first, each ``[family, address 0,
  port 0, address 1, port 1, id, first ts, fins, client end, state,
  [direction 0, direction 1], [half 0, half 1], kafka]``;
- a direction (reassembly): ``[has base, base, from start, ended, next,
  pieces]``, the segments waiting behind a hole as ``[offset, serial, ts,
  length, bytes]`` in the order they are taken;
- a half (the walker's side of a direction): ``[target, held items, held
  bytes, bytes held, scanned, bytes not framed, their stream offset, ts,
  synced, skip, unsure, taken, claim wait, frame flags]``, a held item
  ``[gap, ts, n]``;
- ``kafka``: None, or ``[frames, waiting requests]`` of a Kafka connection,
  a request ``[correlation id, api key, api version, ts, seq, client id]``;
- ``closed``: the closed connections remembered, oldest first, by their
  4-tuple; ``waiting``: the directions with bytes behind a hole, oldest
  first, as ``[connection's index in open, side]``.

Times are nanoseconds, ``NO_TS`` for none.
"""

from __future__ import annotations

import importlib

from ._tcp_py import Conn

__all__ = ["COMPILED", "load_tcp", "save_tcp"]

COMPILED = False
NO_TS = -(1 << 63)
TO_HELD, TO_KAFKA = 0, 1
UNDECIDED, KAFKA = 0, 1
_SKIP = {"gap": 0, "not_kafka": 1}
_SKIP_NAME = ("gap", "not_kafka")


def _ts(t) -> int:
    return NO_TS if t is None else t


def _key(c: Conn) -> list:
    k = c.key
    return [k[0], k[1], k[2], k[3], k[4]]


def _dir(d) -> list:
    pieces = sorted(d.heap)
    return [int(d.base is not None), d.base or 0, int(d.from_start), int(d.ended), d.next,
            [[off, serial, _ts(ts), length, data] for off, serial, ts, length, data in pieces]]


def _half(h) -> list:
    items, held = [], []
    for item in h.items:
        if item[0] == "gap":
            items.append([1, NO_TS, item[1]])
        else:
            items.append([0, _ts(item[1]), len(item[2])])
            held.append(item[2])
    kh = h.kh
    return [h.target, items, b"".join(held), h.nbytes, h.scanned, bytes(h.buf[h.pos:]), h.base + h.pos,
            _ts(kh.ts) if kh is not None else NO_TS, int(h.synced), _SKIP[h.skip], int(h.unsure), h.taken,
            h.claim_wait, kh.flags if kh is not None else 0]


def save_tcp(t, clients: list) -> list:
    """The state of walker ``t`` (a Walker of walker._scan_py); ``clients``:
    its sink's client ids by index."""
    index = {}
    conns = []
    for i, c in enumerate(t._open.values()):
        index[c] = i
        kafka = None
        if c.pairing is not None:
            waiting = [[corr, key, version, _ts(ts), seq, clients[cl] if cl >= 0 else None]
                       for corr, key, version, ts, seq, cl in c.pairing.waiting_list()]
            kafka = [c.pairing.frames, waiting]
        conns.append([*_key(c), c.id, _ts(c.first_ts), c.fins, c.client, c.state, [_dir(c.d[0]), _dir(c.d[1])],
                      [_half(c.h[0]), _half(c.h[1])], kafka])
    closed = [_key(c) for c in t._closed.values()]
    waiting = [[index[d.conn], d.side] for d in t._waiting]
    return [t._serial, t._next_id, conns, closed, waiting]


def load_tcp(t, st: list, sink, factory, max_frame_size: int) -> int:
    """Walker ``t`` (fresh: no connection yet) takes the state ``st``: its
    Kafka connections get their objects from ``factory`` and ``sink`` again.
    The bytes held for detection (the walker's count of them)."""
    from ._scan_py import DETECT_BYTES, _Half
    from .packets import endpoint_text

    state_class = importlib.import_module(type(sink).__module__).KafkaState
    serial, next_id, conns, closed, waiting = st
    t._serial, t._next_id = serial, next_id
    made = []
    held_total = 0
    for cs in conns:
        family, a0, p0, a1, p1, cid, first_ts, fins, client, state, dirs, halves, kafka = cs
        key = (family, a0, p0, a1, p1)
        c = Conn(key, cid, None if first_ts == NO_TS else first_ts)
        t._open[key] = c
        c.fins, c.client, c.state = fins, client, state
        for side in (0, 1):
            has_base, base, from_start, ended, nxt, pieces = dirs[side]
            d = c.d[side]
            d.base = base if has_base else None
            d.from_start, d.ended, d.next = bool(from_start), bool(ended), nxt
            d.heap = [(off, ser, None if ts == NO_TS else ts, length, data) for off, ser, ts, length, data in pieces]
            d.pending = sum(len(p[4]) for p in d.heap)
            t._pool += d.pending
        if state == UNDECIDED:
            t.on_new(c)
        else:
            c.h = [_Half(), _Half()]
        if kafka is not None:
            cl, sv = c.client, 1 - c.client
            conn = factory(c.id, endpoint_text(family, c.addr[cl], c.port[cl]),
                           endpoint_text(family, c.addr[sv], c.port[sv]), c.first_ts)
            pairing = sink.connection(conn)
            pairing.frames = kafka[0]
            for corr, key_, version, ts, seq, client_id in kafka[1]:
                pairing.push((ts, seq, -1 if client_id is None else sink.client_of(client_id), corr, key_, version))
            c.conn, c.pairing = conn, pairing
        for side in (0, 1):
            (target, items, held, nbytes, scanned, buf, bufbase, ts, synced, skip, unsure, taken, claim_wait,
             flags) = halves[side]
            h = c.h[side]
            h.target = target
            at = 0
            for gap, its, n in items:
                if gap:
                    h.items.append(("gap", n))
                else:
                    h.items.append(("data", None if its == NO_TS else its, held[at:at + n]))
                    at += n
            h.det = bytearray(held[:DETECT_BYTES])
            h.nbytes, h.scanned = nbytes, scanned
            if target == TO_HELD:
                held_total += nbytes
            h.buf, h.pos, h.base = bytearray(buf), 0, bufbase
            h.synced, h.skip, h.unsure, h.taken, h.claim_wait = bool(synced), _SKIP_NAME[skip], bool(unsure), \
                taken, claim_wait
            if kafka is not None:
                h.kh = state_class(c.conn, c.pairing, sink, side == c.client, c.d[side].from_start, max_frame_size)
                h.kh.ts = None if ts == NO_TS else ts
                h.kh.flags = flags
        made.append(c)
    for family, a0, p0, a1, p1 in closed:
        key = (family, a0, p0, a1, p1)
        c = Conn(key, 0, None)
        c.closed = True
        c.h = [_Half(), _Half()]
        t._closed[key] = c
    for i, side in waiting:
        t._waiting[made[i].d[side]] = None
    return held_total
