"""pytest plugin loaded by `make sanitize` (tools/sanitize/run.sh).

The ASan runtime is LD_PRELOADed into the test interpreter, and the package
copy holding the sanitized extension is on PYTHONPATH.  The programs the
tests start (java, tansu, kcat, a librdkafka mock, a fresh venv's Python)
must inherit neither: a Python importing the sanitized extension without the
runtime preloaded fails.  A child that is meant to run the sanitized build
(the fuzz targets of tests/test_fuzz.py) gets both back from
KAFKAPROTO_ASAN_PRELOAD and KAFKAPROTO_ASAN_PYTHONPATH.
"""

import os

for _name in ("LD_PRELOAD", "PYTHONPATH"):
    _value = os.environ.pop(_name, None)
    if _value:
        os.environ[f"KAFKAPROTO_ASAN_{_name.replace('LD_', '')}"] = _value
