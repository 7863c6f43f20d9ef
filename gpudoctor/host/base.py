"""The Host interface: the only way probes read the machine.

A Host answers these questions, each with raw data or a HostError naming why not: `read(path)`,
`listdir(path)`, `run(argv)`, `nvml(function, device, arg)`, `python(interpreter)` with the interpreters to
judge and what chose each in `python_targets()`, `env(name)` for the few environment variables the
probes ask about by name, and `env_names(prefix)` for the names (never the values) of the variables of one
family, such as NVIDIA_REQUIRE_* (the whole environment is never read, so that a snapshot cannot carry
secrets).
The live Host does the real thing under a deadline; the snapshot Host replays what a live Host recorded.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, NamedTuple, Optional, Protocol

# Reasons a read can fail. They become the `unknown` reason of the facts built from that read.
NOT_FOUND = "not found"
NO_PERMISSION = "no permission"
TIMED_OUT = "timed out"
NOT_RECORDED = "not recorded in snapshot"
TOO_LARGE = "too large"
PYTHON_FAILED = "python failed"
UNSUPPORTED_PYTHON = "unsupported python"


class HostError(Exception):
    """A read that did not produce data. `reason` is short and stable; `detail` is for humans."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


def env_or_none(host: Any, name: str) -> Optional[str]:
    """The variable's value, or None when it is unset or could not be read (a snapshot that did not
    record it): for readers where an unknown value can only be read as none (extra library directories)."""
    try:
        return host.env(name)
    except HostError:
        return None


def read_or_reason(host: Any, path: str) -> tuple[Optional[str], Optional[str]]:
    """(the file's text, None), or (None, the HostError's reason): for probes that turn the reason into an
    unknown fact or branch on it (NOT_FOUND)."""
    try:
        return host.read(path), None
    except HostError as e:
        return None, e.reason


def listdir_or_reason(host: Any, path: str) -> tuple[Optional[list[str]], Optional[str]]:
    """(the directory's entries, None), or (None, the HostError's reason)."""
    try:
        return host.listdir(path), None
    except HostError as e:
        return None, e.reason


class SnapshotError(Exception):
    """A snapshot that cannot be read; the message says why. (Here, not in snapshot.py, so that a live
    check need not import the snapshot machinery to name it.)"""


class NvmlError(HostError):
    """An NVML call that failed; `name` is pynvml's exception class name, e.g. NVMLError_NotSupported."""

    def __init__(self, name: str, detail: str = "") -> None:
        super().__init__(nvml_reason(name), detail or name)
        self.name = name


def nvml_reason(name: str) -> str:
    """The unknown-reason a failed NVML call gives its facts."""
    return {
        "NVMLError_NotSupported": "not supported",
        "NVMLError_NoPermission": "no permission",
        "NVMLError_Timeout": TIMED_OUT,
        "NVMLError_TimedOut": TIMED_OUT,
        "NVMLError_GpuIsLost": "GPU is lost",
        "NVMLError_LibraryNotFound": "NVML library not found",
        "NVMLError_DriverNotLoaded": "driver not loaded",
        "NVMLError_LibRmVersionMismatch": "driver/library version mismatch",
        "NVMLError_NotFound": NOT_FOUND,
        "NVMLError_FunctionNotFound": "not supported by this driver",
        "NVMLError_InvalidArgument": "not supported",
        "NVMLError_Uninitialized": "NVML not initialised",
        "NVMLError_Unknown": "NVML error",
        "NVMLError_NotRecorded": NOT_RECORDED,
    }.get(name, f"NVML error ({name})")


class CommandResult(NamedTuple):
    """What a command printed and how it ended. `rc` is None when it did not end by itself."""

    argv: tuple[str, ...]
    rc: Optional[int]
    stdout: str
    stderr: str = ""


class Host(Protocol):
    """What every probe is given. Implementations: host.live.LiveHost, host.snapshot.SnapshotHost."""

    kind: str  # "live" or "snapshot"

    def read(self, path: str) -> str: ...

    def listdir(self, path: str) -> list[str]: ...

    def run(self, argv: tuple[str, ...], timeout: float = 2.0) -> CommandResult: ...

    def nvml(self, function: str, device: Optional[int] = None, arg: Optional[str] = None) -> Any: ...

    def python(self, interpreter: Optional[str] = None) -> dict: ...

    def python_targets(self) -> list[tuple[str, str]]: ...

    def inspect_python_early(self) -> None: ...  # start host.python()'s slow reads in the background

    def env(self, name: str) -> Optional[str]: ...

    def env_names(self, prefix: str) -> list[str]: ...  # sorted; NVIDIA_REQUIRE_ -> [NVIDIA_REQUIRE_CUDA]

    # Runtime truth (`check --deep`): child processes, each answering {"rc", "stdout", "stderr"}, the raw
    # output the runtime probe parses (gpudoctor/probes/runtime.py).
    def cuda_smoke(self, timeout: float = 10.0) -> dict: ...

    def framework_runtime(self, interpreter: str, framework: str, timeout: float = 20.0) -> dict: ...

    # The architectures of the CUDA extensions in the environment's import path (host/cuda_binaries.py).
    def cuda_binaries(self, interpreter: str, directories: Sequence[str], timeout: float = 15.0) -> dict: ...


def nvml_key(function: str, arg: Optional[str] = None) -> str:
    """The key a reading is stored under: the pynvml function name with its symbolic argument."""
    return f"{function}({arg})" if arg is not None else function


class Deadline:
    """A point in time after which nothing new is started; shared by the whole check."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def remaining(self) -> float:
        return max(0.0, self.end - time.monotonic())

    def restart(self) -> None:
        """The same time again from now: a check's own time starts once what it judges has been read (an
        image's layers, `check --image`)."""
        self.end = time.monotonic() + self.seconds

    def expired(self) -> bool:
        return self.remaining() <= 0.0

    def clamp(self, timeout: float) -> float:
        """The smaller of `timeout` and the time left."""
        return min(timeout, self.remaining())
