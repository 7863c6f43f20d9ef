"""Whether /dev/shm can be used at all: there, writable, and writable by this user (its size is
`system.shm_bytes`, read by the system probe).

Python's multiprocessing locks and queues (sem_open), PyTorch's tensors shared between DataLoader workers
(shm_open of /torch_*) and NCCL's shared-memory transport all create files in /dev/shm. The system probe
calls `facts(host, mounts)`:
- exists: /dev lists `shm` (an old Debian layout makes it a symbolic link to /run/shm; it is listed too);
- read_only: the mount /dev/shm lies on (its own tmpfs, else the one of /dev or /) has the `ro` option;
- mode, uid: `stat -L -c "%a %u %g %F" /dev/shm`, run only for a user other than root (root writes
  whatever the mode says, so nothing is run for it), time-boxed; where stat cannot be run or fails, the
  mode=, uid= and gid= options of /dev/shm's own tmpfs mount (what it was mounted with);
- writable: what the kernel's permission check gives for this process's effective uid, gid and
  supplementary groups (/proc/self/status), the mode's owner, group or other write and search bits. POSIX
  ACLs and security modules (SELinux, AppArmor) can refuse more; they are not read.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple, Optional

from ..facts import Fact, known, unknown
from ..host.base import NOT_FOUND, HostError

SHM = "/dev/shm"
STATUS = "/proc/self/status"
STAT = ("stat", "-L", "-c", "%a %u %g %F", SHM)
STAT_TIMEOUT = 1.0
ROOT_NOT_READ = "not read: root may write whatever the mode"
# Held as text, compiled by re's own cache when first used: a host without what it reads never uses it
# (compiled at import, it cost every check 0.05-0.15 ms).
_STAT_LINE = r"([0-7]{3,4}) ([0-9]{1,10}) ([0-9]{1,10}) (.+)"


class Ids(NamedTuple):
    uid: int  # effective
    gid: int  # effective
    groups: tuple[int, ...]  # supplementary


class Owner(NamedTuple):
    mode: int
    uid: int
    gid: int
    kind: str  # `directory`, as stat's %F names it


# --- pure parsing ---------------------------------------------------------------------------------------


def find_mount(text: str, mount_point: str) -> Optional[tuple[str, dict[str, str]]]:
    """(fstype, options) of the last mount on mount_point: a later mount hides the earlier ones."""
    found = None
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        # /proc/mounts escapes blanks in paths as octal (\040).
        where = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[1])
        if where == mount_point:
            opts = dict((o.split("=", 1) + [""])[:2] for o in fields[3].split(","))
            found = (fields[2], opts)
    return found


def parse_ids(text: str) -> Optional[Ids]:
    """The effective uid and gid and the supplementary groups from /proc/self/status ("Uid:\\t1000\\t1000
    \\t1000\\t1000": real, effective, saved, filesystem; "Groups:\\t100 65534 "); None without Uid or Gid."""
    uid = re.search(r"^Uid:\s+[0-9]+\s+([0-9]+)", text, re.MULTILINE)
    gid = re.search(r"^Gid:\s+[0-9]+\s+([0-9]+)", text, re.MULTILINE)
    groups = re.search(r"^Groups:[ \t]*([0-9 \t]*)$", text, re.MULTILINE)
    if uid is None or gid is None:
        return None
    listed = tuple(int(g) for g in groups.group(1).split()) if groups else ()
    return Ids(int(uid.group(1)), int(gid.group(1)), listed)


def parse_stat(text: str) -> Optional[Owner]:
    """`stat -c "%a %u %g %F"` output ("1777 0 0 directory") -> Owner; None when it is not that form."""
    m = re.fullmatch(_STAT_LINE, text.strip())
    return Owner(int(m.group(1), 8), int(m.group(2)), int(m.group(3)), m.group(4)) if m else None


def can_create(owner: Owner, ids: Ids) -> bool:
    """Whether the kernel lets this user create a file in the directory: write and search permission from
    the owner's bits if the uid owns it, else the group's if the gid or a supplementary group is its group,
    else the others' (the bits of the first class that applies, as generic_permission() picks them)."""
    if ids.uid == 0:
        return True
    if owner.kind != "directory":
        return False
    if ids.uid == owner.uid:
        bits = owner.mode >> 6
    elif owner.gid == ids.gid or owner.gid in ids.groups:
        bits = owner.mode >> 3
    else:
        bits = owner.mode
    return bits & 0o3 == 0o3


def tmpfs_owner(mounts: str) -> Optional[Owner]:
    """The mode, uid and gid a tmpfs mounted on /dev/shm was given (its mode=, uid=, gid= options; the
    kernel writes each only when it is not the default, 1777, 0 and 0: mm/shmem.c shmem_show_options), or
    None when /dev/shm is no tmpfs mount of its own. A chmod after mounting is not seen here."""
    found = find_mount(mounts, SHM)
    if found is None or found[0] != "tmpfs":
        return None
    options = found[1]
    try:
        mode = int(options.get("mode", "1777"), 8)
        uid, gid = int(options.get("uid", "0")), int(options.get("gid", "0"))
    except ValueError:
        return None
    return Owner(mode, uid, gid, "directory")


def mount_options(mounts: str) -> Optional[tuple[str, dict[str, str]]]:
    """(mount point, options) of the mount /dev/shm lies on: its own, else /dev's, else /'s."""
    for point in (SHM, "/dev", "/"):
        found = find_mount(mounts, point)
        if found is not None:
            return point, found[1]
    return None


# --- probe ----------------------------------------------------------------------------------------------


def _exists(host: Any) -> Fact:
    try:
        names = host.listdir("/dev")
    except HostError as e:
        return unknown(e.reason, "/dev")
    return known("shm" in names, "/dev")


def _read_only(mounts: Optional[str], reason: Optional[str], source: str) -> Fact:
    if mounts is None:
        return unknown(reason or NOT_FOUND, source)
    found = mount_options(mounts)
    if found is None:
        return unknown("no mount covers /dev/shm", source)
    point, options = found
    return known("ro" in options, f"{source} ({point})")


def _owner(host: Any) -> tuple[Optional[Owner], str]:
    """(Owner, "") or (None, why not)."""
    try:
        result = host.run(STAT, timeout=STAT_TIMEOUT)
    except HostError as e:
        return None, e.reason
    if result.rc != 0:
        return None, f"exited with status {result.rc}" if result.rc is not None else "did not finish"
    owner = parse_stat(result.stdout)
    return (owner, "") if owner else (None, "could not parse")


def facts(
    host: Any, mounts: Optional[str], mounts_reason: Optional[str], mounts_source: str
) -> dict[str, Fact]:
    out = {
        "system.shm.exists": _exists(host),
        "system.shm.read_only": _read_only(mounts, mounts_reason, mounts_source),
    }
    try:
        ids = parse_ids(host.read(STATUS))
        ids_reason = "could not parse"
    except HostError as e:
        ids, ids_reason = None, e.reason
    stat_source = " ".join(STAT)
    owner, why = (None, ROOT_NOT_READ) if ids is not None and ids.uid == 0 else _owner(host)
    if owner is None and why != ROOT_NOT_READ and mounts is not None:
        # No stat (a distroless image) or it failed: the tmpfs mount's own mode, uid and gid.
        owner = tmpfs_owner(mounts)
        stat_source = f"{mounts_source} (tmpfs mode=, uid=; stat: {why})" if owner else stat_source
    for name, value in (("mode", owner and f"{owner.mode:o}"), ("uid", owner and owner.uid)):
        out[f"system.shm.{name}"] = known(value, stat_source) if owner else unknown(why, stat_source)
    out["system.shm.writable"] = _writable(out, ids, ids_reason, owner, why, stat_source)
    return out


def _writable(
    out: dict[str, Fact], ids: Optional[Ids], ids_reason: str, owner: Optional[Owner], why: str, source: str
) -> Fact:
    """Whether this user can create files in /dev/shm: false when it is missing or read-only, whatever
    else is unknown; true for root on a writable mount; else as its mode says for this user."""
    exists, read_only = out["system.shm.exists"], out["system.shm.read_only"]
    if exists.known and not exists.value:
        return known(False, "/dev (no shm)")
    if read_only.known and read_only.value:
        return known(False, read_only.source)
    if ids is None:
        return unknown(ids_reason, STATUS)
    if not exists.known or not read_only.known:
        return unknown(exists.unknown or read_only.unknown or "", f"{exists.source}, {read_only.source}")
    if ids.uid == 0:
        return known(True, f"{STATUS} (uid 0), {read_only.source}")
    if owner is None:
        return unknown(why, source)
    return known(can_create(owner, ids), f"{source}, {STATUS} (uid {ids.uid})")
