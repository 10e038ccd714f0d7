"""The report's two engines write the same report: every committed capture
through the embedded engine (worker processes, no JVM) and through Spark
(local[2]), read whole and in byte ranges: equal tables and figures."""

from __future__ import annotations

import pytest

from kafkaproto.report import run_report
from kafkaproto.report.compare import compare
from support.report_helpers import SAMPLE

pytestmark = pytest.mark.spark

#: every committed capture: pcap files, and tap output folders
CAPTURES = sorted(p for p in SAMPLE.iterdir() if p.suffix in (".pcap", ".pcapng") or p.is_dir())


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.name)
def test_both_engines_write_the_same_report(spark, tmp_path, capture):
    embedded = run_report([str(capture)], tmp_path / "embedded", progress=False, workers=2)
    assert embedded.data.engine == "embedded" and not embedded.data.accounting.problems()
    on_spark = run_report([str(capture)], tmp_path / "spark", spark=spark, progress=False)
    assert on_spark.data.engine == "spark"
    same = compare(embedded.data.out, on_spark.data.out)
    assert all(same.values()), same
    if capture.suffix in (".pcap", ".pcapng"):
        # in byte ranges, on both engines: the positions cross between the stages, the payloads stay in the file
        kw = {"whole_file_max": 0, "range_bytes": 1 << 16}
        ranged = run_report([str(capture)], tmp_path / "embedded-ranges", progress=False, workers=2, **kw)
        spark_ranged = run_report([str(capture)], tmp_path / "spark-ranges", spark=spark, progress=False, **kw)
        assert ranged.data.tasks["byte ranges"] > 1
        for other in (ranged, spark_ranged):
            same = compare(embedded.data.out, other.data.out)
            assert all(same.values()), same


def test_the_embedded_engine_needs_no_jvm(tmp_path, monkeypatch):
    """No Spark session is made (no JVM starts) unless one is asked for."""
    import kafkaproto.report.job as job

    def no_session(*a, **k):
        raise AssertionError("a Spark session was made")

    monkeypatch.setattr(job, "session", no_session)
    result = run_report([str(SAMPLE / "kafka.pcap")], tmp_path / "out", progress=False)
    assert result.data.engine == "embedded" and result.data.totals["requests"] > 0
