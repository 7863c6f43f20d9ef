"""JUnit XML: one test case per rule evaluated, one test suite per area, for CI test viewers.

A rule that fired at or above --fail-on is a failure carrying its messages and fixes; one that fired below
it passes, with the finding in its system-out. A rule that could not be evaluated is skipped, with the
unknown facts as the reason; so is a rule that does not apply here, and one the policy ignores, each with
its reason.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from .. import __version__
from ..engine.model import CATEGORIES, NOT_APPLICABLE, Finding, RuleResult
from ..pipeline.result import Result, Verdict
from .lines import command_text

# Characters XML 1.0 cannot carry at all, even escaped.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _clean(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def _finding_text(f: Finding) -> str:
    lines = [f.message, f"why: {f.why}"]
    for step in f.fix:
        if step.argv:
            lines.append(f"fix: {command_text(step)}" + (f"  ({step.text})" if step.text else ""))
        else:
            lines.append(f"fix: {step.text}")
    return "\n".join(lines)


def _case(suite: ET.Element, check: Result, r: RuleResult, verdict: Verdict) -> tuple[int, int]:
    """Adds the rule's test case; returns (failures, skipped) it counts for."""
    case = ET.SubElement(
        suite,
        "testcase",
        {"classname": f"gpudoctor.{r.rule.category}", "name": f"{r.rule.id} {r.rule.title}"},
    )
    status = check.status(r)
    if status == "unknown":
        reasons = "; ".join(f"{name}: {reason}" for name, reason in r.unknown_facts)
        ET.SubElement(case, "skipped", {"message": _clean(f"could not be evaluated: {reasons}")})
        return 0, 1
    if status == NOT_APPLICABLE:
        why = r.reason or f"no {r.rule.for_each or 'what it checks'} on this host"
        ET.SubElement(case, "skipped", {"message": _clean(f"not applicable: {why}")})
        return 0, 1
    if status == "ignored":
        reason = check.ignore[r.rule.id]
        ET.SubElement(case, "skipped", {"message": _clean(f"ignored by policy: {reason}")})
        out = ET.SubElement(case, "system-out")
        out.text = _clean("\n\n".join(_finding_text(f) for f in r.findings))
        return 0, 1
    if status == "fired":
        body = _clean("\n\n".join(_finding_text(f) for f in r.findings))
        if verdict.fails(r.rule.id):
            failure = ET.SubElement(
                case, "failure", {"type": r.rule.severity, "message": _clean(r.findings[0].message)}
            )
            failure.text = body
            return 1, 0
        out = ET.SubElement(case, "system-out")
        out.text = _clean(f"{r.rule.severity} (below --fail-on {verdict.fail_on}):\n{body}")
    return 0, 0


def _properties(result: Result, fail_on: str) -> list[tuple[str, str]]:
    props = [
        ("gpudoctor.version", __version__),
        ("host", result.source if result.host_kind == "snapshot" else "live"),
        ("profile", result.profile),
        ("fail_on", fail_on),
    ]
    if result.policy:
        props.append(("policy", result.policy))
    if result.timed_out:
        props.append(("timed_out", ", ".join(result.timed_out)))
    return props


def render(result: Result, verdict: Verdict, include_timing: bool = True) -> str:
    """`verdict`: the run's, decided once by the caller (pipeline/verdict.py); it says which rules fail."""
    hostname = result.facts.value("host.hostname")
    root = ET.Element("testsuites", {"name": "gpudoctor"})
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for category in CATEGORIES:
        rules = [r for r in result.results if r.rule.category == category]
        if not rules:
            continue
        suite = ET.SubElement(root, "testsuite", {"name": f"gpudoctor.{category}"})
        props = ET.SubElement(suite, "properties")
        for name, value in _properties(result, verdict.fail_on):
            ET.SubElement(props, "property", {"name": name, "value": _clean(value)})
        failures = skipped = 0
        for r in rules:
            f, s = _case(suite, result, r, verdict)
            failures, skipped = failures + f, skipped + s
        counts = {"tests": len(rules), "failures": failures, "errors": 0, "skipped": skipped}
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
        if hostname:
            suite.set("hostname", _clean(str(hostname)))
    for key, value in totals.items():
        root.set(key, str(value))
    if include_timing:
        root.set("time", f"{result.elapsed:.3f}")
    ET.indent(root, space="  ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
