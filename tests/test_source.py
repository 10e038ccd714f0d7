"""Checks on the source itself: ruff, the import-linter contracts, the type
stubs against both implementations (mypy's stubtest), and a type check of a
program on the public API.  Their configuration is in pyproject.toml; mypy
keeps its cache under build/.

These checks do not depend on the engine in use (``engine_independent``):
ruff, import-linter and mypy read the source, and stubtest imports the twins
by name (what their stubs declare is defined in the twins themselves, not
taken from the layers that chose an engine).  Running the program does."""

import os
import pathlib
import re
import runpy
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
PKG = SRC / "kafkaproto"
TYPECHECK = ROOT / "tests" / "typecheck"


def run(*args, env=None):
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, env=env)


def compiled_modules() -> list[str]:
    """Every compiled module, by the .pyx it is built from (src/_codec.pyx is kafkaproto._codec)."""
    out = []
    for pyx in sorted(SRC.rglob("*.pyx")):
        parts = pyx.relative_to(SRC).with_suffix("").parts
        out.append(".".join(parts if parts[0] == "kafkaproto" else ("kafkaproto", *parts)))
    return out


def module_file(module: str, suffix: str) -> pathlib.Path:
    return SRC.joinpath(*module.split(".")).with_suffix(suffix)


@pytest.mark.engine_independent
def test_ruff():
    proc = run("-m", "ruff", "check", ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.engine_independent
def test_import_contracts():
    # The layer order and the core's dependencies: [tool.importlinter] in pyproject.toml.
    proc = run("-c", "import sys; from importlinter.cli import lint_imports; "
                     "sys.exit(lint_imports(no_cache=True, no_logo=True))")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


@pytest.mark.engine_independent
def test_every_compiled_module_has_a_stub_and_a_twin():
    modules = compiled_modules()
    assert "kafkaproto._codec" in modules and len(modules) >= 9
    for module in modules:
        assert module_file(module, ".pyi").is_file(), f"{module} has no stub"
        twin = module_file(module, ".py").with_name(module.rsplit(".", 1)[1] + "_py.py")
        assert twin.is_file(), f"{module} has no twin"


@pytest.mark.compiled_only
def test_stubs_describe_the_compiled_modules():
    proc = run("-m", "mypy.stubtest", "--mypy-config-file", "pyproject.toml",
               "--allowlist", str(TYPECHECK / "stubtest-allowlist.txt"), *compiled_modules())
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.engine_independent
def test_twins_do_not_contradict_the_stubs(tmp_path):
    """Each twin against its compiled module's stub: every name the stub declares,
    with a compatible signature (a twin may have helpers of its own)."""
    modules = compiled_modules()
    # mypy reads a copy of the package in which each twin has its module's stub;
    # the twins themselves are imported from the real one.
    copy = tmp_path / "kafkaproto"
    shutil.copytree(PKG, copy, ignore=shutil.ignore_patterns("*.so", "*.pyd", "*.c", "*.html", "__pycache__"))
    twins = []
    for module in modules:
        stub = copy.joinpath(*module.split(".")[1:]).with_suffix(".pyi")
        shutil.copy(stub, stub.with_name(stub.stem + "_py.pyi"))
        twins.append(module + "_py")
    # Errors of the package's own modules are not the question here, only the twins' stubs.
    config = tmp_path / "mypy.ini"
    config.write_text(
        f"[mypy]\ncache_dir = {ROOT / 'build' / 'mypy-cache-twins'}\n"
        "[mypy-pyarrow.*,pyspark.*,cramjam,crc32c]\nignore_missing_imports = True\n"
        "[mypy-kafkaproto.*]\nignore_errors = True\n"
        + "".join(f"[mypy-{twin}]\nignore_errors = False\n" for twin in twins))
    env = {**os.environ, "MYPYPATH": str(tmp_path)}
    proc = run("-m", "mypy.stubtest", "--mypy-config-file", str(config), "--ignore-missing-stub", *twins, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr


_ERROR = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+): error: (?P<text>.*)$", re.M)


@pytest.mark.engine_independent
def test_a_program_on_the_public_api_type_checks_and_misuse_is_reported():
    example, misuse = TYPECHECK / "example.py", TYPECHECK / "misuse.py"
    proc = run("-m", "mypy", "--config-file", "pyproject.toml", str(example.relative_to(ROOT)),
               str(misuse.relative_to(ROOT)))
    errors: dict[tuple[str, int], list[str]] = {}
    for m in _ERROR.finditer(proc.stdout):
        errors.setdefault((pathlib.Path(m["file"]).name, int(m["line"])), []).append(m["text"])
    expected = {}
    for n, line in enumerate(misuse.read_text().splitlines(), 1):
        if "  # E: " in line:
            expected[("misuse.py", n)] = line.split("  # E: ", 1)[1]
    assert len(expected) >= 10
    for where, text in expected.items():
        assert any(text in e for e in errors.get(where, [])), (where, text, proc.stdout)
    unexpected = {where: texts for where, texts in errors.items() if where not in expected}
    assert not unexpected, proc.stdout + proc.stderr
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the misuse, and nothing worse


def test_the_program_runs():
    runpy.run_path(str(TYPECHECK / "example.py"), run_name="__main__")
