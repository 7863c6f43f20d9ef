"""The one place that makes untrusted text safe for a terminal.

Facts come from the host, snapshots and other nodes' reports: a hostname, a package version, an error
message may carry escape sequences (ESC[2J clears the screen, OSC 8 forges links, a carriage return
overwrites the line). Every renderer that writes such text to a terminal passes it through here: C0 and
C1 control characters and DEL become "?"; newlines survive only where the caller keeps them.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_CONTROL_BUT_NEWLINE = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")


def terminal_text(text: str) -> str:
    """One piece of a line: every control character (newline too) becomes "?"."""
    return _CONTROL.sub("?", text)


def terminal_lines(text: str) -> str:
    """A whole rendered output: control characters become "?", its newlines are kept."""
    return _CONTROL_BUT_NEWLINE.sub("?", text)


def safe_line(line: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """A line of (text, style) pieces, each made safe."""
    return [(terminal_text(text), style) for text, style in line]
