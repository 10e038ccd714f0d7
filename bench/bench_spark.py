"""Spark local[2]: request-header decoding over 5 M frames through the column
function, against an identity arrow_udf over the same cached column.

Target (issue 5): at least half the throughput of the identity UDF.  Both
jobs write to Spark's ``noop`` sink, so the time is Spark → Python → Spark.
"""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafkaproto import encode_request
from kafkaproto import spark as kps
from kafkaproto.messages import request_class

N_FRAMES = 5_000_000
GROUP = "Spark local[2]: 5 M request frames through a column function"


@pytest.fixture(scope="module")
def frames_df(tmp_path_factory):
    shapes = [encode_request(request_class(key)(), v, 7, cid)[4:]
              for key, v, cid in [(0, 9, "producer-1"), (1, 12, "consumer-7"), (3, 12, None), (18, 3, "app"),
                                  (8, 8, "consumer-7"), (19, 7, "admin")]]
    sizes = np.array([len(s) for s in shapes], dtype=np.int64)
    pick = np.arange(N_FRAMES) % len(shapes)
    offsets = np.zeros(N_FRAMES + 1, dtype=np.int64)
    np.cumsum(sizes[pick], out=offsets[1:])
    data = np.frombuffer(b"".join(shapes), dtype=np.uint8)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    idx = (starts[pick][:, None] + np.arange(sizes.max())[None, :])
    mask = np.arange(sizes.max())[None, :] < sizes[pick][:, None]
    body = data[idx[mask]]
    frames = pa.Array.from_buffers(pa.large_binary(), N_FRAMES, [None, pa.py_buffer(offsets), pa.py_buffer(body)])
    path = tmp_path_factory.mktemp("spark") / "frames.parquet"
    pq.write_table(pa.table({"frame": frames.cast(pa.binary())}), path, row_group_size=500_000)
    session = kps.local_session("kafkaproto-bench", 2, {"spark.ui.enabled": "false"})
    session.sparkContext.setLogLevel("ERROR")
    df = session.read.parquet(str(path)).repartition(2).cache()
    assert df.count() == N_FRAMES
    yield df
    session.stop()


def _run(df, column):
    df.select(column).write.format("noop").mode("overwrite").save()


def test_spark_request_headers(benchmark, frames_df):
    benchmark.group = GROUP
    benchmark.extra_info["impl"] = "kafkaproto"
    benchmark.pedantic(_run, (frames_df, kps.request_headers("frame").alias("h")), rounds=3, iterations=1)
    benchmark.extra_info["M frames/s"] = round(N_FRAMES / benchmark.stats.stats.median / 1e6, 2)


def test_spark_identity_udf(benchmark, frames_df):
    from pyspark.sql.functions import arrow_udf

    @arrow_udf("binary")
    def identity(frames: pa.Array) -> pa.Array:
        return frames

    benchmark.group = GROUP
    benchmark.extra_info["impl"] = "identity arrow_udf"
    benchmark.pedantic(_run, (frames_df, identity("frame").alias("f")), rounds=3, iterations=1)
    benchmark.extra_info["M frames/s"] = round(N_FRAMES / benchmark.stats.stats.median / 1e6, 2)
