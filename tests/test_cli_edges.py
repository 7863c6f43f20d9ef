"""The CLI's hard edges (issue 9): each test failed before its fix."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile

import pytest

from gpudoctor.options import MAX_TIMEOUT, timeout_seconds

from conftest import H200, ROOT, run_cli


@pytest.mark.parametrize("value", ["inf", "1e10", "99999999999999999999"])
def test_a_huge_timeout_is_capped_not_a_crash(value):
    proc = run_cli("check", "--snapshot", str(H200), "--timeout", value)
    assert proc.returncode in (0, 1), proc.stderr
    assert timeout_seconds(value) == MAX_TIMEOUT


@pytest.mark.parametrize("value", ["nan", "0", "-1", "-inf", "soon"])
def test_a_timeout_that_is_no_deadline_is_a_usage_error(value):
    proc = run_cli("check", "--snapshot", str(H200), "--timeout", value)
    assert proc.returncode == 2
    assert "--timeout" in proc.stderr


def test_plan_and_facts_take_the_same_timeout():
    assert run_cli("plan", "--snapshot", str(H200), "--timeout", "inf").returncode == 0
    assert run_cli("facts", "--snapshot", str(H200), "--timeout", "nan").returncode == 2


def test_text_output_under_an_ascii_encoding_prints():
    proc = run_cli("check", "--snapshot", str(H200), env={"PYTHONIOENCODING": "ascii"})
    assert proc.returncode == 0, proc.stderr
    assert "Driver      580.159.04" in proc.stdout and "crash" not in proc.stderr


def test_rules_docs_needs_a_directory_and_never_writes_the_working_directory(tmp_path):
    proc = run_cli("rules", "docs", cwd=tmp_path)
    assert proc.returncode == 2
    assert list(tmp_path.iterdir()) == []
    assert run_cli("rules", "docs", str(tmp_path / "out")).returncode == 0
    assert (tmp_path / "out" / "rules" / "index.md").exists()


def test_snapshot_to_stdout_writes_the_archive_there(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "gpudoctor", "snapshot", "-o", "-", "--timeout", "20"],
        capture_output=True,
        cwd=tmp_path,
        env=dict(os.environ, NO_COLOR="1", PYTHONPATH=str(ROOT)),
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "-").exists()
    with tarfile.open(fileobj=io.BytesIO(proc.stdout), mode="r:gz") as tar:
        assert "manifest.json" in tar.getnames()
    assert b"wrote the snapshot to stdout" in proc.stderr


def test_snapshot_with_python_is_refused():
    proc = run_cli("check", "--snapshot", str(H200), "--python", sys.executable)
    assert proc.returncode == 2
    assert "--snapshot" in proc.stderr and "--python" in proc.stderr and proc.stdout == ""


def test_rules_on_an_empty_directory_says_so(tmp_path):
    proc = run_cli("check", "--snapshot", str(H200), "--rules", str(tmp_path))
    assert proc.returncode == 0
    assert f"--rules {tmp_path}: no *.yaml rule files" in proc.stderr


def test_data_dir_on_a_missing_path_is_refused_live(tmp_path):
    missing = tmp_path / "no-such-data"
    proc = run_cli("check", "--no-python", "--data-dir", str(missing))
    assert proc.returncode == 2
    assert f"--data-dir {missing}: no such file or directory" in proc.stderr


def test_one_error_channel_and_commands_imported_on_demand():
    code = (
        "import sys, gpudoctor.entry\n"
        "sys.argv = ['gpudoctor', '--version']\n"
        "try:\n    gpudoctor.entry.main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('gpudoctor.commands.')))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env).stdout
    assert out.strip().endswith("[]")
    proc = run_cli("rules", "show", "GD-NOPE-999")
    assert proc.returncode == 2 and proc.stderr.startswith("gpudoctor: no rule 'GD-NOPE-999'")


def test_commands_return_exit_codes():
    from gpudoctor.commands import explain

    outcome = explain.run("CUDA driver version is insufficient for CUDA runtime version")
    assert outcome.code == 0


def _alive_with(marker: str) -> list[int]:
    """Processes (not zombies) whose command line holds `marker`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = open(f"/proc/{entry}/cmdline", "rb").read().decode(errors="replace")
            state = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmdline and state != "Z":
            found.append(int(entry))
    return found


def test_no_child_outlives_a_check_that_stops_on_an_error(tmp_path):
    """The inspection starts before the policy is read; a bad policy ends the check, and the child too."""
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\nsleep 30 &\nwait\n")
    fake.chmod(0o755)
    policy = tmp_path / "gpudoctor.toml"
    policy.write_text("this is [ not toml\n")
    proc = run_cli("check", "--python", str(fake), "--policy", str(policy))
    assert proc.returncode == 2 and "policy" in proc.stderr
    assert _alive_with(str(fake)) == []


@pytest.mark.parametrize("args", [("check", "--format", "json"), ("facts",)])
def test_a_reader_that_goes_away_is_exit_1_without_a_crash(args):
    """`gpudoctor check | head -1` on both paths (check without typer, facts through it), as click does."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    proc = subprocess.run(
        [sys.executable, "-m", "gpudoctor", *args, "--snapshot", str(H200)],
        stdout=write_end,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        timeout=60,
    )
    os.close(write_end)
    assert (proc.returncode, proc.stderr) == (1, "")
