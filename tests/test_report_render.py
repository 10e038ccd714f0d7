"""The report's text summary and HTML page, rendered from figures made here
(no capture, no Spark): colours and number formats."""

from __future__ import annotations

import re

import pytest

from kafkaproto.capture import Accounting
from kafkaproto.capture.accounting import BYTE_REASONS
from kafkaproto.report.job import ReportData
from kafkaproto.report.render import html_page, summary

pytestmark = pytest.mark.engine_independent


def _figure(page: str, name: str) -> str:
    return re.search(rf'<figure id="{name}">(.*?)</figure>', page, re.S).group(1)


def test_every_accounting_reason_has_a_colour_of_its_own():
    acc = Accounting()
    for i, reason in enumerate((*BYTE_REASONS, "some_new_reason")):
        acc.frame(reason, 1000 * (i + 1))
    acc.missing_bytes, acc.gaps = 500, 2
    chart = _figure(html_page(ReportData(accounting=acc)), "chart-accounting")
    bars = dict(re.findall(r'fill="(#[0-9a-f]{6})"><title>([a-z_]+): [0-9,]+ bytes', chart))
    colour = {reason: fill for fill, reason in bars.items()}
    assert set(colour) == {*BYTE_REASONS, "some_new_reason"}, bars  # one fill per reason: none shared
    missing = re.search(r'fill="(#[0-9a-f]{6})"><title>2 gaps', chart).group(1)
    assert missing not in bars
    legend = dict(re.findall(r'fill="(#[0-9a-f]{6})"/><text[^>]*class="lg">([a-z_]+)<', chart))
    assert {reason: fill for fill, reason in legend.items()} == colour
    # a reason keeps its colour whichever others a capture has
    alone = Accounting()
    alone.frame("undecodable", 10)
    alone_chart = _figure(html_page(ReportData(accounting=alone)), "chart-accounting")
    assert f'fill="{colour["undecodable"]}"><title>undecodable' in alone_chart


def test_connection_ids_print_without_thousands_separators():
    rows = [{"ts": "2024-01-01 00:00:00", "capture": "c", "api": "Produce", "api_version": 9, "client_id": "app",
             "client": "10.0.0.1:5000", "server": "10.0.0.2:9092", "conn": 1234567}]
    d = ReportData(unanswered=[{"capture": "c", "api": "Produce", "client_id": "app", "requests": 1234}],
                   unanswered_rows=rows)
    page = html_page(d)
    section = page[page.index('id="unanswered"'):page.index('id="trailing"')]
    assert ">1234567<" in section and "1,234,567" not in section
    assert ">1,234<" in section  # a count keeps its separators
    text = summary(d)
    assert re.search(r"10\.0\.0\.2:9092\s+1234567\b", text) and "1,234,567" not in text
