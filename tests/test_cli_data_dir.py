"""`gpudoctor check --data-dir PATH`: the storage probe gets the path, made absolute."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import H200

ROOT = Path(__file__).parents[1]


def check_json(*args: str, cwd: Path = ROOT) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "gpudoctor", "check", "--snapshot", str(H200), "--format", "json", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=dict(os.environ, NO_COLOR="1", PYTHONPATH=str(ROOT)),
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_data_dir_reaches_the_storage_probe():
    storage = check_json("--data-dir", "/usr/local/nvidia/lib64")["facts"]["storage"]["data_dir"]
    assert storage == {
        "fstype": "squashfs",
        "mount_point": "/usr/local/nvidia",
        "path": "/usr/local/nvidia/lib64",
    }


def test_a_relative_data_dir_is_taken_from_the_working_directory(tmp_path):
    storage = check_json("--data-dir", "lib64", cwd=tmp_path)["facts"]["storage"]["data_dir"]
    assert storage["path"] == str(tmp_path / "lib64")


def test_without_data_dir_the_storage_facts_say_why():
    storage = check_json()["facts"]["storage"]["data_dir"]
    assert storage == dict.fromkeys(("fstype", "mount_point", "path"), {"unknown": "no --data-dir given"})
