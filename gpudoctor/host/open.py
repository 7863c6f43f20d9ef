"""Which Host a command reads: the live machine, or a snapshot of one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional, Union

from .base import Deadline


def open_host(
    snapshot: Optional[str], python: Union[str, Sequence[str], None], deadline: Deadline
) -> tuple[Any, str]:
    """The live Host, or a snapshot's, and its source ("live" or the snapshot's path). Raises
    SnapshotError (host/base.py) for a snapshot that cannot be read. Only the module of the kind opened
    is imported: a live check never loads the snapshot machinery."""
    if snapshot:
        from .snapshot import SnapshotHost, load

        return SnapshotHost(load(snapshot), source=snapshot), snapshot
    from .live import LiveHost

    return LiveHost(deadline=deadline, python=python), "live"
