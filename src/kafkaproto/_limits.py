"""Protocol limits shared by the compiled core and the pure twin."""

#: Kafka strings (legacy and compact) are at most 32767 UTF-8 bytes.
MAX_STRING_LENGTH = 0x7FFF

#: Default cap on one frame's size, Kafka's socket.request.max.bytes default (100 MiB).
DEFAULT_MAX_FRAME_SIZE = 104857600

# What one record batch may expand to in objects (issue 17).  The decompression
# cap bounds a batch's bytes, but a v2 record can be 7 bytes and a header 2, so
# 64 MiB of decompressed records can hold ~9.6 M records or ~33 M headers: a
# 6 KB zstd batch would become gigabytes of Python objects or Arrow rows.
# Real traffic stays far below both defaults: a batch is at most the topic's
# max.message.bytes (1 MiB by default), ~150,000 records of 7 bytes, and
# producers cut batches at batch.size (16 KiB by default).

#: Default cap on the records of one batch: the declared record count of a v2
#: batch (checked before anything is decompressed) and the inner messages of a
#: compressed legacy message.
DEFAULT_MAX_RECORDS_PER_BATCH = 1_000_000

#: Default cap on the headers of one record (checked before any is built).
#: Kafka sets no such limit; real records carry a handful (tracing, schema ids).
DEFAULT_MAX_HEADERS_PER_RECORD = 10_000

#: Default cap on the headers of all the records of one batch together (a
#: running total, checked before a record's headers are built).  The two caps
#: above multiply: 3,000 records of 10,000 2-byte headers pass both in 60 MB
#: of decompressed records, 30 M header objects or Arrow entries.  A real batch
#: is at most max.message.bytes (1 MiB by default): at most ~500,000 headers of
#: 2 bytes, and in practice a handful per record.
DEFAULT_MAX_HEADERS_PER_BATCH = 1_000_000

# What one decode call may expand to (issue 22).  The caps above bound one
# batch, and a blob may hold any number of batches: 20 batches of 1 M empty
# records are 13 KB of zstd, 20 M records (4 GB as objects).  These count across
# every batch of one ``records.decode`` (all the batches it yields),
# ``consume`` or ``arrow.records`` call (all the rows of its column).  The
# object path's defaults are the per-batch ones: a call costs at most what one
# batch at the caps may (a Fetch partition holds max.partition.fetch.bytes,
# 1 MiB by default).  An Arrow record costs under half of what an object one
# does, and a column holds the records fields of a whole Spark batch (10,000
# rows by default: 1.6 M records of 100 bytes in producers' 16 KiB batches),
# hence four times those.

#: Default cap on the records of one records.decode / consume call (the
#: declared counts of its v2 batches, checked before each is decompressed, and
#: its legacy messages).
DEFAULT_MAX_RECORDS_PER_CALL = 1_000_000
#: Default cap on the headers of one records.decode / consume call.
DEFAULT_MAX_HEADERS_PER_CALL = 1_000_000
#: Default cap on the bytes the batches of one records.decode / consume call
#: decompress to, together (each batch alone: ``max_decompressed_size``).
DEFAULT_MAX_DECOMPRESSED_PER_CALL = 64 * 1024 * 1024
#: The same three for one arrow.records call (every row of its column).
DEFAULT_ARROW_MAX_RECORDS_PER_CALL = 4_000_000
DEFAULT_ARROW_MAX_HEADERS_PER_CALL = 4_000_000
DEFAULT_ARROW_MAX_DECOMPRESSED_PER_CALL = 256 * 1024 * 1024

#: The largest count the wire can hold (record and header counts are int32).
_INT32_MAX = 0x7FFFFFFF
#: A batch's headers are a sum of int32 counts: the batch cap is an int64.
_INT64_MAX = 0x7FFFFFFFFFFFFFFF


def record_cap(value, name: str, least: int = 0, most: int = _INT32_MAX) -> int:
    """A record cap argument → an int in [least, most] (``None``: no cap)."""
    if value is None:
        return most
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int or None, got {type(value).__name__}")
    if value < least:
        raise ValueError(f"{name} must be >= {least}, got {value}")
    return min(int(value), most)


def record_caps(max_records_per_batch, max_headers_per_record, max_headers_per_batch) -> tuple[int, int, int]:
    """The three record caps, checked (a batch holds at least one record)."""
    if (type(max_records_per_batch) is int and type(max_headers_per_record) is int
            and type(max_headers_per_batch) is int and 1 <= max_records_per_batch <= _INT32_MAX
            and 0 <= max_headers_per_record <= _INT32_MAX and 0 <= max_headers_per_batch <= _INT64_MAX):
        return max_records_per_batch, max_headers_per_record, max_headers_per_batch  # in range already
    return (record_cap(max_records_per_batch, "max_records_per_batch", 1),
            record_cap(max_headers_per_record, "max_headers_per_record"),
            record_cap(max_headers_per_batch, "max_headers_per_batch", 0, _INT64_MAX))


def call_caps(max_records_per_call, max_headers_per_call, max_decompressed_per_call) -> tuple[int, int, int]:
    """The three per-call caps, checked (``None``: no cap)."""
    return (record_cap(max_records_per_call, "max_records_per_call", 0, _INT64_MAX),
            record_cap(max_headers_per_call, "max_headers_per_call", 0, _INT64_MAX),
            record_cap(max_decompressed_per_call, "max_decompressed_per_call", 0, _INT64_MAX))
