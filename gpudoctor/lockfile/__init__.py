"""Lockfiles read as if installed: `read_lock` gives a Lock of the pins that apply to a target machine,
`as_inspection` the dump the Python probe judges (gpudoctor check --lock)."""

from .inspection import as_inspection
from .model import Lock, LockError, Pin
from .read import read_lock

__all__ = ["Lock", "LockError", "Pin", "as_inspection", "read_lock"]
