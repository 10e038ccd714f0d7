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


#: Python that a child process starts with: a finder that notes (with its stack) and
#: refuses every lookup of pandas, and at exit prints ``PANDAS LOOKUPS n`` and the stacks
WATCH_PANDAS = r'''
import atexit, sys, traceback
_pandas_lookups = []
class _WatchPandas:
    def find_spec(self, name, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            _pandas_lookups.append("".join(traceback.format_stack(limit=12)))
            raise ModuleNotFoundError("not here", name=name)
sys.meta_path.insert(0, _WatchPandas())
atexit.register(lambda: print("PANDAS LOOKUPS", len(_pandas_lookups), *_pandas_lookups, sep="\n"))
'''


def run_watching_pandas(code: str, args=()) -> subprocess.CompletedProcess:
    """``code`` in a child process that notes where pandas is looked up
    (:data:`WATCH_PANDAS`); its output as text."""
    return subprocess.run([sys.executable, "-c", WATCH_PANDAS + code, *map(str, args)], capture_output=True, text=True)


def no_pandas_lookup(proc: subprocess.CompletedProcess) -> bool:
    return proc.returncode == 0 and "PANDAS LOOKUPS\n0\n" in proc.stdout
