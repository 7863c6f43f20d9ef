"""commands/check.py: `check --format json` redacts the home directory and user name, as `facts` and
snapshots do (gpudoctor/redact.py), unless --no-redact."""

from __future__ import annotations

import json
import os
import re
import sys

from conftest import run_cli


def _home_with_python(tmp_path):
    """A home directory /.../alice holding an interpreter (this test's own, linked there)."""
    home = tmp_path / "alice"
    (home / "bin").mkdir(parents=True)
    python = home / "bin" / "python3"
    os.symlink(os.path.realpath(sys.executable), python)
    return home, python


def _redacted(path: str, tmp_path) -> bool:
    """/tmp/.../alice/bin/python3 as redact.py writes it: the user's placeholder (<user>, or <user2> after
    the user running the test) in place of the home directory's name."""
    return re.fullmatch(rf"{re.escape(str(tmp_path))}/<user\d*>/bin/python3", path) is not None


def test_the_json_report_redacts_the_home_directory_and_user_name(tmp_path):
    home, python = _home_with_python(tmp_path)
    env = {"HOME": str(home), "USER": "alice", "LOGNAME": "alice"}
    r = run_cli("check", "--format", "json", "--python", str(python), env=env)
    assert r.returncode in (0, 1), r.stderr
    assert "alice" not in r.stdout
    data = json.loads(r.stdout)
    assert _redacted(data["facts"]["python"]["executable"], tmp_path)
    # What fleet tells nodes apart by stays: the hostname is the one the text report shows.
    text = run_cli("check", "--python", str(python), env=env).stdout
    hostname = data["host"]["hostname"]
    assert hostname and hostname != "redacted-host" and f"live check of {hostname}" in text


def test_no_redact_keeps_them(tmp_path):
    home, python = _home_with_python(tmp_path)
    env = {"HOME": str(home), "USER": "alice", "LOGNAME": "alice"}
    r = run_cli("check", "--format", "json", "--python", str(python), "--no-redact", env=env)
    assert json.loads(r.stdout)["facts"]["python"]["executable"] == str(python)


def test_several_environments_are_redacted_too(tmp_path):
    home, python = _home_with_python(tmp_path)
    env = {"HOME": str(home), "USER": "alice", "LOGNAME": "alice"}
    r = run_cli("check", "--format", "json", "--python", str(python), "--python", sys.executable, env=env)
    assert "alice" not in r.stdout
    data = json.loads(r.stdout)
    assert _redacted(data["environments"][0]["facts"]["python"]["executable"], tmp_path)
