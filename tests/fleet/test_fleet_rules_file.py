"""The fleet rules are data (rules/fleet/fleet.yaml): loaded strictly, listed and shown like other rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudoctor.fleet.rules import FLEET_RULES, FleetRuleError, fleet_rules_file, load_fleet_rules

from conftest import run_cli


def test_the_shipped_fleet_rules_come_from_their_file():
    assert fleet_rules_file().name == "fleet.yaml"
    assert load_fleet_rules() == FLEET_RULES and len(FLEET_RULES) == 11


def test_a_bad_fleet_rule_file_gets_every_problem_at_once(tmp_path: Path):
    path = tmp_path / "fleet.yaml"
    path.write_text(
        "rules:\n"
        "  - id: GD-FLEET-X-001\n    title: t\n    severity: fatal\n    kind: drift\n"
        "    fact: driver.version\n"
        "    what: w\n    why: y\n    colour: red\n"
        "  - id: GD-FLEET-X-002\n    title: t\n    severity: info\n    kind: sideways\n"
        "    fact: driver.version\n"
        "    what: w\n    why: y\n"
        "  - id: GD-FLEET-X-003\n    title: t\n    severity: info\n    kind: slower\n"
        "    fact: bench[].value\n    tolerance: '0.9'\n"
        "    what: w\n    why: y\n"
        "  - id: GD-FLEET-X-004\n    title: t\n    severity: info\n    kind: slower\n"
        "    fact: bench[].value\n    tolerance: 1.1\n"
        "    what: w\n    why: y\n",
        encoding="utf-8",
    )
    with pytest.raises(FleetRuleError) as e:
        load_fleet_rules(path)
    assert e.value.problems == [
        f"{path}:2: GD-FLEET-X-001: unknown key(s): colour",
        f"{path}:17: GD-FLEET-X-003: not a number: tolerance",
        f"{path}: GD-FLEET-X-002: kind 'sideways' is not one of drift, outlier, slower",
        f"{path}: GD-FLEET-X-004: tolerance 1.1 is not between 0 and 1",
    ]


def test_rules_list_and_show_include_the_fleet_rules():
    listed = run_cli("rules", "list")
    assert listed.returncode == 0
    row = ["GD-FLEET-GPU-001", "error", "fleet", "GPU count differs from the fleet's"]
    assert row in [line.split(None, 3) for line in listed.stdout.splitlines()]  # columns as wide as the ids
    assert "GD-PCIE-001" in listed.stdout
    shown = run_cli("rules", "show", "gd-fleet-gpu-001")
    assert shown.returncode == 0
    assert shown.stdout.startswith("GD-FLEET-GPU-001: GPU count differs from the fleet's\nseverity: error")
    assert "defined in: rules/fleet/fleet.yaml" in shown.stdout
    bench = run_cli("rules", "show", "GD-FLEET-BENCH-001")
    assert bench.returncode == 0
    assert bench.stdout.startswith(
        "GD-FLEET-BENCH-001: Slower than its peers of the same model\n"
        "severity: warning   area: fleet   kind: slower (under 90% of the median)\n"
        "compares: bench[].value by bench[].group across the nodes' reports (gpudoctor fleet)\n"
    )
    row = ["GD-FLEET-BENCH-001", "warning", "fleet", "Slower than its peers of the same model"]
    assert row in [line.split(None, 3) for line in listed.stdout.splitlines()]
