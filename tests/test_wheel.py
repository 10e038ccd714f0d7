"""The sdist and wheel build, install into a fresh venv, and load the compiled core.

The installed package chooses its engine itself (``KAFKAPROTO_PURE`` is not
passed on): these tests do not depend on the pass that runs them."""

import os
import subprocess
import sys
import zipfile

import numpy
import pytest

from support.dist import built_dist, source_state

pytestmark = [pytest.mark.wheel, pytest.mark.engine_independent]

# The environment of the installed package: this one without the choice of engine.
ENV = {k: v for k, v in os.environ.items() if k != "KAFKAPROTO_PURE"}


def run(*cmd, **kw):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    assert proc.returncode == 0, f"{cmd}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def test_wheel_installs_and_loads_the_compiled_core(tmp_path):
    # sdist first, then the wheel from the sdist: checks MANIFEST.in too
    wheel, _sdist = built_dist(tmp_path / "dist")
    # a build leaves the sources' state as it was: the run's later users take this wheel
    assert wheel.parent.name == source_state()
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.startswith("kafkaproto/_codec") and n.endswith((".so", ".pyd")) for n in names)
    assert "kafkaproto/messages/_gen/metadata.py" in names
    # type information: the marker, the compiled modules' stubs, the generated messages' stubs
    assert {"kafkaproto/py.typed", "kafkaproto/_codec.pyi", "kafkaproto/arrow/_records.pyi",
            "kafkaproto/messages/_gen/metadata.pyi", "kafkaproto/messages/_gen/__init__.pyi"} <= set(names)
    assert not any(n.endswith(".json") for n in names)  # no schema file is shipped
    assert not any(n.startswith("kafkaproto/report/synthetic") for n in names)  # test support (tests/support/)
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv)  # this pip installs into it: no copy of pip to make
    py = venv / "bin" / "python"
    run(sys.executable, "-m", "pip", "--python", py, "install", "-q", wheel)
    out = run(py, "-c", "import kafkaproto, sys;"
                        "from kafkaproto.messages import ApiVersionsRequest as A;"
                        "print(kafkaproto.COMPILED, A(client_software_name='x').encode(3).hex())",
              cwd=tmp_path, env=ENV)
    assert out.split() == ["True", "02780100"]


def test_without_a_compiler_the_wheel_still_works_on_the_twin(tmp_path):
    dist = tmp_path / "dist"
    env = {k: v for k, v in ENV.items() if k != "KAFKAPROTO_REQUIRE_EXTENSION"}
    env["CC"] = "false"  # every compile fails
    # the sdist (the one the test above checks), as pip builds it on a machine without a compiler
    _wheel, sdist = built_dist(tmp_path / "built")
    run(sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-w", dist, sdist, env=env)
    wheel = next(dist.glob("kafkaproto-*.whl"))
    assert not any(n.endswith((".so", ".pyd")) for n in zipfile.ZipFile(wheel).namelist())
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv)
    py = venv / "bin" / "python"
    run(sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", tmp_path / "site", wheel)
    # its dependencies (numpy, cramjam, crc32c) from this interpreter's site-packages,
    # read as a plain path: the editable install of kafkaproto there is a .pth file, not loaded
    deps = os.path.dirname(os.path.dirname(numpy.__file__))
    out = run(py, "-c", "import kafkaproto;"
                        "from kafkaproto.messages import ApiVersionsRequest as A;"
                        "print(kafkaproto.COMPILED, A(client_software_name='x').encode(3).hex())",
              cwd=tmp_path, env={**env, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), deps])})
    assert out.split() == ["False", "02780100"]
