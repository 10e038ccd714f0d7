"""The README's "Write a broker" and "Write a proxy" sections run as they are,
and print what their comments say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def section_code(title: str) -> str:
    body = README.split(f"### {title}\n", 1)[1].split("\n#", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", body, re.S)
    assert blocks, f"no python block under {title!r}"
    return "\n".join(blocks)


@pytest.mark.parametrize("title,printed", [("Write a broker", "0\n"), ("Write a proxy", "proxy 19092\n")])
def test_readme_section_runs(title, printed):
    code = section_code(title)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, f"README.md ({title})", "exec"), {"__name__": "readme"})
    assert out.getvalue() == printed
    for line in code.splitlines():  # each "# value" comment on a print line is what it prints
        m = re.search(r"print\(.*\)\s+#\s*(.+)$", line)
        if m:
            assert m.group(1).strip() in printed
