"""The live Host: reads this machine, every command and NVML call under a deadline."""

from __future__ import annotations

import collections
import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from typing import Any, Optional, Union

from . import children, pyinspect
from .base import (
    NO_PERMISSION,
    NOT_FOUND,
    PYTHON_FAILED,
    TIMED_OUT,
    TOO_LARGE,
    UNSUPPORTED_PYTHON,
    CommandResult,
    Deadline,
    HostError,
)
from .nvml_live import NvmlSession

MAX_READ = 4 * 1024 * 1024
KMSG = "/dev/kmsg"  # read record by record, without blocking (_read_kmsg)
MAX_KMSG = 4 * 1024 * 1024  # the newest bytes of it kept
# Commands run with a fixed, minimal locale so that their output parses the same everywhere.
_CHILD_ENV_KEEP = ("PATH", "HOME", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "VIRTUAL_ENV", "CONDA_PREFIX")
# The runtime children (check --deep) also keep what decides which CUDA a framework finds and how devices
# are numbered. Nothing else is passed on.
_RUNTIME_ENV_KEEP = ("CUDA_HOME", "CUDA_PATH", "CUDA_DEVICE_ORDER")
# JAX would otherwise reserve 75% of every GPU's memory just to list its devices.
_RUNTIME_ENV_SET = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
MAX_RUNTIME_STDOUT = 1024 * 1024
MAX_RUNTIME_STDERR = 8 * 1024  # the end of it: where a crash or a framework's last log line is


class LiveHost:
    kind = "live"

    def __init__(
        self,
        deadline: Optional[Deadline] = None,
        python: Union[str, Sequence[str], None] = None,
        nvml_timeout: float = 2.0,
        nvml_session: Optional[NvmlSession] = None,
    ) -> None:
        self.deadline = deadline or Deadline(30.0)
        # --python: one interpreter or several; none means the default target (default_target).
        self._pythons = [python] if isinstance(python, str) else list(python or ())
        self._nvml = nvml_session or NvmlSession()
        self._nvml_timeout = nvml_timeout
        self.timed_out: list[str] = []  # what did not answer in time, for the report
        self._timed_out_lock = threading.Lock()  # guards timed_out and _commands_running
        self._commands_running: set[str] = set()
        # Several probes ask for the same command output or Python inspection: do each once per check.
        self._memo: dict[tuple, tuple[bool, Any]] = {}
        self._memo_locks: dict[tuple, threading.Lock] = {}
        self._memo_guard = threading.Lock()

    def _note_timed_out(self, what: str) -> None:
        with self._timed_out_lock:  # probe threads and the collector note concurrently
            if what not in self.timed_out:
                self.timed_out.append(what)

    def note_unanswered(self) -> None:
        """Called at the deadline: what is still running (the NVML call, commands) did not answer in time.

        A call's own time limit is cut to the deadline, so the call and the probe waiting for it end at the
        same moment; without this, the report would name the abandoned probe but not always the call."""
        running = self._nvml.running
        if running is not None:
            self._note_timed_out(f"NVML {running}")
        with self._timed_out_lock:
            commands = sorted(self._commands_running)
        for command in commands:
            self._note_timed_out(command)

    def _once(self, key: tuple, compute: Any) -> Any:
        with self._memo_guard:
            lock = self._memo_locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self._memo:
                try:
                    self._memo[key] = (True, compute())
                except HostError as e:
                    self._memo[key] = (False, e)
            ok, value = self._memo[key]
        if not ok:
            raise value
        return value

    # --- files ------------------------------------------------------------------------------------
    def read(self, path: str) -> str:
        if path == KMSG:
            return self._read_kmsg(path)
        try:
            # Unbuffered: one read(2) a chunk, and one that finds the end (a buffered file makes three, and a
            # read of /proc/net/tcp walks the kernel's socket table each time: 0.5 ms).
            with open(path, "rb", buffering=0) as f:
                # In chunks: /proc/sys files refuse one read of several MiB (ENOMEM).
                chunks, total = [], 0
                while total <= MAX_READ:
                    chunk = f.read(64 * 1024)
                    if not chunk:
                        break
                    chunks.append(chunk)
                    total += len(chunk)
                data = b"".join(chunks)
        except FileNotFoundError as e:
            raise HostError(NOT_FOUND, path) from e
        except PermissionError as e:
            raise HostError(NO_PERMISSION, path) from e
        except OSError as e:
            raise HostError(NOT_FOUND if e.errno in (20, 19, 6) else "unreadable", f"{path}: {e}") from e
        if len(data) > MAX_READ:
            raise HostError(TOO_LARGE, path)
        return data.decode("utf-8", errors="replace")

    def _read_kmsg(self, path: str) -> str:
        """The kernel's log from /dev/kmsg: one record per read(2), without blocking, until EAGAIN says none
        is left (a blocking read would wait for the next message forever). The newest MAX_KMSG bytes are
        kept; a record overwritten while reading (EPIPE) is skipped, and the reading stops at the deadline."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except FileNotFoundError as e:
            raise HostError(NOT_FOUND, path) from e
        except PermissionError as e:
            raise HostError(NO_PERMISSION, path) from e
        except OSError as e:
            raise HostError("unreadable", f"{path}: {e}") from e
        records: collections.deque[bytes] = collections.deque()
        total = 0
        try:
            while not self.deadline.expired():
                try:
                    record = os.read(fd, 8192)
                except BlockingIOError:
                    break
                except BrokenPipeError:
                    continue
                except PermissionError as e:
                    raise HostError(NO_PERMISSION, path) from e
                except OSError as e:
                    raise HostError("unreadable", f"{path}: {e}") from e
                if not record:
                    break
                records.append(record)
                total += len(record)
                while total > MAX_KMSG and records:
                    total -= len(records.popleft())
        finally:
            os.close(fd)
        return b"".join(records).decode("utf-8", errors="replace")

    def listdir(self, path: str) -> list[str]:
        try:
            return sorted(os.listdir(path))
        except FileNotFoundError as e:
            raise HostError(NOT_FOUND, path) from e
        except PermissionError as e:
            raise HostError(NO_PERMISSION, path) from e
        except OSError as e:
            raise HostError(NOT_FOUND, f"{path}: {e}") from e

    def env(self, name: str) -> Optional[str]:
        return os.environ.get(name)

    def env_files(self) -> Any:
        """The reader `gpudoctor envs` finds Python environments through (host/env_files.py)."""
        from .env_files import EnvFiles

        return EnvFiles()

    def env_names(self, prefix: str) -> list[str]:
        return sorted(n for n in os.environ if n.startswith(prefix))

    # --- commands ---------------------------------------------------------------------------------
    def run(self, argv: tuple[str, ...], timeout: float = 2.0) -> CommandResult:
        return self._once(("run", tuple(argv)), lambda: self._run(tuple(argv), timeout))

    def _run(
        self,
        argv: tuple[str, ...],
        timeout: float,
        label: Optional[str] = None,
        extra_env: Optional[dict[str, str]] = None,
        stop_past_limit: bool = False,
    ) -> CommandResult:
        """Run argv (never through a shell) in its own session; on timeout kill the whole group, and
        abandon the pipes if a process that escaped the group still holds them. The child's environment
        is _CHILD_ENV_KEEP's variables and LC_ALL=C, plus `extra_env`. Of each output stream the first
        children.MAX_OUTPUT bytes are kept; with stop_past_limit, more is a HostError (too large) and the
        child is killed at once."""
        argv = tuple(argv)
        label = label or " ".join(argv)  # how reports name it
        limit = self.deadline.clamp(timeout)
        if limit <= 0:
            self._note_timed_out(label)
            raise HostError(TIMED_OUT, f"{label}: no time left")
        env = {k: os.environ[k] for k in _CHILD_ENV_KEEP if k in os.environ}
        env["LC_ALL"] = "C"
        env.update(extra_env or {})
        try:
            proc = children.spawn(argv, env=env)
        except FileNotFoundError as e:
            raise HostError(NOT_FOUND, argv[0]) from e
        except PermissionError as e:
            raise HostError(NO_PERMISSION, argv[0]) from e
        except OSError as e:
            raise HostError("cannot run", f"{argv[0]}: {e}") from e
        with self._timed_out_lock:
            self._commands_running.add(label)
        try:
            out, err = children.communicate(proc, limit, stop_past_limit=stop_past_limit)
        except subprocess.TimeoutExpired:
            self._note_timed_out(label)
            raise HostError(TIMED_OUT, f"{label} did not finish within {limit:.1f} s") from None
        except children.TooMuchOutput as e:
            raise HostError(TOO_LARGE, f"{label} {e}; gpudoctor stopped reading and killed it") from None
        finally:
            with self._timed_out_lock:
                self._commands_running.discard(label)
        return CommandResult(
            argv=argv,
            rc=proc.returncode,
            stdout=out.decode("utf-8", errors="replace"),
            stderr=err.decode("utf-8", errors="replace"),
        )

    # --- NVML -------------------------------------------------------------------------------------
    def nvml(self, function: str, device: Optional[int] = None, arg: Optional[str] = None) -> Any:
        limit = self.deadline.clamp(self._nvml_timeout)
        try:
            return self._nvml.call(function, device, arg, limit)
        except HostError as e:
            if e.reason == TIMED_OUT and self._nvml.hung_in:
                self._note_timed_out(f"NVML {self._nvml.hung_in}")
            raise

    # --- Python environment -----------------------------------------------------------------------
    def python_targets(self) -> list[tuple[str, str]]:
        """The interpreters to judge, each with what chose it (docs/architecture.md, "Which Python")."""
        if self._pythons:
            return [(_resolve(p), "--python") for p in self._pythons]
        return [default_target(os.environ, sys.executable)]

    def target_python(self) -> str:
        return self.python_targets()[0][0]

    def python(self, interpreter: Optional[str] = None) -> dict:
        target = interpreter or self.target_python()
        return self._once(("python", target), lambda: self._inspect(target))

    def inspect_python_early(self) -> None:
        """Start inspecting each target interpreter now, in the background, each in its own thread.

        An inspection is a child interpreter (15-40 ms), the slowest read of a check without --deep;
        started as soon as the Host exists, it runs while gpudoctor imports its probes and loads its
        rules. The python probe's host.python() then waits for it or finds its answer memoised, errors
        included, so nothing changes but when it runs."""
        for target, _chosen_by in self.python_targets():
            threading.Thread(
                target=self._inspect_quietly, args=(target,), name="python-inspection", daemon=True
            ).start()

    def _inspect_quietly(self, target: str) -> None:
        try:
            self.python(target)
        except Exception:  # noqa: BLE001 - the probe asks again and reports whatever went wrong
            return

    def _inspect(self, target: str) -> dict:
        if _same_interpreter(target):
            return pyinspect.inspect()
        if not os.path.exists(target):
            raise HostError(NOT_FOUND, f"{target}: no such file")
        # Named by its target, not its argv: the argv holds the whole inspection program.
        # Its answer is a few hundred KiB at most: an interpreter printing more is not answering.
        argv = pyinspect.argv(target, dict(os.environ))
        result = self._run(argv, 5.0, label=f"python inspection of {target}", stop_past_limit=True)
        return inspection_result(target, result)

    # --- runtime truth (check --deep) -------------------------------------------------------------
    def cuda_smoke(self, timeout: float = 10.0) -> dict:
        """The CUDA driver smoke test (gpudoctor/host/cuda_smoke.py) in a child of gpudoctor's own
        interpreter: libcuda loaded, cuInit, a context on every GPU. Its raw output, {"rc", "stdout",
        "stderr"}; HostError TIMED_OUT when it did not finish in time (a hung cuInit), once per check."""
        from . import cuda_smoke

        argv = (sys.executable, "-I", "-B", "-c", cuda_smoke.source())
        return self._once(("cuda_smoke",), lambda: self._child(argv, timeout, "libcuda smoke test"))

    def framework_runtime(self, interpreter: str, framework: str, timeout: float = 20.0) -> dict:
        """`framework` imported by `interpreter` in a child process (gpudoctor/host/framework_runtime.py,
        isolated, writing nothing): its raw output, {"rc", "stdout", "stderr"}, once per check."""
        from . import framework_runtime

        if framework not in framework_runtime.FRAMEWORKS:
            raise HostError("not supported", f"{framework}: not a framework gpudoctor imports")
        argv = (interpreter, "-I", "-B", "-c", framework_runtime.source(), framework)
        label = f"{framework} import in {interpreter}"  # reports name it so, not by its argv
        key = ("framework_runtime", interpreter, framework)
        return self._once(key, lambda: self._child(argv, timeout, label))

    def cuda_binaries(self, interpreter: str, directories: Sequence[str], timeout: float = 15.0) -> dict:
        """The GPU architectures of the CUDA extensions installed in `directories` (the environment's import
        path), read by `interpreter` in a child process (gpudoctor/host/cuda_binaries.py, isolated, reading
        only file headers): its raw output, {"rc", "stdout", "stderr"}, once per check."""
        from . import cuda_binaries

        if not directories:  # an inspection that listed no import path: scanning nothing would say "none"
            raise HostError(NOT_FOUND, f"{interpreter}: no import path to scan")
        argv = (interpreter, "-I", "-B", "-c", cuda_binaries.source(), *directories)
        label = f"CUDA extension scan in {interpreter}"  # reports name it so, not by its argv
        key = ("cuda_binaries", interpreter, tuple(directories))
        return self._once(key, lambda: self._child(argv, timeout, label))

    def _child(self, argv: tuple[str, ...], timeout: float, label: str) -> dict:
        env = {k: os.environ[k] for k in _RUNTIME_ENV_KEEP if k in os.environ}
        env.update(_RUNTIME_ENV_SET)
        result = self._run(argv, timeout, label=label, extra_env=env)
        return {
            "rc": result.rc,
            "stdout": result.stdout[:MAX_RUNTIME_STDOUT],
            "stderr": result.stderr[-MAX_RUNTIME_STDERR:],
        }


def inspection_result(target: str, result: CommandResult) -> dict:
    """The dump an inspection printed, or a HostError whose detail says in one line what went wrong."""
    err = " ".join(result.stderr.split())
    if result.rc == pyinspect.UNSUPPORTED or "Unknown option: -I" in result.stderr:
        found = err if result.rc == pyinspect.UNSUPPORTED else "an interpreter without -I (Python 2)"
        raise HostError(UNSUPPORTED_PYTHON, f"{found}; gpudoctor inspects Python 3.8 and newer")
    data = pyinspect.parse_output(result.stdout)
    if data is not None and result.rc == 0:
        return data
    if result.rc != 0:
        detail = f"exited with status {result.rc}" + (f": {err[-300:]}" if err else "")
        raise HostError(PYTHON_FAILED, detail)
    shown = " ".join(result.stdout.split())[:80]
    printed = f"printed {shown!r}" if shown else "printed nothing"
    raise HostError(PYTHON_FAILED, f"{printed}, not an inspection result: is it a Python interpreter?")


def default_target(environ: Any, own: str) -> tuple[str, str]:
    """(interpreter, what chose it) without --python: the active virtual environment, else the active conda
    environment, else `python3` on PATH, else gpudoctor's own interpreter (there is no other)."""
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        root = environ.get(var)
        if root:
            return os.path.join(root, "bin", "python"), var
    import shutil  # here, not at start-up: shutil brings bz2 and lzma along (1 ms of every check)

    found = shutil.which("python3", path=environ.get("PATH", os.defpath))
    if found:
        return found, "PATH"
    return own, "gpudoctor"


def _resolve(python: str) -> str:
    """--python as given, or, for a bare name such as python3.12, where PATH finds it."""
    if os.sep in python:
        return python
    import shutil

    return shutil.which(python) or python


def _same_interpreter(path: str) -> bool:
    try:
        return os.path.samefile(path, sys.executable) and sys.prefix == _prefix_of(path)
    except OSError:
        return False


def _prefix_of(interpreter: str) -> str:
    """The sys.prefix an interpreter path implies: a venv's root holds pyvenv.cfg beside bin/."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(interpreter)))
    if os.path.exists(os.path.join(root, "pyvenv.cfg")):
        return root
    return sys.base_prefix if sys.prefix != sys.base_prefix else sys.prefix
