"""The report as text (terminal summary) and as one self-contained HTML page
whose charts are inline SVG drawn here (no script, no external resource)."""

from __future__ import annotations

import html
import math
import time
from collections import defaultdict
from collections.abc import Sequence

from ..capture.accounting import BYTE_REASONS, MARKS, connections_text
from .job import ReportData

__all__ = ["html_page", "summary"]

PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
           "#9c755f", "#bab0ac")
REMOVED = "#d62728"
# versions: blues, greens and browns only, never the red of a removed version
VERSION_SHADES = ("#4e79a7", "#76b7b2", "#59a14f", "#9c755f", "#b07aa1", "#a0cbe8")


def _mb(n: float | None) -> str:
    if n is None:
        return "-"
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def _rate(nbytes: float, seconds: float) -> str:
    """A throughput in the largest unit that keeps it at 1 or more (never "0.0 MB/s")."""
    per = nbytes / max(seconds, 1e-9)
    for unit, size in (("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3)):
        if per >= size:
            return f"{per / size:.1f} {unit}"
    return f"{per:.0f} B/s"


def _num(n) -> str:
    return "-" if n is None else f"{n:,}"


def _ms(x: float) -> str:
    return f"{x:.3f}" if x < 1 else f"{x:.1f}" if x < 100 else f"{x:.0f}"


# ---------------------------------------------------------------------------
# terminal


def _table(rows: Sequence[Sequence[object]], head: Sequence[str]) -> list[str]:
    cells = [[str(h) for h in head]] + [["-" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(head))]
    out = []
    for k, r in enumerate(cells):
        out.append("  " + "  ".join(c.ljust(w) if i == 0 or not c[:1].isdigit() else c.rjust(w)
                                    for i, (c, w) in enumerate(zip(r, widths))).rstrip())
        if k == 0:
            out.append("  " + "  ".join("-" * w for w in widths))
    return out


def _api_use_by_client(d: ReportData) -> dict[tuple[str, str], list[dict]]:
    by: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in d.api_use:
        by[(str(r["client_id"]), r["software"] or "")].append(r)
    return by


def summary(d: ReportData, html_path: str | None = None, limit: int = 12) -> str:
    """The terminal summary."""
    t = d.totals
    acc = d.accounting
    cores = f" ({d.cores} cores)" if d.cores else ""
    lines = [
        f"kafkaproto report: {len(d.captures)} capture(s), {_mb(d.input_bytes)} in {d.seconds:.1f}s "
        f"on {d.master}{cores}: {_rate(d.input_bytes, d.seconds)}",
        f"  {_num(t.get('connections'))} Kafka connections, {_num(t.get('requests'))} requests, "
        f"{_num(t.get('responses'))} responses, {_num(t.get('records'))} records in "
        f"{_num(t.get('record_sets'))} record sets"
        + (f"; {connections_text(acc)}" if acc is not None else ""),
        "",
        "API versions per client (client id, software from ApiVersions):",
    ]
    by = _api_use_by_client(d)
    rows = []
    for (cid, sw), uses in sorted(by.items()):
        text = ", ".join(f"{u['api']} v{u['api_version']}" + ("!" if u["removed"] else "") + f" x{u['requests']}"
                         for u in sorted(uses, key=lambda u: (-u["requests"]))[:8])
        more = len(uses) - 8
        rows.append((cid, sw or "-", text + (f", +{more} more" if more > 0 else "")))
    lines += _table(rows[:limit * 2], ("client id", "software", "API vN x requests (! removed in Kafka 4.0)"))
    removed = d.removed
    lines += ["", "Versions removed in Kafka 4.0 still in use:" if removed else
              "Versions removed in Kafka 4.0 still in use: none"]
    if removed:
        lines += _table([(r["client_id"], r["software"] or "-", r["api"], r["api_version"], r["requests"])
                         for r in sorted(removed, key=lambda r: -r["requests"])][:limit],
                        ("client id", "software", "API", "version", "requests"))
    lines += ["", "Errors by API:" if d.errors else "Errors by API: none"]
    if d.errors:
        lines += _table([(e["api"], e["error"], e["code"], e["count"]) for e in d.errors[:limit]],
                        ("API", "error", "code", "count"))
    if d.errors_by:
        lines += ["", "Errors by capture and broker:"]
        lines += _table([(e["capture"], e["broker"], e["api"], e["error"], e["count"]) for e in d.errors_by[:limit]],
                        ("capture", "broker", "API", "error", "count"))
    lines += ["", "Latency per API (ms; long polls against the wait their requests asked for):"]
    lines += _table([_latency_cells(r) for r in d.latency[:limit]], _LATENCY_HEAD)
    if len({(r["capture"], r["broker"]) for r in d.latency_by}) > 1:
        lines += ["", "Latency by capture and broker (ms):"]
        lines += _table([(r["capture"], r["broker"], r["api"], r["count"], _ms(r["p50"]), _ms(r["p99"]), _ms(r["max"]))
                         for r in sorted(d.latency_by, key=lambda r: -r["count"])[:limit]],
                        ("capture", "broker", "API", "responses", "p50", "p99", "max"))
    n_unanswered = sum(r["requests"] for r in d.unanswered)
    lines += ["", f"Requests without a response: {n_unanswered:,}" if n_unanswered else
              "Requests without a response: none"]
    if n_unanswered:
        lines += _table([(r["capture"], r["api"], r["client_id"], r["requests"]) for r in d.unanswered[:limit]],
                        ("capture", "API", "client id", "requests"))
        lines += ["  the first ones:"]
        lines += _table([(r["ts"], r["api"], r["client_id"], r["client"], r["server"], r["conn"])
                         for r in d.unanswered_rows[:limit]], ("time", "API", "client id", "client", "broker", "conn"))
    n_trailing = sum(r["frames"] for r in d.trailing)
    lines += ["", f"Frames with bytes after their message body: {n_trailing:,}" if n_trailing else
              "Frames with bytes after their message body: none"]
    if n_trailing:
        lines += _table([(r["kind"], r["api"], r["client_id"], r["frames"], r["bytes"]) for r in d.trailing[:limit]],
                        ("table", "API", "client id", "frames", "bytes after the body"))
    lines += ["", "Record sets per topic:"]
    lines += _table([(r["topic"], r["source"], r["records"], _mb(r["bytes"]), r["batches"]) for r in d.topics[:limit]],
                    ("topic", "direction", "records", "bytes", "batches"))
    lines += ["", "Codec mix (batches):"]
    lines += _table([(r["source"], r["codec"], r["batches"], r["records"], _mb(r["bytes"])) for r in d.codecs],
                    ("direction", "codec", "batches", "records", "bytes"))
    if d.decode_errors:
        lines += ["", "Not decoded:"]
        lines += _table([(r["table"], r["api"], r["status"], r["count"], str(r["error"])[:70])
                         for r in d.decode_errors[:limit]], ("table", "API", "status", "count", "why"))
    lines += ["", "Accounting (every byte and frame decoded or counted under a reason):"]
    if acc is not None:
        lines += _table(_accounting_rows(acc), ("ledger", "reason", "count", "bytes"))
        problems = acc.problems()
        lines.append("  adds up: " + ("yes" if not problems else "NO: " + "; ".join(problems)))
        for e in acc.errors[:limit]:
            lines.append(f"  capture error: {e}")
    lines += ["", "Tables: " + ", ".join(f"{k}" for k in d.tables) + f" (Parquet) under {d.out}"]
    if html_path:
        lines.append(f"HTML report: {html_path}")
    return "\n".join(lines)


_LATENCY_HEAD = ("API", "responses", "p50", "p90", "p99", "max", "wait", "waited out", "answered early: p50",
                 "p99")


def _latency_cells(r) -> tuple[object, ...]:
    """A latency row; for a long poll (Fetch max_wait_ms...) also the wait most
    of its requests asked for, the share of responses that came at 90 % of
    their wait or later (the broker waited: no data, not slowness), and the
    percentiles of those answered before."""
    cells = (r["api"], r["count"], _ms(r["p50"]), _ms(r["p90"]), _ms(r["p99"]), _ms(r["max"]))
    if r.get("wait_ms") is None:
        return cells + ("-", "-", "-", "-")
    early = r.get("early_count") or 0
    return cells + (f"{r['wait_ms']:,}", f"{100 * r['waited_out']:.0f} %",
                    _ms(r["early_p50"]) if early else "-", _ms(r["early_p99"]) if early else "-")


def _accounting_rows(acc) -> list[tuple[object, ...]]:
    rows = []
    for r in acc.rows():
        reason = MARKS.get(r["reason"], r["reason"]) if r["ledger"] == "marked" else r["reason"]
        rows.append((r["ledger"], reason, r["count"], r["bytes"]))
    rows.append(("totals", "packets read", acc.packets_total, None))
    rows.append(("totals", "frames, payload bytes", acc.frames_total, acc.payload_bytes_total))
    rows.append(("totals", "TCP connections", acc.connections, None))
    rows.append(("totals", "Kafka connections (gave a frame)", acc.kafka_connections, None))
    if acc.syn_only:
        rows.append(("totals", "SYN only (no data either way)", acc.syn_only, None))
    other = acc.connections - acc.kafka_connections - acc.syn_only
    if other > 0:
        rows.append(("totals", "other connections (not Kafka)", other, None))
    if acc.unanswered_requests:
        rows.append(("totals", "requests without response", acc.unanswered_requests, None))
    if acc.unread_bytes:
        rows.append(("totals", "file bytes unread", None, acc.unread_bytes))
    return rows


# ---------------------------------------------------------------------------
# SVG charts


def _e(s) -> str:
    return html.escape("-" if s is None else str(s), quote=True)


def _nice_ticks(top: float) -> list[float]:
    """0 and a few round values up to ``top`` (1, 2 or 5 times a power of ten apart)."""
    if top <= 0:
        return [0.0]
    raw = top / 5
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    return [i * step for i in range(int(top / step) + 1)]


def _hbars(rows: Sequence[tuple[str, Sequence[tuple[float, str, str]]]], *, width: int = 760, label_w: int = 230,
           bar_h: int = 18, log: bool = False, fmt=_num, title: str = "", legend=(), unit: str = "",
           tick_fmt=None, markers=(), labels=None) -> str:
    """Horizontal (stacked) bars: rows of (label, [(value, colour, tooltip)]),
    an x axis with ticks and ``unit`` under it, a legend above.
    ``markers``: ``(row, value, tooltip)`` dashed ticks across a row's bar
    (a long poll's wait); ``labels``: per row, per segment, a short text drawn
    inside the segment where it fits."""
    if not rows:
        return '<p class="none">nothing to show</p>'
    totals = [sum(v for v, _, _ in segs) for _, segs in rows]
    top = max(totals + [m[1] for m in markers]) or 1
    plot_w = width - label_w - 90
    legend_rows = 0
    if legend:
        x, legend_rows = label_w, 1
        for name, _ in legend:
            step = 24 + 7 * len(str(name))
            if x + step > width and x > label_w:
                x, legend_rows = label_w, legend_rows + 1
            x += step
    legend_h = 18 * legend_rows + (4 if legend else 0)
    axis_h = 40
    plot_top = legend_h + 5
    h = plot_top + len(rows) * (bar_h + 6) + axis_h
    lo = 0.001
    if log:
        lo_dec = math.floor(math.log10(max(min((v for _, segs in rows for v, _, _ in segs if v > 0), default=1), 1e-3)))
        lo = 10.0 ** lo_dec
        top_dec = math.ceil(math.log10(max(top, lo * 10)))
        span = top_dec - lo_dec

    def scale(v: float) -> float:
        if log:
            return plot_w * max(0.0, math.log10(max(v, lo) / lo)) / span
        return plot_w * v / top

    parts = [f'<svg class="chart" role="img" aria-label="{_e(title)}" width="{width}" height="{h}" '
             f'viewBox="0 0 {width} {h}">']
    x, y = label_w, 4
    for name, colour in legend:
        step = 24 + 7 * len(str(name))
        if x + step > width and x > label_w:
            x, y = label_w, y + 18
        parts.append(f'<rect x="{x}" y="{y}" width="12" height="12" fill="{colour}"/>'
                     f'<text x="{x + 16}" y="{y + 10}" class="lg">{_e(name)}</text>')
        x += step
    # the x axis: grid lines, ticks, values and the unit
    base_y = plot_top + len(rows) * (bar_h + 6)
    ticks = [10.0 ** k for k in range(lo_dec, top_dec + 1)] if log else _nice_ticks(top)
    tf = tick_fmt or fmt
    for tv in ticks:
        tx = label_w + scale(tv)
        parts.append(f'<line x1="{tx:.1f}" y1="{plot_top - 2}" x2="{tx:.1f}" y2="{base_y + 4}" class="grid"/>'
                     f'<text x="{tx:.1f}" y="{base_y + 16}" text-anchor="middle" class="tick">{_e(tf(tv))}</text>')
    parts.append(f'<line x1="{label_w}" y1="{base_y}" x2="{label_w + plot_w}" y2="{base_y}" class="axis"/>')
    parts.append(f'<text x="{label_w + plot_w / 2:.1f}" y="{base_y + 34}" text-anchor="middle" class="unit">'
                 f'{_e(unit)}</text>')
    for i, ((label, segs), total) in enumerate(zip(rows, totals)):
        y = plot_top + i * (bar_h + 6)
        parts.append(f'<text x="{label_w - 8}" y="{y + bar_h - 5}" text-anchor="end" class="lb">{_e(label)}</text>')
        if log:  # overlapping bars (percentiles), largest first
            for v, colour, tip in sorted(segs, key=lambda s: -s[0]):
                parts.append(f'<rect x="{label_w}" y="{y}" width="{max(scale(v), 1):.1f}" height="{bar_h}" '
                             f'fill="{colour}"><title>{_e(tip)}</title></rect>')
            end = scale(max((v for v, _, _ in segs), default=0))
        else:
            x0 = float(label_w)
            for k, (v, colour, tip) in enumerate(segs):
                w = scale(v)
                if w > 0:
                    parts.append(f'<rect x="{x0:.1f}" y="{y}" width="{max(w, 1):.1f}" height="{bar_h}" '
                                 f'fill="{colour}"><title>{_e(tip)}</title></rect>')
                    text = labels[i][k] if labels else None
                    if text and w >= 7 * len(text) + 6:
                        parts.append(f'<text x="{x0 + w / 2:.1f}" y="{y + bar_h - 5}" text-anchor="middle" '
                                     f'class="in">{_e(text)}</text>')
                x0 += w
            end = x0 - label_w
        parts.append(f'<text x="{label_w + end + 5:.1f}" y="{y + bar_h - 5}" class="val">{_e(fmt(total))}</text>')
    for row, value, tip in markers:
        mx = label_w + scale(value)
        y = plot_top + row * (bar_h + 6)
        parts.append(f'<line x1="{mx:.1f}" y1="{y - 3}" x2="{mx:.1f}" y2="{y + bar_h + 3}" class="mark">'
                     f'<title>{_e(tip)}</title></line>')
    parts.append("</svg>")
    return "".join(parts)


def _colours(keys: Sequence[str]) -> dict[str, str]:
    return {k: PALETTE[i % len(PALETTE)] for i, k in enumerate(keys)}


def _chart_api_versions(d: ReportData) -> str:
    by_api: dict[str, dict[int, tuple[int, bool]]] = defaultdict(dict)
    for r in d.api_use:
        n, rem = by_api[str(r["api"])].get(r["api_version"], (0, r["removed"]))
        by_api[str(r["api"])][r["api_version"]] = (n + r["requests"], rem)
    rows, labels = [], []
    most = 0
    for api, versions in sorted(by_api.items(), key=lambda kv: -sum(n for n, _ in kv[1].values())):
        segs, texts = [], []
        ordered = sorted(versions.items(), key=lambda kv: (kv[0] is None, kv[0] or 0))
        most = max(most, len(ordered))
        for i, (v, (n, rem)) in enumerate(ordered):
            colour = REMOVED if rem else VERSION_SHADES[min(i, len(VERSION_SHADES) - 1)]
            segs.append((n, colour, f"{api} v{v}: {n:,} requests" + (" (removed in Kafka 4.0)" if rem else "")))
            texts.append(f"v{v}")
        rows.append((api, segs))
        labels.append(texts)
    ordinal = ("lowest version in use", "2nd", "3rd", "4th", "5th", "6th and higher")
    legend = [(ordinal[i] if i or most > 1 else "the version in use", VERSION_SHADES[i])
              for i in range(min(most, len(VERSION_SHADES)))] + [("removed in Kafka 4.0", REMOVED)]
    return _hbars(rows, title="requests per API and version (each API's versions, lowest first)", legend=legend,
                  unit="requests (each bar: one API, its versions stacked lowest first)", labels=labels)


def _chart_errors(d: ReportData) -> str:
    names = sorted({e["error"] for e in d.errors})
    colours = _colours(names)
    by_api: dict[str, list] = defaultdict(list)
    for e in d.errors:
        by_api[str(e["api"])].append((e["count"], colours[e["error"]], f"{e['api']}: {e['error']} ({e['code']}) "
                                                                        f"x{e['count']:,}"))
    rows = sorted(by_api.items(), key=lambda kv: -sum(v for v, _, _ in kv[1]))
    return _hbars(rows, title="error codes by API", legend=[(n, colours[n]) for n in names],
                  unit="responses carrying the error code (a response can carry several)")


def _chart_latency(d: ReportData) -> str:
    shades = (("p50", "#4e79a7"), ("p90", "#a0cbe8"), ("p99", "#f28e2b"))
    rows = [(f"{r['api']} ({r['count']:,})",
             [(r[k], c, f"{r['api']} {k}: {_ms(r[k])} ms") for k, c in shades]) for r in d.latency]
    markers = [(i, r["wait_ms"], f"{r['api']}: requests ask the broker to wait up to {r['wait_ms']:,} ms "
                                 f"({100 * r['waited_out']:.0f} % of responses came at the end of their wait)")
               for i, r in enumerate(d.latency) if r.get("wait_ms")]
    legend = [(f"{k}", c) for k, c in reversed(shades)] + ([("| the wait a long poll asked for", "#222222")]
                                                          if markers else [])
    return _hbars(rows, log=True, title="latency percentiles per API (ms, log scale)", fmt=lambda v: "",
                  tick_fmt=lambda v: f"{v:g}", legend=legend, markers=markers,
                  unit="latency, request to response (ms, log scale); | marks a long poll's wait") \
        if rows else '<p class="none">no paired responses</p>'


def _chart_topics(d: ReportData, what: str) -> str:
    colours = {"produce": "#59a14f", "fetch": "#4e79a7"}
    by: dict[str, dict[str, int]] = defaultdict(dict)
    for r in d.topics:
        by[str(r["topic"])][r["source"]] = r[what] or 0
    rows = sorted(by.items(), key=lambda kv: -sum(kv[1].values()))[:20]
    fmt = _mb if what == "bytes" else _num
    out = [(t, [(v.get(s, 0), colours[s], f"{t} {s}: {fmt(v.get(s, 0))}") for s in ("produce", "fetch")])
           for t, v in rows]
    return _hbars(out, fmt=fmt, title=f"{what} per topic", legend=list(colours.items()),
                  unit=("record-batch bytes" if what == "bytes" else "records") + " per topic, produced and fetched")


def _chart_codecs(d: ReportData) -> str:
    codecs = sorted({r["codec"] for r in d.codecs})
    colours = _colours(codecs)
    rows = []
    for source in ("produce", "fetch"):
        segs = [(r["batches"], colours[r["codec"]], f"{source} {r['codec']}: {r['batches']:,} batches, "
                                                    f"{_mb(r['bytes'])}")
                for r in d.codecs if r["source"] == source]
        if segs:
            rows.append((f"{source} (batches)", segs))
    return _hbars(rows, title="codec mix", legend=[(c, colours[c]) for c in codecs], unit="record batches")


DECODED, MISSING = "#59a14f", "#bab0ac"
#: the other reasons' colours: the palette without decoded's green and missing's grey, then
#: lighter shades for reasons beyond the known ones
_REASON_COLOURS = tuple(c for c in PALETTE if c not in (DECODED, MISSING)) + ("#a0cbe8", "#ffbe7d", "#d4a6c8")


def _reason_colours(reasons: Sequence[str]) -> dict[str, str]:
    """Decoded green, missing grey, and every other reason a colour of its own
    (the same reason the same colour in every report, while there are colours)."""
    known = [r for r in BYTE_REASONS if r != "decoded"]
    others = known + sorted(set(reasons) - set(BYTE_REASONS))
    return {r: DECODED if r == "decoded" else _REASON_COLOURS[others.index(r) % len(_REASON_COLOURS)]
            for r in reasons}


def _chart_accounting(acc) -> str:
    reasons = [r for r in BYTE_REASONS if acc.bytes.get(r)] + sorted(set(acc.bytes) - set(BYTE_REASONS))
    colours = _reason_colours(reasons)
    segs = [(acc.bytes[r], colours[r], f"{r}: {acc.bytes[r]:,} bytes") for r in reasons if acc.bytes[r] > 0]
    rows = [("TCP payload bytes", segs)]
    if acc.missing_bytes:
        rows.append(("missing from capture", [(acc.missing_bytes, MISSING, f"{acc.gaps} gaps")]))
    return _hbars(rows, fmt=_mb, title="where every captured byte went",
                  legend=[(r, colours[r]) for r in reasons if acc.bytes[r] > 0], unit="bytes")


# ---------------------------------------------------------------------------
# HTML


def _html_table(rows: Sequence[Sequence[object]], head: Sequence[str], cls: str = "") -> str:
    out = [f'<table class="{cls}"><thead><tr>' + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr></thead><tbody>"]
    for r in rows:
        out.append("<tr>" + "".join(f'<td class="{"n" if isinstance(c, (int, float)) else ""}">'
                                    f'{_e(_num(c) if isinstance(c, int) else c)}</td>' for c in r) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1100px;
color:#222;padding:0 16px}
h1{font-size:22px;margin-bottom:4px}h2{font-size:17px;margin-top:32px;border-bottom:1px solid #ddd;padding-bottom:4px}
.meta{color:#666}.cards{display:flex;flex-wrap:wrap;gap:12px;margin:16px 0}
.card{border:1px solid #ddd;border-radius:6px;padding:8px 14px;min-width:120px}
.card b{display:block;font-size:20px}.card span{color:#666;font-size:12px}
table{border-collapse:collapse;margin:8px 0;font-size:13px}th,td{border-bottom:1px solid #eee;padding:3px 10px;
text-align:left;vertical-align:top}td.n{text-align:right;font-variant-numeric:tabular-nums}
th{background:#f6f6f6}.removed td{color:#b00}.chip{display:inline-block;border:1px solid #ccc;border-radius:10px;
padding:0 7px;margin:1px;font-size:12px;white-space:nowrap}.chip.rm{border-color:#d62728;color:#d62728}
svg.chart{display:block;margin:8px 0}svg .lb{font-size:12px;fill:#333}svg .val{font-size:11px;fill:#555}
svg .lg{font-size:11px;fill:#333}svg .tick{font-size:10px;fill:#666}svg .unit{font-size:11px;fill:#444}
svg .grid{stroke:#e4e4e4;stroke-width:1}svg .axis{stroke:#888;stroke-width:1}svg .in{font-size:10px;fill:#fff}
svg .mark{stroke:#222;stroke-width:2;stroke-dasharray:3,2}
.none{color:#888}.ok{color:#2a7}.bad{color:#c00;font-weight:bold}
"""


def html_page(d: ReportData) -> str:
    """The report as one HTML document (inline CSS and SVG only)."""
    t = d.totals
    acc = d.accounting
    e = _e
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             "<title>Kafka traffic report</title>", f"<style>{_CSS}</style></head><body>",
             "<h1>Kafka traffic report</h1>",
             f'<p class="meta">{len(d.captures)} capture(s): ' + ", ".join(e(c["name"]) for c in d.captures[:10])
             + (" …" if len(d.captures) > 10 else "")
             + f" — {_mb(d.input_bytes)} in {d.seconds:.1f}s on {e(d.master)} ({_rate(d.input_bytes, d.seconds)}); "
             + "generated "
             + time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()) + "</p>",
             '<div class="cards">']
    cards = [(t.get("connections"), "Kafka connections")]
    if acc is not None and acc.syn_only:
        cards.append((acc.syn_only, "SYN only (no data)"))
    cards += [(len(d.clients), "client ids"),
             (t.get("requests"), "requests"), (t.get("responses"), "responses"),
             (sum(r["count"] for r in d.errors), "error codes"),
             (sum(r["requests"] for r in d.removed), "requests on removed versions"),
             (sum(r["requests"] for r in d.unanswered), "requests without a response"),
             (t.get("records"), "records")]
    for v, label in cards:
        parts.append(f'<div class="card"><b>{_num(v)}</b><span>{e(label)}</span></div>')
    parts.append("</div>")

    parts.append('<h2 id="versions">API × version use</h2>')
    parts.append('<figure id="chart-versions">' + _chart_api_versions(d) + "</figure>")
    by = _api_use_by_client(d)
    rows = []
    for (cid, sw), uses in sorted(by.items()):
        chips = "".join(f'<span class="chip{" rm" if u["removed"] else ""}" title="{u["requests"]:,} requests">'
                        f'{e(u["api"])} v{e(u["api_version"])} · {u["requests"]:,}</span>'
                        for u in sorted(uses, key=lambda u: (str(u["api"]), u["api_version"] or 0)))
        rows.append(f"<tr><td>{e(cid)}</td><td>{e(sw or '-')}</td><td>{chips}</td></tr>")
    parts.append("<table><thead><tr><th>client id</th><th>software (ApiVersions)</th><th>API vN · requests</th>"
                 "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>")

    parts.append('<h2 id="removed">Protocol versions removed in Kafka 4.0 still in use</h2>')
    removed = sorted(d.removed, key=lambda r: -r["requests"])
    if removed:
        parts.append("<p>These requests use versions that exist only in the older schema layer: a Kafka 4.0 broker "
                     "rejects them.</p>")
        parts.append(_html_table([(r["client_id"], r["software"] or "-", r["api"], r["api_version"], r["requests"])
                                  for r in removed], ("client id", "software", "API", "version", "requests"),
                                 "removed"))
    else:
        parts.append('<p class="ok">None: every request uses a version Kafka 4.0 still accepts.</p>')

    parts.append('<h2 id="errors">Error codes by API</h2>')
    parts.append('<figure id="chart-errors">' + _chart_errors(d) + "</figure>")
    if d.errors:
        parts.append(_html_table([(r["api"], r["error"], r["code"], r["count"]) for r in d.errors],
                                 ("API", "error", "code", "count")))
        parts.append("<h3>By capture and broker</h3>")
        parts.append(_html_table([(r["capture"], r["broker"], r["api"], r["error"], r["code"], r["count"])
                                  for r in d.errors_by[:200]], ("capture", "broker", "API", "error", "code", "count")))

    parts.append('<h2 id="latency">Latency per API</h2>')
    parts.append('<figure id="chart-latency">' + _chart_latency(d) + "</figure>")
    if any(r.get("wait_ms") for r in d.latency):
        parts.append("<p>Long polls (Fetch, ShareFetch: <code>max_wait_ms</code>; JoinGroup: the rebalance timeout) "
                     "are answered when there is data or when their wait runs out: a response at the end of its wait "
                     "is the broker waiting as asked, not slowness.  <i>waited out</i> is the share of responses "
                     "that came at 90 % of their request's wait or later; <i>answered early</i> gives the latency of "
                     "the others.</p>")
    parts.append(_html_table([_latency_cells(r) for r in d.latency],
                             ("API", "responses", "p50 ms", "p90 ms", "p99 ms", "max ms", "wait ms", "waited out",
                              "answered early: p50 ms", "p99 ms")))
    if len({(r["capture"], r["broker"]) for r in d.latency_by}) > 1:
        parts.append("<h3>By capture and broker</h3>")
        parts.append(_html_table([(r["capture"], r["broker"], r["api"], r["count"], _ms(r["p50"]), _ms(r["p90"]),
                                   _ms(r["p99"]), _ms(r["max"])) for r in d.latency_by[:300]],
                                 ("capture", "broker", "API", "responses", "p50 ms", "p90 ms", "p99 ms", "max ms")))

    parts.append('<h2 id="unanswered">Requests without a response</h2>')
    if d.unanswered:
        parts.append("<p>Requests whose connection ended, or whose capture ended, before their response came "
                     "(acks=0 Produce requests never get one).  Every one is in the <code>unanswered</code> table; "
                     "the earliest are listed here.</p>")
        parts.append(_html_table([(r["capture"], r["api"], r["client_id"], r["requests"]) for r in d.unanswered],
                                 ("capture", "API", "client id", "requests")))
        # a connection id names a connection: no thousands separators
        parts.append(_html_table([(r["ts"], r["api"], r["api_version"], r["client_id"], r["client"], r["server"],
                                   str(r["conn"])) for r in d.unanswered_rows[:50]],
                                 ("time (UTC)", "API", "version", "client id", "client", "broker", "conn")))
    else:
        parts.append('<p class="ok">None: every request got its response.</p>')

    parts.append('<h2 id="trailing">Frames with bytes after their message body</h2>')
    if d.trailing:
        parts.append("<p>Kafka's parser reads a message body and ignores what follows it in the frame; these "
                     "frames had such bytes (a client's quirk, or a body of another version than the header "
                     "says).  Each frame's count is in the <code>trailing_bytes</code> column.</p>")
        parts.append(_html_table([(r["kind"], r["api"], r["client_id"], r["frames"], r["bytes"]) for r in d.trailing],
                                 ("table", "API", "client id", "frames", "bytes after the body")))
    else:
        parts.append('<p class="ok">None.</p>')

    parts.append('<h2 id="topics">Produce and fetch per topic</h2>')
    parts.append('<figure id="chart-topic-bytes">' + _chart_topics(d, "bytes") + "</figure>")
    parts.append('<figure id="chart-topic-records">' + _chart_topics(d, "records") + "</figure>")
    parts.append(_html_table([(r["topic"], r["source"], r["records"], _mb(r["bytes"]), r["batches"], r["sets"])
                              for r in d.topics], ("topic", "direction", "records", "bytes", "batches",
                                                   "partition record sets")))

    parts.append('<h2 id="codecs">Codec mix</h2>')
    parts.append('<figure id="chart-codecs">' + _chart_codecs(d) + "</figure>")
    parts.append(_html_table([(r["source"], r["codec"], r["batches"], r["records"], _mb(r["bytes"]))
                              for r in d.codecs], ("direction", "codec", "batches", "records", "bytes")))

    parts.append('<h2 id="clients">Clients</h2>')
    parts.append(_html_table([(c["client_id"], ", ".join(c["software"]) or "-", c["connections"],
                               ", ".join(c["hosts"][:5])) for c in d.clients],
                             ("client id", "software", "connections", "hosts")))

    if d.decode_errors:
        parts.append('<h2 id="undecoded">Not decoded</h2>')
        parts.append(_html_table([(r["table"], r["api"], r["status"], r["count"], r["error"])
                                  for r in d.decode_errors], ("table", "API", "status", "count", "why")))

    parts.append('<h2 id="accounting">Accounting</h2>')
    if acc is not None:
        problems = acc.problems()
        parts.append("<p>Every packet, TCP payload byte and frame is decoded or counted under a reason. "
                     + ('<span class="ok">The ledgers add up.</span>' if not problems else
                        f'<span class="bad">The ledgers do not add up: {e("; ".join(problems))}</span>') + "</p>")
        parts.append('<figure id="chart-accounting">' + _chart_accounting(acc) + "</figure>")
        parts.append(_html_table(_accounting_rows(acc), ("ledger", "reason", "count", "bytes")))
        if acc.errors:
            parts.append("<ul>" + "".join(f"<li>{e(x)}</li>" for x in acc.errors) + "</ul>")
        if len(d.accounting_by_capture) > 1:
            parts.append(_html_table(
                [(name, a.packets_total, a.payload_bytes_total, a.bytes.get("decoded", 0),
                  sum(v for k, v in a.bytes.items() if k != "decoded"), a.missing_bytes, a.kafka_connections,
                  a.syn_only, "yes" if not a.problems() else "no")
                 for name, a in sorted(d.accounting_by_capture.items())],
                ("capture", "packets", "payload bytes", "decoded", "other reasons", "missing", "Kafka connections",
                 "SYN only", "adds up")))
    parts.append("<h2>Tables</h2><ul>" + "".join(f"<li><code>{e(k)}</code>: {e(v)}</li>" for k, v in d.tables.items())
                 + "</ul>")
    parts.append("</body></html>")
    return "\n".join(parts)

