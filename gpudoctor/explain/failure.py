"""A failed command's error output, explained against this host: what `gpudoctor run` prints after it."""

from __future__ import annotations

from typing import Any, Optional

MAX_CAUSES = 3


def _short(answer: Any) -> list[str]:
    cand, verdict = answer.candidate, answer.verdict
    head = f"  {cand.known.id} · {cand.known.title}"
    if verdict.status == "program error":
        does = [line for line in verdict.lines if line.startswith("do:")][:2]
        does += [line for line in verdict.lines if line.startswith("here:")]
        return [head + ": an error of the program, not of this host"] + [f"    {line}" for line in does]
    shown = [f"    {line}" for line in verdict.lines[:3]]
    return [f"{head}: {verdict.status} here"] + shown


def explain_failure(tail: str, timeout: float = 10.0, target: Optional[Any] = None) -> str:
    """A short block (empty when nothing in `tail` is recognised) to print after the command's output:
    each cause its error output matches, and whether it applies on this host. `target` is the command's
    interpreter (host/command_python.Judged): that Python environment is judged, and the block says which
    and why; without one (or where the command names none) the default target is judged, and said so."""
    from .answer import candidates_by_line, judged_triage
    from .index import build

    matcher, entries = build()
    per_line = candidates_by_line(tail.splitlines(), matcher)
    if not per_line:
        return ""
    from ..host.base import Deadline
    from ..host.open import open_host
    from ..pipeline.check import run_checks
    from ..plan import build_plan

    deadline = Deadline(timeout)
    chosen = target.interpreter if target is not None else None
    host, source = open_host(None, [], deadline)
    if chosen:  # python.selected_by says "command": the command's own interpreter
        from ..host.target import TargetHost

        host = TargetHost(host, (chosen, "command"))
    result = run_checks(host, source, deadline, [])[0]
    plan = build_plan(result.findings, result.facts)
    lines = ["gpudoctor: the command failed; what its error output points at on this host:"]
    lines.append("  " + judged_line(target, host))
    for found, _count, _lines in judged_triage(per_line, result, plan, entries)[:MAX_CAUSES]:
        lines += _short(found)
    python = f" --python {chosen}" if chosen else ""
    lines.append(
        f"  (gpudoctor explain --log FILE{python} reads a whole log; gpudoctor check judges the whole host)"
    )
    from ..report.safe import terminal_lines

    return terminal_lines("\n".join(lines) + "\n")  # it names the command's interpreter, from its argv


def judged_line(target: Optional[Any], host: Any) -> str:
    """Which Python environment was judged, and why that one: the command's interpreter, or the default
    target (as `check` picks it) with the reason the command named none."""
    if target is not None and target.interpreter:
        return f"judged {target.interpreter}: {target.reason}"
    from ..report.summary import CHOSEN_BY

    targets = host.python_targets()
    default, chosen_by = targets[0] if targets else ("", "")
    why = CHOSEN_BY.get(chosen_by, chosen_by)
    said = target.reason if target is not None else "the command was not read"
    return f"{said}; judging {default} ({why})" if default else f"{said}; judging no Python environment"
