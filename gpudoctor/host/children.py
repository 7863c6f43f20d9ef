"""The child process groups the live Host has running, so that an interrupted check leaves none behind.

Every command, interpreter inspection, `--deep` runtime child and bench worker starts in a session of its
own (so that a timeout can kill it with everything it started); a Ctrl-C, a SIGTERM or a closed terminal's
SIGHUP to gpudoctor would otherwise leave those groups running. `track` and `untrack` bracket each child's
life; on SIGINT, SIGTERM or SIGHUP the handler `install_signal_handlers` sets kills every tracked group
(SIGKILL), flushes what was written and ends the process at once with exit code 130, 143 or 129 (128 + the
signal). It does not raise an exception to unwind: one raised from a signal handler can land in a place
that swallows it ("Exception ignored in ..."), and the check would go on without its children. A child
started after the signal is killed at once, so a probe thread still running cannot start a new one. A
signal gpudoctor was started with ignored (`nohup` ignores SIGHUP) stays ignored.
"""

from __future__ import annotations

import errno
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Optional

# Reentrant: the signal handler runs in the main thread, which may be inside track() at that moment.
_lock = threading.RLock()
_started = threading.Condition(_lock)  # notified when a child being started has been tracked
_groups: set[int] = set()
_starting = 0  # children between fork and track(): a signal then must wait for their process ids
_closing = False
# The signals that end gpudoctor, its children first.
ENDING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# What those signals were when install_signal_handlers replaced them (ignored_at_start).
_at_start: dict[int, object] = {}
# What is read of each output stream of a child, at most (communicate).
MAX_OUTPUT = 8 * 1024 * 1024
CHUNK = 64 * 1024
# How long the signal handler waits for a child being started to be tracked.
START_WAIT_S = 2.0


@contextmanager
def starting() -> Iterator[None]:
    """Around starting a child and tracking it: its process may run before Popen returns its id. Once
    kill_all has begun, none starts (OSError): one forked then could outlive the exit that follows."""
    global _starting
    with _lock:
        if _closing:
            raise OSError(errno.ECANCELED, "gpudoctor is ending: no new child process")
        _starting += 1
    try:
        yield
    finally:
        with _lock:
            _starting -= 1
            _started.notify_all()


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
        _started.wait_for(lambda: _starting == 0, timeout=START_WAIT_S)
        groups = sorted(_groups)
        _groups.clear()
    for pgid in groups:
        _kill(pgid)


def _kill(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:  # already gone
        pass


def exit_code(signum: int) -> int:
    """130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP, as shells report a process ended by them."""
    return 128 + signum


def _on_signal(signum: int, _frame: object) -> None:
    kill_all()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - e.g. a reentrant flush of the write the signal interrupted
            pass
    try:
        os.write(2, b"gpudoctor: interrupted\n")
    except OSError:
        pass
    # Threads may be stuck in C libraries (NVML) and the children are gone: nothing is left to wait for.
    os._exit(exit_code(signum))


def install_signal_handlers() -> None:
    """SIGINT, SIGTERM and SIGHUP: kill the children, then end the process (130, 143, 129). SIGHUP ignored
    at start (`nohup gpudoctor bench`) stays ignored: whoever started it asked to outlive the terminal."""
    for signum in ENDING:
        _at_start.setdefault(signum, signal.getsignal(signum))
        if signum == signal.SIGHUP and ignored_at_start(signum):
            continue
        signal.signal(signum, _on_signal)


def ignored_at_start(signum: int) -> bool:
    """Whether gpudoctor was started with `signum` ignored (`nohup` ignores SIGHUP; a shell script's
    `cmd &` ignores SIGINT and SIGQUIT). A command that `gpudoctor run` starts must inherit that, as it
    would from a shell; install_signal_handlers has replaced what the process began with, so it is kept."""
    return _at_start.get(signum, signal.getsignal(signum)) is signal.SIG_IGN


def spawn(
    argv: Sequence[str],
    env: Optional[dict[str, str]] = None,
    stdin: Any = subprocess.DEVNULL,
    stdout: Any = subprocess.PIPE,
    stderr: Any = subprocess.PIPE,
    own_session: bool = True,
) -> subprocess.Popen:
    """Start argv (never through a shell), tracked, so that an interrupted gpudoctor kills it: in a
    session of its own by default, so that a timeout can kill it with everything it started. OSError
    when it cannot start."""
    with starting():
        proc = subprocess.Popen(
            list(argv), stdin=stdin, stdout=stdout, stderr=stderr, start_new_session=own_session, env=env
        )
        if own_session:
            track(proc.pid)
    return proc


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()


class TooMuchOutput(OSError):
    """A child printed more than `limit` bytes to `stream` ("stdout" or "stderr"); its group was killed.
    An OSError, so that a caller that handles a child it could not run handles this one too."""

    def __init__(self, stream: str, limit: int) -> None:
        super().__init__(f"printed more than {_size(limit)} to {stream}")
        self.stream, self.limit = stream, limit


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 and n % (1 << 20) == 0 else f"{n} bytes"


def communicate(
    proc: subprocess.Popen, timeout: float, limit: int = MAX_OUTPUT, stop_past_limit: bool = True
) -> tuple[bytes, bytes]:
    """Wait at most `timeout` seconds for a spawned child's output, at most `limit` bytes of each stream;
    untracks it. A child printing without end (a hostile `--python`) costs gpudoctor `limit` bytes, not its
    memory: past the limit the whole group is killed and TooMuchOutput raised, or, with stop_past_limit
    False, what follows is read and dropped and the first `limit` bytes returned when the child ends. On
    timeout the whole group is killed and, when a grandchild in another session still holds the pipes, they
    are closed rather than waited on (subprocess.run would wait); then subprocess.TimeoutExpired is
    raised."""
    end = time.monotonic() + timeout
    names = {proc.stdout: "stdout", proc.stderr: "stderr"}
    names.pop(None, None)  # a stream the child was not given a pipe for
    read = {"stdout": bytearray(), "stderr": bytearray()}
    try:
        with selectors.DefaultSelector() as selector:
            for stream in names:
                selector.register(stream, selectors.EVENT_READ)
            while selector.get_map():
                left = end - time.monotonic()
                if left <= 0:
                    raise subprocess.TimeoutExpired(proc.args, timeout)
                for key, _events in selector.select(left):
                    chunk = os.read(key.fd, CHUNK)
                    data = read[names[key.fileobj]]
                    if not chunk:
                        selector.unregister(key.fileobj)
                    elif len(data) + len(chunk) <= limit:
                        data += chunk
                    elif stop_past_limit:
                        raise TooMuchOutput(names[key.fileobj], limit)
                    else:
                        data += chunk[: limit - len(data)]
        proc.wait(max(0.0, end - time.monotonic()))
        return bytes(read["stdout"]), bytes(read["stderr"])
    except (subprocess.TimeoutExpired, TooMuchOutput):
        kill_group(proc)
        try:
            proc.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            pass
        raise
    finally:
        for stream in names:  # closed, not drained: a grandchild in another session may still hold them
            try:
                stream.close()
            except OSError:
                pass
        untrack(proc.pid)
