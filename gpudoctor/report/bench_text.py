"""The text report of `gpudoctor bench`: each result as a bar against what the GPU should reach, then the
findings, then the verdict.

The same lines render plain (not a terminal, NO_COLOR, golden files) or styled through rich; a row that a
finding names carries a mark ("x" error, "!" warning, "i" info) that shows without colour too, and a row
that was not measured shows its status, never a bar.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from . import bench_view as view
from .lines import STYLE, Line, finding_lines, plain_text, wrap_text
from .safe import safe_line

if TYPE_CHECKING:
    from ..bench.model import BenchReport, Row

LABEL_WIDTH = 12  # the label column of the check's report: "Incomplete", "Result"
TEST_WIDTH = 17  # "device-to-device", "GPU 0 -> 1", and a space
VALUE_WIDTH = 12  # "4170 TFLOP/s"
EIGHTHS = " ▏▎▍▌▋▊▉"
FULL, TRACK, EXPECT = "█", "░", "│"
BAR_STYLE = {"error": "red", "warning": "yellow", "info": "cyan", "": "green"}
MARK_STYLE = {**STYLE, "not measured": "bold red", "skipped": "dim"}
STATUS_STYLE = {"skipped": "bold"}  # failed, timed out and any other status: bold red


def bar_cells(width: int) -> int:
    """The bar's length at 100%, for a report `width` columns wide."""
    return max(8, min(40, width - 74))


def _cells(amount: float) -> str:
    """`amount` cells of bar, in eighths."""
    eighths = int(round(amount * 8))
    whole, part = divmod(eighths, 8)
    return FULL * whole + (EIGHTHS[part] if part else "")


def bar(ratio: float, cells: int) -> tuple[str, str]:
    """(the bar up to the expectation, its part beyond), each padded to its length."""
    extra = math.ceil(cells * (view.CAP - 1))
    filled = min(ratio, view.CAP) * cells
    inside = _cells(min(filled, cells))
    beyond = _cells(max(0.0, filled - cells))
    return inside, beyond.ljust(extra)


def _row_lines(report: BenchReport, row: Row, severity: str, cells: int, width: int) -> list[Line]:
    key = view.mark(row, severity)
    head: Line = [
        ("  ", ""),
        (view.MARKS.get(key, " "), MARK_STYLE.get(key, "")),
        (" ", ""),
        (view.label(report, row).ljust(TEST_WIDTH), ""),
    ]
    extra = math.ceil(cells * (view.CAP - 1))
    if row.status != "ok":
        indent = len("".join(t for t, _ in head))
        chunks = wrap_text(view.status_text(row), indent, width)
        first = chunks[0][len(row.status) :]
        lines = [head + [(row.status, STATUS_STYLE.get(row.status, "bold red")), (first, "")]]
        return lines + [[(" " * indent + chunk, "")] for chunk in chunks[1:]]
    value = (view.value_text(row).rjust(VALUE_WIDTH), "bold")
    if not view.has_expectation(row):
        line = head + [(" " * (cells + 1 + extra), ""), (" ", ""), value]
        note = view.no_expectation_text(row)
        used = len("".join(t for t, _ in line))
        if used + 2 + len(note) <= width:
            return [line + [("  " + note, "dim")]]
        indent = len("".join(t for t, _ in head))  # the note below, where the bar would be
        return [line] + [[(" " * indent + chunk, "dim")] for chunk in wrap_text(note, indent, width)]
    inside, beyond = bar(view.bar_ratio(row), cells)
    style = BAR_STYLE.get(severity, "green")
    line = head + [
        (inside, style),
        (TRACK * (cells - len(inside)), "dim"),
        (EXPECT, ""),
        (beyond, style),
        (" ", ""),
        value,
        (f" of {view.sig3(row.expected).ljust(5)}", ""),
        (view.percent(row).rjust(5), STYLE.get(severity, "")),
    ]
    baseline = view.baseline_text(row)
    if baseline:
        line.append((f"  ({baseline})", "dim"))
    return [line]


def build_lines(report: BenchReport, width: int = 100) -> list[Line]:
    """The report's lines, every piece made safe for a terminal."""
    lines: list[Line] = [[(view.header(report), "bold")], []]
    run = report.run
    if run.status == view.NOT_RUN:
        lines.append([(view.not_run_text(report), "bold")])
        return [safe_line(line) for line in lines]
    if run.status == view.INCOMPLETE:
        chunks = wrap_text(view.cut_short_text(report), LABEL_WIDTH, width)
        lines.append([("Incomplete".ljust(LABEL_WIDTH), "bold red"), (chunks[0], "")])
        lines += [[(" " * LABEL_WIDTH + chunk, "")] for chunk in chunks[1:]]
        lines.append([])
    severities = view.worst(report)
    cells = bar_cells(width)
    for heading, rows in view.groups(report):
        lines.append([(heading, "bold")])
        for row in rows:
            lines += _row_lines(report, row, severities.get(row.index, ""), cells, width)
    if not report.rows:
        lines.append([("Nothing was measured.", "bold")])
    lines.append([])
    findings = view.findings(report)
    if findings:
        lines.append([("Findings", "bold underline")])
        for f in findings:
            lines += finding_lines(f, width, view.where(report, f))
        lines.append([])
    if report.unknown:
        lines.append([("Could not judge", "bold underline")])
        for rule, reason in report.unknown:
            lead = f"  {rule}  "
            chunks = wrap_text(reason, len(lead), width)
            lines.append([("  ", ""), (rule, "bold"), ("  " + chunks[0], "")])
            lines += [[(" " * len(lead) + chunk, "")] for chunk in chunks[1:]]
        lines.append([])
    style = {"error": "bold red", "warning": "bold yellow"}.get(view.worst_of_all(report), "bold green")
    lines.append(
        [
            ("Result".ljust(LABEL_WIDTH), "bold"),
            (view.result_words(report), style),
            (f" · exit {report.verdict} ({view.exit_reason(report)})", ""),
        ]
    )
    return [safe_line(line) for line in lines]


def render(report: BenchReport, color: bool = False, width: int = 100) -> str:
    """The report as text `width` columns wide; `color` styles it with terminal escape codes (rich),
    otherwise it is plain text without any."""
    lines = build_lines(report, width)
    if not color:
        return plain_text(lines)
    import io

    from rich.console import Console
    from rich.text import Text

    out = io.StringIO()
    con = Console(
        file=out,
        width=width,
        force_terminal=True,
        color_system="standard",
        no_color=False,
        highlight=False,
        emoji=False,
        markup=False,
    )
    for line in lines:
        text = Text.assemble(*line) if line else Text("")
        text.rstrip()
        con.print(text, soft_wrap=True)
    return out.getvalue()
