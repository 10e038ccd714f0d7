"""The command line as its own process, through the script's entry
(``kafkaproto.__main__.run``, what ``kafkaproto`` and ``python -m
kafkaproto`` call), with the modules it had imported when it ended."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def run_cli(args, modules_file: Path) -> tuple[subprocess.CompletedProcess, set[str]]:
    """``kafkaproto ARGS`` in a child process: (its finished process, output
    as bytes; the names in its ``sys.modules`` at exit, written to ``modules_file``)."""
    code = (f"import atexit, json, sys; atexit.register(lambda: json.dump(sorted(sys.modules), "
            f"open({str(modules_file)!r}, 'w'))); sys.argv = ['kafkaproto', *{[str(a) for a in args]!r}]; "
            "from kafkaproto.__main__ import run; run()")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True)
    return proc, set(json.loads(modules_file.read_text()))
