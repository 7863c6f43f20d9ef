"""One place makes untrusted text safe for a terminal (report/safe.py)."""

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


def test_terminal_text_replaces_control_characters():
    assert terminal_text("a\x1b[31mb\nc") == "a?[31mb?c"
    assert terminal_lines("a\x9bb\nc\r") == "a?b\nc?"
