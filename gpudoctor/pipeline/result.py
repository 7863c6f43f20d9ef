"""What the pipeline hands on: one Result per environment judged (with its Target), and the Verdict the run's
threshold made of it (decided in pipeline/verdict.py, nowhere else; renderers receive it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, Optional

from ..engine.model import NOT_APPLICABLE, SEVERITY_RANK, Finding, Rule, RuleResult
from ..facts import Facts

if TYPE_CHECKING:
    from ..collect import ProbeStatus


class Target(NamedTuple):  # NamedTuples and a plain class, not dataclasses: see engine/model.py
    """The Python environment a Result judged: the interpreter, and what chose it (`--python`, `VIRTUAL_ENV`,
    ...: python.selected_by's words). No interpreter (`check --no-python`, a bench's own facts): ""."""

    python: str = ""
    chosen_by: str = ""


class Result:
    """One environment's check (mutable; equal to another Result with the same attributes)."""

    def __init__(
        self,
        facts: Facts,
        results: list[RuleResult],
        probes: list[ProbeStatus],
        host_kind: str,
        source: str,  # "live" or the snapshot's path
        elapsed: float,
        timed_out: Optional[list[str]] = None,  # None: []
        profile: str = "workstation",
        skipped_probes: Optional[list[str]] = None,  # probes the profile does not run (None: [])
        skipped_rules: Optional[list[str]] = None,  # rules needing facts of those probes (None: [])
        policy: Optional[str] = None,  # the policy file's path
        ignore: Optional[dict[str, str]] = None,  # rule id -> why the policy ignores it (None: {})
        fail_unknown: bool = False,  # an error-level rule that could not be evaluated makes the exit code 2
        unknown_ok: tuple[str, ...] = (),  # fact sections whose unknowns alone do not (Profile.unknown_ok)
        unrecorded_ok: bool = False,  # nor facts a replayed snapshot did not record (Profile.unrecorded_ok)
        overrides: Optional[list[Rule]] = None,  # rules that replaced shipped ones (Rule.replaces; None: [])
        target: Optional[Target] = None,  # the Python environment judged (None: Target())
    ) -> None:
        self.facts = facts
        self.results = results
        self.probes = probes
        self.host_kind = host_kind
        self.source = source
        self.elapsed = elapsed
        self.timed_out = [] if timed_out is None else timed_out
        self.profile = profile
        self.skipped_probes = [] if skipped_probes is None else skipped_probes
        self.skipped_rules = [] if skipped_rules is None else skipped_rules
        self.policy = policy
        self.ignore = {} if ignore is None else ignore
        self.fail_unknown = fail_unknown
        self.unknown_ok = unknown_ok
        self.unrecorded_ok = unrecorded_ok
        self.overrides = [] if overrides is None else overrides
        self.target = Target() if target is None else target

    def __eq__(self, other: object) -> bool:
        return vars(self) == vars(other) if type(other) is Result else NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return "Result(" + ", ".join(f"{k}={v!r}" for k, v in vars(self).items()) + ")"

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


class Verdict(NamedTuple):
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
