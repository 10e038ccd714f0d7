"""kafkaproto.log against the object decoder, on partition folders laid out as
a broker writes them (tests/support/kafka_log.py): every record and batch
field, log dirs / topics / partition folders, offset and time seeks through
the index files (and only the files and index pages they need, counted),
read_committed, and damaged segments read as far as they are whole."""

from __future__ import annotations

import datetime as dt
import io
import os
import random
import shutil
import struct

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from kafkaproto import log
from kafkaproto import records as R
from kafkaproto.log import LOG_SCHEMA, LogDamageError
from kafkaproto.log import _read as log_read
from kafkaproto.log import dump as kdump
from kafkaproto.log._index import PAGE
from support.counting_fs import CountingFileSystem
from support.kafka_log import T0, PartitionWriter, simple_partition

US = 1000


def _records_of(folder, topic="orders", partition=0):
    """Every record of a partition folder as the object decoder reads its segment files, with its batch."""
    out = []
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".log"):
            continue
        blob = (folder / name).read_bytes()
        for b in R.decode(blob):
            if b.truncated:
                continue
            for r in b.records:
                if r.control is not None:
                    continue
                seq = -1 if b.base_sequence < 0 else b.base_sequence + (r.offset - b.base_offset)
                out.append({
                    "key": r.key, "value": r.value, "topic": topic, "partition": partition, "offset": r.offset,
                    "timestamp": r.timestamp, "timestampType": r.timestamp_type,
                    "headers": [{"key": k, "value": v} for k, v in r.headers] or None,
                    "producerId": b.producer_id, "producerEpoch": b.producer_epoch, "sequence": seq,
                    "isTransactional": b.is_transactional, "isControl": False, "codec": b.compression,
                    "leaderEpoch": b.partition_leader_epoch, "magic": b.magic, "segment": int(name[:-4]),
                    "position": b.offset, "error": None})
    return out


def _rows(table: pa.Table):
    rows = table.to_pylist()
    for r in rows:
        if r.get("timestamp") is not None:
            r["timestamp"] = int(r["timestamp"].timestamp() * 1000) if isinstance(r["timestamp"], dt.datetime) \
                else r["timestamp"]
    return rows


def _ms(table: pa.Table) -> list:
    return (pa.compute.cast(table.column("timestamp"), pa.int64()).to_numpy() // US).tolist()


@pytest.fixture
def orders(tmp_path):
    return simple_partition(tmp_path, 600)


def test_every_record_and_batch_field_agrees_with_the_object_decoder(orders):
    kl = log.open_log(orders.folder)
    assert len(kl.partitions) == 1 and len(kl.partitions[0].segments) >= 3
    table = kl.read_table()
    assert table.schema == LOG_SCHEMA
    want = _records_of(orders.folder)
    got = table.to_pylist()
    for r in got:
        r["timestamp"] = int(r["timestamp"].timestamp() * 1000)
    assert got == want
    assert {r["codec"] for r in got} == {"none", "gzip", "snappy", "lz4", "zstd"}


def test_columns_are_chosen_and_only_those_built(orders):
    kl = log.open_log(orders.folder)
    t = kl.read_table(["offset", "codec", "position"])
    assert t.schema.names == ["offset", "codec", "position"]
    full = kl.read_table()
    assert t.column("offset").equals(full.column("offset")) and t.column("position").equals(full.column("position"))
    with pytest.raises(ValueError, match="no such column: nope"):
        kl.read(["offset", "nope"])


def test_log_dirs_topics_and_partition_folders(tmp_path):
    root = tmp_path / "data"
    simple_partition(root, 50, topic="a-b.c", partition=0)
    simple_partition(root, 40, topic="a-b.c", partition=12)
    simple_partition(root, 30, topic="other", partition=0)
    deleted = simple_partition(root, 20, topic="gone", partition=0)
    deleted.folder.rename(root / "gone-0.0123456789abcdef0123456789abcdef-delete")
    (root / "meta.properties").write_text("version=1\n")
    (root / "recovery-point-offset-checkpoint").write_text("0\n0\n")
    whole = log.open_log(root)
    assert [(p.topic, p.partition) for p in whole.partitions] == [("a-b.c", 0), ("a-b.c", 12), ("other", 0)]
    assert any(p.kind == "skipped" and p.path.endswith("-delete") for p in whole.problems)
    assert whole.read_table(["topic"]).num_rows == 120
    assert log.open_log(root / "a-b.c").read_table(["partition"]).column("partition").to_pylist() == \
        [0] * 50 + [12] * 40
    assert log.open_log(root, topics=["other"]).read_table(["offset"]).num_rows == 30
    assert log.open_log(root, partitions=[12]).read_table(["offset"]).num_rows == 40
    assert whole.read_table(["offset"], partitions=[0], topics=["a-b.c"]).num_rows == 50
    # a deleted topic, recovered
    back = log.open_log(root, deleted=True, topics=["gone"])
    assert [(p.topic, p.state) for p in back.partitions] == [("gone", "delete")]
    assert back.read_table(["value"]).num_rows == 20
    # several log dirs (a broker's log.dirs)
    other = tmp_path / "data2"
    simple_partition(other, 10, topic="x")
    assert log.open_log([root, other]).read_table(["topic"]).num_rows == 130
    with pytest.raises(FileNotFoundError):
        log.open_log(tmp_path / "nothing-here")
    seg = whole.segments()
    assert seg.num_rows == sum(len(p.segments) for p in whole.partitions)
    assert seg.column("bytes").to_pylist() == [s.size for p in whole.partitions for s in p.segments]


@pytest.mark.parametrize("bounds", [(0, 1), (0, 600), (137, 411), (299, 300), (355, 365), (599, None), (None, 7),
                                    (600, None), (5000, 6000), (10, 10), (400, 300)])
def test_offset_ranges_seek_with_the_index(orders, bounds):
    kl = log.open_log(orders.folder)
    full = kl.read_table(["offset", "value"])
    lo, hi = bounds
    want = [r for r in full.to_pylist() if (lo is None or r["offset"] >= lo) and (hi is None or r["offset"] < hi)]
    reader = kl.read(["offset", "value"], offsets=bounds)
    assert reader.read_all().to_pylist() == want
    assert not reader.problems
    if lo is not None and 0 < lo < 600 and reader.tasks:
        # started where the index says (not at the segment's start) unless the offset is in its first 1 KiB
        first = reader.tasks[0]
        seg = first.segment
        assert seg.base_offset <= lo and (seg.next_offset is None or lo < seg.next_offset)
        assert first.start > 0 or lo - seg.base_offset < 40


@pytest.mark.parametrize("start_ms, end_ms", [(0, 60_000), (200_000, 201_000), (400_000, None), (None, 3_000),
                                              (599_000, None), (700_000, None), (123_456, 123_457)])
def test_time_ranges(orders, start_ms, end_ms):
    kl = log.open_log(orders.folder)
    full = kl.read_table(["offset", "timestamp"])
    stamps = _ms(full)
    t0 = None if start_ms is None else T0 + start_ms
    t1 = None if end_ms is None else T0 + end_ms
    want = [o for o, t in zip(full.column("offset").to_pylist(), stamps)
            if (t0 is None or t >= t0) and (t1 is None or t < t1)]
    got = kl.read_table(["offset"], timestamps=(t0, t1)).column("offset").to_pylist()
    assert got == want
    as_dt = [None if t is None else dt.datetime.fromtimestamp(t / 1000, dt.timezone.utc) for t in (t0, t1)]
    assert kl.read_table(["offset"], timestamps=as_dt).column("offset").to_pylist() == want


def test_time_seek_skips_older_segments_and_starts_inside(orders):
    kl = log.open_log(orders.folder)
    reader = kl.read(["offset"], timestamps=(T0 + 500_000, None))
    segs = kl.partitions[0].segments
    assert reader.tasks[0].segment.base_offset > segs[0].base_offset
    assert reader.tasks[0].start > 0
    # 493 is stamped 3 s early (493 % 17 == 0): out; 510 too, but still inside
    assert reader.read_all().column("offset").to_pylist() == list(range(500, 600))


def test_window_size_does_not_change_what_is_read(tmp_path):
    w = PartitionWriter(tmp_path, segment_bytes=1 << 20, index_interval=512)
    big = b"x" * 20_000
    for i in range(40):
        recs = [(b"k", big if i % 7 == 0 else b"v%d" % i, [], T0 + i)] * (1 + i % 3)
        w.append(recs, codec="zstd" if i % 2 else "none")
    w.close()
    kl = log.open_log(w.folder)
    whole = kl.read_table(["offset", "value", "position"])
    for window in (4096, 5000, 65536):
        assert kl.read_table(["offset", "value", "position"], window=window).equals(whole)


def test_a_preallocated_index_is_read_up_to_its_zeros(tmp_path):
    w = simple_partition(tmp_path, 300, segment_bytes=1 << 20)
    w.close(preallocate=4096)
    kl = log.open_log(w.folder)
    seg = kl.partitions[0].segments[-1]
    idx = log.OffsetIndex(kl.fs, seg.index, seg.index_size, seg.base_offset)
    assert idx.slots > idx.count > 3
    assert kl.read_table(["offset"], offsets=(250, 260)).column("offset").to_pylist() == list(range(250, 260))


# ---------------------------------------------------------------------------
# transactions


def _transactional(root, snapshots=True):
    """Producers 1 and 2 interleaved: committed, aborted, and one transaction left open; plain records between."""
    w = PartitionWriter(root, "tx", 0, segment_bytes=300, index_interval=100, snapshots=snapshots)
    keep, drop = [], []

    def add(pid, tag, txn=True):
        base, last = w.append([(b"k", tag, [], T0 + w.next_offset)], producer_id=pid, producer_epoch=1,
                              transactional=txn)
        return list(range(base, last + 1))

    keep += add(-1, b"plain-0", txn=False)
    a = add(1, b"p1-committed")
    b = add(2, b"p2-aborted")
    a += add(1, b"p1-committed-2")
    w.end_transaction(1, commit=True)
    keep += a
    b += add(2, b"p2-aborted-2")
    w.end_transaction(2, commit=False)
    drop += b
    keep += add(-1, b"plain-1", txn=False)
    c = add(1, b"p1-aborted")
    w.end_transaction(1, commit=False)
    drop += c
    d = add(2, b"p2-committed")
    w.end_transaction(2, commit=True)
    keep += d
    e = add(1, b"p1-open")  # no marker: open when the log was copied
    drop += e
    keep += add(-1, b"plain-2", txn=False)
    w.close()
    return w, sorted(keep), sorted(drop)


def test_read_committed_leaves_out_aborted_and_open_transactions(tmp_path):
    w, keep, drop = _transactional(tmp_path)
    kl = log.open_log(w.folder)
    assert len(kl.partitions[0].segments) >= 3 and any(s.txnindex for s in kl.partitions[0].segments)
    everything = kl.read_table(["offset", "value", "isTransactional"])
    assert everything.column("offset").to_pylist() == sorted(keep + drop)  # markers are not records
    committed = kl.read_table(["offset", "value"], isolation="read_committed")
    assert committed.column("offset").to_pylist() == keep
    assert all(b"aborted" not in v and b"open" not in v for v in committed.column("value").to_pylist())
    # markers as rows
    markers = kl.read_table(["offset", "isControl", "key"], control=True, isolation="read_committed")
    ctl = markers.filter(markers.column("isControl"))
    assert ctl.num_rows == 4 and all(len(k) == 4 for k in ctl.column("key").to_pylist())
    # a seek into the middle agrees
    mid = kl.read_table(["offset"], isolation="read_committed", offsets=(3, 12))
    assert mid.column("offset").to_pylist() == [o for o in keep if 3 <= o < 12]
    txn = kl.transactions(kl.partitions[0])
    assert txn.open == {1: drop[-1]} and txn.snapshot is not None


def test_read_committed_without_txnindex_or_snapshots(tmp_path):
    w, keep, _drop = _transactional(tmp_path, snapshots=False)
    for p in w.folder.iterdir():
        if p.suffix in (".txnindex", ".snapshot"):
            p.unlink()
    kl = log.open_log(w.folder)
    got = kl.read_table(["offset"], isolation="read_committed").column("offset").to_pylist()
    assert got == keep  # the markers say which were aborted; the walk from the start, which is open
    assert kl.transactions(kl.partitions[0]).snapshot is None


def test_a_damaged_snapshot_is_reported_and_an_older_one_used(tmp_path):
    w, keep, _ = _transactional(tmp_path)
    snaps = sorted(w.folder.glob("*.snapshot"))
    newest = snaps[-1]
    data = bytearray(newest.read_bytes())
    data[-1] ^= 0xFF
    newest.write_bytes(bytes(data))
    kl = log.open_log(w.folder)
    assert kl.read_table(["offset"], isolation="read_committed").column("offset").to_pylist() == keep
    (p,) = [p for p in kl.problems if p.kind == "snapshot"]
    assert p.path.endswith(newest.name) and "CRC-32C mismatch" in p.message


# ---------------------------------------------------------------------------
# damage


def _damage_rows(table):
    return table.filter(table.column("error").is_valid()).to_pylist()


def _clean_rows(table):
    return table.filter(table.column("error").is_null())


def _one_segment(tmp_path, n=200, **kw):
    w = simple_partition(tmp_path, n, segment_bytes=1 << 20, **kw)
    kl = log.open_log(w.folder)
    assert len(kl.partitions[0].segments) == 1
    return w, w.segment_file(0)


def test_a_cut_segment_is_read_up_to_the_cut(tmp_path):
    w, seg = _one_segment(tmp_path)
    data = seg.read_bytes()
    pos = [p for base, p, _, _ in w.batches]
    cut = pos[20] + 30
    seg.write_bytes(data[:cut])
    reader = log.open_log(w.folder).read()
    table = reader.read_all()
    good = _clean_rows(table)
    assert good.column("offset").to_pylist() == list(range(100))  # 20 batches of 5
    (row,) = _damage_rows(table)
    assert row["position"] == pos[20] and row["topic"] == "orders" and row["offset"] is None
    assert str(seg) in row["error"] and f"at byte {pos[20]}" in row["error"]
    assert "the file ends inside a batch (30 of its" in row["error"]
    assert [p.kind for p in reader.problems] == ["cut"]


@pytest.mark.parametrize("check_crc", [True, False])
def test_a_bad_batch_is_skipped_and_the_rest_read(tmp_path, check_crc):
    w, seg = _one_segment(tmp_path)
    data = bytearray(seg.read_bytes())
    pos = [p for _, p, _, _ in w.batches]
    data[pos[7] + 70] ^= 0xFF  # inside batch 7's records (uncompressed: codec none for batch 5, 10...)
    seg.write_bytes(bytes(data))
    table = log.open_log(w.folder).read_table(check_crc=check_crc)
    bad = _damage_rows(table)
    got = _clean_rows(table).column("offset").to_pylist()
    if check_crc:
        (row,) = bad
        assert row["position"] == pos[7] and "CRC32C mismatch" in row["error"]
        assert "a bad batch of" in row["error"] and f"at byte {pos[7]}" in row["error"]
        assert got == [o for o in range(200) if not 35 <= o < 40]
    else:  # unchecked, the flipped byte is read as data (or the batch's records fail their own checks)
        assert len(got) + 5 * len(bad) == 200


def test_garbage_after_the_last_batch(tmp_path):
    w, seg = _one_segment(tmp_path)
    clean = seg.read_bytes()
    rng = np.random.default_rng(3)
    for tail, what in ((bytes(4096), "size 0 below the minimum of 14"),
                       (rng.integers(0, 256, 3000, dtype=np.uint8).tobytes(), None)):
        seg.write_bytes(clean + tail)
        table = log.open_log(w.folder).read_table()
        assert _clean_rows(table).column("offset").to_pylist() == list(range(200))
        (row,) = _damage_rows(table)
        assert row["position"] == len(clean)
        assert f"the last {len(tail)} bytes of the file not read" in row["error"] or "file ends inside" in row["error"]
        if what:
            assert what in row["error"]


def test_a_lost_frame_resumes_at_the_next_readable_batch(tmp_path):
    w, seg = _one_segment(tmp_path, n=400)
    data = bytearray(seg.read_bytes())
    pos = [p for _, p, _, _ in w.batches]
    struct.pack_into(">i", data, pos[10] + 8, 3)  # batch 10's size field: below any batch's
    seg.write_bytes(bytes(data))
    kl = log.open_log(w.folder)
    table = kl.read_table(["offset", "position", "error"])
    (row,) = _damage_rows(table)
    # the next byte where a whole batch starts (its CRC matching, its offsets after the last read): batch 11
    assert row["position"] == pos[10] and f"up to byte {pos[11]}" in row["error"]
    assert row["error"].endswith(f"at byte {pos[10]}: {pos[11] - pos[10]} bytes not read, up to byte {pos[11]}: "
                                 "size 3 below the minimum of 14")  # one place named: the region's start
    got = _clean_rows(table).column("offset").to_pylist()
    lost = range(w.batches[10][2], w.batches[11][2])
    assert got == [o for o in range(400) if o not in lost]


def test_an_index_that_disagrees_with_the_log(tmp_path):
    w, seg = _one_segment(tmp_path, n=400)
    index = seg.with_suffix(".index")
    raw = bytearray(index.read_bytes())
    k = len(raw) // 16
    rel, pos = struct.unpack_from(">ii", raw, 8 * k)
    struct.pack_into(">ii", raw, 8 * k, rel, pos + 7)  # points into the middle of a batch
    index.write_bytes(bytes(raw))
    kl = log.open_log(w.folder)
    target = w.segments[0].base + rel + 3
    reader = kl.read(["offset", "error"], offsets=(target, target + 20))
    assert _clean_rows(reader.read_all()).column("offset").to_pylist() == list(range(target, target + 20))
    (p,) = reader.problems
    assert p.kind == "index" and p.position == pos + 7 and f"sends offset {w.segments[0].base + rel}" in p.message
    # an index entry past the file's end
    struct.pack_into(">ii", raw, 8 * k, rel, 10 ** 8)
    index.write_bytes(bytes(raw))
    reader = log.open_log(w.folder).read(["offset", "error"], offsets=(target, target + 5))
    assert _clean_rows(reader.read_all()).column("offset").to_pylist() == list(range(target, target + 5))
    assert [p.kind for p in reader.problems] == ["index"]


def test_damage_can_raise_instead(tmp_path):
    w, seg = _one_segment(tmp_path)
    seg.write_bytes(seg.read_bytes()[:-10])
    with pytest.raises(LogDamageError, match="the file ends inside a batch") as exc:
        log.open_log(w.folder).read_table(damage="raise")
    assert exc.value.problem.kind == "cut"


def test_empty_and_odd_segments(tmp_path):
    w = simple_partition(tmp_path, 30)
    empty = w.folder / f"{10 ** 6:020d}.log"
    empty.write_bytes(b"")
    kl = log.open_log(w.folder)
    assert kl.read_table(["offset"]).num_rows == 30
    copy = tmp_path / "copied"
    shutil.copytree(w.folder, copy)
    kl = log.open_log(copy)  # a folder not named <topic>-<partition>
    assert [p.kind for p in kl.problems] == ["name"] and kl.partitions[0].topic == "copied"


# ---------------------------------------------------------------------------
# what a seek reads, counted


def test_a_seek_reads_only_the_segments_and_index_pages_it_needs(tmp_path):
    w = simple_partition(tmp_path, 6000, segment_bytes=48 << 10, per_batch=5)
    counting = CountingFileSystem()
    fs = pafs.PyFileSystem(counting)
    kl = log.open_log(str(w.folder), filesystem=fs)
    segs = kl.partitions[0].segments
    assert len(segs) >= 5
    target = segs[2].base_offset + 700
    got = kl.read_table(["offset", "value"], offsets=(target, target + 10))
    assert got.column("offset").to_pylist() == list(range(target, target + 10))
    opened = {os.path.basename(p) for p in counting.opened}
    stem = f"{segs[2].base_offset:020d}"
    assert opened == {stem + ".log", stem + ".index"}
    log_read = sum(n for p, _, n in counting.reads if p.endswith(".log"))
    index_pages = {at // PAGE for p, at, _ in counting.reads if p.endswith(".index")}
    # from the index entry before the offset to the one after the last: a few KiB, not the 256 KiB segment
    assert log_read < 8 * 1024
    assert len(index_pages) <= 2
    # a time seek: the time indexes of the segments before (their last entries), then one .log range
    counting.reads.clear()
    counting.opened.clear()
    t = T0 + 1000 * (segs[3].base_offset + 50)
    kl.read_table(["offset"], timestamps=(t, t + 1000))
    logs_opened = sorted({os.path.basename(p) for p in counting.opened if p.endswith(".log")})
    assert f"{segs[3].base_offset:020d}.log" in logs_opened
    assert all(name >= f"{segs[3].base_offset:020d}.log" for name in logs_opened)
    first_read = min(at for p, at, _ in counting.reads if p.endswith(f"{segs[3].base_offset:020d}.log"))
    assert first_read > 0  # started inside the segment


def _read_split(kl, split_bytes, **kw):
    opts = log.ReadOptions.make(["offset", "position", "error"], **kw)
    tasks, txns = kl.plan(opts, split_bytes=split_bytes)
    reader = log.LogReader(kl, tasks, opts, txns)
    return tasks, reader.read_all(), reader.problems


def test_byte_ranges_split_at_index_entries_cover_every_batch_once(tmp_path):
    w = simple_partition(tmp_path, 2000, segment_bytes=40 << 10)
    kl = log.open_log(w.folder)
    whole = kl.read_table(["offset", "position", "error"])
    tasks, got, problems = _read_split(kl, 4096)
    assert len(tasks) > 2 * len(kl.partitions[0].segments) and not problems
    assert got.equals(whole)
    assert all(t.split == (t.start > 0) for t in tasks)
    # with a seek: the first range starts at the index entry, the others split after it
    tasks, got, _ = _read_split(kl, 4096, offsets=(777, 1500))
    assert got.column("offset").to_pylist() == list(range(777, 1500))
    # an index entry at a split point that lands inside a batch: the range after it walks the segment
    # from its start, leaves out what the range before reads, and says so
    seg = kl.partitions[0].segments[1]
    split_points = [t.start for t in _read_split(kl, 4096)[0] if t.segment == seg and t.split]
    raw = bytearray(open(seg.index, "rb").read())
    k = next(i for i in range(len(raw) // 8) if struct.unpack_from(">ii", raw, 8 * i)[1] == split_points[0])
    rel, pos = struct.unpack_from(">ii", raw, 8 * k)
    struct.pack_into(">ii", raw, 8 * k, rel, pos + 9)
    open(seg.index, "wb").write(bytes(raw))
    kl = log.open_log(w.folder)
    tasks, got, problems = _read_split(kl, 4096)
    assert [p.kind for p in problems] == ["index"] and problems[0].position == pos + 9
    assert _clean_rows(got).column("offset").to_pylist() == list(range(2000))


# ---------------------------------------------------------------------------
# indexes and sizes that lie: a lie is a problem row and a scan, never fewer rows


def _segment_of(tmp_path, n=3000):
    w = simple_partition(tmp_path, n, segment_bytes=64 << 20, per_batch=10, codecs=("none", "lz4"))
    kl = log.open_log(w.folder)
    assert len(kl.partitions[0].segments) == 1
    return w, kl


def test_a_huge_batch_length_mid_segment_resumes_at_the_next_readable_batch(tmp_path):
    w, _ = _segment_of(tmp_path)
    seg = w.segment_file(0)
    data = bytearray(seg.read_bytes())
    k = len(w.batches) // 2
    _, at, base, raw = w.batches[k]
    struct.pack_into(">i", data, at + 8, 0x7FFFFFF0)
    seg.write_bytes(bytes(data))
    for offsets in (None, (0, 3000), (base - 100, base + 100)):
        table = log.open_log(w.folder).read_table(["offset", "position", "error"], offsets=offsets)
        (row,) = _damage_rows(table)
        assert row["position"] == at and f"up to byte {at + len(raw)}" in row["error"]
        assert "batch size 2147483632 runs past the file's end" in row["error"]
        lo, hi = offsets or (0, 3000)
        assert _clean_rows(table).column("offset").to_pylist() == [o for o in range(lo, hi)
                                                                   if not base <= o < base + 10]
    status, out, _ = _dump([seg], deep_iteration=True)
    assert status == 1 and out.count("| offset: ") == 2990 and "Found" not in out


def _shuffle_index(w, seed=1):
    index = w.segment_file(0).with_suffix(".index")
    raw = index.read_bytes()
    entries = [raw[i:i + 8] for i in range(0, len(raw), 8)]
    random.Random(seed).shuffle(entries)
    index.write_bytes(b"".join(entries))


@pytest.mark.parametrize("split", [None, 4096])
def test_a_shuffled_index_gives_every_row_and_says_so(tmp_path, split):
    w, kl = _segment_of(tmp_path)
    _shuffle_index(w)
    kl = log.open_log(w.folder)
    opts = log.ReadOptions.make(["offset", "error"], offsets=(1000, 2500))
    tasks, _ = kl.plan(opts, split_bytes=split)
    tables = [t for task in tasks for t in log_read.read_task(kl.fs, task, opts.names, opts.bounds, window=opts.window)]
    table = pa.concat_tables(tables)
    got = _clean_rows(table).column("offset").to_pylist()
    # its entries are true pairs out of order: every seek is checked against the log, none loses a row
    assert sorted(got) == list(range(1000, 2500)) and len(got) == 1500
    assert all("the index" in r["error"] for r in _damage_rows(table))


def test_an_index_entry_that_sends_the_stop_too_early_is_a_row_and_a_scan(tmp_path):
    w, kl = _segment_of(tmp_path)
    index = w.segment_file(0).with_suffix(".index")
    raw = bytearray(index.read_bytes())
    n = len(raw) // 8
    for k in range(n // 2, n):  # the second half of the entries all point at the first batch
        rel, _pos = struct.unpack_from(">ii", raw, 8 * k)
        struct.pack_into(">ii", raw, 8 * k, rel, 0)
    index.write_bytes(bytes(raw))
    table = log.open_log(w.folder).read_table(["offset", "error"], offsets=(1000, 2500))
    assert sorted(_clean_rows(table).column("offset").to_pylist()) == list(range(1000, 2500))
    (row,) = _damage_rows(table)
    assert "the offsets from 2500 on begin at this byte" in row["error"]


def test_a_time_index_entry_past_the_end_of_the_active_segment(tmp_path):
    w, kl = _segment_of(tmp_path)
    tindex = w.segment_file(0).with_suffix(".timeindex")
    raw = bytearray(tindex.read_bytes())
    struct.pack_into(">qi", raw, 0, T0 - 10**6, 10**6)  # an old timestamp, an offset past the end
    tindex.write_bytes(bytes(raw))
    t = T0 + 1000 * 10
    table = log.open_log(w.folder).read_table(["offset", "timestamp", "error"], timestamps=(t, None))
    want = [r[0] for r in _expected_rows(w) if r[1] >= t]
    assert sorted(_clean_rows(table).column("offset").to_pylist()) == sorted(want)
    (row,) = _damage_rows(table)
    assert "time index says offset" in row["error"]


def _dump(paths, **kw):
    out, err = io.StringIO(), io.StringIO()
    return kdump.dump([str(p) for p in paths], out, err, **kw), out.getvalue(), err.getvalue()


def _expected_rows(w):
    return [(r.offset, r.timestamp) for _, _, _, raw in w.batches for b in R.decode(raw) for r in b.records]


def test_damaged_regions_cost_what_they_cover(tmp_path):
    """Each damaged region is passed once: the resynchronisation scans bytes after it, never the
    index from its start (the work per region does not grow with the regions before it)."""
    w, _ = _segment_of(tmp_path, n=8000)
    seg = w.segment_file(0)
    data = bytearray(seg.read_bytes())
    for _, at, _, _ in w.batches[1::2]:
        struct.pack_into(">i", data, at + 8, 3)  # every other batch's size: unreadable
    seg.write_bytes(bytes(data))
    from kafkaproto.log import _segwalk

    calls = []
    real = _segwalk._TEXT.find_batch

    def counting(buf, base, start, stop, size, after, magic):
        got = real(buf, base, start, stop, size, after, magic)
        calls.append((got[1] if got[0] == 0 else stop) - start)
        return got

    _segwalk._TEXT = type("T", (), {"find_batch": staticmethod(counting), "TextWalk": _segwalk._TEXT.TextWalk})
    try:
        table = log.open_log(w.folder).read_table(["offset", "error"])
    finally:
        _segwalk._TEXT = __import__("kafkaproto._impl", fromlist=["load"]).load("log._text")
    assert len(_damage_rows(table)) == len(w.batches) // 2
    assert _clean_rows(table).num_rows == 4000
    # a search or two a region (a window's end), each over the bytes after it: never more than the file
    assert len(w.batches) // 2 <= len(calls) <= len(w.batches) and sum(calls) <= len(data)


@pytest.mark.parametrize("name", ["99999999999999999999.log", "t-99999999999"])
def test_names_past_the_int_ranges_are_skipped_and_said(tmp_path, name):
    w = simple_partition(tmp_path, 50, segment_bytes=1 << 20)
    if name.endswith(".log"):
        (w.folder / name).write_bytes(w.segment_file(0).read_bytes())
    else:
        (tmp_path / name).mkdir()
        (tmp_path / name / "00000000000000000000.log").write_bytes(w.segment_file(0).read_bytes())
    kl = log.open_log(tmp_path)
    assert kl.read_table(["offset"]).num_rows == 50
    assert kl.segments().num_rows == 1
    assert any(p.kind == "skipped" and name in p.path and "range" in p.message for p in kl.problems)


_NO_PANDAS = r'''
import sys
from kafkaproto import log
kl = log.open_log(sys.argv[1])
kl.segments()
kl.read_table()
kl.read_table(["offset", "value"], offsets=(10, 60), isolation="read_committed")
kl.read_table(["offset", "error"], timestamps=(1700000010000, None))
for _ in kl.scan(kl.partitions[0].segments[0]):
    pass
import io
from kafkaproto.log import dump
dump.dump([sys.argv[1]], io.StringIO(), io.StringIO(), fmt="json", print_data_log=True)
dump.dump_parquet([sys.argv[1]], sys.argv[2] + "/records.parquet")
dump.dump_parquet([sys.argv[1]], sys.argv[2] + "/batches.parquet", batches=True)
log.open_log(sys.argv[2]).read_table(decoder="offsets")
'''


def test_reading_a_log_never_imports_pandas(tmp_path):
    """pyarrow imports pandas on the first pa.array() or to_numpy() it is given, or a tz-aware timestamp's
    to_pylist(), when pandas is installed; the reader builds its columns from buffers and reads them
    through them, so a process that reads a log (records, the internal topics' tables, dump-log's JSON
    and Parquet) loads no pandas."""
    import random

    from support.cli import no_pandas_lookup, run_watching_pandas
    from support.internal_logs import coordinator_records, write_log

    w = simple_partition(tmp_path, 300, segment_bytes=4 << 10)
    write_log(tmp_path, "__consumer_offsets", coordinator_records("group", random.Random(3)))
    p = run_watching_pandas(_NO_PANDAS, [w.folder, tmp_path])
    assert no_pandas_lookup(p), (p.stdout + p.stderr)[-4000:]


def test_a_log_dirs_read_leaves_kafkas_own_topics_out_unless_named(tmp_path):
    import random

    from support.internal_logs import coordinator_records, write_log

    write_log(tmp_path, "__consumer_offsets", coordinator_records("group", random.Random(3)))
    simple_partition(tmp_path, 50, segment_bytes=1 << 20)
    kl = log.open_log(tmp_path)
    assert set(kl.read_table(["topic"]).column("topic").to_pylist()) == {"orders"}
    assert {p.topic for p in kl.partitions} == {"orders", "__consumer_offsets"}  # still there, listed
    named = log.open_log(tmp_path, topics=["__consumer_offsets"]).read_table(["topic"])
    assert set(named.column("topic").to_pylist()) == {"__consumer_offsets"}
    assert kl.read_table(["topic"], topics=["__consumer_offsets", "orders"]).num_rows == named.num_rows + 50
    # a path that names the partition folder reads it
    assert log.open_log(tmp_path / "__consumer_offsets-0").read_table(["offset"]).num_rows == named.num_rows
    typed = kl.read_table(decoder="offsets")
    assert typed.num_rows == named.num_rows and typed.column("error").null_count < typed.num_rows
    assert set(typed.column("topic").to_pylist()) == {"__consumer_offsets"}
