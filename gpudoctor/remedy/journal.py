"""Where fix keeps its runs: one directory per run under the user's state directory, with its journal.

    $XDG_STATE_HOME/gpudoctor/runs/<run id>/     (else ~/.local/state/gpudoctor/runs/<run id>/)
        journal.jsonl      one JSON object a line, written and flushed as things happen
        plan.json          the plan the run applied (a saved plan, gpudoctor fix --plan can read it)
        restore/           the restore point (restore.py): inventory, requirements.txt, backups

A run id is the UTC time it started and four random hex digits (20261201T233122Z-7f3a), so ids sort by
time and two runs started in the same second do not collide; the start event's `time_ns` orders runs
started in the same second. The journal's events and their fields are
documented in docs/fix.md; `summary()` reads one back for `fix --list` and `fix --undo`. Each line is
flushed and synced before the step it describes goes on, so a run killed half-way leaves a journal that
says how far it got.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from .. import __version__

FORMAT = 1
JOURNAL = "journal.jsonl"


def state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "gpudoctor"


def runs_dir() -> Path:
    return state_dir() / "runs"


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class Journal:
    """The journal of one run, open for appending."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.run_id = run_dir.name
        self._file = open(run_dir / JOURNAL, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()

    def write(self, event: str, **fields: Any) -> None:
        record = {"event": event, "time": _now(), **fields}
        self._file.write(json.dumps(record, sort_keys=False, default=str) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()


def new_run(kind: str, **start: Any) -> Journal:
    """A new run directory (private to the user) and its journal, whose first line is the start event."""
    root = runs_dir()
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    while True:
        run_id = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(2)
        try:
            (root / run_id).mkdir(mode=0o700)
            break
        except FileExistsError:
            continue
    journal = Journal(root / run_id)
    journal.write(
        "start", run=run_id, kind=kind, format=FORMAT, gpudoctor=__version__, time_ns=time.time_ns(), **start
    )
    return journal


@dataclass
class RunSummary:
    run_id: str
    path: Path
    kind: str = "?"  # fix | undo
    started: str = ""
    started_ns: int = 0  # the start event's time_ns; 0 in a journal written before it was recorded
    python: str = ""
    outcome: str = "unfinished"  # the end event's outcome; unfinished when the run never wrote one
    steps: list[dict] = field(default_factory=list)  # the step events
    undoes: str = ""  # for an undo: the run it restored
    has_restore_point: bool = False
    problems: list[str] = field(default_factory=list)  # lines of the journal that could not be read


def summary(run_dir: Path) -> RunSummary:
    s = RunSummary(run_dir.name, run_dir)
    try:
        text = (run_dir / JOURNAL).read_text(encoding="utf-8")
    except OSError as e:
        s.problems.append(f"cannot read {run_dir / JOURNAL}: {e.strerror or e}")
        return s
    for n, line in enumerate(text.splitlines(), 1):
        try:
            record = json.loads(line)
        except ValueError:
            s.problems.append(f"line {n} is not JSON")
            continue
        event = record.get("event") if isinstance(record, dict) else None
        if event == "start":
            s.kind, s.started = str(record.get("kind", "?")), str(record.get("time", ""))
            s.python, s.undoes = str(record.get("python", "")), str(record.get("undoes", ""))
            ns = record.get("time_ns")
            s.started_ns = ns if isinstance(ns, int) else 0
        elif event == "restore_point":
            s.has_restore_point = True
        elif event == "step":
            s.steps.append(record)
        elif event == "end":
            s.outcome = str(record.get("outcome", "?"))
    return s


def runs() -> list[RunSummary]:
    """Every run, oldest first: by the second its id names, then, within one second, by its start time_ns."""
    root = runs_dir()
    try:
        names = [p.name for p in root.iterdir() if (p / JOURNAL).is_file()]
    except OSError:
        return []
    found = [summary(root / name) for name in names]
    return sorted(found, key=lambda r: (r.run_id.split("-", 1)[0], r.started_ns, r.run_id))


def find(run_id: Optional[str]) -> Optional[RunSummary]:
    """The run `run_id` (a unique prefix will do), or with None the newest run that has a restore point."""
    all_runs = runs()
    if run_id is None:
        with_point = [r for r in all_runs if r.has_restore_point]
        return with_point[-1] if with_point else None
    matches = [r for r in all_runs if r.run_id == run_id] or [
        r for r in all_runs if r.run_id.startswith(run_id)
    ]
    return matches[0] if len(matches) == 1 else None
