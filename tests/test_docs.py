"""The documentation site: every python block of docs/*.md runs (a page's
blocks in order, in one namespace; those marked ``{test="spark"}`` on a Spark
session), and the built site (``make docs``, or built here) renders in
headless Chromium without console errors, and its search finds pages.

See tests/support/doc_blocks.py for the fences' attributes."""

from __future__ import annotations

import functools
import http.server
import os
import re
import shlex
import subprocess
import sys
import threading

import pytest

from support.doc_blocks import DOCS, ROOT, blocks, link_workdir, pages, run, spark_for

PAGES = [p for p in pages() if any(b.python for b in blocks(p))]
ALLOWED = re.compile(r"^(spark|skip: \S.*)$")


def _ids(p):
    return p.name


def _log_dir(tmp):
    from support.kafka_log import simple_partition

    root = tmp / "kafka-data"
    root.mkdir()
    simple_partition(root)  # orders-0: 600 records, every codec, several segments
    return {"log_dir": str(root)}


# What a page's code is handed besides the committed samples (the page says so).
GIVEN = {"log.md": _log_dir}


def _given(page, tmp):
    return GIVEN[page.name](tmp) if page.name in GIVEN else {}


@pytest.mark.engine_independent
def test_every_python_block_says_how_it_runs():
    seen = 0
    for page in pages():
        for b in blocks(page):
            if b.lang in ("py", "python3", "pycon"):
                pytest.fail(f"{b.where}: write python blocks as ```python (the tests run those)")
            if "{" in b.info:
                assert b.python and b.test is not None and ALLOWED.match(b.test), (
                    f"{b.where}: a fence attribute is {{test=\"spark\"}} or {{test=\"skip: why\"}} on a python block,"
                    f" not {b.info!r}")
            seen += b.python
    assert seen >= 20, seen


@pytest.mark.parametrize("page", [p for p in PAGES if any(b.python and b.test is None for b in blocks(p))], ids=_ids)
def test_page_code_runs(page, tmp_path):
    run([b for b in blocks(page) if b.python and b.test is None], link_workdir(tmp_path), **_given(page, tmp_path))


@pytest.mark.spark
@pytest.mark.parametrize("page", [p for p in PAGES if any(b.test == "spark" for b in blocks(p))], ids=_ids)
def test_page_code_runs_on_spark(page, tmp_path, request):
    run([b for b in blocks(page) if b.python and b.test in (None, "spark")], link_workdir(tmp_path),
        spark=spark_for(request), **_given(page, tmp_path))


def _commands(page):
    """The ``kafkaproto ...`` lines of a page's command blocks whose inputs
    are committed samples (the others name a reader's own files)."""
    out = []
    for b in blocks(page):
        if b.python:
            continue
        for line in b.code.splitlines():
            line = line.strip()
            if not line.startswith("kafkaproto ") or "|" in line or "<(" in line:
                continue
            args = shlex.split(line, comments=True)[1:]
            inputs = [a for a in args[1:] if not a.startswith("-") and "/" in a and a not in ("report/",)]
            if inputs and all(a.startswith("samples/") for a in inputs):
                out.append(args)
    return out


@pytest.mark.parametrize("page", [p for p in pages() if _commands(p)], ids=_ids)
def test_page_commands_run(page, tmp_path, capsys):
    from kafkaproto.__main__ import main

    here = os.getcwd()
    os.chdir(link_workdir(tmp_path))
    try:
        for args in _commands(page):
            assert main(args) == 0, args
            assert capsys.readouterr().out.strip(), args
    finally:
        os.chdir(here)


# ---------------------------------------------------------------------------
# The built site in a browser

SITE = ROOT / "build" / "site"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-extensions"]


@pytest.fixture(scope="module")
def site():
    """The site, built now (mkdocs --strict, as `make docs` does) so that the
    test sees the pages of this checkout; served on 127.0.0.1."""
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    got = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--clean", "--site-dir", str(SITE)],
                         cwd=ROOT, capture_output=True, text=True, env=env, timeout=600)
    assert got.returncode == 0, got.stderr[-5000:]
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(SITE))
    handler.log_message = lambda *a: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from playwright.sync_api import sync_playwright

    from support.report_helpers import chromium

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)
        yield b
        b.close()


def _page(browser):
    page = browser.new_page()
    problems = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
    return page, problems


def _site_pages():
    return sorted(p.relative_to(SITE).as_posix() for p in SITE.rglob("*.html") if p.name != "404.html")


@pytest.mark.docs
@pytest.mark.pure_pass
def test_every_page_renders(site, browser):
    names = _site_pages()
    expected = {f"{p.stem}.html" for p in DOCS.glob("*.md")} | {
        f"reference/{p.stem}.html" for p in (DOCS / "reference").glob("*.md")}
    assert expected <= set(names), expected - set(names)
    for name in names:
        page, problems = _page(browser)
        # "load": the page and everything it names have come (the search test
        # below waits for the network to go quiet, as its index loads after)
        page.goto(f"{site}/{name}", wait_until="load")
        assert page.locator("article h1").count() >= 1, name
        assert page.locator("nav.md-nav").count() >= 1, name
        # every API entry the reference renders has its heading and signature
        if name.startswith("reference/") and name != "reference/index.html":
            assert page.locator(".doc-heading").count() >= 1, name
        assert not problems, (name, problems)
        page.close()


@pytest.mark.docs
@pytest.mark.pure_pass
@pytest.mark.parametrize("query,expect", [("FrameReader", "frames"), ("read_committed", "consumer"),
                                          ("tap", "captures")])
def test_search_finds_pages(site, browser, query, expect):
    page, problems = _page(browser)
    page.goto(f"{site}/index.html", wait_until="networkidle")
    box = page.locator("input.md-search__input")
    box.click()
    box.press_sequentially(query, delay=20)  # typed, key by key, as a reader does
    results = page.locator(".md-search-result__item")
    results.first.wait_for(timeout=30_000)
    links = [results.nth(i).locator("a").first.get_attribute("href") for i in range(results.count())]
    assert any(expect in (href or "") for href in links), links
    assert not problems, problems
    page.close()
