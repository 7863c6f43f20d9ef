"""Reports compared in full with golden files. Regenerate after an intended change with:

GPUDOCTOR_UPDATE_GOLDEN=1 python -m pytest tests/report/test_golden.py
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpudoctor.host.base import Deadline
from gpudoctor.host.snapshot import SnapshotHost, load
from gpudoctor.pipeline.check import run_check
from gpudoctor.pipeline.verdict import decide
from gpudoctor.profiles import PROFILES
from gpudoctor.report import json_report, junit, markdown, oneline, prometheus
from gpudoctor.report.text import render_plain

from conftest import FIXTURES, H200

GOLDEN = FIXTURES / "golden"
NOGPU = FIXTURES / "nogpu-ci-snapshot"
CASES = {
    "h200": (H200, "h200-driver580-snapshot"),
    "nogpu": (NOGPU, "nogpu-ci-snapshot"),
}


def _result(name: str, profile: str = "workstation"):
    path, label = CASES[name]
    return run_check(SnapshotHost(load(str(path)), label), label, Deadline(10), [], profile=PROFILES[profile])


def _compare(actual: str, golden: Path) -> None:
    if os.environ.get("GPUDOCTOR_UPDATE_GOLDEN"):
        golden.write_text(actual)
    assert golden.exists(), f"{golden} is missing: run with GPUDOCTOR_UPDATE_GOLDEN=1"
    assert actual == golden.read_text()


@pytest.mark.parametrize("name", sorted(CASES))
def test_text_report(name):
    result = _result(name)
    _compare(render_plain(result, decide(result, "error"), width=100), GOLDEN / f"{name}-check.txt")


@pytest.mark.parametrize("name", sorted(CASES))
def test_json_report(name):
    result = _result(name)
    _compare(
        json_report.render(result, decide(result, "error"), include_timing=False),
        GOLDEN / f"{name}-check.json",
    )


# Each output format, from the same two snapshots. JUnit uses --fail-on warning so that one case fails.
FORMATS = {
    "junit.xml": lambda r: junit.render(r, decide(r, "warning"), include_timing=False),
    "md": lambda r: markdown.render(r, decide(r, "error")),
    "prom": lambda r: prometheus.render(r, decide(r, "error"), include_timing=False),
}


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("name", sorted(CASES))
def test_other_formats(name, fmt):
    _compare(FORMATS[fmt](_result(name)), GOLDEN / f"{name}-check.{fmt}")


@pytest.mark.parametrize("name", sorted(CASES))
def test_preflight_line_and_json(name):
    result = _result(name, "preflight")
    verdict = decide(result, "error")
    _compare(oneline.render(result, verdict), GOLDEN / f"{name}-preflight.txt")
    _compare(json_report.render(result, verdict, include_timing=False), GOLDEN / f"{name}-preflight.json")
