"""Pure helpers for finding shared libraries the way the dynamic loader does.

`ldconfig -p` prints the loader cache: which file a program gets for each soname. The version of a library
is rarely in its soname (libnvidia-ml.so.1, libcudnn.so.9) but almost always in the real file's name beside
it (libnvidia-ml.so.580.159.04, libcudnn.so.9.14.0), so callers list that directory and pass the names to
`versioned_name`. Used by the driver probe (libnvidia-ml) and the libraries probe (cuDNN, NCCL).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Optional

from ..host import ldconfig_text

# ASCII digits, at most 9 a part: int() refuses "²" and, on Python 3.11+, numbers of over 4,300 digits.
_VERSION = re.compile(r"[0-9]{1,9}(?:\.[0-9]{1,9})+")


def parse_ldconfig(text: str) -> list[tuple[str, str]]:
    """(soname, path) for every library line of `ldconfig -p` output, in the order printed (host/
    ldconfig_text.py reads the lines). The loader picks the first matching line, so order matters. Names
    can repeat (one per directory or architecture)."""
    return [(soname, path) for soname, _flags, path in ldconfig_text.entries(text)]


def find_soname(entries: Iterable[tuple[str, str]], soname: str) -> Optional[str]:
    """The path the loader uses for `soname`: the first entry with that exact name."""
    for name, path in entries:
        if name == soname:
            return path
    return None


def version_key(version: str) -> tuple[int, ...]:
    """A sort key for dotted numeric versions: "580.159.04" -> (580, 159, 4)."""
    return tuple(int(p) for p in version.split("."))


def versioned_name(names: Iterable[str], stem: str) -> Optional[str]:
    """The version suffix of the file named `stem` + version, e.g. stem "libnvidia-ml.so." among
    ["libnvidia-ml.so.1", "libnvidia-ml.so.580.159.04"] -> "580.159.04".

    Only suffixes of at least two numeric parts count, so the soname links ("libcudnn.so.9") are passed
    over in favour of the real file ("libcudnn.so.9.14.0"). When a directory holds several versions
    (a half-finished upgrade), the highest one is returned. None when there is none."""
    found = [
        name[len(stem) :] for name in names if name.startswith(stem) and _VERSION.fullmatch(name[len(stem) :])
    ]
    return max(found, key=version_key) if found else None
