"""What `gpudoctor explain --log` prints for several rank logs: the rank (and node) that failed first and
why, its node's findings, and the other ranks folded into "waiting for rank K". Plain text; the JSON is the
triage's own document (explain/triage.as_json), written as it is."""

from __future__ import annotations

import json
from typing import Any

from .safe import terminal_lines

SHOWN = 12  # waiting ranks shown one by one; the rest grouped by what they said
INDENT = "   "


def _name(p: Any) -> str:
    return p.key + (f" on {p.host}" if p.host else "")


def _ranks(processes: list) -> str:
    """`rank 0-3, 7` for ranks, the keys for the others."""
    ranks = sorted(p.rank for p in processes if p.rank is not None)
    runs: list[str] = []
    for r in ranks:
        if runs and runs[-1].split("-")[-1] == str(r - 1):
            runs[-1] = f"{runs[-1].split('-')[0]}-{r}"
        else:
            runs.append(str(r))
    named = [("rank " if len(ranks) == 1 else "ranks ") + ", ".join(runs)] if runs else []
    return ", ".join(named + [p.key for p in processes if p.rank is None])


def _line(e: Any, width: int = 160) -> str:
    return f"{INDENT}| {e.text[:width]}{'...' if len(e.text) > width else ''}"


def text(t: Any) -> str:
    lines_read = sum(n for _, n in t.read.files)
    with_events = [r for r in t.ranks if r.first is not None]
    head = (
        f"Read {len(t.read.files)} log(s), {lines_read} line(s): {len(t.ranks)} process(es), "
        f"{len(with_events)} with an error line."
    )
    out = [head, ""]
    f = t.first
    if f is None:
        out.append(
            "No rank's log names a cause: every rank that logged an error was waiting for another one."
        )
        if t.silent:
            out.append(
                f"{INDENT}logged no error (look at these first: hung, or killed without a message): "
                f"{_ranks(t.silent)}"
            )
        if not t.reports:
            out.append(
                f"{INDENT}the nodes' reports (--reports DIR, from gpudoctor check --format json) would "
                "show an Xid or a port down on one of them"
            )
    else:
        e = f.event
        when = f" at {e.stamp.text()}" if e.stamp else ""
        why = {
            "earliest": "the earliest of the ranks that logged a cause",
            "by kind": "the logs carry no time for every one: a cause before a network error, then the order",
            "only one": "the only rank that logged a cause",
            "node report": "no log names a cause; its node's report does",
        }[f.how]
        out.append(f"First failure: {_name(f.process)}{when} ({why})")
        cause = f"{e.role.cause} · {e.role.kind}" if e.role.cause else e.role.kind
        out.append(f"{INDENT}cause: {cause}")
        if e.text:
            out.append(_line(e))
            out.append(f"{INDENT}  {e.file}:{e.line_no}")
        if f.findings:
            out.append(f"{INDENT}its node {f.process.host} (check report):")
            out += [f"{INDENT}  {n.rule} · {n.message}" for n in f.findings[:5]]
        elif f.process.host and t.reports:
            out.append(f"{INDENT}no report for its node {f.process.host} among the --reports given")
        if e.role.cause:
            out.append(
                f"{INDENT}(gpudoctor rules show {e.role.cause}, or gpudoctor explain with the line, says "
                "what to do)"
            )
        waiting = [r for r in t.ranks if r.waiting_for is not None]
        if waiting:
            out += ["", f"Waiting for {f.process.key} ({len(waiting)}):"]
            for r in waiting[:SHOWN]:
                when = f" at {r.first.stamp.text()}" if r.first.stamp else ""
                out.append(f"{INDENT}{_name(r.process)}: {r.first.role.kind}{when}")
            rest = waiting[SHOWN:]
            if rest:
                kinds: dict[str, list] = {}
                for r in rest:
                    kinds.setdefault(r.first.role.kind, []).append(r.process)
                for kind, ps in kinds.items():
                    out.append(f"{INDENT}{_ranks(ps)}: {kind}")
        if t.silent:
            out += ["", f"Logged no error: {_ranks(t.silent)}"]
    return terminal_lines("\n".join(out) + "\n")


def json_text(doc: dict) -> str:
    return json.dumps(doc, indent=2) + "\n"
