"""The storage probe: which filesystem the training data directory lies on.

Produces `storage.*` for the directory `gpudoctor check --data-dir PATH` names (nothing is read without
one). The mount is the one in /proc/self/mounts whose mount point is the longest prefix of the path; among
mounts on the same point the last one counts, since it hides the others. The path is taken as given:
symbolic links in it are not followed (resolving them would touch the filesystem itself, which may be a
hung network mount), so name the real directory.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Optional

from ..facts import Fact, FactSpec, known, unknown
from ..host.base import HostError
from . import ProbeSpec

FACT_SPECS: tuple[FactSpec, ...] = (
    FactSpec("storage.data_dir.path", "str", "", "the data directory `gpudoctor check --data-dir` names"),
    FactSpec(
        "storage.data_dir.mount_point", "str", "", "the mount the data directory lies on (longest prefix)"
    ),
    FactSpec(
        "storage.data_dir.fstype",
        "str",
        "",
        "that mount's filesystem type as /proc/self/mounts says: ext4, nfs4, ...",
    ),
)
PROBE = ProbeSpec("storage", options=("data_dir",))

MOUNTS = "/proc/self/mounts"
NOT_REQUESTED = "no --data-dir given"
FIELDS = ("storage.data_dir.path", "storage.data_dir.mount_point", "storage.data_dir.fstype")
# Held as text, compiled by re's own cache when first used: a host without what it reads never uses it
# (compiled at import, it cost every check 0.05-0.15 ms).
_OCTAL = r"\\([0-7]{3})"


# --- pure parsing ---------------------------------------------------------------------------------------


def parse_mounts(text: str) -> list[tuple[str, str]]:
    """(mount point, filesystem type) of each line of /proc/self/mounts, in order. The kernel writes blanks
    and backslashes in paths as octal escapes (\\040); they are undone."""
    out = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[1].startswith("/"):
            out.append((re.sub(_OCTAL, lambda m: chr(int(m.group(1), 8)), fields[1]), fields[2]))
    return out


def mount_of(mounts: list[tuple[str, str]], path: str) -> Optional[tuple[str, str]]:
    """The (mount point, fstype) `path` lies on: the longest mount point that is `path` or a parent of it,
    the last one listed among equals. `path` must be absolute and normalised."""
    found: Optional[tuple[str, str]] = None
    for point, fstype in mounts:
        inside = path == point or path.startswith(point.rstrip("/") + "/")
        if inside and (found is None or len(point) >= len(found[0])):
            found = (point, fstype)
    return found


# --- probe ----------------------------------------------------------------------------------------------


def probe(host: Any, data_dir: Optional[str] = None) -> dict[str, Fact]:
    if not data_dir:
        return dict.fromkeys(FIELDS, unknown(NOT_REQUESTED, "--data-dir"))
    if not data_dir.startswith("/"):
        return dict.fromkeys(FIELDS, unknown("not an absolute path", "--data-dir"))
    path = posixpath.normpath(data_dir)
    if path.startswith("//"):  # POSIX keeps a leading double slash; no mount point is written so
        path = "/" + path.lstrip("/")
    facts = {"storage.data_dir.path": known(path, "--data-dir")}
    try:
        text = host.read(MOUNTS)
    except HostError as e:
        return {**facts, **dict.fromkeys(FIELDS[1:], unknown(e.reason, MOUNTS))}
    found = mount_of(parse_mounts(text), path)
    if found is None:
        return {**facts, **dict.fromkeys(FIELDS[1:], unknown("no mount covers this path", MOUNTS))}
    point, fstype = found
    facts["storage.data_dir.mount_point"] = known(point, MOUNTS)
    facts["storage.data_dir.fstype"] = known(fstype, MOUNTS)
    return facts
