"""Consumer helpers: fetch-offset skipping, read-committed filtering, control batches."""

from collections import namedtuple

from kafkaproto import records as R
from kafkaproto.consumer import consume, drop_control_batches, read_committed, records_from

TS = 1_700_000_000_000


def data(base, n, pid=-1, txn=False):
    return R.encode([(b"%d" % (base + i), b"v", None, TS) for i in range(n)], base_offset=base, producer_id=pid,
                    producer_epoch=0 if pid >= 0 else -1, transactional=txn)


def marker(offset, pid, kind):
    return R.encode([R.control_record(kind, 1, TS)], base_offset=offset, producer_id=pid, producer_epoch=0,
                    transactional=True, control=True)


# offsets: 0-1 plain; 2-3 txn pid 7 (aborted at 6); 4-5 txn pid 8 (committed at 7);
# 6 ABORT pid 7; 7 COMMIT pid 8; 8-9 txn pid 7 again (committed at 10); 10 COMMIT pid 7
LOG = (data(0, 2) + data(2, 2, 7, True) + data(4, 2, 8, True) + marker(6, 7, R.ControlType.ABORT)
       + marker(7, 8, R.ControlType.COMMIT) + data(8, 2, 7, True) + marker(10, 7, R.ControlType.COMMIT))
ABORTED = [(7, 2)]


def offsets(recs):
    return [r.offset for r in recs]


def test_read_uncommitted_sees_all_data_but_no_markers():
    assert offsets(consume(LOG, isolation_level=0)) == [0, 1, 2, 3, 4, 5, 8, 9]


def test_read_committed_drops_the_aborted_transaction_only():
    assert offsets(consume(LOG, aborted_transactions=ABORTED)) == [0, 1, 4, 5, 8, 9]


def test_aborted_transactions_as_objects():
    Aborted = namedtuple("Aborted", "producer_id first_offset")
    got = consume(LOG, aborted_transactions=[Aborted(producer_id=7, first_offset=2)])
    assert offsets(got) == [0, 1, 4, 5, 8, 9]


def test_an_abort_marker_ends_the_aborted_range():
    # without its ABORT marker in between, pid 7's later batches stay aborted
    log = data(2, 2, 7, True) + data(8, 2, 7, True)
    assert offsets(consume(log, aborted_transactions=ABORTED)) == []
    log = data(2, 2, 7, True) + marker(6, 7, R.ControlType.ABORT) + data(8, 2, 7, True)
    assert offsets(consume(log, aborted_transactions=ABORTED)) == [8, 9]


def test_fetch_offset_skips_records_of_the_first_batch():
    log = R.encode([(b"%d" % i, b"v", None, TS) for i in range(5)], base_offset=10, codec="gzip") + data(15, 2)
    assert offsets(consume(log, 13)) == [13, 14, 15, 16]
    assert offsets(records_from(R.decode(log), 16)) == [16]


def test_steps_chain_and_keep_control_batches_until_dropped():
    batches = list(read_committed(R.decode(LOG), ABORTED))
    assert sum(b.is_control for b in batches) == 3
    assert not any(b.is_control for b in drop_control_batches(batches))


def test_truncated_tail_is_ignored():
    log = data(0, 2) + data(2, 2)[:20]
    assert offsets(consume(log)) == [0, 1]
    batches = list(drop_control_batches(read_committed(R.decode(log), [])))
    assert batches[-1].truncated


def test_legacy_batches_pass_read_committed():
    log = R.encode([(b"a", b"b", None, TS)], magic=1, base_offset=3)
    assert offsets(consume(log, aborted_transactions=[(-1, 0)])) == [3]
