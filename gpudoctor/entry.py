"""The `gpudoctor` process: signal handlers, the output encoding, the crash log and the exit.

The usual `gpudoctor check ...` command lines are read by check_argv, without importing typer (a fifth
of a check's time), `run -- CMD` and `explain MESSAGE` here (_quick); every other command line goes to
typer (cli.run_app). Either way the command runs
through commands.dispatch, so both paths end the same.

Exit codes: 0 nothing at or above --fail-on, 1 findings at or above it, 2 could not check (bad usage, bad
rule file, unreadable snapshot), 3 internal error (a crash log is written), 130 interrupted (Ctrl-C),
143 terminated (SIGTERM).
"""

from __future__ import annotations

import os
import sys
from typing import Any, Optional

from . import check_argv


def main() -> None:
    """130 on Ctrl-C, 143 on SIGTERM (the child process groups killed first), 3 with a crash log on
    anything unexpected."""
    from .host import children

    # Our own handlers, so that Ctrl-C is not turned into a click Abort (exit 1) and no child outlives us.
    children.install_signal_handlers()
    _replace_unencodable()
    try:
        quick = check_argv.parse(sys.argv[1:])
        name, kwargs = ("check", quick) if quick is not None else _quick(sys.argv[1:])
        if name is None:
            from .cli import run_app

            run_app()
        else:
            from .commands import dispatch

            dispatch(name, **kwargs)
    except BrokenPipeError:  # the reader went away (`| head`): exit 1 quietly, as click does
        _discard_stdout()
        sys.exit(1)
    except Exception as e:  # noqa: BLE001 - anything unexpected becomes exit 3 with a crash log
        from .crashlog import write_crash_log

        path = write_crash_log(e)
        sys.stderr.write(f"gpudoctor: internal error: {type(e).__name__}: {e}\ncrash log: {path}\n")
        sys.exit(3)


def _quick(argv: list[str]) -> tuple[Optional[str], dict[str, Any]]:
    """`run [--no-explain] [--] CMD ARGS...` and `explain MESSAGE`, read without typer (a third of their
    time: run's command starts sooner, a message is answered sooner); (None, {}) for typer to read any other
    form (another option, --help)."""
    if argv[:1] == ["explain"] and len(argv) == 2 and not argv[1].startswith("-"):
        return "explain", {"message": argv[1]}
    if argv[:1] != ["run"]:
        return None, {}
    rest = argv[1:]
    explain = rest[:1] != ["--no-explain"]
    rest = rest[0 if explain else 1 :]
    if rest[:1] == ["--"]:
        rest = rest[1:]
    elif rest[:1] and rest[0].startswith("-"):
        return None, {}
    return ("run", {"argv": tuple(rest), "timeout": 10.0, "explain": explain}) if rest else (None, {})


def console() -> None:
    """The `gpudoctor` command: main(), then out as soon as the output is flushed. The interpreter's own
    shutdown (tearing down every module, collecting garbage) only delays the shell; nothing of gpudoctor's
    is left to run by then (files are closed, children are reaped or killed here)."""
    try:
        main()
        code: object = 0
    except SystemExit as e:
        code = e.code
    if code is not None and not isinstance(code, int):
        sys.stderr.write(f"{code}\n")
        code = 1
    from .host import children

    children.kill_all()  # none outlives the command: an inspection started before an error, say
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code or 0)


def _replace_unencodable() -> None:
    """Under an encoding that cannot hold every character (PYTHONIOENCODING=ascii, LANG=C), print what
    it can and replace the rest, rather than crash in the middle of a report."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and getattr(stream, "errors", "strict") == "strict":
            try:
                reconfigure(errors="replace")
            except (ValueError, OSError):  # a stream that cannot be reconfigured stays as it is
                pass


def _discard_stdout() -> None:
    """What is still buffered for a closed pipe goes nowhere, so that the flush at exit cannot fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no file descriptor behind stdout: nothing to redirect
        pass
