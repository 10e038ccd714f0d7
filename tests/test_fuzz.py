"""The fuzz targets in CI (issue 7): each runs a few seconds under atheris,
seeded with its committed corpus, so that a decoder that starts crashing,
hanging or disagreeing with its twin fails the suite.  `make fuzz` runs the
same targets for as long as asked.
"""

import importlib.util
import os

import pytest

from support.fuzz_targets import TARGETS

pytestmark = pytest.mark.fuzz

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _runner():
    """fuzz/run.py, the script `make fuzz` runs, loaded from its file (it is no package)."""
    spec = importlib.util.spec_from_file_location("fuzz_run", os.path.join(ROOT, "fuzz", "run.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fuzz_run = _runner()

SECONDS = int(os.environ.get("KAFKAPROTO_FUZZ_SECONDS", "2"))


def corpus(target):
    return os.path.join(ROOT, "fuzz", "corpus", target)


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    """Every target, each for SECONDS: forked from one process that imported
    kafkaproto under atheris once, one per core at a time (more only slows
    each past its per-input timeout)."""
    work = str(tmp_path_factory.mktemp("fuzz"))
    return fuzz_run.run_targets(sorted(TARGETS), SECONDS, work, jobs=max(2, os.cpu_count() or 2))


def test_the_runner_knows_every_target():
    assert set(fuzz_run.TARGET_NAMES) == set(TARGETS)
    for target in TARGETS:
        assert os.listdir(corpus(target)), f"no seeds for {target}: run fuzz/make_corpus.py"


@pytest.mark.engine_independent  # every target compares both implementations itself
@pytest.mark.parametrize("target", sorted(TARGETS))
def test_target_runs_clean_under_atheris(campaign, target):
    returncode, executions, log = campaign[target]
    assert returncode == 0, log[-6000:]
    # every seed ran (libFuzzer replays the corpus before it starts mutating)
    assert executions >= len(os.listdir(corpus(target))), log[-2000:]


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_committed_corpus_replays_clean(target):
    # in this process: the public API is the implementation this pass tests
    assert fuzz_run.replay(target, [corpus(target)]) == len(os.listdir(corpus(target)))
