"""The compiled dump-log line writer (log._text) and its pure twin give the same
bytes: v2 batches of every codec, legacy message sets, control batches,
keys and values that are not UTF-8, each printing option."""

import random

import numpy as np
import pytest

from kafkaproto import log
from kafkaproto.log import dump as kdump
from kafkaproto.log._scan import WALK_COLUMNS, Scan
from support.kafka_log import T0, PartitionWriter
from support.twins import compiled_impl, pure_impl

pytestmark = pytest.mark.compiled_only

C, P = compiled_impl(), pure_impl()


def _windows(tmp_path):
    rng = random.Random(4)
    w = PartitionWriter(tmp_path, "twins", 0, segment_bytes=1 << 20)
    for k in range(150):
        recs = [(None if rng.random() < 0.2 else bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 9))),
                 None if rng.random() < 0.1 else (b"\xff\xfe bad utf-8 " if i % 4 == 0 else "é ok ".encode()) * i,
                 [(f"h{j}", b"x") for j in range(i % 3)], T0 + k * 10 + i) for i in range(1 + k % 5)]
        magic = 2 if k % 6 else (k // 6) % 2
        if magic < 2:
            recs = [(key, value, [], ts) for key, value, _h, ts in recs]
        w.append(recs, codec=("none", "gzip", "lz4")[k % 3], magic=magic,
                 producer_id=-1 if magic < 2 else 4, producer_epoch=0, transactional=magic == 2 and k % 7 == 1,
                 timestamp_type=k % 2 if magic else 0)
        if magic == 2 and k % 7 == 1:
            w.end_transaction(4, commit=k % 2 == 0)
    w.close()
    kl = log.open_log(w.folder)
    seg = kl.partitions[0].segments[0]
    return kl, seg, list(Scan(kl.fs, seg, columns=WALK_COLUMNS, control=True, window=4096))


@pytest.mark.parametrize("flags", [dict(print_data_log=True), dict(deep_iteration=True), dict(),
                                   dict(print_data_log=True, skip_record_metadata=True)])
def test_dump_lines_twins(tmp_path, flags, monkeypatch):
    kl, seg, windows = _windows(tmp_path)
    assert len(windows) > 3 and any((w.batches.column("magic").to_numpy() < 2).any() for w in windows)
    opts = kdump.DumpOptions(**flags)
    for win in windows:
        counts = win.batches.column("records").to_numpy()
        crcs = None
        if opts.deep:
            import pyarrow as pa

            with pa.memory_map(seg.path) as f:
                crcs = kdump._legacy_window_crcs(win, f, counts, np.repeat(np.arange(len(counts)), counts))
        out = {}
        for name, impl in (("c", C), ("p", P)):
            monkeypatch.setattr(kdump, "_TEXT", impl.module("log._text"))
            out[name] = kdump._text_lines(win, kdump.batch_lines(win.batches), opts, crcs)
        assert out["c"] == out["p"]
        assert out["c"].count(b"\n") >= win.batches.num_rows + (win.records.num_rows if opts.deep else 0)
        if opts.print_data_log:
            assert "\ufffd".encode() in out["c"] or not any(b"\xff\xfe" in (v or b"")
                                                            for v in win.records.column("value").to_pylist())
