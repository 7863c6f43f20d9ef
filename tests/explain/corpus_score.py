"""The explain corpus (tests/explain/corpus/*.yaml, see its README) read and scored: for each real message,
the cause the text alone ranks first (no host: the thread's host is not ours to judge), against the cause its
thread established.

- **top-1**: the first confident candidate is the expected id (for a case with `expect: null`, nothing
  confident matched). A case whose cause has no rule (`needs:`) counts as wrong: the user got no answer.
- **top-3**: the expected id is among the first three confident candidates.
- **program errors blamed on the environment**: a `kind: program` case whose first confident candidate is a
  rule (an environment cause) rather than an explain entry or nothing. This must stay 0.
- **tied**: of the top-1 misses, those where the expected id ties with the first on everything the text
  says (the same text matched, equally specific): only the host can tell them apart, which `explain` does
  on a real host (rank.by_evidence) and the corpus cannot.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import yaml

CORPUS = Path(__file__).parent / "corpus"
KINDS = ("environment", "program")
FIELDS = {"message", "source", "cause", "kind", "expect", "needs", "also", "note"}


def load(directory: Path = CORPUS) -> list[dict[str, Any]]:
    """Every case, with the file it came from as `file`."""
    cases = []
    for path in sorted(directory.glob("*.yaml")):
        for case in yaml.safe_load(path.read_text(encoding="utf-8"))["cases"]:
            cases.append({**case, "file": path.name})
    return cases


@dataclass
class Score:
    cases: int = 0
    top1: int = 0
    top3: int = 0
    program: int = 0
    tied: int = 0
    blamed: list[tuple[str, str]] = field(default_factory=list)  # (message, the rule named first)
    wrong: list[tuple[dict, list[str]]] = field(default_factory=list)  # (case, the ids ranked)

    def line(self, name: str) -> str:
        pct = (lambda n: f"{100 * n / self.cases:.0f}%") if self.cases else (lambda n: "-")
        return (
            f"{name}: {self.cases} messages, top-1 {self.top1} ({pct(self.top1)}), top-3 {self.top3} "
            f"({pct(self.top3)}), top-1 misses tied on the text {self.tied}, program errors blamed on the "
            f"environment {len(self.blamed)} of {self.program}"
        )


def _text_key(c: Any, refined: set) -> tuple:
    return (c.known.catch_all, c.known.id in refined, c.score, round(c.distinct, 9), c.text.lower())


def ranked(matcher: Any, message: str) -> tuple[list[str], set[str]]:
    """The confident candidates' ids in order, and the ids that tie with the first on the text."""
    cands = [c for c in matcher.rank(message, limit=8) if c.confident]
    if not cands:
        return [], set()
    refined = {r for c in cands for r in c.known.refines}
    first = _text_key(cands[0], refined)
    return [c.known.id for c in cands], {c.known.id for c in cands if _text_key(c, refined) == first}


def score(matcher: Any, cases: Iterable[dict[str, Any]]) -> Score:
    s = Score()
    for case in cases:
        ids, tie = ranked(matcher, case["message"])
        right: set[Optional[str]] = {case["expect"], *(case.get("also") or [])}
        first = ids[0] if ids else None
        s.cases += 1
        hit1 = first in right if case["expect"] else not ids
        hit3 = bool(right & set(ids[:3])) if case["expect"] else not ids
        s.top1 += hit1
        s.top3 += hit3
        if case["kind"] == "program":
            s.program += 1
            if first is not None and not first.startswith("GD-EXPLAIN-"):
                s.blamed.append((case["message"], first))
        if not hit1:
            s.wrong.append((case, ids[:3]))
            s.tied += bool(case["expect"] and right & tie)
    return s
