"""Shared test helpers: a Host built from plain data (the snapshot Host over a Recording)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudoctor.host.snapshot import Recording, SnapshotHost, load

FIXTURES = Path(__file__).parent / "fixtures"
H200 = FIXTURES / "h200-driver580-snapshot"


def fake_host(**parts) -> SnapshotHost:
    """A Host answering from the given Recording fields (files=, dirs=, commands=, nvml_system=, ...)."""
    return SnapshotHost(Recording(**parts), source="test")


@pytest.fixture
def h200_host() -> SnapshotHost:
    return SnapshotHost(load(str(H200)), source=str(H200))
