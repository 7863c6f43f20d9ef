"""Runs every probe against a Host, concurrently and under the check's deadline, into one Facts tree.

A probe that raises becomes unknown facts with the reason "probe crashed: ..."; one still running at the
deadline is abandoned (its thread is a daemon) and its facts are unknown with the reason "timed out".
"""

from __future__ import annotations

import threading
import traceback
from dataclasses import dataclass
from typing import Any, Optional

from .facts import Fact, Facts, known
from .host.base import Deadline


@dataclass(frozen=True)
class ProbeStatus:
    name: str
    status: str  # ok | crashed | timed out
    seconds: float
    detail: str = ""


def collect(host: Any, deadline: Deadline, probes: Optional[list] = None) -> tuple[Facts, list[ProbeStatus]]:
    import time

    from .probes import registry

    probes = probes if probes is not None else registry()
    results: dict[str, dict[str, Fact]] = {}
    errors: dict[str, str] = {}
    started = time.monotonic()
    finished: dict[str, float] = {}

    def work(name: str, fn: Any) -> None:
        try:
            results[name] = fn(host)
        except Exception as e:  # noqa: BLE001 - a probe that raises is a result, not an abort
            errors[name] = f"{type(e).__name__}: {e}"
            errors[name + ".trace"] = traceback.format_exc()
        finished[name] = time.monotonic() - started

    threads = []
    for name, _prefixes, fn in probes:
        t = threading.Thread(target=work, args=(name, fn), name=f"probe-{name}", daemon=True)
        t.start()
        threads.append((name, t))
    for _name, t in threads:
        t.join(deadline.remaining())

    items: dict[str, Fact] = {"host.kind": known(host.kind, "host")}
    statuses: list[ProbeStatus] = []
    missing: dict[str, str] = {}
    for name, prefixes, _fn in probes:
        if name in results:
            items.update(results[name])
            statuses.append(ProbeStatus(name, "ok", finished.get(name, 0.0)))
        elif name in errors:
            statuses.append(ProbeStatus(name, "crashed", finished.get(name, 0.0), errors[name]))
            missing.update({p: f"probe crashed: {errors[name]}" for p in prefixes})
        else:
            statuses.append(ProbeStatus(name, "timed out", deadline.seconds))
            missing.update({p: "timed out" for p in prefixes})
    return Facts(items, missing), statuses
