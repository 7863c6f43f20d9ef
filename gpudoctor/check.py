"""One check, start to end: a Host, its Facts, the rules' results, and the exit code they imply."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Optional

from .collect import Collection, ProbeStatus
from .engine.evaluate import evaluate
from .engine.loader import load_rules
from .engine.model import SEVERITY_RANK, Finding, RuleResult
from .facts import Facts
from .host.base import Deadline
from .policy import Policy
from .profiles import PROFILES, Profile, select_rules

FAIL_ON = ("error", "warning", "info", "never")
EXIT_OK, EXIT_FINDINGS, EXIT_CANNOT_CHECK, EXIT_INTERNAL = 0, 1, 2, 3


@dataclass
class CheckResult:
    facts: Facts
    results: list[RuleResult]
    probes: list[ProbeStatus]
    host_kind: str
    source: str  # "live" or the snapshot's path
    elapsed: float
    timed_out: list[str] = field(default_factory=list)
    profile: str = "workstation"
    skipped_probes: list[str] = field(default_factory=list)  # probes the profile does not run
    skipped_rules: list[str] = field(default_factory=list)  # rules needing facts of those probes
    policy: Optional[str] = None  # the policy file's path
    ignore: dict[str, str] = field(default_factory=dict)  # rule id -> why the policy ignores it

    @property
    def findings(self) -> list[Finding]:
        """What the rules found, most severe first; findings of ignored rules are not among them."""
        found = [f for r in self.results for f in r.findings if r.rule.id not in self.ignore]
        return sorted(found, key=_finding_order)

    @property
    def ignored_findings(self) -> list[tuple[Finding, str]]:
        found = [f for r in self.results for f in r.findings if r.rule.id in self.ignore]
        return [(f, self.ignore[f.rule.id]) for f in sorted(found, key=_finding_order)]

    def status(self, result: RuleResult) -> str:
        """`fired`, `passed`, `unknown`, or `ignored` (fired, but the policy ignores the rule)."""
        return "ignored" if result.status == "fired" and result.rule.id in self.ignore else result.status

    def counts(self) -> dict[str, int]:
        out = {"error": 0, "warning": 0, "info": 0}
        for f in self.findings:
            out[f.severity] += 1
        out["passed"] = sum(1 for r in self.results if r.status == "passed")
        out["unknown"] = sum(1 for r in self.results if r.status == "unknown")
        out["ignored"] = len(self.ignored_findings)
        return out

    def unanswered(self) -> list[str]:
        """Calls and probes that did not answer in time (the process must not wait for them at exit)."""
        return list(self.timed_out) + [f"probe {p.name}" for p in self.probes if p.status == "timed out"]


def _finding_order(f: Finding) -> tuple:
    return (-SEVERITY_RANK[f.severity], f.rule.id, f.item or 0)


def exit_code(findings: list[Finding], fail_on: str) -> int:
    if fail_on == "never":
        return EXIT_OK
    threshold = SEVERITY_RANK[fail_on]
    return EXIT_FINDINGS if any(SEVERITY_RANK[f.severity] >= threshold for f in findings) else EXIT_OK


def open_host(snapshot: Optional[str], python: Optional[str], deadline: Deadline) -> tuple[Any, str]:
    """The live Host, or a snapshot's. Raises SnapshotError for a snapshot that cannot be read."""
    if snapshot:
        from .host.snapshot import SnapshotHost, load

        return SnapshotHost(load(snapshot), source=snapshot), snapshot
    from .host.live import LiveHost

    return LiveHost(deadline=deadline, python=python), "live"


def run_check(
    host: Any,
    source: str,
    deadline: Deadline,
    rule_paths: list[str],
    profile: Optional[Profile] = None,
    policy: Optional[Policy] = None,
    data_dir: Optional[str] = None,
) -> CheckResult:
    """Collect facts and evaluate rules. The rules load while the probes run (they mostly wait on I/O).

    The profile says which probes run; rules that name facts of the others are not evaluated. The policy's
    requirements are rules like the rest; its ignored rules' findings are kept apart. Raises
    RuleLoadError for bad rule files and PolicyError for a policy ignoring a rule that does not exist.
    `data_dir` is the directory whose filesystem the storage probe reports (`check --data-dir`)."""
    from .probes import registry

    started = time.monotonic()
    prof = profile or PROFILES["workstation"]
    probes = registry(data_dir)
    owners = {prefix: name for name, prefixes, _fn in probes for prefix in prefixes}
    collection = Collection(host, deadline, [p for p in probes if p[0] in prof.probes])
    rules = load_rules(rule_paths) + list(policy.rules if policy else ())
    if policy is not None:
        policy.check_ignores({r.id for r in rules})
    evaluated, skipped = select_rules(rules, prof.probes, owners)
    facts, statuses = collection.wait()
    results = evaluate(evaluated, facts)
    return CheckResult(
        facts=facts,
        results=results,
        probes=statuses,
        host_kind=host.kind,
        source=source,
        elapsed=time.monotonic() - started,
        timed_out=list(getattr(host, "timed_out", [])),
        profile=prof.name,
        skipped_probes=[name for name, _p, _f in probes if name not in prof.probes],
        skipped_rules=[r.id for r in skipped],
        policy=policy.path if policy else None,
        ignore=dict(policy.ignore) if policy else {},
    )
