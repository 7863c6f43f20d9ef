"""One check, start to end: a Host, its Facts, the rules' results, and the exit code they imply."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Optional

from .collect import Collection, ProbeStatus
from .derive import derive
from .engine.evaluate import evaluate
from .engine.loader import load_rules
from .engine.model import NOT_APPLICABLE, SEVERITY_RANK, Finding, Rule, RuleResult
from .facts import Facts, head
from .host.base import NOT_RECORDED, Deadline
from .policy import Policy
from .probes import ENV_PROBES
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
    fail_unknown: bool = False  # an error-level rule that could not be evaluated makes the exit code 2
    unknown_ok: tuple[str, ...] = ()  # fact sections whose unknowns alone do not (Profile.unknown_ok)
    unrecorded_ok: bool = False  # nor facts a replayed snapshot did not record (Profile.unrecorded_ok)
    overrides: list[Rule] = field(default_factory=list)  # rules that replaced shipped ones (Rule.replaces)

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

    def unknown_errors(self) -> list[RuleResult]:
        """Error-level rules that could not be evaluated (not those the policy ignores, nor those unknown
        only for want of the facts the profile lets be unknown: `unknown_ok`, `unrecorded_ok`)."""
        return [
            r
            for r in self.results
            if r.status == "unknown"
            and r.rule.severity == "error"
            and r.rule.id not in self.ignore
            and not (r.unknown_facts and all(self._unknown_ok(name, why) for name, why in r.unknown_facts))
        ]

    def _unknown_ok(self, name: str, why: str) -> bool:
        return head(name) in self.unknown_ok or (self.unrecorded_ok and why.endswith(NOT_RECORDED))

    def verdict(self, fail_on: str) -> int:
        """The exit code: 1 for findings at or above `fail_on`; else 2 when an error-level rule could not
        be evaluated and the profile (or --fail-on-unknown) says that fails; else 0."""
        code = exit_code(self.findings, fail_on)
        if code == EXIT_OK and self.fail_unknown and self.unknown_errors():
            return EXIT_CANNOT_CHECK
        return code

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


def run_check(
    host: Any, source: str, deadline: Deadline, rule_paths: list[str], **options: Any
) -> CheckResult:
    """The check of the first (usually the only) Python environment; options as for run_checks."""
    return run_checks(host, source, deadline, rule_paths, **options)[0]


def run_checks(
    host: Any,
    source: str,
    deadline: Deadline,
    rule_paths: list[str],
    profile: Optional[Profile] = None,
    policy: Optional[Policy] = None,
    data_dir: Optional[str] = None,
    deep: bool = False,
    fail_unknown: Optional[bool] = None,
    no_python: bool = False,
    since: Optional[float] = None,
) -> list[CheckResult]:
    """Collect facts and evaluate rules, once per Python environment judged (host.python_targets()).

    The machine is probed once; the probes of the Python environment (ENV_PROBES) run for each
    interpreter, all concurrently. The rules load while the probes run (they mostly wait on I/O).
    The profile says which probes run; rules that name facts of the others are not evaluated. The policy's
    requirements are rules like the rest; its ignored rules' findings are kept apart. Raises
    RuleLoadError for bad rule files and PolicyError for a policy ignoring a rule that does not exist.
    `data_dir` is the directory whose filesystem the storage probe reports (`check --data-dir`); `deep`
    adds the runtime probe (child processes that load libcuda and import each framework); `fail_unknown`
    overrides the profile's choice of whether an error-level rule that could not be evaluated fails;
    `no_python` judges the machine alone (a node health check): no Python environment, no framework rule;
    `since` (seconds, `check --since`) is the window of kernel-log events judged (None: since boot)."""
    from .host.target import NoPythonHost, TargetHost
    from .probes import registry

    started = time.monotonic()
    prof = profile or PROFILES["workstation"]
    # Every probe, the runtime one too, so that rules on runtime facts are skipped without --deep.
    probes = registry(data_dir, deep=True, since=since)
    owners = {prefix: name for name, prefixes, _fn in probes for prefix in prefixes}
    chosen = [p for p in probes if p[0] in prof.probes or (deep and p[0] == "runtime")]
    if no_python:
        chosen = [p for p in chosen if p[0] not in ("python", "runtime")]
    if no_python:
        views: list[Any] = [NoPythonHost(host)]
    else:
        targets = host.python_targets() if any(p[0] in ENV_PROBES for p in chosen) else []
        views = [TargetHost(host, t) for t in targets] or [host]
    first = Collection(views[0], deadline, chosen)
    others = [Collection(v, deadline, [p for p in chosen if p[0] in ENV_PROBES]) for v in views[1:]]
    rules = load_rules(rule_paths, deadline=deadline) + list(policy.rules if policy else ())
    if policy is not None:
        policy.check_ignores({r.id for r in rules})
    evaluated, skipped = select_rules(rules, tuple(p[0] for p in chosen), owners)
    items, missing, statuses = first.gather()
    env_heads = {prefix for name, prefixes, _fn in chosen if name in ENV_PROBES for prefix in prefixes}
    machine = {k: v for k, v in items.items() if head(k) not in env_heads}
    gathered = [(items, missing, statuses)]
    for other in others:
        env_items, env_missing, env_statuses = other.gather()
        shared = {k: v for k, v in missing.items() if k not in env_heads}
        env_probe_statuses = {s.name: s for s in env_statuses}
        gathered.append(
            (
                {**machine, **env_items},
                {**shared, **env_missing},
                [env_probe_statuses.get(s.name, s) for s in statuses],
            )
        )
    out = []
    for env_items, env_missing, env_statuses in gathered:
        facts = derive(Facts(env_items, env_missing))
        out.append(
            CheckResult(
                facts=facts,
                results=evaluate(evaluated, facts),
                probes=env_statuses,
                host_kind=host.kind,
                source=source,
                elapsed=time.monotonic() - started,
                timed_out=list(getattr(host, "timed_out", [])),
                profile=prof.name,
                skipped_probes=[name for name, _p, _f in probes if name not in {c[0] for c in chosen}],
                skipped_rules=[r.id for r in skipped],
                policy=policy.path if policy else None,
                ignore=dict(policy.ignore) if policy else {},
                fail_unknown=prof.fail_unknown if fail_unknown is None else fail_unknown,
                unknown_ok=prof.unknown_ok if fail_unknown is None else (),
                unrecorded_ok=prof.unrecorded_ok and fail_unknown is None,
                overrides=[r for r in rules if r.replaces],
            )
        )
    return out
