"""pytest plugin loaded by `make sanitize` (tools/sanitize/run.sh).

The ASan runtime is LD_PRELOADed into the test interpreter; the programs the
tests start (java, tansu, kcat, a librdkafka mock) must not inherit it.  A
child Python that imports the sanitized kafkaproto needs it back: it is kept
in KAFKAPROTO_ASAN_PRELOAD for those (tests/test_fuzz.py).
"""

import os

_preload = os.environ.pop("LD_PRELOAD", None)
if _preload:
    os.environ["KAFKAPROTO_ASAN_PRELOAD"] = _preload
