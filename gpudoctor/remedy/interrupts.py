"""Signals during a fix run: Ctrl-C, SIGTERM and SIGHUP (the terminal closed) become KeyboardInterrupt while
steps run, so that the run rolls back before it ends, and are ignored while it rolls back."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..host import children

ENDING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextmanager
def interruptible() -> Iterator[None]:
    """Ctrl-C, SIGTERM and SIGHUP raise KeyboardInterrupt here, so that the run can roll back before it ends
    (gpudoctor's own handlers end the process at once, which is right for a check, not for a change)."""

    def raise_interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    # Started with SIGHUP ignored (`nohup gpudoctor fix`), a hangup changes nothing (host/children.py).
    ending = [s for s in ENDING if not (s == signal.SIGHUP and children.ignored_at_start(s))]
    old = {s: signal.signal(s, raise_interrupt) for s in ending}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


@contextmanager
def uninterruptible() -> Iterator[None]:
    """While rolling back: a second Ctrl-C must not leave the environment half restored."""
    old = {s: signal.signal(s, signal.SIG_IGN) for s in ENDING}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
