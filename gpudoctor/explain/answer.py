"""The answer to a pasted error (or a log): each candidate cause, and whether it applies on this host.

A rule candidate is judged by the check's own result for it: it **applies here** (it fired: its finding's
message, rendered from this host's facts, and the plan's command for it), **does not apply here** (it was
evaluated and did not fire: the facts it read, so the user sees why), **could not be checked** (a fact it
needs is unknown: which, and why) or **not checked** (the profile or --deep leaves it out). An explain
entry (rules/explain/) is a program error, not a host fault: its meaning, what to do, when to suspect the
hardware, and whether this host's kernel log holds Xid events that would make it worth suspecting.
Nothing here renders a template without facts: rules' messages reach the user only as findings.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..engine.conditions import Evaluation
from ..engine.model import NOT_APPLICABLE, Rule
from .entries import Entry
from .match import Candidate, Known, Matcher
from .rank import by_evidence

MAX_SHOWN = 3
MAX_FACTS = 5
EXAMPLES = 3  # lines shown for each cause of a log
MISSES = 100_000  # distinct unmatched log lines remembered (a repeat is not matched again)
DIGIT = re.compile(r"\d")


def knowns(rules: Sequence[Rule], entries: Sequence[Entry]) -> list[Known]:
    return [
        Known(r.id, r.title, tuple(e.text for e in r.errors), r.refines, r.catch_all)
        for r in rules
        if r.errors
    ] + [Known(e.id, e.title, tuple(t.text for t in e.errors)) for e in entries]


@dataclass(frozen=True)
class Verdict:
    status: str  # applies | does not apply | could not be checked | not checked | program error
    lines: tuple[str, ...]  # what says so


def _value(value: Any) -> str:
    text = ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _facts_read(rule: Rule, facts: Any) -> list[str]:
    """The facts the rule's conditions (where it applies, then what it judges per item) read on this host, as
    `name = value`."""
    items = range(facts.count(rule.for_each)) if rule.for_each else [None]
    checks = [(rule.applies, None)] if rule.applies is not None else []
    read: dict[str, Any] = {}
    for cond, item in checks + [(rule.when, item) for item in items]:
        ev = Evaluation(facts, item)
        ev(cond)
        read.update(ev.read)
    return [f"{name} = {_value(v)}" for name, v in list(read.items())[:MAX_FACTS]]


def judge_rule(rule_id: str, result: Any, plan: Any) -> Verdict:
    """What the check on this host says about rule `rule_id`."""
    found = next((r for r in result.results if r.rule.id == rule_id), None)
    if found is None:
        skipped = rule_id in getattr(result, "skipped_rules", [])
        why = "its facts come from probes this check did not run (try --deep)" if skipped else "not evaluated"
        return Verdict("not checked", (why,))
    if found.status == "fired":
        lines = [f.message for f in found.findings]
        steps = [s for s in plan.steps if rule_id in s.rules]
        lines += [f"fix: {s.command}" if s.command else f"fix: {s.text}" for s in steps]
        return Verdict("applies", tuple(lines))
    if found.status == "unknown":
        return Verdict(
            "could not be checked",
            tuple(f"{n} is unknown: {why}" for n, why in found.unknown_facts[:MAX_FACTS]),
        )
    if found.status == NOT_APPLICABLE:
        why = found.reason or f"nothing to judge: {found.rule.for_each} is empty here"
        return Verdict("does not apply", (why,))
    return Verdict("does not apply", tuple(["checked: " + "; ".join(_facts_read(found.rule, result.facts))]))


def judge_entry(entry: Entry, result: Any) -> Verdict:
    lines = [f"what it means: {entry.meaning}"] + [f"do: {d}" for d in entry.do]
    lines.append(f"suspect the hardware when: {entry.hardware_when}")
    xids = [
        f.message
        for r in result.results
        if r.rule.id.startswith("GD-XID-") and r.status == "fired"
        for f in r.findings
    ]
    status = result.facts.value("kernel_log.status")
    if xids:
        lines += ["here: the kernel log has Xid events, so the hardware is worth checking:"] + xids[
            :MAX_SHOWN
        ]
    elif status == "ok":
        window = result.facts.value("kernel_log.window") or "since boot"
        lines.append(f"here: no Xid event in the kernel log ({window})")
    else:
        lines.append(
            f"here: the kernel log could not be read ({status or 'unknown'}), so Xid events are not known"
        )
    return Verdict("program error", tuple(lines))


@dataclass(frozen=True)
class Answer:
    candidate: Candidate
    verdict: Verdict


def answer(ranked: Sequence[Candidate], result: Any, plan: Any, entries: Mapping[str, Entry]) -> list[Answer]:
    """Each candidate judged on the host, in the order of the evidence (explain/rank.py), the first
    MAX_SHOWN."""
    out = []
    for cand in ranked:
        entry = entries.get(cand.known.id)
        verdict = judge_entry(entry, result) if entry else judge_rule(cand.known.id, result, plan)
        out.append(Answer(cand, verdict))
    return by_evidence(out, lambda a: a.candidate, lambda a: a.verdict.status)[:MAX_SHOWN]


def how(cand: Candidate) -> str:
    if cand.how == "text":
        return f'matched "{cand.text}"'
    if cand.how == "masked":
        return f'matched "{cand.text}" (numbers aside)'
    return f'shares {", ".join(cand.shared)} with "{cand.text}" ({cand.score:.0%})'


@dataclass
class Matches:
    """The distinct lines of a log that matched the same causes confidently, in the same order: at each
    place the best-scoring candidate (and the index of the first line that scored it), how many lines, and
    the first EXAMPLES of them (index, line). Lines are kept this way, not one by one, so that a log of a
    million lines that match reads in flat memory."""

    best: list[tuple[Candidate, int]]
    count: int
    examples: list[tuple[int, str]]


def candidates_by_line(lines: Iterable[str], matcher: Matcher) -> list[Matches]:
    """`triage` of a few lines (a command's error output)."""
    return triage([list(lines)], matcher)[0]


def triage(blocks: Iterable[Sequence[str]], matcher: Matcher) -> tuple[list[Matches], int]:
    """The distinct lines of a log that match a cause confidently, by the confident candidates they have
    (in the text order), in the order first met; and how many lines the log has. `blocks`: the log's lines
    (without line ends), a list at a time. Of each list only the lines the gate lets through (explain/gate.py:
    those that may match) are matched. A line is remembered by its hash once matched; lines that matched
    nothing only up to MISSES (a repeat is not matched again), by their shape where their numbers cannot
    change what they match (`12| File "train.py", line 30` as `#| File "train.py", line #`, see
    Gate.shape); a line whose shape matched is given the same candidates unmatched (Gate.same_match)."""
    from .gate import Gate

    gate = Gate(matcher)
    out: dict[tuple[str, ...], Matches] = {}
    matched: set[int] = set()
    missed: set[str] = set()  # the lines that matched nothing, as they are or by shape (Gate.shape)
    shapes: set[str] = set()
    known: dict[str, list[Candidate]] = {}  # what lines of a shape matched, where all of them match alike
    first = 0  # the index of the block's first line in the log
    for block in blocks:
        # A line met again says nothing new: each line of the block once, at the index where first met.
        distinct = list(dict.fromkeys(block))
        first_at = (
            dict(zip(reversed(block), range(len(block) - 1, -1, -1))) if len(distinct) < len(block) else {}
        )
        for at in gate.lines(distinct):
            index, line = first + first_at.get(distinct[at], at), distinct[at].strip()
            if not line or line in missed or len(line) > 4000 or hash(line) in matched:
                continue
            shape = gate.shape(line) if DIGIT.search(line) else ""
            if shape and shape in shapes:
                continue
            ranked = known.get(shape) if shape else None
            if ranked is None:
                ranked = (
                    [c for c in matcher.rank(line, limit=8) if c.confident]
                    if matcher.may_be_confident(line)
                    else []
                )
            if len(missed) + len(shapes) + len(known) >= MISSES:
                missed.clear()
                shapes.clear()
                known.clear()
            if not ranked:
                (shapes if shape else missed).add(shape or line)
                continue
            if shape and gate.same_match(line):
                known[shape] = ranked
            matched.add(hash(line))
            same = out.get(tuple(c.known.id for c in ranked))
            if same is None:
                out[tuple(c.known.id for c in ranked)] = Matches(
                    [(c, index) for c in ranked], 1, [(index, line)]
                )
                continue
            same.count += 1
            if len(same.examples) < EXAMPLES:
                same.examples.append((index, line))
            for place, c in enumerate(ranked):
                if c.score > same.best[place][0].score:
                    same.best[place] = (c, index)
        first += len(block)
    return list(out.values()), first


def judged_triage(
    matches: Sequence[Matches], result: Any, plan: Any, entries: Mapping[str, Entry]
) -> list[tuple[Answer, int, list[str]]]:
    """A log's lines grouped by the cause each points at on this host: of a line's candidates, the one the
    evidence puts first (rank.by_evidence: a cause that applies here before one that does not), each cause
    judged once, in the order first met; with its best match (the first line that scored best), how many
    lines and the first EXAMPLES of them."""
    verdicts: dict[str, Verdict] = {}

    def judged(cand: Candidate) -> Answer:
        rid = cand.known.id
        if rid not in verdicts:
            entry = entries.get(rid)
            verdicts[rid] = judge_entry(entry, result) if entry else judge_rule(rid, result, plan)
        return Answer(cand, verdicts[rid])

    groups: dict[str, tuple[Answer, int, int, list[tuple[int, str]]]] = {}
    for m in matches:
        here = [judged(c) for c, _ in m.best]
        best = by_evidence(here, lambda a: a.candidate, lambda a: a.verdict.status)[0]
        at = m.best[next(i for i, a in enumerate(here) if a is best)][1]
        rid = best.candidate.known.id
        if rid not in groups:
            groups[rid] = (best, at, m.count, list(m.examples))
            continue
        kept, kept_at, count, examples = groups[rid]
        if (-best.candidate.score, at) < (-kept.candidate.score, kept_at):
            kept, kept_at = best, at
        groups[rid] = (kept, kept_at, count + m.count, sorted(examples + m.examples)[:EXAMPLES])
    return [(a, count, [line for _, line in examples]) for a, _, count, examples in groups.values()]
