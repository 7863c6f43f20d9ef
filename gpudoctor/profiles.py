"""Profiles: what a check reads, how long it may take, and what fails it, for where it runs.

    workstation  every probe, the full report, --fail-on error by default (gpudoctor's default)
    ci           every probe, plain output, --fail-on warning by default; an error-level rule that could
                 not be evaluated exits 2
    preflight    only the fast probes (driver, gpus, container, system, the Python environment's
                 metadata, the processes holding GPUs, and the NVLink fabric), a 5 s deadline, one line
                 when healthy and one line per error when not; fails on errors only, whatever the policy
                 says; an error-level rule that could not be evaluated exits 2

A profile that skips probes evaluates only the rules whose facts its probes produce (`select_rules`): a
rule that names any fact of a skipped probe, in its condition, message or fix, is not evaluated at all and
is listed as skipped, so that it is neither a failure nor an "unknown" in any report.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple, Optional

from .engine import extensions, template
from .engine.model import Rule
from .facts import head
from .probes import in_profile

KERNEL_LOG_FACTS = ("kernel_log", "xid", "sxid")
# The services gpudoctor asks systemd about (gpudoctor/probes/fabric.py): unknown in every container, where
# the host's service manager cannot be asked. NVML's fabric facts (`fabric`) are not among them.
SERVICE_FACTS = ("fabric_manager", "imex")
# Each probe module's PROBE declares the profiles that run it (gpudoctor/probes/__init__.py).
ALL_PROBES = in_profile("workstation")


class Profile(NamedTuple):  # not a dataclass: its generated methods cost every check a third of a millisecond
    name: str
    probes: tuple[str, ...]  # the probes it runs, by registry name
    fail_on: str  # the default --fail-on
    timeout: float  # the default --timeout, seconds
    fail_on_fixed: bool = False  # a policy's fail_on does not change it (an explicit --fail-on does)
    plain: bool = False  # never styled output, even on a terminal
    one_line: bool = False  # the text format is one line when healthy, one line per error when not
    fail_unknown: bool = False  # an error-level rule that could not be evaluated makes the exit code 2
    # Fact sections many hosts never grant (the kernel log needs root or CAP_SYSLOG): an error-level rule
    # unknown only for want of them does not make fail_unknown exit 2 by itself; the report still shows it
    # as could not be evaluated, GD-KLOG-001 says why and what grants access, and --fail-on-unknown counts
    # it too.
    unknown_ok: tuple[str, ...] = ()
    # Likewise a rule unknown only because a replayed snapshot did not record its facts (one an older
    # gpudoctor wrote, before it read them): a snapshot is not the host, and a live check never answers so.
    unrecorded_ok: bool = False


PROFILES: dict[str, Profile] = {
    "workstation": Profile("workstation", ALL_PROBES, "error", 10.0),
    "ci": Profile(
        "ci",
        ALL_PROBES,
        "warning",
        10.0,
        plain=True,
        fail_unknown=True,
        unknown_ok=KERNEL_LOG_FACTS + SERVICE_FACTS,
        unrecorded_ok=True,
    ),
    "preflight": Profile(
        "preflight",
        in_profile("preflight"),
        "error",
        5.0,
        fail_on_fixed=True,
        plain=True,
        one_line=True,
        fail_unknown=True,
        unknown_ok=KERNEL_LOG_FACTS + SERVICE_FACTS,
        unrecorded_ok=True,
    ),
}
DEFAULT = "workstation"


def resolve_fail_on(profile: Profile, flag: Optional[str], policy: Optional[str]) -> str:
    """--fail-on when given, else the policy's (unless the profile fixes it), else the profile's."""
    if flag is not None:
        return flag
    if policy is not None and not profile.fail_on_fixed:
        return policy
    return profile.fail_on


DEEP_TIMEOUT = 30.0  # --deep imports frameworks: TensorFlow alone can take 10 s on a cold cache


def resolve_timeout(profile: Profile, flag: Optional[float], deep: bool = False) -> float:
    """Every command's deadline: --timeout when given, else the profile's deadline (check's --profile; the
    workstation profile's for plan, facts, snapshot, fix and explain), raised to DEEP_TIMEOUT for --deep.
    Only `run` (10 s to explain a failure) and `bench` (600 s to measure) set their own, in options.py."""
    if flag is not None:
        return flag
    return max(profile.timeout, DEEP_TIMEOUT) if deep else profile.timeout


def _condition_facts(cond: Any) -> Iterable[str]:
    if not isinstance(cond, dict):
        return
    for key in ("all", "any"):
        for part in cond.get(key, ()):
            yield from _condition_facts(part)
    if "not" in cond:
        yield from _condition_facts(cond["not"])
    if "fact" in cond:
        yield cond["fact"]
        for op, value in cond.items():
            if isinstance(value, dict) and "fact" in value:
                yield value["fact"]
            if op in extensions.OPERATORS:
                yield from extensions.OPERATORS[op].reads


def rule_facts(rule: Rule) -> set[str]:
    """Every fact a rule names: in its conditions (`applies` and `when`), its iteration, its texts and its
    fix steps."""
    names = set(_condition_facts(rule.when))
    if rule.applies is not None:
        names.update(_condition_facts(rule.applies))
    if rule.for_each:
        names.add(f"{rule.for_each}.count")
    texts = [rule.message, rule.why, rule.title] + [s.text for s in rule.fix]
    texts += [a for s in rule.fix for a in s.argv]
    for text in texts:
        if "{" in text:  # most texts name no fact: no pattern run on them
            names.update(name for name, _filter in template.placeholders(text))
    return names


def select_rules(
    rules: list[Rule], probes: tuple[str, ...], owners: dict[str, str]
) -> tuple[list[Rule], list[Rule]]:
    """(rules to evaluate, rules skipped): a rule is skipped when it names a fact whose owning probe
    (owners: fact-name head -> probe name, e.g. "cudnn" -> "libraries") is not among `probes`."""
    keep: list[Rule] = []
    skip: list[Rule] = []
    skipped = {owner for owner in owners.values() if owner not in probes}
    for rule in rules:
        needs_skipped = any(owners.get(head(name)) in skipped for name in rule_facts(rule))
        (skip if needs_skipped else keep).append(rule)
    return keep, skip
