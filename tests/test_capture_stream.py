"""A capture that grows, read in pieces (kafkaproto.capture.stream): every
committed capture, its segments cut inside size prefixes, headers and
bodies, rolled into files right after cuts of every class (between frames,
mid-header, mid-frame) and written in pieces that cut records anywhere, is
read in micro-batches of random sizes -- some read twice, as a retried task
does -- and gives every table of the batch read of the same files, row for
row, each row once."""

from __future__ import annotations

import os
import random
import struct
from pathlib import Path

import pyarrow as pa
import pytest

from kafkaproto import encode_request, encode_response
from kafkaproto.capture import open_capture
from kafkaproto.capture.formats.writer import PcapngWriter, PcapWriter, TcpConversation
from kafkaproto.capture.stream import GrowingCapture, Offset, StreamStateError
from kafkaproto.messages import MetadataRequest, MetadataResponse
from support.rotated import CLASSES, boundaries, grow, message_ends, resegment, roll, tap_files, to_pcapng

ROOT = Path(__file__).resolve().parents[1]
CAPTURES = sorted(p for p in (ROOT / "samples" / "capture").glob("*.pcap"))
TABLES = ("frames", "requests", "responses", "records", "record_sets", "unanswered")


def canon(table: pa.Table) -> list:
    return sorted(map(repr, table.to_pylist()))


def stream(cap: GrowingCapture, writes, rng, tables=TABLES, budgets=(None, 1000, 20_000, 200_000), retry=0.2):
    """Every row of ``tables`` read in micro-batches while ``writes`` (an
    iterator that writes a piece at each step) grows the capture."""
    got: dict = {t: [] for t in tables}
    start = cap.initial()

    def batch(start, max_bytes):
        end = cap.latest(start, max_bytes)
        if end == start:
            return start
        if rng.random() < retry:
            # a task that dies part-way: its rows never count, the read is done again
            it = cap.read(start, end, tables)
            next(it, None)
            it.close()
        rows = list(cap.read(start, end, tables))
        if rng.random() < retry:
            assert [(t, b.to_pylist()) for t, b in cap.read(start, end, tables)] == \
                [(t, b.to_pylist()) for t, b in rows], "a read done again gave other rows"
        for t, b in rows:
            got[t].append(b)
        cap.commit(end, tables)
        return end

    for _ in writes:
        start = batch(start, rng.choice(budgets))
    while True:
        end = batch(start, rng.choice(budgets))
        if end == start:
            return got, start
        start = end


def check_equal(got: dict, folder, tables=TABLES) -> None:
    ds = open_capture(folder)
    for t in tables:
        want = ds.read_table(t)
        have = pa.Table.from_batches(got[t], schema=want.schema)
        assert want.num_rows or t == "unanswered", f"{t}: the batch read gives no row"
        assert canon(have) == canon(want), f"{t}: {have.num_rows} rows read in pieces, {want.num_rows} at once"


@pytest.mark.parametrize(("capture", "fmt"), [(c, "pcap") for c in CAPTURES] + [(CAPTURES[-1], "pcapng")],
                         ids=lambda v: getattr(v, "name", v))
def test_a_rolled_growing_capture_read_in_micro_batches_is_the_batch_read(capture, fmt, tmp_path):
    rng = random.Random(capture.name)
    cut = tmp_path / "resegmented.pcap"
    resegment(capture, cut)
    classes = boundaries(cut)
    assert all(classes[c] for c in CLASSES)
    rolls = [i for c in CLASSES for i in rng.sample(classes[c], 2)]
    folder, state = tmp_path / "cap", tmp_path / "state"
    cap = GrowingCapture(folder, state)
    blobs = roll(cut, folder, rolls)
    if fmt == "pcapng":  # each file a section of its own, its blocks cut anywhere as they are written
        blobs = [to_pcapng(b) for b in blobs]
    got, end = stream(cap, grow(folder, blobs, rng, name=f"cap.{fmt}"), rng)
    assert len(os.listdir(folder)) == 7
    assert end.total == sum(os.path.getsize(folder / n) for n in os.listdir(folder))
    check_equal(got, folder)
    assert len(os.listdir(state)) == 1  # the state of the last offset; those before it were let go


def test_a_capture_followed_for_long_keeps_only_what_its_open_connections_need(tmp_path):
    """Read in one process as it grows (the live report's way), copy after
    copy of the sample on new connections: between reads the sink holds no
    connection, and the decoder keeps per-connection state (topic ids,
    long-poll waits) only for connections still open -- what a run of
    hours holds does not grow with the connections it has seen."""
    from support.replica import replicate

    whole = tmp_path / "whole.pcap"
    replicate(CAPTURES[-1], whole, 6, shift=0)
    data = whole.read_bytes()
    folder = tmp_path / "cap"
    folder.mkdir()
    cap = GrowingCapture(folder, None)
    start = cap.initial()
    got: dict = {t: [] for t in TABLES}
    seen, kept = set(), []
    for k in range(1, 7):
        with open(folder / "cap.pcap", "wb") as fh:
            fh.write(data[:len(data) * k // 6])
        end = cap.latest(start)
        for t, b in cap.read(start, end, TABLES):
            got[t].append(b)
        start = end
        (walk, decoder, _stop), = cap._kept.values()
        assert walk.sink.conns == [] and walk.sink.size == 0
        open_uids = {p.conn.uid for p in walk.pairings()}
        assert set(decoder.conn_ids) <= open_uids and {w >> 40 for w in decoder.waits} <= open_uids
        seen.update(*(b.column("conn").to_pylist() for b in got["frames"]))
        kept.append(len(decoder.conn_ids))
    assert len(seen) > 6 * 5 and max(kept) <= 2, (len(seen), kept)  # many connections met, few kept
    check_equal(got, folder)


def test_a_tap_folder_followed_lets_go_of_the_connections_that_ended(tmp_path):
    """The tap's end rows: a tap folder followed in one process keeps no
    pairing, state or per-connection decoder state of a connection that
    ended, and its saved state names only the open ones."""
    folder = tmp_path / "tap"
    folder.mkdir()
    for name, blob in tap_files(CAPTURES[-1], tmp_path / "written"):
        (folder / name).write_bytes(blob)
    cap = GrowingCapture(folder, None)
    got: dict = {t: [] for t in TABLES}
    start = cap.initial()
    for budget in (20_000, None):
        end = cap.latest(start, budget)
        for t, b in cap.read(start, end, TABLES):
            got[t].append(b)
        start = end
    (walk, decoder, _stop), = cap._kept.values()
    assert walk.conns == {} and walk.pairings() == [] and decoder.conn_ids == {} and decoder.waits == {}
    assert len(walk.save()) < 1000  # no connection in it
    check_equal(got, folder)


def conversation_with_a_request_left_waiting(path, fmt="pcap"):
    """A client whose second Metadata request is never answered, on a
    connection still open when the capture is read, then one that closes."""
    conv = TcpConversation(("10.1.0.1", 40001), ("10.1.0.2", 9092))
    pk = conv.handshake()
    for corr in range(1, 7):
        pk += conv.send(True, encode_request(MetadataRequest(topics=[]), 12, corr, "app"))
        if corr != 2:
            pk += conv.send(False, encode_response(MetadataResponse(), 12, corr))
    with open(path, "wb") as fh:
        w = PcapngWriter(fh) if fmt == "pcapng" else PcapWriter(fh)
        if fmt == "pcapng":
            w.interface(1)
        t0 = pk[0][0]
        for k, (_ts, data) in enumerate(pk):
            w.write(t0 + k * 1_000_000_000, data)  # a second apart
    return conv


def test_a_request_left_waiting_is_unanswered_once_its_wait_passes_the_timeout(tmp_path):
    path = tmp_path / "one.pcap"
    conversation_with_a_request_left_waiting(path)
    for after, want in ((None, 0), (10_000_000_000, 0), (2_500_000_000, 1)):
        cap = GrowingCapture(path, tmp_path / f"state-{after}", unanswered_after=after)
        start = cap.initial()
        end = cap.latest(start)
        rows = [b for t, b in cap.read(start, end, ("unanswered",)) if t == "unanswered"]
        got = pa.Table.from_batches(rows, schema=open_capture(path).read_table("unanswered").schema)
        assert got.num_rows == want, after
        if want:
            assert got.column("correlation_id").to_pylist() == [2]
    # read whole, the request is unanswered at the end of the capture
    assert open_capture(path).read_table("unanswered").column("correlation_id").to_pylist() == [2]


def test_starting_at_the_latest_record_reads_only_what_is_written_after(tmp_path):
    src = tmp_path / "src.pcap"
    resegment(CAPTURES[0], src)
    data = src.read_bytes()
    path = tmp_path / "live.pcap"
    path.write_bytes(data[:len(data) // 2])
    cap = GrowingCapture(path, tmp_path / "state")
    start = cap.initial("latest")
    assert start.fresh and 24 < start.pos <= len(data) // 2
    path.write_bytes(data)
    end = cap.latest(start)
    frames = pa.Table.from_batches([b for _t, b in cap.read(start, end)])
    whole = open_capture(src).read_table("frames")
    assert 0 < frames.num_rows < whole.num_rows
    # each frame read is one of the whole capture's, from its second half
    later = {(r["offset"], r["size"], r["direction"]) for r in whole.to_pylist()}
    assert all((r["offset"], r["size"], r["direction"]) in later for r in frames.to_pylist())


def test_offsets_and_states_are_checked(tmp_path):
    path = tmp_path / "one.pcap"
    conversation_with_a_request_left_waiting(path)
    cap = GrowingCapture(path, tmp_path / "state")
    start = cap.initial()
    mid = cap.latest(start, 1000)
    list(cap.read(start, mid))
    end = cap.latest(mid)
    # the state the next read needs is gone
    for f in os.listdir(tmp_path / "state"):
        os.unlink(tmp_path / "state" / f)
    with pytest.raises(StreamStateError, match="no state saved"):
        list(cap.read(mid, end))
    with pytest.raises(ValueError, match="not an offset"):
        Offset.of({"file": "a", "pos": "x"})
    # a pcapng file being written: the latest offset is after its last whole block
    conversation_with_a_request_left_waiting(tmp_path / "one.pcapng", fmt="pcapng")
    data = (tmp_path / "one.pcapng").read_bytes()
    (tmp_path / "one.pcapng").write_bytes(data[:-30])
    ng = GrowingCapture(tmp_path / "one.pcapng", tmp_path / "s2")
    last = ng.initial("latest").pos
    # the block cut short is the last one: it starts there and runs to the end of the whole file
    assert last < len(data) - 30 and struct.unpack_from("<I", data, last + 4)[0] == len(data) - last
    # pcap files and the tap's frame tables in one folder
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    conversation_with_a_request_left_waiting(mixed / "a.pcap")
    for name, blob in tap_files(mixed / "a.pcap", tmp_path / "written"):
        (mixed / name).write_bytes(blob)
    with pytest.raises(ValueError, match="pcap files and the tap frame tables in one folder"):
        GrowingCapture(mixed, tmp_path / "s4").latest(Offset(fresh=True))
    # a folder not made yet: nothing to read, yet
    later = GrowingCapture(tmp_path / "not-yet", tmp_path / "s3")
    assert later.latest(later.initial()) == later.initial()


# -- the tap's output, read while the tap runs -------------------------------------------------------------------

TAP_SOURCES = [ROOT / "samples" / "capture" / "kafka44.pcap", ROOT / "samples" / "capture" / "tap-mock"]


@pytest.mark.parametrize(("capture", "cuts"), [(TAP_SOURCES[0], "anywhere"), (TAP_SOURCES[1], "batches")],
                         ids=lambda v: getattr(v, "name", v))
def test_a_growing_tap_folder_read_in_micro_batches_is_the_batch_read(capture, cuts, tmp_path):
    """The tap's writer's files (a batch every 24 frames, rolled mid-connection)
    written a record batch at a time, or in pieces that tear batches anywhere,
    while read in micro-batches of random budgets: every table of the batch
    read of the finished folder, each row once."""
    rng = random.Random(f"{capture.name}-{cuts}")
    files = tap_files(capture, tmp_path / "written")
    names, blobs = [n for n, _b in files], [b for _n, b in files]
    assert len(files) >= 3
    conns = [set(pa.ipc.open_stream(b).read_all().column("conn").to_pylist()) for b in blobs]
    assert any(a & b for a, b in zip(conns, conns[1:])), "no connection goes on in the next file"
    folder, state = tmp_path / "tap", tmp_path / "state"
    cap = GrowingCapture(folder, state)
    at = [message_ends(b) for b in blobs] if cuts == "batches" else None
    got, end = stream(cap, grow(folder, blobs, rng, most=12_000, names=names, cuts=at), rng,
                      budgets=(None, None, 2000, 9000))
    assert cap.kind == "tap"
    assert end.total == sum(map(len, blobs))
    check_equal(got, folder)
    assert len(os.listdir(state)) == 1


def test_a_tap_folder_gives_requests_left_waiting_once_the_timeout_passes(tmp_path):
    """The batch read of a tap's tables counts no request still waiting when
    the tap stopped; a stream with a timeout gives them as unanswered rows."""
    conversation_with_a_request_left_waiting(tmp_path / "one.pcap")
    folder = tmp_path / "tap"
    folder.mkdir()
    for name, blob in tap_files(tmp_path / "one.pcap", tmp_path / "written", ends=False):
        (folder / name).write_bytes(blob)
    schema = open_capture(folder).read_table("unanswered").schema
    assert open_capture(folder).read_table("unanswered").num_rows == 0
    for after, want in ((None, []), (10_000_000_000, []), (2_500_000_000, [2])):
        cap = GrowingCapture(folder, tmp_path / f"state-{after}", unanswered_after=after)
        start = cap.initial()
        mid = cap.latest(start, 900)
        rows = [b for t, b in cap.read(start, mid, ("unanswered",))]
        rows += [b for t, b in cap.read(mid, cap.latest(mid), ("unanswered",))]
        got = pa.Table.from_batches(rows, schema=schema)
        assert got.column("correlation_id").to_pylist() == want, after


def test_a_tap_folder_torn_where_another_file_follows_is_damage(tmp_path):
    """A torn batch at the end of the file being written waits; in a file
    another follows (the tap killed, then started again) it is a problem,
    and the next file is read."""
    files = tap_files(TAP_SOURCES[0], tmp_path / "written", batch_rows=5, ends=False)
    folder = tmp_path / "tap"
    folder.mkdir()
    (name0, blob0), (name1, blob1) = files[:2]
    cut = message_ends(blob0)[3] + 10
    (folder / name0).write_bytes(blob0[:cut])
    cap = GrowingCapture(folder, tmp_path / "state")
    start = cap.initial()
    end = cap.latest(start)
    problems: list = []
    first = [b for _t, b in cap.read(start, end, problems=problems)]
    assert problems == [] and sum(b.num_rows for b in first) == 15  # three batches of 5; the fourth waits
    assert cap.initial("latest").pos == message_ends(blob0)[3]
    (folder / name1).write_bytes(blob1)
    later = cap.latest(end)
    rest = [b for _t, b in cap.read(end, later, problems=problems)]
    assert len(problems) == 1 and name0 in problems[0].file and "cut or damaged inside a batch" in problems[0].message
    assert sum(b.num_rows for b in rest) == pa.ipc.open_stream(blob1).read_all().num_rows


def test_the_state_of_a_tap_folder_is_checked(tmp_path):
    """A saved state of tap rows loads only as one (same limits, undamaged),
    and gives the connections, frame counts and waiting requests back."""
    from kafkaproto.capture import Accounting
    from kafkaproto.capture.formats.tapfiles import TableFrames
    from kafkaproto.capture.walker.snapshot import WalkerStateError, dump

    conversation_with_a_request_left_waiting(tmp_path / "one.pcap")
    batches = [b for _n, blob in tap_files(tmp_path / "one.pcap", tmp_path / "w") for b in pa.ipc.open_stream(blob)]
    rows = TableFrames(Accounting())
    for b in batches:
        list(rows.add(b))
    state = rows.save()
    again = TableFrames(Accounting())
    again.load(state)
    assert again.save() == state  # the same connections, counts and waiting requests
    for bad in (state[:-3], state[:12] + bytes([state[12] ^ 1]) + state[13:], dump(["tap", 1 << 31], [b"x", []]),
                dump(["tap", 1 << 31], [1])):
        with pytest.raises(WalkerStateError):
            TableFrames(Accounting()).load(bad)
    with pytest.raises(WalkerStateError, match="limits"):
        TableFrames(Accounting(), max_frame_size=1000).load(state)
