"""pipeline/result.py: what a Result says of the recorded H200 (tests/fixtures/h200-driver580-snapshot, whose
check fires GD-FW-004 as a warning on item 3 and GD-CUDNN-002 as info, golden h200-check.json), with a policy
that ignores a rule, and a Verdict's answer per rule."""

from __future__ import annotations

import json

import pytest

from gpudoctor.collect import ProbeStatus
from gpudoctor.host.base import Deadline
from gpudoctor.host.snapshot import SnapshotHost, load
from gpudoctor.pipeline.check import run_check
from gpudoctor.pipeline.result import Result
from gpudoctor.pipeline.verdict import decide
from gpudoctor.profiles import PROFILES

from conftest import FIXTURES, H200


@pytest.fixture(scope="module")
def h200():
    return run_check(
        SnapshotHost(load(str(H200)), "h200"), "h200", Deadline(10), [], profile=PROFILES["workstation"]
    )


def test_findings_come_most_severe_first(h200):
    assert [(f.rule.id, f.severity, f.item) for f in h200.findings] == [
        ("GD-FW-004", "warning", 3),
        ("GD-CUDNN-002", "info", None),
    ]


def test_counts_match_the_golden_report(h200):
    golden = json.loads((FIXTURES / "golden" / "h200-check.json").read_text())["summary"]
    assert h200.counts() == {k: v for k, v in golden.items() if k not in ("fail_on", "exit_code")}
    # GD-NCCL-004 among the not applicable: one GPU, no pair; GD-SUSPEND-001..003: a VM does not sleep
    assert h200.counts()["warning"] == 1 and h200.counts()["not_applicable"] == 14


def test_a_rule_the_policy_ignores_leaves_the_findings_but_is_still_shown(h200):
    why = "onnxruntime runs on CPU here by design"
    ignore = {"GD-FW-004": why, "GD-CUDNN-001": "not fired: nothing to hide"}
    result = Result(**{**vars(h200), "ignore": ignore})
    assert [f.rule.id for f in result.findings] == ["GD-CUDNN-002"]
    assert [(f.rule.id, reason) for f, reason in result.ignored_findings] == [("GD-FW-004", why)]
    by_id = {r.rule.id: r for r in result.results}
    assert result.status(by_id["GD-FW-004"]) == "ignored"
    assert (
        result.status(by_id["GD-CUDNN-001"]) == by_id["GD-CUDNN-001"].status != "ignored"
    )  # only fired ones
    counts = result.counts()
    assert (counts["warning"], counts["info"], counts["ignored"]) == (0, 1, 1)


def test_unanswered_names_timed_out_calls_and_probes(h200):
    assert h200.unanswered() == []
    probes = [
        *h200.probes,
        ProbeStatus("gpu_health", "timed out", 10.0),
        ProbeStatus("storage", "crashed", 0.1),
    ]
    result = Result(**{**vars(h200), "probes": probes, "timed_out": ["NVML nvmlDeviceGetHandleByIndex"]})
    assert result.unanswered() == ["NVML nvmlDeviceGetHandleByIndex", "probe gpu_health"]


def test_a_verdict_says_which_rules_fail_it(h200):
    warning = decide(h200, "warning")
    assert (warning.code, warning.fails("GD-FW-004"), warning.fails("GD-CUDNN-002")) == (1, True, False)
    error = decide(h200, "error")
    assert (error.code, error.failing, error.fails("GD-FW-004")) == (0, (), False)
