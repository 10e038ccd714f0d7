"""The compiled core against its pure-Python twin, one file per layer: every
test here runs in the compiled pass only (``compiled_only``) and requires the
same values, or the same errors (class, message, offset), from both.

- ``test_codec.py``: ``_codec`` (primitives, varint batches, frames, headers);
- ``test_engine.py``: ``messages._engine``, every message class;
- ``test_records.py``: ``records._batches`` (decoding and encoding);
- ``test_arrow.py``: the ``arrow`` loops (messages, headers, frame splitting,
  record batches, legacy message sets), buffers included;
- ``test_capture.py``: ``capture.walker._scan``, the capture fast path, against the
  Python loop and the twin.

The helpers they share with other tests are in ``tests/support``.
"""
