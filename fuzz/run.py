"""Run a fuzz target (see tests/support/fuzz_targets.py) under atheris, or replay inputs.

    python fuzz/run.py TARGET [libFuzzer options] [CORPUS_DIR ...]
    python fuzz/run.py --all SECONDS [--jobs N] [--work DIR] [TARGET ...]   # what `make fuzz` runs
    python fuzz/run.py --replay TARGET PATH ...     # files or directories, no atheris needed

libFuzzer writes the new inputs it finds into the *first* corpus directory:
pass a scratch directory first and the committed ``fuzz/corpus/TARGET`` after
it to keep the committed seeds unchanged (``make fuzz`` does).

Coverage comes from the pure twin, which atheris instruments; the compiled
core is not instrumented (it would need a clang ``-fsanitize=fuzzer-no-link``
build) but runs on every input next to the twin, so a divergence between the
two, or a crash in the compiled code, still stops the run.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
# The targets are in the tests' support package (tests/support/fuzz_targets.py),
# beside the oracles they share with the tests.  The one path set-up of the
# fuzz scripts: tests/ on sys.path so that ``support`` imports (make_corpus.py
# imports this module for it; under pytest tests/ is there already).
TESTS = os.path.join(os.path.dirname(HERE), "tests")
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)

TARGET_NAMES = ("frames", "headers", "request", "response", "messages", "records", "records_packed", "capture",
                "arrow", "proxy", "encode")


def _inputs(paths):
    for path in paths:
        if os.path.isdir(path):
            for name in sorted(os.listdir(path)):
                full = os.path.join(path, name)
                if os.path.isfile(full):
                    yield full
        else:
            yield path


def replay(target, paths):
    """Run the check of ``target`` on every file; returns the number of inputs."""
    from support.fuzz_targets import TARGETS

    check = TARGETS[target]
    n = 0
    for path in _inputs(paths):
        with open(path, "rb") as f:
            data = f.read()
        try:
            check(data)
        except BaseException:
            print(f"{target}: {path} fails", file=sys.stderr)
            raise
        n += 1
    return n


def _instrumented():
    """atheris, and the targets with kafkaproto imported under its instrumentation
    (the pure twin's branches are what it sees): a few CPU-seconds, once a process."""
    import atheris

    with atheris.instrument_imports(include=["kafkaproto"]):
        import kafkaproto  # noqa: F401
        from kafkaproto.messages import CLASSES, get

        # the generated classes load lazily: load them here so they are instrumented too
        for name in CLASSES:
            get(name)
        from support.fuzz_targets import TARGETS
    return atheris, TARGETS


def fuzz(target, argv):
    atheris, targets = _instrumented()
    atheris.Setup([sys.argv[0], *argv], targets[target])
    atheris.Fuzz()


def _options(target, seconds, work, extra=()):
    """libFuzzer's arguments for ``target``: new inputs go to ``work/corpus/<target>``
    (the committed seeds are read, never written), a crashing input is saved as
    ``work/artifacts/<target>-crash-*``."""
    corpus = os.path.join(work, "corpus", target)
    artifacts = os.path.join(work, "artifacts")
    os.makedirs(corpus, exist_ok=True)
    os.makedirs(artifacts, exist_ok=True)
    return [f"-max_total_time={seconds}", "-timeout=10", "-rss_limit_mb=4096", "-max_len=8192",
            "-print_final_stats=1", f"-artifact_prefix={os.path.join(artifacts, target)}-", *extra,
            corpus, os.path.join(HERE, "corpus", target)]


def _child_env():
    env = dict(os.environ)
    if env.get("KAFKAPROTO_ASAN_PRELOAD"):  # under `make sanitize`: the child runs the sanitized build too
        env["LD_PRELOAD"] = env["KAFKAPROTO_ASAN_PRELOAD"]
        env["PYTHONPATH"] = env.get("KAFKAPROTO_ASAN_PYTHONPATH", "")
    return env


def _executions(log):
    m = re.search(r"stat::number_of_executed_units:\s*(\d+)", log)
    return int(m.group(1)) if m else 0


def run_target(target, seconds, work, extra=()):
    """Fuzz ``target`` for ``seconds`` in a child process of its own → (returncode, executions, log text)."""
    cmd = [sys.executable, os.path.abspath(__file__), target, *_options(target, seconds, work, extra)]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=_child_env(),
                          timeout=seconds + 300)
    log = proc.stdout.decode("utf-8", "replace")
    with open(os.path.join(work, f"{target}.log"), "w") as f:
        f.write(log)
    return proc.returncode, _executions(log), log


def run_targets(targets, seconds, work, jobs=2, extra=()):
    """Fuzz every target of ``targets`` for ``seconds`` → {target: (returncode, executions, log text)}.

    One child process imports kafkaproto under atheris once (:func:`_serve`) and
    forks a fuzzer per target, ``jobs`` at a time: the instrumented import is
    most of a short run's cost, paid once rather than per target."""
    targets = list(targets)
    os.makedirs(work, exist_ok=True)
    for target in targets:
        for suffix in (".log", ".rc"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(work, target + suffix))
    cmd = [sys.executable, os.path.abspath(__file__), "--serve", str(seconds), work, str(jobs), *targets]
    rounds = -(-len(targets) // max(1, jobs))
    # unbuffered: a fuzzer's last words (the uncaught exception) reach its log before libFuzzer exits
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          env={**_child_env(), "PYTHONUNBUFFERED": "1"}, timeout=300 + rounds * (seconds + 60))
    server = proc.stdout.decode("utf-8", "replace")
    results = {}
    for target in targets:
        try:
            with open(os.path.join(work, target + ".rc")) as f:
                rc = int(f.read())
            with open(os.path.join(work, target + ".log"), encoding="utf-8", errors="replace") as f:
                log = f.read()
        except FileNotFoundError:  # the server failed before this target ran
            rc, log = proc.returncode or 1, f"fuzz server (exit {proc.returncode}):\n{server}"
        results[target] = (rc, _executions(log), log)
    return results


def _serve(seconds, work, jobs, targets, extra=()):
    """Instrument once, then fork a fuzzer per target (``jobs`` at a time), each with
    its output in ``work/<target>.log`` and its exit status in ``work/<target>.rc``."""
    atheris, checks = _instrumented()
    pending, running = list(targets), {}
    while pending or running:
        while pending and len(running) < jobs:
            target = pending.pop(0)
            argv = [sys.argv[0], *_options(target, seconds, work, extra)]
            log = os.open(os.path.join(work, target + ".log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:  # the fuzzer: libFuzzer ends the process itself
                try:
                    os.dup2(log, 1)
                    os.dup2(log, 2)
                    atheris.Setup(argv, checks[target])
                    atheris.Fuzz()
                except BaseException:
                    traceback.print_exc()
                finally:
                    os._exit(70)
            os.close(log)
            running[pid] = target
        pid, status = os.wait()
        target = running.pop(pid, None)
        if target is not None:
            with open(os.path.join(work, target + ".rc"), "w") as f:
                f.write(str(os.waitstatus_to_exitcode(status)))


def run_all(seconds, targets=TARGET_NAMES, jobs=2, work=None):
    """Fuzz every target; prints one line per target, returns the failed ones."""
    work = os.path.abspath(work or os.path.join(os.path.dirname(HERE), "build", "fuzz"))
    results = run_targets(targets, seconds, work, jobs)
    failed = []
    for target, (rc, execs, log) in results.items():
        print(f"fuzz {target:9s} {execs:9d} executions in {seconds}s  {'ok' if rc == 0 else f'FAILED (exit {rc})'}")
        if rc != 0:
            failed.append(target)
            tail = log[log.find("=== Uncaught") if "=== Uncaught" in log else -3000:]
            print(tail[-6000:], file=sys.stderr)
    return failed


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "--all":
        ap = argparse.ArgumentParser(prog="run.py --all")
        ap.add_argument("seconds", type=int)
        ap.add_argument("--jobs", type=int, default=2)
        ap.add_argument("--work", default=None, help="scratch directory (default build/fuzz)")
        ap.add_argument("targets", nargs="*", default=list(TARGET_NAMES))
        args = ap.parse_intermixed_args(argv[1:])
        sys.exit(1 if run_all(args.seconds, args.targets, args.jobs, args.work) else 0)
    if argv and argv[0] == "--serve":  # run_targets' child: SECONDS WORK JOBS TARGET ...
        _serve(int(argv[1]), argv[2], int(argv[3]), argv[4:])
        return
    if argv and argv[0] == "--replay":
        if len(argv) < 3:
            sys.exit("usage: run.py --replay TARGET PATH ...")
        start = time.monotonic()
        n = replay(argv[1], argv[2:])
        print(f"{argv[1]}: {n} inputs replayed in {time.monotonic() - start:.1f}s")
        return
    if not argv:
        sys.exit("usage: run.py TARGET [libFuzzer options] [CORPUS_DIR ...]")
    fuzz(argv[0], argv[1:])


if __name__ == "__main__":
    main()
