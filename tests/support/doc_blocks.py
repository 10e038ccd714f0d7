"""The code blocks of the documentation (docs/*.md, README.md), for the tests
that run them (tests/test_docs.py, tests/test_readme.py).

A page's ``python`` blocks run in order in one namespace, so a block may use
what an earlier one made.  The fence's info string may carry one attribute,
in the form GitHub and mkdocs both read as plain ``python``::

    ```python {test="spark"}                      runs in the Spark test of its page (``spark``: a session)
    ```python {test="skip: needs a broker"}       does not run; the reason is required

A ``print(...)`` line whose comment is ``# text`` must print ``text``.
Of the other blocks (shell commands, output), tests/test_docs.py runs the
``kafkaproto ...`` lines whose inputs are committed samples.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

FENCE = re.compile(r"^(?P<fence>```+)(?P<info>[^\n`]*)\n(?P<code>.*?)^(?P=fence)[ \t]*$", re.M | re.S)
ATTR = re.compile(r"""\{\s*test\s*=\s*"(?P<test>[^"]*)"\s*\}""")
PRINTED = re.compile(r"print\(.*\)\s+#\s*(.+)$")


@dataclass
class Block:
    page: Path
    line: int
    lang: str
    test: str | None  # None: runs; "spark": runs on Spark; "skip: why": does not run
    code: str
    info: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def python(self) -> bool:
        return self.lang == "python"

    @property
    def skipped(self) -> bool:
        return self.test is not None and self.test.startswith("skip")


def blocks(page: Path) -> list[Block]:
    text = page.read_text()
    out = []
    for m in FENCE.finditer(text):
        info = m.group("info").strip()
        lang = info.split("{", 1)[0].strip().split(" ", 1)[0] if info else ""
        attr = ATTR.search(info)
        out.append(Block(page, text.count("\n", 0, m.start()) + 1, lang, attr.group("test") if attr else None,
                         m.group("code"), info))
    return out


def pages() -> list[Path]:
    return sorted(DOCS.glob("*.md"))


def link_workdir(tmp: Path) -> Path:
    """A working folder for a page's code: the committed samples and examples
    are there under their names (``samples/capture/kafka.pcap``), anything the
    code writes stays in ``tmp``."""
    for name in ("samples", "examples"):
        (tmp / name).symlink_to(ROOT / name)
    return tmp


def run(page_blocks: list[Block], workdir: Path, **names) -> str:
    """Run the blocks in order in one namespace inside ``workdir``; what they printed."""
    ns = {"__name__": "docs", **names}
    out = io.StringIO()
    here = os.getcwd()
    os.chdir(workdir)
    try:
        with contextlib.redirect_stdout(out):
            for b in page_blocks:
                exec(compile(b.code, b.where, "exec"), ns)
    finally:
        os.chdir(here)
    printed = out.getvalue()
    for b in page_blocks:
        for k, line in enumerate(b.code.splitlines()):
            m = PRINTED.search(line)
            if m:
                assert m.group(1).strip() in printed, (
                    f"{b.page.name}:{b.line + 1 + k}: printed no {m.group(1).strip()!r}; it printed:\n{printed}")
    return printed


def spark_for(request):
    """The Spark session a page's ``{test="spark"}`` blocks get as ``spark``."""
    try:  # the run's one shared session, where tests/conftest.py has it
        return request.getfixturevalue("spark")
    except pytest.FixtureLookupError:
        from kafkaproto.spark import local_session

        return local_session()
