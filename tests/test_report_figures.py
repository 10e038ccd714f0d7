"""The report's figures and ``connections`` table, computed by the tasks'
Arrow group-bys and folded on the driver (report/aggregate.py), against the
same figures computed row by row in Python over the written tables: every
committed capture, read whole and in byte ranges, and captures of many
connections with the group-bys folding every few rows; the streaming
group-by and the tasks' manifests on their own.  No JVM: the embedded
engine, in this process."""

from __future__ import annotations

import collections
import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from kafkaproto.error_codes import error_name
from kafkaproto.report import aggregate, run_report
from kafkaproto.report.aggregate import CONNECTIONS_SCHEMA, Groups, latency_bucket, percentile
from kafkaproto.report.compare import compare
from support.replica import replicate
from support.report_helpers import SAMPLE
from support.synthetic import write_capture

#: every committed capture: pcap files, and tap output folders
CAPTURES = sorted(p for p in SAMPLE.iterdir() if p.suffix in (".pcap", ".pcapng") or p.is_dir())


def _rows(out, table: str) -> list[dict]:
    return pq.read_table(Path(out) / table).to_pylist()


def _latency(values: list[int]) -> dict:
    """count, p50, p90, p99, max (ms) of latencies (µs), through the mergeable histogram."""
    hist = collections.Counter(latency_bucket(np.array(values, dtype=np.int64)).tolist())
    most = max([0, *values])
    return {"count": len(values), **{f"p{int(q * 100)}": percentile(hist, q, most) / 1000 for q in (0.5, 0.9, 0.99)},
            "max": most / 1000}


def by_rows(out) -> dict:
    """Every figure of the report and the ``connections`` rows, computed row
    by row from the tables written under ``out`` (the oracle)."""
    req, resp = _rows(out, "requests"), _rows(out, "responses")
    conns: dict[tuple, dict] = {}
    for kind, rows in (("requests", req), ("responses", resp)):
        for r in rows:
            c = conns.setdefault((r["capture"], r["conn"]), {
                "capture": r["capture"], "conn": r["conn"], "clients": set(), "servers": set(), "ts": [],
                "requests": 0, "responses": 0, "bytes_to_broker": 0, "bytes_from_broker": 0, "client_ids": set(),
                "undecodable": 0, "software": None})
            c["clients"].add(r["client"])
            c["servers"].add(r["server"])
            if r["ts"] is not None:
                c["ts"].append(r["ts"])
            c[kind] += 1
            c["bytes_to_broker" if kind == "requests" else "bytes_from_broker"] += r["size"] or 0
            c["client_ids"].add(r["client_id"])
            c["undecodable"] += r["status"] == "undecodable"
            if kind == "requests" and c["software"] is None and r["software_name"] is not None:
                c["software"] = (r["software_name"], r["software_version"])
    table = []
    for key in sorted(conns):
        c = conns[key]
        clients, servers = c["clients"] - {None}, c["servers"] - {None}
        assert len(clients) <= 1 and len(servers) <= 1, key  # a connection's two ends do not change
        sw = c["software"] or (None, None)
        table.append({"capture": c["capture"], "conn": c["conn"], "client": min(clients, default=None),
                      "server": min(servers, default=None), "first_ts": min(c["ts"], default=None),
                      "last_ts": max(c["ts"], default=None), "requests": c["requests"],
                      "responses": c["responses"], "bytes_to_broker": c["bytes_to_broker"],
                      "bytes_from_broker": c["bytes_from_broker"],
                      "client_ids": sorted(c["client_ids"] - {None}), "undecodable": c["undecodable"],
                      "software_name": sw[0], "software_version": sw[1]})
        c["named"] = None if sw[0] is None else " ".join(x for x in sw if x is not None)

    def num(x):
        return -1 if x is None else x

    use = collections.Counter((r["client_id"], conns[(r["capture"], r["conn"])]["named"], r["api_key"], r["api"],
                               r["api_version"], bool(r["removed_in_kafka4"])) for r in req)
    api_use = sorted(({"client_id": k[0], "software": k[1], "api_key": k[2], "api": k[3], "api_version": k[4],
                       "requests": n, "removed": k[5]} for k, n in use.items()),
                     key=lambda d: (str(d["client_id"]), str(d["software"]), num(d["api_key"]), num(d["api_version"])))
    clients: dict = {}
    for c in conns.values():
        for cid in sorted(c["client_ids"] - {None}) or [None]:
            got = clients.setdefault(cid, {"connections": 0, "software": set(), "hosts": set()})
            got["connections"] += 1
            if c["named"] is not None:
                got["software"].add(c["named"])
            got["hosts"].update(a.rsplit(":", 1)[0] for a in c["clients"] - {None})
    clients = sorted(({"client_id": k, "connections": v["connections"], "software": sorted(v["software"]),
                       "hosts": sorted(v["hosts"])} for k, v in clients.items()), key=lambda d: str(d["client_id"]))
    codes = collections.Counter((r["capture"], r["server"], r["api"], code)
                                for r in resp for code in r["error_codes"] or ())
    errors = collections.Counter()
    for (_c, _s, api, code), n in codes.items():
        errors[(api, code)] += n
    lat, lat_by, waits = collections.defaultdict(list), collections.defaultdict(list), {}
    for r in resp:
        v = r["latency_us"]
        if v is None:
            continue
        lat[r["api"]].append(v)
        lat_by[(r["capture"], r["server"], r["api"])].append(v)
        if r["wait_ms"] is not None:
            w = waits.setdefault(r["api"], {"waits": collections.Counter(), "waited": 0, "early": []})
            w["waits"][r["wait_ms"]] += 1
            if v >= r["wait_ms"] * 900:
                w["waited"] += 1
            else:
                w["early"].append(v)
    latency = sorted(({"api": api, **_latency(v)} for api, v in lat.items()),
                     key=lambda d: (-d["count"], str(d["api"])))
    for row in latency:
        w = waits.get(row["api"])
        if w:
            n = sum(w["waits"].values())
            e = _latency(w["early"]) if w["early"] else {"count": 0, "p50": 0.0, "p99": 0.0}
            row.update(wait_ms=max(w["waits"].items(), key=lambda kv: (kv[1], kv[0]))[0], waits=sorted(w["waits"])[:5],
                       waited_out=w["waited"] / n, early_count=e["count"], early_p50=e["p50"], early_p99=e["p99"])
    latency_by = sorted(({"capture": k[0], "broker": k[1], "api": k[2], **_latency(v)} for k, v in lat_by.items()),
                        key=lambda d: (str(d["api"]), str(d["capture"]), str(d["broker"])))
    ids = _rows(out, "topic_ids")
    names = {r["topic_id"]: r["topic"] for r in ids}
    sets = _rows(out, "record_sets")
    topics, codecs = {}, {}
    for r in sets:
        t = topics.setdefault((r["source"], names.get(r["topic"], r["topic"])), [0, 0, 0, 0])
        c = codecs.setdefault((r["source"], r["codec"]), [0, 0, 0, 0])
        for got, values in ((t, (1, r["batches"], r["records"], r["bytes"])),
                            (c, (r["batches"], r["records"], r["bytes"], 1))):
            for k, x in enumerate(values):
                got[k] += x or 0
    bad = collections.Counter()
    for kind, rows in (("requests", req), ("responses", resp), ("record_sets", sets)):
        for r in rows:
            if r["error"] is not None:
                bad[(kind, r.get("api"), r.get("status"), r["error"])] += 1
    unanswered = _rows(out, "unanswered")
    trailing = {}
    for kind, rows in (("requests", req), ("responses", resp)):
        for r in rows:
            if r["trailing_bytes"]:
                got = trailing.setdefault((kind, r["api"], r["client_id"]), [0, 0])
                got[0] += 1
                got[1] += r["trailing_bytes"]
    first = sorted(unanswered, key=lambda r: (r["ts"] is None, r["ts"] or 0, r["capture"], r["conn"] or 0))
    return {
        "connections": table,
        "totals.connections": len(table),
        "api_use": api_use,
        "clients": clients,
        "errors": sorted(({"api": a, "code": c, "error": error_name(c), "count": n} for (a, c), n in errors.items()),
                         key=lambda d: (-d["count"], str(d["api"]), d["code"])),
        "errors_by": sorted(({"capture": k[0], "broker": k[1], "api": k[2], "code": k[3], "error": error_name(k[3]),
                              "count": n} for k, n in codes.items()),
                            key=lambda d: (-d["count"], str(d["capture"]), str(d["broker"]), str(d["api"]), d["code"])),
        "latency": latency,
        "latency_by": latency_by,
        "topics": sorted(({"source": s, "topic": t, "sets": v[0], "batches": v[1], "records": v[2], "bytes": v[3]}
                          for (s, t), v in topics.items()), key=lambda d: (-d["bytes"], d["source"], str(d["topic"]))),
        "codecs": sorted(({"source": s, "codec": c, "batches": v[0], "records": v[1], "bytes": v[2], "sets": v[3]}
                          for (s, c), v in codecs.items()), key=lambda d: (d["source"], -d["bytes"], str(d["codec"]))),
        "decode_errors": [{"table": k[0], "api": k[1], "status": k[2], "error": k[3], "count": n} for k, n in
                          sorted(bad.items(), key=lambda kv: (-kv[1], tuple(str(x) for x in kv[0])))][:50],
        "unanswered": sorted(({"capture": k[0], "api": k[1], "client_id": k[2], "requests": n} for k, n in
                              collections.Counter((r["capture"], r["api"], r["client_id"])
                                                  for r in unanswered).items()),
                             key=lambda d: (-d["requests"], str(d["capture"]), str(d["api"]), str(d["client_id"]))),
        "unanswered_rows": [{"ts": None if r["ts"] is None else r["ts"].isoformat(),
                             **{k: r[k] for k in ("capture", "api", "api_version", "client_id", "conn", "client",
                                                  "server")}} for r in first[:200]],
        "topic_ids": {f"{r['capture']}|{r['topic_id']}": r["topic"] for r in ids},
        "trailing": sorted(({"kind": k[0], "api": k[1], "client_id": k[2], "frames": v[0], "bytes": v[1]}
                            for k, v in trailing.items()), key=lambda d: (-d["frames"], d["kind"], str(d["api"]))),
    }


def _check(result) -> None:
    """The report's figures and connections table equal :func:`by_rows` over its own tables."""
    d = result.data
    want = by_rows(d.out)
    files = sorted((Path(d.out) / "connections").glob("*.parquet"))
    got = pa.concat_tables([pq.read_table(f) for f in files])
    assert got.schema == CONNECTIONS_SCHEMA
    for f in files:  # each task's rows in order of capture and connection
        keys = pq.read_table(f, columns=["capture", "conn"]).to_pylist()
        assert keys == sorted(keys, key=lambda r: (r["capture"], r["conn"]))
    assert sorted(got.to_pylist(), key=lambda r: (r["capture"], r["conn"])) == want.pop("connections")
    assert d.totals["connections"] == want.pop("totals.connections") == got.num_rows
    for name, value in want.items():
        assert getattr(d, name) == value, name


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.name)
def test_figures_equal_the_row_by_row_oracle_on_every_committed_capture(tmp_path, capture):
    result = run_report([str(capture)], tmp_path / "whole", progress=False, workers=1)
    _check(result)
    if capture.suffix in (".pcap", ".pcapng"):
        # in byte ranges: connections dealt to several tasks, their parts folded on the driver
        ranged = run_report([str(capture)], tmp_path / "ranges", progress=False, workers=1, whole_file_max=0,
                            range_bytes=1 << 16, partitions=3)
        assert ranged.data.tasks["segment partitions"] > 1
        _check(ranged)


@pytest.mark.parametrize("traffic", ["replica", "chatty"])
def test_many_connections_with_group_bys_folding_every_few_rows(tmp_path, monkeypatch, traffic):
    """Hundreds of connections in every batch -- the committed sample copied
    onto 8 x 273 distinct connections, or the synthetic chatty cast copied 12
    times -- with the group-bys folding every 50 rows and again as they
    grow: the same figures as the row-by-row oracle, and as the default fold."""
    path = tmp_path / f"{traffic}.pcap"
    if traffic == "replica":
        replicate(SAMPLE / "kafka.pcap", path, 8)
    else:
        write_capture(path, size=1_500_000, seed=5, profile="small", small_scale=12)
    default = run_report([str(path)], tmp_path / "default", progress=False, workers=1)
    monkeypatch.setattr(aggregate, "ROWS", 50)
    small = run_report([str(path)], tmp_path / "small", progress=False, workers=1)
    _check(small)
    assert small.data.totals["connections"] >= 200
    assert all(compare(default.data.out, small.data.out).values())


# ---------------------------------------------------------------------------
# the streaming group-by


def test_groups_fold_a_stream_as_one_group_by():
    """Every function a figure uses, null keys and values included, over a
    stream folded every 37 rows: the same groups as a plain loop, ``first``
    and ``last`` in the stream's order (``b``: the row of ``x``'s first value)."""
    rng = random.Random(4)
    keys = [rng.choice(["a", "b", None, "c"]) for _ in range(4000)]
    nums = [rng.choice([None, *range(300)]) for _ in range(4000)]
    codes = [rng.randrange(900) for _ in range(4000)]  # many groups: the folds double
    aggs = [("n", "x", "count", aggregate._ALL), ("s", "x", "sum"), ("lo", "x", "min"), ("hi", "x", "max"),
            ("f", "x", "first"), ("fk", "x", "first", aggregate._KEEP_NULLS), ("l", "x", "last"),
            ("lk", "x", "last", aggregate._KEEP_NULLS), ("b", "y", "first", aggregate._Beside("f"))]
    g = Groups(["k", "code"], aggs, rows=37)
    for at in range(0, 4000, 113):
        g.add({"k": pa.array(keys[at:at + 113], pa.string()), "code": pa.array(codes[at:at + 113], pa.int64()),
               "x": pa.array(nums[at:at + 113], pa.int64()), "y": pa.array(codes[at:at + 113], pa.int64())})
    want: dict = {}
    for k, c, x in zip(keys, codes, nums):
        w = want.setdefault((k, c), {"n": 0, "v": [], "fk": x, "lk": None, "f": None, "b": None})
        w["n"] += 1
        w["lk"] = x
        if x is not None:
            w["v"].append(x)
            if w["f"] is None:
                w["f"], w["b"] = x, c
    got = {(r["k"], r["code"]): r for r in g.table().to_pylist()}
    assert got.keys() == want.keys()
    for key, w in want.items():
        r = got[key]
        v = w["v"]
        assert (r["n"], r["s"], r["lo"], r["hi"], r["f"], r["fk"], r["l"], r["lk"], r["b"]) == \
            (w["n"], sum(v) if v else None, min(v, default=None), max(v, default=None), w["f"], w["fk"],
             v[-1] if v else None, w["lk"], w["b"]), key
    assert Groups(["k"]).table() is None
    schema = pa.schema([("k", pa.string())])
    assert Groups(["k"]).table(schema).equals(schema.empty_table())


def test_a_key_with_one_value_is_grouped_like_any_other():
    """A key that holds one value in a batch (a task's capture) is left out
    of the hashing and put back: the groups are those of a plain loop,
    whether the key has one value in every batch, changes between batches,
    or changes within one; a key of one value and nothing else to group
    gives one group."""
    rng = random.Random(9)
    rows = []
    for batch in range(12):
        caps = ["a"] * 40 if batch < 5 else ["b"] * 40 if batch < 9 else [rng.choice("ab") for _ in range(40)]
        rows.append([(c, rng.randrange(7), rng.randrange(100)) for c in caps])
    g = Groups(["cap", "k"], [("n", "x", "count", aggregate._ALL), ("s", "x", "sum"), ("f", "x", "first")], rows=60)
    only = Groups(["cap"], [("n", "x", "count", aggregate._ALL)], rows=60)
    for batch in rows:
        cols = {"cap": pa.array([r[0] for r in batch], pa.string()), "k": pa.array([r[1] for r in batch], pa.int64()),
                "x": pa.array([r[2] for r in batch], pa.int64())}
        g.add(cols)
        only.add({"cap": cols["cap"], "x": cols["x"]})
    want: dict = {}
    for cap, k, x in (r for batch in rows for r in batch):
        w = want.setdefault((cap, k), [0, 0, x])
        w[0] += 1
        w[1] += x
    got = {(r["cap"], r["k"]): [r["n"], r["s"], r["f"]] for r in g.table().to_pylist()}
    assert got == want
    assert {r["cap"]: r["n"] for r in only.table().to_pylist()} == dict(collections.Counter(
        r[0] for batch in rows for r in batch))
    one = aggregate._aggregate(pa.table({"cap": pa.array(["z"] * 5), "x": pa.array(range(5), pa.int64())}), ["cap"],
                               [("n", "x", "count", aggregate._ALL), ("l", "x", "last", None)])
    assert one.to_pylist() == [{"cap": "z", "n": 5, "l": 4}]
    # every key of one value (a capture of one connection): still grouped, ``distinct`` too
    ids = aggregate._group_by(pa.table({"cap": ["z"] * 3, "conn": pa.array([5] * 3, pa.int64()),
                                        "id": ["a", "b", None]}), ["cap", "conn"],
                              [("id", "distinct", pc.CountOptions(mode="only_valid"))])
    assert ids.column_names == ["cap", "conn", "id_distinct"]
    assert ids.to_pylist() == [{"cap": "z", "conn": 5, "id_distinct": ["a", "b"]}]


@pytest.mark.parametrize("rows", [None, 7, 16 * 8, 1000])
def test_groups_keep_a_bounded_number_of_rows_where_grouping_hardly_shrinks_them(monkeypatch, rows):
    """Distinct keys only (every group-by keeps every row): the rows kept
    before grouping grow four times each time, up to 16 times ``rows``, but
    never past 16 times ROWS (unless ``rows`` asks for more): a group-by
    given 16 times ROWS already grows no further.  The groups stay right."""
    monkeypatch.setattr(aggregate, "ROWS", 8)
    g = Groups(["k"], [("n", "k", "count", aggregate._ALL)], rows=rows)
    size = g.rows
    most = max(size, 16 * 8)
    kept = []
    for at in range(0, 40 * most, 5):
        g.add({"k": pa.array(range(at, at + 5), pa.int64())})
        kept.append(g._raw_rows)
    assert max(kept) < most + 5
    assert max(kept) >= min(16 * size, most) - 5  # it does grow where it may
    t = g.table()
    assert t.num_rows == 40 * most and set(t.column("n").to_pylist()) == {1}


def test_api_use_counts_each_request_under_its_connections_software_whenever_it_was_named():
    """A connection's software is the first name its requests gave (the
    version beside it), and every request of the connection counts under it:
    requests before the naming one, in earlier batches too, a connection
    named twice (the first name wins), one never named, and the same
    connection number in two captures."""
    from kafkaproto.capture.tables import table_schema

    schema = table_schema("requests")

    def batch(*rows):
        full = [{**{f.name: None for f in schema}, "capture": cap, "conn": conn, "api_key": key, "api_version": 1,
                 "api": f"api{key}", "client_id": cid, "size": 10, "status": "ok", "trailing_bytes": 0,
                 "software_name": sw[0] if sw else None, "software_version": sw[1] if sw else None}
                for cap, conn, key, cid, sw in rows]
        return pa.RecordBatch.from_pylist(full, schema=schema)

    agg = aggregate.TaskAggregates(rows=2)
    agg.add("requests", batch(("c1", 1, 3, "a", None), ("c1", 2, 18, "b", ("x", "1")), ("c2", 1, 3, "a", None)))
    agg.add("requests", batch(("c1", 1, 18, "a", ("y", None)), ("c1", 1, 3, "a", None), ("c1", 3, 3, "a", None),
                              ("c1", 2, 3, "b", None)))
    agg.add("requests", batch(("c1", 1, 18, "a", ("z", "9")), ("c2", 1, 18, "a", ("x", "1")), ("c1", 2, 3, "b", None)))
    got = {(r["client_id"], r["software"], r["api_key"]): r["requests"] for r in agg.parts()["api_use"].to_pylist()}
    assert got == {("a", "y", 3): 2, ("a", "y", 18): 2, ("a", None, 3): 1, ("b", "x 1", 18): 1,
                   ("b", "x 1", 3): 2, ("a", "x 1", 3): 1, ("a", "x 1", 18): 1}


def test_percentiles_of_many_histograms_at_once_equal_one_at_a_time():
    rng = np.random.default_rng(9)
    rows = []
    for g in range(40):
        values = rng.lognormal(4 + g % 7, 2, rng.integers(1, 400)).astype(np.int64) - (g == 3) * 5000
        buckets = latency_bucket(values)
        for b in np.unique(buckets).tolist():
            rows.append({"api": None if g == 7 else f"api{g % 13}", "server": f"s{g // 13}", "bucket": b,
                         "count": int((buckets == b).sum()), "max": int(values[buckets == b].max())})
    t = pa.Table.from_pylist(rows)
    got = {(r["api"], r["server"]): r for r in aggregate._percentiles(t, ["api", "server"])}
    hists: dict = {}
    for r in rows:
        h = hists.setdefault((r["api"], r["server"]), [collections.Counter(), 0])
        h[0][r["bucket"]] += r["count"]
        h[1] = max(h[1], r["max"])
    assert got.keys() == hists.keys()
    for key, (h, most) in hists.items():
        assert got[key] == {"api": key[0], "server": key[1], "count": sum(h.values()),
                            **{f"p{int(q * 100)}": percentile(h, q, most) / 1000 for q in (0.5, 0.9, 0.99)},
                            "max": most / 1000}, key


# ---------------------------------------------------------------------------
# the tasks' results


def test_a_task_returns_its_manifest_as_one_arrow_buffer(tmp_path):
    """A task's result is bytes (an Arrow IPC stream of one row), and the
    driver reads every task's tables back concatenated in the tasks' order."""
    from kafkaproto.capture import WholeTask
    from kafkaproto.report.tasks import MANIFEST_SCHEMA, read_manifests, whole_task

    got = [whole_task(WholeTask(((p.name, (str(p),)),)), (tmp_path / "out").as_uri(), f"w{i}")
           for i, p in enumerate((SAMPLE / "kafka.pcap", SAMPLE / "kafka44.pcap"))]
    assert all(isinstance(m, bytes) for m in got)
    batches = [pa.ipc.open_stream(m).read_all() for m in got]
    assert all(b.schema == MANIFEST_SCHEMA and b.num_rows == 1 for b in batches)
    tables = read_manifests(got)
    assert tables["accounting"].column("capture").to_pylist() == ["kafka.pcap", "kafka44.pcap"]
    assert tables["connections"].column("connections").to_pylist() == [
        pq.read_table(tmp_path / "out" / "connections" / f"w{i}.parquet").num_rows for i in range(2)]
    files = tables["files"].to_pylist()
    assert {(r["table"], Path(r["file"]).name) for r in files} >= {("requests", "w0.parquet"),
                                                                    ("requests", "w1.parquet")}
    for name, t in tables.items():
        one = read_manifests(got[:1])[name]
        assert t.slice(0, one.num_rows).equals(one), name
    assert all(t.num_rows == 0 for t in read_manifests([]).values())


def test_a_capture_of_one_connection_with_two_client_ids(tmp_path):
    """One connection (every key of the figures' group-bys holds one value):
    its row names both client ids, its requests count under each."""
    from kafkaproto import encode_request, encode_response
    from kafkaproto.capture.formats.writer import LINKTYPE_ETHERNET, PcapWriter, TcpConversation
    from kafkaproto.messages import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse

    conv = TcpConversation(("10.1.0.1", 40001), ("10.1.0.2", 9092), linktype=LINKTYPE_ETHERNET)
    packets = conv.handshake()
    for cid, who in ((1, "first"), (2, "second")):
        packets += conv.send(True, encode_request(ApiVersionsRequest(), 3, cid, who), 1460)
        packets += conv.send(False, encode_response(ApiVersionsResponse(), 3, cid), 1460)
    packets += conv.send(True, encode_request(MetadataRequest(topics=[]), 12, 3, "second"), 1460)
    packets += conv.send(False, encode_response(MetadataResponse(), 12, 3), 1460)
    packets += conv.close()
    path = tmp_path / "one.pcap"
    with open(path, "wb") as fh:
        w = PcapWriter(fh, LINKTYPE_ETHERNET)
        for ts, data in packets:
            w.write(ts, data)
    result = run_report([str(path)], tmp_path / "out", progress=False, workers=1)
    conns = pq.read_table(tmp_path / "out" / "connections").to_pylist()
    assert [(c["client_ids"], c["requests"], c["responses"]) for c in conns] == [(["first", "second"], 3, 3)]
    use = {(r["client_id"], r["api"]): r["requests"] for r in result.data.api_use}
    assert use == {("first", "ApiVersions"): 1, ("second", "ApiVersions"): 1, ("second", "Metadata"): 1}
