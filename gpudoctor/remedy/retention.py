"""Which runs fix keeps: restore points hold a copy of every distribution a run replaced (a torch build is
hundreds of megabytes), so old runs go.

The policy (docs/fix.md): a run is kept when it is one of the newest KEEP_RUNS runs, or when it started
less than KEEP_DAYS days ago; every other run's directory is removed, journal and restore point together.
It is applied after each fix that ends fixed or partly fixed, and by `gpudoctor fix --prune` (with
`--dry-run`, only listed). A run's age is read from its id (the UTC time it started), never from a file's
mtime, which a copy or a backup tool changes.
"""

from __future__ import annotations

import calendar
import os
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from .journal import RunSummary

KEEP_RUNS = 5
KEEP_DAYS = 14
DAY_S = 86400


@dataclass(frozen=True)
class Pruned:
    run: RunSummary
    size: int  # bytes its directory holds


def started(run_id: str) -> Optional[float]:
    """The UTC time (epoch seconds) a run id names (20261201T233122Z-7f3a); None for another name."""
    try:
        return float(calendar.timegm(time.strptime(run_id.split("-", 1)[0], "%Y%m%dT%H%M%SZ")))
    except ValueError:
        return None


def size_of(path: Path) -> int:
    """Bytes of the files under `path` (links not followed)."""
    total = 0
    for top, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(top, name)).st_size
            except OSError:  # gone meanwhile
                pass
    return total


def to_prune(
    runs: Sequence[RunSummary], now: float, keep_runs: int = KEEP_RUNS, keep_days: float = KEEP_DAYS
) -> list[RunSummary]:
    """The runs (oldest first, as journal.runs() lists them) the policy removes. A run whose id names no
    time is kept: its age is not known."""
    newest = {r.run_id for r in list(runs)[-keep_runs:]} if keep_runs > 0 else set()
    out = []
    for r in runs:
        begun = started(r.run_id)
        if r.run_id not in newest and begun is not None and now - begun >= keep_days * DAY_S:
            out.append(r)
    return out


def prune(runs: Sequence[RunSummary], now: float, dry_run: bool = False) -> tuple[list[Pruned], list[str]]:
    """Remove (or with dry_run only measure) the runs the policy removes. Returns them with their sizes,
    and the problems (a directory that could not be removed whole)."""
    done, problems = [], []
    for r in to_prune(runs, now):
        item = Pruned(r, size_of(r.path))
        if not dry_run:
            try:
                shutil.rmtree(r.path)
            except OSError as e:
                problems.append(f"cannot remove {r.path}: {e.strerror or e}")
                continue
        done.append(item)
    return done, problems
