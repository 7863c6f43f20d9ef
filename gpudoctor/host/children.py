"""The child process groups the live Host has running, so that an interrupted check leaves none behind.

Every command, interpreter inspection and `--deep` runtime child starts in a session of its own (so that a
timeout can kill it with everything it started); a Ctrl-C or a SIGTERM to gpudoctor would otherwise leave
those groups running. `track` and `untrack` bracket each child's life; on SIGINT or SIGTERM the handler
`install_signal_handlers` sets kills every tracked group (SIGKILL) and raises `Interrupted`, which the
entry point turns into exit code 130 (SIGINT) or 143 (SIGTERM). A child started after that is killed at
once, so a probe thread still running cannot start a new one.
"""

from __future__ import annotations

import os
import signal
import threading

# Reentrant: the signal handler runs in the main thread, which may be inside track() at that moment.
_lock = threading.RLock()
_groups: set[int] = set()
_closing = False


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived; not an Exception, so that no `except Exception` on the way swallows it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum
        self.exit_code = 128 + signum  # 130 for SIGINT, 143 for SIGTERM, as shells report them


def track(pid: int) -> None:
    """A child started in its own session (its process group id is its pid)."""
    with _lock:
        if not _closing:
            _groups.add(pid)
            return
    _kill(pid)


def untrack(pid: int) -> None:
    with _lock:
        _groups.discard(pid)


def running() -> list[int]:
    with _lock:
        return sorted(_groups)


def kill_all() -> None:
    """Kill every tracked group, and every group started from now on."""
    global _closing
    with _lock:
        _closing = True
        groups = sorted(_groups)
        _groups.clear()
    for pgid in groups:
        _kill(pgid)


def _kill(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:  # already gone
        pass


def _on_signal(signum: int, _frame: object) -> None:
    kill_all()
    raise Interrupted(signum)


def install_signal_handlers() -> None:
    """SIGINT and SIGTERM: kill the children, then raise Interrupted in the main thread."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _on_signal)
