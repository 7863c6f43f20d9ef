"""One place makes untrusted text safe for a terminal (report/safe.py); the summary fits 80 columns."""

from __future__ import annotations

import io

from gpudoctor.pipeline.verdict import decide
from gpudoctor.report.safe import terminal_lines, terminal_text

from .reportkit import result_of


def _escape_result():
    return result_of({"host.hostname": "evil\x1b]0;owned\x07\x1b[2Jhost", "gpus.count": 0})


def test_an_escape_sequence_in_the_hostname_never_reaches_the_terminal():
    from rich.console import Console

    from gpudoctor.report import oneline
    from gpudoctor.report.text import print_rich, render_plain

    result = _escape_result()
    plain = render_plain(result, decide(result, "error"))
    assert "\x1b" not in plain and "\x07" not in plain
    assert "of evil?]0;owned??[2Jhost" in plain
    console = Console(file=io.StringIO(), width=100, force_terminal=True, color_system=None)
    print_rich(result, decide(result, "error"), console=console)
    assert "owned" in console.file.getvalue() and "\x1b]0;" not in console.file.getvalue()
    assert "\x1b" not in oneline.render(result, decide(result, "error"))


def test_the_summary_wraps_inside_its_column_on_an_80_column_terminal():
    from gpudoctor.report.text import LABEL_WIDTH, render_plain

    long = " · ".join(f"part number {n} of a long summary line" for n in range(6))
    result = result_of({"system.os": long, "gpus.count": 0})
    lines = render_plain(result, decide(result, "error"), width=80, wrap=True).splitlines()
    system = next(i for i, line in enumerate(lines) if line.startswith("System"))
    assert all(len(line) <= 80 for line in lines[system : system + 4])
    assert lines[system + 1].startswith(" " * LABEL_WIDTH) and lines[system + 1][LABEL_WIDTH] != " "
    # Files and pipes keep one line per area (the golden reports).
    assert len(render_plain(result, decide(result, "error"), width=80).splitlines()[system]) > 80


def test_terminal_text_replaces_control_characters():
    assert terminal_text("a\x1b[31mb\nc") == "a?[31mb?c"
    assert terminal_lines("a\x9bb\nc\r") == "a?b\nc?"
