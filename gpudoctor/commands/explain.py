"""`gpudoctor explain MESSAGE` / `explain --log FILE`: the causes an error points at, judged on this host.

Exit codes: 0 a cause was recognised, 1 none was (the message or log matches no rule with confidence), 2
bad usage or an unreadable log, snapshot or rule file.
"""

from __future__ import annotations

import sys
from typing import Any, Optional

from . import CommandError, Outcome, problems
from ._shared import check_one, make_plan, where_checked

MAX_LOG_BYTES = 64 << 20  # the last 64 MiB of a log are read


def _read_log(path: str) -> list[str]:
    try:
        if path == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as f:
                f.seek(0, 2)
                size = f.tell()
                f.seek(max(0, size - MAX_LOG_BYTES))
                data = f.read()
    except OSError as e:
        raise CommandError(f"--log {path}: {e.strerror or e}") from None
    return data[-MAX_LOG_BYTES:].decode("utf-8", "replace").splitlines()


def matcher_and_entries(rules: tuple[str, ...] = ()) -> tuple[Any, dict]:
    """The matcher over the rules' and entries' error texts, and the entries by id."""
    from ..engine.loader import RuleLoadError
    from ..explain.answer import build
    from ..explain.entries import EntryError

    try:
        return build(rules)
    except RuleLoadError as e:
        raise problems("rule files have", e) from None
    except EntryError as e:
        raise problems("explain entries have", e) from None


def run(
    message: Optional[str] = None,
    log: Optional[str] = None,
    snapshot: Optional[str] = None,
    python: tuple[str, ...] = (),
    rules: tuple[str, ...] = (),
    timeout: Optional[float] = None,
) -> Outcome:
    from ..explain.answer import answer, candidates_by_line, how, judged_triage
    from ..explain.match import read_numbers
    from ..report import explain_text
    from ..report.summary import python_line

    if (message is None) == (log is None):
        raise CommandError("explain takes a MESSAGE or --log FILE (- for stdin), one of the two")
    if len(python) > 1:
        raise CommandError("explain judges one environment: give --python once")
    matcher, entries = matcher_and_entries(rules)
    if message is not None:
        ranked = matcher.rank(message, limit=8)
        if not ranked:  # nothing to judge on the host: say so at once
            sys.stdout.write(explain_text.message(message, [], read_numbers(message).lines(), how, ""))
            return Outcome(1)
        result = check_one(snapshot, list(python), rules, None, timeout)
        found = answer(ranked, result, make_plan(result), entries)
        where = where_checked(result)
        sys.stdout.write(explain_text.message(message, found, read_numbers(message).lines(), how, where))
        sys.stdout.write(explain_text.judged(python_line(result.facts)))
        return Outcome(0 if ranked[0].confident else 1, result.unanswered())
    lines = _read_log(log or "-")
    per_line = candidates_by_line(lines, matcher)
    if not per_line:
        sys.stdout.write(explain_text.log([], len(lines), how, ""))
        return Outcome(1)
    result = check_one(snapshot, list(python), rules, None, timeout)
    judged = judged_triage(per_line, result, make_plan(result), entries)
    sys.stdout.write(explain_text.log(judged, len(lines), how, where_checked(result)))
    sys.stdout.write(explain_text.judged(python_line(result.facts)))
    return Outcome(0, result.unanswered())
