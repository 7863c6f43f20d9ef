"""report/json_report.py: the JSON report of the recorded H200 (tests/fixtures/h200-driver580-snapshot; the
whole report is compared with golden h200-check.json in tests/test_golden.py): what the verdict, a policy,
timing, redaction and several environments change in it (docs/json-report.md)."""

from __future__ import annotations

import json

import pytest

from gpudoctor.host.base import Deadline
from gpudoctor.host.snapshot import SnapshotHost, load
from gpudoctor.pipeline.check import run_check
from gpudoctor.pipeline.result import Result
from gpudoctor.pipeline.verdict import decide
from gpudoctor.profiles import PROFILES
from gpudoctor.redact import Identity, redact_report
from gpudoctor.report import json_report

from conftest import H200

KEYS = ["schema", "schema_version", "gpudoctor", "host", "summary", "findings", "ignored", "rules", "probes"]
KEYS += ["timed_out", "profile", "policy", "facts"]


@pytest.fixture(scope="module")
def h200():
    return run_check(
        SnapshotHost(load(str(H200)), "h200"), "h200", Deadline(10), [], profile=PROFILES["workstation"]
    )


def test_the_report_keys_and_the_summary_carry_the_verdict(h200):
    data = json_report.report_data(h200, decide(h200, "warning"), include_timing=False)
    assert list(data) == KEYS
    assert (data["schema"], data["schema_version"]) == ("gpudoctor.report", 1)
    assert data["host"] == {"kind": "snapshot", "source": "h200", "hostname": "redacted-host"}
    assert data["summary"] == dict(h200.counts(), fail_on="warning", exit_code=1)
    assert json_report.report_data(h200, decide(h200, "error"), False)["summary"]["exit_code"] == 0


def test_timing_is_left_out_when_asked(h200):
    timed = json_report.report_data(h200, decide(h200, "error"))
    assert list(timed) == [*KEYS, "elapsed_s"]
    assert all(set(p) == {"name", "status", "detail", "seconds"} for p in timed["probes"])
    untimed = json_report.report_data(h200, decide(h200, "error"), include_timing=False)
    assert all(set(p) == {"name", "status", "detail"} for p in untimed["probes"])


def test_a_finding_and_its_resolver_step(h200):
    data = json_report.report_data(h200, decide(h200, "error"), include_timing=False)
    fw = data["findings"][0]
    assert (fw["rule"], fw["severity"], fw["category"], fw["item"]) == (
        "GD-FW-004",
        "warning",
        "frameworks",
        3,
    )
    assert fw["evidence"] == {
        "frameworks[3].build": "cpu",
        "frameworks[3].name": "onnxruntime",
        "gpus.count": 1,
    }
    (step,) = fw["fix"]
    assert (step["kind"], step["argv"], step["resolver"], step["args"]) == ("pip", [], "onnxruntime", {})
    # A step without a resolver has neither key.
    literal = h200.findings[0].fix[0]._replace(resolver="", argv=("nvidia-smi", "-L"))
    assert json_report.step_data(literal) == {
        "kind": "pip",
        "argv": ["nvidia-smi", "-L"],
        "text": literal.text,
    }


def test_a_policy_ignored_finding_moves_to_ignored_with_its_reason(h200):
    why = "onnxruntime stays on the CPU on this host"
    result = Result(**{**vars(h200), "ignore": {"GD-FW-004": why}, "policy": "/etc/gpudoctor/policy.yaml"})
    data = json_report.report_data(result, decide(result, "warning"), include_timing=False)
    assert [f["rule"] for f in data["findings"]] == ["GD-CUDNN-002"]
    assert [(f["rule"], f["reason"]) for f in data["ignored"]] == [("GD-FW-004", why)]
    assert {r["id"]: r["status"] for r in data["rules"]}["GD-FW-004"] == "ignored"
    assert (data["policy"], data["summary"]["ignored"], data["summary"]["exit_code"]) == (
        "/etc/gpudoctor/policy.yaml",
        1,
        0,
    )


def test_unknown_rules_say_which_facts_and_why(h200):
    data = json_report.report_data(h200, decide(h200, "error"), include_timing=False)
    unknown = [r for r in data["rules"] if r["status"] == "unknown"]
    # 28: with GD-NOUVEAU-002, whose modprobe.d files the H200 capture predates (not recorded in snapshot).
    assert len(unknown) == 28
    assert all(
        r["unknown_facts"] and all(isinstance(v, str) and v for v in r["unknown_facts"].values())
        for r in unknown
    )
    assert all(r["unknown_facts"] == {} for r in data["rules"] if r["status"] == "passed")


def test_render_is_the_data_as_json_and_applies_the_redaction(h200):
    verdict = decide(h200, "error")
    text = json_report.render(h200, verdict, include_timing=False)
    assert text.endswith("}\n") and json.loads(text) == json_report.report_data(h200, verdict, False)
    assert "/opt/torch/.venv/bin/python3" in text
    home = Identity((), ("/opt/torch",), ())
    redacted = json_report.render(h200, verdict, False, redact=lambda d: redact_report(d, home))
    assert "/opt/torch/" not in redacted
    assert json.loads(redacted)["summary"] == json.loads(text)["summary"]


def test_several_environments_exit_with_the_worst_code(h200):
    verdicts = [decide(h200, "error"), decide(h200, "warning")]
    data = json.loads(json_report.render_many([h200, h200], verdicts, include_timing=False))
    assert list(data) == ["schema", "schema_version", "gpudoctor", "exit_code", "environments"]
    assert (data["schema"], data["exit_code"]) == ("gpudoctor.report.environments", 1)
    assert [e["summary"]["exit_code"] for e in data["environments"]] == [0, 1]
    assert "overrides" not in data["environments"][0]  # only when a rule pack replaced a shipped rule
