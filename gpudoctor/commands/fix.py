"""`gpudoctor fix`: apply the plan (or a saved one) with confirmation, verify, roll back; `--undo`, `--list`,
`--prune`.

This module wires: it runs the check, makes (or loads and re-checks) the plan, asks before each step, and
prints; the remedy package does the rest. Exit codes: 0 fixed or nothing to do (a dry run too), 1 some
finding remains (a step declined, failed or rolled back), 2 could not run (a stale or edited plan, a step
that refuses its patterns, no restore point), 3 internal error, 130 interrupted (rolled back first).
"""

from __future__ import annotations

import sys
from typing import Any, Optional

from . import CommandError, Outcome
from ._shared import check_one, make_plan, parse_mirrors, plan_json, where_checked

DEFAULT_STEP_TIMEOUT = 3600.0


class Console:
    """The remedy's ui: prints each step and its output, asks before each step (remedy.apply.UI)."""

    def __init__(self, total: int, yes: bool, dry_run: bool, step_timeout: float, width: int = 100) -> None:
        self.total, self.yes, self.dry_run, self.width = total, yes, dry_run, width
        self.step_timeout = step_timeout
        self.shown: set[int] = set()  # the steps whose block is printed

    def _out(self, text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    def confirm(self, number: int, step: Any) -> None:
        from ..remedy.model import Declined, DryRun, Quit
        from ..report.fix_report import step_block

        self._out(step_block(number, self.total, step, self.width))
        self.shown.add(number)
        if self.dry_run:
            raise DryRun
        if self.yes:
            return
        self._out("   Run this step? [y]es / [n]o / [q]uit: ")
        answer = sys.stdin.readline()
        if not answer:  # end of input: no one to ask
            self._out("\n")
            raise Quit
        answer = answer.strip().lower()
        if answer in ("y", "yes"):
            return
        raise Quit if answer in ("q", "quit") else Declined

    def started(self, number: int, step: Any) -> None:
        self._out(f"   running (it is stopped after {self.step_timeout:.0f} s)\n")

    def line(self, text: str) -> None:
        from ..report.fix_report import output_line

        self._out(output_line(text))

    def finished(self, result: Any) -> None:
        from ..report.fix_report import result_line, step_block

        if result.number not in self.shown:
            self._out(step_block(result.number, self.total, result.step, self.width))
        self._out(result_line(result))

    def rolling_back(self, why: str) -> None:
        self._out(f"Rolling back ({why}) ...\n")


def _recheck_of(result: Any):
    from ..remedy.model import Recheck, Seen

    findings = frozenset(Seen(f.rule.id, f.item, f.severity) for f in result.findings)
    unknown = frozenset(r.rule.id for r in result.results if r.status == "unknown")
    return Recheck(findings, unknown)


def run(
    python: Optional[str] = None,
    rules: tuple[str, ...] = (),
    policy: Optional[str] = None,
    yes: bool = False,
    dry_run: bool = False,
    allow_system: bool = False,
    plan: Optional[str] = None,
    undo: bool = False,
    run_id: Optional[str] = None,
    list_runs: bool = False,
    prune: bool = False,
    timeout: Optional[float] = None,
    step_timeout: float = DEFAULT_STEP_TIMEOUT,
    index_mirror: tuple[str, ...] = (),
) -> Outcome:
    if prune:
        if list_runs or undo or plan or run_id is not None:
            raise CommandError("--prune goes alone (with --dry-run to only list what it would remove)")
        return _prune(dry_run)
    if list_runs:
        from ..remedy import journal
        from ..report.fix_report import runs_table

        sys.stdout.write(runs_table(journal.runs()))
        return Outcome(0)
    if run_id is not None and not undo:
        raise CommandError(f"{run_id!r}: a run id goes with --undo (gpudoctor fix --undo RUN)")
    if undo:
        return _undo(run_id, yes, dry_run)
    if plan and index_mirror:
        raise CommandError("--index-mirror plans the index URLs; a saved plan (--plan) keeps the ones it has")
    mirrors = parse_mirrors(index_mirror)
    saved = None
    if plan:
        from ..plan_file import PlanFileError, load

        try:
            saved = load(plan)
        except PlanFileError as e:
            raise CommandError(f"--plan: {e}") from None
        if python and saved.plan.python and python != saved.plan.python:
            raise CommandError(f"--plan {plan} was made for {saved.plan.python}, not --python {python}")
        python = python or saved.plan.python
    targets = [python] if python else []
    result = check_one(None, targets, rules, policy, timeout)
    if saved is not None:
        from ..plan_file import basis, changed

        stale = changed(saved.basis, basis(result.findings, result.facts))
        if stale:
            raise CommandError(
                f"--plan {plan} is stale: the facts it was made from have changed since:\n"
                + "\n".join(f"  {line}" for line in stale)
                + "\nmake a new one with `gpudoctor plan -o FILE`, or run `gpudoctor fix` to plan afresh"
            )
        fix_plan = saved.plan
    else:
        fix_plan = make_plan(result, mirrors)
    return _apply(fix_plan, result, targets, rules, policy, timeout, yes, dry_run, allow_system, step_timeout)


def _apply(
    fix_plan: Any,
    result: Any,
    targets: list[str],
    rules: tuple[str, ...],
    policy: Optional[str],
    timeout: Optional[float],
    yes: bool,
    dry_run: bool,
    allow_system: bool,
    step_timeout: float,
) -> Outcome:
    from ..remedy.apply import apply
    from ..remedy.model import CannotRun, Options
    from ..report.fix_report import header, summary

    target = fix_plan.python
    sys.stdout.write(header(where_checked(result), target, fix_plan.installer, dry_run))

    def recheck():
        return _recheck_of(check_one(None, [target] if target else targets, rules, policy, timeout))

    ui = Console(len(fix_plan.steps), yes, dry_run, step_timeout)
    start = {"argv": sys.argv[1:], "digest": plan_json(result, fix_plan)["digest"]}
    try:
        outcome = apply(
            fix_plan, _recheck_of(result), recheck, ui, Options(allow_system, step_timeout), start
        )
    except CannotRun as e:
        raise CommandError(str(e)) from None
    sys.stdout.write(summary(outcome, dry_run))
    if outcome.outcome in ("fixed", "partly fixed"):
        _prune(dry_run=False, quiet=True)
    return Outcome(outcome.exit_code)


def _prune(dry_run: bool, quiet: bool = False) -> Outcome:
    """The retention policy (remedy/retention.py): `--prune` lists what it removes and keeps; after a fix,
    a line when it removed something."""
    import time

    from ..remedy import journal, retention
    from ..report.fix_report import prune_report

    runs = journal.runs()
    pruned, problems = retention.prune(runs, time.time(), dry_run)
    if quiet and not pruned and not problems:
        return Outcome(0)
    gone = {p.run.run_id for p in pruned}
    kept = [] if quiet else [(r, retention.size_of(r.path)) for r in runs if r.run_id not in gone]
    keep = (retention.KEEP_RUNS, retention.KEEP_DAYS)
    sys.stdout.write(prune_report(pruned, kept, problems, dry_run, quiet, keep))
    return Outcome(1 if problems else 0)


def _undo(run_id: Optional[str], yes: bool, dry_run: bool) -> Outcome:
    from ..remedy import journal
    from ..remedy.model import CannotRun
    from ..remedy.undo import undo
    from ..report.fix_report import undo_changes, undo_summary

    found = journal.find(run_id)
    if found is None:
        which = f"run {run_id}" if run_id else "run with a restore point"
        raise CommandError(f"--undo: no {which} in {journal.runs_dir()} (gpudoctor fix --list shows them)")

    def confirm(changes: dict) -> bool:
        sys.stdout.write(f"Undo of run {found.run_id} will change {found.python}:\n")
        sys.stdout.write("\n".join(undo_changes(changes)) + "\n")
        if yes:
            return True
        sys.stdout.write("Go on? [y]es / [n]o: ")
        sys.stdout.flush()
        return sys.stdin.readline().strip().lower() in ("y", "yes")

    try:
        result = undo(found, confirm, dry_run)
    except CannotRun as e:
        raise CommandError(str(e)) from None
    sys.stdout.write(undo_summary(result))
    return Outcome(result.exit_code)
