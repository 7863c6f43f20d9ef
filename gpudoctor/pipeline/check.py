"""One check, start to end, in three steps: choose the probes and rules, fan out over the Python
environments judged (`--python` repeated; the machine is probed once), judge each into a Result."""

from __future__ import annotations

import time
from typing import Any, NamedTuple, Optional

from ..collect import Collection, ProbeStatus
from ..derive import derive
from ..engine.evaluate import evaluate, parameters_given
from ..engine.loader import load_rules
from ..engine.model import Rule
from ..facts import Fact, Facts, head
from ..host.base import Deadline
from ..policy import Policy
from ..probes import ENV_PROBES
from ..profiles import PROFILES, Profile, select_rules
from .result import Result, Target


class Choice(NamedTuple):  # NamedTuples, not dataclasses: these cost every check 0.4 ms less to define
    """What a check runs: every probe known, those chosen, and the rules to evaluate and those skipped."""

    probes: list  # every probe of the registry: (name, fact prefixes, function)
    chosen: list  # those the profile (and --deep, --no-python) run
    rules: list[Rule]  # every rule that applies: those on requirements the policy does not set are left out
    evaluated: list[Rule]
    skipped: list[Rule]  # rules naming facts of probes not chosen
    given: dict[str, Fact]  # the facts the run is given, not read: the policy's requirements (policy.*)


class Environment(NamedTuple):
    """One Python environment's facts as collected (not yet derived), with the machine's shared in."""

    target: Target
    items: dict[str, Fact]
    missing: dict[str, str]
    statuses: list[ProbeStatus]


def choose_probes(
    profile: Profile, data_dir: Optional[str], deep: bool, no_python: bool, since: Optional[float]
) -> tuple[list, list]:
    """(every probe, those that run). Every probe, the runtime one too, so that rules on runtime facts
    are skipped without --deep."""
    from ..probes import registry

    probes = registry(data_dir, deep=True, since=since)
    chosen = [p for p in probes if p[0] in profile.probes or (deep and p[0] == "runtime")]
    if no_python:
        chosen = [p for p in chosen if p[0] not in ("python", "runtime")]
    return probes, chosen


def choose_rules(
    probes: list,
    chosen: list,
    rule_paths: list[str],
    policy: Optional[Policy],
    deadline: Deadline,
    given: Optional[dict[str, Fact]] = None,
) -> Choice:
    """The rules that apply (rules/policy.yaml's on the requirements the policy sets), split by the probes
    chosen. Raises RuleLoadError for bad rule files and PolicyError for a policy ignoring a rule that does
    not exist."""
    rules = load_rules(rule_paths, deadline=deadline)
    given = {**(policy.facts if policy else {}), **(given or {})}
    if policy is not None:
        policy.check_ignores({r.id for r in rules})
    rules = [r for r in rules if parameters_given(r, Facts(given))]
    owners = {prefix: name for name, prefixes, _fn in probes for prefix in prefixes}
    evaluated, skipped = select_rules(rules, tuple(p[0] for p in chosen), owners)
    return Choice(probes, chosen, rules, evaluated, skipped, given)


def fan_out(host: Any, deadline: Deadline, chosen: list, no_python: bool) -> list[tuple[Target, Collection]]:
    """Start the probes: all of them for the first environment, the Python environment's (ENV_PROBES)
    for each other one; each environment with the target it judges."""
    from ..host.target import NoPythonHost, TargetHost

    if no_python:
        views: list[tuple[Target, Any]] = [(Target(), NoPythonHost(host))]
    else:
        targets = host.python_targets() if any(p[0] in ENV_PROBES for p in chosen) else []
        views = [(Target(*t), TargetHost(host, t)) for t in targets] or [(Target(), host)]
    env_probes = [p for p in chosen if p[0] in ENV_PROBES]
    return [
        (target, Collection(view, deadline, chosen if n == 0 else env_probes))
        for n, (target, view) in enumerate(views)
    ]


def gather(started: list[tuple[Target, Collection]], chosen: list) -> list[Environment]:
    """Each environment's facts: its own Python environment's, and the machine's, read once."""
    (target, first), others = started[0], started[1:]
    items, missing, statuses = first.gather()
    env_heads = {prefix for name, prefixes, _fn in chosen if name in ENV_PROBES for prefix in prefixes}
    machine = {k: v for k, v in items.items() if head(k) not in env_heads}
    shared = {k: v for k, v in missing.items() if k not in env_heads}
    out = [Environment(target, items, missing, statuses)]
    for other_target, other in others:
        env_items, env_missing, env_statuses = other.gather()
        by_name = {s.name: s for s in env_statuses}
        out.append(
            Environment(
                other_target,
                {**machine, **env_items},
                {**shared, **env_missing},
                [by_name.get(s.name, s) for s in statuses],
            )
        )
    return out


def judge(env: Environment, choice: Choice, started: float, **fields: Any) -> Result:
    """The environment's facts derived, the rules evaluated on them: its Result (`started`: when the
    check began, time.monotonic())."""
    facts = derive(Facts({**env.items, **choice.given}, env.missing))
    results = evaluate(choice.evaluated, facts)
    return Result(
        facts=facts,
        results=results,
        elapsed=time.monotonic() - started,
        probes=env.statuses,
        target=env.target,
        skipped_probes=[name for name, _p, _f in choice.probes if name not in {c[0] for c in choice.chosen}],
        skipped_rules=[r.id for r in choice.skipped],
        overrides=[r for r in choice.rules if r.replaces],
        **fields,
    )


def run_check(host: Any, source: str, deadline: Deadline, rule_paths: list[str], **options: Any) -> Result:
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
    given: Optional[dict[str, Fact]] = None,
) -> list[Result]:
    """Collect facts and evaluate rules, once per Python environment judged (host.python_targets()).

    The machine is probed once; the probes of the Python environment (ENV_PROBES) run for each
    interpreter, all concurrently. The rules load while the probes run (they mostly wait on I/O).
    The profile says which probes run; rules that name facts of the others are not evaluated. The policy's
    requirements are facts that rules judge; its ignored rules' findings are kept apart. Raises
    RuleLoadError for bad rule files and PolicyError for a policy ignoring a rule that does not exist.
    `data_dir` is the directory whose filesystem the storage probe reports (`check --data-dir`); `deep`
    adds the runtime probe (child processes that load libcuda and import each framework); `fail_unknown`
    overrides the profile's choice of whether an error-level rule that could not be evaluated fails;
    `no_python` judges the machine alone (a node health check): no Python environment, no framework rule;
    `since` (seconds, `check --since`) is the window of kernel-log events judged (None: since boot); `given`
    are facts the run is given besides the policy's (an image's or a lockfile's: subject.py)."""
    started = time.monotonic()
    prof = profile or PROFILES["workstation"]
    probes, chosen = choose_probes(prof, data_dir, deep, no_python, since)
    running = fan_out(host, deadline, chosen, no_python)
    choice = choose_rules(probes, chosen, rule_paths, policy, deadline, given)
    return [
        judge(
            env,
            choice,
            started,
            host_kind=host.kind,
            source=source,
            timed_out=list(getattr(host, "timed_out", [])),
            profile=prof.name,
            policy=policy.path if policy else None,
            ignore=dict(policy.ignore) if policy else {},
            fail_unknown=prof.fail_unknown if fail_unknown is None else fail_unknown,
            unknown_ok=prof.unknown_ok if fail_unknown is None else (),
            unrecorded_ok=prof.unrecorded_ok and fail_unknown is None,
        )
        for env in gather(running, chosen)
    ]
