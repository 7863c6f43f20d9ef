"""`gpudoctor fleet` as users run it: a real process, its output and exit code."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fleet.fleetgen import report, write

from conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]


def gd(*args):
    return run_cli(*args)


def test_fleet_cli_formats_exit_codes_and_bad_files(tmp_path):
    reports = tmp_path / "reports"
    for i in range(3):
        write(reports, f"gpu-{i}.json", report(f"gpu-{i}"))
    write(reports, "gpu-3.json", report("gpu-3", facts={"driver.version": "535.104.05"}))

    r = gd("fleet", str(reports), "--format", "json")
    data = json.loads(r.stdout)
    assert (r.returncode, r.stderr) == (0, "")  # a driver drift is a warning; --fail-on error
    assert [f["rule"] for f in data["fleet_findings"]] == ["GD-FLEET-DRIVER-001"]
    assert data["fleet_findings"][0]["nodes"] == ["gpu-3"]
    assert gd("fleet", str(reports), "--fail-on", "warning").returncode == 1

    text = gd("fleet", str(reports))
    assert "1 of 4 nodes has driver version 535.104.05 where 3 have 580.159.04: gpu-3" in text.stdout
    assert "\x1b[" not in text.stdout
    md = gd("fleet", str(reports / "gpu-0.json"), str(reports / "gpu-1.json"), "--format", "markdown")
    assert md.returncode == 0 and md.stdout.startswith("# gpudoctor fleet: 2 nodes, 16 GPUs (2 report files)")

    write(reports, "broken.json", "{")
    r = gd("fleet", str(reports), "--format", "json")
    assert r.returncode == 2
    assert r.stderr == (
        f"gpudoctor: cannot use {reports / 'broken.json'}: "
        "not JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)\n"
    )
    assert json.loads(r.stdout)["summary"]["nodes"] == 4  # the others are still merged
    assert gd("fleet", str(reports), "--skip-invalid").returncode == 0
    assert gd("fleet", str(tmp_path / "nothing-here"), "--skip-invalid").returncode == 2
    assert gd("fleet").returncode == 2  # no paths: usage error


def test_a_policy_ignores_a_fleet_rule_with_its_reason(tmp_path):
    reports = tmp_path / "reports"
    for i in range(3):
        write(reports, f"gpu-{i}.json", report(f"gpu-{i}"))
    write(reports, "gpu-3.json", report("gpu-3", facts={"driver.version": "535.104.05"}))
    policy = tmp_path / "gpudoctor.toml"
    policy.write_text('[ignore]\nGD-FLEET-DRIVER-001 = "gpu-3 is the canary for the next driver"\n')

    before = json.loads(gd("fleet", str(reports), "--format", "json").stdout)
    assert before["summary"]["fleet"]["warning"] == 1 and "ignored_fleet_findings" not in before
    r = gd("fleet", str(reports), "--policy", str(policy), "--format", "json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["fleet_findings"] == [] and data["summary"]["fleet"]["warning"] == 0
    (ignored,) = data["ignored_fleet_findings"]
    assert (ignored["rule"], ignored["reason"]) == (
        "GD-FLEET-DRIVER-001",
        "gpu-3 is the canary for the next driver",
    )
    text = gd("fleet", str(reports), "--policy", str(policy)).stdout
    assert "Ignored by policy" in text and "reason: gpu-3 is the canary for the next driver" in text

    policy.write_text('[ignore]\nGD-FLEET-NOPE-001 = "typo"\n')
    r = gd("fleet", str(reports), "--policy", str(policy))
    assert r.returncode == 2 and "GD-FLEET-NOPE-001: no such fleet rule" in r.stderr


def test_rules_list_show_validate_and_test_cover_the_fleet_rules(tmp_path):
    listed = run_cli("rules", "list")
    assert listed.returncode == 0
    rows = [line.split(None, 3) for line in listed.stdout.splitlines()]  # columns as wide as the ids
    assert ["GD-FLEET-GPU-001", "error", "fleet", "GPU count differs from the fleet's"] in rows
    assert ["GD-FLEET-BENCH-001", "warning", "fleet", "Slower than its peers of the same model"] in rows
    assert "GD-PCIE-001" in listed.stdout
    shown = run_cli("rules", "show", "gd-fleet-gpu-001")
    assert shown.returncode == 0
    assert shown.stdout.startswith(
        "GD-FLEET-GPU-001: GPU count differs from the fleet's\n"
        "severity: error   area: fleet   for each: drift\n"
    )
    assert "rules/fleet/fleet.yaml:" in shown.stdout
    fleet_yaml = str(ROOT / "rules" / "fleet" / "fleet.yaml")
    assert run_cli("rules", "validate", fleet_yaml).stdout == "11 rule(s) valid\n"
    ids = [line.split()[0] for line in listed.stdout.splitlines() if line.startswith("GD-FLEET-")]
    for rule_id in ids:  # the cases of fleet.yaml's rules (peers.yaml's are not loaded here)
        case = ROOT / "tests" / "rules" / "cases" / f"{rule_id}.yaml"
        if "records stage makes them" in case.read_text() and "test_merge.py" in case.read_text():
            (tmp_path / case.name).write_text(case.read_text())
    tested = run_cli("rules", "test", fleet_yaml, "--cases", str(tmp_path))
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert tested.stdout.endswith("case(s) passed, 0 failed\n") and tested.stderr == ""
