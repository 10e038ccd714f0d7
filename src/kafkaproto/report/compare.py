"""Two report outputs side by side: the same tables and figures?

What a test (or ``make demo``) uses to show that the two engines, or a
capture read whole, in byte ranges and rolled into files, give one report:
every table compared as sorted rows (the order of files and rows aside), and
the figures of ``report.json`` (what the summary and the page show) without
what belongs to a run (paths, times, engine, tasks).

    python -m kafkaproto.report.compare OUT_A OUT_B
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

__all__ = ["TABLE_NAMES", "compare", "figures", "tables"]

TABLE_NAMES = ("requests", "responses", "records", "record_sets", "connections", "unanswered", "topic_ids",
               "accounting")
#: report.json fields that describe the run, not the traffic
_RUN_FIELDS = ("out", "captures", "input_bytes", "seconds", "decode_seconds", "master", "cores", "tasks", "tables",
               "accounting_by_capture", "engine")


def _plain(v):
    if isinstance(v, float):
        return round(v, 9)
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


def tables(out) -> dict[str, list[str]]:
    """Every table of a report output as sorted rows.  The accounting's
    ``totals`` row keeps its JSON without ``file_bytes`` (each rolled file has
    its own header) and ``errors`` (they name files)."""
    import pyarrow.parquet as pq

    got = {}
    for name in TABLE_NAMES:
        rows = pq.read_table(Path(out) / name).to_pylist()
        for r in rows:
            if name == "accounting" and r.get("info"):
                info = json.loads(r["info"])
                info.pop("file_bytes", None)
                info.pop("errors", None)
                r["info"] = info
        got[name] = sorted(repr(sorted(r.items())) for r in rows)
    return got


def figures(data) -> dict:
    """The report's figures (a ReportData, or the text of ``report.json``), run-independent."""
    d = json.loads(data if isinstance(data, str) else data.to_json())
    for k in _RUN_FIELDS:
        d.pop(k, None)
    acc = d.pop("accounting") or {}
    acc.pop("file_bytes", None)
    acc.pop("errors", None)
    d["accounting"] = acc
    return _plain(d)


def compare(a, b) -> dict[str, bool]:
    """``{table or "figures": equal?}`` for two report output folders."""
    ta, tb = tables(a), tables(b)
    out = {name: ta[name] == tb[name] for name in TABLE_NAMES}
    out["figures"] = figures((Path(a) / "report.json").read_text()) == figures((Path(b) / "report.json").read_text())
    return out


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m kafkaproto.report.compare OUT_A OUT_B", file=sys.stderr)
        return 2
    got = compare(*args)
    rows = {name: len(v) for name, v in tables(args[0]).items()}
    for name, same in got.items():
        count = f" ({rows[name]:,} rows)" if name in rows else ""
        print(f"  {name:12s} {'equal' if same else 'DIFFERENT'}{count}")
    ok = all(got.values())
    print("the two outputs hold the same tables and figures" if ok else "the two outputs differ")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
