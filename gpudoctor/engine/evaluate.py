"""Evaluates rules on Facts: where a rule applies, for each item it iterates: findings, a pass or unknown."""

from __future__ import annotations

import json
from typing import Any, Optional

from ..facts import Facts
from .conditions import Evaluation
from .model import NOT_APPLICABLE, Finding, FixStep, Rule, RuleResult
from .template import UnsafeArgument, render, render_arg

# Fact sections that hold what a run is given rather than what it reads of the host: a policy's requirements
# (`policy.*`, gpudoctor/policy.py). A requirement the policy does not set is no requirement: a rule whose
# condition reads a parameter the run is not given does not apply (neither a failure nor "unknown").
PARAMETERS = ("policy", "image", "lock")  # the run is given them: a policy, check --image, check --lock
_PREFIXES = tuple(f"{section}." for section in PARAMETERS)


def evaluate(rules: list[Rule], facts: Facts) -> list[RuleResult]:
    return [evaluate_rule(rule, facts) for rule in rules]


def parameters_given(rule: Rule, facts: Facts) -> bool:
    """Whether the run is given every parameter (PARAMETERS) the rule's condition reads."""
    return all(name in facts for name in parameters(rule.when))


def parameters(cond: Any, found: Optional[list[str]] = None) -> list[str]:
    """The parameters (PARAMETERS) a condition tree reads, compared or compared with ({fact: NAME})."""
    found = [] if found is None else found
    if isinstance(cond, list):
        for part in cond:
            parameters(part, found)
    elif isinstance(cond, dict):
        for key, value in cond.items():
            if key == "fact":
                if isinstance(value, str) and value.startswith(_PREFIXES):
                    found.append(value)
            elif isinstance(value, (dict, list)):
                parameters(value, found)
    return found


def evaluate_rule(rule: Rule, facts: Facts) -> RuleResult:
    if not parameters_given(rule, facts):
        return RuleResult(rule, NOT_APPLICABLE)
    where: dict[str, Any] = {}  # the facts `applies` read: part of every finding's evidence
    if rule.applies is not None:  # where the rule is about, judged first and once: it looks, never assumes
        ev = Evaluation(facts, None)
        holds = ev(rule.applies)
        if holds is None:
            return RuleResult(rule, "unknown", unknown_facts=tuple(sorted(ev.unknown.items())))
        if holds is False:
            here = ", ".join(f"{name} is {_value(value)}" for name, value in sorted(ev.read.items()))
            reason = f"applies only where {condition_text(rule.applies)}" + (f"; here {here}" if here else "")
            return RuleResult(rule, NOT_APPLICABLE, reason=reason)
        where = ev.read
    items: list[Optional[int]]
    if rule.for_each is None:
        items = [None]
    else:
        count_fact = facts.get(f"{rule.for_each}.count")
        if not count_fact.known:
            return RuleResult(
                rule, "unknown", unknown_facts=((f"{rule.for_each}.count", count_fact.unknown or ""),)
            )
        items = list(range(facts.count(rule.for_each)))
        if not items:  # no GPU, no framework, no cuDNN copy: nothing for the rule to be about
            return RuleResult(rule, NOT_APPLICABLE)
    findings: list[Finding] = []
    unknown: dict[str, str] = {}
    for item in items:
        ev = Evaluation(facts, item)
        result = ev(rule.when)
        if result is True:
            findings.append(
                Finding(
                    rule=rule,
                    message=render(rule.message, facts, item),
                    why=render(rule.why, facts, item),
                    fix=tuple(_render_step(s, facts, item) for s in rule.fix),
                    item=item,
                    evidence=tuple(sorted({**where, **ev.read}.items())),
                )
            )
        elif result is None:
            unknown.update(ev.unknown)
    if findings:
        return RuleResult(rule, "fired", tuple(findings))
    if unknown:
        return RuleResult(rule, "unknown", unknown_facts=tuple(sorted(unknown.items())))
    return RuleResult(rule, "passed")


def condition_text(cond: Any) -> str:
    """A condition as one line, in the words its YAML uses: `gpus.count ge 2 and container.detected eq
    false`; a nested all/any is parenthesised."""
    for word, joiner in (("all", " and "), ("any", " or ")):
        if word in cond:
            return joiner.join(
                f"({condition_text(c)})" if "all" in c or "any" in c else condition_text(c)
                for c in cond[word]
            )
    if "not" in cond:
        return f"not ({condition_text(cond['not'])})"
    op = next(k for k in cond if k != "fact")
    value = cond[op]
    return f"{cond['fact']} {op} {value['fact'] if isinstance(value, dict) else _value(value)}"


def _value(value: Any) -> str:
    """A value as a condition or a reason shows it: YAML's words for booleans, a fact not read as unknown."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if value is None:
        return "unknown"
    if isinstance(value, str) and (not value or value != value.strip()):
        return json.dumps(value)
    return str(value)


def _render_step(step: FixStep, facts: Facts, item: Optional[int]) -> FixStep:
    text = render(step.text, facts, item)
    if step.resolver:  # carried unresolved: the planner resolves it (gpudoctor/plan.py)
        return FixStep(step.kind, (), text, step.resolver, step.args)
    if not step.argv:
        return FixStep(step.kind, (), text)
    try:
        argv = tuple(render_arg(a, facts, item) for a in step.argv)
    except UnsafeArgument as e:
        # A command that cannot be filled in safely is shown as what to do, never run.
        shown = " ".join(render(a, facts, item) for a in step.argv)
        return FixStep("manual", (), f"{text + ' ' if text else ''}Run, after checking it: {shown} ({e})")
    return FixStep(step.kind, argv, text)
