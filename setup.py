"""Build script: compiles src/_codec.pyx into kafkaproto._codec.

The extension is optional: when no compiler (or no Cython) is available the
package installs as pure Python and uses its twin, kafkaproto._codec_py.
Set KAFKAPROTO_REQUIRE_EXTENSION=1 to turn a failed build into an error
(CI and `make` do), KAFKAPROTO_DEBUG_BUILD=1 for annotate + linetrace, and
KAFKAPROTO_SANITIZE=1 for an AddressSanitizer/UBSan build (=fuzzer adds libFuzzer's
coverage hooks), KAFKAPROTO_QUICK_BUILD=1 for an unoptimised build (-O0, about a
third of the compile time: the test suite's packaging build, which checks that the
sdist compiles and its wheel loads; the suite runs the optimised modules in place).
"""
import os
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext

REQUIRE = os.environ.get("KAFKAPROTO_REQUIRE_EXTENSION") == "1"
DEBUG = os.environ.get("KAFKAPROTO_DEBUG_BUILD") == "1"
# "1": AddressSanitizer + UBSan (make sanitize); "fuzzer": the same plus libFuzzer's
# coverage hooks, so that atheris sees the compiled core's branches (make fuzz-native).
SANITIZE = os.environ.get("KAFKAPROTO_SANITIZE", "")
QUICK = os.environ.get("KAFKAPROTO_QUICK_BUILD") == "1"


def extensions():
    try:
        from Cython.Build import cythonize
    except ImportError:
        if REQUIRE:
            raise
        print("kafkaproto: Cython not available, installing the pure-Python twin only", file=sys.stderr)
        return []
    from setuptools import Extension

    compile_args, link_args, macros = [], [], []
    if sys.platform != "win32":
        # -g0: no debug information in release builds (it was three quarters of the
        # modules' size); KAFKAPROTO_DEBUG_BUILD=1 and sanitizer builds keep it
        compile_args += ["-O0" if QUICK else "-O3", "-fno-strict-aliasing"] + ([] if DEBUG else ["-g0"])
    if DEBUG:
        macros += [("CYTHON_TRACE_NOGIL", "1")]
    if SANITIZE:
        sanitizers = "address,undefined,fuzzer-no-link" if SANITIZE == "fuzzer" else "address,undefined"
        compile_args = ["-O1", "-g", "-fno-omit-frame-pointer", f"-fsanitize={sanitizers}"]
        link_args = [f"-fsanitize={sanitizers}"]
    # One compiled module per layer, each beside its pure-Python twin; they share
    # inline C through kafkaproto/_wire.pxd and the primitives through _codec.pxd.
    modules = {
        "kafkaproto._codec": "src/_codec.pyx",
        "kafkaproto._pairing": "src/kafkaproto/_pairing.pyx",
        "kafkaproto.messages._engine": "src/kafkaproto/messages/_engine.pyx",
        "kafkaproto.records._batches": "src/kafkaproto/records/_batches.pyx",
        "kafkaproto.arrow._columns": "src/kafkaproto/arrow/_columns.pyx",
        "kafkaproto.arrow._messages": "src/kafkaproto/arrow/_messages.pyx",
        "kafkaproto.arrow._headers": "src/kafkaproto/arrow/_headers.pyx",
        "kafkaproto.arrow._frames": "src/kafkaproto/arrow/_frames.pyx",
        "kafkaproto.arrow._records": "src/kafkaproto/arrow/_records.pyx",
        "kafkaproto.capture.walker._sink": "src/kafkaproto/capture/walker/_sink.pyx",
        "kafkaproto.capture.walker._judge": "src/kafkaproto/capture/walker/_judge.pyx",
        "kafkaproto.capture.walker._tcp": "src/kafkaproto/capture/walker/_tcp.pyx",
        "kafkaproto.capture.walker._index": "src/kafkaproto/capture/walker/_index.pyx",
        "kafkaproto.capture.walker._framing": "src/kafkaproto/capture/walker/_framing.pyx",
        "kafkaproto.capture.walker._resume": "src/kafkaproto/capture/walker/_resume.pyx",
        "kafkaproto.capture.walker._scan": "src/kafkaproto/capture/walker/_scan.pyx",
        "kafkaproto.log._text": "src/kafkaproto/log/_text.pyx",
    }
    exts = [Extension(name, [path], extra_compile_args=compile_args, extra_link_args=link_args,
                      define_macros=macros) for name, path in modules.items()]
    directives = {
        "language_level": "3",
        "boundscheck": False,
        "wraparound": False,
        "cdivision": True,
        "initializedcheck": False,
        "embedsignature": True,
        "freethreading_compatible": True,
    }
    if DEBUG:
        directives.update(linetrace=True, profile=True)
    return cythonize(exts, compiler_directives=directives, annotate=DEBUG, include_path=["src"],
                     nthreads=os.cpu_count() or 1)


class OptionalBuildExt(build_ext):
    """Let a wheel build without a compiler still install (pure twin); compile the
    modules in parallel (one per core) unless told otherwise."""

    def finalize_options(self):
        super().finalize_options()
        if self.parallel is None:
            self.parallel = os.cpu_count() or 1

    def run(self):
        try:
            super().run()
        except Exception as exc:  # pragma: no cover - depends on the toolchain
            if REQUIRE:
                raise
            print(f"kafkaproto: extension not built ({exc}); using the pure-Python twin", file=sys.stderr)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as exc:  # pragma: no cover
            if REQUIRE:
                raise
            print(f"kafkaproto: {ext.name} not built ({exc}); using the pure-Python twin", file=sys.stderr)


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
