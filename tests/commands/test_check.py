"""`gpudoctor check` (commands/check.py) as users run it: a real process, its output and its exit code; what
the preflight and ci profiles print."""

from __future__ import annotations

import json
import os
import re
import sys

from conftest import H200, run_cli


def test_data_dir_on_a_missing_path_is_refused_live(tmp_path):
    missing = tmp_path / "no-such-data"
    proc = run_cli("check", "--no-python", "--data-dir", str(missing))
    assert proc.returncode == 2
    assert f"--data-dir {missing}: no such file or directory" in proc.stderr


def test_cli_preflight_prints_one_line_on_stderr():
    r = run_cli("check", "--snapshot", str(H200), "--profile", "preflight")
    assert (r.returncode, r.stdout) == (0, "")
    assert (
        r.stderr
        == "gpudoctor: ok · 1 × NVIDIA H200 · driver 580.159.04 · CUDA 13.0 · 1 warning(s): GD-FW-004 · "
        "7 rule(s) could not be evaluated\n"
    )


def test_cli_preflight_failure_names_rule_message_and_fix(tmp_path):
    policy = tmp_path / "p.toml"
    policy.write_text('fail_on = "never"\n[gpus]\ncount = 8\n[driver]\nmin_version = "590"\n')
    r = run_cli("check", "--snapshot", str(H200), "--profile", "preflight", "--policy", str(policy))
    assert r.returncode == 1  # fails on errors whatever the policy's fail_on says
    assert r.stderr.splitlines() == [
        "gpudoctor: ERROR POLICY-DRIVER-MIN: The policy requires NVIDIA driver 590 or newer; this host has "
        "580.159.04 (kernel module loaded: yes). · fix: Install driver 590 or newer (a data-center branch), "
        "then reboot; or change the policy.",
        "gpudoctor: ERROR POLICY-GPU-COUNT: The policy requires exactly 8 GPU(s); 1 visible. · fix: Run on a "
        "host (or request a container/job) with 8 GPU(s), or change the policy.",
    ]


def test_cli_preflight_with_another_format_renders_it():
    r = run_cli("check", "--snapshot", str(H200), "--profile", "preflight", "--format", "json")
    assert r.returncode == 0 and '"name": "preflight"' in r.stdout and r.stderr == ""


def test_cli_ci_profile_fails_on_warnings_in_plain_text():
    r = run_cli("check", "--snapshot", str(H200), "--profile", "ci")
    assert r.returncode == 1  # GD-FW-004 is a warning
    assert "\x1b[" not in r.stdout and "exit 1 (--fail-on warning)" in r.stdout
    assert run_cli("check", "--snapshot", str(H200), "--profile", "ci", "--fail-on", "error").returncode == 0


# --- commands/check.py: `check --format json` redacts the home directory and user name, as `facts` and
# snapshots do (gpudoctor/redact.py), unless --no-redact.


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
