"""The live Host: reads this machine, every command and NVML call under a deadline."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from typing import Any, Optional

from . import pyinspect
from .base import NO_PERMISSION, NOT_FOUND, TIMED_OUT, TOO_LARGE, CommandResult, Deadline, HostError
from .nvml_live import NvmlSession

MAX_READ = 4 * 1024 * 1024
MAX_OUTPUT = 8 * 1024 * 1024
# Commands run with a fixed, minimal locale so that their output parses the same everywhere.
_CHILD_ENV_KEEP = ("PATH", "HOME", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "VIRTUAL_ENV", "CONDA_PREFIX")


class LiveHost:
    kind = "live"

    def __init__(
        self,
        deadline: Optional[Deadline] = None,
        python: Optional[str] = None,
        nvml_timeout: float = 2.0,
        nvml_session: Optional[NvmlSession] = None,
    ) -> None:
        self.deadline = deadline or Deadline(30.0)
        self._python = python
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
        try:
            with open(path, "rb") as f:
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

    # --- commands ---------------------------------------------------------------------------------
    def run(self, argv: tuple[str, ...], timeout: float = 2.0) -> CommandResult:
        return self._once(("run", tuple(argv)), lambda: self._run(tuple(argv), timeout))

    def _run(self, argv: tuple[str, ...], timeout: float, label: Optional[str] = None) -> CommandResult:
        """Run argv (never through a shell) in its own session; on timeout kill the whole group, and
        abandon the pipes if a process that escaped the group still holds them."""
        argv = tuple(argv)
        label = label or " ".join(argv)  # how reports name it
        limit = self.deadline.clamp(timeout)
        if limit <= 0:
            self._note_timed_out(label)
            raise HostError(TIMED_OUT, f"{label}: no time left")
        env = {k: os.environ[k] for k in _CHILD_ENV_KEEP if k in os.environ}
        env["LC_ALL"] = "C"
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                env=env,
            )
        except FileNotFoundError as e:
            raise HostError(NOT_FOUND, argv[0]) from e
        except PermissionError as e:
            raise HostError(NO_PERMISSION, argv[0]) from e
        except OSError as e:
            raise HostError("cannot run", f"{argv[0]}: {e}") from e
        with self._timed_out_lock:
            self._commands_running.add(label)
        try:
            out, err = proc.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            try:
                proc.communicate(timeout=0.2)
            except subprocess.TimeoutExpired:
                _abandon(proc)
            self._note_timed_out(label)
            raise HostError(TIMED_OUT, f"{label} did not finish within {limit:.1f} s") from None
        finally:
            with self._timed_out_lock:
                self._commands_running.discard(label)
        return CommandResult(
            argv=argv,
            rc=proc.returncode,
            stdout=out[:MAX_OUTPUT].decode("utf-8", errors="replace"),
            stderr=err[:MAX_OUTPUT].decode("utf-8", errors="replace"),
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
    def target_python(self) -> str:
        """--python, else the active virtual environment's or conda environment's, else our own."""
        if self._python:
            return self._python
        for var, rel in (("VIRTUAL_ENV", "bin/python"), ("CONDA_PREFIX", "bin/python")):
            root = os.environ.get(var)
            if root and os.path.exists(os.path.join(root, rel)):
                return os.path.join(root, rel)
        return sys.executable

    def python(self, interpreter: Optional[str] = None) -> dict:
        target = interpreter or self.target_python()
        return self._once(("python", target), lambda: self._inspect(target))

    def _inspect(self, target: str) -> dict:
        if _same_interpreter(target):
            return pyinspect.inspect()
        # Named by its target, not its argv: the argv holds the whole inspection program.
        result = self._run((target, "-c", pyinspect.source()), 5.0, label=f"python inspection of {target}")
        if result.rc != 0:
            raise HostError("python failed", f"{target}: {result.stderr.strip()[-300:]}")
        try:
            data = json.loads(result.stdout)
        except ValueError as e:
            raise HostError("python failed", f"{target}: unreadable output") from e
        if not isinstance(data, dict):
            raise HostError("python failed", f"{target}: unreadable output")
        return data


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


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()


def _abandon(proc: subprocess.Popen) -> None:
    """A grandchild in another session still holds the pipes: close our ends and stop waiting."""
    for stream in (proc.stdout, proc.stderr):
        try:
            if stream is not None:
                stream.close()
        except OSError:
            pass
