"""`check --all-envs` as text: the machine once, then each Python environment with what is its own.

Every environment was judged against the same machine, probed once, so the machine's summary and the
findings that read only the machine's facts are the same in each report: they are shown once. A finding
that reads the environment's facts (its Python, its frameworks; subject.side names the sections), alone or
with the machine's (a torch build newer than the driver), is the environment's and is shown under it. The
same split holds for what could not be evaluated. The exit code is the worst environment's.
"""

from __future__ import annotations

from typing import Any, Optional

from .. import __version__
from ..subject import side
from .lines import Line, finding_lines, plain_text, wrap_text
from .safe import safe_line
from .summary import summary
from .text import LABEL_WIDTH, result_line, unknown_lines

ENV_AREAS = ("Python", "Frameworks", "Runtime")  # summary areas that are the environment's own


def own(facts: list[str]) -> bool:
    """Whether a finding (or an unknown result) that read `facts` is the environment's: it read one of the
    environment's sections (LOCK_SIDE: python, frameworks), whatever else it read."""
    return side("lock", facts) in ("lockfile", "both")


def _unknown(result: Any, mine: bool) -> list[str]:
    """The rules that could not be evaluated, by reason: the environment's (`mine`) or the machine's."""
    return unknown_lines(result, lambda r: own([n for n, _ in r.unknown_facts]) == mine)


def _findings(result: Any, mine: bool) -> list:
    return [f for f in result.findings if own([n for n, _ in f.evidence]) == mine]


def build_lines(results: list, verdicts: list, labels: Optional[dict], width: int = 100) -> list[Line]:
    first = results[0]
    host = first.facts.value("host.hostname")
    where = "live check" if first.host_kind == "live" else f"snapshot {first.source}"
    lines: list[Line] = [
        [
            ("gpudoctor ", "bold"),
            (__version__, "bold"),
            (f" · {where}" + (f" of {host}" if host else "") + f" · {len(results)} Python environments", ""),
        ],
        [],
    ]
    for area, texts in summary(first.facts):
        if area in ENV_AREAS:
            continue
        for n, text in enumerate(texts):
            lines.append([((area if n == 0 else "").ljust(LABEL_WIDTH), "bold"), (text, "")])
    for what in first.timed_out:
        lines.append([("Timed out".ljust(LABEL_WIDTH), "bold red"), (what, "")])
    lines.append([])
    machine = _findings(first, False)
    lines.append([("Machine findings", "bold underline"), (" (the same for every environment)", "dim")])
    for f in machine:
        lines += finding_lines(f, width)
    if not machine:
        lines.append([("  none", "")])
    lines += _unknown_block(_unknown(first, False), "  ", width)
    lines.append([])
    lines.append([("Environments", "bold underline")])
    for n, (result, verdict) in enumerate(zip(results, verdicts), 1):
        lines += _environment(n, result, verdict, (labels or {}).get(result.target.python), width)
    lines.append(_verdict(results, verdicts))
    return [safe_line(line) for line in lines]


def _environment(n: int, result: Any, verdict: Any, label: Optional[dict], width: int) -> list[Line]:
    name = label["name"] if label else str(result.target.python)
    head = f"{n}. {name}"
    if label:
        head += f" ({label['kind']}; found by {', '.join(label['found_by'])})"
    lines: list[Line] = [[("", ""), (head, "bold")]]
    if label and label.get("problem"):
        lines.append([("   Broken: ", "bold red"), (label["problem"], "")])
    for area, texts in summary(result.facts):
        if area in ENV_AREAS:
            for text in texts:
                lines.append([("   " + area.ljust(LABEL_WIDTH), "bold"), (text, "")])
    found = _findings(result, True)
    for f in found:  # one step in, under the environment's lines
        lines += [[(" ", ""), *line] for line in finding_lines(f, width - 1)]
    if not found:
        lines.append([("   no finding of its own", "")])
    lines += _unknown_block(_unknown(result, True), "   ", width)
    lines.append([])
    return lines


def _unknown_block(texts: list[str], pad: str, width: int) -> list[Line]:
    """ "Could not check" never reads as "fine": which rules, and why."""
    if not texts:
        return []
    lines: list[Line] = [[(pad + "could not be evaluated:", "bold")]]
    for text in texts:
        chunks = wrap_text(text, len(pad) + 2, width)
        lines += [[(pad + ("  " if k == 0 else "    "), ""), (chunk, "")] for k, chunk in enumerate(chunks)]
    return lines


def _verdict(results: list, verdicts: list) -> Line:
    worst = max(range(len(verdicts)), key=lambda i: verdicts[i].code)
    by = {
        sev: sum(1 for r in results for f in _findings(r, True) if f.severity == sev)
        + sum(1 for f in _findings(results[0], False) if f.severity == sev)
        for sev in ("error", "warning", "info")
    }
    failing = sum(1 for v in verdicts if v.code)
    words = (
        f"{by['error']} error(s), {by['warning']} warning(s), {by['info']} info (the machine's counted "
        f"once); {failing} of {len(results)} environment(s) fail"
    )
    return result_line(words, by, verdicts[worst])


def render_plain(results: list, verdicts: list, labels: Optional[dict], width: int = 100) -> str:
    return plain_text(build_lines(results, verdicts, labels, width))


def print_rich(results: list, verdicts: list, labels: Optional[dict]) -> None:
    from rich.console import Console
    from rich.text import Text

    con = Console(highlight=False)
    for line in build_lines(results, verdicts, labels, con.width):
        con.print(Text.assemble(*line) if line else "")
