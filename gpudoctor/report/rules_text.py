"""Rules as text: the `rules list` table, `rules show`, and `explain` (error message -> rule)."""

from __future__ import annotations

from ..engine.model import Rule
from .rule_docs import condition_lines
from .safe import terminal_lines


def rule_table(rules: list[Rule]) -> str:
    ordered = sorted(rules, key=lambda r: r.id)
    w = max((len(r.id) for r in ordered), default=2)
    lines = [f"{'ID'.ljust(w)}  SEVERITY  AREA        TITLE"]
    lines += [f"{r.id.ljust(w)}  {r.severity.ljust(8)}  {r.category.ljust(10)}  {r.title}" for r in ordered]
    return terminal_lines("\n".join(lines) + "\n")  # a user rule file's texts: no escape reaches the terminal


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
    if rule.applies is not None:
        out += ["", "applies only where (else not applicable):"] + [
            f"  {x}" for x in condition_lines(rule.applies)
        ]
    if rule.when is not None:
        out += ["", "fires when:"] + [f"  {x}" for x in condition_lines(rule.when)]
    if rule.errors:
        out += ["", "errors users meet:"] + [f"  {e.text}" for e in rule.errors]
    if rule.silent:
        out += ["", f"no error message: {rule.silent}"]
    if rule.refines:
        out += ["", f"a more specific cause than: {', '.join(rule.refines)}"]
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
    return terminal_lines("\n".join(out) + "\n")
