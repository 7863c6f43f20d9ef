"""The command line as users run it: a real process, its output and its exit code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import H200, ROOT, run_cli


def gd(*args, env=None):
    return run_cli(*args, env=env)


def test_version_and_help():
    r = gd("--version")
    assert (r.returncode, r.stdout) == (0, "gpudoctor 0.1.0\n")
    r = gd("--help")
    assert r.returncode == 0 and "check" in r.stdout and "snapshot" in r.stdout


def test_live_check_on_this_machine_exits_cleanly_and_json_is_valid():
    r = gd("check", "--format", "json")
    data = json.loads(r.stdout)
    assert data["schema"] == "gpudoctor.report" and data["schema_version"] == 1
    assert r.returncode == data["summary"]["exit_code"]
    if data["facts"]["gpus"] == []:  # a machine without an NVIDIA GPU, as CI's is
        assert r.returncode == 0
        assert [f["rule"] for f in data["findings"]] == ["GD-HOST-001"]
        text = gd("check")
        assert text.returncode == 0
        assert "No NVIDIA driver/GPU found on this machine" in text.stdout


def test_snapshot_replay_gives_the_same_report(tmp_path):
    path = tmp_path / "host.tar.gz"
    r = gd("snapshot", "-o", str(path))
    assert r.returncode == 0 and "redacted" in r.stdout
    live = json.loads(gd("check", "--format", "json").stdout)
    replay = json.loads(gd("check", "--format", "json", "--snapshot", str(path)).stdout)
    assert replay["findings"] == live["findings"]
    assert replay["summary"] == live["summary"]


def test_h200_snapshot_and_fail_on():
    r = gd("check", "--snapshot", str(H200))
    assert r.returncode == 0
    assert "WARNING GD-FW-004" in r.stdout
    assert "fix: Replace it with an onnxruntime-gpu release that exists" in r.stdout
    assert gd("check", "--snapshot", str(H200), "--fail-on", "warning").returncode == 1
    assert gd("check", "--snapshot", str(H200), "--fail-on", "info").returncode == 1
    assert gd("check", "--snapshot", str(H200), "--fail-on", "never").returncode == 0


def test_broken_rule_file_exits_2_naming_file_line_and_problem(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("rules:\n  - id: ACME-X-001\n    title: t\n    severity: critical\n    category: gpu\n"
                   "    when: {fact: gpus.count, gt: 0}\n    message: m\n    why: w\n")  # fmt: skip
    for args in (["check", "--rules", str(bad), "--snapshot", str(H200)], ["rules", "validate", str(bad)]):
        r = gd(*args)
        assert r.returncode == 2
        assert (
            f"{bad}:4: ACME-X-001: at severity: expected one of error, warning, info, got 'critical'"
            in r.stderr
        )


def test_unreadable_snapshot_exits_2(tmp_path):
    junk = tmp_path / "x.tar.gz"
    junk.write_text("junk")
    r = gd("check", "--snapshot", str(junk))
    assert r.returncode == 2 and "not a readable snapshot" in r.stderr


def test_bad_usage_exits_2():
    assert gd("check", "--fail-on", "sometimes").returncode == 2


def test_rules_commands():
    r = gd("rules", "list")
    assert r.returncode == 0 and "GD-PCIE-001" in r.stdout
    r = gd("rules", "show", "gd-pcie-001")
    assert r.returncode == 0 and r.stdout.startswith("GD-PCIE-001: PCIe link narrower than it can be\n")
    assert gd("rules", "show", "GD-NOPE-001").returncode == 2
    r = gd("rules", "validate", "rules")
    assert r.returncode == 0 and "rule(s) valid" in r.stdout


def test_explain_leads_from_an_error_message_to_the_rule():
    r = gd("explain", "RuntimeError: CUDA driver version is insufficient for CUDA runtime version")
    assert r.returncode == 0
    # Three rules know this message: the framework's CUDA, the toolkit's, and the image's NVIDIA_REQUIRE_CUDA.
    ids = [line.split(" · ")[0].split(". ")[1] for line in r.stdout.splitlines() if line[:1].isdigit()]
    assert sorted(ids) == ["GD-CONTAINER-001", "GD-CUDA-001", "GD-CUDA-003"]
    assert gd("explain", "something nobody has ever seen").returncode == 1


def test_facts_command(tmp_path):
    r = gd("facts", "--snapshot", str(H200), "--format", "json")
    assert json.loads(r.stdout)["driver"]["version"] == "580.159.04"
    r = gd("facts", "--snapshot", str(H200))
    assert "gpus[0].name" in r.stdout and "'NVIDIA H200'" in r.stdout


def test_internal_error_exits_3_with_a_crash_log(monkeypatch, capsys):
    from gpudoctor import entry
    from gpudoctor.pipeline import check

    def boom(*_a, **_k):
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(check, "run_checks", boom)
    monkeypatch.setattr(sys, "argv", ["gpudoctor", "check", "--snapshot", str(H200)])
    with pytest.raises(SystemExit) as e:
        entry.main()
    assert e.value.code == 3
    err = capsys.readouterr().err
    assert "internal error: RuntimeError: simulated bug" in err
    log = Path(err.split("crash log: ")[1].strip())
    assert "simulated bug" in log.read_text() and "gpudoctor 0.1.0" in log.read_text()
    log.unlink()


def test_help_off_a_terminal_does_not_load_rich():
    """rich's help panels are for a terminal; off one, --help stays as light as --version."""
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "gpudoctor", "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    assert r.returncode == 0 and "Usage: " in r.stdout and "Commands:" in r.stdout
    loaded = {
        line.split("|")[-1].strip() for line in r.stderr.splitlines() if line.startswith("import time:")
    }
    assert not {m for m in loaded if m == "rich" or m.startswith("rich.")}


# `gpudoctor check --data-dir PATH`: the storage probe gets the path, made absolute.
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
