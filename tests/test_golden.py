"""Reports compared in full with golden files. Regenerate after an intended change with:

GPUDOCTOR_UPDATE_GOLDEN=1 python -m pytest tests/test_golden.py
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpudoctor.check import run_check
from gpudoctor.host.base import Deadline
from gpudoctor.host.snapshot import SnapshotHost, load
from gpudoctor.report import json_report
from gpudoctor.report.text import render_plain

from conftest import FIXTURES, H200

GOLDEN = FIXTURES / "golden"
NOGPU = FIXTURES / "nogpu-ci-snapshot"
CASES = {
    "h200": (H200, "h200-driver580-snapshot"),
    "nogpu": (NOGPU, "nogpu-ci-snapshot"),
}


def _result(name: str):
    path, label = CASES[name]
    return run_check(SnapshotHost(load(str(path)), label), label, Deadline(10), [])


def _compare(actual: str, golden: Path) -> None:
    if os.environ.get("GPUDOCTOR_UPDATE_GOLDEN"):
        golden.write_text(actual)
    assert golden.exists(), f"{golden} is missing: run with GPUDOCTOR_UPDATE_GOLDEN=1"
    assert actual == golden.read_text()


@pytest.mark.parametrize("name", sorted(CASES))
def test_text_report(name):
    _compare(render_plain(_result(name), "error", width=100), GOLDEN / f"{name}-check.txt")


@pytest.mark.parametrize("name", sorted(CASES))
def test_json_report(name):
    _compare(json_report.render(_result(name), "error", include_timing=False), GOLDEN / f"{name}-check.json")
