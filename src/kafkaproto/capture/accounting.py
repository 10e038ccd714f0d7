"""Where every packet, byte and frame of a capture went.

Three ledgers, each adding up to a total that was measured independently:

``packets``  every packet record of the file: ``tcp`` (went to reassembly),
             ``not_tcp``, ``not_ip``, ``ip_fragment``, ``malformed``,
             ``unsupported_link``.
``bytes``    every TCP payload byte present in the capture:
             ``decoded``, ``undecodable``, ``unpaired`` (a response whose
             request is not in the capture), ``framed`` (a whole frame not
             decoded yet), ``truncated`` (a frame cut by a gap or by the end of
             the capture), ``gap`` (bytes skipped to resynchronize after a gap:
             the rest of a frame whose start is missing), ``not_kafka``
             (connections that are not Kafka, or bytes that do not frame),
             ``duplicate`` (retransmitted or overlapping copies), ``not_kept``
             (frames the tap forwarded in pieces without keeping them: over
             its memory budget; their bytes that went, prefix included).
``frames``   every frame whose size prefix was seen: ``decoded``,
             ``undecodable``, ``unpaired``, ``framed``, ``truncated``,
             ``not_kept``.

Bytes that are *missing* from the capture (lost by the capture, or cut by
the snap length) are not in the ledger; they are counted apart as
``missing_bytes`` in ``gaps`` gaps.

Marks (:data:`MARKS`), counted apart from the ledgers: ``bad_timestamps``
(packets whose time stamp no nanosecond column can hold: read without a
time, their rows' ``ts`` is null); ``evicted_connections`` (connections
closed early because more were open than the reader keeps: their later
packets start a new connection, which resynchronizes); ``gaps_forced``
(holes declared gaps because more bytes waited behind them than the reader
keeps, per direction or in all); ``detections_forced`` (connections judged
Kafka or not on what they sent so far, because more bytes waited for
detection in all than the reader keeps); ``bad_rows`` (tap table rows that
are no frame -- no frame bytes, connection or direction -- skipped).
"""

from __future__ import annotations

from collections import Counter

__all__ = ["Accounting", "connections_text", "BYTE_REASONS", "FRAME_REASONS", "MARKS", "PACKET_REASONS"]

PACKET_REASONS = ("tcp", "not_tcp", "not_ip", "ip_fragment", "malformed", "unsupported_link")
BYTE_REASONS = ("decoded", "undecodable", "unpaired", "framed", "truncated", "gap", "not_kafka", "duplicate",
                "not_kept")
FRAME_REASONS = ("decoded", "undecodable", "unpaired", "framed", "truncated", "not_kept")
#: counters of things read but marked or cut short to keep the reader bounded
#: (not ledgers: what they count is also in the ledgers above) -> their wording
MARKS = {
    "bad_timestamps": "packets (or tap rows) with a time stamp out of range (read without a time)",
    "evicted_connections": "connections closed early: more were open than the reader keeps",
    "gaps_forced": "holes given up on: more bytes waited behind them than the reader keeps",
    "detections_forced": "connections judged Kafka or not early: more bytes waited for detection than kept",
    "bad_rows": "tap table rows that are no frame (no frame bytes, connection or direction): skipped",
}


class Accounting:
    """Counters for one capture (or many: :meth:`merge`)."""

    def __init__(self) -> None:
        self.packets: Counter = Counter()
        self.bytes: Counter = Counter()
        self.frames: Counter = Counter()
        self.packets_total = 0
        self.payload_bytes_total = 0  # TCP payload bytes present in the capture
        self.missing_bytes = 0
        self.gaps = 0
        self.connections = 0
        self.kafka_connections = 0  # connections with at least one Kafka frame
        self.syn_only = 0  # connection attempts that carried no payload byte (SYN, maybe SYN-ACK/RST/FIN)
        self.unanswered_requests = 0  # requests whose response never came (acks=0 Produce, cut captures)
        self.file_bytes = 0
        self.unread_bytes = 0  # file bytes after a damaged or cut record
        self.bad_timestamps = 0  # packets read without a time: theirs lies outside 1970..2262 (int64 ns)
        self.evicted_connections = 0  # open connections closed to admit new ones (Extractor.max_open_connections)
        self.gaps_forced = 0  # holes declared gaps because too many bytes waited behind them
        self.detections_forced = 0  # connections judged before detection had all it looks at (too many bytes held)
        self.bad_rows = 0  # tap table rows that are no frame, skipped
        self.errors: list[str] = []

    # -- updates -----------------------------------------------------------
    def frame(self, reason: str, nbytes: int) -> None:
        self.frames[reason] += 1
        self.bytes[reason] += nbytes

    def move(self, src: str, dst: str, nbytes: int, frames: int = 1) -> None:
        """Reclassify frames, e.g. ``framed`` -> ``decoded`` after decoding."""
        if src == dst:
            return
        for ledger, n in ((self.frames, frames), (self.bytes, nbytes)):
            ledger[src] -= n
            ledger[dst] += n
            if not ledger[src]:
                del ledger[src]

    def merge(self, other: Accounting) -> Accounting:
        for name in ("packets", "bytes", "frames"):
            getattr(self, name).update(getattr(other, name))
        for name in ("packets_total", "payload_bytes_total", "missing_bytes", "gaps", "connections",
                     "kafka_connections", "syn_only", "unanswered_requests", "file_bytes", "unread_bytes",
                     *MARKS):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.errors += other.errors
        return self

    # -- checks and views --------------------------------------------------
    def problems(self) -> list[str]:
        """Ways in which the ledgers do not add up (empty when all is well)."""
        out = []
        if sum(self.packets.values()) != self.packets_total:
            out.append(f"packets: {sum(self.packets.values())} classified, {self.packets_total} read")
        if sum(self.bytes.values()) != self.payload_bytes_total:
            out.append(f"bytes: {sum(self.bytes.values())} classified, {self.payload_bytes_total} captured")
        for ledger in ("packets", "bytes", "frames"):
            neg = {k: v for k, v in getattr(self, ledger).items() if v < 0}
            if neg:
                out.append(f"{ledger}: negative counts {neg}")
        return out

    def check(self) -> None:
        """Raise AssertionError if the ledgers do not add up."""
        bad = self.problems()
        if bad:
            raise AssertionError("; ".join(bad))

    @property
    def frames_total(self) -> int:
        return sum(self.frames.values())

    def rows(self) -> list[dict[str, object]]:
        """The table a report shows: one row per (ledger, reason)."""
        rows: list[dict[str, object]] = []
        for reason in PACKET_REASONS:
            if self.packets.get(reason):
                rows.append({"ledger": "packets", "reason": reason, "count": self.packets[reason], "bytes": None})
        reasons = list(BYTE_REASONS) + sorted(set(self.bytes) - set(BYTE_REASONS))
        for reason in reasons:
            if self.bytes.get(reason) or self.frames.get(reason):
                rows.append({"ledger": "stream", "reason": reason, "count": self.frames.get(reason, 0),
                             "bytes": self.bytes.get(reason, 0)})
        if self.gaps or self.missing_bytes:
            rows.append({"ledger": "missing", "reason": "gap", "count": self.gaps, "bytes": self.missing_bytes})
        for name in MARKS:
            if getattr(self, name):
                rows.append({"ledger": "marked", "reason": name, "count": getattr(self, name), "bytes": None})
        return rows

    def to_dict(self) -> dict[str, object]:
        return {
            "packets": dict(self.packets), "bytes": dict(self.bytes), "frames": dict(self.frames),
            "packets_total": self.packets_total, "payload_bytes_total": self.payload_bytes_total,
            "missing_bytes": self.missing_bytes, "gaps": self.gaps, "connections": self.connections,
            "kafka_connections": self.kafka_connections, "syn_only": self.syn_only,
            "unanswered_requests": self.unanswered_requests,
            "file_bytes": self.file_bytes, "unread_bytes": self.unread_bytes, "errors": list(self.errors),
            **{name: getattr(self, name) for name in MARKS},
        }

    def format(self) -> str:
        """A few lines for a terminal."""
        lines = []
        if self.packets_total:
            lines.append(f"packets: {self.packets_total} read: " + _join(self.packets, PACKET_REASONS))
        lines.append(f"bytes: {self.payload_bytes_total} in TCP payloads (or frames): "
                     + _join(self.bytes, BYTE_REASONS))
        lines.append(f"frames: {self.frames_total}: " + _join(self.frames, FRAME_REASONS))
        extra = [connections_text(self)]
        if self.gaps:
            extra.append(f"{self.gaps} gaps, {self.missing_bytes} bytes missing")
        if self.unanswered_requests:
            extra.append(f"{self.unanswered_requests} requests without a response")
        if self.unread_bytes:
            extra.append(f"{self.unread_bytes} file bytes unread")
        extra += [f"{getattr(self, name)} {text}" for name, text in MARKS.items() if getattr(self, name)]
        lines.append("; ".join(extra))
        lines += [f"error: {e}" for e in self.errors]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"Accounting({self.to_dict()!r})"


def connections_text(acc: Accounting) -> str:
    """``N TCP connections: K Kafka, S SYN only, O other`` (the one wording
    inspect, the summary and the page use)."""
    other = acc.connections - acc.kafka_connections - acc.syn_only
    parts = [f"{acc.kafka_connections} Kafka"]
    if acc.syn_only:
        parts.append(f"{acc.syn_only} SYN only (no data)")
    if other > 0:
        parts.append(f"{other} other")
    return f"{acc.connections} TCP connections: " + ", ".join(parts)


def _join(counter: Counter, order) -> str:
    keys = [k for k in order if counter.get(k)] + sorted(k for k in counter if k not in order and counter[k])
    return ", ".join(f"{k} {counter[k]}" for k in keys) or "none"
