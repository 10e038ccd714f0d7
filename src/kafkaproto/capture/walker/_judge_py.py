"""The pure-Python twin of kafkaproto.capture.walker._judge: where a frame
could start (detection and resynchronization), judged by its header and by
decoding it."""

from __future__ import annotations

import re
import struct

__all__ = ["COMPILED", "BodyCheck", "find_frame_start"]

COMPILED = False

_h16 = struct.Struct(">h")
_h32 = struct.Struct(">i")



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
            if n - p < 14 + clen:
                return -1
            if any(c < 0x20 or c == 0x7F for c in buf[p + 14:p + 14 + clen]):
                return 0
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

    __slots__ = ("plan_of", "hq", "hr", "limit")

    def __init__(self, plan_of, request_headers, response_headers, limit: int = 512) -> None:
        self.plan_of = plan_of
        self.hq, self.hr = request_headers, response_headers
        self.limit = limit

    def judge(self, buf, p: int, n: int, is_request: bool, pairing, max_frame_size: int, versions: bytes,
              outstanding) -> int:
        from ...errors import InvalidValueError, KafkaProtocolError, TruncatedError
        from ...protocol import decode_request, decode_response

        size = _i32.unpack_from(buf, p)[0]
        end = p + 4 + size
        if n < end:
            return -1
        if size > self.limit and n > end:
            r = _plausible(buf, end, n, is_request, max_frame_size, versions, outstanding)
            if r != 1:
                return r
        stop = end if size <= self.limit else p + 4 + self.limit
        view = memoryview(buf)[p + 4:stop]
        if is_request:
            key, version = _h16.unpack_from(buf, p + 4)[0], _h16.unpack_from(buf, p + 6)[0]
            if not (0 <= key < self.hq.shape[0] and 0 <= version < 64) or self.hq[key, version] < 0:
                return 0
        else:
            got = None if pairing is None else pairing.request_of(_i32.unpack_from(buf, p + 4)[0])
            if got is None:
                return 0
            key, version = got
            if not (0 <= key < self.hr.shape[0] and 0 <= version < 64) or self.hr[key, version] < 0:
                return 0
        if self.plan_of(is_request, key, version) is None:
            return 0
        try:
            if is_request:
                decode_request(view)
            else:
                decode_response(view, key, version)
        except (TruncatedError, InvalidValueError) as exc:
            # only the end of the look cut it: what it needed lies inside the frame
            m = _NEED.match(exc.detail) or _COUNT.match(exc.detail)
            return 1 if stop < end and m and int(m.group(1)) - int(m.group(2)) <= end - stop else 0
        except KafkaProtocolError:
            return 0
        return 1


_NEED = re.compile(r"need (\d+) bytes, (\d+) left$")
_COUNT = re.compile(r"count (\d+) larger than the (\d+) bytes left$")


# -- resynchronization ------------------------------------------------------
_req_head = struct.Struct(">ihhih")
_i32 = struct.Struct(">i")


def find_frame_start(buf, pos: int, is_request: bool, max_frame_size: int, versions: bytes,
                     outstanding: dict, check: BodyCheck | None = None, pairing=None) -> tuple[int, bool | None]:
    """See the compiled module: the same positions and verdicts."""
    if len(versions) != 512:
        raise ValueError("versions must be 512 bytes")
    n = len(buf)
    p = pos
    if n == 0 or p >= n:
        return -1, None
    pattern = _REQUEST_START if is_request else _RESPONSE_START
    while p < n:
        m = pattern.search(buf, p)
        if m is None:
            return -1, None
        p = m.start()
        r = _plausible(buf, p, n, is_request, max_frame_size, versions, outstanding)
        if r < 0:
            return p, None
        if r == 1 and check is not None:
            r = check.judge(buf, p, n, is_request, pairing, max_frame_size, versions, outstanding)
            if r < 0:
                return p, None
        if r == 1:
            return p, True
        if buf[p:p + 4] == _ZEROS[:4]:
            p = max(p + 1, _zeros_end(buf, p) - 3)
            continue
        p += 1
    return -1, None


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
