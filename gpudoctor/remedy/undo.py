"""Undo an earlier run: put the target environment back as that run's restore point recorded it.

An undo is a run of its own (kind `undo`, `undoes` naming the run), with its own restore point made first,
so that an undo can be undone too. What it removes is copied into that restore point before it goes; what
it puts back comes from the backups of every run, newest first (a later run may hold the copy of a
distribution that an earlier run installed and a later one replaced).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from . import journal
from .interrupts import uninterruptible
from .inventory import InventoryError, diff, read_inventory
from .model import CannotRun
from .restore import RestoreError, RestorePoint, Rollback, roll_back


@dataclass
class UndoResult:
    target: str  # the run undone
    python: str
    outcome: str  # nothing to do | dry run | declined | undone | undo incomplete
    changes: dict[str, tuple[Optional[str], Optional[str]]]  # name -> (now, after the undo)
    run_id: Optional[str] = None
    rollback: Optional[Rollback] = None

    @property
    def exit_code(self) -> int:
        return 0 if self.outcome in ("nothing to do", "dry run", "undone") else 1


def undo(
    run: journal.RunSummary, confirm: Callable[[dict], bool], dry_run: bool = False, timeout: float = 120.0
) -> UndoResult:
    """Restore the environment of `run` to its restore point; `confirm(changes)` says whether to go on."""
    try:
        point = RestorePoint.load(run.path)
    except (OSError, ValueError, KeyError, InventoryError, RestoreError) as e:
        raise CannotRun(f"run {run.run_id} has no readable restore point: {e}") from None
    python = point.inventory.python
    try:
        now = read_inventory(python, timeout)
    except InventoryError as e:
        raise CannotRun(f"cannot read the environment of {python}: {e}") from None
    changes = diff(now, point.inventory)
    result = UndoResult(run.run_id, python, "nothing to do", changes)
    if not changes:
        return result
    if dry_run:
        result.outcome = "dry run"
        return result
    if not confirm(changes):
        result.outcome = "declined"
        return result
    log = journal.new_run("undo", python=python, undoes=run.run_id)
    result.run_id = log.run_id
    try:
        keep = RestorePoint.create(log.run_dir, python, timeout)
    except (InventoryError, RestoreError, OSError) as e:
        log.write("end", outcome="could not start", reason=f"no restore point: {e}")
        log.close()
        raise CannotRun(f"cannot make a restore point of {python}: {e}") from None
    log.write("restore_point", path="restore", distributions=len(keep.inventory.dists), python=python)
    with uninterruptible():
        search = [log.run_dir] + [r.path for r in reversed(journal.runs()) if r.path != log.run_dir]
        rb = roll_back(point, search, keep_in=keep, timeout=timeout)
    log.write(
        "rollback",
        why=f"undo of {run.run_id}",
        ok=rb.ok,
        removed=rb.removed,
        restored=rb.restored,
        missing=rb.missing,
        leftovers=rb.leftovers,
        problems=rb.problems,
    )
    result.rollback = rb
    result.outcome = "undone" if rb.ok else "undo incomplete"
    log.write("end", outcome=result.outcome, exit=result.exit_code)
    log.close()
    return result
