"""Caps per call, not only per batch (issue 22, row 1).

Every batch of a blob may sit within the per-batch caps while the blob holds
any number of them: 20 batches of 1 M empty records are 13 KB of zstd.  The
per-call caps (``max_records_per_call``, ``max_headers_per_call``,
``max_decompressed_per_call``) count across every batch of one
``records.decode`` (all it yields), ``consume`` and ``arrow.records`` call
(every row of its column), so that a call's peak memory is bounded by a
multiple of its caps whatever the number of batches (docs/errors.md, "Caps on
what a batch may expand to").  Every case runs in both implementations (``IMPLS``).
"""

import os
import random
import subprocess
import sys
import textwrap
import tracemalloc

import pyarrow as pa
import pytest

from kafkaproto import RecordLimitError, arrow, records
from kafkaproto.consumer import consume
from support.fuzz_targets import IMPLS
from support.legacy_sets import inner_set, message, wrapper
from support.records_util import many_headers, many_records

LIMIT = records.DEFAULT_MAX_DECOMPRESSED_SIZE
#: the stated multiple (docs/errors.md): a call's peak memory, besides its input, is at
#: most this many bytes per record and per header of its caps, and twice its
#: decompressed bytes
PER_RECORD, PER_HEADER = 256, 160
SLACK = 1 << 20


def bound(max_records, max_headers, max_decompressed):
    return PER_RECORD * max_records + PER_HEADER * max_headers + 2 * max_decompressed + SLACK


def decode(impl, blob, mr=None, mh=None, md=None, **kw):
    """Every record of every batch, held (what consume does), with per-call caps."""
    caps = [records.DEFAULT_MAX_RECORDS_PER_BATCH, records.DEFAULT_MAX_HEADERS_PER_RECORD,
            records.DEFAULT_MAX_HEADERS_PER_BATCH] + [records.DEFAULT_MAX_RECORDS_PER_CALL if mr is None else mr,
                                                      records.DEFAULT_MAX_HEADERS_PER_CALL if mh is None else mh,
                                                      records.DEFAULT_MAX_DECOMPRESSED_PER_CALL if md is None else md]
    return [r for b in impl.records.decode_record_batches(blob, True, kw.get("limit", LIMIT), True, *caps)
            for r in b.records]


def arrow_rows(impl, blobs, **caps):
    arr = pa.array(blobs, pa.large_binary())
    status, _, errors, _ = impl.arrow_records.arrow_records(arr, 1, True, LIMIT, [True] * 7, False, **caps)
    return list(status), errors


def measure(fn):
    tracemalloc.start()
    try:
        try:
            result = ("ok", fn())
        except RecordLimitError as exc:
            result = ("err", exc)
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# ---------------------------------------------------------------------------
# the three caps, across batches, in every decoder


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_records_are_counted_across_the_batches_of_a_call(codec):
    batch = many_records(10, codec)
    blob = batch * 5  # 50 records, 10 a batch: each batch within every per-batch cap
    at = 3 * len(batch) + 57  # the fourth batch's record count
    text = f"record batch at byte {at}: 10 records bring this call to 40, above max_records_per_call=35"
    for impl in IMPLS:
        assert len(decode(impl, blob, mr=50)) == 50, impl.name
        with pytest.raises(RecordLimitError) as e:
            decode(impl, blob, mr=35)
        assert str(e.value) == text, impl.name
        assert (e.value.limit, e.value.value, e.value.count, e.value.offset) == ("max_records_per_call", 35, 40, at)
        assert arrow_rows(impl, [blob], max_records_per_call=35) == ([1], {0: text})
    with pytest.raises(RecordLimitError, match="above max_records_per_call=35"):
        consume(blob, isolation_level=0, max_records_per_call=35)
    assert len(consume(blob, isolation_level=0, max_records_per_call=None)) == 50
    assert arrow.records([blob], max_records_per_call=35).column("error").to_pylist() == [text]


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_headers_are_counted_across_the_batches_of_a_call(codec):
    batch = many_headers(3, codec, 4)  # 4 records of 3 headers a batch
    blob = batch * 3
    for impl in IMPLS:
        assert sum(len(r.headers) for r in decode(impl, blob, mh=36)) == 36, impl.name
        with pytest.raises(RecordLimitError) as e:
            decode(impl, blob, mh=30)
        # 24 in the first two batches, 3 each in records 0 and 1 of the third: record 2 passes
        exc = e.value
        assert (exc.limit, exc.value, exc.count) == ("max_headers_per_call", 30, 33), impl.name
        assert exc.path == ["records[2]", "header count"]
        assert "33 headers in this call up to records[2] of this batch, above max_headers_per_call=30" in str(exc)
        assert exc.offset >= 2 * len(batch)  # in the third batch
        assert arrow_rows(impl, [blob], max_headers_per_call=30) == ([1], {0: str(exc)})
        # the batch cap still names itself when it is the one passed
        with pytest.raises(RecordLimitError, match="max_headers_per_batch=11"):
            list(impl.records.decode_record_batches(blob, True, LIMIT, True, 100, 100, 11, 100, 100, LIMIT))


@pytest.mark.parametrize("codec", ["gzip", "zstd", "lz4", "snappy"])
def test_decompressed_bytes_are_counted_across_the_batches_of_a_call(codec):
    batch = records.encode([(None, bytes(100_000), None, 0)], codec=codec)
    blob = batch * 4
    for impl in IMPLS:
        assert len(decode(impl, blob, md=400_100)) == 4, impl.name
        with pytest.raises(RecordLimitError) as e:
            decode(impl, blob, md=350_000)
        exc = e.value
        assert (exc.limit, exc.value, exc.count) == ("max_decompressed_per_call", 350_000, 350_001), impl.name
        assert exc.offset == 3 * len(batch) + 61  # the fourth batch's records
        assert "above the" in str(exc) and "left of max_decompressed_per_call=350000" in str(exc)
        # a batch over its own cap is still named by it
        with pytest.raises(RecordLimitError) as e:
            decode(impl, blob, md=10_000_000, limit=50_000)
        assert e.value.limit == "max_decompressed_size" and "above the limit of 50000 bytes" in str(e.value)


def test_legacy_messages_count_against_the_call():
    rng = random.Random(5)
    compressed = wrapper(9, 1, 1, inner_set(1, 10, rng))  # 10 inner messages
    plain = message(20, 1)
    blob = compressed + plain + compressed
    for impl in IMPLS:
        assert len(decode(impl, blob, mr=21)) == 21, impl.name
        with pytest.raises(RecordLimitError) as e:
            decode(impl, blob, mr=15)
        assert (e.value.limit, e.value.value) == ("max_records_per_call", 15)
        assert str(e.value) == (f"message at byte {len(compressed) + len(plain)}: more inner messages than the 4 "
                                "records left of max_records_per_call=15")
        with pytest.raises(RecordLimitError, match="1 records bring this call to 11, above max_records_per_call=10"):
            decode(impl, blob, mr=10)


def test_a_call_at_its_caps_decodes_and_none_lifts_them():
    blob = many_headers(2, "zstd", 5) * 4  # 20 records, 40 headers
    for impl in IMPLS:
        got = decode(impl, blob, mr=20, mh=40)
        assert len(got) == 20 and sum(len(r.headers) for r in got) == 40, impl.name
        got = list(impl.records.decode_record_batches(blob, True, LIMIT, True, None, None, None, None, None, None))
        assert [len(b.records) for b in got] == [5] * 4
    for bad, exc in ((-1, ValueError), ("9", TypeError), (True, TypeError), (1.5, TypeError)):
        for name in ("max_records_per_call", "max_headers_per_call", "max_decompressed_per_call"):
            with pytest.raises(exc, match=name):
                records.decode(blob, **{name: bad})
            with pytest.raises(exc, match=name):
                arrow.records([blob], **{name: bad})


# ---------------------------------------------------------------------------
# Arrow: the call is the whole column


def test_arrow_counts_across_rows_and_a_failed_row_gives_its_share_back():
    ten = many_records(10, "zstd")
    blobs = [ten * 2, ten * 3, ten, ten]  # 20, 30, 10, 10 records
    for impl in IMPLS:
        status, errors = arrow_rows(impl, blobs, max_records_per_call=45)
        # row 1 would bring the call to 50: an error row, its 30 given back; rows 2 and 3 fit in 45
        assert status == [0, 1, 0, 0], impl.name
        assert errors == {1: f"record batch at byte {2 * len(ten) + 57}: 10 records bring this call to 50, above "
                             "max_records_per_call=45"}
    table = arrow.records(blobs, max_records_per_call=45)
    assert table.column("row").to_pylist() == [0] * 20 + [1] + [2] * 10 + [3] * 10
    # a column in several chunks is one call
    chunked = pa.chunked_array([pa.array(blobs[:2], pa.large_binary()), pa.array(blobs[2:], pa.large_binary())])
    assert arrow.records(chunked, max_records_per_call=45).column("row").to_pylist() == table.column(
        "row").to_pylist()
    # 35: row 1 fails at its second batch, row 3 would bring the call to 40
    assert arrow.records(chunked, max_records_per_call=35).column("error").null_count == 20 + 10


# ---------------------------------------------------------------------------
# compressed legacy messages are built when read


@pytest.mark.engine_independent  # both implementations (IMPLS), whatever the pass
def test_a_compressed_legacy_message_is_built_one_record_at_a_time():
    n = 20_000
    blob = wrapper(n - 1, 1, 1, b"".join(message(i, 1, 0, 0, None, None) for i in range(n)))
    inner = 34 * n  # each inner message: 12 + 22 bytes
    for impl in IMPLS:
        def walk():
            count = 0
            for b in impl.records.decode_record_batches(blob, True, LIMIT, True):
                for _record in b.records:  # one at a time, dropped
                    count += 1
            return count

        result, peak = measure(walk)
        assert result == ("ok", n), impl.name
        # the decompressed set and the record in hand (a list of them: ~220 bytes each)
        assert peak < inner + 2 * len(blob) + 256 * 1024, (impl.name, peak)
        [b] = impl.records.decode_record_batches(blob, True, LIMIT, True)
        assert len(b.records) == n and not isinstance(b.records, list)
        assert b.records[-1].offset == n - 1 and b.records[5].offset == 5 and b.base_offset == 0
        assert b.records[-2:] == [b.records[n - 2], b.records[n - 1]]
        with pytest.raises(IndexError):
            b.records[n]
    # views over the decompressed set with copy=False, log-append time from the wrapper
    rng = random.Random(3)
    blob = wrapper(50, 1, 2, inner_set(1, 6, rng), attrs=0x08, ts=1234)
    for impl in IMPLS:
        [b] = impl.records.decode_record_batches(blob, True, LIMIT, False)
        [c] = impl.records.decode_record_batches(blob, True, LIMIT, True)
        assert [(r.offset, r.timestamp, r.timestamp_type) for r in b.records] == [(45 + i, 1234, 1)
                                                                                  for i in range(6)]
        assert [None if r.value is None else bytes(r.value) for r in b.records] == [r.value for r in c.records]
        assert all(r.value is None or isinstance(r.value, memoryview) for r in b.records), impl.name


# ---------------------------------------------------------------------------
# the stated multiple


@pytest.mark.engine_independent  # both implementations (IMPLS), whatever the pass
def test_peak_memory_of_a_call_is_bounded_by_its_caps_whatever_the_number_of_batches():
    # scaled-down caps (the defaults' bound is measured in a subprocess below):
    # batches of 20,000 records, of 200 records x 100 headers, of a 400 KB value
    mr = mh = 50_000
    md = 1_000_000
    bombs = {"records": many_records(20_000, "zstd") * 30,
             "headers": many_headers(100, "zstd", 200) * 30,
             "bytes": records.encode([(None, bytes(400_000), None, 0)], codec="zstd") * 30}
    for impl in IMPLS:
        for name, blob in bombs.items():
            for how in ("held", "list"):
                def run():
                    if how == "held":
                        return len(decode(impl, blob, mr=mr, mh=mh, md=md))
                    return len(list(impl.records.decode_record_batches(
                        blob, True, LIMIT, True, 1 << 20, 10_000, 1 << 20, mr, mh, md)))

                result, peak = measure(run)
                assert result[0] == "err", (impl.name, name, how, result)
                assert peak < bound(mr, mh, md) + len(blob), (impl.name, name, how, peak)
            if impl.name != "compiled":  # (the compiled columns are malloc'd: measured below)
                result, peak = measure(lambda: arrow_rows(impl, [blob, blob], max_records_per_call=mr,
                                                          max_headers_per_call=mh, max_decompressed_per_call=md))
                assert result[1][0] == [1, 1], (impl.name, name)
                assert peak < bound(mr, mh, md) + 4 * len(blob), (impl.name, name, peak)


_RSS_PROBE = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    from kafkaproto import RecordLimitError, arrow
    from kafkaproto.consumer import consume
    from support.records_util import many_headers, many_records

    def hwm():
        with open("/proc/self/status") as f:
            return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmHWM:"))

    blob = {"records": many_records(1_000_000, "zstd") * 20,
            "headers": many_headers(10_000, "zstd", 100) * 50}[sys.argv[2]]
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    base = hwm()
    if sys.argv[3] == "consume":
        try:
            consume(blob, isolation_level=0)
        except RecordLimitError as exc:
            out = exc.limit
    else:
        out = arrow.records([blob]).column("error").to_pylist()[0].split("above ")[1].split()[0]
    print(out, hwm() - base)
""")


@pytest.mark.parametrize("bomb", ["records", "headers"])
@pytest.mark.parametrize("how", ["consume", "arrow"])
def test_the_issue_bombs_stay_within_the_bound_at_the_default_caps(bomb, how):
    # the probe's inputs (13 KB of zstd: 20 M records, 50 M headers) in a fresh
    # process, its peak resident set against the stated bound at the defaults
    if how == "consume":
        caps = (records.DEFAULT_MAX_RECORDS_PER_CALL, records.DEFAULT_MAX_HEADERS_PER_CALL,
                records.DEFAULT_MAX_DECOMPRESSED_PER_CALL)
    else:
        from kafkaproto import _limits
        caps = (_limits.DEFAULT_ARROW_MAX_RECORDS_PER_CALL, _limits.DEFAULT_ARROW_MAX_HEADERS_PER_CALL,
                _limits.DEFAULT_ARROW_MAX_DECOMPRESSED_PER_CALL)
    tests = os.path.dirname(os.path.abspath(__file__))
    run = subprocess.run([sys.executable, "-c", _RSS_PROBE, tests, bomb, how], capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    limit, rise = run.stdout.split()
    assert limit.startswith(f"max_{bomb}_per_call"), run.stdout
    assert int(rise) < bound(*caps), (bomb, how, int(rise))


# ---------------------------------------------------------------------------
# the log reader walks a segment in windows: one arrow.records call each


def test_a_log_window_that_reaches_the_call_caps_ends_there_and_the_next_reads_on(tmp_path):
    from kafkaproto import log
    from support.kafka_log import simple_partition

    w = simple_partition(tmp_path, 200, segment_bytes=1 << 20)  # 40 batches of 5 records
    kl = log.open_log(w.folder)
    [seg] = kl.partitions[0].segments
    items = list(kl.scan(seg, limits={"max_records_per_call": 12}))  # two batches a window, not three
    windows = [i for i in items if isinstance(i, log.Window)]
    assert not [i for i in items if isinstance(i, log.LogProblem)]
    assert [win.batches.num_rows for win in windows] == [2] * 20
    assert [o for win in windows for o in win.records.column("offset").to_pylist()] == list(range(200))
    # a single batch over the caps is a bad batch, as one over the batch caps is
    items = list(kl.scan(seg, limits={"max_records_per_call": 3}))
    problems = [i for i in items if isinstance(i, log.LogProblem)]
    assert problems and "above max_records_per_call=3" in problems[0].message


# ---------------------------------------------------------------------------
# a records column outgrowing its block takes room for what the blobs so far
# project over the whole input (at most four times its bytes); a binary_view
# column's rows may all point into one buffer, so that "four times its bytes"
# is no bound on memory: a block that large refused, the walk goes on with
# the room it needs (a process whose address space is capped)

_ROOM_PROBE = textwrap.dedent("""
    import resource, sys
    import numpy as np
    import pyarrow as pa
    from kafkaproto import arrow, records

    first = records.encode([(None, bytes(4 << 20), None, 0)], codec="zstd")  # 4 MiB of value from ~200 bytes
    junk = bytes(1 << 20)  # 16 k rows point into it: 16 GiB of "input", one MiB of memory
    rows = 1 + (16 << 10)
    views = np.zeros((rows, 4), dtype=np.int32)  # length, prefix, buffer index, offset
    views[0] = (len(first), 0, 0, 0)
    views[1:] = (len(junk), 0, 1, 0)
    arr = pa.BinaryViewArray.from_buffers(pa.binary_view(), rows,
                                          [None, pa.py_buffer(views.tobytes()), pa.py_buffer(first),
                                           pa.py_buffer(junk)])
    with open("/proc/self/status") as f:
        size = next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmSize:"))
    cap = size + (3 << 30)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    t = arrow.records(arr, columns=["value"])
    ok = t.filter(t.column("error").is_null())
    print(ok.num_rows, len(ok.column("value")[0].as_py()), t.num_rows - ok.num_rows)
""")


@pytest.mark.compiled_only
@pytest.mark.skipif(sys.platform != "linux", reason="/proc and an address-space cap that binds: Linux")
def test_room_projected_past_what_the_process_may_map_falls_back_to_what_is_needed():
    run = subprocess.run([sys.executable, "-c", _ROOM_PROBE], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.split() == ["1", str(4 << 20), str(16 << 10)]
