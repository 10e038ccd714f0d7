"""The pure-Python twin of kafkaproto.capture.walker._resume: a walker's
connections as plain values and back (what ``Walker.save()`` and
``Walker.load()`` write with walker/snapshot.py), the same values as the
compiled module's.

The state is ``[serial, next_id, open, closed, waiting]``:

- ``open``: the open connections, oldest first, each ``[head, [direction 0,
  direction 1], [half 0, half 1], kafka]``, ``head`` packed (``_CONN``:
  family, the two ends, id, first ts, FINs, client end, state);
- a direction (reassembly): ``[head (_DIR: has base, base, from start,
  ended, next), pieces]``, the segments waiting behind a hole as ``[offset,
  serial, ts, length, bytes]`` in the order they are taken;
- a half (the walker's side of a direction): ``[head (_HALF: target, bytes
  held, scanned, the stream offset of the bytes not framed, ts, synced,
  skip, unsure, taken, claim wait, frame flags), held items (_ITEM each:
  gap, ts, n), held bytes, bytes not framed]``;
- ``kafka``: None, or ``[frames, waiting requests]`` of a Kafka connection,
  a request ``[correlation id, api key, api version, ts, seq, client id]``;
- ``closed``: the closed connections remembered, oldest first, by their
  4-tuple, as bytes (``_CLOSED`` each); ``waiting``: the directions with
  bytes behind a hole, oldest first, as ``[connection's index in open, side]``.

Numbers are packed big-endian.

Times are nanoseconds, ``NO_TS`` for none.
"""

from __future__ import annotations

import importlib
import struct

from ._framing_py import DETECT_BYTES, _Half
from ._tcp_py import Conn

__all__ = ["COMPILED", "load_tcp", "save_tcp"]

COMPILED = False
NO_TS = -(1 << 63)
TO_HELD, TO_KAFKA = 0, 1
UNDECIDED, KAFKA = 0, 1
_SKIP = {"gap": 0, "not_kafka": 1}
_SKIP_NAME = ("gap", "not_kafka")
#: a closed connection remembered: family, address 0 (16 bytes, IPv4 in the first 4), port 0, address 1, port 1
_CLOSED = struct.Struct(">B16sH16sH")
#: a connection: family, its ends as _CLOSED, id, first ts, FINs, client end, state
_CONN = struct.Struct(">B16sH16sHqqBbB")
#: a direction's reassembly: has base, base, from start, ended, next
_DIR = struct.Struct(">BIBBq")
#: a half: target, bytes held, scanned, the stream offset of the bytes not framed, ts, synced, skip, unsure,
#: taken, claim wait, frame flags
_HALF = struct.Struct(">BqqqqBBBqqB")
#: a held item: gap, ts, n
_ITEM = struct.Struct(">Bqq")


def _ts(t) -> int:
    return NO_TS if t is None else t


def _dir(d) -> list:
    pieces = sorted(d.heap)
    return [_DIR.pack(d.base is not None, d.base or 0, d.from_start, d.ended, d.next),
            [[off, serial, _ts(ts), length, data] for off, serial, ts, length, data in pieces]]


def _half(h) -> list:
    items, held = [], []
    for item in h.items:
        if item[0] == "gap":
            items.append(_ITEM.pack(1, NO_TS, item[1]))
        else:
            items.append(_ITEM.pack(0, _ts(item[1]), len(item[2])))
            held.append(item[2])
    kh = h.kh
    return [_HALF.pack(h.target, h.nbytes, h.scanned, h.base + h.pos, _ts(kh.ts) if kh is not None else NO_TS,
                       h.synced, _SKIP[h.skip], h.unsure, h.taken, h.claim_wait, kh.flags if kh is not None else 0),
            b"".join(items), b"".join(held), bytes(h.buf[h.pos:])]


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
        k = c.key
        conns.append([_CONN.pack(k[0], k[1], k[2], k[3], k[4], c.id, _ts(c.first_ts), c.fins, c.client, c.state),
                      [_dir(c.d[0]), _dir(c.d[1])], [_half(c.h[0]), _half(c.h[1])], kafka])
    closed = b"".join(_CLOSED.pack(k[0], k[1], k[2], k[3], k[4]) for k in t._closed)
    waiting = [[index[d.conn], d.side] for d in t._waiting]
    return [t._serial, t._next_id, conns, closed, waiting]


def load_tcp(t, st: list, sink, factory, max_frame_size: int) -> int:
    """Walker ``t`` (fresh: no connection yet) takes the state ``st``: its
    Kafka connections get their objects from ``factory`` and ``sink`` again.
    The bytes held for detection (the walker's count of them)."""
    from .packets import endpoint_text

    state_class = importlib.import_module(type(sink).__module__).KafkaState
    serial, next_id, conns, closed, waiting = st
    t._serial, t._next_id = serial, next_id
    made = []
    held_total = 0
    for head, dirs, halves, kafka in conns:
        family, a0, p0, a1, p1, cid, first_ts, fins, client, state = _CONN.unpack(head)
        alen = 4 if family == 4 else 16
        key = (family, a0[:alen], p0, a1[:alen], p1)
        c = Conn(key, cid, None if first_ts == NO_TS else first_ts)
        t._open[key] = c
        c.fins, c.client, c.state = fins, client, state
        for side in (0, 1):
            has_base, base, from_start, ended, nxt = _DIR.unpack(dirs[side][0])
            d = c.d[side]
            d.base = base if has_base else None
            d.from_start, d.ended, d.next = bool(from_start), bool(ended), nxt
            d.heap = [(off, ser, None if ts == NO_TS else ts, length, data)
                      for off, ser, ts, length, data in dirs[side][1]]
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
            head, items, held, buf = halves[side]
            (target, nbytes, scanned, bufbase, ts, synced, skip, unsure, taken, claim_wait,
             flags) = _HALF.unpack(head)
            h = c.h[side]
            h.target = target
            at = 0
            for gap, its, n in _ITEM.iter_unpack(items):
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
    for at in range(0, len(closed) - len(closed) % _CLOSED.size, _CLOSED.size):
        family, a0, p0, a1, p1 = _CLOSED.unpack_from(closed, at)
        alen = 4 if family == 4 else 16
        key = (family, a0[:alen], p0, a1[:alen], p1)
        c = Conn(key, 0, None)
        c.closed = True
        c.h = [_Half(), _Half()]
        t._closed[key] = c
    for i, side in waiting:
        t._waiting[made[i].d[side]] = None
    return held_total
