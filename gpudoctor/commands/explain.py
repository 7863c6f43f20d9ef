"""`gpudoctor explain MESSAGE`: the rules that explain an error message, and what fixes it."""

from __future__ import annotations

import sys

from ._shared import load_rules


def run(message: str) -> int:
    from ..report.rules_text import explain_text

    text, found = explain_text(load_rules([]), message)
    sys.stdout.write(text)
    return 0 if found else 1
