#!/usr/bin/env bash
# Build kafkaproto._codec with AddressSanitizer and UndefinedBehaviorSanitizer
# (clang, runtime from Debian's libclang-rt) into build/ -- the normal
# in-place build is left alone -- and run Python against it.  Any sanitizer
# report fails the run.
#
#   PYTHON=.venv/bin/python tools/sanitize/run.sh [pytest args]   # make sanitize
#   PYTHON=.venv/bin/python tools/sanitize/run.sh --fuzz SECONDS  # make fuzz-native
#
# `make sanitize` replays the fuzz corpora and runs the test suite (default:
# all of it).  `make fuzz-native` adds libFuzzer's coverage hooks to the
# build and fuzzes every target with atheris, which then sees the compiled
# core's branches, not only the pure twin's.
#
# The interpreter is not instrumented: the ASan runtime is LD_PRELOADed into
# it, PYTHONMALLOC=malloc routes CPython's small objects through the
# intercepted malloc (so overflows of them are seen), and leak detection is
# off (CPython keeps its interned and cached objects until exit).
set -euo pipefail

PYTHON="${PYTHON:-python3}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
say() { printf 'sanitize: %s\n' "$*"; }

mode=test
if [ "${1:-}" = "--fuzz" ]; then
    mode=fuzz
    seconds="${2:?usage: run.sh --fuzz SECONDS}"
    shift 2
fi

if ! command -v clang >/dev/null 2>&1 || [ ! -e "$(clang -print-file-name=libclang_rt.asan-x86_64.so)" ]; then
    say "installing clang and its sanitizer runtime (Debian)"
    apt_get=(apt-get); [ "$(id -u)" -eq 0 ] || apt_get=(sudo apt-get)
    "${apt_get[@]}" install -y -q clang libclang-rt-14-dev >/dev/null || "${apt_get[@]}" install -y -q clang >/dev/null
fi

cd "$root"
if [ "$mode" = fuzz ]; then
    out="$root/build/fuzz-native"
    flavour=fuzzer
    # atheris ships libFuzzer linked with the ASan runtime: that one is preloaded
    preload="$("$PYTHON" -c 'import atheris, os; print(os.path.join(atheris.path(), "asan_with_fuzzer.so"))')"
else
    out="$root/build/sanitize"
    flavour=1
    preload="$(clang -print-file-name=libclang_rt.asan-x86_64.so)"
fi
[ -e "$preload" ] || { echo "sanitize: no ASan runtime at $preload" >&2; exit 1; }

say "building the extension (KAFKAPROTO_SANITIZE=$flavour) into ${out#"$root"/}"
KAFKAPROTO_SANITIZE=$flavour KAFKAPROTO_REQUIRE_EXTENSION=1 CC=clang LDSHARED="clang -shared" \
    "$PYTHON" setup.py -q build_ext --build-lib "$out/lib" --build-temp "$out/temp"
# A copy of the package with the sanitized extension in it, first on PYTHONPATH.
rm -rf "$out/pkg"
mkdir -p "$out/pkg"
cp -r src/kafkaproto "$out/pkg/"
find "$out/pkg" \( -name '*.so' -o -name '__pycache__' \) -prune -exec rm -rf {} +
# every compiled module (a module left out would fall back to its twin unseen)
(cd "$out/lib" && find kafkaproto -name '*.so' -exec cp --parents {} "$out/pkg/" \;)

# Reports go to files (pytest would swallow them with the output of the test
# that aborted) and are printed at the end: any report fails the run.
reports="$out/reports"
rm -rf "$reports"
mkdir -p "$reports"
show_reports() {
    if [ -n "$(ls -A "$reports")" ]; then
        echo "sanitize: REPORTS" >&2
        cat "$reports"/* >&2
        exit 1
    fi
}
trap show_reports EXIT

export LD_PRELOAD="$preload"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:log_path=$reports/asan"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$reports/ubsan"
export PYTHONMALLOC=malloc
export PYTHONPATH="$out/pkg${PYTHONPATH:+:$PYTHONPATH}"

"$PYTHON" -c "import kafkaproto, sys; f = kafkaproto._impl.codec.__file__; print('sanitize: using', f); \
mods = [kafkaproto._impl.load(m) for m in ('messages._engine', 'records._batches', 'arrow._records', 'arrow._messages')]; \
sys.exit(0 if kafkaproto.COMPILED and all('$out/pkg/' in m.__file__ for m in [kafkaproto._impl.codec] + mods) \
else 'the sanitized build did not load')"

if [ "$mode" = fuzz ]; then
    "$PYTHON" fuzz/run.py --all "$seconds" --work "$out/work" "$@"
    exit
fi

say "replaying the fuzz corpora"
for corpus in fuzz/corpus/*/; do
    "$PYTHON" fuzz/run.py --replay "$(basename "$corpus")" "$corpus"
done

say "running the test suite"
# The plugin takes LD_PRELOAD out of the environment of the programs the
# tests start (java, tansu, kcat): they are not ours to sanitize.
PYTHONPATH="$here:$PYTHONPATH" "$PYTHON" -m pytest -q -p no:cacheprovider -p sanitize_plugin "$@"
say "no sanitizer reports"
