"""Rules as text: the `rules list` table, `rules show`, and `explain` (error message -> rule)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..engine.model import Rule

if TYPE_CHECKING:  # the fleet rules load their file when imported; only `rules show` needs them
    from ..fleet.rules import FleetRule


def rule_table(rules: list[Rule]) -> str:
    ordered = sorted(rules, key=lambda r: r.id)
    w = max((len(r.id) for r in ordered), default=2)
    lines = [f"{'ID'.ljust(w)}  SEVERITY  AREA        TITLE"]
    lines += [f"{r.id.ljust(w)}  {r.severity.ljust(8)}  {r.category.ljust(10)}  {r.title}" for r in ordered]
    return "\n".join(lines) + "\n"


def rule_detail(rule: Rule) -> str:
    out = [
        f"{rule.id}: {rule.title}",
        f"severity: {rule.severity}   area: {rule.category}"
        + (f"   for each: {rule.for_each}" if rule.for_each else ""),
        f"defined in: {rule.file}:{rule.line}",
        "",
        f"message: {rule.message}",
        f"why: {rule.why}",
    ]
    if rule.errors:
        out += ["", "errors users meet:"] + [f"  {e}" for e in rule.errors]
    if rule.fix:
        out += ["", "fix:"]
        for step in rule.fix:
            what = " ".join(step.argv) if step.argv else step.text
            if step.resolver:
                args = "".join(f" {k}={v}" for k, v in step.args)
                what = f"computed by the {step.resolver} resolver{args} (gpudoctor plan): {step.text}"
            out.append(f"  [{step.kind}] " + what)
            if step.argv and step.text:
                out.append(f"         {step.text}")
    if rule.references:
        out += ["", "references:"] + [f"  {r}" for r in rule.references]
    return "\n".join(out) + "\n"


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9_]+", text.lower()) if len(w) > 2}


def explain_text(rules: list[Rule], message: str) -> tuple[str, bool]:
    """Rules whose known error messages match the pasted one: substring first, then shared words."""
    pasted = message.lower()
    scored = []
    for rule in rules:
        best = 0.0
        for err in rule.errors:
            e = err.lower()
            if e in pasted or pasted in e:
                best = max(best, 1.0)
            else:
                common = _words(e) & _words(pasted)
                best = max(best, len(common) / max(1, len(_words(e))))
        if best >= 0.6:
            scored.append((best, rule))
    scored.sort(key=lambda s: (-s[0], s[1].id))
    if not scored:
        return "No rule knows this message. `gpudoctor check` may still find the cause.\n", False
    parts = []
    for _score, rule in scored[:3]:
        parts.append(rule_detail(rule))
    return "\n".join(parts) + "\nRun `gpudoctor check` to see whether it applies to this host.\n", True


def fleet_rule_detail(rule: FleetRule) -> str:
    """`rules show` for a fleet rule (rules/fleet/fleet.yaml): what it compares across nodes."""
    compares = rule.fact + (f" by {rule.by}" if rule.by else "")
    kind = rule.kind + (f" ({rule.worse} is worse)" if rule.worse else "")
    lines = [
        f"{rule.id}: {rule.title}",
        f"severity: {rule.severity}   area: fleet   kind: {kind}",
        f"compares: {compares} across the nodes' reports (gpudoctor fleet)",
        "defined in: rules/fleet/fleet.yaml",
        "",
        f"why: {rule.why}",
    ]
    return "\n".join(lines) + "\n"
