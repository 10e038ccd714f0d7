# kafkaproto — everything a fresh machine needs goes through these targets.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.kafkaproto-installed
# mkdocs and Playwright for the documentation site and its tests (the docs extra)
DOCS_STAMP := $(VENV)/.kafkaproto-docs-installed
PYTEST_ARGS ?=
# A marker expression (pyproject.toml) narrowing both passes; empty: everything.
TEST_MARKERS ?=
# What `make quick` leaves out: Spark, real peers, clusters, fuzz campaigns, wheel builds,
# the documentation site in Chromium (its pages' code still runs).
QUICK_MARKERS := not spark and not peers and not cluster and not fuzz and not wheel and not docs
FUZZ_SECONDS ?= 60
FUZZ_JOBS ?= 2

.PHONY: all demo test quick test-compiled test-pure bench bench-report bench-capture wheel build regen check-generated peers clean fuzz fuzz-native sanitize docs

# Tests that need a real peer fail (never skip) when it cannot be started.
export KAFKAPROTO_REQUIRE_ORACLE := 1
export KAFKAPROTO_REQUIRE_PEERS := 1

all: build

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# Editable install with the test extras; Cython comes first because the
# extension is built without build isolation (faster, and offline-friendly).
$(STAMP): $(PY) pyproject.toml setup.py
	$(PY) -m pip install -q "Cython>=3.0.11,<4" "setuptools>=77" wheel
	$(PY) -m pip install -q --no-build-isolation -e ".[test,capture,spark]"
	touch $@

# Build the extension in place (src/kafkaproto/_codec*.so); fails if it cannot.
build: $(STAMP)
	KAFKAPROTO_REQUIRE_EXTENSION=1 $(PY) setup.py -q build_ext --inplace
	$(PY) -c "import kafkaproto, sys; sys.exit(0 if kafkaproto.COMPILED else 'compiled core did not load')"

# The traffic report on the committed samples, on the embedded engine (worker
# processes, no JVM), then the same captures through the Spark pipeline
# (local[2]; Java must be on the machine) and the two outputs compared.
DEMO_OUT ?= build/demo-report
DEMO_CAPTURES ?= samples/capture/kafka.pcap samples/capture/tap-tansu samples/capture/tap-mock \
	samples/capture/kafka44.pcap samples/capture/tap-kafka44
demo: build
	$(PY) -m kafkaproto report $(DEMO_CAPTURES) --out $(DEMO_OUT) --quiet
	@echo
	@echo "The same captures through the Spark pipeline (local[2]):"
	@$(PY) -m kafkaproto report $(DEMO_CAPTURES) --master "local[2]" --out $(DEMO_OUT)-spark --quiet \
		> $(DEMO_OUT)-spark.txt
	@head -n 1 $(DEMO_OUT)-spark.txt
	$(PY) -m kafkaproto.report.compare $(DEMO_OUT) $(DEMO_OUT)-spark

# The suite runs twice, side by side: against the compiled core (which must
# load) and against the pure-Python twin (without the tests marked
# engine_independent or compiled_only, which the first pass runs; the tests
# marked pure_pass run in the second pass only, to even the two out); each
# pass's output is shown when it ends.  tests/test_docs.py builds the
# documentation site and opens it in Chromium (from make peers).
test: build peers $(DOCS_STAMP)
	$(MAKE) --no-print-directory -j2 --output-sync=target test-compiled test-pure

# The inner loop: both passes without the slow kinds of test (no peers
# needed), side by side (two cores; each pass's output shown when it ends).
quick: build
	$(MAKE) --no-print-directory -j2 --output-sync=target test-compiled test-pure TEST_MARKERS="$(QUICK_MARKERS)"

# Real peers on loopback: Apache Kafka 4.4.0 (broker, tools, clients) and
# kafka-clients 3.9.1 from Maven Central, Kafka's Java classes as the oracle,
# the tansu broker, librdkafka's mock cluster and real clients.
peers: $(STAMP)
	bash tools/peers/fetch_kafka.sh
	bash tools/peers/setup_java_oracle.sh
	PYTHON=$(abspath $(PY)) bash tools/peers/install_peers.sh

test-compiled:
	KAFKAPROTO_EXPECT_COMPILED=1 $(PY) -m pytest -q -p no:cacheprovider \
		-m "$(if $(TEST_MARKERS),($(TEST_MARKERS)) and )not pure_pass" \
		$(PYTEST_ARGS) tests

test-pure:
	KAFKAPROTO_PURE=1 $(PY) -m pytest -q -p no:cacheprovider \
		-m "$(if $(TEST_MARKERS),($(TEST_MARKERS)) and )not compiled_only and not engine_independent" \
		$(PYTEST_ARGS) tests

# Every fuzz target (tests/support/fuzz_targets.py) under atheris for FUZZ_SECONDS each,
# FUZZ_JOBS at a time; inputs found go to build/fuzz/corpus, crashes to
# build/fuzz/artifacts (CI runs each for 2 s: tests/test_fuzz.py).
fuzz: build
	$(PY) fuzz/run.py --all $(FUZZ_SECONDS) --jobs $(FUZZ_JOBS)

# The same against a compiled core built with ASan + UBSan + libFuzzer coverage (clang).
fuzz-native: $(STAMP)
	PYTHON=$(abspath $(PY)) bash tools/sanitize/run.sh --fuzz $(FUZZ_SECONDS) --jobs $(FUZZ_JOBS)

# The compiled core under AddressSanitizer + UBSan: the fuzz corpora and the
# whole suite (PYTEST_ARGS narrows it); any report fails.
sanitize: $(STAMP) peers
	PYTHON=$(abspath $(PY)) bash tools/sanitize/run.sh $(PYTEST_ARGS)

bench: build
	$(PY) -m pip install -q -e ".[bench]" --no-build-isolation
	$(PY) -m pytest -q -p no:cacheprovider -o python_files="bench_*.py" bench --benchmark-columns=min,median,mean,stddev,rounds --benchmark-sort=name
	$(MAKE) --no-print-directory bench-report

# The report job on local[2] over a 1 GB synthetic capture as 1, 8 and 64
# files and a 2 GB single file (written once under build/bench-report/): MB/s
# per core warm, cold and with the session's start, and the shuffle's cost.
BENCH_REPORT_ARGS ?= --size 1G --big 2G --master local[2]
bench-report: build
	$(PY) bench/report_bench.py $(BENCH_REPORT_ARGS)

# The capture pipeline in CPU time per MB, stage by stage (the pcap read alone,
# the decode pass, inspect, the report whole / in byte ranges / rolled into 64
# files, a 200 kB capture end to end) beside tshark's Kafka dissector, over a
# synthetic mixed capture written once under build/bench-capture/ (tshark:
# make peers).  SIZE=256M for a quick run.
SIZE ?= 1G
BENCH_CAPTURE_ARGS ?=
bench-capture: build
	$(PY) bench/capture_bench.py --size $(SIZE) $(BENCH_CAPTURE_ARGS)

# The message classes and their stubs from Kafka's schemas (../shared/kafka-schemas);
# the test suite fails if the committed output differs from a fresh run.
regen: $(STAMP)
	$(PY) tools/generate_messages.py

check-generated: $(STAMP)
	$(PY) tools/generate_messages.py --check

# The documentation site into build/site/ (open build/site/index.html): guides
# from docs/*.md, the API reference from the docstrings and stubs.  --strict:
# a broken link or anchor, or a reference to an object that does not exist,
# fails the build.  tests/test_docs.py runs the pages' code and opens the site
# in headless Chromium.
$(DOCS_STAMP): $(STAMP)
	$(PY) -m pip install -q --no-build-isolation -e ".[docs]"
	touch $@

docs: build $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --clean --config-file mkdocs.yml --site-dir build/site

wheel: $(STAMP)
	$(PY) -m pip install -q build
	$(PY) -m build --outdir dist .

clean:
	rm -rf build dist wheelhouse src/_codec.c src/_codec.html src/kafkaproto/*.so src/*.egg-info
