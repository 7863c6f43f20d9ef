"""The fix plan as text (what `gpudoctor plan` and `check --plan` print) and as JSON (docs/plans.md).

Commands are printed whole on one line, as shlex.join writes them, so they can be pasted into a shell;
only the explanations around them wrap.
"""

from __future__ import annotations

import textwrap
from typing import Any

from .. import __version__
from ..plan import RISKS, FixPlan, PlanStep
from .safe import terminal_lines

SCHEMA = "gpudoctor.plan"
SCHEMA_VERSION = 1
INDENT = "   "
MINOR_COMPAT = "relies on CUDA minor-version compatibility (the driver is older than this CUDA's own minimum)"


def _wrap(label: str, text: str, width: int) -> list[str]:
    """`label: text` under the step, wrapped with a hanging indent."""
    first = f"{INDENT}{label}: "
    return textwrap.wrap(
        text,
        width=max(60, width),
        initial_indent=first,
        subsequent_indent=" " * len(first),
        break_on_hyphens=False,
        break_long_words=False,
    ) or [first.rstrip()]


def step_lines(number: int, step: PlanStep, width: int = 100) -> list[str]:
    head = f"{number}. {step.kind} · {step.risk} · {', '.join(step.rules)}"
    lines = [head + (f" · resolver {step.resolver}" if step.resolver else "")]
    if step.argv:
        lines.append(INDENT + step.command)
    if step.text:
        lines += _wrap("do" if not step.argv else "note", step.text, width)
    if step.minor_compat:
        lines += _wrap("caution", MINOR_COMPAT, width)
    for why in step.why:
        lines += _wrap("why", why, width)
    for reason in step.reasons:
        lines += _wrap("how", reason, width)
    for note in step.notes:
        lines += _wrap("note", note, width)
    return lines


def render_text(plan: FixPlan, where: str, width: int = 100) -> str:
    """The plan; `where` says what was checked ("live check", "snapshot h200 of host")."""
    lines = [f"Fix plan · gpudoctor {__version__} · {where}"]
    if plan.python:
        lines.append(f"Python environment: {plan.python} (installer: {plan.installer or 'unknown'})")
    lines.append("")
    if not plan.steps:
        lines.append("Nothing to do: no finding has a fix step.")
    for n, step in enumerate(plan.steps, 1):
        lines += step_lines(n, step, width)
    if plan.notes:
        lines.append("")
        for note in plan.notes:
            lines += [line[len(INDENT) :] for line in _wrap("Note", note, width)]
    counts = plan.counts()
    lines.append("")
    lines.append(
        f"{len(plan.steps)} step(s): "
        + ", ".join(f"{counts[risk]} {risk}" for risk in RISKS)
        + ". Nothing has been run."
    )
    return terminal_lines("\n".join(lines) + "\n")


def step_data(number: int, step: PlanStep) -> dict[str, Any]:
    return {
        "number": number,
        "kind": step.kind,
        "risk": step.risk,
        "argv": list(step.argv),
        "command": step.command,
        "text": step.text,
        "rules": list(step.rules),
        "why": list(step.why),
        "resolver": step.resolver or None,
        "minor_compat": step.minor_compat,
        "reasons": list(step.reasons),
        "notes": list(step.notes),
    }


def plan_data(plan: FixPlan, host: dict[str, Any]) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "gpudoctor": __version__,
        "host": host,
        "python": {"executable": plan.python, "installer": plan.installer},
        "steps": [step_data(n, s) for n, s in enumerate(plan.steps, 1)],
        "notes": list(plan.notes),
        "summary": dict(plan.counts(), steps=len(plan.steps)),
    }
