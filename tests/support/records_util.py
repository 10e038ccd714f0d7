"""Helpers shared by the record-batch tests."""

import struct

import crc32c


def rec_tuple(r):
    """A record as plain data (memoryviews → bytes) for comparisons."""
    plain = (lambda v: None if v is None else bytes(v))
    return (r.offset, r.timestamp, r.timestamp_type, r.attributes, plain(r.key), plain(r.value),
            [(k, plain(v)) for k, v in r.headers], r.control)


def batch_tuple(b):
    if b.truncated:
        return ("truncated", b.offset, b.available, b.size, b.base_offset)
    return ("batch", b.header(), [rec_tuple(r) for r in b.records])


def decode_plain(mod, blob, **kw):
    """Decode with an implementation module (_codec or _records_py) → plain data."""
    kw.setdefault("check_crc", True)
    kw.setdefault("max_decompressed_size", 64 << 20)
    kw.setdefault("copy", True)
    return [batch_tuple(b) for b in mod.decode_record_batches(blob, kw["check_crc"], kw["max_decompressed_size"],
                                                                kw["copy"])]


def outcome(fn):
    """("ok", value) or ("err", class name, message, offset)."""
    try:
        return ("ok", fn())
    except Exception as exc:  # noqa: BLE001 - the class is what is compared
        return ("err", type(exc).__name__, str(exc), getattr(exc, "offset", None))


def fix_crc(blob: bytearray, at: int = 0) -> bytearray:
    """Recompute the CRC32C of the v2 batch at ``at`` (after editing it)."""
    size = struct.unpack_from(">i", blob, at + 8)[0]
    struct.pack_into(">I", blob, at + 17, crc32c.crc32c(bytes(blob[at + 21 : at + 12 + size])))
    return blob
