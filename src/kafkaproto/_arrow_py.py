"""Pure-Python twin of the compiled Arrow loops (``_arrow.pxi``).

Same inputs (a pyarrow binary array and its kind), same outputs (status codes
and plain buffers that :mod:`kafkaproto.arrow` wraps into Arrow arrays).  Rows
are decoded with the object decoders, then written into the same column
layout the compiled loops fill: union of every version's fields, absent → null.
"""

from __future__ import annotations

import struct

import numpy as np

from . import _kinds as K
from ._arrow_common import API_KEY, NULL_ROW, OK, TRUNCATED, VERSION, INVALID, header_versions
from .errors import KafkaProtocolError

COMPILED = False

_WIN_SHIFT = 30
_FIXED = {
    K.BOOL: ("u1", 1), K.INT8: ("i1", 1), K.INT16: ("<i2", 2), K.INT32: ("<i4", 4), K.INT64: ("<i8", 8),
    K.UINT16: ("<i4", 4), K.UINT32: ("<i8", 8), K.FLOAT64: ("<f8", 8), K.UUID: (None, 16),
}
_i16 = struct.Struct(">h")
_i32 = struct.Struct(">i")


def _rows(arr):
    return arr.to_pylist()


# ---------------------------------------------------------------------------
# columns


class _Col:
    """One column of the output tree; `what` is fixed, var, struct or list."""

    __slots__ = ("what", "kind", "valid", "values", "offs", "kids")

    def __init__(self, what, kind=None, kids=()):
        self.what = what
        self.kind = kind
        self.valid = bytearray()
        self.values = []
        self.offs = [0]
        self.kids = list(kids)

    def null(self):
        self.valid.append(0)
        if self.what == "fixed":
            self.values.append(None)
        elif self.what == "var":
            self.values.append(b"")
            self.offs.append(self.offs[-1])
        elif self.what == "list":
            self.offs.append(self.offs[-1])
        else:
            for k in self.kids:
                k.null()

    def put(self, v):
        self.valid.append(1)
        if self.what == "var":
            self.values.append(v)
            self.offs.append(self.offs[-1] + len(v))
        else:
            self.values.append(v)

    def export(self):
        n = len(self.valid)
        valid = np.frombuffer(bytes(self.valid), dtype=np.uint8)
        nulls = n - int(np.count_nonzero(valid))
        bitmap = _bits(valid) if nulls else None
        if self.what == "fixed":
            dtype, width = _FIXED[self.kind]
            if dtype is None:
                data = b"".join(bytes(16) if v is None else v for v in self.values)
            else:
                data = np.array([0 if v is None else v for v in self.values], dtype=dtype)
                data = _bits(data) if self.kind == K.BOOL else data.tobytes()
            bufs = (data,)
        elif self.what == "var":
            bufs = (np.array(self.offs, dtype="<i8").tobytes(), b"".join(self.values))
        elif self.what == "list":
            bufs = (np.array(self.offs, dtype="<i8").tobytes(),)
        else:
            bufs = ()
        return (n, nulls, bitmap, bufs, tuple(k.export() for k in self.kids))


def _bits(values) -> bytes:
    return np.packbits(np.asarray(values, dtype=np.uint8), bitorder="little").tobytes()


def _scalar_col(kind):
    return _Col("fixed" if kind in _FIXED else "var", kind)


def _struct_cols(cls):
    kids = []
    for f in cls._FIELDS:
        if f.kind == K.ARRAY:
            kid = _Col("list")
            kid.kids.append(_struct_cols(f.struct) if f.elem == K.STRUCT else _scalar_col(f.elem))
        elif f.kind == K.STRUCT:
            kid = _struct_cols(f.struct)
        else:
            kid = _scalar_col(f.kind)
        kids.append(kid)
    return _Col("struct", kids=kids)


def _scalar(kind, v):
    if kind == K.STRING:
        return v.encode("utf-8")
    if kind in (K.BYTES, K.RECORDS):
        return bytes(v)
    if kind == K.UUID:
        return v.bytes
    if kind == K.BOOL:
        return 1 if v else 0
    return v


def _put_value(col, kind, struct_cls, v, version):
    if v is None:
        col.null()
    elif kind == K.STRUCT:
        _put_struct(col, struct_cls, v, version)
    else:
        col.put(_scalar(kind, v))


def _put_struct(col, cls, obj, version):
    for f, kid in zip(cls._FIELDS, col.kids):
        if not f.versions >> version & 1:
            kid.null()
            continue
        v = getattr(obj, f.attr)
        if f.kind != K.ARRAY:
            _put_value(kid, f.kind, f.struct, v, version)
        elif v is None:
            kid.null()
        else:
            elem = kid.kids[0]
            for x in v:
                _put_value(elem, f.elem, f.struct, x, version)
            kid.valid.append(1)
            kid.offs.append(len(elem.valid))
    col.valid.append(1)


# ---------------------------------------------------------------------------
# messages


def _decode_request(frame, cls):
    from .headers import decode_request_header

    if len(frame) < 4:
        return TRUNCATED, None, None
    api_key, version = struct.unpack_from(">hh", frame, 0)
    if api_key != cls.API_KEY:
        return API_KEY, None, None
    if not cls.supports(version):
        return VERSION, None, None
    hv = header_versions(cls.API_KEY, True)[version]
    _, body = decode_request_header(frame, int(hv))
    return OK, cls.decode(frame, version, body), version


def _decode_response(frame, cls, version):
    from .headers import decode_response_header

    if version is None or not 0 <= version < 64 or not cls.supports(version):
        return VERSION, None, None
    hv = header_versions(cls.API_KEY, False)[version]
    _, body = decode_response_header(frame, int(hv))
    try:
        return OK, cls.decode(frame, version, body), version
    except KafkaProtocolError:
        # KIP-511: an unknown ApiVersions version is answered with a v0 body and error 35
        if cls.API_KEY != 18 or version == 0:
            raise
        msg = cls.decode(frame, 0, body)
        if msg.error_code != 35:
            raise
        return OK, msg, 0


def arrow_messages(arr, kind, cls, versions=None, vvalid=None):
    rows = _rows(arr)
    n = len(rows)
    status = np.zeros(n, dtype=np.uint8)
    root = _struct_cols(cls)
    for i, frame in enumerate(rows):
        try:
            if frame is None:
                st, obj, v = NULL_ROW, None, None
            elif cls.KIND == "request":
                st, obj, v = _decode_request(frame, cls)
            else:
                ver = None if vvalid is not None and not vvalid[i] else int(versions[i])
                st, obj, v = _decode_response(frame, cls, ver)
        except KafkaProtocolError:
            st, obj, v = INVALID, None, None
        if st == OK:
            _put_struct(root, cls, obj, v)
        else:
            status[i] = st
            for kid in root.kids:
                kid.null()
            root.valid.append(1)
    return status, root.export()


# ---------------------------------------------------------------------------
# headers


def arrow_request_headers(arr, kind, hv_table):
    from .headers import decode_request_header

    rows = _rows(arr)
    n = len(rows)
    status = np.zeros(n, dtype=np.uint8)
    key = np.zeros(n, dtype=np.int16)
    ver = np.zeros(n, dtype=np.int16)
    corr = np.zeros(n, dtype=np.int32)
    hsize = np.zeros(n, dtype=np.int32)
    cid = _Col("var", K.STRING)
    for i, frame in enumerate(rows):
        if frame is None:
            status[i] = NULL_ROW
            cid.null()
            continue
        if len(frame) < 4:
            status[i] = TRUNCATED
            cid.null()
            continue
        k, v = struct.unpack_from(">hh", frame, 0)
        if not 0 <= k < hv_table.shape[0] or hv_table[k, 0] == -2:
            status[i] = API_KEY
            cid.null()
            continue
        if not 0 <= v < 64 or hv_table[k, v] < 0:
            status[i] = VERSION
            cid.null()
            continue
        try:
            h, end = decode_request_header(frame, int(hv_table[k, v]))
        except KafkaProtocolError:
            status[i] = INVALID
            cid.null()
            continue
        key[i], ver[i], corr[i], hsize[i] = k, v, h.correlation_id, end
        if h.client_id is None:
            cid.null()
        else:
            cid.put(h.client_id.encode("utf-8"))
    return status, key, ver, corr, hsize, cid.export()


def arrow_response_headers(arr, kind, hv_table, keys, versions, kvalid):
    from .headers import decode_response_header

    rows = _rows(arr)
    n = len(rows)
    status = np.zeros(n, dtype=np.uint8)
    corr = np.zeros(n, dtype=np.int32)
    hsize = np.zeros(n, dtype=np.int32)
    for i, frame in enumerate(rows):
        k, v = int(keys[i]), int(versions[i])
        if frame is None:
            status[i] = NULL_ROW
        elif not kvalid[i] or not 0 <= k < hv_table.shape[0] or hv_table[k, 0] == -2:
            status[i] = API_KEY
        elif not 0 <= v < 64 or hv_table[k, v] < 0:
            status[i] = VERSION
        else:
            try:
                h, end = decode_response_header(frame, int(hv_table[k, v]))
            except KafkaProtocolError:
                status[i] = INVALID
                continue
            corr[i], hsize[i] = h.correlation_id, end
    return status, corr, hsize


# ---------------------------------------------------------------------------
# split frames


def arrow_split_frames(arr, kind, max_frame_size, views):
    """Same buffers as the compiled splitter: a view per frame (region 0 = the
    input's data buffer, side buffer for frames that straddle chunks), or
    copied bodies with int64 offsets."""
    bufs = arr.buffers()
    data_len = bufs[2].size if len(bufs) > 2 and bufs[2] is not None else 0
    side_base = (data_len >> _WIN_SHIFT) + 1
    offsets = arr.buffers()[1]
    wide = kind == 1
    view_out, offs, out = bytearray(), [0], bytearray()
    carry = bytearray()
    consumed = 0
    stream_at = 0
    bad_at, bad_size = -1, 0
    mask = (1 << _WIN_SHIFT) - 1

    def emit(body, region_pos):
        if not views:
            out.extend(body)
            offs.append(len(out))
            return
        size = len(body)
        if size <= 12:
            view_out.extend(struct.pack("<i", size) + bytes(body) + bytes(12 - size))
            return
        if region_pos is None:
            pos = len(out)
            out.extend(body)
            bi = side_base + (pos >> _WIN_SHIFT)
        else:
            pos = region_pos
            bi = pos >> _WIN_SHIFT
        view_out.extend(struct.pack("<i", size) + bytes(body[:4]) + struct.pack("<ii", bi, pos & mask))

    def bad(size):
        return size < 0 or (max_frame_size >= 0 and size > max_frame_size)

    for j, chunk in enumerate(arr.to_pylist()):
        if chunk is None:
            continue
        idx = arr.offset + j
        base = int(np.frombuffer(offsets, dtype="<i8" if wide else "<i4", count=idx + 1)[idx])
        n = len(chunk)
        pos = 0
        if bad_at >= 0:
            carry.extend(chunk)
            stream_at += n
            continue
        if carry:
            if len(carry) < 4:
                need = min(4 - len(carry), n)
                carry.extend(chunk[:need])
                pos = need
                if len(carry) < 4:
                    stream_at += n
                    continue
                size = _i32.unpack_from(carry, 0)[0]
                if bad(size):
                    bad_at, bad_size = consumed, size
                    carry.extend(chunk[pos:])
                    stream_at += n
                    continue
            size = _i32.unpack_from(carry, 0)[0]
            need = 4 + size - len(carry)
            if need > n - pos:
                carry.extend(chunk[pos:])
                stream_at += n
                continue
            carry.extend(chunk[pos:pos + need])
            pos += need
            emit(bytes(carry[4:]), None)
            consumed += len(carry)
            carry = bytearray()
        while pos + 4 <= n:
            size = _i32.unpack_from(chunk, pos)[0]
            if bad(size):
                bad_at, bad_size = stream_at + pos, size
                break
            if size > n - pos - 4:
                break
            emit(chunk[pos + 4:pos + 4 + size], base + pos + 4)
            pos += 4 + size
            consumed = stream_at + pos
        carry.extend(chunk[pos:])
        stream_at += n
    count = len(view_out) // 16 if views else len(offs) - 1
    return {
        "n": count,
        "views": bytes(view_out) if views else None,
        "offsets": None if views else np.array(offs, dtype="<i8").tobytes(),
        "data": bytes(out),
        "side_base": side_base,
        "tail": bytes(carry),
        "consumed": consumed,
        "bad_at": bad_at,
        "bad_size": bad_size,
    }


# ---------------------------------------------------------------------------
# records

_US_LIMIT = 9223372036854775


def _records_cols(want):
    """key, value, offset, timestamp, timestampType, headers, row (None where not asked for)."""
    make = [
        lambda: _Col("var", K.BYTES), lambda: _Col("var", K.BYTES), lambda: _Col("fixed", K.INT64),
        lambda: _Col("fixed", K.INT64), lambda: _Col("fixed", K.INT32),
        lambda: _Col("list", kids=[_Col("struct", kids=[_Col("var", K.STRING), _Col("var", K.BYTES)])]),
        lambda: _Col("fixed", K.INT64),
    ]
    return [m() if w else None for m, w in zip(make, want)]


def _put_record(cols, rec, row):
    key, value, offset, ts, ts_type, headers, rows = cols
    for col, blob in ((key, rec.key), (value, rec.value)):
        if col is not None:
            col.null() if blob is None else col.put(bytes(blob))
    if offset is not None:
        offset.put(rec.offset)
    if ts is not None:
        ts.put(rec.timestamp * 1000) if -_US_LIMIT <= rec.timestamp <= _US_LIMIT else ts.null()
    if ts_type is not None:
        ts_type.put(rec.timestamp_type)
    if headers is not None:
        if not rec.headers:
            headers.null()
        else:
            pairs = headers.kids[0]
            for k, v in rec.headers:
                pairs.kids[0].put(k.encode("utf-8"))
                pairs.kids[1].null() if v is None else pairs.kids[1].put(bytes(v))
                pairs.valid.append(1)
            headers.valid.append(1)
            headers.offs.append(len(pairs.valid))
    rows.put(row)


def arrow_records(arr, kind, check_crc, max_decompressed_size, want):
    from .records import decode

    cols = _records_cols(want)
    present = [c for c in cols if c is not None]
    root = _Col("struct", kids=present)
    rows = _rows(arr)
    status = np.zeros(len(rows), dtype=np.uint8)
    for i, blob in enumerate(rows):
        recs = None
        if blob is not None:
            try:
                recs = [r for b in decode(blob, check_crc=check_crc, max_decompressed_size=max_decompressed_size)
                        for r in b.records if r.control is None]
            except KafkaProtocolError:
                recs = None
        if recs is None:
            status[i] = 1
            for c in present:
                c.null()
            cols[6].values[-1] = i
            cols[6].valid[-1] = 1
            root.valid.append(1)
            continue
        for rec in recs:
            _put_record(cols, rec, i)
            root.valid.append(1)
    return status, root.export()


__all__ = ["COMPILED", "arrow_messages", "arrow_records", "arrow_request_headers", "arrow_response_headers",
           "arrow_split_frames"]
