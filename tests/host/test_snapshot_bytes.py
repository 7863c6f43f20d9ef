"""Snapshots of names and values that are not valid UTF-8: recorded safely, replayed as they were read.

Linux file names and environment values are bytes. Python hands an undecodable byte over as a lone
surrogate (PEP 383); `gpudoctor snapshot`, the command bug reporters are asked to run, used to crash on
one (exit 3, UnicodeEncodeError) while writing its JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from gpudoctor.host.snapshot import Recording, SnapshotHost, load, save, write_dir

from conftest import ROOT

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
