"""What rules and their results are (engine/model.py): the severities and their order, what a finding
takes from its rule, and the vocabularies every shipped rule keeps to."""

from __future__ import annotations

from gpudoctor.engine.loader import load_rules
from gpudoctor.engine.model import (
    CATEGORIES,
    FIX_KINDS,
    SEVERITIES,
    SEVERITY_RANK,
    Finding,
    RuleResult,
)


def test_severities_rank_error_above_warning_above_info():
    assert sorted(SEVERITIES, key=SEVERITY_RANK.get, reverse=True) == ["error", "warning", "info"]
    assert set(SEVERITY_RANK) == set(SEVERITIES)


def test_a_finding_has_its_rules_severity():
    rule = next(r for r in load_rules([]) if r.id == "GD-PCIE-002")
    finding = Finding(
        rule, "GPU 0 (NVIDIA H200) is 97% busy but its PCIe link runs at gen 3 of gen 5.", "", ()
    )
    assert finding.severity == rule.severity == "warning"
    assert RuleResult(rule, "passed").findings == () and RuleResult(rule, "passed").unknown_facts == ()


def test_every_shipped_rule_keeps_to_the_vocabularies():
    rules = load_rules([])
    assert {r.severity for r in rules} <= set(SEVERITIES)
    assert {r.category for r in rules} <= set(CATEGORIES)
    assert {step.kind for r in rules for step in r.fix} <= set(FIX_KINDS)
    assert not any(r.overrides or r.replaces for r in rules)  # shipped rules replace nothing


def _facts_read(cond) -> set[str]:
    if isinstance(cond, list):
        return {name for part in cond for name in _facts_read(part)}
    if not isinstance(cond, dict):
        return set()
    own = {cond["fact"]} if isinstance(cond.get("fact"), str) else set()
    return own | {name for key, value in cond.items() if key != "fact" for name in _facts_read(value)}


def test_where_a_shipped_rule_runs_is_in_its_applies_never_in_its_when():
    # A `when:` that stands down in a container or a VM reads "passed" there (issue 23's closing note):
    # whether the rule is about this host is said in `applies:`, which gives not_applicable or unknown.
    where = {"container.detected", "system.virtualization"}
    rules = load_rules([])
    assert [r.id for r in rules if _facts_read(r.when) & where] == []
    assert {r.id for r in rules if r.applies is not None} >= {
        "GD-DRIVER-005", "GD-DRIVER-006", "GD-DCGM-001", "GD-PCIE-ACS-001", "GD-IOMMU-001",
    }  # fmt: skip
