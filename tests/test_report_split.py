"""The report read in byte ranges and across rolled files (local[2], the
run's shared session): the same tables and figures as reading each capture
whole, whatever the roll size or the number of ranges; damaged captures
still finish with balanced books."""

from __future__ import annotations

import json
import struct

import pyarrow.parquet as pq
import pytest

from kafkaproto.capture import Accounting, read_frames
from kafkaproto.capture.formats.ranges import plan_ranges, read_frames_ranged, read_range
from kafkaproto.capture.formats.writer import PcapWriter, TcpConversation
from kafkaproto.capture.walker.packets import LINKTYPE_ETHERNET
from kafkaproto.report import run_report
from kafkaproto.report.tasks import PAYLOADS
from support.report_helpers import (
    SAMPLE,
    damaged_captures,
    hostile_pcapngs,
    hostile_tap,
    report_figures,
    report_tables,
)
from support.synthetic import roll_capture, write_capture

MB = 1_000_000


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    folder = tmp_path_factory.mktemp("synthetic")
    path = folder / "traffic.pcap"
    write_capture(path, size=12 * MB, seed=21, connections=3)
    return path


@pytest.fixture(scope="module")
def synthetic_whole(spark, synthetic, tmp_path_factory):
    """The synthetic capture's report in one task: what its splits are compared with."""
    return _run(spark, {"traffic": str(synthetic)}, tmp_path_factory.mktemp("whole"))


def _run(spark, captures, out, **kw):
    return run_report(captures, out, spark=spark, progress=False, **kw)


def _same(a, b):
    ta, tb = report_tables(a.data.out), report_tables(b.data.out)
    for name in ta:
        assert ta[name] == tb[name], name
    assert report_figures(a.data) == report_figures(b.data)


@pytest.mark.parametrize("which", ["sample", "synthetic"])
def test_rolled_captures_give_the_tables_and_figures_of_the_whole_one(spark, synthetic, tmp_path, which, request):
    """tcpdump -C at 1 MB, 10 MB and whole (the sample is 0.6 MB: rolled at 64 kB
    and 256 kB too): connections run across files, yet nothing changes."""
    path = SAMPLE / "kafka.pcap" if which == "sample" else synthetic
    whole = (_run(spark, {"traffic": str(path)}, tmp_path / "whole") if which == "sample"
             else request.getfixturevalue("synthetic_whole"))
    assert whole.data.tasks["whole files"] == 1
    sizes = (64_000, 256_000, MB) if which == "sample" else (MB, 10 * MB)
    for size in sizes:
        files = roll_capture(path, tmp_path / f"roll-{size}", size, "traffic.pcap")
        assert len(files) > 1 or size > path.stat().st_size
        # the files read one after another by one task, and in byte ranges
        joined = _run(spark, {"traffic": files}, tmp_path / f"joined-{size}")
        assert joined.data.tasks["whole files"] == 1 and not joined.data.tasks["byte ranges"]
        _same(whole, joined)
        rolled = _run(spark, {"traffic": files}, tmp_path / f"out-{size}", whole_file_max=0)
        ranged = rolled.data.tasks["byte ranges"]
        assert ranged >= len(files)
        _same(whole, rolled)
        acc = rolled.data.accounting
        assert not acc.problems()
        # the same connections everywhere: headline, table, accounting
        conns = pq.read_table(f"{rolled.data.out}/connections").num_rows
        assert conns == rolled.data.totals["connections"] == acc.kafka_connections > 0
    d = whole.data
    assert d.latency and all(r["p99"] >= r["p50"] for r in d.latency)


def test_one_capture_in_eight_or_more_ranges_equals_the_one_task_run(spark, synthetic, synthetic_whole, tmp_path):
    whole = synthetic_whole
    size = synthetic.stat().st_size
    split = _run(spark, {"traffic": str(synthetic)}, tmp_path / "split", whole_file_max=0,
                 range_bytes=size // 9)
    assert split.data.tasks["byte ranges"] >= 8 and split.data.tasks["segment partitions"] >= 8
    _same(whole, split)


@pytest.mark.parametrize("engine", ["embedded", "spark"])
def test_without_payloads_only_the_records_contents_are_null(spark, synthetic, synthetic_whole, tmp_path, engine):
    """payloads=False (``--no-payloads``): the records' key, value and headers
    null -- whole and in ranges, on both engines -- and every other column,
    table and figure as with them."""
    size = synthetic.stat().st_size
    for how, kw in (("whole", {}), ("ranges", {"whole_file_max": 0, "range_bytes": size // 3})):
        got = run_report({"traffic": str(synthetic)}, tmp_path / how, spark=spark if engine == "spark" else None,
                         progress=False, payloads=False, **kw)
        want_t, got_t = report_tables(synthetic_whole.data.out), report_tables(got.data.out)
        for name in want_t:
            if name != "records":
                assert got_t[name] == want_t[name], name
        recs = pq.read_table(f"{got.data.out}/records")
        full = pq.read_table(f"{synthetic_whole.data.out}/records")
        assert recs.schema == full.schema and recs.num_rows == full.num_rows > 0
        assert all(recs[c].null_count == recs.num_rows for c in PAYLOADS)
        assert full["value"].null_count < full.num_rows
        rest = [c for c in full.schema.names if c not in PAYLOADS]
        assert sorted(map(repr, recs.select(rest).to_pylist())) == sorted(map(repr, full.select(rest).to_pylist()))
        assert report_figures(got.data) == report_figures(synthetic_whole.data)

def test_a_folder_of_rolled_files_is_one_capture(spark, synthetic, tmp_path):
    folder = tmp_path / "rolled"
    roll_capture(synthetic, folder, 4 * MB, "traffic.pcap")
    a = _run(spark, [str(folder)], tmp_path / "a")
    b = _run(spark, [f"rolled={synthetic}"], tmp_path / "b")
    assert [c["name"] for c in a.data.captures] == ["rolled"] and a.data.captures[0]["files"] == \
        len(list(folder.iterdir())) > 1
    _same(a, b)


def test_pcapng_ranges_and_rolls_read_as_the_whole_file(tmp_path):
    path = tmp_path / "traffic.pcapng"
    write_capture(path, size=2 * MB, seed=4, connections=2, fmt="pcapng")

    def sig(frames):
        return sorted((f.conn.uid, f.seq, f.direction, f.correlation_id, f.status, bytes(f.frame)) for f in frames)

    acc = Accounting()
    want = sig(read_frames(path, acc=acc))
    for files, rb in (([str(path)], 150_000), (roll_capture(path, tmp_path / "r", 300_000), 70_000)):
        got_acc = Accounting()
        assert sig(read_frames_ranged(files, rb, acc=got_acc)) == want
        a, b = acc.to_dict(), got_acc.to_dict()
        a.pop("file_bytes"), b.pop("file_bytes")
        assert a == b


def test_a_range_without_a_record_boundary_reads_nothing(tmp_path):
    """Records larger than the ranges: the ranges inside one hold no record start,
    emit only their statistics row, and the record is read by the range it starts in."""
    path = tmp_path / "jumbo.pcap"
    conv = TcpConversation(("10.2.0.1", 40000), ("10.2.0.2", 9092))
    from kafkaproto.messages import get
    from kafkaproto.protocol import encode_request

    req = encode_request(get("MetadataRequest")(topics=None), 12, 1, "jumbo")
    with open(path, "wb") as fh:
        w = PcapWriter(fh, LINKTYPE_ETHERNET)
        for ts, pkt in conv.handshake() + conv.send(True, req) + conv.send(False, b"\0" * 60_000, 60_000) \
                + conv.close():
            w.write(ts, pkt)
    ranges = plan_ranges(str(path), 8_000)
    stats = []
    empty = 0
    for start, end in ranges:
        batches = list(read_range(str(path), start, end))
        rows = sum(b.num_rows for b in batches)
        stat = json.loads(batches[-1].column("info")[batches[-1].num_rows - 1].as_py())
        stats.append(stat)
        if stat["first"] is None:
            empty += 1
            assert rows == 1  # the statistics row alone
    assert empty >= 5
    acc, ranged = Accounting(), Accounting()
    n = len(list(read_frames(path, acc=acc)))
    assert len(list(read_frames_ranged([str(path)], 8_000, acc=ranged))) == n
    assert ranged.unread_bytes == acc.unread_bytes == 0 and not ranged.problems()


def test_damaged_and_non_kafka_captures_finish_in_ranges(spark, tmp_path):
    manifest, paths = damaged_captures(tmp_path / "in")
    caps = {name: str(p) for name, p in paths.items()}
    result = _run(spark, caps, tmp_path / "out", whole_file_max=0, range_bytes=100_000)
    d = result.data
    assert d.tasks["byte ranges"] > 8
    for name, acc in d.accounting_by_capture.items():
        assert not acc.problems(), (name, acc.problems())
    accs = d.accounting_by_capture
    assert any("cut short" in e for e in accs["truncated.pcap"].errors) and accs["truncated.pcap"].unread_bytes > 0
    assert accs["gaps.pcap"].gaps > 0 and accs["gaps.pcap"].bytes["decoded"] > 0
    assert accs["not-kafka.pcap"].kafka_connections == 0 and accs["not-kafka.pcap"].bytes["not_kafka"] > 0
    assert accs["noise.bin"].bytes["decoded"] == 0  # read whole, as a raw request stream
    # the clean one gives what reading it whole gives
    whole = _run(spark, {"clean.pcap": caps["clean.pcap"]}, tmp_path / "whole")
    assert whole.data.accounting_by_capture["clean.pcap"].to_dict() == accs["clean.pcap"].to_dict()
    assert "adds up: yes" in result.summary


@pytest.mark.parametrize("how", ["whole", "ranges"])
def test_no_capture_fails_the_report(spark, tmp_path, how):
    """Every damaged capture of the test data and pcapngs whose time stamps
    no column can hold (a coarse if_tsresol with huge raw values, a huge or
    very negative if_tsoffset, raw values with the top bit set, good and bad
    mixed), and a tap table with such time stamps: the job finishes, every capture's books balance, and the
    out-of-range time stamps are counted and left null."""
    _, paths = damaged_captures(tmp_path / "in")
    hostile = hostile_pcapngs(paths["clean.pcap"], tmp_path / "in" / "hostile")
    caps = {name: str(p) for name, p in {**paths, **hostile}.items()}
    caps["hostile-tap"] = str(hostile_tap(tmp_path / "in"))
    kw = {"whole_file_max": 0, "range_bytes": 150_000} if how == "ranges" else {}
    result = _run(spark, caps, tmp_path / "out", **kw)
    accs = result.data.accounting_by_capture
    assert set(accs) == set(caps)
    for name, acc in accs.items():
        assert not acc.problems(), (name, acc.problems())
    assert "adds up: yes" in result.summary and "adds up: NO" not in result.summary
    clean = accs["clean.pcap"]
    for name in hostile:
        acc = accs[name]
        assert acc.bytes["decoded"] == clean.bytes["decoded"], name
        expected = (clean.packets_total + 1) // 2 if name == "mixed.pcapng" else clean.packets_total
        assert acc.bad_timestamps == expected, name
    assert accs["hostile-tap"].bad_timestamps == 5 and accs["hostile-tap"].bytes["decoded"] > 0
    assert "packets (or tap rows) with a time stamp out of range" in result.summary
    req = pq.read_table(f"{result.data.out}/requests").to_pydict()
    ts = {}
    for cap, t in zip(req["capture"], req["ts"]):
        ts.setdefault(cap, []).append(t)
    for name in ("coarse-huge.pcapng", "huge-offset.pcapng", "negative-offset.pcapng", "top-bit.pcapng"):
        assert ts[name] and all(t is None for t in ts[name]), name
    assert all(t is not None for t in ts["clean.pcap"])


def test_syn_only_connections_are_counted_apart(spark, tmp_path):
    path = tmp_path / "scan.pcap"
    from kafkaproto.capture.formats.writer import tcp_packet
    from kafkaproto.capture.walker.packets import ACK, RST, SYN

    with open(path, "wb") as fh:
        w = PcapWriter(fh, LINKTYPE_ETHERNET)
        ts = 1_700_000_000_000_000_000
        for port in range(41000, 41005):  # refused attempts: SYN, RST
            w.write(ts, tcp_packet(LINKTYPE_ETHERNET, "10.3.0.1", port, "10.3.0.2", 9092, 100, 0, SYN))
            w.write(ts + 1000, tcp_packet(LINKTYPE_ETHERNET, "10.3.0.2", 9092, "10.3.0.1", port, 0, 101, RST | ACK))
            ts += 10_000
        src = open(SAMPLE / "kafka.pcap", "rb").read()
        pos = 24
        for _ in range(40):  # the sample's first packets: a few real Kafka connections
            incl = struct.unpack_from("<I", src, pos + 8)[0]
            fh.write(src[pos:pos + 16 + incl])
            pos += 16 + incl
    result = _run(spark, [str(path)], tmp_path / "out", ports={9092} | {int(x) for x in ()})
    acc = result.data.accounting
    assert acc.syn_only == 5
    assert acc.kafka_connections == result.data.totals["connections"] == \
        pq.read_table(f"{result.data.out}/connections").num_rows
    assert "5 SYN only" in result.summary
    assert " 0.0 MB/s" not in result.summary


def test_each_captures_range_statistics_stay_its_own(tmp_path):
    """Captures read in ranges together: each capture's ledgers (from its
    ranges' statistics rows) go to that capture only -- the damaged capture's
    errors and unread bytes never show up under the clean one."""
    from kafkaproto.capture import open_capture

    _, paths = damaged_captures(tmp_path / "in")

    def read(names):
        reader = open_capture([str(paths[n]) for n in names]).read("requests", split_bytes=100_000)
        rows = reader.read_all().num_rows
        return rows, {k: v.to_dict() for k, v in reader.accounting.items()}

    rows_clean, alone = read(["clean.pcap"])
    rows_both, both = read(["clean.pcap", "corrupt.pcap"])
    assert both["corrupt.pcap"]["errors"] and both["corrupt.pcap"]["unread_bytes"] > 0
    assert both["clean.pcap"] == alone["clean.pcap"] and not alone["clean.pcap"]["errors"]
    assert rows_both > rows_clean
