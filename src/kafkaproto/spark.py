"""Spark helpers: the Arrow decoders of :mod:`kafkaproto.arrow` as column
functions, and a session builder.

>>> from kafkaproto import spark as kps
>>> session = kps.local_session()                       # local[2], PYSPARK_PYTHON set
>>> df = session.read.parquet("frames.parquet")         # a binary column "frame"
>>> headers = df.select(kps.request_headers("frame").alias("h")).select("h.*")
>>> metadata = df.where("h.api_key = 3").select(kps.messages("frame", 3).alias("m"))
>>> rows = kps.explode_records(fetched, "records", topic="topic", partition="partition")

Column functions run as ``arrow_udf`` where PySpark has it (4.1+), as
``pandas_udf`` otherwise; a batch of frames goes to the compiled loops in one
call.  A frame that does not decode gives nulls plus a message in the
struct's ``error`` field; :func:`errors` returns just that message.
:func:`explode_records` turns a column of records blobs into one row per
record with ``mapInArrow``, in the shape of Spark's Kafka source.

On a cluster the same code runs unchanged once kafkaproto is installed on the
executors: ship the wheel (``pip install kafkaproto-*.whl`` in the image; or
the wheel itself as an archive -- it is a zip: ``cp kafkaproto-*.whl
kafkaproto.zip``, then ``spark.archives=kafkaproto.zip#kafkaproto`` and
``spark.executorEnv.PYTHONPATH=kafkaproto``, compiled modules included; or
``spark-submit --py-files kafkaproto-*.whl`` for a pure-Python fallback, or a
packed virtualenv through ``spark.archives``); executors need pyarrow and numpy.
"""

from __future__ import annotations

import os
import sys

import pyarrow as pa

from . import arrow as _arrow

__all__ = ["errors", "explode_records", "local_session", "messages", "records_schema", "request_headers",
           "response_headers", "spark_type", "udf_kind"]


def local_session(app_name: str = "kafkaproto", cores: int = 2, conf: dict | None = None):
    """A local SparkSession whose Python workers run this interpreter.

    Sets ``PYSPARK_PYTHON`` (and the driver's) to :data:`sys.executable`, so the
    workers import the same kafkaproto, pyarrow and pandas as the driver, and
    the session time zone to UTC (Kafka timestamps are UTC milliseconds).
    ``conf`` adds builder settings (``{"spark.ui.enabled": "false"}``).
    """
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.master(f"local[{cores}]").appName(app_name)
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true"))
    for key, value in (conf or {}).items():
        builder = builder.config(key, str(value))
    return builder.getOrCreate()


def spark_type(arrow_type: pa.DataType):
    """The Spark SQL type of an Arrow type (large types map to the plain ones)."""
    from pyspark.sql.pandas.types import from_arrow_type

    return from_arrow_type(arrow_type)


def udf_kind() -> str:
    """``"arrow"`` when this PySpark has ``arrow_udf``, else ``"pandas"``."""
    from pyspark.sql import functions as F

    return "arrow" if hasattr(F, "arrow_udf") else "pandas"


def _to_pandas(out: pa.Array):
    """A struct array → what a struct-returning pandas_udf must return (a DataFrame)."""
    if isinstance(out, pa.ChunkedArray):
        out = out.combine_chunks()
    if pa.types.is_struct(out.type):
        return pa.Table.from_struct_array(out).to_pandas()
    return out.to_pandas()


def _from_pandas(series, typ=None):
    return pa.Array.from_pandas(series, type=typ)


def _hinted(fn):
    """``fn`` with the ``pa.Array`` type hints arrow_udf reads its kind from."""
    nargs = fn.__code__.co_argcount
    if nargs == 1:
        def one(a: pa.Array) -> pa.Array:
            return fn(a)
        return one
    if nargs == 2:
        def two(a: pa.Array, b: pa.Array) -> pa.Array:
            return fn(a, b)
        return two

    def three(a: pa.Array, b: pa.Array, c: pa.Array) -> pa.Array:
        return fn(a, b, c)
    return three


def _udf(fn, return_type: pa.DataType, kind: str | None = None):
    """Wrap ``fn(*pa.Array) -> pa.Array`` as a Spark column function."""
    from pyspark.sql import functions as F

    stype = spark_type(return_type)
    if (kind or udf_kind()) == "arrow":
        return F.arrow_udf(_hinted(fn), stype)
    def run(*series):
        return _to_pandas(fn(*[_from_pandas(s) for s in series]))

    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return F.pandas_udf(run, stype)


def _col(c):
    from pyspark.sql import Column
    from pyspark.sql import functions as F

    if isinstance(c, Column):
        return c
    if isinstance(c, str):
        return F.col(c)
    return F.lit(c)


def request_headers(frames, *, kind: str | None = None):
    """Column of request frames → struct (api_key, api_version, correlation_id, client_id, header_size, error)."""
    return _udf(lambda f: _arrow.request_headers(f), _arrow.REQUEST_HEADER_TYPE, kind)(_col(frames))


def response_headers(frames, api_key, api_version, *, kind: str | None = None):
    """Column of response frames → struct; ``api_key`` / ``api_version`` are column names, Columns or ints."""
    def run(f, k, v):
        return _arrow.response_headers(f, k, v)

    return _udf(run, _arrow.RESPONSE_HEADER_TYPE, kind)(_col(frames), _col(api_key), _col(api_version))


def messages(frames, api_key: int, direction: str = "request", api_version=None, *, kind: str | None = None):
    """Column of frames of one API key → struct of :func:`kafkaproto.arrow.message_type`.

    ``direction`` is ``"request"`` (the version comes from each frame's header)
    or ``"response"`` (``api_version``: a column name, Column or int).
    """
    typ = _arrow.message_type(api_key, direction)
    if direction == "request":
        return _udf(lambda f: _arrow.messages(f, api_key), typ, kind)(_col(frames))
    if api_version is None:
        raise TypeError("responses need api_version (a column or an int)")
    return _udf(lambda f, v: _arrow.messages(f, api_key, "response", v), typ, kind)(_col(frames), _col(api_version))


def errors(frames, api_key: int | None = None, direction: str = "request", api_version=None, *,
           kind: str | None = None):
    """Why each frame does not decode (null when it does): the request header
    only, or, with ``api_key``, the whole message."""
    if api_key is None:
        if direction != "request":
            raise TypeError("response frames need api_key and api_version")

        def run(f):
            return _arrow.request_headers(f).field("error")

        return _udf(run, pa.large_string(), kind)(_col(frames))
    if direction == "request":
        return _udf(lambda f: _arrow.messages(f, api_key).field("error"), pa.large_string(), kind)(_col(frames))
    if api_version is None:
        raise TypeError("responses need api_version (a column or an int)")
    return _udf(lambda f, v: _arrow.messages(f, api_key, "response", v).field("error"), pa.large_string(),
                kind)(_col(frames), _col(api_version))


def _jvm_type(t: pa.DataType) -> pa.DataType:
    """``t`` with 64-bit list offsets narrowed: Spark's JVM side reads no LargeList
    (a batch of Spark rows stays far below 2**31 list elements)."""
    if pa.types.is_large_list(t) or pa.types.is_list(t):
        return pa.list_(_jvm_type(t.value_type))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _jvm_type(f.type)) for f in t])
    return t


def records_schema(columns=None, keep_fields=()):
    """The Spark schema :func:`explode_records` produces."""
    from pyspark.sql.types import StructField, StructType

    fields = [f for f in _arrow.RECORDS_SCHEMA if columns is None or f.name in set(columns) | {"row", "error"}]
    return StructType([StructField(f.name, spark_type(f.type), True) for f in fields] + list(keep_fields))


def explode_records(df, column: str = "value", *, topic=None, partition=None, keep=(), columns=None,
                    check_crc: bool = True):
    """One row per record of the records blobs in ``df[column]`` (``mapInArrow``).

    The rows have the columns of Spark's Kafka source (:data:`kafkaproto.arrow.RECORDS_SCHEMA`;
    ``columns`` picks some: ``["offset", "timestamp"]`` copies no key or value),
    then ``row`` (the blob's index in its Arrow batch), ``error`` (one row of
    nulls with the error for a blob that does not decode), and the ``keep``
    columns of the blob's row.  ``topic`` / ``partition`` name input columns
    (or give constants) copied to each record.
    """
    keep = list(keep)
    by_name = {f.name: f for f in df.schema.fields}
    out_schema = records_schema(columns, [by_name[k] for k in keep])

    def arg(v):
        if v is None or not isinstance(v, str):
            return lambda batch: v
        return lambda batch: batch.column(v)

    get_topic, get_partition = arg(topic), arg(partition)

    def run(batches):
        target = None
        for batch in batches:
            table = _arrow.records(batch.column(column), topic=get_topic(batch), partition=get_partition(batch),
                                   columns=columns, check_crc=check_crc)
            rows = table.column("row")
            for name in keep:
                table = table.append_column(name, batch.column(name).take(rows))
            if target is None:
                target = pa.schema([pa.field(f.name, _jvm_type(f.type)) for f in table.schema])
            yield from table.cast(target).to_batches()

    return df.mapInArrow(run, out_schema)
