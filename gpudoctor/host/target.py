"""One environment of several: a Host whose Python questions go to one given interpreter.

`check --python A --python B` judges each environment on its own (its frameworks, its pip-installed CUDA
libraries, its glibc) against the same machine. The probes that read the Python environment are given this
view of the Host; every other question goes to the Host it wraps, so the machine is read once.
"""

from __future__ import annotations

from typing import Any, Optional

from .base import HostError

NOT_INSPECTED = "not inspected (--no-python)"


class TargetHost:
    def __init__(self, inner: Any, target: tuple[str, str]) -> None:
        self.inner = inner
        self.target = target

    def __getattr__(self, name: str) -> Any:  # read, listdir, run, nvml, env, kind, timed_out, ...
        return getattr(self.inner, name)

    def python_targets(self) -> list[tuple[str, str]]:
        return [self.target]

    def target_python(self) -> str:
        return self.target[0]

    def python(self, interpreter: Optional[str] = None) -> dict:
        return self.inner.python(interpreter or self.target[0])


class NoPythonHost:
    """The machine alone (`check --no-python`): no interpreter is run, every Python question is unknown."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def python_targets(self) -> list[tuple[str, str]]:
        return []

    def target_python(self) -> str:
        return ""

    def python(self, interpreter: Optional[str] = None) -> dict:
        raise HostError(NOT_INSPECTED, "--no-python")
