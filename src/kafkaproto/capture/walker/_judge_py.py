"""The pure-Python twin of kafkaproto.capture.walker._judge: where a frame
could start (detection and resynchronization), judged by its header and by
decoding it, and whether a frame a direction in step is not sure of is one."""

from __future__ import annotations

import re
import struct

__all__ = ["COMPILED", "BodyCheck", "find_frame_start", "judge_frame"]

COMPILED = False

#: what walking a candidate frame's body says (BodyCheck.walk)
WALK_BAD, WALK_READ, WALK_CUT, WALK_UNKNOWN, WALK_EXACT, WALK_CUT_BYTES = 0, 1, 2, 3, 4, 5

_h16 = struct.Struct(">h")
_i32 = struct.Struct(">i")
_req_head = struct.Struct(">ihhih")


def _plausible(buf, p: int, n: int, is_request: bool, max_frame_size: int, versions: bytes, outstanding) -> int:
    """See the compiled module: 1, 0, or -1 (too few bytes to say)."""
    if is_request:
        if n - p < 8:
            return -1
        if buf[p] > 6 or buf[p + 4] != 0 or buf[p + 6] != 0:
            return 0
        if n - p < 14:
            return -1
        size, key, ver, _corr, clen = _req_head.unpack_from(buf, p)
        if size < 10 or (max_frame_size >= 0 and size > max_frame_size) or \
                not versions[2 * key] <= ver <= versions[2 * key + 1] or clen < -1 or 10 + max(clen, 0) > size:
            return 0
        if clen > 0:
            # the client id printable, as far as it is here
            if any(c < 0x20 or c == 0x7F for c in buf[p + 14:min(n, p + 14 + clen)]):
                return 0
            if n - p < 14 + clen:
                return -1
        return 1
    if n - p < 1:
        return -1
    if buf[p] > 6:
        return 0
    if n - p < 8:
        return -1
    size = _i32.unpack_from(buf, p)[0]
    if size < 4 or (max_frame_size >= 0 and size > max_frame_size):
        return 0
    return 1 if _i32.unpack_from(buf, p + 4)[0] in outstanding else 0


class BodyCheck:
    """See the compiled module: a candidate frame judged by decoding it (whole
    up to ``limit`` bytes, else its first ``limit`` bytes and the next header)."""

    __slots__ = ("plan_of", "hq", "hr", "limit", "_plans")

    def __init__(self, plan_of, request_headers, response_headers, limit: int = 512) -> None:
        self.plan_of = plan_of
        self.hq, self.hr = request_headers, response_headers
        self.limit = limit
        self._plans: dict = {}

    def _known(self, is_request: bool, key: int, version: int) -> bool:
        got = self._plans.get((is_request, key, version))
        if got is None:
            got = self._plans[(is_request, key, version)] = self.plan_of(is_request, key, version) is not None
        return got

    def walk(self, buf, p: int, stop: int, end: int, is_request: bool, pairing, field: list | None = None) -> int:
        """See the compiled module: a WALK_* verdict (WALK_CUT_BYTES: where the
        bytes or records field the end cut starts is appended to ``field``)."""
        from ...errors import InvalidValueError, KafkaProtocolError, TruncatedError
        from ...headers import decode_request_header, decode_response_header
        from ...messages import request_class, response_class

        if is_request:
            key, version = _h16.unpack_from(buf, p + 4)[0], _h16.unpack_from(buf, p + 6)[0]
            if not (0 <= key < self.hq.shape[0] and 0 <= version < 64) or self.hq[key, version] < 0:
                return WALK_UNKNOWN
            hv = int(self.hq[key, version])
        else:
            got = None if pairing is None else pairing.request_of(_i32.unpack_from(buf, p + 4)[0])
            if got is None:
                return WALK_UNKNOWN
            key, version = got
            if not (0 <= key < self.hr.shape[0] and 0 <= version < 64) or self.hr[key, version] < 0:
                return WALK_UNKNOWN
            hv = int(self.hr[key, version])
        if not self._known(is_request, key, version):
            return WALK_UNKNOWN
        view = memoryview(buf)[p + 4:stop]
        try:
            # the header, then the body by its program (no fallback of any kind: the walk the compiled judge does)
            if is_request:
                _header, at = decode_request_header(view, hv)
                _msg, at = request_class(key).decode(view, version, at, with_end=True)
            else:
                _header, at = decode_response_header(view, hv)
                _msg, at = response_class(key).decode(view, version, at, with_end=True)
        except (TruncatedError, InvalidValueError) as exc:
            # only the end of the look cut it: what it needed lies inside the frame
            m = _NEED.match(exc.detail) or _COUNT.match(exc.detail)
            if not (stop < end and m and int(m.group(1)) - int(m.group(2)) <= end - stop):
                return WALK_BAD
            if isinstance(exc, TruncatedError) and exc.what in _BYTES:
                if field is not None:
                    field.append(p + 4 + exc.offset)
                return WALK_CUT_BYTES
            return WALK_CUT
        except KafkaProtocolError:
            return WALK_BAD
        return WALK_EXACT if at == len(view) else WALK_READ


_NEED = re.compile(r"need (\d+) bytes, (\d+) left$")
_BYTES = ("bytes", "compact bytes")
_COUNT = re.compile(r"count (\d+) larger than the (\d+) bytes left$")


def _after_zeros(buf, p: int) -> int:
    """See the compiled module: past a run of zero bytes, less its last 3."""
    if buf[p:p + 4] == _ZEROS[:4]:
        return max(p + 1, _zeros_end(buf, p) - 3)
    return p + 1


def _stands(buf, q: int, n: int, is_request: bool, max_frame_size: int, versions: bytes, outstanding, check,
            pairing, cache: dict) -> tuple[int, int]:
    """See the compiled module: ``(verdict, wait)`` -- does a frame stand on
    its own at ``q``?"""
    got = cache.get(q)
    if got is not None:
        return got
    r = _plausible(buf, q, n, is_request, max_frame_size, versions, outstanding)
    if r < 0:
        return -1, n + 1  # its header is not all here (not kept: the next byte may tell)
    wait = 0
    if r == 1:
        size = _i32.unpack_from(buf, q)[0]
        end = q + 4 + size
        limit = check.limit
        if size <= limit:
            if n < end:
                r, wait = -1, end
            else:
                r = 1 if check.walk(buf, q, end, end, is_request, pairing) == WALK_EXACT else 0
        elif n < q + 4 + limit:
            return -1, n + 1
        elif check.walk(buf, q, q + 4 + limit, end, is_request, pairing) != WALK_CUT_BYTES:
            r = 0  # larger frames are large for the records or bytes they carry
        elif n < end:
            r, wait = -1, end
        else:
            r = 1 if check.walk(buf, q, end, end, is_request, pairing) == WALK_EXACT else 0
    cache[q] = r, wait
    return r, wait


def _judge_at(buf, p: int, n: int, is_request: bool, max_frame_size: int, versions: bytes, outstanding, check,
              pairing, in_step: bool, cap: int, cache: dict) -> tuple[int, int]:
    """See the compiled module: ``(verdict, wait)``."""
    size = _i32.unpack_from(buf, p)[0]
    end = p + 4 + size
    limit = check.limit
    look = p + 4 + min(size, limit)
    if not in_step and size > limit and n > end:
        # a larger one taken whole is followed by another plausible header (the cheapest test first)
        r = _plausible(buf, end, n, is_request, max_frame_size, versions, outstanding)
        if r == 0:
            return 0, 0
        if r < 0:
            return -1, n + 1
    # its body, as far as it is here: what rejects most candidates, and where
    # a records or bytes field starts (the frames behind it are its data)
    field: list = []
    r = check.walk(buf, p, look if n >= look else n, end, is_request, pairing, field) if n >= p + 8 else WALK_UNKNOWN
    if not in_step:
        # (a walk cut by the end of the bytes here may yet read; one that fails otherwise never will)
        if r in (WALK_READ, WALK_EXACT) and size > limit:
            return 0, 0  # its body ends inside the first ``limit`` bytes: it claims more than it holds
        if r in (WALK_BAD, WALK_UNKNOWN):
            return 0, 0
        if size > limit and r == WALK_CUT and n >= p + cap:
            return 0, 0  # not large for the records or bytes it carries, and not whole after ``cap`` bytes
    blob = field[0] if r == WALK_CUT_BYTES else end
    # the frames behind its start that end inside its claim
    pend = -1
    pattern = _REQUEST_START if is_request else _RESPONSE_START
    stop = min(look, n, blob)
    q = p + 1
    while q < stop:
        if q + 8 > n:  # a header's first 8 bytes (a response's correlation id among them) are not here
            pend = q + 8 if pend < 0 else min(pend, q + 8)
            break
        # the next position before ``lim`` (its first 8 bytes here) that passes the first filter
        lim = min(stop, n - 7)
        m = pattern.search(buf, q, lim + 6 if is_request else lim)
        if m is None:
            q = lim
            continue
        q = m.start()
        if q + 4 + _i32.unpack_from(buf, q)[0] > end:
            q += 1  # it runs past the claim: the claim does not hide it
            continue
        r, qw = _stands(buf, q, n, is_request, max_frame_size, versions, outstanding, check, pairing, cache)
        if r == 1:
            return 0, 0  # a frame that stands on its own hides behind its claim
        if r < 0:
            pend = qw if pend < 0 else min(pend, qw)
            q += 1
        else:
            q = _after_zeros(buf, q)
    if n < look:
        return -1, n + 1  # the bytes it is judged on are not all here
    if not in_step and size > limit and n <= end and blob == end:
        # not large for the records or bytes it carries: taken once whole and followed
        # by a plausible header (or the end), none past ``cap`` bytes held for it
        if n >= p + cap:
            return 0, 0
        return -1, (min(end + 1, p + cap) if pend < 0 else min(pend, end + 1, p + cap))
    if n >= end:
        return 1, 0
    if pend >= 0 and n < p + cap:
        # a larger one incomplete: held until the frames behind its start are whole, up to ``cap`` bytes
        return -1, min(pend, end, p + cap)
    return 1, 0


# -- resynchronization ------------------------------------------------------


def find_frame_start(buf, pos: int, is_request: bool, max_frame_size: int, versions: bytes,
                     outstanding: dict, check: BodyCheck | None = None, pairing=None,
                     cap: int = 8 << 20) -> tuple[int, bool | None]:
    """See the compiled module: the same positions and verdicts."""
    p, verdict, _wait = find_start(buf, pos, is_request, max_frame_size, versions, outstanding, check, pairing, cap)
    return p, verdict


def find_start(buf, pos: int, is_request: bool, max_frame_size: int, versions: bytes, outstanding: dict,
               check: BodyCheck | None = None, pairing=None, cap: int = 8 << 20) -> tuple[int, bool | None, int]:
    """:func:`find_frame_start` and, with a verdict None, how many bytes
    ``buf`` must hold before it is worth asking again (the walker's; the
    compiled module's is a C function)."""
    if len(versions) != 512:
        raise ValueError("versions must be 512 bytes")
    n = len(buf)
    if n == 0 or pos >= n:
        return -1, None, 0
    pattern = _REQUEST_START if is_request else _RESPONSE_START
    cache: dict = {}
    p = pos
    while p < n:
        m = pattern.search(buf, p)
        if m is None:
            return -1, None, 0
        p = m.start()
        if is_request and p + 8 > n:
            return -1, None, 0
        r = _plausible(buf, p, n, is_request, max_frame_size, versions, outstanding)
        wait = 0
        if r == 1 and check is not None:
            r, wait = _judge_at(buf, p, n, is_request, max_frame_size, versions, outstanding, check, pairing, False,
                                cap, cache)
        elif r < 0:
            wait = n + 1
        if r != 0:
            return p, (True if r == 1 else None), (wait if r < 0 else 0)
        p = _after_zeros(buf, p)
    return -1, None, 0


def judge_frame(buf, pos: int, max_frame_size: int, versions: bytes, check: BodyCheck,
                cap: int = 8 << 20) -> tuple[bool | None, int]:
    """See the compiled module: ``(verdict, wait)``."""
    if len(versions) != 512:
        raise ValueError("versions must be 512 bytes")
    if len(buf) - pos < 4:
        return None, pos + 4
    r, wait = _judge_at(buf, pos, len(buf), True, max_frame_size, versions, _NO_REQUESTS, check, None, True, cap, {})
    return (None, wait) if r < 0 else (bool(r), 0)


_NO_REQUESTS: dict = {}

# A request's size prefix is below 0x07000000 (Kafka's limits are far lower)
# and its api key and version are below 256; a response's size prefix too:
# cheap first filters, run by the regular expression engine.
_REQUEST_START = re.compile(rb"[\x00-\x06]...\x00.\x00", re.S)
_RESPONSE_START = re.compile(rb"[\x00-\x06]", re.S)
_ZEROS = bytes(4096)


def _zeros_end(buf, p: int) -> int:
    """The first position at or after ``p`` whose byte is not zero (or the end),
    in steps of 4 kB compared at once."""
    n = len(buf)
    while p + 4096 <= n and buf[p:p + 4096] == _ZEROS:
        p += 4096
    chunk = bytes(buf[p:p + 4096])
    return p + len(chunk) - len(chunk.lstrip(b"\0"))
