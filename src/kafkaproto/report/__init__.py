"""The traffic report: captured Kafka traffic → Parquet tables, a terminal
summary and a self-contained HTML page, on Spark.

>>> from kafkaproto.report import run_report
>>> result = run_report(["traffic.pcap", "tap-output/"], "report-out")     # doctest: +SKIP
>>> print(result.summary)                                                # doctest: +SKIP

Tables written under ``out`` (Parquet): ``connections``, ``requests``,
``responses`` (latency, error codes), ``records`` (Spark's Kafka-source
columns), ``record_sets`` (codec, batches and bytes of each partition's
records), ``accounting``; the page is ``out/report.html``, the figures
``out/report.json``.  Needs the ``spark`` extra (pyspark, pyarrow, pandas<3)
and Java.

Modules: :mod:`.decode` (one capture → rows, the work of one Spark task),
:mod:`.aggregate` (the figures' partial totals, kept by each task and merged
on the driver), :mod:`.job` (the Spark job), :mod:`.render` (text and
HTML with inline SVG charts).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

__all__ = ["ReportResult", "run_report"]


@dataclass
class ReportResult:
    data: object  # job.ReportData
    summary: str
    html_path: str


def run_report(captures, out, *, master: str | None = None, remote: str | None = None, spark=None,
               ports=None, progress: bool = True, conf: dict[str, str] | None = None, log=sys.stderr,
               payloads: bool = True, **split) -> ReportResult:
    """Run the report job over ``captures`` and write everything under ``out``.

    ``captures``: pcap/pcapng files, folders of them (a rolled capture), tap
    output folders or files, raw request streams, ``NAME=path,path...``, or
    ``{name: path or [paths]}`` (see :func:`kafkaproto.capture.open_capture`).
    ``spark``: a session (classic or Spark Connect); else one for ``master``
    or ``remote`` (``sc://host:port``).  ``payloads=False``: the records
    table's ``key``, ``value`` and ``headers`` left null (the records'
    contents neither copied nor kept; no figure reads them).  ``split``:
    ``range_bytes``, ``whole_file_max``, ``partitions``
    (:func:`kafkaproto.report.job.run_job`)."""
    from .job import output_folder, run_job, write_text
    from .render import html_page, summary

    with output_folder(out):  # held from the tables to the page: no other report writes there meanwhile
        data = run_job(captures, out, spark=spark, master=master, remote=remote, ports=ports, progress=progress,
                       conf=conf, log=log, payloads=payloads, **split)
        html_path = write_text(out, "report.html", html_page(data))
        text = summary(data, html_path)
        write_text(out, "summary.txt", text + "\n")
    return ReportResult(data, text, html_path)
