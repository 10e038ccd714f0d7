"""What several test files and the fuzz targets share: oracles, generators of
test data and helpers.  Nothing here is a test, and nothing here imports a
test module.

``tests/`` is on ``sys.path`` when pytest runs (the rootdir's conftest puts
it there), so the modules are imported as ``support.<module>``; inside the
package they import each other relatively.  The scripts outside ``tests/``
that use it put it there themselves: ``fuzz/run.py`` (which
``fuzz/make_corpus.py`` imports for that) and ``bench/report_bench.py``.

- :mod:`.twins`: the compiled modules and their pure-Python twins, side by
  side, and their Arrow buffers as plain bytes;
- :mod:`.arrow_expected`: the oracles of the Arrow decoders (the rows the
  object decoders say each frame or blob must give);
- :mod:`.records_util`: record batches as plain data, CRC fix-ups, record
  blobs of every format and codec;
- :mod:`.message_values`: random messages of any class and version (and a
  hypothesis strategy for them);
- :mod:`.live_helpers`: a connection to a real broker, recorded traffic
  decoded, a recording proxy's settled connections;
- :mod:`.spark_session`: the one local Spark session of a test run (the
  ``spark`` fixture);
- :mod:`.spark_cluster`: a standalone cluster and a Spark Connect server on
  127.0.0.1 for the cluster tests, kafkaproto's wheel for their executors;
- :mod:`.cli`: the command line as its own process, with the modules it
  imported;
- :mod:`.dist`: kafkaproto's sdist and wheel, built once per state of the
  sources for the packaging and cluster tests;
- :mod:`.report_helpers`: the report tests' damaged captures, headless
  Chromium;
- :mod:`.outcomes`: what a call gave (value, or error class, message and
  offset), the one comparison form of the twin tests and the fuzz targets;
- :mod:`.fuzz_targets`: the fuzz targets (run by ``fuzz/run.py`` and
  ``tests/test_fuzz.py``; their implementations ``IMPLS`` are used by other
  tests too);
- :mod:`.legacy_sets`: legacy (magic 0/1) message sets and their two
  comparisons (twin, object decoder) for the Arrow records tests;
- :mod:`.synthetic`: synthetic Kafka traffic as pcap/pcapng (bulk record
  batches, small frames, or both interleaved) for the report tests, demos,
  ``bench/report_bench.py`` and ``bench/capture_bench.py`` (also a script:
  ``python tests/support/synthetic.py --size 64M [--profile mixed] traffic.pcap``).
"""
