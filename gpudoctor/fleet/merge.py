"""Merge node reports into a fleet: the fleet's records (records.py) judged by ordinary rules
(rules/fleet/*.yaml, and users' --rules), and the exit code policy."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Optional

from ..engine.model import SEVERITY_RANK, Finding, Rule
from ..pipeline.verdict import EXIT_CANNOT_CHECK
from ..pipeline.verdict import exit_code as findings_exit_code
from .load import Invalid, Loaded, NodeFinding, NodeReport
from .records import Record, Records, build, record_facts


@dataclass(frozen=True)
class FleetFinding:
    """A fleet rule's finding, and the record (a value of a group) it judged."""

    finding: Finding
    record: Optional[Record]  # None for a rule that iterates neither drift[] nor peers[]

    @property
    def rule(self) -> Rule:
        return self.finding.rule

    @property
    def severity(self) -> str:
        return self.finding.rule.severity

    @property
    def message(self) -> str:
        return self.finding.message

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(m.node for m in self.record.members)) if self.record else ()


@dataclass(frozen=True)
class FleetRuleResult:
    rule: Rule
    status: str  # fired | passed | not compared (no node, or no group of peers, had a value to compare)
    findings: tuple[FleetFinding, ...]


@dataclass(frozen=True)
class RuleSummary:
    """One node rule across the fleet: which nodes it fired on."""

    rule: str
    severity: str
    title: str
    nodes: tuple[str, ...]
    findings: int


@dataclass
class Fleet:
    nodes: list[NodeReport]  # sorted by name
    records: Records
    results: list[FleetRuleResult]  # in rule-file order
    invalid: list[Invalid]
    duplicates: dict[str, list[str]] = field(default_factory=dict)
    ignore: dict[str, str] = field(default_factory=dict)  # fleet rule id -> why a policy ignores it

    @property
    def findings(self) -> list[FleetFinding]:
        """Most severe first; then in rule-file order, each rule's findings in its records' order.
        Findings of rules the policy ignores are not among them (see ignored_findings)."""
        found = (f for r in self.results if r.rule.id not in self.ignore for f in r.findings)
        return sorted(found, key=lambda f: -SEVERITY_RANK[f.severity])

    @property
    def ignored_findings(self) -> list[tuple[FleetFinding, str]]:
        return [
            (f, self.ignore[r.rule.id]) for r in self.results if r.rule.id in self.ignore for f in r.findings
        ]

    def fleet_counts(self) -> dict[str, int]:
        return _count(f.severity for f in self.findings)

    def node_counts(self) -> dict[str, int]:
        return _count(f.severity for n in self.nodes for f in n.findings)

    @property
    def gpus(self) -> int:
        return sum(n.facts.count("gpus") for n in self.nodes)


def merge(
    loaded: Loaded, rules: Optional[list[Rule]] = None, ignore: Optional[dict[str, str]] = None
) -> Fleet:
    """`rules`: the rules over the records; None: the shipped ones (rules/fleet/). `ignore`: fleet rule id
    -> reason (a policy's `[ignore]`); their findings are kept apart."""
    nodes = sorted(loaded.nodes, key=lambda n: _natural(n.name))
    found = build(nodes)
    return Fleet(
        nodes=nodes,
        records=found,
        results=judge(shipped_fleet_rules() if rules is None else rules, found.records),
        invalid=list(loaded.invalid),
        duplicates=dict(loaded.duplicates),
        ignore=dict(ignore or {}),
    )


def fleet_rule_files() -> list[str]:
    """The shipped fleet rules: rules/fleet/*.yaml (installed as gpudoctor/_rules/fleet/)."""
    from ..datafiles import shipped_rules_dir

    return sorted(str(p) for p in (shipped_rules_dir() / "fleet").glob("*.yaml"))


def shipped_fleet_rules(extra: tuple[str, ...] = ()) -> list[Rule]:
    """rules/fleet/*.yaml and the files `extra` names (users' --rules), validated as every rule file is;
    RuleLoadError lists every problem."""
    from ..engine.loader import load_rules

    return load_rules([*fleet_rule_files(), *extra], include_shipped=False)


def judge(rules: list[Rule], found: list[Record]) -> list[FleetRuleResult]:
    """Each rule over the records; each finding names the record (value of a group) it judged."""
    from ..engine.evaluate import evaluate_rule

    facts = record_facts(found)
    lists = {kind: [r for r in found if r.kind == kind] for kind in ("drift", "peers")}
    out = []
    for rule in rules:
        result = evaluate_rule(rule, facts)
        judged = lists.get(rule.for_each or "", [])
        findings = tuple(
            FleetFinding(f, judged[f.item] if f.item is not None and judged else None)
            for f in result.findings
        )
        status = {"fired": "fired", "passed": "passed"}.get(result.status, "not compared")
        out.append(FleetRuleResult(rule, status, findings))
    return out


@dataclass(frozen=True)
class Verdict:
    """The fleet's exit code, computed once per run (verdict()) and handed to every renderer."""

    code: int
    fail_on: str
    skip_invalid: bool = False


def verdict(fleet: Fleet, fail_on: str, skip_invalid: bool = False) -> Verdict:
    return Verdict(exit_code(fleet, fail_on, skip_invalid), fail_on, skip_invalid)


def exit_code(fleet: Fleet, fail_on: str, skip_invalid: bool = False) -> int:
    """2 when no report could be read, or any could not be and skip_invalid is off; else like check."""
    if not fleet.nodes or (fleet.invalid and not skip_invalid):
        return EXIT_CANNOT_CHECK
    return findings_exit_code([*fleet.findings, *(f for n in fleet.nodes for f in n.findings)], fail_on)


def sorted_node_findings(node: NodeReport) -> list[NodeFinding]:
    return sorted(
        node.findings,
        key=lambda f: (-SEVERITY_RANK[f.severity], f.gpu if f.gpu is not None else -1, f.rule, f.item or 0),
    )


def by_rule(nodes: list[NodeReport]) -> list[RuleSummary]:
    """Node findings gathered by rule: most severe first, then the rules that fired on most nodes."""
    first: dict[str, NodeFinding] = {}
    on: dict[str, list[str]] = {}
    count: dict[str, int] = {}
    for n in nodes:
        for f in n.findings:
            first.setdefault(f.rule, f)
            count[f.rule] = count.get(f.rule, 0) + 1
            names = on.setdefault(f.rule, [])
            if not names or names[-1] != n.name:
                names.append(n.name)
    out = [RuleSummary(r, f.severity, f.title, tuple(on[r]), count[r]) for r, f in first.items()]
    return sorted(out, key=lambda r: (-SEVERITY_RANK[r.severity], -len(r.nodes), r.rule))


# --- small helpers ---------------------------------------------------------------------------------


def _count(severities: Any) -> dict[str, int]:
    out = {"error": 0, "warning": 0, "info": 0}
    for s in severities:
        out[s] += 1
    return out


_DIGITS = re.compile(r"(\d+)")


def _natural(name: str) -> list:
    """gpu-2 before gpu-10 (digits compared as numbers, without int(): a name may be any length)."""
    key = []
    for part in _DIGITS.split(name):
        digits = part.lstrip("0") or "0"
        key.append((0, len(digits), digits, part) if part.isdigit() else (1, 0, part, ""))
    return key
