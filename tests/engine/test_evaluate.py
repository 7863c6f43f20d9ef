"""Evaluating rules on facts (engine/evaluate.py): the shipped rules on the facts of two real captures
(tests/fixtures/h200-driver580-snapshot, tests/fixtures/nogpu-ci-snapshot), each rule fired with its
evidence, passed, unknown with the facts and reasons that stopped it, or not applicable."""

from __future__ import annotations

import pytest

from gpudoctor.collect import collect
from gpudoctor.engine.evaluate import condition_text, evaluate, evaluate_rule, parameters_given
from gpudoctor.engine.loader import load_rules
from gpudoctor.engine.model import NOT_APPLICABLE
from gpudoctor.facts import Facts, known, unknown
from gpudoctor.host.base import Deadline
from gpudoctor.host.snapshot import SnapshotHost, load

from conftest import FIXTURES, H200


def facts_of(path) -> Facts:
    facts, _statuses = collect(SnapshotHost(load(str(path))), Deadline(30))
    return facts


@pytest.fixture(scope="module")
def rules():
    return {rule.id: rule for rule in load_rules([])}


@pytest.fixture(scope="module")
def h200():
    return facts_of(H200)


def test_a_rule_that_fires_carries_the_facts_it_read(rules, h200):
    # the capture's two cuDNN copies: the system 9.14.0 and the venv's 9.19.0.56 (its README)
    result = evaluate_rule(rules["GD-CUDNN-002"], h200)
    assert result.status == "fired"
    (finding,) = result.findings
    assert finding.message.startswith("2 cuDNN versions are installed (9.19.0.56, 9.14.0); none is on ")
    assert (finding.item, finding.severity) == (None, rules["GD-CUDNN-002"].severity)
    assert finding.evidence == (("cudnn.distinct_versions", 2), ("cudnn.ld_library_path_version", None))


def test_a_for_each_rule_fires_on_the_item_that_matches(rules, h200):
    # onnxruntime 1.30.0, the CPU-only build, is the fourth framework of the capture
    (finding,) = evaluate_rule(rules["GD-FW-004"], h200).findings
    assert finding.item == 3
    assert finding.message.startswith("onnxruntime 1.30.0 is the CPU-only package")
    assert ("frameworks[3].build", "cpu") in finding.evidence


def test_a_rule_whose_facts_were_not_recorded_is_unknown_with_the_reasons(rules, h200):
    result = evaluate_rule(rules["GD-CUDA-006"], h200)
    assert (result.status, result.findings) == ("unknown", ())
    assert result.unknown_facts == (
        ("cuda.nvcc.on_path", "not recorded in snapshot"),
        ("cuda.nvcc.version", "not recorded in snapshot"),
    )


def test_a_healthy_link_passes(rules, h200):
    # GD-PCIE-002 on the capture: gen 5 of gen 5, idle
    assert evaluate_rule(rules["GD-PCIE-002"], h200).status == "passed"


def test_a_list_that_could_not_be_read_leaves_its_rules_unknown(rules, h200):
    items = dict(h200.items())
    items["gpus.count"] = unknown("timed out", "nvml:nvmlDeviceGetCount")
    result = evaluate_rule(rules["GD-PCIE-002"], Facts(items))
    assert (result.status, result.unknown_facts) == ("unknown", (("gpus.count", "timed out"),))


def test_a_rule_about_gpus_on_a_host_without_one_is_not_applicable(rules):
    facts = facts_of(FIXTURES / "nogpu-ci-snapshot")
    assert facts.value("gpus.count") == 0
    assert evaluate_rule(rules["GD-PCIE-002"], facts).status == NOT_APPLICABLE


def test_a_rule_on_a_parameter_the_run_is_not_given_does_not_apply(rules, h200):
    # POLICY-GPU-COUNT reads policy.gpus.count: without a policy that sets it, no requirement, no unknown.
    assert parameters_given(rules["GD-PCIE-002"], h200)
    assert not parameters_given(rules["POLICY-GPU-COUNT"], h200)
    assert evaluate_rule(rules["POLICY-GPU-COUNT"], h200).status == NOT_APPLICABLE
    given = {
        "policy.file": known("gpudoctor.toml", "policy"),
        "policy.gpus.count": known(8, "policy"),
        "policy.gpus.count_bound": known("exactly", "policy"),
        "policy.gpus.count_key": known("gpus.count", "policy"),
    }
    result = evaluate_rule(rules["POLICY-GPU-COUNT"], Facts({**dict(h200.items()), **given}))
    assert [(f.message, f.why) for f in result.findings] == [
        (
            "The policy requires exactly 8 GPU(s); 1 visible.",
            "Required by the policy in gpudoctor.toml (gpus.count).",
        )
    ]


def test_evaluate_keeps_the_order_of_the_rules(rules, h200):
    chosen = [rules["GD-PCIE-002"], rules["GD-CUDNN-002"], rules["GD-CUDA-006"]]
    assert [(r.rule.id, r.status) for r in evaluate(chosen, h200)] == [
        ("GD-PCIE-002", "passed"), ("GD-CUDNN-002", "fired"), ("GD-CUDA-006", "unknown"),
    ]  # fmt: skip


# --- applies: where a rule is about, judged first --------------------------------------------------------


def test_a_rule_whose_applies_is_false_here_is_not_applicable_with_the_condition_and_the_facts(rules, h200):
    # The capture ran in a docker container with one H200 (its README): GD-DCGM-001 is about multi-GPU
    # nodes seen from the host; it used to read "passed" here.
    result = evaluate_rule(rules["GD-DCGM-001"], h200)
    assert (result.status, result.findings, result.unknown_facts) == (NOT_APPLICABLE, (), ())
    assert result.reason == (
        "applies only where gpus.count ge 2 and container.detected eq false; "
        "here container.detected is true, gpus.count is 1"
    )


def test_a_rule_whose_applies_cannot_be_judged_is_unknown_with_the_reason_never_passed(rules, h200):
    # One GPU would have decided it; with the count unknown, the container alone does not say where it runs.
    items = dict(h200.items())
    items["gpus.count"] = unknown("timed out", "nvml:nvmlDeviceGetCount")
    items["container.detected"] = unknown("no permission", "/")
    items["monitoring.dcgm.installed"] = unknown("not recorded in snapshot", "snapshot")
    result = evaluate_rule(rules["GD-DCGM-001"], Facts(items))
    assert (result.status, result.reason) == ("unknown", "")
    assert result.unknown_facts == (("container.detected", "no permission"), ("gpus.count", "timed out"))


def test_applies_decided_by_one_part_is_not_applicable_whatever_the_unknown_parts(rules, h200):
    items = dict(h200.items())
    items["system.virtualization"] = unknown("not recorded in snapshot", "snapshot")
    assert h200.value("gpus.count") == 1
    result = evaluate_rule(rules["GD-PCIE-ACS-001"], Facts(items))
    assert result.status == NOT_APPLICABLE
    assert result.reason.endswith("; here gpus.count is 1")


def test_where_applies_holds_the_rule_is_judged_by_when(rules, h200):
    items = dict(h200.items())
    items["gpus.count"] = known(8, "nvml")
    items["container.detected"] = known(False, "/")
    items["monitoring.dcgm.installed"] = known(False, "ldconfig -p")
    result = evaluate_rule(rules["GD-DCGM-001"], Facts(items))
    assert result.status == "fired"
    # the evidence is every fact the rule read: where it applies, and what it judged
    assert result.findings[0].evidence == (
        ("container.detected", False),
        ("gpus.count", 8),
        ("monitoring.dcgm.installed", False),
    )
    items["monitoring.dcgm.installed"] = known(True, "ldconfig -p")
    assert evaluate_rule(rules["GD-DCGM-001"], Facts(items)).status == "passed"


def test_applies_is_judged_before_a_for_each_list_is_read(rules, h200):
    # GD-CONTAINER-004 iterates frameworks; outside a container it does not apply, whatever the list says
    items = dict(h200.items())
    items["container.detected"] = known(False, "/")
    items["frameworks.count"] = unknown("timed out", "python")
    result = evaluate_rule(rules["GD-CONTAINER-004"], Facts(items))
    assert (result.status, result.reason) == (
        NOT_APPLICABLE,
        "applies only where container.detected eq true; here container.detected is false",
    )


@pytest.mark.parametrize(
    ("cond", "text"),
    [
        ({"fact": "gpus.count", "ge": 2}, "gpus.count ge 2"),
        (
            {
                "all": [
                    {"fact": "a.b", "eq": True},
                    {"any": [{"fact": "c", "in": ["x", ""]}, {"fact": "d", "exists": False}]},
                ]
            },
            'a.b eq true and (c in [x, ""] or d exists false)',
        ),
        (
            {"not": {"fact": "pci.nvidia_gpus", "gt": {"fact": "gpus.count"}}},
            "not (pci.nvidia_gpus gt gpus.count)",
        ),
    ],
)
def test_a_condition_reads_in_the_words_of_its_yaml(cond, text):
    assert condition_text(cond) == text
