"""What `gpudoctor explain` prints: each candidate cause of a pasted error, and what it means on this host;
for a log, each cause once with the lines that showed it. Plain text, the same in a terminal and a log."""

from __future__ import annotations

import textwrap
from typing import Any

from .safe import terminal_lines

INDENT = "   "
NO_MATCH = (
    "No rule explains this message. `gpudoctor check` judges the whole host and may still find the cause;\n"
    "if you think gpudoctor should know this message, its rules list the texts they explain "
    "(gpudoctor rules show ID).\n"
)


def _wrap(text: str, width: int, indent: str = INDENT) -> list[str]:
    return textwrap.wrap(
        text,
        width,
        initial_indent=indent,
        subsequent_indent=indent + "  ",
        break_long_words=False,
        break_on_hyphens=False,
    ) or [indent]


def answers(answers: list, how: Any, where: str, width: int = 100, first: int = 1) -> list[str]:
    lines = []
    for n, a in enumerate(answers, first):
        c = a.candidate
        sure = "" if c.confident else " · not confident"
        lines.append(f"{n}. {c.known.id} · {c.known.title}{sure}")
        lines += _wrap(how(c), width)
        status = a.verdict.status
        if status == "program error":
            lines += [w for text in a.verdict.lines for w in _wrap(text, width)]
        else:
            lines.append(f"{INDENT}here ({where}): {status.upper() if status == 'applies' else status}")
            lines += [w for text in a.verdict.lines for w in _wrap(text, width, INDENT + "  ")]
        lines.append("")
    return lines


def message(text: str, found: list, numbers: list[str], how: Any, where: str, width: int = 100) -> str:
    shown = " ".join(text.split())
    lines = [f"Explaining: {shown[:300]}{'...' if len(shown) > 300 else ''}"]
    lines += [f"Read from it: {n}" for n in numbers]
    lines.append("")
    if not found:
        return terminal_lines("\n".join(lines) + "\n" + NO_MATCH)
    if not found[0].candidate.confident:
        lines += ["No rule explains this with confidence; the closest:", ""]
    lines += answers(found, how, where, width)
    return terminal_lines("\n".join(lines).rstrip("\n") + "\n")


def log(groups: list, total: int, how: Any, where: str, width: int = 100) -> str:
    """`groups`: (answer, how many lines, the first of them) per cause, in the order first met; `total`:
    lines read."""
    if not groups:
        return terminal_lines(f"Read {total} line(s): none matches a cause gpudoctor knows.\n" + NO_MATCH)
    lines = [f"Read {total} line(s): {len(groups)} cause(s) recognised.", ""]
    for n, (a, count, examples) in enumerate(groups, 1):
        block = answers([a], how, where, width, first=n)
        lines += block[:-1]
        lines.append(f"{INDENT}seen in {count} line(s), e.g.:")
        lines += [f"{INDENT}  | {h[:200]}" for h in examples]
        lines.append("")
    return terminal_lines("\n".join(lines).rstrip("\n") + "\n")


def judged(python: str) -> str:
    """The closing line: which Python environment the causes were judged against, and what chose it (the
    report's Python line, report/summary.python_line)."""
    return terminal_lines(f"\nPython judged: {python}\n")
