"""The fleet view in full, as golden files, for text, JSON and Markdown. Regenerate after an intended
change (or after tests/fixtures/golden/h200-check.json, which the fleet is made from, changed) with:

GPUDOCTOR_UPDATE_GOLDEN=1 python -m pytest tests/report/test_fleet_report.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gpudoctor.fleet.load import load_reports
from gpudoctor.fleet.merge import merge, verdict
from gpudoctor.report.fleet_report import (
    fleet_data,
    print_rich,
    render_json,
    render_markdown,
    render_text,
)
from tests.fleet.fleetgen import bench_fleet, report, small_fleet

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "fixtures" / "golden"


@pytest.fixture
def fleet(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # so that file names in the output are the same on every machine
    small_fleet(Path("fleet"))
    return merge(load_reports(["fleet"]))


def _compare(actual: str, golden: Path) -> None:
    if os.environ.get("GPUDOCTOR_UPDATE_GOLDEN"):
        golden.write_text(actual)
    assert golden.exists(), f"{golden} is missing: run with GPUDOCTOR_UPDATE_GOLDEN=1"
    assert actual == golden.read_text()


def test_text(fleet):
    _compare(render_text(fleet, verdict(fleet, "error"), width=100), GOLDEN / "fleet-small.txt")


def test_json(fleet):
    _compare(render_json(fleet, verdict(fleet, "error")), GOLDEN / "fleet-small.json")


def test_markdown(fleet):
    _compare(render_markdown(fleet, verdict(fleet, "error")), GOLDEN / "fleet-small.md")


@pytest.fixture
def benched(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    bench_fleet(Path("bench"))
    return merge(load_reports(["bench"]))


@pytest.mark.parametrize(
    "render,golden",
    [
        (render_text, "fleet-bench.txt"),
        (render_json, "fleet-bench.json"),
        (render_markdown, "fleet-bench.md"),
    ],
)
def test_bench_reports(benched, render, golden):
    """bench reports: slower GPUs than their peers, a test that timed out, a check report among them."""
    _compare(render(benched, verdict(benched, "error")), GOLDEN / golden)


def test_json_summary_and_exit_code(fleet):
    data = fleet_data(fleet, verdict(fleet, "warning", skip_invalid=True))
    assert (data["schema"], data["schema_version"]) == ("gpudoctor.fleet", 2)
    assert data["summary"] == {
        "nodes": 8,
        "gpus": 63,
        "nodes_with_findings": 8,
        "incomplete_nodes": 0,
        "invalid_files": 2,
        "fleet": {"error": 1, "warning": 5, "info": 0},
        "node": {"error": 0, "warning": 9, "info": 8},
        "fail_on": "warning",
        "skip_invalid": True,
        "exit_code": 1,
    }
    assert fleet_data(fleet, verdict(fleet, "never", skip_invalid=True))["summary"]["exit_code"] == 0
    assert fleet_data(fleet, verdict(fleet, "never"))["summary"]["exit_code"] == 2
    json.dumps(data)  # plain data


def test_markdown_cells_cannot_break_the_table(tmp_path):
    doc = report("evil|host\nname")
    doc["findings"][0]["message"] = "a | b"
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    fleet = merge(load_reports([str(path)]))
    text = render_markdown(fleet, verdict(fleet, "error"))
    assert "| evil\\|host name | warning | GD-FW-004 | onnxruntime | a \\| b |" in text


def test_nothing_usable_still_renders_and_exits_2(tmp_path):
    fleet = merge(load_reports([str(tmp_path)]))
    assert fleet_data(fleet, verdict(fleet, "error", skip_invalid=True))["summary"]["exit_code"] == 2
    last = render_text(fleet, verdict(fleet, "error")).splitlines()[-1]
    assert last == "        exit 2 (no report could be used)"


def test_an_incomplete_node_is_shown_even_without_findings(tmp_path):
    doc = report("gpu-slow")
    doc["findings"] = []
    doc["probes"][1] = {"name": "gpus", "status": "timed out", "detail": "", "seconds": 10.0}
    doc["timed_out"] = ["nvmlDeviceGetHandleByIndex(0)"]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    fleet = merge(load_reports([str(path)]))
    text = render_text(fleet, verdict(fleet, "error"))
    assert (
        f"Findings by node\n  gpu-slow  ({path})\n"
        "    incomplete: probe gpus timed out; timed out: nvmlDeviceGetHandleByIndex(0)\n"
    ) in text
    assert "| gpu-slow | probe gpus timed out; timed out: nvmlDeviceGetHandleByIndex(0) |" in render_markdown(
        fleet, verdict(fleet, "error")
    )
    assert fleet_data(fleet, verdict(fleet, "error"))["summary"]["incomplete_nodes"] == 1


def test_rich_output_has_the_same_words(fleet):
    from rich.console import Console

    console = Console(record=True, width=100, force_terminal=True, color_system="standard")
    print_rich(fleet, verdict(fleet, "error"), console=console)
    assert console.export_text() == render_text(fleet, verdict(fleet, "error"), width=100)
