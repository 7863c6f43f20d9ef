"""The `gpudoctor` process: signal handlers, the standard streams, the crash log and the exit.

The usual `gpudoctor check ...` command lines are read by check_argv, without importing typer (a fifth
of a check's time), `run -- CMD` and `explain MESSAGE` here (_quick); every other command line goes to
typer (cli.run_app). Either way the command runs
through commands.dispatch, so both paths end the same.

The standard streams: a closed stdin reads as empty; a closed stdout or stderr (`>&-`, `2>&-`) is written
to as if it were /dev/null,
its file descriptor left closed (for `run`'s command too); what gpudoctor says on stderr is said best
effort (a reader gone from it never changes the exit code: a preflight whose log reader died still starts
the job); a character the locale's encoding cannot hold (LC_ALL=C) is printed as `?`. A reader gone from
stdout (`| head`) is exit 1, quietly, as click does.

Exit codes: 0 nothing at or above --fail-on, 1 findings at or above it, 2 could not check (bad usage, bad
rule file, unreadable snapshot), 3 internal error (a crash log is written), 130 interrupted (Ctrl-C),
143 terminated (SIGTERM), 129 hung up (SIGHUP: the terminal closed).
"""

from __future__ import annotations

import gc
import io
import os
import select
import sys
from typing import Any, Optional

from . import check_argv


def main() -> None:
    """130 on Ctrl-C, 143 on SIGTERM, 129 on SIGHUP (the child process groups killed first), 3 with a crash
    log on anything unexpected."""
    from .host import children

    # Our own handlers, so that Ctrl-C is not turned into a click Abort (exit 1) and no child outlives us.
    children.install_signal_handlers()
    try:
        quick = check_argv.parse(sys.argv[1:])
        if quick is not None:
            # A check lives a tenth of a second and leaves little cyclic garbage: the collector's passes
            # over the objects its imports make cost it 4 ms (benchmarks/check_phases.py) and free nothing.
            gc.disable()
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
    form (another option, --help). `envs [--format text|json]` too: a listing should not wait on typer."""
    if argv[:1] == ["envs"] and argv[1:] in ([], ["--format", "text"], ["--format", "json"]):
        return "envs", {"fmt": argv[2] if len(argv) == 3 else "text"}
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
    _standard_streams()
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
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # what was still buffered had nobody to read it
        _discard_stdout()
        code = code or 1
    sys.stderr.flush()
    os._exit(code or 0)


def _standard_streams() -> None:
    """sys.stdout and sys.stderr as described at the top: never None (a closed descriptor), stderr best
    effort, and under an encoding that cannot hold every character (PYTHONIOENCODING=ascii, LC_ALL=C
    with PYTHONUTF8=0) what cannot be printed replaced, rather than a crash in the middle of a report.
    A closed stdin reads as empty, as /dev/null does."""
    if sys.stdin is None:
        sys.stdin = io.TextIOWrapper(io.BytesIO(b""))
    if sys.stdout is None:
        sys.stdout = _text(_BestEffort(None), None)
    else:
        _replace_unencodable(sys.stdout)
    stderr = sys.stderr
    if stderr is None or _fileno(stderr) == 2:
        sys.stderr = _text(_BestEffort(2 if stderr is not None else None), stderr)
    else:  # replaced before us (a test harness, an embedding program): left as it is
        _replace_unencodable(stderr)


def _fileno(stream: object) -> int:
    try:
        return stream.fileno()  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        return -1


def _text(raw: io.RawIOBase, like: object) -> io.TextIOWrapper:
    """A text stream over `raw`, encoded and buffered as the stream `like` (None: as a closed stream's
    would have been: the locale's encoding, line buffered)."""
    return io.TextIOWrapper(
        io.BufferedWriter(raw),
        encoding=getattr(like, "encoding", None) or sys.getfilesystemencoding(),
        errors="replace",
        line_buffering=getattr(like, "line_buffering", True),
        write_through=getattr(like, "write_through", False),
    )


def _replace_unencodable(stream: object) -> None:
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is not None and getattr(stream, "errors", "strict") != "replace":
        try:
            reconfigure(errors="replace")
        except (ValueError, OSError):  # a stream that cannot be reconfigured stays as it is
            pass


class _BestEffort(io.RawIOBase):
    """File descriptor `fd` written best effort: once a write fails (the reader went away, EPIPE), the
    rest is dropped. fd None: a closed descriptor, everything dropped (the descriptor stays closed)."""

    def __init__(self, fd: int | None) -> None:
        super().__init__()
        self.fd = fd

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self.fd is not None and os.isatty(self.fd)

    def fileno(self) -> int:
        if self.fd is None:
            raise io.UnsupportedOperation("closed at start")
        return self.fd

    def write(self, data) -> int:  # type: ignore[no-untyped-def]
        view = memoryview(data).cast("B")
        while self.fd is not None and view:
            try:
                view = view[os.write(self.fd, view) :]
            except BlockingIOError:  # a non-blocking descriptor, full: wait until it takes more
                select.select([], [self.fd], [])
            except OSError:  # EPIPE, EIO, ...: nobody reads it any more
                self.fd = None
        return len(data)


def _discard_stdout() -> None:
    """What is still buffered for a closed pipe goes nowhere, so that the flush at exit cannot fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no file descriptor behind stdout: nothing to redirect
        pass
