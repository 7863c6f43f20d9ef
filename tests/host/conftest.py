"""Fixtures of the tests of the live children (test_cuda_smoke.py, test_framework_runtime.py,
test_runtime_children.py): a fake libcuda and fake frameworks, built once per session.

tests/fake_cuda/fake_cuda.c is a libcuda.so.1 that the smoke test (gpudoctor/host/cuda_smoke.py) loads by
name through LD_LIBRARY_PATH, scripted by the file `scenario` beside it; the fake frameworks
(tests/fake_cuda/fakes.py) are packages in the site-packages of real virtual environments, imported by the
real framework child (gpudoctor/host/framework_runtime.py) running in that environment's interpreter.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_cuda import fakes

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
