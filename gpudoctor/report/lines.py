"""Lines of (text, rich style) pieces, as the text reports build them, and a finding in those lines: its
severity, rule, message, why and fix steps. Shared by the check's report (text.py) and the bench's
(bench_text.py); light to import (no rich, no check machinery)."""

from __future__ import annotations

import shlex
import textwrap

from ..engine.model import Finding, FixStep

Line = list[tuple[str, str]]  # (text, rich style)

STYLE = {"error": "bold red", "warning": "bold yellow", "info": "cyan"}


def command_text(step: FixStep) -> str:
    return shlex.join(step.argv) if step.argv else ""


def wrap_text(text: str, indent: int, width: int) -> list[str]:
    return textwrap.wrap(
        text, width=max(40, width - indent), break_on_hyphens=False, break_long_words=False
    ) or [""]


def side_words(kind: str, side: str) -> str:
    """A finding's side (subject.side: image, lockfile, host, both) as the text reports name it after its
    title; "" for none."""
    if side == "both":
        return ("image" if kind == "image" else "lockfile") + " and host"
    return side


def finding_lines(f: Finding, width: int, where: str = "") -> list[Line]:
    """A finding as the reports show it; `where` (the thing it is about) follows the title, or goes below it
    where the title's line would grow wider than `width`."""
    pad = " " * 4
    head: Line = [
        ("  ", ""),
        (f.severity.upper().ljust(8), STYLE[f.severity]),
        (f.rule.id, "bold"),
        (f"  {f.rule.title}", ""),
    ]
    out: list[Line] = [head]
    if where and sum(len(t) for t, _ in head) + 3 + len(where) <= width:
        head.append((f" · {where}", "dim"))
    elif where:  # too long for the title's line: below it
        out.append([(pad + f"on {where}", "dim")])
    out += [[(pad + chunk, "")] for chunk in wrap_text(f.message, 4, width)]
    if f.why:
        out += [
            [(pad + ("why: " if n == 0 else "     ") + chunk, "dim")]
            for n, chunk in enumerate(wrap_text(f.why, 9, width))
        ]
    for n, step in enumerate(f.fix):
        head_ = pad + ("fix: " if n == 0 else "     ")
        if step.argv:
            out.append([(head_, "green"), (command_text(step), "bold green")])
            if step.text:
                out += [[(pad + "     " + chunk, "dim")] for chunk in wrap_text(step.text, 9, width)]
        else:
            out += [
                [(head_ if k == 0 else pad + "     ", "green"), (chunk, "")]
                for k, chunk in enumerate(wrap_text(step.text, 9, width))
            ]
    return out


def plain_text(lines: list[Line]) -> str:
    """Lines as plain text: their styles dropped, trailing spaces too, one line each."""
    return "\n".join("".join(t for t, _ in line).rstrip() for line in lines) + "\n"
