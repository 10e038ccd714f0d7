"""The README: its code runs as written and prints what its comments say
(its Spark block on the run's Spark session), it stays short, and every link
in it leads to a page of docs/ or to an absolute address.

The README is also the package's long description (pyproject ``readme``).
Its links into the documentation are relative paths to ``docs/*.md``: they
work in the repository and in the sdist, and each is also a page of the
site (``docs/X.md`` → ``X.html``)."""

from __future__ import annotations

import re

import pytest

from support.doc_blocks import ROOT, blocks, link_workdir, run, spark_for

README = ROOT / "README.md"
BLOCKS = [b for b in blocks(README) if b.python]


def test_readme_code_runs(tmp_path):
    run([b for b in BLOCKS if b.test is None], link_workdir(tmp_path))


@pytest.mark.spark
def test_readme_spark_code_runs(tmp_path, request):
    assert any(b.test == "spark" for b in BLOCKS)
    run([b for b in BLOCKS if b.test in (None, "spark")], link_workdir(tmp_path), spark=spark_for(request))


@pytest.mark.engine_independent
def test_readme_is_short_and_its_links_resolve():
    text = README.read_text()
    assert len(text.splitlines()) <= 200
    links = re.findall(r"\]\(([^)]+)\)", text)
    assert links
    for link in links:
        if re.match(r"https?://", link):
            continue
        path = link.split("#", 1)[0]
        assert path.startswith("docs/") and path.endswith(".md") and (ROOT / path).is_file(), link
    assert not any(b.skipped for b in blocks(README))
