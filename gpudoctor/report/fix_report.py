"""What `gpudoctor fix` prints: each step as it runs, the run's outcome step by step, past runs, an undo.

Plain text, on stdout, so that it reads the same in a terminal, a CI log and a test. A command's own
output is streamed between its step's header and its result, indented under a bar.
"""

from __future__ import annotations

from typing import Any, Optional

from .plan_report import step_lines
from .safe import terminal_lines, terminal_text

BAR = "   | "
STATUS = {
    "applied": "done",
    "failed": "FAILED",
    "declined": "skipped",
    "would-run": "would run",
    "instruction": "yours to do",
    "not-run": "not run",
}


def header(where: str, python: Optional[str], installer: Optional[str], dry_run: bool) -> str:
    lines = [f"gpudoctor fix · {where}" + (" · dry run: nothing will run" if dry_run else "")]
    if python:
        lines.append(f"Python environment: {python} (installer: {installer or 'unknown'})")
    return "\n".join(lines) + "\n\n"


def step_block(number: int, total: int, step: Any, width: int = 100) -> str:
    """The step as the plan shows it, numbered of the total."""
    lines = step_lines(number, step, width)
    lines[0] = f"[{number}/{total}] " + lines[0].split(". ", 1)[1]
    return terminal_lines("\n".join(lines) + "\n")


def output_line(text: str) -> str:
    return BAR + terminal_text(text) + "\n"


def result_line(result: Any) -> str:
    status = STATUS.get(result.status, result.status)
    took = f" in {result.duration:.1f} s" if result.status in ("applied", "failed") else ""
    reason = f": {result.reason}" if result.reason else ""
    lines = [f"   -> {status}{took}{reason}"]
    for name, (before, after) in sorted(result.changes.items()):
        lines.append(f"      {name}: {before or '(none)'} -> {after or '(removed)'}")
    if result.status == "failed" and result.tail:
        lines += ["      its last lines:"] + [f"      {BAR.strip()} {t}" for t in result.tail[-8:]]
    return terminal_lines("\n".join(lines) + "\n\n")


def rollback_lines(rb: Any) -> list[str]:
    if rb is None:
        return []
    if rb.ok:
        head = "Rolled back: the environment is as it was before the run (same distributions, same files)."
    else:
        head = "ROLLBACK INCOMPLETE: the environment is not as it was before the run."
    lines = [head]
    lines += [f"  removed {x}" for x in rb.removed] + [f"  put back {x}" for x in rb.restored]
    lines += [f"  no copy to put back: {x}" for x in rb.missing]
    if rb.leftovers:
        lines.append(
            f"  removed {len(rb.leftovers)} file(s) a stopped installer left, e.g. {rb.leftovers[0]}"
        )
    lines += [f"  problem: {x}" for x in rb.problems]
    return lines


def summary(result: Any, dry_run: bool) -> str:
    """The outcome: what ran, what is left, where the journal is, how to undo."""
    counts: dict[str, int] = {}
    for r in result.steps:
        counts[r.status] = counts.get(r.status, 0) + 1
    parts = [f"{n} {STATUS.get(s, s)}" for s, n in counts.items()]
    lines = [f"Outcome: {result.outcome}" + (f" ({', '.join(parts)})" if parts else "")]
    if result.failure:
        lines.append(f"Why: {result.failure}")
    lines += rollback_lines(result.rollback)
    left = [r for r in result.steps if r.status == "instruction"]
    if left:
        lines.append(
            f"{len(left)} step(s) are yours to carry out (see the plan): "
            + ", ".join(f"{r.number}" for r in left)
            + "."
        )
    if result.outcome == "nothing to do":
        lines.append(
            "Nothing to do: no step of the plan is one fix runs"
            + ("" if left else ", and the plan is empty")
            + "."
        )
    if result.run_id:
        lines.append(f"Run {result.run_id}: journal and restore point in {result.run_dir}")
        if result.outcome in ("fixed", "partly fixed"):
            lines.append(f"Undo it with: gpudoctor fix --undo {result.run_id}")
    elif dry_run:
        lines.append("Dry run: nothing was changed.")
    return terminal_lines("\n".join(lines) + "\n")


def runs_table(runs: list) -> str:
    if not runs:
        return "No fix runs yet.\n"
    rows = [("RUN", "KIND", "OUTCOME", "WHAT", "PYTHON")]
    for r in runs:
        what = f"undo of {r.undoes}" if r.kind == "undo" else f"{len(r.steps)} step(s) run"
        rows.append((r.run_id, r.kind, r.outcome, what, r.python))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = ["  ".join([*(c.ljust(w) for c, w in zip(row, widths)), row[4]]) for row in rows]
    return terminal_lines("\n".join(lines) + "\n")


def undo_changes(changes: dict) -> list[str]:
    """name: now -> after the undo."""
    return [
        f"  {name}: {now or '(none)'} -> {then or '(removed)'}"
        for name, (now, then) in sorted(changes.items())
    ]


def undo_summary(result: Any) -> str:
    lines = [f"Undo of run {result.target} in {result.python}: {result.outcome}"]
    if result.outcome in ("nothing to do",):
        lines.append("The environment is already as that run's restore point recorded it.")
    elif result.outcome in ("dry run", "declined"):
        lines += undo_changes(result.changes)
    if result.rollback is not None:
        lines += rollback_lines(result.rollback)
    if result.run_id:
        lines.append(f"Run {result.run_id}; undo this undo with: gpudoctor fix --undo {result.run_id}")
    return terminal_lines("\n".join(lines) + "\n")


def size_text(n: int) -> str:
    """Bytes in decimal units, as `du -h --si` writes them: 412.0 MB."""
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return ""  # not reached


def prune_report(pruned: list, kept: list, problems: list, dry_run: bool, quiet: bool, keep: tuple) -> str:
    """What --prune removed (or would), with sizes, and what it kept; after a fix (`quiet`), one line.
    `keep`: the policy, (newest runs kept, days kept)."""
    freed = size_text(sum(p.size for p in pruned))
    policy = f"fix keeps the newest {keep[0]} runs and every run of the last {keep[1]} days"
    if quiet:
        lines = [f"Removed {len(pruned)} old run(s), {freed} ({policy}; gpudoctor fix --prune)."]
        return terminal_lines("\n".join(lines + [f"  problem: {x}" for x in problems]) + "\n")
    lines = [f"Restore points: {policy}."]
    if pruned:
        lines.append(f"{'Would remove' if dry_run else 'Removed'} {len(pruned)} run(s), {freed}:")
        rows = [(p.run.run_id, p.run.kind, p.run.outcome, size_text(p.size), p.run.started) for p in pruned]
        widths = [max(len(row[i]) for row in rows) for i in range(4)]
        lines += ["  " + "  ".join([*(c.ljust(w) for c, w in zip(row, widths)), row[4]]) for row in rows]
    else:
        lines.append("Nothing to remove.")
    lines += [f"  problem: {x}" for x in problems]
    lines.append(f"Kept {len(kept)} run(s), {size_text(sum(size for _r, size in kept))}.")
    return terminal_lines("\n".join(lines) + "\n")
