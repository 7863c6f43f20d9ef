"""gpudoctor.redact: secrets in URLs, and home directories, user names and hostnames in what a snapshot
records, redacted consistently (the same value always reads the same, so a snapshot still replays).

Bug-report material is redacted by default: crash logs (tests/core/test_crashlog.py), snapshots (here and
tests/host/test_snapshot.py) and `gpudoctor facts` (tests/commands/test_facts.py); `--no-redact` keeps it.
"""

from __future__ import annotations

import json

from gpudoctor.host.snapshot import Recording, SnapshotHost, redact
from gpudoctor.redact import Identity, Redactor, redact_url_secrets

URL = "https://bob:hunter2@rules.example.com/pack.yaml?token=abc123&v=2&api_key=k9#sha256=ff00"


# --- URLs -------------------------------------------------------------------------------------


def test_url_secrets_are_redacted_and_the_rest_kept():
    assert redact_url_secrets(URL) == (
        "https://<redacted>@rules.example.com/pack.yaml?token=<redacted>&v=2&api_key=<redacted>#sha256=ff00"
    )
    assert redact_url_secrets("https://ghp_0123456789@github.com/o/r") == "https://<redacted>@github.com/o/r"
    # No credential: nothing changes (a pip direct URL, a file URL, a pinned rule pack).
    for plain in ("git+https://github.com/o/r@v1.0", "file:///home/x@y", "https://h/p.yaml#sha256=ab"):
        assert redact_url_secrets(plain) == plain


# --- snapshots ----------------------------------------------------------------------------------------

ALICE = Identity(hostnames=("gpu-node-17",), homes=("/home/alice",), users=("alice",))


def alice_recording() -> Recording:
    venv = "/home/alice/proj/.venv"
    return Recording(
        files={
            f"{venv}/pyvenv.cfg": "home = /home/alice/.pyenv/versions/3.11.7/bin\nversion = 3.11.7\n",
            "/proc/self/mounts": "/dev/root / ext4 rw 0 0\n/dev/sdb1 /home/alice ext4 rw 0 0\n"
            "nfs:/export/alice /scratch/alice nfs rw 0 0\n",
        },
        dirs={"/home/alice/cuda/lib64": ["libcudart.so.12"], "/home": ["alice", "bob"]},
        env={"LD_LIBRARY_PATH": "/home/alice/cuda/lib64:/usr/lib", "CUDA_HOME": "/home/alice/cuda"},
        python={
            "default": f"{venv}/bin/python",
            f"{venv}/bin/python": {"prefix": venv, "path": ["/home/bob/shared/site-packages"]},
        },
    )


def test_snapshot_redacts_home_directories_and_user_names_consistently():
    out = redact(alice_recording(), identity=ALICE)
    dumped = json.dumps([out.files, out.dirs, out.env, out.python])
    assert "alice" not in dumped and "/home/bob" not in dumped
    venv = "/home/<user>/proj/.venv"
    assert out.files[f"{venv}/pyvenv.cfg"].startswith("home = /home/<user>/.pyenv/versions/3.11.7/bin\n")
    assert out.env == {
        "LD_LIBRARY_PATH": "/home/<user>/cuda/lib64:/usr/lib",
        "CUDA_HOME": "/home/<user>/cuda",
    }
    assert out.python["default"] == f"{venv}/bin/python"
    assert out.python[f"{venv}/bin/python"] == {
        "prefix": venv,
        "path": ["/home/<user2>/shared/site-packages"],
    }
    # The mounts: home and the user's directory elsewhere; /dev/root is no user's.
    assert out.files["/proc/self/mounts"] == (
        "/dev/root / ext4 rw 0 0\n/dev/sdb1 /home/<user> ext4 rw 0 0\n"
        "nfs:/export/<user> /scratch/<user> nfs rw 0 0\n"
    )
    # A listing names what the redacted paths are: joined on replay, they reach the recorded paths.
    assert out.dirs == {"/home/<user>/cuda/lib64": ["libcudart.so.12"], "/home": ["<user>", "<user2>"]}
    host = SnapshotHost(out)
    cuda = host.env("CUDA_HOME")
    assert host.listdir(f"{cuda}/lib64") == ["libcudart.so.12"]
    assert host.read(host.python()["prefix"] + "/pyvenv.cfg").startswith("home = /home/<user>/")


def test_root_home_is_redacted_and_system_paths_are_not():
    r = Redactor(Identity(homes=("/root",), users=("root",)))
    assert r.text("/root/.venv/bin/python") == "/<user>/.venv/bin/python"
    assert r.text("PATH=/root/bin:/usr/bin") == "PATH=/<user>/bin:/usr/bin"
    for system in ("/dev/root / ext4 rw", "rootfs", "/sys/fs/cgroup/root", "/rootless", "/usr/local/cuda"):
        assert r.text(system) == system


def test_redacting_twice_changes_nothing():
    r = Redactor(ALICE)
    once = r.text("GPU-1a2b3c4d-1111-2222-3333-444455556666 on gpu-node-17 at /home/alice")
    assert once == "GPU-00000000-0000-0000-0000-000000000000 on redacted-host at /home/<user>"
    assert Redactor(ALICE).text(once) == once


# --- hostnames ------------------------------------------------------------------------------------


def test_a_short_hostname_is_not_redacted_inside_paths():
    """A host named `vm` must keep /proc/sys/vm/... in its snapshot, or the replay misses those files."""
    r = Redactor(Identity(hostnames=("vm",)))
    assert r.text("/proc/sys/vm/overcommit_memory") == "/proc/sys/vm/overcommit_memory"
    assert r.text("vm\n") == "redacted-host\n"
    assert r.text("Linux vm 6.1.0 #1 SMP") == "Linux redacted-host 6.1.0 #1 SMP"
