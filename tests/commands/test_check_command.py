"""commands/check.py: `check --format json` redacts the home directory and user name, as `facts` and
snapshots do (gpudoctor/redact.py), unless --no-redact; a rule that does not apply where the check runs reads
not applicable, with why, in the text and JSON reports."""

from __future__ import annotations

import json
import os
import re
import sys

from conftest import H200, run_cli


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


def test_a_rule_about_bare_metal_reads_not_applicable_in_a_container_never_passed(tmp_path):
    # The real H200 capture ran in a Docker container with one GPU (tests/fixtures/h200-driver580-snapshot/
    # README.md). GD-DCGM-001 (multi-GPU nodes, seen from the host) and GD-DRIVER-006 (the host's sysfs)
    # used to read "passed" there; their applies: conditions say where they run.
    args = ("check", "--snapshot", str(H200), "--format")
    data = json.loads(run_cli(*args, "json", cwd=tmp_path).stdout)
    rules = {r["id"]: r for r in data["rules"]}
    assert rules["GD-DCGM-001"] == {
        "id": "GD-DCGM-001",
        "status": "not_applicable",
        "severity": "info",
        "unknown_facts": {},
        "reason": "applies only where gpus.count ge 2 and container.detected eq false; "
        "here container.detected is true, gpus.count is 1",
    }
    assert rules["GD-DRIVER-006"]["status"] == "not_applicable"
    assert rules["GD-DRIVER-006"]["reason"].endswith("here container.detected is true")
    summary = data["summary"]
    assert summary["not_applicable"] == sum(r["status"] == "not_applicable" for r in data["rules"])
    assert summary["passed"] == sum(r["status"] == "passed" for r in data["rules"])
    text = run_cli(*args, "text", cwd=tmp_path).stdout
    result = next(line for line in text.splitlines() if line.startswith("Result"))
    assert f"; {summary['passed']} rule(s) passed, {summary['not_applicable']} not applicable, " in result
