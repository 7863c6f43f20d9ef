"""Apply a FixPlan: confirm each step, keep a restore point, run, verify, roll back on failure.

The plan's steps run in its order. Each runnable step (patterns.check) goes through the one confirm
callback first (the conda doctor pattern): it returns to run the step, raises Declined to skip it, Quit
to skip it and every later one, or DryRun to only say what would run. Before the first step that runs,
the run gets its directory, journal and restore point; before each package step, a copy of every
distribution it would replace (changes.py). A step that exits non-zero, times out or is interrupted, or
that exits 0 but leaves its findings in place or brings a new error-level finding, ends the run and
rolls the environment back to the restore point. A step's findings are judged after the last step that
serves them (an uninstall is judged with the install that follows it).

Nothing here prints or prompts: the `ui` object the command passes in does (confirm, started, line,
finished, rolling_back). System steps (--allow-system) are journaled but cannot be rolled back.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Optional

from ..plan import FixPlan, PlanStep
from . import changes, journal, patterns, runner
from .interrupts import interruptible, uninterruptible
from .inventory import Inventory, InventoryError, diff, read_inventory
from .model import (
    INTERRUPTED,
    UI,
    CannotRun,
    Declined,
    DryRun,
    Options,
    Quit,
    Recheck,
    RunResult,
    StepResult,
)
from .restore import RestoreError, RestorePoint, Rollback, roll_back


def refusals(plan: FixPlan, allow_system: bool) -> list[str]:
    """Every step whose command fails its patterns: a plan with one is not applied at all."""
    out = []
    for n, step in enumerate(plan.steps, 1):
        held = patterns.check(step.kind, step.risk, step.argv, plan.python, allow_system)
        if held is not None and held.refused:
            out.append(f"step {n} ({step.command or step.kind}): {held.reason}")
    return out


def _checkpoints(plan: FixPlan, runnable: list[int]) -> set[int]:
    """The runnable steps after which their findings are judged: those no later runnable step shares a
    rule with."""
    out = set()
    for pos, i in enumerate(runnable):
        later = {r for j in runnable[pos + 1 :] for r in plan.steps[j].rules}
        if not set(plan.steps[i].rules) & later:
            out.add(i)
    return out


def verdict(targeted: set[str], before: Recheck, after: Recheck) -> str:
    """ "" when the step did what it should; else what went wrong."""
    still = sorted(r for r in targeted if any(f.rule == r for f in after.findings))
    if still:
        return f"its finding is still there: {', '.join(still)}"
    unknown = sorted(targeted & after.unknown)
    if unknown:
        return f"could not verify: {', '.join(unknown)} could not be evaluated afterwards"
    had = {(f.rule, f.item) for f in before.findings}
    new = sorted({f.rule for f in after.findings if f.severity == "error" and (f.rule, f.item) not in had})
    if new:
        return f"it brought a new error-level finding: {', '.join(new)}"
    return ""


class _Run:
    """One fix run's state while it goes."""

    def __init__(self, plan: FixPlan, ui: UI, opts: Options, start: dict[str, Any]) -> None:
        self.plan, self.ui, self.opts, self.start = plan, ui, opts, start
        self.journal: Optional[journal.Journal] = None
        self.point: Optional[RestorePoint] = None
        self.results: list[StepResult] = []
        self.python_changed = False

    def open(self) -> None:
        """The run's directory, journal and restore point, before the first step runs."""
        if self.journal is not None:
            return
        self.journal = journal.new_run(
            "fix", python=self.plan.python, installer=self.plan.installer, **self.start
        )
        try:
            self.point = RestorePoint.create(
                self.journal.run_dir, self.plan.python or "", self.opts.read_timeout
            )
        except (InventoryError, RestoreError, OSError) as e:
            self.journal.write("end", outcome="could not start", reason=f"no restore point: {e}")
            raise CannotRun(f"cannot make a restore point of {self.plan.python}: {e}") from None
        self.journal.write(
            "restore_point",
            path="restore",
            distributions=len(self.point.inventory.dists),
            python=self.point.inventory.python,
            prefix=self.point.inventory.prefix,
        )

    def inventory(self) -> Inventory:
        return read_inventory(self.plan.python or "", self.opts.read_timeout)

    def step(self, number: int, step: PlanStep) -> StepResult:
        """Back up what it replaces, run it, record what it changed."""
        assert self.point is not None and self.journal is not None
        before = self.inventory() if step.risk == "python-env" else None
        if before is not None:
            started = time.monotonic()
            try:
                names = changes.replaced(step.argv, before.dists, self.opts.read_timeout)
            except changes.DryRunFailed as e:
                return StepResult(
                    number, step, "failed", e.message, duration=time.monotonic() - started, tail=e.tail
                )
            self.point.back_up_from(before, names)
            self.python_changed = True
        self.ui.started(number, step)
        ran = runner.run(
            step.argv,
            self.opts.step_timeout,
            self.ui.line,
            own_session=step.risk == "python-env",
        )
        moved = diff(before, self.inventory()) if before is not None else {}
        if ran.error:
            return StepResult(number, step, "failed", ran.error, duration=ran.duration)
        if ran.timed_out:
            why = f"it did not finish in {self.opts.step_timeout:.0f} s and was stopped"
            return StepResult(number, step, "failed", why, None, ran.duration, moved, ran.tail)
        if ran.exit != 0:
            return StepResult(
                number, step, "failed", f"it exited {ran.exit}", ran.exit, ran.duration, moved, ran.tail
            )
        return StepResult(number, step, "applied", "", 0, ran.duration, moved, ran.tail)

    def record(self, result: StepResult) -> None:
        self.results.append(result)
        if self.journal is not None and result.status in ("applied", "failed"):
            self.journal.write(
                "step",
                number=result.number,
                kind=result.step.kind,
                argv=list(result.step.argv),
                rules=list(result.step.rules),
                status=result.status,
                reason=result.reason,
                exit=result.exit,
                duration_s=round(result.duration, 3),
                changes={k: {"before": a, "after": b} for k, (a, b) in sorted(result.changes.items())},
            )
        self.ui.finished(result)

    def roll_back(self, why: str) -> Rollback:
        assert self.point is not None and self.journal is not None
        self.ui.rolling_back(why)
        with uninterruptible():
            search = [self.journal.run_dir] + [
                r.path for r in reversed(journal.runs()) if r.path != self.journal.run_dir
            ]
            try:
                rb = roll_back(self.point, search, keep_in=self.point, timeout=self.opts.read_timeout)
            except (InventoryError, OSError) as e:
                rb = Rollback(ok=False, problems=[f"the rollback could not read the environment: {e}"])
        self.journal.write(
            "rollback",
            why=why,
            ok=rb.ok,
            removed=rb.removed,
            restored=rb.restored,
            missing=rb.missing,
            leftovers=rb.leftovers,
            problems=rb.problems,
        )
        return rb


def apply(
    plan: FixPlan,
    before: Recheck,
    recheck: Callable[[], Recheck],
    ui: UI,
    opts: Options = Options(),
    start: Optional[dict[str, Any]] = None,
) -> RunResult:
    """Apply `plan` (made from the check whose findings are `before`); `recheck` runs the check again."""
    refused = refusals(plan, opts.allow_system)
    if refused:
        raise CannotRun("the plan has steps fix refuses to run:\n" + "\n".join(f"  {r}" for r in refused))
    run = _Run(plan, ui, opts, start or {})
    holds = [patterns.check(s.kind, s.risk, s.argv, plan.python, opts.allow_system) for s in plan.steps]
    runnable = [i for i, h in enumerate(holds) if h is None]
    checkpoints = _checkpoints(plan, runnable)
    targeted: set[str] = set()
    quit_all = dry = False
    failure = ""
    with interruptible():
        try:
            for i, step in enumerate(plan.steps):
                n = i + 1
                if holds[i] is not None:
                    run.record(StepResult(n, step, "instruction", holds[i].reason))
                    continue
                if failure:
                    run.record(StepResult(n, step, "not-run", "an earlier step failed"))
                    continue
                if quit_all:
                    run.record(StepResult(n, step, "declined", "you quit"))
                    continue
                try:
                    ui.confirm(n, step)
                except DryRun:
                    dry = True
                    run.record(StepResult(n, step, "would-run"))
                    continue
                except Declined:
                    run.record(StepResult(n, step, "declined", "you said no"))
                    continue
                except Quit:
                    quit_all = True
                    run.record(StepResult(n, step, "declined", "you quit"))
                    continue
                run.open()
                result = run.step(n, step)
                if result.status == "applied":
                    targeted |= set(step.rules)
                    if i in checkpoints:
                        problem = verdict(targeted, before, recheck())
                        if problem:
                            result.status, result.reason = "failed", problem
                        else:
                            result.reason = "verified: its findings are gone"
                            targeted = set()
                if result.status == "failed":
                    failure = f"step {n} failed: {result.reason}"
                run.record(result)
        except KeyboardInterrupt:
            if run.journal is None:
                return RunResult(run.results, "interrupted")
            rb = run.roll_back("interrupted") if run.python_changed else None
            run.journal.write("end", outcome="interrupted", exit=INTERRUPTED)
            run.journal.close()
            return _result(run, "interrupted", rb, "interrupted (Ctrl-C)")
    if run.journal is None:
        outcome = "dry run" if dry else ("declined" if _declined(run) else "nothing to do")
        return RunResult(run.results, outcome)
    rb = None
    if failure:
        rb = run.roll_back(failure) if run.python_changed else None
        outcome = "failed" if rb is None else "rolled back" if rb.ok else "rollback incomplete"
    else:
        outcome = "partly fixed" if _declined(run) else "fixed"
    result = _result(run, outcome, rb, failure)
    run.journal.write("end", outcome=outcome, exit=result.exit_code)
    run.journal.close()
    return result


def _declined(run: _Run) -> bool:
    return any(r.status == "declined" for r in run.results)


def _result(run: _Run, outcome: str, rb: Optional[Rollback], failure: str) -> RunResult:
    assert run.journal is not None
    return RunResult(run.results, outcome, run.journal.run_id, str(run.journal.run_dir), rb, failure)
