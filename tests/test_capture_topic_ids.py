"""The topic ids a connection's Metadata responses named, as the capture
decoder keeps them (columns, one row per connection and id): the first
response that named an id on a connection names it for the frames after
it on that connection only."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from kafkaproto.capture.accounting import Accounting
from kafkaproto.capture.tables import CaptureDecoder, _ConnIds

A, B = bytes(range(16)), bytes(range(16, 32))


def _add(ids: _ConnIds, rows) -> None:
    u, s, t, n = zip(*rows)
    ids.add(np.array(u, dtype=np.int64), np.array(s, dtype=np.int64), pa.array(t, pa.binary(16)),
            pa.array(n, pa.string()))


def _names(ids: _ConnIds, rows) -> list:
    u, s, t = zip(*rows)
    return ids.names(np.array(u, dtype=np.int64), np.array(s, dtype=np.int64), pa.array(t, pa.binary(16))).to_pylist()


def test_first_response_names_later_frames_of_its_connection():
    ids = _ConnIds()
    assert _names(ids, [(1, 9, A)]) == [None]
    _add(ids, [(1, 5, A, "a"), (1, 7, A, "renamed"), (2, 3, B, "b"), (1, 5, B, "b1")])
    _add(ids, [(1, 2, A, "late"), (3, 8, A, "a3")])  # a pair already held keeps its first
    assert _names(ids, [(1, 6, A), (1, 5, A), (1, 4, A), (2, 4, B), (2, 3, B), (2, 9, A), (1, 6, B), (3, 9, A)]) == \
        ["a", None, None, "b", None, None, "b1", "a3"]
    assert ids.to_dict() == {1: {A: (5, "a"), B: (5, "b1")}, 2: {B: (3, "b")}, 3: {A: (8, "a3")}}


def test_subset_keep_and_saved_form():
    ids = _ConnIds()
    _add(ids, [(1, 5, A, "a"), (2, 3, B, "b"), (3, 1, A, "c")])
    sub = ids.subset(np.array([2, 3], dtype=np.int64))
    assert _names(sub, [(1, 9, A), (2, 9, B), (3, 9, A)]) == [None, "b", "c"]
    back = _ConnIds.from_dict(ids.to_dict())
    assert back.to_dict() == ids.to_dict()
    ids.keep({3})
    assert ids.to_dict() == {3: {A: (1, "c")}}
    ids.keep(set())
    assert ids.to_dict() == {} and _names(ids, [(3, 9, A)]) == [None]


def test_decoder_state_round_trip():
    dec = CaptureDecoder("c", Accounting())
    dec.conn_ids = {7: {A: (4, "t")}, 8: {B: (2, "u")}}
    assert dec.conn_ids == {7: {A: (4, "t")}, 8: {B: (2, "u")}}
    dec.keep_connections({8})
    assert dec.conn_ids == {8: {B: (2, "u")}}
