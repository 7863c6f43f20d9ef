"""What the pipeline hands on: one Result per environment judged (with its Target), and the Verdict the run's
threshold made of it (decided in pipeline/verdict.py, nowhere else; renderers receive it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

from ..engine.model import NOT_APPLICABLE, SEVERITY_RANK, Finding, Rule, RuleResult
from ..facts import Facts

if TYPE_CHECKING:
    from ..collect import ProbeStatus


@dataclass(frozen=True)
class Target:
    """The Python environment a Result judged: the interpreter, and what chose it (`--python`, `VIRTUAL_ENV`,
    ...: python.selected_by's words). No interpreter (`check --no-python`, a bench's own facts): ""."""

    python: str = ""
    chosen_by: str = ""


@dataclass
class Result:
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
    fail_unknown: bool = False  # an error-level rule that could not be evaluated makes the exit code 2
    unknown_ok: tuple[str, ...] = ()  # fact sections whose unknowns alone do not (Profile.unknown_ok)
    unrecorded_ok: bool = False  # nor facts a replayed snapshot did not record (Profile.unrecorded_ok)
    overrides: list[Rule] = field(default_factory=list)  # rules that replaced shipped ones (Rule.replaces)
    target: Target = field(default_factory=Target)  # the Python environment judged

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
        out["not_applicable"] = sum(1 for r in self.results if r.status == NOT_APPLICABLE)
        out["ignored"] = len(self.ignored_findings)
        return out

    def unanswered(self) -> list[str]:
        """Calls and probes that did not answer in time (the process must not wait for them at exit)."""
        return list(self.timed_out) + [f"probe {p.name}" for p in self.probes if p.status == "timed out"]


@dataclass(frozen=True)
class Verdict:
    """The run's threshold applied to one Result: its exit code, the --fail-on it was decided under, the
    findings at or above it (most severe first), and the error-level rules whose facts are unknown and that
    count for the exit code (they make it 2 when `code` is 2). Renderers show it; they never decide."""

    code: int
    fail_on: str
    failing: tuple[Finding, ...] = ()
    unknown_errors: tuple[str, ...] = ()

    def fails(self, rule_id: str) -> bool:
        """Whether the rule has a finding at or above --fail-on (JUnit's failure, not a passing note)."""
        return any(f.rule.id == rule_id for f in self.failing)


def _finding_order(f: Finding) -> tuple:
    return (-SEVERITY_RANK[f.severity], f.rule.id, f.item or 0)
