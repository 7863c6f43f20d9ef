"""Signals during a fix run: Ctrl-C and SIGTERM become KeyboardInterrupt while steps run, so that the run
rolls back before it ends, and are ignored while it rolls back."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def interruptible() -> Iterator[None]:
    """Ctrl-C and SIGTERM raise KeyboardInterrupt here, so that the run can roll back before it ends
    (gpudoctor's own handlers end the process at once, which is right for a check, not for a change)."""

    def raise_interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    old = {s: signal.signal(s, raise_interrupt) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


@contextmanager
def uninterruptible() -> Iterator[None]:
    """While rolling back: a second Ctrl-C must not leave the environment half restored."""
    old = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
