"""pipeline/verdict.py: the one place a severity meets --fail-on (check, bench and fleet exit codes)."""

from __future__ import annotations

import shutil
from types import SimpleNamespace

import pytest

from gpudoctor.engine.evaluate import evaluate
from gpudoctor.engine.loader import parse_rules
from gpudoctor.facts import Facts, known, unknown
from gpudoctor.host.base import Deadline
from gpudoctor.host.snapshot import SnapshotHost, load
from gpudoctor.pipeline.check import run_check
from gpudoctor.pipeline.result import Result
from gpudoctor.pipeline.verdict import decide, exit_code, unknown_errors
from gpudoctor.profiles import PROFILES

from conftest import FIXTURES, H200

RULE = (
    "rules:\n  - id: T-X-{n}\n    title: t\n    severity: {sev}\n    category: gpu\n"
    "    when: {{fact: gpus.count, eq: 1}}\n    message: m\n    why: w\n"
)
UNKNOWN_RULE = (
    "rules:\n  - id: T-U-001\n    title: t\n    severity: error\n    category: gpu\n"
    "    when: {fact: 'driver.version', eq: x}\n    message: m\n    why: w\n"
)


def rules_of(text: str) -> list:
    rules, problems = parse_rules(text, "test.yaml")
    assert problems == []
    return rules


def result_of(values: dict, rules: list) -> Result:
    """{name: value}; a value {"unknown": reason} makes the fact unknown."""
    facts = Facts(
        {k: unknown(v["unknown"]) if isinstance(v, dict) else known(v, "test") for k, v in values.items()}
    )
    return Result(facts, evaluate(rules, facts), [], "snapshot", "test", 0.0)


def test_the_threshold_and_never():
    result = result_of({"gpus.count": 1}, rules_of(RULE.format(n="001", sev="warning")))
    assert [decide(result, f).code for f in ("error", "warning", "info", "never")] == [0, 1, 1, 0]
    v = decide(result, "warning")
    assert (v.fail_on, [f.rule.id for f in v.failing], v.fails("T-X-001")) == ("warning", ["T-X-001"], True)
    assert decide(result, "error").failing == () and not decide(result, "error").fails("T-X-001")


def test_an_unknown_error_level_rule_is_2_only_where_the_profile_says_so():
    result = result_of({"driver.version": {"unknown": "no permission"}}, rules_of(UNKNOWN_RULE))
    assert decide(result, "error").code == 0
    assert decide(result, "error").unknown_errors == ("T-U-001",)
    result.fail_unknown = True
    assert decide(result, "error").code == 2
    result.ignore = {"T-U-001": "known"}
    assert decide(result, "error").code == 0 and unknown_errors(result) == []


def test_exit_code_takes_anything_with_a_severity():
    fleet_findings = [SimpleNamespace(severity="info"), SimpleNamespace(severity="warning")]
    assert [exit_code(fleet_findings, f) for f in ("error", "warning", "never")] == [0, 1, 0]


@pytest.fixture
def gpu_less_with_cuda_torch(tmp_path):
    """A GPU-less CI runner (tests/fixtures/nogpu-ci-snapshot, captured on one: NVML library not found, no
    driver loaded) whose environment holds torch as the package index installs it by default, a CUDA build:
    the Python environment recorded on the H200 host (h200-driver580-snapshot/python.json, torch 2.11.0 for
    CUDA 13), put in place of the runner's own."""
    snap = tmp_path / "snap"
    shutil.copytree(FIXTURES / "nogpu-ci-snapshot", snap)
    shutil.copy(H200 / "python.json", snap / "python.json")
    return snap


@pytest.mark.parametrize("profile", ["ci", "preflight"])
def test_no_gpu_and_a_cuda_torch_is_not_could_not_check(gpu_less_with_cuda_torch, profile):
    """No driver, no GPU: GD-HOST-001 says so and that a CPU run is expected. The rules that compare a CUDA
    build with the driver cannot be evaluated (there is no driver to compare with); they are reported so,
    but they are no check that could not be made: ci and preflight exit 0, not 2."""
    snap = str(gpu_less_with_cuda_torch)
    result = run_check(SnapshotHost(load(snap), snap), snap, Deadline(10), [], profile=PROFILES[profile])
    assert "GD-HOST-001" in {f.rule.id for f in result.findings}
    cuda_001 = next(r for r in result.results if r.rule.id == "GD-CUDA-001")
    assert (cuda_001.status, cuda_001.unknown_facts) == (
        "unknown",
        (("driver.max_cuda_major", "NVML library not found"),),
    )
    verdict = decide(result, PROFILES[profile].fail_on)
    assert "GD-CUDA-001" not in verdict.unknown_errors
    assert verdict.code == 0, verdict


def test_a_driver_fact_unknown_on_a_host_with_a_driver_still_fails_ci():
    """Only the absence of a driver excuses a driver fact: where one is loaded, not reading it is a check
    that could not be made."""
    values = {
        "driver.loaded": True,
        "gpus.count": 1,
        "driver.version": {"unknown": "NVML library not found"},
    }
    result = result_of(values, rules_of(UNKNOWN_RULE))
    result.fail_unknown = True
    assert decide(result, "warning").code == 2
    no_driver = result_of(
        {"driver.loaded": False, "gpus.count": 0, "driver.version": {"unknown": "NVML library not found"}},
        rules_of(UNKNOWN_RULE),
    )
    no_driver.fail_unknown = True
    assert decide(no_driver, "warning").code == 0
