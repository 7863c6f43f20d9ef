"""Runs every probe against a Host, concurrently and under the check's deadline, into one Facts tree.

A probe that raises becomes unknown facts with the reason "probe crashed: ..."; one still running at the
deadline is abandoned (its thread is a daemon) and its facts are unknown with the reason "timed out".
The derived facts (gpudoctor/derive.py) are added once the probes are done.
"""

from __future__ import annotations

import threading
import time
from typing import Any, NamedTuple, Optional

from .derive import derive
from .facts import Fact, Facts, known
from .host.base import Deadline


class ProbeStatus(NamedTuple):
    name: str
    status: str  # ok | crashed | timed out
    seconds: float
    detail: str = ""


class Collection:
    """Probes running in daemon threads; `wait()` gathers their facts by the deadline."""

    def __init__(self, host: Any, deadline: Deadline, probes: Optional[list] = None) -> None:
        from .probes import registry

        self.host = host
        self.deadline = deadline
        self.probes = probes if probes is not None else registry()
        self._results: dict[str, dict[str, Fact]] = {}
        self._errors: dict[str, str] = {}
        self._finished: dict[str, float] = {}
        self._started = time.monotonic()
        self._threads = []
        for name, _prefixes, fn in self.probes:
            t = threading.Thread(target=self._work, args=(name, fn), name=f"probe-{name}", daemon=True)
            t.start()
            self._threads.append(t)

    def _work(self, name: str, fn: Any) -> None:
        try:
            self._results[name] = fn(self.host)
        except Exception as e:  # noqa: BLE001 - a probe that raises is a result, not an abort
            self._errors[name] = f"{type(e).__name__}: {e}"
        self._finished[name] = time.monotonic() - self._started

    def wait(self) -> tuple[Facts, list[ProbeStatus]]:
        items, missing, statuses = self.gather()
        return derive(Facts(items, missing)), statuses

    def gather(self) -> tuple[dict[str, Fact], dict[str, str], list[ProbeStatus]]:
        """The probes' facts as collected (not yet derived), why those of failed probes are missing (by
        prefix), and each probe's status."""
        for t in self._threads:
            t.join(self.deadline.remaining())
        items: dict[str, Fact] = {"host.kind": known(self.host.kind, "host")}
        statuses: list[ProbeStatus] = []
        missing: dict[str, str] = {}
        for name, prefixes, _fn in self.probes:
            seconds = self._finished.get(name, self.deadline.seconds)
            if name in self._results:
                items.update(self._results[name])
                statuses.append(ProbeStatus(name, "ok", seconds))
            elif name in self._errors:
                statuses.append(ProbeStatus(name, "crashed", seconds, self._errors[name]))
                missing.update({p: f"probe crashed: {self._errors[name]}" for p in prefixes})
            else:
                statuses.append(ProbeStatus(name, "timed out", seconds))
                missing.update({p: "timed out" for p in prefixes})
        if any(s.status == "timed out" for s in statuses):
            # The live Host names what those probes were waiting on (an NVML call, a command).
            note = getattr(self.host, "note_unanswered", None)
            if note is not None:
                note()
        return items, missing, statuses


def collect(host: Any, deadline: Deadline, probes: Optional[list] = None) -> tuple[Facts, list[ProbeStatus]]:
    return Collection(host, deadline, probes).wait()
