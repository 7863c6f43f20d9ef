"""The TOML reader: tomllib from Python 3.11, its backport tomli before. Imported when a TOML file is read,
never at start-up. Its TOMLDecodeError is a ValueError."""

from __future__ import annotations

import sys
from types import ModuleType


def toml() -> ModuleType:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python < 3.11 only
        import tomli as tomllib
    return tomllib
