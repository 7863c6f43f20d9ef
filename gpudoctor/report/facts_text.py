"""`gpudoctor facts` as text: one fact a line, its value or why it is unknown, and its source."""

from __future__ import annotations

from ..facts import Facts
from .safe import terminal_text


def render(facts: Facts) -> str:
    rows = []
    for name, fact in facts.items():
        value = repr(fact.value) if fact.known else f"unknown ({fact.unknown})"
        rows.append((name, value, fact.source))
    width = max((len(r[0]) for r in rows), default=0)
    return "".join(
        terminal_text(f"{n.ljust(width)}  {v}" + (f"  [{s}]" if s else "")) + "\n" for n, v, s in rows
    )
