"""/dev/shm there, read-only or not, and writable by this user (gpudoctor/probes/shm.py)."""

from __future__ import annotations

import pytest

from gpudoctor.probes import shm

from conftest import fake_host

# /proc/self/status lines captured on the helper machine (2026-12-05): as root, then under
# `setpriv --reuid=65534 --regid=65534 --groups=65534,100` (the kernel ends "Groups:" with a blank).
STATUS_ROOT = "Name:\tgrep\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\t \n"
STATUS_NOBODY = (
    "Name:\tgrep\nUid:\t65534\t65534\t65534\t65534\nGid:\t65534\t65534\t65534\t65534\nGroups:\t100 65534 \n"
)
# `stat -L -c '%a %u %g %F'` on the same machine: /dev/shm, a directory made with `chmod 755`, and a path
# that does not exist (rc 1, the message on stderr).
STAT_SHM = "1777 0 0 directory\n"
STAT_755 = "755 0 0 directory\n"
# /proc/self/mounts lines: the helper machine's /dev/shm; moby/moby#28639 (a container started with
# `--mount type=tmpfs,target=/dev/shm,readonly=true`, where `mount` printed "tmpfs on /dev/shm type tmpfs
# (ro,nosuid,nodev,noexec,relatime)"), here in /proc/mounts form.
MOUNT_RW = "tmpfs /dev/shm tmpfs rw,relatime,size=24683792k 0 0\n"
MOUNT_RO = "tmpfs /dev/shm tmpfs ro,nosuid,nodev,noexec,relatime 0 0\n"
# `mount -t tmpfs -o mode=755,uid=1000,size=64m tmpfs DIR` on the helper machine, DIR then read back from
# /proc/self/mounts as "tmpfs DIR tmpfs rw,relatime,size=65536k,mode=755,uid=1000 0 0"; here on /dev/shm.
MOUNT_755 = "tmpfs /dev/shm tmpfs rw,relatime,size=65536k,mode=755,uid=1000 0 0\n"
ROOT_ONLY = "overlay / overlay rw,relatime,lowerdir=/l,upperdir=/u,workdir=/w 0 0\n"


def host(status=STATUS_NOBODY, stat=STAT_SHM, dev=("null", "shm", "zero"), stat_rc=0):
    files = {"/proc/self/status": status} if status is not None else {}
    commands = [{"argv": list(shm.STAT), "rc": stat_rc, "stdout": stat if stat_rc == 0 else "", "stderr": ""}]
    if stat is None:
        commands = []
    dirs = {"/dev": list(dev)} if dev is not None else {}
    return fake_host(files=files, commands=commands, dirs=dirs)


def values(facts):
    return {name: (f.value if f.known else ("unknown", f.unknown)) for name, f in facts.items()}


def test_parse_ids_root_and_nobody():
    assert shm.parse_ids(STATUS_ROOT) == shm.Ids(0, 0, ())
    assert shm.parse_ids(STATUS_NOBODY) == shm.Ids(65534, 65534, (100, 65534))
    assert shm.parse_ids("Name:\tx\n") is None


def test_parse_stat():
    assert shm.parse_stat(STAT_SHM) == shm.Owner(0o1777, 0, 0, "directory")
    assert shm.parse_stat(STAT_755) == shm.Owner(0o755, 0, 0, "directory")
    assert shm.parse_stat("stat: cannot statx '/nonexistent': No such file or directory") is None


@pytest.mark.parametrize(
    ("owner", "ids", "expected"),
    [
        (shm.Owner(0o1777, 0, 0, "directory"), shm.Ids(65534, 65534, ()), True),
        (shm.Owner(0o755, 0, 0, "directory"), shm.Ids(65534, 65534, ()), False),
        (shm.Owner(0o755, 0, 0, "directory"), shm.Ids(0, 0, ()), True),  # root
        (shm.Owner(0o775, 0, 100, "directory"), shm.Ids(65534, 65534, (100,)), True),  # a group of it
        (shm.Owner(0o577, 65534, 0, "directory"), shm.Ids(65534, 65534, ()), False),  # owner bits count
        (shm.Owner(0o1777, 0, 0, "regular file"), shm.Ids(65534, 65534, ()), False),
    ],
)
def test_can_create(owner, ids, expected):
    assert shm.can_create(owner, ids) is expected


def test_usual_shm_for_a_user():
    facts = shm.facts(host(), MOUNT_RW, None, "/proc/self/mounts")
    assert values(facts) == {
        "system.shm.exists": True,
        "system.shm.read_only": False,
        "system.shm.mode": "1777",
        "system.shm.uid": 0,
        "system.shm.writable": True,
    }


def test_mode_755_refuses_a_user():
    facts = shm.facts(host(stat=STAT_755), MOUNT_RW, None, "/proc/self/mounts")
    assert facts["system.shm.writable"].value is False
    assert facts["system.shm.mode"].value == "755"


def test_root_runs_nothing_and_may_write():
    # stat is not recorded: had it been run, mode would be unknown "not recorded in snapshot"
    facts = shm.facts(host(status=STATUS_ROOT, stat=None), MOUNT_RW, None, "/proc/self/mounts")
    assert facts["system.shm.writable"].value is True
    assert facts["system.shm.mode"].unknown == shm.ROOT_NOT_READ


def test_read_only_mount_refuses_even_root():
    facts = shm.facts(host(status=STATUS_ROOT), MOUNT_RO, None, "/proc/self/mounts")
    assert facts["system.shm.read_only"].value is True
    assert facts["system.shm.writable"].value is False
    assert facts["system.shm.read_only"].source == "/proc/self/mounts (/dev/shm)"


def test_missing_shm_is_not_writable():
    facts = shm.facts(host(dev=("null", "zero"), stat="", stat_rc=1), ROOT_ONLY, None, "/proc/self/mounts")
    assert facts["system.shm.exists"].value is False
    assert facts["system.shm.read_only"].value is False  # it would lie on /
    assert facts["system.shm.writable"].value is False
    assert facts["system.shm.mode"].unknown == "exited with status 1"


def test_status_unreadable_leaves_writable_unknown():
    facts = shm.facts(host(status=None), MOUNT_RW, None, "/proc/self/mounts")
    assert facts["system.shm.writable"].unknown == "not recorded in snapshot"


def test_mounts_unreadable():
    facts = shm.facts(host(), None, "no permission", "/proc/self/mounts")
    assert facts["system.shm.read_only"].unknown == "no permission"
    assert facts["system.shm.writable"].unknown == "no permission"


def test_tmpfs_owner_from_mount_options():
    assert shm.tmpfs_owner(MOUNT_755) == shm.Owner(0o755, 1000, 0, "directory")
    assert shm.tmpfs_owner(MOUNT_RW) == shm.Owner(0o1777, 0, 0, "directory")  # defaults are not written
    assert shm.tmpfs_owner(ROOT_ONLY) is None


def test_without_stat_the_mount_options_decide():
    # A distroless image has no stat: the tmpfs's own mode= and uid= are read instead.
    facts = shm.facts(host(stat=None), MOUNT_755, None, "/proc/self/mounts")
    assert facts["system.shm.mode"].value == "755"
    assert facts["system.shm.uid"].value == 1000
    assert facts["system.shm.writable"].value is False
    assert (
        facts["system.shm.mode"].source
        == "/proc/self/mounts (tmpfs mode=, uid=; stat: not recorded in snapshot)"
    )
