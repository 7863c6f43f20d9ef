"""The storage probe: the filesystem under --data-dir, from /proc/self/mounts."""

from __future__ import annotations

import pytest

from gpudoctor.facts import SCHEMA
from gpudoctor.probes import storage
from gpudoctor.probes.storage import mount_of, parse_mounts

from conftest import fake_host

# A training container on a GPU node: overlay root, a local NVMe scratch disk, datasets over NFSv4.2, a
# checkpoint bucket through a FUSE mount, and a later NFS mount stacked over /scratch/shared.
MOUNTS = (
    "overlay / overlay rw,relatime,lowerdir=/var/lib/docker/overlay2/l/ABC:/var/lib/docker/overlay2/l/DEF,"
    "upperdir=/var/lib/docker/overlay2/123/diff,workdir=/var/lib/docker/overlay2/123/work 0 0\n"
    "proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n"
    "tmpfs /dev tmpfs rw,nosuid,size=65536k,mode=755,inode64 0 0\n"
    "shm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=67108864k,inode64 0 0\n"
    "/dev/nvme1n1 /scratch xfs rw,relatime,attr2,inode64,logbufs=8,logbsize=32k,noquota 0 0\n"
    "10.0.0.2:/export/datasets /mnt/datasets nfs4 rw,relatime,vers=4.2,rsize=1048576,wsize=1048576,"
    "namlen=255,hard,proto=tcp,timeo=600,retrans=2,sec=sys,clientaddr=10.0.0.5,local_lock=none,"
    "addr=10.0.0.2 0 0\n"
    "gcsfuse /mnt/checkpoints fuse.gcsfuse rw,nosuid,nodev,relatime,user_id=0,group_id=0 0 0\n"
    "/dev/nvme1n1 /scratch/shared xfs rw,relatime 0 0\n"
    "fs01:/shared /scratch/shared nfs rw,relatime,vers=3,rsize=524288,wsize=524288,hard,proto=tcp 0 0\n"
    "/dev/sdb1 /mnt/my\\040data ext4 rw,relatime 0 0\n"
)
STORAGE_FACTS = {s.name for s in SCHEMA if s.name.startswith("storage.")}


def values(facts: dict) -> dict:
    return {k: (f.value if f.known else ("unknown", f.unknown)) for k, f in facts.items()}


def test_parse_mounts_unescapes_and_keeps_order():
    mounts = parse_mounts(MOUNTS)
    assert mounts[0] == ("/", "overlay")
    assert mounts[5] == ("/mnt/datasets", "nfs4")
    assert mounts[-1] == ("/mnt/my data", "ext4")
    assert len(mounts) == 10
    assert parse_mounts("garbage\n\nnone\n") == []


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/mnt/datasets/imagenet/train", ("/mnt/datasets", "nfs4")),
        ("/mnt/datasets", ("/mnt/datasets", "nfs4")),
        ("/mnt/datasets2", ("/", "overlay")),  # a longer name is not a subdirectory
        ("/scratch/run1", ("/scratch", "xfs")),
        ("/scratch/shared/x", ("/scratch/shared", "nfs")),  # the later, stacked mount hides the xfs one
        ("/mnt/checkpoints/step-100", ("/mnt/checkpoints", "fuse.gcsfuse")),
        ("/mnt/my data/set", ("/mnt/my data", "ext4")),
        ("/workspace", ("/", "overlay")),
    ],
)
def test_mount_of(path, expected):
    assert mount_of(parse_mounts(MOUNTS), path) == expected


def test_mount_of_without_a_root_mount():
    assert mount_of([("/data", "ext4")], "/home/x") is None


def test_data_dir_on_nfs():
    facts = storage.probe(fake_host(files={"/proc/self/mounts": MOUNTS}), "/mnt/datasets/imagenet/")
    assert set(facts) == STORAGE_FACTS
    assert values(facts) == {
        "storage.data_dir.path": "/mnt/datasets/imagenet",
        "storage.data_dir.mount_point": "/mnt/datasets",
        "storage.data_dir.fstype": "nfs4",
    }
    assert facts["storage.data_dir.fstype"].source == "/proc/self/mounts"


def test_path_is_normalised_before_matching():
    facts = storage.probe(fake_host(files={"/proc/self/mounts": MOUNTS}), "//scratch/../mnt/datasets/./a")
    assert values(facts)["storage.data_dir.path"] == "/mnt/datasets/a"
    assert values(facts)["storage.data_dir.fstype"] == "nfs4"


def test_without_data_dir_nothing_is_read():
    facts = storage.probe(fake_host(files={"/proc/self/mounts": MOUNTS}))
    assert set(facts) == STORAGE_FACTS
    assert {f.unknown for f in facts.values()} == {"no --data-dir given"}


def test_relative_path_is_refused():
    facts = storage.probe(fake_host(files={"/proc/self/mounts": MOUNTS}), "data/train")
    assert {f.unknown for f in facts.values()} == {"not an absolute path"}


def test_unreadable_mounts_keep_the_path():
    facts = storage.probe(fake_host(), "/data")
    assert values(facts) == {
        "storage.data_dir.path": "/data",
        "storage.data_dir.mount_point": ("unknown", "not recorded in snapshot"),
        "storage.data_dir.fstype": ("unknown", "not recorded in snapshot"),
    }


def test_no_covering_mount():
    facts = storage.probe(fake_host(files={"/proc/self/mounts": "/dev/sda1 /data ext4 rw 0 0\n"}), "/home/u")
    assert facts["storage.data_dir.fstype"].unknown == "no mount covers this path"
