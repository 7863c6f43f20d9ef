"""A node known only from its report: facts, not files. What an image or a lockfile is judged on when the
nodes are a fleet's reports (`fleet REPORTS --image REF`): the image's own side is read through this Host's
views (image_view.py, lock_view.py), and every question about the node itself is unknown here; the node's
facts come from its report instead."""

from __future__ import annotations

from typing import Any, Optional

from .base import HostError

FROM_REPORT = "a node known from its report (facts, not files)"


class FactsOnlyHost:
    kind = "report"
    timed_out: tuple = ()  # nothing of the node is asked, so nothing times out

    def read(self, path: str) -> str:
        raise HostError(FROM_REPORT, path)

    def listdir(self, path: str) -> list[str]:
        raise HostError(FROM_REPORT, path)

    def run(self, argv: tuple, timeout: float = 2.0) -> Any:
        raise HostError(FROM_REPORT, " ".join(argv))

    def nvml(self, function: str, device: Optional[int] = None, arg: Optional[str] = None) -> Any:
        raise HostError(FROM_REPORT, function)

    def env(self, name: str) -> Optional[str]:
        return None

    def env_names(self, prefix: str) -> list[str]:
        return []

    def python_targets(self) -> list[tuple[str, str]]:
        return []

    def inspect_python_early(self) -> None:
        return None

    def python(self, interpreter: Optional[str] = None) -> dict:
        raise HostError(FROM_REPORT, "python")

    def cuda_smoke(self, timeout: float = 10.0) -> dict:
        raise HostError(FROM_REPORT, "cuda smoke test")

    def framework_runtime(self, interpreter: str, framework: str, timeout: float = 20.0) -> dict:
        raise HostError(FROM_REPORT, framework)

    def cuda_binaries(self, interpreter: str, directories: Any, timeout: float = 15.0) -> dict:
        raise HostError(FROM_REPORT, "cuobjdump")
