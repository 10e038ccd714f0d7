"""``kafkaproto dump-log``: Kafka's DumpLogSegments layout line for line (a
batch written by hand, checked against the format), every batch and record
of many segments against the object decoder, legacy message sets, control
records, the index / time index / transaction index / producer snapshot
dumps, damage, JSON lines and Parquet, and the command line."""

from __future__ import annotations

import io
import json
import struct
import zlib

import pyarrow.parquet as pq
import pytest

from kafkaproto import log
from kafkaproto import records as R
from kafkaproto.__main__ import main
from kafkaproto.log import dump as kdump
from support.cli import run_cli
from support.kafka_log import T0, PartitionWriter, simple_partition


def _dump(paths, **kw):
    out, err = io.StringIO(), io.StringIO()
    status = kdump.dump([str(p) for p in paths], out, err, **kw)
    return status, out.getvalue(), err.getvalue()


def _fields(line: str) -> dict:
    """``a: 1 b: x`` → {"a": "1", "b": "x"} (values without spaces)."""
    toks = line.split(" ")
    return {toks[i][:-1]: toks[i + 1] for i in range(0, len(toks) - 1, 2) if toks[i].endswith(":")}


def test_one_batch_exactly_as_kafka_prints_it(tmp_path):
    w = PartitionWriter(tmp_path, "t", 0)
    recs = [(b"k1", b"hello", [("a", b"1"), ("b", None)], T0), (None, b"x", [], T0 + 5), (b"k3", None, [], T0 + 2)]
    w.append(recs, producer_id=42, producer_epoch=3, leader_epoch=7)
    w.close()
    seg = w.segment_file(0)
    (batch,) = list(R.decode(seg.read_bytes()))
    status, out, err = _dump([seg], print_data_log=True)
    assert status == 0 and err == ""
    assert out == (
        f"Dumping {seg}\n"
        "Log starting offset: 0\n"
        "baseOffset: 0 lastOffset: 2 count: 3 baseSequence: 0 lastSequence: 2 producerId: 42 producerEpoch: 3 "
        "partitionLeaderEpoch: 7 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty "
        f"position: 0 CreateTime: {T0 + 5} size: {batch.size} magic: 2 compresscodec: none crc: {batch.crc} "
        "isvalid: true\n"
        f"| offset: 0 CreateTime: {T0} keySize: 2 valueSize: 5 sequence: 0 headerKeys: [a,b] key: k1 payload: hello\n"
        f"| offset: 1 CreateTime: {T0 + 5} keySize: -1 valueSize: 1 sequence: 1 headerKeys: [] payload: x\n"
        f"| offset: 2 CreateTime: {T0 + 2} keySize: 2 valueSize: -1 sequence: 2 headerKeys: [] key: k3\n")
    # batch lines only, then record metadata without the data
    _, out, _ = _dump([seg])
    assert out.count("\n") == 3 and "| offset" not in out
    _, out, _ = _dump([seg], deep_iteration=True)
    assert out.splitlines()[3] == f"| offset: 0 CreateTime: {T0} keySize: 2 valueSize: 5 sequence: 0 headerKeys: [a,b]"
    _, out, _ = _dump([seg], print_data_log=True, skip_record_metadata=True)
    assert out.splitlines()[3:] == ["| key: k1 payload: hello", "| payload: x", "| key: k3"]
    _, out, _ = _dump([seg], print_data_log=True, key_encoding="hex", value_encoding="base64")
    assert "key: 6b31 payload: aGVsbG8=" in out


def test_every_batch_and_record_of_many_segments(tmp_path):
    w = simple_partition(tmp_path, 700, segment_bytes=6 << 10)
    files = sorted(w.folder.glob("*.log"))
    assert len(files) >= 4
    status, out, err = _dump([w.folder], print_data_log=True)
    assert status == 0
    lines = out.splitlines()
    batch_lines = [ln for ln in lines if ln.startswith("baseOffset: ")]
    record_lines = [ln for ln in lines if ln.startswith("| offset: ")]
    want_batches = [b for f in files for b in R.decode(f.read_bytes())]
    assert len(batch_lines) == len(want_batches)
    for line, b in zip(batch_lines, want_batches):
        f = _fields(line)
        assert (int(f["baseOffset"]), int(f["lastOffset"]), int(f["count"]), int(f["position"]), int(f["size"]),
                int(f["crc"]), f["compresscodec"], int(f["CreateTime"])) == \
            (b.base_offset, b.last_offset, b.record_count, b.offset, b.size, b.crc, b.compression, b.max_timestamp)
    want_records = [(r, b) for b in want_batches for r in b.records]
    assert len(record_lines) == len(want_records)
    for line, (r, b) in zip(record_lines, want_records):
        f = _fields(line[2:])
        assert int(f["offset"]) == r.offset and int(f["CreateTime"]) == r.timestamp
        assert int(f["sequence"]) == b.base_sequence + r.offset - b.base_offset
        assert f["headerKeys"] == "[" + ",".join(k for k, _ in r.headers) + "]"
        assert line.endswith(f"key: {r.key.decode()} payload: {r.value.decode()}")
    # each segment's records follow on from the last: only the first file's start is "non-consecutive"
    # (Kafka's tool starts every file at -1; the files' reports come in Java's HashMap order)
    assert sorted(ln for ln in err.splitlines() if "followed" in ln) == \
        sorted(f"  -1 is followed by {int(f.stem)}" for f in files[1:])


def test_legacy_message_sets(tmp_path):
    w = PartitionWriter(tmp_path, "old", 0)
    for magic in (0, 1):
        for codec in ("none", "gzip", "snappy", "lz4"):
            w.append([(b"k", b"v0", [], T0 + 1), (b"k", b"v1", [], T0 + 2)], magic=magic, codec=codec)
    w.close()
    seg = w.segment_file(0)
    status, out, _ = _dump([seg], deep_iteration=True)
    assert status == 0
    lines = out.splitlines()[2:]
    batches = list(R.decode(seg.read_bytes()))
    want = []
    for b in batches:
        ts_type = "NoTimestampType" if b.magic == 0 else "CreateTime"
        want.append(f"offset: {b.last_offset} position: {b.offset} {ts_type}: {b.max_timestamp} size: {b.size} "
                    f"magic: {b.magic} compresscodec: {b.compression} crc: {b.crc} isvalid: true")
        for r, crc in zip(b.records, _inner_crcs(seg.read_bytes(), b)):
            want.append(f"| offset: {r.offset} {ts_type}: {r.timestamp} keySize: 1 valueSize: 2 isValid: true "
                        f"crc: {crc}")
    assert lines == want


def _inner_crcs(blob, b):
    """The stored CRC of each message of a legacy batch (its inner messages when compressed)."""
    if b.codec == 0:
        return [b.crc] * len(b.records)
    from kafkaproto.records import _compression

    at = b.offset
    body = blob[at + 12:at + b.size]
    p = 6 + (8 if b.magic == 1 else 0)
    klen = struct.unpack_from(">i", body, p)[0]
    p += 4 + max(klen, 0)
    vlen = struct.unpack_from(">i", body, p)[0]
    inner = _compression.decompress(b.codec, body[p + 4:p + 4 + vlen], b.magic, 1 << 20, 0)
    out, q = [], 0
    while q < len(inner):
        size = struct.unpack_from(">i", inner, q + 8)[0]
        crc = struct.unpack_from(">I", inner, q + 12)[0]
        assert crc == zlib.crc32(inner[q + 16:q + 12 + size])
        out.append(crc)
        q += 12 + size
    return out


def test_transactions_indexes_and_snapshots(tmp_path):
    w = PartitionWriter(tmp_path, "tx", 0, index_interval=100)
    for i in range(12):
        w.append([(b"k", b"v%d" % i, [], T0 + 10 * i)], producer_id=9, producer_epoch=1, transactional=True)
        if i % 4 == 3:
            w.end_transaction(9, commit=i != 7, coordinator_epoch=4, timestamp=T0 + 10 * i + 1)
    w.append([(b"k", b"open", [], T0 + 500)], producer_id=9, producer_epoch=1, transactional=True)
    w.close()
    stem = w.folder / "00000000000000000000"
    status, out, err = _dump([f"{stem}.log"], print_data_log=True)
    assert status == 0
    markers = [ln for ln in out.splitlines() if "endTxnMarker" in ln]
    assert [m.split("endTxnMarker: ")[1] for m in markers] == ["COMMIT coordinatorEpoch: 4",
                                                             "ABORT coordinatorEpoch: 4",
                                                             "COMMIT coordinatorEpoch: 4"]
    assert all("key:" not in m and "payload:" not in m for m in markers)
    ctl_batches = [ln for ln in out.splitlines() if "isControl: true" in ln]
    assert len(ctl_batches) == 3 and all("isTransactional: true" in ln for ln in ctl_batches)
    _, out, _ = _dump([f"{stem}.txnindex"])
    assert out.splitlines()[1:] == ["version: 0 producerId: 9 firstOffset: 5 lastOffset: 9 lastStableOffset: 10"]
    index = open(f"{stem}.index", "rb").read()
    entries = [struct.unpack_from(">ii", index, 8 * k) for k in range(len(index) // 8)]
    status, out, err = _dump([f"{stem}.index"])
    assert status == 0 and err == ""
    assert out.splitlines()[1:] == [f"offset: {o} position: {p}" for o, p in entries] and entries
    tindex = open(f"{stem}.timeindex", "rb").read()
    tentries = [struct.unpack_from(">qi", tindex, 12 * k) for k in range(len(tindex) // 12)]
    _, out, _ = _dump([f"{stem}.timeindex"])
    assert out.splitlines()[1:] == [f"timestamp: {t} offset: {o}" for t, o in tentries] and tentries
    (snap,) = sorted(w.folder.glob("*.snapshot"))
    _, out, _ = _dump([snap])
    assert out.splitlines()[1:] == [
        "producerId: 9 producerEpoch: 1 coordinatorEpoch: 4 currentTxnFirstOffset: OptionalLong[15] "
        f"lastTimestamp: {T0 + 500} firstSequence: 12 lastSequence: 12 lastOffset: 15 offsetDelta: 0 "
        f"timestamp: {T0 + 500}"]
    # an index entry that names the wrong batch
    struct.pack_into(">ii", bytearray(index), 0, 0, 0)
    bad = bytearray(index)
    struct.pack_into(">i", bad, 0, entries[0][0] + 1)
    open(f"{stem}.index", "wb").write(bytes(bad))
    status, out, err = _dump([f"{stem}.index"])
    assert status == 1 and "Mismatches in :" in err
    assert f"  Index offset: {entries[0][0] + 1}, log offset: {entries[0][0]}" in err


def test_damage_is_printed_where_it_is(tmp_path):
    w = simple_partition(tmp_path, 100, segment_bytes=1 << 20)
    seg = w.segment_file(0)
    data = seg.read_bytes()
    seg.write_bytes(data[:-7])
    status, out, _ = _dump([seg], deep_iteration=True)
    assert status == 1
    last = w.batches[-1]
    assert f"Damage: {seg} at byte {last[1]}: the file ends inside a batch" in out
    assert out.rstrip().endswith(f"Found {len(last[3]) - 7} invalid bytes at the end of {seg.name}")
    # --max-bytes: what fits, and no damage
    status, out, _ = _dump([seg], max_bytes=1000)
    assert status == 0 and "Damage" not in out
    assert all(int(_fields(ln)["position"]) + int(_fields(ln)["size"]) <= 1000
               for ln in out.splitlines() if ln.startswith("baseOffset"))


def test_json_lines(tmp_path):
    w = simple_partition(tmp_path, 60, segment_bytes=1 << 20)
    seg = w.segment_file(0)
    status, out, _ = _dump([seg], print_data_log=True, fmt="json", value_encoding="hex")
    assert status == 0
    objs = [json.loads(ln) for ln in out.splitlines()]
    batches = list(R.decode(seg.read_bytes()))
    assert [o["baseOffset"] for o in objs] == [b.base_offset for b in batches]
    assert [o["crc"] for o in objs] == [b.crc for b in batches]
    recs = [r for o in objs for r in o["records"]]
    want = [r for b in batches for r in b.records]
    assert [(r["offset"], r["timestamp"], r["key"], bytes.fromhex(r["payload"])) for r in recs] == \
        [(r.offset, r.timestamp, r.key.decode(), r.value) for r in want]


def test_parquet_records_and_batches(tmp_path):
    w = simple_partition(tmp_path, 300, segment_bytes=4 << 10)
    out = tmp_path / "records.parquet"
    rows, status = kdump.dump_parquet([str(w.folder)], str(out))
    assert status == 0 and rows == 300
    got = pq.read_table(out)
    want = log.open_log(w.folder).read_table()
    assert got.equals(want)
    out2 = tmp_path / "batches.parquet"
    rows, _ = kdump.dump_parquet([str(w.folder)], str(out2), batches=True)
    b = pq.read_table(out2)
    assert rows == b.num_rows == len(w.batches)
    assert b.column("position").to_pylist() == [p for _, p, _, _ in w.batches]
    assert set(b.column("topic").to_pylist()) == {"orders"}


def test_command_line(tmp_path, capsys):
    w = simple_partition(tmp_path, 30, segment_bytes=1 << 20)
    seg = w.segment_file(0)
    assert main(["dump-log", "--files", f"{seg},{seg.with_suffix('.timeindex')}", "--print-data-log"]) == 0
    out = capsys.readouterr().out
    assert out.count("Dumping ") == 2 and "payload: " in out
    assert main(["dump-log", str(seg), "--format", "json"]) == 0
    assert all(json.loads(ln)["file"] == str(seg) for ln in capsys.readouterr().out.splitlines())
    target = tmp_path / "o.parquet"
    assert main(["dump-log", str(w.folder), "--format", "parquet", "--out", str(target)]) == 0
    assert pq.read_table(target).num_rows == 30
    assert main(["dump-log", "--format", "parquet", str(seg)]) == 2
    assert main(["dump-log", str(tmp_path / "missing.log")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["dump-log"]) == 2
    seg.write_bytes(seg.read_bytes()[:-3])
    assert main(["dump-log", str(seg)]) == 1


@pytest.mark.parametrize("fmt", ["text", "json", "parquet"])
def test_the_process_runs_without_pandas(tmp_path, capsys, fmt):
    """``python -m kafkaproto dump-log`` (the script's entry too) never imports
    pandas, which pyarrow would load on its first conversion (a third of a run),
    and its text imports neither numpy nor pyarrow; its output is what
    :func:`main` writes in this process (which has them all)."""
    w = simple_partition(tmp_path, 40, segment_bytes=1 << 20)
    seg = w.segment_file(0)
    args = ["dump-log", "--print-data-log", "--format", fmt, str(seg)]
    if fmt == "parquet":
        args += ["--out", str(tmp_path / "p.parquet")]
    p, modules = run_cli(args, tmp_path / "modules.json")
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    assert "pandas" not in modules
    if fmt == "text":
        assert "numpy" not in modules and "pyarrow" not in modules
    else:
        assert "pyarrow" in modules
    if fmt == "parquet":
        theirs = pq.read_table(tmp_path / "p.parquet")
        args[-1] = str(tmp_path / "q.parquet")
        assert main(args) == 0
        assert pq.read_table(tmp_path / "q.parquet").equals(theirs)
    else:
        assert main(args) == 0
        assert p.stdout.decode() == capsys.readouterr().out


def test_output_goes_out_in_one_write_per_window(tmp_path):
    w = simple_partition(tmp_path, 2000, segment_bytes=1 << 20)

    class Sink(io.StringIO):
        writes = 0

        def write(self, s):
            Sink.writes += 1
            return super().write(s)

    sink = Sink()
    kdump.dump([str(w.segment_file(0))], sink, io.StringIO(), print_data_log=True)
    assert Sink.writes < 10 and sink.getvalue().count("\n") == 2 + 2000 + 400


def test_compacted_segments_report_their_gaps(tmp_path):
    w = PartitionWriter(tmp_path, "compacted", 0)
    for base in (0, 3, 4, 10):
        w.next_offset = base
        w.append([(b"k%d" % base, b"v", [], T0 + base)])
    w.close()
    _, _, err = _dump([w.segment_file(0)], deep_iteration=True)
    assert err.splitlines()[1:] == ["  0 is followed by 3", "  4 is followed by 10"]


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_whole_folder_with_every_kind_of_file(tmp_path, fmt):
    w = simple_partition(tmp_path, 200, segment_bytes=2 << 10)
    files = sorted(p for p in w.folder.iterdir())
    status, out, err = _dump(files, fmt=fmt, print_data_log=True)
    assert status == 0, out
    if fmt == "text":
        assert out.count("Dumping ") == len(files)
        assert sum(ln.startswith("offset: ") for ln in out.splitlines()) == \
            sum(f.stat().st_size // 8 for f in files if f.suffix == ".index")
    else:  # every line an object, each naming its file
        objs = [json.loads(ln) for ln in out.splitlines()]
        assert {o["file"] for o in objs} == {str(f) for f in files if f.stat().st_size}
        assert sum("records" in o for o in objs) == len(w.batches)
        assert sum("position" in o and "records" not in o for o in objs) == \
            sum(f.stat().st_size // 8 for f in files if f.suffix == ".index")


def test_a_name_past_the_range_of_offsets_is_one_line(tmp_path):
    w = simple_partition(tmp_path, 10, segment_bytes=1 << 20)
    bad = w.folder / "99999999999999999999.log"
    bad.write_bytes(w.segment_file(0).read_bytes())
    status, out, err = _dump([bad, w.segment_file(0)])
    assert status == 2 and err.count("\n") == 1 and "out of the range of offsets" in err
    assert out.count("baseOffset: ") == 2  # the other file is dumped


def test_out_into_a_missing_folder_is_one_line_and_status_2(tmp_path):
    w = simple_partition(tmp_path, 10, segment_bytes=1 << 20)
    p, _ = run_cli(["dump-log", "--out", str(tmp_path / "missing" / "x.txt"), str(w.segment_file(0))],
                   tmp_path / "m.json")
    assert p.returncode == 2 and p.stderr.decode().count("\n") == 1 and "Traceback" not in p.stderr.decode()
    assert "cannot write" in p.stderr.decode()


def test_parquet_of_a_topic_folder_and_no_file_left_for_a_missing_input(tmp_path):
    simple_partition(tmp_path, 120, topic="orders", partition=0, segment_bytes=4 << 10)
    simple_partition(tmp_path, 80, topic="orders", partition=1, segment_bytes=4 << 10)
    target = tmp_path / "t.parquet"
    assert main(["dump-log", "--format", "parquet", "--out", str(target), str(tmp_path / "orders")]) == 0
    t = pq.read_table(target)
    assert t.num_rows == 200 and sorted(set(t.column("partition").to_pylist())) == [0, 1]
    missing = tmp_path / "u.parquet"
    assert main(["dump-log", "--format", "parquet", "--out", str(missing), str(tmp_path / "nothing")]) == 2
    assert not missing.exists()


def test_a_bad_crc_is_one_place_in_one_message(tmp_path):
    w = simple_partition(tmp_path, 60, segment_bytes=1 << 20)
    seg = w.segment_file(0)
    data = bytearray(seg.read_bytes())
    _, at, _, raw = w.batches[3]
    data[at + 70] ^= 0xFF  # a byte of its records: the CRC no longer matches
    seg.write_bytes(bytes(data))
    status, out, _ = _dump([seg], print_data_log=True)
    (line,) = [ln for ln in out.splitlines() if ln.startswith("Damage: ")]
    assert status == 1 and line == (f"Damage: {seg} at byte {at}: a bad batch of {len(raw)} bytes skipped: CRC32C "
                                     f"mismatch: stored {line.split('stored ')[1].split(',')[0]}, computed "
                                     f"{line.split('computed ')[1]}")
    assert line.count("byte") == 2  # "at byte N" and "bytes skipped": one position only
    assert out.count("baseOffset: ") == len(w.batches) - 1
