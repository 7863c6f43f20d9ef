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

    @property
    def findings(self) -> list[Finding]:
        found = [f for r in self.results for f in r.findings]
        return sorted(found, key=lambda f: (-SEVERITY_RANK[f.severity], f.rule.id, f.item or 0))

    def counts(self) -> dict[str, int]:
        out = {"error": 0, "warning": 0, "info": 0}
        for f in self.findings:
            out[f.severity] += 1
        out["passed"] = sum(1 for r in self.results if r.status == "passed")
        out["unknown"] = sum(1 for r in self.results if r.status == "unknown")
        return out


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
) -> CheckResult:
    """Collect facts and evaluate rules. The rules load while the probes run (they mostly wait on I/O)."""
    started = time.monotonic()
    collection = Collection(host, deadline)
    rules = load_rules(rule_paths)
    facts, probes = collection.wait()
    results = evaluate(rules, facts)
    return CheckResult(
        facts=facts,
        results=results,
        probes=probes,
        host_kind=host.kind,
        source=source,
        elapsed=time.monotonic() - started,
        timed_out=list(getattr(host, "timed_out", [])),
    )
