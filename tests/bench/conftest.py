"""Fixtures of the bench tests: the fake torch venv (tests/bench/torchfake.py), made once a session."""

from __future__ import annotations

import pytest

from tests.bench.torchfake import fake_torch_venv


@pytest.fixture(scope="session")
def fake_torch_python(tmp_path_factory) -> str:
    return fake_torch_venv(tmp_path_factory.mktemp("fake-torch"))
