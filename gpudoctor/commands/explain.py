"""`gpudoctor explain MESSAGE` / `explain --log FILE`: the causes an error points at, judged on this host.

A log is read as a stream (explain/logfile.py): the last 256 MiB of a file, at most 256 MiB of standard
input or a pipe; a progress line goes to stderr while it is read, where stderr is a terminal.

Exit codes: 0 a cause was recognised, 1 none was (the message or log matches no rule with confidence), 2
bad usage or an unreadable log, snapshot or rule file, or a stream larger than the bound.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Callable, Optional, Union

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
    log: Union[str, tuple[str, ...], None] = None,
    snapshot: Optional[str] = None,
    python: tuple[str, ...] = (),
    rules: tuple[str, ...] = (),
    timeout: Optional[float] = None,
    reports: tuple[str, ...] = (),
    fmt: str = "text",
) -> Outcome:
    from ..explain.match import read_numbers
    from ..report import explain_text

    logs = (log,) if isinstance(log, str) else tuple(log or ())
    if (message is None) == (not logs):
        raise CommandError("explain takes a MESSAGE or --log FILE (- for stdin), one of the two")
    if len(python) > 1:
        raise CommandError("explain judges one environment: give --python once")
    if (reports or fmt == "json") and not logs:
        raise CommandError("--reports and --format json go with --log (a job's rank logs)")
    files = _expand(logs) if logs else []
    if reports or fmt == "json" or len(files) > 1 or any(os.path.isdir(p) for p in logs):
        return _ranks(files, reports, fmt, rules)
    log = files[0] if files else None
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


def _expand(logs: Sequence[str]) -> list[str]:
    from ..explain.ranks import SourceError, expand

    try:
        return expand(logs)
    except SourceError as e:
        raise CommandError(str(e)) from None


def _ranks(files: list[str], reports: Sequence[str], fmt: str, rules: tuple[str, ...]) -> Outcome:
    """Several rank logs (or --format json): the rank that failed first and why, the others folded onto it
    (explain/triage.py), joined to the nodes' reports. Exit 0 when a first failure is named, 1 when not."""
    from ..explain import logfile
    from ..explain.ranks import read
    from ..explain.triage import Classifier, as_json, triage
    from ..report import explain_ranks

    if "-" in files and len(files) > 1:
        raise CommandError("--log -: standard input is read alone, not with other logs")
    by_host = _reports(reports) if reports else {}
    matcher, _entries = matcher_and_entries(rules)
    classify = Classifier(matcher)
    try:
        found = read(files, classify, lambda path: logfile.blocks(path, _progress(path)))
    except OSError as e:
        raise CommandError(f"--log: {e.filename or ''}: {e.strerror or e}") from None
    finally:
        if sys.stderr.isatty():
            sys.stderr.write("\r\033[K")
    result = triage(found, by_host)
    if fmt == "json":
        sys.stdout.write(explain_ranks.json_text(as_json(result)))
    else:
        sys.stdout.write(explain_ranks.text(result))
    return Outcome(0 if result.first is not None else 1)


def _reports(paths: Sequence[str]) -> dict[str, Any]:
    """The nodes' reports by hostname (fleet/load.py's loader); a report that cannot be used, or has no
    hostname (written without --no-redact), is said on stderr and left out."""
    from ..fleet.load import load_reports

    loaded = load_reports(list(paths))
    for bad in loaded.invalid:
        sys.stderr.write(terminal_text(f"gpudoctor: --reports {bad.file}: {bad.reason}\n"))
    by_host = {}
    for node in loaded.nodes:
        if node.hostname:
            by_host[node.hostname] = node
        else:
            sys.stderr.write(
                terminal_text(f"gpudoctor: --reports {node.file}: no hostname (redacted?), not joined\n")
            )
    return by_host
