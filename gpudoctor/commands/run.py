"""`gpudoctor run -- CMD ARGS...`: run a command unchanged and, when it fails, explain the failure against
this host in one short block after the command's own output ([docs/run.md](../../docs/run.md)).

What the command gets is what it would get run straight from the shell:
- its argv exactly (executed directly, never through a shell; a name without "/" is looked up on PATH);
- gpudoctor's own stdin and stdout file descriptors (a terminal stays a terminal), and every other
  descriptor gpudoctor inherited as inheritable (`close_fds=False`: make's jobserver, a `3>file`;
  gpudoctor's own descriptors are non-inheritable, PEP 446);
- the environment, working directory, process group, signal mask and signal dispositions gpudoctor was
  started with. Python changes two of those at start, and both are put back for the command: the SIGPIPE
  and SIGXFSZ it ignores (subprocess's `restore_signals`), and the `LC_CTYPE` that PEP 538's locale
  coercion adds under the C locale (left out when the environment gpudoctor was started with,
  /proc/self/environ, had none). A signal ignored when gpudoctor started (nohup's SIGHUP, the SIGINT and
  SIGQUIT of a script's `cmd &`) stays ignored, for the command too, and is not forwarded.
The one difference: stderr is a pipe, which gpudoctor copies to its own fd 2 as raw bytes as soon as they
arrive (os.read/os.write, no decoding, no buffering), keeping the last 64 KiB for the explanation. A
program that colours its stderr only on a terminal prints it plain here. When the command ends, what it
wrote before it ended is copied and the copying stops: what a process it left running in the background
writes to that stderr later is not copied. When gpudoctor's stderr goes away (EPIPE), gpudoctor closes the
pipe, so that the command meets EPIPE/SIGPIPE on its next write as it would have writing there itself.

Exit code: the command's; 128+N when signal N killed it (the shell's convention); 127 when it cannot be
found, 126 when it cannot be executed (one line `gpudoctor: run: cannot start CMD: reason` on stderr, as a
shell says it). Explaining never changes it.

Signals. The command stays in gpudoctor's process group (so in the terminal's foreground group when
gpudoctor is there), and what a terminal sends that group reaches it directly: Ctrl-C's SIGINT, Ctrl-\\'s
SIGQUIT, Ctrl-Z's SIGTSTP, a resize's SIGWINCH. While the command runs, gpudoctor's own handlers (host/
children.py: kill the probes' child groups and exit 130/143 at once) are replaced, and restored after:
- SIGINT and SIGQUIT: gpudoctor does nothing (a Python handler that returns, not SIG_IGN, which the
  command would inherit), as a shell waiting for a foreground command does. The terminal delivered the
  signal to the command as well; forwarding it would deliver it twice, and to many programs a second
  Ctrl-C means "abort the cleanup". The command decides what Ctrl-C does, gpudoctor exits with its exit
  code (130 when SIGINT ended it). The cost: a SIGINT sent to gpudoctor's pid alone (`kill -INT PID`) does
  not reach the command: send SIGTERM, or signal the process group.
- SIGTERM, SIGHUP, SIGUSR1, SIGUSR2: forwarded to the command. They come from `kill`, a container runtime
  or a supervisor, sent to gpudoctor's pid alone; gpudoctor then waits on and exits with the command's
  code. One sent to the whole process group reaches the command twice (directly, and forwarded): the
  price of never losing one sent to gpudoctor alone.
- SIGWINCH: forwarded as well, for a pty proxy that signals gpudoctor's pid; after a terminal resize the
  command may see it twice, which is harmless (a resize handler reads the size again).
A signal is forwarded only while the command has not been reaped (its pid cannot be reused meanwhile);
one that arrives before the command has a pid is sent as soon as it has one.
While a failure is being explained (after the command ended), SIGINT, SIGTERM and SIGHUP end gpudoctor at
once with the command's exit code, any probe children killed.
"""

from __future__ import annotations

import array
import fcntl
import os
import select
import signal
import subprocess
import sys
import termios
import threading
from typing import IO, Any, Callable, Optional

from ..host import children
from . import CommandError

TAIL_BYTES = 64 * 1024  # what is kept of the command's stderr for the explanation
CHUNK = 64 * 1024
NOT_FORWARDED = (signal.SIGINT, signal.SIGQUIT)
FORWARDED = (signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2, signal.SIGWINCH)
ENDING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # while a failure is being explained
EXPLAIN_GRACE_S = 1.0  # past the explaining deadline, gpudoctor stops waiting for an answer
POLL_S = 0.05  # how often the command's end is looked for where there is no pidfd (Linux < 5.3)


def run(argv: tuple[str, ...], timeout: float = 10.0, explain: bool = True) -> int:
    """Run argv; its exit code (128+N for signal N, 126/127 when it cannot be started). When it fails and
    wrote to stderr, print the explanation (explain.failure, under `timeout` seconds) after its output."""
    if not argv:
        raise CommandError("run: no command given (usage: gpudoctor run [OPTIONS] -- CMD [ARGS]...)", 2)
    code, tail = _run_command(argv)
    if code != 0 and explain and tail:
        _explain(tail, timeout, code, argv)
    return code


class _Forward:
    """The handler of a forwarded signal: to the command once it has a pid and until it is reaped."""

    def __init__(self) -> None:
        self.pid: Optional[int] = None
        self.pending: list[int] = []

    def __call__(self, signum: int, _frame: object) -> None:
        if self.pid is None:
            self.pending.append(signum)
            return
        try:
            os.kill(self.pid, signum)
        except OSError:  # gone already
            pass

    def start(self, pid: int) -> None:
        self.pid = pid
        pending, self.pending = self.pending, []
        for signum in pending:
            self(signum, None)


def _nothing(_signum: int, _frame: object) -> None:
    """SIGINT, SIGQUIT while the command runs: the terminal sent them to the command too."""


def _run_command(argv: tuple[str, ...]) -> tuple[int, bytes]:
    """(exit code, the last TAIL_BYTES of its stderr)."""
    stderr_open = _is_open(2)  # a closed fd 2 stays closed for the command: nothing to copy
    forward = _Forward()
    saved = _handle({**{s: _nothing for s in NOT_FORWARDED}, **{s: forward for s in FORWARDED}})
    try:
        try:
            proc = subprocess.Popen(
                list(argv),
                stderr=subprocess.PIPE if stderr_open else None,
                close_fds=False,
                env=_command_env(),
            )
        except OSError as e:
            return _cannot_start(argv[0], e), b""
        forward.start(proc.pid)
        copy = _Copy(proc.stderr) if proc.stderr is not None else None
        try:
            _wait(proc.pid, copy)
        finally:
            forward.pid = None  # reaped next: from here on a signal is not sent to that pid
            if proc.stderr is not None:
                proc.stderr.close()
        status = proc.wait()
    finally:
        _restore(saved)
        for signum in forward.pending:  # arrived while the command was being started, and it never was
            signal.raise_signal(signum)
    return (128 - status if status < 0 else status), bytes(copy.tail[-TAIL_BYTES:]) if copy else b""


def _handle(handlers: dict[int, Callable[[int, Any], None]]) -> dict[int, Any]:
    """Install handlers; a signal ignored at gpudoctor's start is ignored instead. The handlers replaced."""
    saved = {}
    for signum, handler in handlers.items():
        ignored = children.ignored_at_start(signum)
        saved[signum] = signal.signal(signum, signal.SIG_IGN if ignored else handler)
    return saved


def _restore(saved: dict[int, Any]) -> None:
    for signum, handler in saved.items():
        signal.signal(signum, handler if handler is not None else signal.SIG_DFL)


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _command_env() -> Optional[dict[str, str]]:
    """None (gpudoctor's environment as it is), or that without the LC_CTYPE which Python's locale coercion
    (PEP 538) set at start: the environment gpudoctor was started with, /proc/self/environ, had none."""
    if "LC_CTYPE" not in os.environ:
        return None
    try:
        with open("/proc/self/environ", "rb") as f:
            started_with = f.read().split(b"\0")
    except OSError:  # not Linux, or not readable: leave the environment alone
        return None
    if any(entry.startswith(b"LC_CTYPE=") for entry in started_with):
        return None
    env = dict(os.environ)
    del env["LC_CTYPE"]
    return env


def _cannot_start(command: str, e: OSError) -> int:
    """127 not found, 126 found but not executable (permission, format, a directory), as a shell says."""
    import shutil

    code = 127 if isinstance(e, FileNotFoundError) else 126
    if code == 127 and "/" not in command and shutil.which(command) is None:
        reason = "command not found"
    else:
        reason = e.strerror or str(e)
    _say(f"gpudoctor: run: cannot start {command}: {reason}\n")
    return code


def _say(text: str) -> None:
    """gpudoctor's own lines, straight to fd 2: nothing is left in sys.stderr's buffer to fail at exit (and
    turn the command's exit code into a broken pipe's) when nobody reads gpudoctor's stderr any more."""
    try:
        _write_all(text.encode(getattr(sys.stderr, "encoding", None) or "utf-8", errors="replace"))
    except OSError:  # no stderr to say it on
        pass


def _write_all(data: bytes) -> None:
    """All of `data` to fd 2, waiting while a non-blocking fd 2 is full; OSError when it cannot take it."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(2, view) :]
        except BlockingIOError:
            select.select([], [2], [])


class _Copy:
    """The command's stderr pipe, copied to fd 2 as it arrives; the last TAIL_BYTES kept."""

    def __init__(self, pipe: IO[bytes]) -> None:
        self.pipe = pipe
        self.fd = pipe.fileno()
        self.tail = bytearray()
        self.writing = True
        self.broken = False  # gpudoctor's stderr went away (EPIPE)
        os.set_blocking(self.fd, False)

    def read(self, limit: int = CHUNK) -> int:
        """Copy at most `limit` bytes of what is there now: how many, 0 when none are, -1 once the pipe is
        done with (closed by the command, or to be closed because gpudoctor's stderr went away)."""
        try:
            data = os.read(self.fd, limit)
        except BlockingIOError:
            return 0
        if not data:
            return -1
        self.tail += data
        if len(self.tail) > 2 * TAIL_BYTES:
            del self.tail[:-TAIL_BYTES]
        if self.writing:
            self._write(data)
        return -1 if self.broken else len(data)

    def drain(self) -> None:
        """What the command wrote before it ended, and no more (a process it left running may go on)."""
        left = self.waiting()
        while left > 0:
            got = self.read(min(left, CHUNK))
            if got <= 0:
                return
            left -= got

    def waiting(self) -> int:
        """Bytes in the pipe now."""
        count = array.array("i", [0])
        try:
            fcntl.ioctl(self.fd, termios.FIONREAD, count, True)
        except OSError:
            return CHUNK
        return count[0]

    def close(self) -> None:
        """Close our end: after EPIPE, so that the command meets EPIPE/SIGPIPE on its next write to stderr,
        as it would have writing there itself."""
        self.pipe.close()

    def _write(self, data: bytes) -> None:
        try:
            _write_all(data)
        except BrokenPipeError:
            self.writing = False
            self.broken = True
        except OSError:  # anything else (EIO, ENOSPC): stop copying, keep reading so that it never blocks
            self.writing = False


def _wait(pid: int, copy: Optional[_Copy]) -> None:
    """Copy the command's stderr until the command ends (it is not reaped here)."""
    pidfd = _pidfd(pid)
    poller = select.poll()
    piped = copy is not None
    if copy is not None:
        poller.register(copy.fd, select.POLLIN)
    if pidfd is not None:
        poller.register(pidfd, select.POLLIN)
    try:
        while True:
            events = poller.poll(None if pidfd is not None else POLL_S * 1000)
            ended = any(fd == pidfd for fd, _event in events)
            if copy is not None and piped and any(fd == copy.fd for fd, _event in events):
                if copy.read() < 0:  # closed: from now on only the command's end is waited for
                    poller.unregister(copy.fd)
                    copy.close()
                    piped = False
            if ended or (pidfd is None and _ended(pid)):
                if copy is not None and piped:
                    copy.drain()
                return
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _pidfd(pid: int) -> Optional[int]:
    try:
        return os.pidfd_open(pid)  # type: ignore[attr-defined]
    except (AttributeError, OSError):  # Python < 3.9, Linux < 5.3
        return None


def _ended(pid: int) -> bool:
    """Whether the command has ended, without reaping it."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _explain(tail: bytes, timeout: float, code: int, argv: tuple[str, ...] = ()) -> None:
    """The explanation after the command's output, or one line saying why there is none. Runs in a thread
    that is given up on EXPLAIN_GRACE_S past the deadline (the process exits with os._exit, entry.console).
    The Python environment judged is the one the command runs (host/command_python.py)."""
    text = tail.decode("utf-8", errors="replace")
    answer: dict[str, Any] = {}
    done = threading.Event()

    def work() -> None:
        try:
            from ..explain.failure import explain_failure
            from ..host.command_python import LiveFiles, interpreter_of

            env = _command_env()
            target = interpreter_of(argv, os.environ if env is None else env, os.getcwd(), LiveFiles())
            answer["block"] = explain_failure(text, timeout, target)
        except Exception as e:  # noqa: BLE001 - explaining a failure must never change the command's exit code
            answer["error"] = e
        finally:
            done.set()

    def end(_signum: int, _frame: object) -> None:
        children.kill_all()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)

    saved = _handle({s: end for s in ENDING})
    try:
        threading.Thread(target=work, name="explain-failure", daemon=True).start()
        answered = done.wait(timeout + EXPLAIN_GRACE_S)
    finally:
        _restore(saved)
    if not answered:
        _say(f"gpudoctor: could not explain the failure: no answer within {timeout:g} s\n")
    elif "error" in answer:
        e = answer["error"]
        _say(f"gpudoctor: could not explain the failure: {type(e).__name__}: {e}\n")
    elif answer.get("block"):
        block = str(answer["block"])
        _say("\n" + block + ("" if block.endswith("\n") else "\n"))
