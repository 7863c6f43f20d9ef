"""What `gpudoctor explain --log` prints for several rank logs: the rank (and node) that failed first and
why, its node's findings, and the other ranks folded into "waiting for rank K". Plain text; the JSON is the
triage's own document (explain/triage.as_json), written as it is."""

from __future__ import annotations

import json
from typing import Any

from .safe import terminal_lines

NETWORK = 1  # explain/triage.NETWORK: a role's tier (the report reads the triage, it does not import it)
SHOWN = 12  # waiting ranks shown one by one; the rest grouped by what they said
INDENT = "   "


def _name(p: Any) -> str:
    return p.key + (f" on {p.host}" if p.host else "")


def _runs(ranks: list) -> str:
    """`0-3, 7` for 0, 1, 2, 3, 7 (sorted)."""
    runs: list[str] = []
    for r in sorted(ranks):
        if runs and runs[-1].split("-")[-1] == str(r - 1):
            runs[-1] = f"{runs[-1].split('-')[0]}-{r}"
        else:
            runs.append(str(r))
    return ", ".join(runs)


def _ranks(processes: list) -> str:
    """`rank 0-3, 7` for ranks, the keys for the others."""
    ranks = [p.rank for p in processes if p.rank is not None]
    named = [("rank " if len(ranks) == 1 else "ranks ") + _runs(ranks)] if ranks else []
    return ", ".join(named + [p.key for p in processes if p.rank is None])


def _line(e: Any, width: int = 160) -> str:
    return f"{INDENT}| {e.text[:width]}{'...' if len(e.text) > width else ''}"


def _waiting(t: Any, ranks: list, title: str) -> list[str]:
    out = ["", f"{title} ({len(ranks)}):"]
    for r in ranks[:SHOWN]:
        when = f" at {r.first.stamp.text()}" if r.first.stamp else ""
        out.append(f"{INDENT}{_name(r.process)}: {r.first.role.kind}{when}")
    kinds: dict[str, list] = {}
    for r in ranks[SHOWN:]:
        kinds.setdefault(r.first.role.kind, []).append(r.process)
    out += [f"{INDENT}{_ranks(ps)}: {kind}" for kind, ps in kinds.items()]
    return out


def _first(t: Any) -> list[str]:
    f, e = t.first, t.first.event
    when = f" at {e.stamp.text()}" if e.stamp else ""
    why = {
        "earliest": "the earliest of the ranks that logged a cause",
        "by kind": "not every log carries a time: a cause before a network error, then the order",
        "only one": "the only rank that logged a cause",
        "node report": "no rank's log names a cause; this node's report does",
    }[f.how]
    if f.process is not None:
        out = [f"First failure: {_name(f.process)}{when} ({why})"]
    else:
        out = [f"First failure: node {f.node} ({why})"]
    cause = f"{e.role.cause} · {e.role.kind}" if e.role.cause else e.role.kind
    out.append(f"{INDENT}cause: {cause}")
    if e.role.tier == NETWORK:
        out.append(
            f"{INDENT}a network error, seen from this side: the peer it talked to, or the network between "
            "them, may be where the fault is"
        )
    if f.process is not None and e.text:
        out += [_line(e), f"{INDENT}  {e.file}:{e.line_no}"]
    health = f.health  # the findings that say its node is unwell: shown one by one, the others counted
    if health:
        out.append(f"{INDENT}its node {f.node}, as its report says:")
        out += [f"{INDENT}  {n.rule} · {n.message}" for n in health[:5]]
    if len(f.findings) > len(health[:5]):
        more = len(f.findings) - len(health[:5])
        out.append(f"{INDENT}{'and ' if health else ''}{more} other finding(s) in {f.node}'s report")
    elif f.node and t.reports:
        out.append(f"{INDENT}no report for its node {f.node} among the --reports given")
    if e.role.cause:
        out.append(f"{INDENT}(`gpudoctor rules show {e.role.cause}` says what it means and what to do)")
    return out


def text(t: Any) -> str:
    lines_read = sum(n for _, n in t.read.files)
    with_events = [r for r in t.ranks if r.first is not None]
    out = [
        f"Read {len(t.read.files)} log(s), {lines_read} line(s): {len(t.ranks)} process(es), "
        f"{len(with_events)} with an error line.",
        "",
    ]
    if t.first is None:
        out.append(
            "No rank's log names a cause: every rank that logged an error was waiting for another one."
        )
        if not t.reports:
            out.append(
                f"{INDENT}the nodes' reports (--reports DIR, from gpudoctor check --format json) would show "
                "an Xid or a port down on one of them"
            )
        if with_events:
            out += _waiting(t, with_events, "Waiting")
    else:
        out += _first(t)
        waiting = [r for r in t.ranks if r.waiting_for is not None]
        if waiting:
            out += _waiting(t, waiting, f"Waiting for {t.first.key}")
    if t.absent:
        absent = f"No log from rank(s) {_runs(t.absent)} (below the highest rank seen)"
        if t.first is None or t.first.process is None:
            absent += ": look there first, a rank that died or hung without a word leaves no line"
        else:  # a rank's own log names the cause: the logs not given are not suspects
            absent += ": not among the logs read"
        out += ["", absent]
    if t.silent:
        out += ["", f"Logged no error: {_ranks(t.silent)}"]
    return terminal_lines("\n".join(out) + "\n")


def json_text(doc: dict) -> str:
    return json.dumps(doc, indent=2) + "\n"
