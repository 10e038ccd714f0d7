"""Pure-Python twin of ``_text.pyx``: DumpLogSegments' lines for the batches and records of a window."""

from __future__ import annotations

COMPILED = False

_I32_MAX = 2**31 - 1
_CONTROL = {0: b"ABORT", 1: b"COMMIT", 2: b"LEADER_CHANGE", 3: b"SNAPSHOT_HEADER", 4: b"SNAPSHOT_FOOTER",
            5: b"KRAFT_VERSION", 6: b"KRAFT_VOTERS"}


def _text(b: bytes) -> bytes:
    """Bytes as Java's new String(bytes, UTF_8) shows them."""
    try:
        b.decode("utf-8")
        return b
    except UnicodeDecodeError:
        return b.decode("utf-8", "replace").encode("utf-8")


def dump_lines(counts, bl_offs, bl_data, magic, attrs, base_offset, base_seq, ctl_type, ctl_epoch, offset, ts_ms,
               ts_ok, k_offs, k_data, k_ok, v_offs, v_data, v_ok, h_offs, hk_offs, hk_data, crcs, deep, data,
               skip_meta) -> bytes:
    bl_data, k_data, v_data, hk_data = (bytes(x) for x in (bl_data, k_data, v_data, hk_data))
    out = []
    r = 0
    for b in range(len(counts)):
        out.append(bl_data[bl_offs[b] - bl_offs[0]:bl_offs[b + 1] - bl_offs[0]])
        if not deep:
            continue
        m, at = int(magic[b]), int(attrs[b])
        ctl = m >= 2 and bool(at & 0x20)
        start, r_end = r, r + int(counts[b])
        for r in range(start, r_end):
            line = []
            first = True
            if not skip_meta:
                first = False
                kind = b"NoTimestampType" if m == 0 else b"LogAppendTime" if at & 0x08 else b"CreateTime"
                ts = b"%d" % ts_ms[r] if ts_ok[r] else b"null"
                ks = int(k_offs[r + 1] - k_offs[r]) if k_ok[r] else -1
                vs = int(v_offs[r + 1] - v_offs[r]) if v_ok[r] else -1
                line.append(b"| offset: %d %s: %s keySize: %d valueSize: %d" % (offset[r], kind, ts, ks, vs))
                if m >= 2:
                    if base_seq[b] < 0:
                        seq = -1
                    else:
                        seq = int(base_seq[b] + offset[r] - base_offset[b])
                        seq = seq - _I32_MAX - 1 if seq > _I32_MAX else seq
                    keys = [hk_data[hk_offs[j] - hk_offs[0]:hk_offs[j + 1] - hk_offs[0]]
                            for j in range(h_offs[r], h_offs[r + 1])]
                    line.append(b" sequence: %d headerKeys: [%s]" % (seq, b",".join(keys)))
                else:
                    line.append(b" isValid: true crc: %d" % crcs[r])
                if ctl:
                    t = int(ctl_type[b])
                    if t in (0, 1):
                        line.append(b" endTxnMarker: %s coordinatorEpoch: %d" % (_CONTROL[t], ctl_epoch[b]))
                    else:
                        line.append(b" controlType: %s(%d)" % (_CONTROL.get(t, b"UNKNOWN"), t))
            if data and not ctl:
                if k_ok[r]:
                    line.append((b"| key: " if first else b" key: ") +
                                _text(k_data[k_offs[r] - k_offs[0]:k_offs[r + 1] - k_offs[0]]))
                    first = False
                if v_ok[r]:
                    line.append((b"| payload: " if first else b" payload: ") +
                                _text(v_data[v_offs[r] - v_offs[0]:v_offs[r + 1] - v_offs[0]]))
            line.append(b"\n")
            out.append(b"".join(line))
        r = r_end
    return b"".join(out)
