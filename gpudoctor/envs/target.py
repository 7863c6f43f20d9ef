"""`check --all-envs`: a Host whose Python environments are every one `gpudoctor envs` finds.

Every question about the machine goes to the Host it wraps (read once for all environments, as for
`--python` repeated); `python(interpreter)` answers the environment's description read from its files
(find.py, layout.py), so judging twenty environments starts no interpreter. An environment with nothing to
read (its directory is gone) answers a HostError with its reason, which its facts carry as unknown.
"""

from __future__ import annotations

from typing import Any, Optional

from ..host.base import NOT_FOUND, HostError
from .find import Environment

CHOSEN_BY = "--all-envs"


def key(env: Environment) -> str:
    """How the check names the environment's interpreter: its path, else its prefix."""
    return env.interpreter or env.prefix or env.name


class EnvsHost:
    def __init__(self, inner: Any, envs: list[Environment]) -> None:
        self.inner = inner
        self.envs = {key(e): e for e in envs}

    def __getattr__(self, name: str) -> Any:  # read, listdir, run, nvml, env, kind, timed_out, ...
        return getattr(self.inner, name)

    def python_targets(self) -> list[tuple[str, str]]:
        return [(k, CHOSEN_BY) for k in self.envs]

    def target_python(self) -> str:
        return next(iter(self.envs), "")

    def inspect_python_early(self) -> None:
        """Nothing to start: each description is read from files when asked."""

    def python(self, interpreter: Optional[str] = None) -> dict:
        env = self.envs.get(interpreter or self.target_python())
        if env is None:
            return self.inner.python(interpreter)
        if env.dump is None:
            raise HostError(NOT_FOUND, env.problem or f"{env.prefix}: nothing to read")
        return env.dump
