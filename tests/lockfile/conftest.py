"""The lockfiles the real uv writes, generated once for every test in tests/lockfile (lockgen.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .lockgen import generate

DATA = Path(__file__).with_name("data")


@pytest.fixture(scope="package")
def generated(tmp_path_factory) -> dict:
    return generate(tmp_path_factory.mktemp("lockgen"))
