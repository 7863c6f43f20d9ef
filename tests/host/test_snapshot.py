"""Snapshots: record, redact, save, load, replay; and refusal of snapshots that are not data."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile

import pytest

from gpudoctor.collect import collect
from gpudoctor.host.base import NOT_RECORDED, Deadline, HostError, NvmlError
from gpudoctor.host.live import LiveHost
from gpudoctor.host.snapshot import (
    Recording,
    RecordingHost,
    SnapshotError,
    SnapshotHost,
    load,
    redact,
    save,
    write_dir,
)
from gpudoctor.redact import Identity, redact_facts

from conftest import H200, ROOT


def test_live_check_replays_to_the_same_facts(tmp_path):
    deadline = Deadline(10)
    recorder = RecordingHost(LiveHost(deadline=deadline))
    live_facts, _ = collect(recorder, deadline)
    path = tmp_path / "host.tar.gz"
    save(recorder.recording, str(path), "test")
    replayed, _ = collect(SnapshotHost(load(str(path))), Deadline(10))
    differ = [n for n, f in live_facts.items() if n != "host.kind" and replayed.get(n) != f]
    assert differ == []
    assert replayed.value("host.kind") == "snapshot"


def test_nvidia_require_variables_are_recorded_by_name_and_replayed(tmp_path, monkeypatch):
    monkeypatch.setenv("NVIDIA_REQUIRE_CUDA", "cuda>=12.4")
    monkeypatch.setenv("NVIDIA_REQUIRE_ARCH", "arch>=8.0")
    recorder = RecordingHost(LiveHost(deadline=Deadline(10)))
    assert recorder.env_names("NVIDIA_REQUIRE_") == ["NVIDIA_REQUIRE_ARCH", "NVIDIA_REQUIRE_CUDA"]
    path = tmp_path / "host.tar.gz"
    save(recorder.recording, str(path), "test")
    replay = SnapshotHost(load(str(path)))
    assert replay.env_names("NVIDIA_REQUIRE_") == ["NVIDIA_REQUIRE_ARCH", "NVIDIA_REQUIRE_CUDA"]
    with pytest.raises(HostError) as e:
        replay.env_names("NCCL_")  # a family that was never listed is not an empty one
    assert e.value.reason == NOT_RECORDED


def test_h200_fixture_round_trips_through_tar(tmp_path):
    rec = load(str(H200))
    path = tmp_path / "h200.tar.gz"
    save(rec, str(path), "test")
    again = load(str(path))
    assert again.files == rec.files
    assert again.nvml_devices == rec.nvml_devices
    assert again.commands == rec.commands


def test_redaction_replaces_uuids_serials_and_hostname_everywhere():
    rec = Recording(
        files={
            "/proc/sys/kernel/hostname": "gpu-node-17\n",
            "/proc/driver/nvidia/gpus/0000:01:00.0/information": (
                "GPU UUID: \t GPU-1a2b3c4d-1111-2222-3333-444455556666\n"
            ),
        },
        commands=[
            {
                "argv": ["nvidia-smi", "-L"],
                "rc": 0,
                "stdout": "GPU 0: H100 (UUID: GPU-1a2b3c4d-1111-2222-3333-444455556666) on gpu-node-17",
                "stderr": "",
            }
        ],
        nvml_devices={
            "0": {
                "nvmlDeviceGetUUID": "GPU-1a2b3c4d-1111-2222-3333-444455556666",
                "nvmlDeviceGetSerial": "1654922001234",
            }
        },
        python={"default": "/home/gpu-node-17/venv/bin/python"},
    )
    out = redact(rec)
    text = json.dumps([out.files, out.commands, out.nvml_devices, out.python])
    assert "1a2b3c4d" not in text and "1654922001234" not in text and "gpu-node-17" not in text
    assert out.nvml_devices["0"]["nvmlDeviceGetUUID"] == "GPU-00000000-0000-0000-0000-000000000000"
    assert "GPU-00000000-0000-0000-0000-000000000000" in out.commands[0]["stdout"]
    assert out.nvml_devices["0"]["nvmlDeviceGetSerial"] == "REDACTED-SERIAL-0"
    assert out.files["/proc/sys/kernel/hostname"] == "redacted-host\n"
    assert out.manifest["redacted"] is True


def test_unrecorded_reads_are_unknown_not_errors_of_the_tool():
    host = SnapshotHost(Recording(read_errors={"/etc/x": "no permission"}))
    with pytest.raises(HostError) as e:
        host.read("/etc/x")
    assert e.value.reason == "no permission"
    with pytest.raises(HostError) as e:
        host.read("/etc/y")
    assert e.value.reason == NOT_RECORDED
    with pytest.raises(NvmlError) as e:
        host.nvml("nvmlDeviceGetName", 3)
    assert e.value.reason == NOT_RECORDED


def _tar(path, members):
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


MANIFEST = json.dumps({"format": "gpudoctor-snapshot", "version": 1}).encode()


@pytest.mark.parametrize(
    ("members", "message"),
    [
        ({"manifest.json": MANIFEST, "../evil": b"x"}, "unsafe member name '../evil'"),
        ({"manifest.json": MANIFEST, "/etc/passwd": b"x"}, "unsafe member name '/etc/passwd'"),
        ({"manifest.json": b'{"format": "other"}'}, "not a gpudoctor snapshot"),
        (
            {"manifest.json": json.dumps({"format": "gpudoctor-snapshot", "version": 99}).encode()},
            "format version 99",
        ),
        ({"manifest.json": MANIFEST, "nvml.json": b"[1, 2]"}, "nvml.json has the wrong shape"),
        ({"manifest.json": MANIFEST, "commands.json": b"{not json"}, "commands.json is not valid JSON"),
        ({"files/etc/os-release": b"x"}, "not a gpudoctor snapshot"),
    ],
)
def test_bad_snapshots_are_refused_cleanly(tmp_path, members, message):
    path = tmp_path / "s.tar.gz"
    _tar(path, members)
    with pytest.raises(SnapshotError) as e:
        load(str(path))
    assert message in str(e.value)


def test_not_a_tar_file(tmp_path):
    path = tmp_path / "junk.tar.gz"
    path.write_bytes(b"\x00\x01junk" * 100)
    with pytest.raises(SnapshotError) as e:
        load(str(path))
    assert "not a readable snapshot" in str(e.value)


def test_redaction_keeps_only_listening_sockets_of_the_tcp_tables():
    # /proc/net/tcp lines from the helper machine (2026-12-05), `python3 -m http.server 5555` listening on
    # 127.0.0.1 and a client connected to it (state 01, both ends); only the header and LISTEN are kept.
    header = (
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    )
    listen = (
        "   0: 0100007F:15B3 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 123507 1 "
        "00000000a0bafff9 100 0 0 10 0                    \n"
    )
    established = (
        "   4: 0100007F:15B3 0100007F:DFB0 01 00000000:00000000 00:00000000 00000000     0        0 124135 1 "
        "000000008ba0212a 20 0 0 10 -1                    \n"
        "  23: 0100007F:DFB0 0100007F:15B3 01 00000000:00000000 00:00000000 00000000     0        0 124134 2 "
        "0000000056963485 20 0 0 10 -1                    \n"
    )
    rec = Recording(files={"/proc/net/tcp": header + listen + established, "/proc/net/tcp6": header})
    out = redact(rec)
    assert out.files["/proc/net/tcp"] == header + listen
    assert out.files["/proc/net/tcp6"] == header


# --- names and values that are not UTF-8 --------------------------------------------------------------------
# Snapshots of names and values that are not valid UTF-8: recorded safely, replayed as they were read.
#
# Linux file names and environment values are bytes. Python hands an undecodable byte over as a lone
# surrogate (PEP 383); `gpudoctor snapshot`, the command bug reporters are asked to run, used to crash on
# one (exit 3, UnicodeEncodeError) while writing its JSON.


BAD_NAME = b"libcudnn\xff\xfe.so.9"
BAD_VALUE = b"/opt/cu\xffda"


def test_snapshot_records_undecodable_directory_entries_and_environment_values(tmp_path):
    lib = tmp_path / "lib"
    lib.mkdir()
    open(os.path.join(os.fsencode(lib), BAD_NAME), "wb").close()
    env = {k.encode(): v.encode() for k, v in os.environ.items()}
    env.update({
        b"PYTHONPATH": str(ROOT).encode(),
        b"LD_LIBRARY_PATH": os.fsencode(lib),  # the libraries probe lists it
        b"CUDA_HOME": BAD_VALUE,
    })  # fmt: skip
    out = tmp_path / "host.tar.gz"
    argv = [sys.executable, "-m", "gpudoctor", "snapshot", "-o", str(out), "--timeout", "20"]
    proc = subprocess.run(argv, env=env, capture_output=True, timeout=60, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    rec = load(str(out))
    # The same strings the live Host gave the probes: the bytes, surrogate-escaped.
    assert rec.env["CUDA_HOME"] == os.fsdecode(BAD_VALUE)
    assert os.fsdecode(BAD_NAME) in rec.dirs[str(lib)]
    # ... and replayed through the same code, the same answers.
    host = SnapshotHost(rec)
    assert host.env("CUDA_HOME") == os.fsdecode(BAD_VALUE)
    assert os.fsdecode(BAD_NAME) in host.listdir(str(lib))
    for fmt in ("json", "text"):
        replay = subprocess.run(
            [sys.executable, "-m", "gpudoctor", "check", "--snapshot", str(out), "--format", fmt],
            env=env,
            capture_output=True,
            timeout=60,
            cwd=str(tmp_path),
        )
        assert replay.returncode in (0, 1), replay.stderr.decode(errors="replace")
        assert b"Traceback" not in replay.stderr


def test_escaped_bytes_round_trip_through_tar_and_directory_forms(tmp_path):
    name, value = os.fsdecode(b"bad\xffname"), os.fsdecode(b"/x\x80y")
    rec = Recording(dirs={"/opt": [name, "ok"]}, env={"CUDA_HOME": value}, files={"/etc/a": "text"})
    save(rec, str(tmp_path / "s.tar.gz"), "test")
    write_dir(rec, str(tmp_path / "d"), {"format": "gpudoctor-snapshot", "version": 1})
    for path in (tmp_path / "s.tar.gz", tmp_path / "d"):
        again = load(str(path))
        assert again.dirs == {"/opt": [name, "ok"]} and again.env == {"CUDA_HOME": value}
    # The JSON itself is valid UTF-8, with each undecodable byte as its \\udcXX escape.
    raw = (tmp_path / "d" / "dirs.json").read_bytes()
    assert "\\udcff" in raw.decode("utf-8")
    assert json.loads(raw) == {"/opt": [name, "ok"]}


def test_undecodable_file_path_round_trips(tmp_path):
    path = os.fsdecode(b"/usr/local/cuda-\xff/version.json")
    rec = Recording(files={path: '{"cuda": {"version": "12.4.1"}}'})
    save(rec, str(tmp_path / "s.tar.gz"), "test")
    assert load(str(tmp_path / "s.tar.gz")).files == rec.files


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
    # A value that is the host's name as a whole word is redacted in the live facts, while the replay derives
    # it again from the raw sources: system.chassis `vm` on a machine whose hostname is vm (this build VM's).
    named = live.value("host.hostname")
    differ = [
        n
        for n, f in expected.items()
        if n != "host.kind" and replayed.get(n) != f and live.get(n).value != named
    ]
    assert differ == []
    assert "alice" not in json.dumps(replayed.tree(), default=str)
    assert (
        replayed.value("env.cuda_home", "").endswith("/home/<user>/cuda") or "env.cuda_home" not in replayed
    )
