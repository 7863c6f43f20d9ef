"""Bug-report material is redacted by default: crash logs, snapshots and `gpudoctor facts`.

Crash logs used to keep the whole command line (a `--rules https://user:pass@host/...?token=...` with
its secrets); snapshots kept home directories and user names in paths (the interpreter's prefix,
pyvenv.cfg, LD_LIBRARY_PATH, CUDA_HOME, mounts); `facts` printed the real hostname and GPU UUIDs. Each is
now redacted consistently (the same value always reads the same, so a snapshot still replays), and
`--no-redact` keeps them.
"""

from __future__ import annotations

import json
import os
import socket
import sys

from gpudoctor.collect import collect
from gpudoctor.crashlog import crash_report, write_crash_log
from gpudoctor.host.base import Deadline
from gpudoctor.host.live import LiveHost
from gpudoctor.host.snapshot import Recording, RecordingHost, SnapshotHost, load, redact, save
from gpudoctor.redact import Identity, Redactor, redact_facts, redact_url_secrets

from nvmlrig import gpudoctor

URL = "https://bob:hunter2@rules.example.com/pack.yaml?token=abc123&v=2&api_key=k9#sha256=ff00"


# --- crash logs -------------------------------------------------------------------------------------


def test_url_secrets_are_redacted_and_the_rest_kept():
    assert redact_url_secrets(URL) == (
        "https://<redacted>@rules.example.com/pack.yaml?token=<redacted>&v=2&api_key=<redacted>#sha256=ff00"
    )
    assert redact_url_secrets("https://ghp_0123456789@github.com/o/r") == "https://<redacted>@github.com/o/r"
    # No credential: nothing changes (a pip direct URL, a file URL, a pinned rule pack).
    for plain in ("git+https://github.com/o/r@v1.0", "file:///home/x@y", "https://h/p.yaml#sha256=ab"):
        assert redact_url_secrets(plain) == plain


def test_crash_log_redacts_the_command_line_and_the_error():
    error = RuntimeError(f"cannot fetch {URL}")
    argv = ["gpudoctor", "check", "--rules", URL]
    text = crash_report(error, argv)
    for secret in ("hunter2", "bob:", "abc123", "k9"):
        assert secret not in text
    assert (
        "command: gpudoctor check --rules https://<redacted>@rules.example.com/pack.yaml?token=<redacted>"
        in text
    )
    assert "#sha256=ff00" in text  # the pin is no secret: it says which pack
    assert "hunter2" in crash_report(error, argv, redact=False)


def test_crash_log_file_written_on_a_crash_is_redacted(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["gpudoctor", "check", "--rules", URL])
    path = write_crash_log(RuntimeError("simulated bug"))
    try:
        text = open(path, encoding="utf-8").read()
        assert "hunter2" not in text and "abc123" not in text and "simulated bug" in text
    finally:
        os.unlink(path)
    monkeypatch.setattr(sys, "argv", ["gpudoctor", "check", "--no-redact", "--rules", URL])
    path = write_crash_log(RuntimeError("simulated bug"))
    try:
        assert "hunter2" in open(path, encoding="utf-8").read()
    finally:
        os.unlink(path)


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


def test_a_redacted_live_snapshot_replays_to_the_redacted_facts(tmp_path, monkeypatch):
    """On this machine: CUDA in a home directory on LD_LIBRARY_PATH and CUDA_HOME. The redacted snapshot
    replays to exactly the live facts, redacted the same way."""
    home = tmp_path / "home" / "alice"
    lib = home / "cuda" / "lib64"
    lib.mkdir(parents=True)
    (lib / "libcudart.so.12").write_bytes(b"")
    monkeypatch.setenv("LD_LIBRARY_PATH", str(lib))
    monkeypatch.setenv("CUDA_HOME", str(home / "cuda"))
    identity = Identity(hostnames=("gpu-node-17",), homes=(str(home),), users=("alice",))
    deadline = Deadline(20)
    recorder = RecordingHost(LiveHost(deadline=deadline))
    live, _ = collect(recorder, deadline)
    path = tmp_path / "host.tar.gz"
    save(redact(recorder.recording, identity=identity), str(path), "test")
    replayed, _ = collect(SnapshotHost(load(str(path))), Deadline(20))
    expected = redact_facts(live, identity)
    differ = [n for n, f in expected.items() if n != "host.kind" and replayed.get(n) != f]
    assert differ == []
    assert "alice" not in json.dumps(replayed.tree(), default=str)
    assert (
        replayed.value("env.cuda_home", "").endswith("/home/<user>/cuda") or "env.cuda_home" not in replayed
    )


# --- gpudoctor facts ------------------------------------------------------------------------------------


def test_facts_command_redacts_hostname_and_gpu_uuids_by_default(fake_lib):
    redacted = gpudoctor(fake_lib, "healthy-h100-8", "facts", "--format", "json").json()
    raw = gpudoctor(fake_lib, "healthy-h100-8", "facts", "--format", "json", "--no-redact").json()
    uuids = [g["uuid"] for g in redacted["gpus"]]
    assert uuids == [f"GPU-00000000-0000-0000-0000-{i:012d}" for i in range(8)]
    assert [g["uuid"] for g in raw["gpus"]] == [f"GPU-fa4e0000-0000-4000-8000-{i:012d}" for i in range(8)]
    assert redacted["host"]["hostname"] == "redacted-host"
    assert raw["host"]["hostname"] == socket.gethostname()
    text = gpudoctor(fake_lib, "healthy-h100-8", "facts").stdout
    assert "GPU-fa4e0000" not in text and "'redacted-host'" in text


def test_a_short_hostname_is_not_redacted_inside_paths():
    """A host named `vm` must keep /proc/sys/vm/... in its snapshot, or the replay misses those files."""
    from gpudoctor.redact import Identity, Redactor

    r = Redactor(Identity(hostnames=("vm",)))
    assert r.text("/proc/sys/vm/overcommit_memory") == "/proc/sys/vm/overcommit_memory"
    assert r.text("vm\n") == "redacted-host\n"
    assert r.text("Linux vm 6.1.0 #1 SMP") == "Linux redacted-host 6.1.0 #1 SMP"
