"""A failed command's error output, explained against this host: what `gpudoctor run` prints after it."""

from __future__ import annotations

from typing import Any

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


def explain_failure(tail: str, timeout: float = 10.0) -> str:
    """A short block (empty when nothing in `tail` is recognised) to print after the command's output:
    each cause its error output matches, and whether it applies on this host."""
    from .answer import answer, build, triage

    matcher, entries = build()
    groups = triage(tail.splitlines(), matcher)
    if not groups:
        return ""
    from ..check import run_checks
    from ..host.base import Deadline
    from ..host.open import open_host
    from ..plan import build_plan

    deadline = Deadline(timeout)
    host, source = open_host(None, [], deadline)
    result = run_checks(host, source, deadline, [])[0]
    plan = build_plan(result.findings, result.facts)
    lines = ["gpudoctor: the command failed; what its error output points at on this host:"]
    for cand, _hits in list(groups.values())[:MAX_CAUSES]:
        lines += _short(answer([cand], result, plan, entries)[0])
    lines.append("  (gpudoctor explain --log FILE reads a whole log; gpudoctor check judges the whole host)")
    return "\n".join(lines) + "\n"
