"""The walk over one segment's bytes and its damage rules, shared by the Arrow
reader (``_scan``) and ``dump-log``'s text (``dump``).  Nothing here imports
numpy or pyarrow.

A *walk* is handed to :class:`SegmentWalk`: a function that takes the batches
of a buffer that start in a byte range and says where and why it stopped
(the compiled text walker, or the records walker behind the Arrow reader).
The rules:

- a window that ends inside a batch: the next call starts at that batch,
  with a buffer large enough for it;
- a batch whose size and header are plausible but whose content is not
  (CRC, codec, records), a size below the minimum, an unknown magic, a size
  that runs past the file's end, zeros, garbage: the walk resumes at the
  next byte where a whole batch starts whose checksum matches and whose
  offsets come after the last ones read (``find_batch``), and the bytes in
  between are one damaged region (``batch``: exactly one bad batch;
  ``unreadable``: anything else);
- nothing readable after a batch that the file's end cuts: ``cut``;
- an index entry that a read starts at, stops at, or is sent to by the time
  index, that the log does not bear out: ``index``, and the segment is
  walked from its start (or past the stop) instead.

Each damaged region is one :class:`LogProblem`, in file order among the
walk's own items.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._impl import load

_TEXT = load("log._text")

__all__ = ["DEFAULT_WINDOW", "LogProblem", "SegmentWalk"]

DEFAULT_WINDOW = 8 << 20

# why a walk stopped (the compiled walker's S_*)
STOP_END, STOP_TRUNC, STOP_BAD, STOP_FRAMING = 0, 1, 2, 3


@dataclass(frozen=True)
class LogProblem:
    """Something in a log that could not be read as it should: where, and why.

    ``kind``: ``"batch"`` (one bad batch, skipped), ``"unreadable"`` (bytes
    up to ``end`` -- the next readable batch, or the file's end -- not
    read), ``"cut"`` (the file ends inside a batch), ``"index"`` (an index
    entry that disagrees with the log), ``"txnindex"`` / ``"snapshot"`` (a
    damaged transaction index or producer snapshot), ``"skipped"``,
    ``"name"`` (what was left out, and why).
    """

    kind: str
    path: str
    position: int | None
    end: int | None
    message: str
    topic: str | None = None
    partition: int | None = None
    segment: int | None = None

    def __str__(self) -> str:
        where = self.path if self.position is None else f"{self.path} at byte {self.position}"
        return f"{where}: {self.message}"


def describe(exc) -> str:
    """What a walker's error says, without its byte offset (a problem names its own place):
    the field path, if any, and the reason."""
    path = getattr(exc, "path", None)
    detail = getattr(exc, "detail", None) or str(exc)
    if path:
        return ("." + ".".join(path)).replace(".[", "[") + ": " + detail
    return detail


class SegmentWalk:
    """The items of one segment's walk, in file order: what ``walk`` makes of the whole
    batches (each call's first element, when not None) and :class:`LogProblem` items.

    ``read(pos, n)``: a buffer of the file's bytes ``[pos, pos + n)`` (fewer at its end);
    ``walk(buf, base, start, stop, emit_from)``: the batches of ``buf`` (the file's bytes from
    ``base``) that start in ``[start, stop)`` → ``(made, end, status, need, batches,
    first_base, first_last, last_base, last_last, magic, last_max_ts, error)``; batches
    before ``emit_from`` are walked but left out of ``made``.

    ``start`` / ``stop``: the byte range (batches that start in it).  ``check_offset``:
    ``start`` came from an index entry for this offset: the batch there must hold it
    (else the segment is walked from its start; with ``split``, the batches before
    ``start`` left out: another range reads them).  ``stop_check``: ``stop`` came
    from the index as where the offsets from this one on begin: the batch there must
    start at or above it (else the walk goes on past ``stop``).  ``time_check``:
    ``(offset, timestamp)`` from a time index entry: the batch holding the offset must
    end at it with that largest timestamp (else the segment is walked from its start).
    ``stop_offset``: no window after one holding a batch that starts at or above it.
    ``whole_file``: ``read`` gives the whole file at once (no windows).
    ``tail_quiet``: a batch cut by ``size`` is not damage (``--max-bytes``).  ``probe``: a walk
    that reads one batch for the checks (``walk`` by default).
    """

    def __init__(self, path: str, size: int, read, walk, *, base_offset: int = 0, topic=None, partition=None,
                 start: int = 0, stop: int | None = None, check_offset: int | None = None,
                 stop_check: int | None = None, time_check=None, split: bool = False,
                 stop_offset: int | None = None, window: int = DEFAULT_WINDOW, whole_file: bool = False,
                 tail_quiet: bool = False, probe=None):
        self.path, self.size, self.read, self.walk = path, size, read, walk
        self.probe = walk if probe is None else probe
        self.base_offset, self.topic, self.partition = base_offset, topic, partition
        self.start = start
        self.stop = size if stop is None else min(stop, size)
        self.check_offset, self.stop_check, self.time_check = check_offset, stop_check, time_check
        self.split, self.stop_offset = split, stop_offset
        self.window = max(int(window), 4096)
        self.whole_file, self.tail_quiet = whole_file, tail_quiet
        self._buf = None   # (base, buffer) of the last read
        self.bytes_read = 0

    def problem(self, kind, position, end, message) -> LogProblem:
        return LogProblem(kind, self.path, position, end, message, self.topic, self.partition, self.base_offset)

    # -- reading

    def _buffer(self, pos: int, need: int = 0):
        """A buffer holding the file from ``pos`` (a window, or at least ``need`` bytes) → (base, buf)."""
        if self.whole_file:
            if self._buf is None:
                self._buf = (0, self.read(0, self.size))
                self.bytes_read += self.size
            return self._buf
        got = self._buf
        if got is not None:
            base, buf = got
            if base <= pos and pos + max(need, 61) <= base + len(buf) and (pos + need <= base + len(buf)):
                return got
        n = max(min(self.window, self.stop - pos), need, 61)
        buf = self.read(pos, n)
        self.bytes_read += len(buf)
        self._buf = (pos, buf)
        return self._buf

    def _step(self, pos: int, stop: int, need: int = 0, emit_from: int = 0, walk=None):
        base, buf = self._buffer(pos, need)
        if not self.whole_file:
            # a window's walk stops at its end: the next window starts at the batch it cuts
            stop = min(stop, base + len(buf))
        elif stop - pos > self.window:
            stop = pos + self.window  # made in pieces (the text of a large file is not held at once)
        return (walk or self.walk)(buf, base, pos, stop, emit_from)

    def _one(self, pos: int):
        """The whole batch at ``pos``, walked alone → the step (its batches 0 when there is none)."""
        step = self._step(pos, pos + 1, 0, self.size, self.probe)
        if step[2] == STOP_TRUNC and pos + step[3] <= self.size:
            step = self._step(pos, pos + 1, step[3], self.size, self.probe)
        return step

    def _find(self, start: int, after: int, magic: int) -> int | None:
        """The next position at or after ``start`` (before the range's stop) where a readable batch starts."""
        pos = start
        while pos < self.stop:
            if self.whole_file:
                base, buf = self._buffer(pos)
            else:
                base, buf = self._buffer(pos, min(self.window, self.size - pos))
            status, at = _TEXT.find_batch(buf, base, pos, self.stop, self.size, after, magic)
            if status == 0:
                return at
            if status == 2:
                if self.whole_file:
                    pos = at + 1
                    continue
                size = int.from_bytes(bytes(self._window_bytes(at, 12)[8:12]), "big", signed=True)
                base, buf = self._buffer(at, 12 + max(size, 49))
                status, got = _TEXT.find_batch(buf, base, at, at + 1, self.size, after, magic)
                if status == 0:
                    return got
                pos = at + 1
                continue
            if at <= pos:
                break
            pos = at
        return None

    def _window_bytes(self, pos: int, n: int):
        base, buf = self._buffer(pos, n)
        return memoryview(buf)[pos - base:pos - base + n]

    # -- the walk

    def __iter__(self):
        size, stop = self.size, self.stop
        pos = self.start
        check = self.check_offset if self.start > 0 else None
        emit_from = 0
        damage = None        # (start, what is wrong, kind, extent of a bad batch) of the region being passed
        last_offset = self.base_offset - 1
        magic = 2
        read_any = False     # a whole batch was read (its magic is the one to look for after damage)
        need = 0
        stop_check = self.stop_check
        if check is not None and pos >= size:
            yield self.problem("index", self.start, None,
                               f"the index sends offset {check} to this byte, past the file's end ({size} bytes): "
                               "the segment is read from its start instead")
            pos, emit_from, check = 0, (self.start if self.split else 0), None
        if self.time_check is not None:
            pos, emit_from, problem = self._check_time(pos, emit_from)
            if problem is not None:
                yield problem
                check = None
        while True:
            if pos >= stop:
                if stop_check is not None and stop < size:
                    problem = self._check_stop(pos, stop_check)
                    stop_check = None
                    if problem is not None:
                        yield problem
                        stop = self.stop = size
                        continue
                break
            step = self._step(pos, stop, need, emit_from)
            need = 0
            made, end, status, want, nb, first_base, first_last, last_base, last_last, last_magic = step[:10]
            error = step[11]
            if check is not None and nb == 0 and status == STOP_TRUNC and end + want <= size:
                pos, need = end, want  # the window's end cut the batch the index names: read it whole
                continue
            if check is not None:
                why = None
                if nb == 0:
                    why = f"where no whole batch starts ({describe(error) if error else 'the file ends inside it'})"
                elif first_base > check:
                    why = f"where a batch of offsets {first_base}-{first_last} starts"
                check = None
                if why is not None:
                    yield self.problem("index", self.start, None,
                                       f"the index sends offset {self.check_offset} to this byte, {why}: the "
                                       "segment is read from its start instead")
                    pos, emit_from = 0, (self.start if self.split else 0)
                    continue
            if nb:
                if damage is not None:
                    problem = self._region(damage, pos, emit_from)
                    if problem is not None:
                        yield problem
                    damage = None
                if made is not None:
                    yield made
                last_offset, magic, read_any = last_last, last_magic, True
                if self.stop_offset is not None and last_base >= self.stop_offset:
                    return
            if status == STOP_END:
                if end <= pos:
                    break  # nothing more in the file
                pos = end
                continue
            if status == STOP_TRUNC and end + want <= size:
                pos, need = end, want  # the window's end cut the batch: read it whole
                continue
            if status == STOP_TRUNC and self.tail_quiet:
                return
            # damage at ``end``
            there = size - end
            if damage is None:
                if status == STOP_TRUNC:
                    what = f"{there} of its {want} bytes are there" if there >= 12 else f"{there} bytes are there"
                    damage = (end, f"the file ends inside a batch ({what})", "cut", want)
                else:
                    damage = (end, describe(error), "batch" if status == STOP_BAD else "unreadable",
                              want if status == STOP_BAD else None)
            elif damage[2] == "batch":
                damage = (damage[0], damage[1], "unreadable", None)
            if not read_any and there > 16:
                # nothing read yet: look for batches of the kind the damaged one claims to be
                claimed = self._window_bytes(end, 17)[16] if there > 16 else 2
                magic = claimed if claimed in (0, 1, 2) else 2
            found = self._find(end + 1, last_offset, magic)
            if found is None:
                problem = self._region(damage, None if stop >= size else stop, emit_from)
                if problem is not None:
                    yield problem
                return
            start, err, kind, extent = damage
            if kind == "cut":
                # not the file's end: a size that runs past it
                err = f"batch size {extent - 12} runs past the file's end ({there - 12} bytes after its size field)"
                kind = "unreadable"
            elif kind == "batch" and found != start + extent:
                kind = "unreadable"
            damage = (start, err, kind, extent)
            pos = found

    def _check_stop(self, pos: int, hi: int) -> LogProblem | None:
        """The range stops where the index says offset ``hi`` begins: the batch there must start at
        or above it."""
        step = self._one(pos)
        if step[4] and step[5] >= hi:
            return None
        what = (f"a batch of offsets {step[5]}-{step[6]} starts" if step[4] else "no whole batch starts")
        return self.problem("index", pos, None,
                            f"the index says the offsets from {hi} on begin at this byte, where {what}: the "
                            "segment is read on past it")

    def _check_time(self, pos: int, emit_from: int):
        """The time index entry (offset, timestamp) behind the start: the batch holding the offset
        must end at it with that largest timestamp → (start, emit_from, problem or None)."""
        offset, ts = self.time_check
        at, walked = pos, 0
        while at < self.size:
            walked += 1
            if walked > 10_000:  # not near where the offset index sends it: the time index is not believed
                why, step = "it is not near where the offset index sends it", (0,) * 12
                break
            step = self._one(at)
            if not step[4]:
                break
            if step[8] >= offset:
                if step[8] == offset and step[10] == ts:
                    return pos, emit_from, None
                why = f"the batch holding it ends at offset {step[8]} with largest timestamp {step[10]}"
                break
            at = step[1]
        else:
            why = "no batch of the segment holds it"
        if at < self.size and not step[4] and walked <= 10_000:
            why = "no batch of the segment holds it (the walk to it met damage)"
        problem = self.problem("index", None, None,
                               f"the time index says offset {offset} has the largest timestamp so far, {ts}, but "
                               f"{why}: the segment is read from its start instead")
        return 0, (self.start if self.split else 0), problem

    def _region(self, damage, end: int | None, emit_from: int = 0) -> LogProblem | None:
        """The problem for a damaged region from ``damage`` up to ``end`` (None: the file's end)."""
        start, err, kind, _extent = damage
        if start < emit_from:
            return None  # before the range: whoever reads that range reports it
        if kind == "cut" and end is None:
            return self.problem("cut", start, None, err)
        if end is None:
            left = self.size - start
            return self.problem("unreadable", start, None, f"the last {left} bytes of the file not read: {err}")
        if kind == "batch":
            return self.problem("batch", start, end, f"a bad batch of {end - start} bytes skipped: {err}")
        return self.problem("unreadable", start, end, f"{end - start} bytes not read, up to byte {end}: {err}")
