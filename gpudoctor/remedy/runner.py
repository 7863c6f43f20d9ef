"""Run one step's command: an argument list, never a shell, under a timeout, its output streamed.

The command's stdout and stderr come back merged, line by line, to `on_line` as they are written (so a
long pip download shows progress), and the last lines are kept for the journal and the report. A step of
the Python environment runs in a session of its own, so that a timeout or a Ctrl-C kills it with every
process it started (pip's build backends, uv's workers); a system step stays in gpudoctor's session, where
`sudo` can still ask for a password on the terminal. A Ctrl-C while the command runs kills it and is
raised again (KeyboardInterrupt) for the caller to roll back.
"""

from __future__ import annotations

import queue
import subprocess
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Callable, Optional

from ..host import children

TAIL_LINES = 40
MAX_LINE = 64 * 1024  # a longer line is passed on in pieces: a step's output is never held whole
KILL_WAIT_S = 5.0


@dataclass(frozen=True)
class Ran:
    exit: Optional[int]  # None when it was killed at its timeout
    duration: float  # seconds
    tail: tuple[str, ...]  # its last lines of output
    timed_out: bool = False
    error: str = ""  # it could not start: why


def _read(stream, lines: queue.Queue) -> None:
    try:
        for raw in iter(lambda: stream.readline(MAX_LINE), b""):
            lines.put(raw.decode("utf-8", "replace").rstrip("\r\n"))
    except (OSError, ValueError):  # the pipe was closed under it: the command is over
        pass
    lines.put(None)


def _kill(proc: subprocess.Popen, own_session: bool) -> None:
    if own_session:
        children.kill_group(proc)
    else:
        try:
            proc.kill()
        except OSError:  # it ended meanwhile
            pass
    try:
        proc.wait(timeout=KILL_WAIT_S)
    except subprocess.TimeoutExpired:
        pass


def run(
    argv: Sequence[str],
    timeout: float,
    on_line: Callable[[str], None] = lambda line: None,
    own_session: bool = True,
) -> Ran:
    """Run `argv` to its end or its timeout (seconds)."""
    start = time.monotonic()
    tail: deque[str] = deque(maxlen=TAIL_LINES)
    try:
        proc = children.spawn(
            argv,
            stdin=subprocess.DEVNULL if own_session else None,
            stderr=subprocess.STDOUT,
            own_session=own_session,
        )
    except OSError as e:
        return Ran(None, time.monotonic() - start, (), error=f"cannot start {argv[0]}: {e.strerror or e}")
    lines: queue.Queue = queue.Queue()
    reader = threading.Thread(target=_read, args=(proc.stdout, lines), daemon=True)
    reader.start()
    deadline = start + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                _kill(proc, own_session)
                return Ran(None, time.monotonic() - start, tuple(tail), timed_out=True)
            try:
                line = lines.get(timeout=min(left, 0.5))
            except queue.Empty:
                continue
            if line is None:
                break
            tail.append(line)
            on_line(line)
        code = proc.wait(timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        _kill(proc, own_session)
        return Ran(None, time.monotonic() - start, tuple(tail), timed_out=True)
    except KeyboardInterrupt:
        _kill(proc, own_session)
        raise
    finally:
        if own_session:
            children.untrack(proc.pid)
        reader.join(timeout=1.0)  # a process the command left behind may hold the pipe open: do not wait
        if not reader.is_alive():
            proc.stdout.close()
    return Ran(code, time.monotonic() - start, tuple(tail))
