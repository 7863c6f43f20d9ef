"""What a fix run is made of: the confirm callback's answers, what a check sees, each step's result, the
run's outcome and its exit code, the ui the command passes in, and the run's options."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Protocol

from ..plan import PlanStep
from .restore import Rollback

INTERRUPTED = 130


class Declined(Exception):
    """The user said no to this step."""


class Quit(Exception):
    """No to this step and to every later one."""


class DryRun(Exception):
    """A dry run: say what would run, run nothing."""


class CannotRun(Exception):
    """fix cannot start (exit 2): no restore point could be made, a step refuses, no target."""


@dataclass(frozen=True)
class Seen:
    """A finding as a check sees it."""

    rule: str
    item: Optional[int]
    severity: str


@dataclass(frozen=True)
class Recheck:
    findings: frozenset[Seen]
    unknown: frozenset[str]  # rules that could not be evaluated


@dataclass
class StepResult:
    number: int
    step: PlanStep
    # applied | failed | declined | would-run | instruction | not-run
    status: str
    reason: str = ""  # why it did not run, failed, or how it was verified
    exit: Optional[int] = None
    duration: float = 0.0
    changes: dict[str, tuple[Optional[str], Optional[str]]] = field(default_factory=dict)
    tail: tuple[str, ...] = ()


@dataclass
class RunResult:
    steps: list[StepResult]
    # nothing to do | dry run | declined | fixed | partly fixed | failed | rolled back |
    # rollback incomplete | interrupted
    outcome: str
    run_id: Optional[str] = None
    run_dir: Optional[str] = None
    rollback: Optional[Rollback] = None
    failure: str = ""  # what made the run fail

    @property
    def exit_code(self) -> int:
        if self.outcome == "interrupted":
            return INTERRUPTED
        return 0 if self.outcome in ("nothing to do", "dry run", "fixed") else 1


class UI(Protocol):
    def confirm(self, number: int, step: PlanStep) -> None: ...
    def started(self, number: int, step: PlanStep) -> None: ...
    def line(self, text: str) -> None: ...
    def finished(self, result: StepResult) -> None: ...
    def rolling_back(self, why: str) -> None: ...


@dataclass(frozen=True)
class Options:
    allow_system: bool = False
    step_timeout: float = 3600.0
    read_timeout: float = 120.0  # inventories and dry runs
