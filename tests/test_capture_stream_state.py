"""The walker's whole state saved and loaded (Walker.save / Walker.load).

A capture read in one go and the same capture read in pieces -- the walker
saved after each piece and a fresh walker loading it before the next, as a
streaming read does between micro-batches -- give the same frames, pairing,
unanswered requests and accounting, on every repository capture and the
twins' synthetic and hostile ones (reordering, holes, reused 4-tuples,
detection, resynchronization, the walker's bounds).  The compiled walker
and its twin write the same bytes for the same state, and each loads the
other's.
"""

from __future__ import annotations

import random
import zlib

import pytest

import kafkaproto.capture.walker._judge_py as _judge_twin
import kafkaproto.capture.walker._scan_py as _scan_twin
import kafkaproto.capture.walker._sink_py as _sink_twin
from kafkaproto.capture import Accounting
from kafkaproto.capture.formats.pcap import CaptureFile
from kafkaproto.capture.frames import take_batch
from kafkaproto.capture.walker import snapshot, streams
from kafkaproto.capture.walker.snapshot import WalkerStateError
from twins.test_capture import bounded, conversation, hostile, repository_captures, synthetic, write

COMPILED = streams._scan.COMPILED


def packets(path):
    with open(path, "rb") as fh:
        cap = CaptureFile(fh)
        return [(ts, lt, data) for ts, lt, data, _orig in cap]


class Twin:
    """walker() over the twins' units (the rest of the process as it is)."""

    def __init__(self, monkeypatch):
        self.m = monkeypatch

    def __enter__(self):
        self.ctx = self.m.context()
        m = self.ctx.__enter__()
        m.setattr(streams, "_scan", _scan_twin)
        m.setattr(streams, "_judge", _judge_twin)
        m.setattr(streams, "_sink", _sink_twin)
        m.setattr(streams, "_CHECKS", [])
        return self

    def __exit__(self, *exc):
        return self.ctx.__exit__(*exc)


def _rows(fb, out, unanswered):
    for f in fb.frames():
        c = f.conn
        req = f.request
        out.append((f.ts, c.uid, c.client, c.server, f.direction, f.seq, f.offset, bytes(f.frame), f.api_key,
                    f.api_version, f.correlation_id, f.request_ts, f.status, f.client_id, f.flags,
                    None if req is None else req.seq))
    for conn, corr, key, version, ts, seq, client in fb.unanswered:
        unanswered.append((conn.uid, corr, key, version, ts, seq,
                           fb.clients[client] if client >= 0 else None))


def run(pk, cuts=(), ports=None, limits=None, states=None, load_with=None):
    """The frames, unanswered requests and accounting of packets ``pk`` read by one walker, or in
    pieces at ``cuts`` (each piece by a fresh walker loading the last's
    state; ``states`` gets the states' bytes; ``load_with``: a context that
    makes the walkers that load them)."""
    acc = Accounting()
    rows, unanswered = [], []
    bounds = [0, *cuts, len(pk)]
    state = None
    for k in range(len(bounds) - 1):
        ctx = load_with if (load_with is not None and k > 0) else _Nothing()
        with ctx:
            w = streams.walker(ports, acc, **(limits or {}))
            if state is not None:
                w.load(state)
            for ts, lt, data in pk[bounds[k]:bounds[k + 1]]:
                w.packet(ts, lt, data)
            if k == len(bounds) - 2:
                w.finish()
            else:
                w.flush()
            _rows(take_batch(w.sink), rows, unanswered)
            if k < len(bounds) - 2:
                state = w.save()
                if states is not None:
                    states.append(state)
    return rows, unanswered, acc.to_dict()


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _cuts(n, rng, k=6):
    return sorted(rng.sample(range(1, n), min(k, n - 1))) if n > 1 else []


def jobs(tmp_path):
    out = [(p, None, None) for p in repository_captures() + synthetic(tmp_path)]
    out += [(p, [9092], None) for p in repository_captures()[:2]]
    out += [(p, ports, limits) for p, ports, _dissect, limits in bounded(tmp_path)]
    return out


def test_a_capture_read_in_pieces_is_read_as_one(tmp_path):
    rng = random.Random(5)
    for path, ports, limits in jobs(tmp_path):
        pk = packets(path)
        whole = run(pk, ports=ports, limits=limits)
        cuts = _cuts(len(pk), rng)
        assert run(pk, cuts, ports, limits) == whole, f"{path.name}: read in pieces at {cuts}"
        # a state after every packet of a small capture
        if len(pk) < 120:
            assert run(pk, range(1, len(pk)), ports, limits) == whole, f"{path.name}: a state per packet"


@pytest.mark.compiled_only
def test_the_compiled_walker_and_its_twin_save_the_same_bytes_and_load_each_others(tmp_path, monkeypatch):
    rng = random.Random(7)
    files = repository_captures() + synthetic(tmp_path) + hostile(tmp_path)[:6]
    for path in files:
        pk = packets(path)
        cuts = _cuts(len(pk), rng, 4)
        compiled_states, twin_states = [], []
        whole = run(pk)
        assert run(pk, cuts, states=compiled_states) == whole
        with Twin(monkeypatch):
            assert run(pk, cuts, states=twin_states) == whole, path.name
        assert compiled_states == twin_states, f"{path.name}: the twin saved other bytes"
        # the compiled walker's state loaded by the twin, and the other way round
        assert run(pk, cuts, load_with=Twin(monkeypatch)) == whole, path.name
        with Twin(monkeypatch):
            assert run(pk, cuts, load_with=_Compiled(monkeypatch)) == whole, path.name


class _Compiled:
    def __init__(self, monkeypatch):
        self.m = monkeypatch

    def __enter__(self):
        self.ctx = self.m.context()
        m = self.ctx.__enter__()
        import kafkaproto.capture.walker._judge as j
        import kafkaproto.capture.walker._scan as s
        import kafkaproto.capture.walker._sink as k

        m.setattr(streams, "_scan", s)
        m.setattr(streams, "_judge", j)
        m.setattr(streams, "_sink", k)
        m.setattr(streams, "_CHECKS", [])
        return self

    def __exit__(self, *exc):
        return self.ctx.__exit__(*exc)


def _state_of(tmp_path, **limits):
    pk = packets(write(tmp_path / "s.pcap", conversation(close=False)))
    w = streams.walker(None, Accounting(), **limits)
    for ts, lt, data in pk[:9]:
        w.packet(ts, lt, data)
    return w.save()


def test_a_state_is_checked_before_it_is_loaded(tmp_path):
    state = _state_of(tmp_path)
    assert state[:4] == b"KPWS"
    # another walker's limits
    with pytest.raises(WalkerStateError, match="limits"):
        streams.walker(None, Accounting(), max_pending_bytes=1000).load(state)
    with pytest.raises(WalkerStateError, match="limits"):
        streams.walker([9092], Accounting()).load(state)
    # damage anywhere, a cut, another version, no state at all
    for bad in (state[:-1], state[:20], state[:6] + b"\0\0\0\0" + state[10:], b"", b"PK\3\4" + state[4:],
                state[:4] + b"\0\x09" + state[6:]):
        with pytest.raises(WalkerStateError) as err:
            streams.walker(None, Accounting()).load(bad)
        assert "walker state" in str(err.value)
    # a state whose CRC matches but whose values run past the end, or nest without end
    for body in (b"\x04\x05", b"\x04\x02\x04\xff\xff\xff\xff\x0f", b"\x04" * 40 + b"\x00"):
        forged = snapshot._HEAD.pack(snapshot.MAGIC, snapshot.VERSION, zlib.crc32(body)) + body
        with pytest.raises(WalkerStateError):
            streams.walker(None, Accounting()).load(forged)
    # a walker that took a packet already
    w = streams.walker(None, Accounting())
    pk = packets(tmp_path / "s.pcap")
    w.packet(*pk[0])
    with pytest.raises(ValueError, match="before it takes its first packet"):
        w.load(state)


def test_a_state_is_bounded_by_the_walkers_limits(tmp_path):
    """Holes and held bytes count against max_pending_total, so the state does too."""
    small = 20_000
    for path, ports, limits in [(p, pt, lim) for p, pt, _d, lim in bounded(tmp_path)]:
        if limits.get("max_pending_total") != small:
            continue
        pk = packets(path)
        biggest = 0
        w = streams.walker(ports, Accounting(), **limits)
        for i, (ts, lt, data) in enumerate(pk):
            w.packet(ts, lt, data)
            if i % 5 == 0:
                biggest = max(biggest, len(w.save()))
                take_batch(w.sink)
        assert 0 < biggest < small + 16 * 1024
