"""Shared test helpers: a Host built from plain data (the snapshot Host over a Recording), and the session
fixtures every directory uses (the fake NVML library, the fake-torch venv, a pip venv template)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from fake_cuda import fakes

from gpudoctor.host.live import LiveHost
from gpudoctor.host.snapshot import Recording, SnapshotHost, load

from nvmlrig import compile_fake
from pyenvs import pip_venv_template

ROOT = Path(__file__).parents[1]
FIXTURES = Path(__file__).parent / "fixtures"
H200 = FIXTURES / "h200-driver580-snapshot"


class CompleteEnv(dict):
    """A recorded environment that is complete: a variable not in it was unset (a real snapshot answers
    NOT_RECORDED for a variable it did not read)."""

    def __contains__(self, name: object) -> bool:
        return True


class RootedHost(LiveHost):
    """The live Host, reading files and directories under `root` as if it were /: real files, real directory
    listings, real commands."""

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = root

    def read(self, path: str) -> str:
        return super().read(str(self.root) + path)

    def listdir(self, path: str) -> list[str]:
        return super().listdir(str(self.root) + path)


class CompleteEnvNames(dict):
    """The variable families of a complete environment: every prefix lists the names of `env` it starts."""

    def __init__(self, env: dict) -> None:
        super().__init__()
        self.env = env

    def __contains__(self, prefix: object) -> bool:
        return True

    def __getitem__(self, prefix: str) -> list[str]:
        return sorted(n for n, v in self.env.items() if n.startswith(prefix) and v is not None)


def fake_host(**parts) -> SnapshotHost:
    """A Host answering from the given Recording fields (files=, dirs=, commands=, nvml_system=, ...); its
    environment is complete (CompleteEnv, CompleteEnvNames)."""
    parts["env"] = CompleteEnv(parts.get("env") or {})
    parts.setdefault("env_names", CompleteEnvNames(parts["env"]))
    return SnapshotHost(Recording(**parts), source="test")


@pytest.fixture(autouse=True)
def _engine_operators_only():
    """Every test starts with the rule engine's own operators: one that needs a provided operator (the
    container package's nvidia_require) provides it, as commands.dispatch does, and it is gone after."""
    from gpudoctor.engine import extensions

    extensions.OPERATORS.clear()
    yield
    extensions.OPERATORS.clear()


@pytest.fixture
def h200_host() -> SnapshotHost:
    return SnapshotHost(load(str(H200)), source=str(H200))


@pytest.fixture(scope="session")
def pip_template(tmp_path_factory) -> Path:
    """A venv of this Python with pip, made once a session (seconds): tests take a copy each (clone_venv)."""
    return pip_venv_template(sys.executable, tmp_path_factory.mktemp("pip-template") / "venv")


def run_cli(*args: str, cwd: Path = ROOT, env: dict | None = None, drop: tuple[str, ...] = ()):
    """The CLI as users run it: a real process, plain output, from `cwd` (policy files are looked for there),
    with `drop` removed from the environment and `env` added."""
    full = {k: v for k, v in os.environ.items() if k not in drop}
    full.update({"NO_COLOR": "1", "PYTHONPATH": str(ROOT)})
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "gpudoctor", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=full,
        timeout=60,
    )


@pytest.fixture(scope="session")
def fake_lib(tmp_path_factory) -> Path:
    """A directory holding the fake libnvidia-ml.so.1 (tests/nvmlrig.py), compiled once per test session."""
    return compile_fake(tmp_path_factory.mktemp("fake-nvml"))


@pytest.fixture(scope="session")
def old_driver_lib(tmp_path_factory) -> Path:
    """The same, as a driver before r535: without the calls such drivers lack."""
    return compile_fake(tmp_path_factory.mktemp("fake-nvml-old"), "-DFAKE_NVML_OLD_DRIVER")


@pytest.fixture(scope="session")
def fake_torch_python(tmp_path_factory) -> str:
    """A venv whose torch and CuPy are the bench's fake measurement source (tests/bench/torchfake.py)."""
    from tests.bench.torchfake import fake_torch_venv

    return fake_torch_venv(tmp_path_factory.mktemp("fake-torch"))


# --- the live children -----------------------------------------------------------------------------------
# For tests/host/test_cuda_smoke.py, tests/host/test_framework_runtime.py and tests/probes/test_runtime.py:
# tests/fake_cuda/fake_cuda.c is a libcuda.so.1 that the smoke test (gpudoctor/host/cuda_smoke.py) loads by
# name through LD_LIBRARY_PATH, scripted by the file `scenario` beside it; the fake frameworks
# (tests/fake_cuda/fakes.py) are packages in the site-packages of real virtual environments, imported by the
# real framework child (gpudoctor/host/framework_runtime.py) running in that environment's interpreter.

HANG_S = 0.3  # the deadline or time limit of the tests where something hangs
SLACK_S = 0.6  # starting Python and killing the group, beyond a time limit


@pytest.fixture(scope="session")
def libcuda(tmp_path_factory) -> Path:
    """A directory holding the fake libcuda.so.1."""
    return fakes.compile_libcuda(tmp_path_factory.mktemp("fake-cuda"))


@pytest.fixture(scope="session")
def venvs(tmp_path_factory, libcuda) -> dict[str, str]:
    """{torch mode: the python of a venv holding that fake torch}; the "ok" one also holds the others."""
    out = {}
    for mode in fakes.TORCH_MODES:
        python, site = fakes.make_venv(tmp_path_factory.mktemp(f"venv-{mode}"))
        fakes.write_torch(site, mode, libcuda / fakes.LIBRARY)
        if mode == "ok":
            fakes.write_others(site)
        out[mode] = str(python)
    return out


@pytest.fixture
def scenario(monkeypatch, libcuda):
    """Scripts the fake libcuda (the file beside it) and puts it first on the loader path for the children
    to come."""
    monkeypatch.setenv("LD_LIBRARY_PATH", str(libcuda))
    monkeypatch.delenv("FAKE_CUDA_SCENARIO", raising=False)

    def use(value: str) -> None:
        fakes.use_scenario(libcuda, value)

    use("ok")
    return use


def pytest_terminal_summary(terminalreporter) -> None:
    """The explain corpus's score (tests/explain/corpus_score.py) after a run that ran its test."""
    if not any(
        "test_corpus.py" in getattr(r, "nodeid", "")
        for reports in terminalreporter.stats.values()
        for r in reports
    ):
        return
    sys.path.insert(0, str(Path(__file__).parent / "explain"))
    from corpus_score import load, score

    from gpudoctor.explain.index import build

    terminalreporter.write_line("explain " + score(build()[0], load()).line("corpus"))
