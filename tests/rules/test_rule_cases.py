"""Every shipped rule against its own fire / no-fire cases (tests/rules/cases/<RULE-ID>.yaml).

A case file holds `fires:` and `passes:` lists. Each case has a `name` (a slug: it becomes part of the
test id, e.g. GD-PCIE-001-fires-x8-link) and `facts`, a flat mapping from fact name to value, where
{unknown: "reason"} makes the fact unknown. A `fires` case lists the exact rendered `messages`, one per
finding in item order; a `passes` case may say which `status` it expects (`passed`, `unknown`, or
`not_applicable`: its `applies:` is false, or the rule iterates a list that is empty). A case
that exposes a bug in a rule or the engine carries `xfail: "what goes wrong"` until the bug is fixed.
A fix step that names a resolver renders to that resolver and its args, without argv: the planner resolves
it (tests/core/test_plan.py and tests/resolvers/ test what it resolves to).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

from gpudoctor.bench.rules import load_bench_rules
from gpudoctor.engine.evaluate import evaluate_rule
from gpudoctor.engine.loader import load_rules
from gpudoctor.engine.model import Rule
from gpudoctor.engine.rule_tests import build_facts, load_cases
from gpudoctor.engine.template import placeholders
from gpudoctor.fleet.merge import shipped_fleet_rules

CASES = Path(__file__).parent / "cases"


@lru_cache(maxsize=1)
def shipped_rules() -> dict[str, Rule]:
    """The check's rules, the bench's (rules/bench/), which only `gpudoctor bench` loads, and the fleet's
    rules (rules/fleet/), which only `gpudoctor fleet` loads."""
    return {r.id: r for r in load_rules([]) + load_bench_rules() + shipped_fleet_rules()}


def case_files() -> list[Path]:
    return sorted(CASES.glob("*.yaml"))


def _load(path: Path) -> dict[str, list[dict[str, Any]]]:
    return load_cases(path)  # the format `gpudoctor rules test` runs for users' rules (engine/rule_tests.py)


def all_cases() -> list[Any]:
    params = []
    for path in case_files():
        rule_id = path.stem
        for kind in ("fires", "passes"):
            for case in _load(path).get(kind, []):
                marks = [pytest.mark.xfail(reason=str(case["xfail"]), strict=True)] if "xfail" in case else []
                params.append(
                    pytest.param(rule_id, kind, case, id=f"{rule_id}-{kind}-{case['name']}", marks=marks)
                )
    return params


def _argv_facts(rule: Rule, item: Any) -> list[str]:
    """Facts that the fix commands of one finding name, with [i] filled in."""
    names = [name for s in rule.fix for a in s.argv for name, _flt in placeholders(a)]
    return [n.replace("[i]", f"[{item}]") if item is not None else n for n in names]


@pytest.mark.parametrize(("rule_id", "kind", "case"), all_cases())
def test_rule_case(rule_id: str, kind: str, case: dict[str, Any]) -> None:
    rule = shipped_rules().get(rule_id)
    assert rule is not None, f"{rule_id}.yaml: no shipped rule has this id"
    facts = build_facts(case["facts"])
    result = evaluate_rule(rule, facts)
    if kind == "passes":
        assert result.status != "fired", f"fired unexpectedly: {[f.message for f in result.findings]}"
        assert result.status == case.get("status", "passed"), (
            f"status {result.status!r}, unknown facts {result.unknown_facts}"
        )
        return
    assert result.status == "fired", f"status {result.status!r}, unknown facts {result.unknown_facts}"
    assert [f.message for f in result.findings] == case["messages"]
    for finding in result.findings:
        unknown_refs = [n for n in _argv_facts(rule, finding.item) if not facts.get(n).known]
        assert not unknown_refs, f"the case leaves facts a fix command needs unknown: {unknown_refs}"
        assert len(finding.fix) == len(rule.fix)
        for declared, step in zip(rule.fix, finding.fix):
            assert step.kind == declared.kind, f"{declared.kind} step rendered as {step.kind}: {step.text}"
            if declared.resolver:
                # Carried unresolved for the planner: the resolver and its args, the text reports show.
                assert (step.resolver, step.args, step.argv) == (declared.resolver, declared.args, ())
                assert step.text.strip() and "{" not in step.text, f"resolver step text: {step.text!r}"
                continue
            if step.kind not in ("manual", "env"):
                assert step.argv, f"{step.kind} step has no argv"
            if step.kind in ("manual", "env") and not step.argv:
                assert step.text.strip(), f"{step.kind} step has neither argv nor text"
            assert not any("unknown" in a for a in step.argv), f"argv names an unknown fact: {step.argv}"
            assert not any("{" in a or "}" in a for a in step.argv), (
                f"argv has an unfilled placeholder: {step.argv}"
            )


def test_every_shipped_rule_has_cases() -> None:
    have = {p.stem: _load(p) for p in case_files()}
    missing = sorted(set(shipped_rules()) - set(have))
    assert not missing, f"shipped rules without a case file in {CASES}: {missing}"
    thin = sorted(rid for rid in shipped_rules() if not have[rid].get("fires") or not have[rid].get("passes"))
    assert not thin, f"case files without at least one fires and one passes case: {thin}"


def test_no_case_file_names_a_missing_rule() -> None:
    extra = sorted({p.stem for p in case_files()} - set(shipped_rules()))
    assert not extra, f"case files for rules that do not exist: {extra}"
    stray = sorted(p.name for p in CASES.iterdir() if p.suffix != ".yaml")
    assert not stray, f"files in {CASES} that are not <RULE-ID>.yaml: {stray}"


def test_case_names_are_unique_per_rule() -> None:
    for path in case_files():
        data = _load(path)
        names = [f"{kind}-{c['name']}" for kind in ("fires", "passes") for c in data.get(kind, [])]
        dupes = sorted({n for n in names if names.count(n) > 1})
        assert not dupes, f"{path.name}: duplicate case names {dupes}"
