"""One module per command, each a `run(...)` over plain arguments that returns an exit code.

`cli.py` turns options into those arguments and calls `dispatch`, which imports the command's module on
demand (pip's `commands_dict` model: `gpudoctor --help` imports none of them). Every command reports a
failure the same way, by raising `CommandError(message, code)`; `dispatch` prints it and exits with its
code, the one error channel.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any, NoReturn, Optional, Union

# command name -> module under gpudoctor.commands (imported only when that command runs)
COMMANDS = {
    "check": "check",
    "plan": "plan",
    "fix": "fix",
    "facts": "facts",
    "snapshot": "snapshot",
    "explain": "explain",
    "fleet": "fleet",
    "run": "run",
    "which": "which",
    "bench": "bench",
    "nccl": "nccl",
    "envs": "envs",
    "rules list": "rules",
    "rules show": "rules",
    "rules validate": "rules",
    "rules test": "rules",
    "rules docs": "rules",
}


class CommandError(Exception):
    """A command cannot go on: `message` goes to stderr as `gpudoctor: message`, `code` is the exit code
    (2: could not check / bad usage)."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class Outcome:
    """An exit code, and the calls that never answered (the process must not wait for them at exit). A
    plain class, not a dataclass: importing dataclasses (inspect, ast) would delay `run`'s command."""

    def __init__(self, code: int, unanswered: Optional[list[str]] = None) -> None:
        self.code = code
        self.unanswered = unanswered if unanswered is not None else []

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Outcome) and (self.code, self.unanswered) == (other.code, other.unanswered)

    def __repr__(self) -> str:
        return f"Outcome(code={self.code!r}, unanswered={self.unanswered!r})"


def problems(what: str, e: Any) -> CommandError:
    """The error listing every problem of a bad rule file or policy, one a line."""
    return CommandError(f"{what} problems:\n" + "\n".join(f"  {p}" for p in e.problems))


def dispatch(name: str, **kwargs: Any) -> NoReturn:
    """Run the command `name` (a key of COMMANDS) and exit with what it returns or raises."""
    from ..container import operator

    operator.provide()  # the rule language's nvidia_require, before any rule loads
    module = importlib.import_module(f"{__name__}.{COMMANDS[name]}")
    entry = getattr(module, "run_" + name.split()[-1]) if " " in name else module.run
    try:
        outcome: Union[int, Outcome] = entry(**kwargs)
    except CommandError as e:
        from ..report.safe import terminal_lines

        sys.stderr.write(terminal_lines(f"gpudoctor: {e.message}\n"))  # it names files, rules, inputs
        finish(e.code)
    finish(outcome)


def finish(outcome: Union[int, Outcome]) -> NoReturn:
    """Flush and exit. When a call never returned, a thread may still sit inside a C library: do not
    wait for it (os._exit)."""
    code, unanswered = (outcome.code, outcome.unanswered) if isinstance(outcome, Outcome) else (outcome, [])
    sys.stdout.flush()
    sys.stderr.flush()
    if unanswered:
        os._exit(code)
    raise SystemExit(code)


def use_color() -> bool:
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
