"""`gpudoctor explain MESSAGE` / `explain --log FILE`: the causes an error points at, judged on this host.

A log is read as a stream (explain/logfile.py): the last 256 MiB of a file, at most 256 MiB of standard
input or a pipe; a progress line goes to stderr while it is read, where stderr is a terminal.

Exit codes: 0 a cause was recognised, 1 none was (the message or log matches no rule with confidence), 2
bad usage or an unreadable log, snapshot or rule file, or a stream larger than the bound.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, Callable, Optional

from ..report.safe import terminal_text
from . import CommandError, Outcome, problems
from ._shared import check_one, make_plan, where_checked


def _progress(path: str) -> Optional[Callable[[int, Optional[int]], None]]:
    """A progress line on stderr while a log is read, only where stderr is a terminal."""
    if not sys.stderr.isatty():
        return None
    import time

    name = terminal_text("standard input" if path == "-" else path)
    shown = [0.0]

    def show(done: int, total: Optional[int]) -> None:
        now = time.monotonic()
        if now - shown[0] < 0.2 and (total is None or done < total):
            return
        shown[0] = now
        part = f"{done * 100 // total}%" if total else f"{done >> 20} MiB"
        sys.stderr.write(f"\r\033[Kreading {name}: {part}")
        sys.stderr.flush()

    return show


def _triage(path: str, matcher: Any) -> tuple[list, int]:
    """The log's matched lines (answer.triage) and how many lines it has, read as a stream."""
    from ..explain import logfile
    from ..explain.answer import triage

    progress = _progress(path)
    try:
        return triage(logfile.blocks(path, progress), matcher)
    except OSError as e:
        raise CommandError(f"--log {path}: {e.strerror or e}") from None
    finally:
        if progress is not None:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def matcher_and_entries(rules: tuple[str, ...] = ()) -> tuple[Any, Mapping]:
    """The matcher over the rules' and entries' error texts, and the entries by id (explain/index.py: the
    shipped ones without loading the rules)."""
    from ..explain.index import build

    try:
        return build(rules)
    except Exception as e:  # the loaders' errors, imported only when one is raised (they import the engine)
        from ..engine.loader import RuleLoadError
        from ..explain.entries import EntryError

        if isinstance(e, RuleLoadError):
            raise problems("rule files have", e) from None
        if isinstance(e, EntryError):
            raise problems("explain entries have", e) from None
        raise


def run(
    message: Optional[str] = None,
    log: Optional[str] = None,
    snapshot: Optional[str] = None,
    python: tuple[str, ...] = (),
    rules: tuple[str, ...] = (),
    timeout: Optional[float] = None,
) -> Outcome:
    from ..explain.match import read_numbers
    from ..report import explain_text

    if (message is None) == (log is None):
        raise CommandError("explain takes a MESSAGE or --log FILE (- for stdin), one of the two")
    if len(python) > 1:
        raise CommandError("explain judges one environment: give --python once")
    matcher, entries = matcher_and_entries(rules)
    if message is not None:
        ranked = matcher.rank(message, limit=8)
        if not ranked:  # nothing to judge on the host: say so at once, nothing more loaded
            sys.stdout.write(explain_text.message(message, [], read_numbers(message).lines(), None, ""))
            return Outcome(1)
        from ..explain.answer import answer, how
        from ..report.summary import python_line

        result = check_one(snapshot, list(python), rules, None, timeout)
        found = answer(ranked, result, make_plan(result), entries)
        where = where_checked(result)
        sys.stdout.write(explain_text.message(message, found, read_numbers(message).lines(), how, where))
        sys.stdout.write(explain_text.judged(python_line(result.facts)))
        return Outcome(0 if ranked[0].confident else 1, result.unanswered())
    per_line, total = _triage(log or "-", matcher)
    if not per_line:
        sys.stdout.write(explain_text.log([], total, None, ""))
        return Outcome(1)
    from ..explain.answer import how, judged_triage
    from ..report.summary import python_line

    result = check_one(snapshot, list(python), rules, None, timeout)
    judged = judged_triage(per_line, result, make_plan(result), entries)
    sys.stdout.write(explain_text.log(judged, total, how, where_checked(result)))
    sys.stdout.write(explain_text.judged(python_line(result.facts)))
    return Outcome(0, result.unanswered())
