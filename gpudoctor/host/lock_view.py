"""A lockfile as if it were installed: a Host whose Python environment is the lockfile's pins.

`check --lock FILE` judges the frameworks a lockfile would install (their builds, from the local tags and
the nvidia-* pins) against this machine, before anything is installed. Every other question goes to the
host wrapped; the environment's interpreter does not exist yet, so `--deep` programs are not run.
"""

from __future__ import annotations

from typing import Any, Optional

from .base import HostError

NOT_INSTALLED = "not run: the lockfile is judged before it is installed"


class LockHost:
    """`inner` is the host (live or a snapshot); `dump` the lockfile as an inspection answers
    (gpudoctor.lockfile as_inspection), `label` what names it ("lockfile uv.lock")."""

    def __init__(self, inner: Any, dump: dict, label: str) -> None:
        self.inner = inner
        self.dump = dump
        self.label = label

    def __getattr__(self, name: str) -> Any:  # read, listdir, run, nvml, env, kind, timed_out, ...
        return getattr(self.inner, name)

    def python_targets(self) -> list[tuple[str, str]]:
        return [(self.label, "--lock")]

    def target_python(self) -> str:
        return self.label

    def inspect_python_early(self) -> None:
        return None

    def python(self, interpreter: Optional[str] = None) -> dict:
        return self.dump

    def framework_runtime(self, interpreter: str, framework: str, timeout: float = 20.0) -> dict:
        raise HostError(NOT_INSTALLED, f"{framework} import")

    def cuda_binaries(self, interpreter: str, directories: Any, timeout: float = 15.0) -> dict:
        raise HostError(NOT_INSTALLED, "cuobjdump")
