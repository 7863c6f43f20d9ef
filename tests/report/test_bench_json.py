"""report/bench_json.py: `gpudoctor bench --format json` is a check's JSON report of the bench's facts and
rules plus the run as measured. The run is a real one (pipeline/bench.py on the recorded H200, its interpreter
a venv whose torch is the fake measurement source, as in tests/pipeline/test_bench.py); the DCGM part is
parsed from real `dcgmi diag` output (tests/fixtures/bench/dcgm/, sources in its README)."""

from __future__ import annotations

import json

import pytest

from gpudoctor.bench import dcgm
from gpudoctor.bench.bench_facts import baseline_values
from gpudoctor.fleet.load import parse_report
from gpudoctor.host.base import Deadline
from gpudoctor.host.snapshot import SnapshotHost, load
from gpudoctor.pipeline.bench import run_bench
from gpudoctor.report.bench_json import bench_data
from gpudoctor.report.json_report import report_data
from tests.bench.torchfake import scenario

from conftest import FIXTURES, H200

RECORDED_PYTHON = "/opt/torch/.venv/bin/python3"


@pytest.fixture
def bench(fake_torch_python, tmp_path, monkeypatch):
    """The H200 with its bf16 matmul at 300 of 989 TFLOP/s (GD-BENCH-004, a warning)."""
    monkeypatch.setenv("GPUDOCTOR_FAKE_GPU", str(scenario(tmp_path, rates={"matmul_bf16": 300})))
    return _bench(fake_torch_python)


def _bench(python: str, earlier=None):
    rec = load(str(H200))
    rec.python[python] = dict(rec.python.pop(RECORDED_PYTHON), executable=python)
    rec.python["default"] = python
    host = SnapshotHost(rec, "h200")
    tests = ("matmul_bf16", "d2d")
    return run_bench(host, "h200", Deadline(60), "warning", tests, seconds=0.05, earlier=earlier)


def test_the_check_report_with_the_run_beside_it(bench, fake_torch_python):
    data = bench_data(bench.result, bench.verdict, bench.report)
    assert {k: v for k, v in data.items() if k != "bench"} == report_data(bench.result, bench.verdict)
    assert (data["summary"]["exit_code"], data["summary"]["fail_on"]) == (1, "warning")
    assert [f["rule"] for f in data["findings"]] == ["GD-BENCH-004"]
    run = data["bench"]
    assert list(run) == ["status", "reason", "backend", "python", "seconds", "measurements"]
    assert (run["status"], run["reason"], run["python"]) == ("complete", "", fake_torch_python)
    assert [(m["test"], m["gpu"], m["status"], round(m["value"])) for m in run["measurements"]] == [
        ("matmul_bf16", 0, "ok", 300),
        ("d2d", 0, "ok", 4170),
    ]
    assert "dcgm" not in data


def test_the_dcgm_diagnostic_when_asked_for(bench):
    diag = dcgm.parse((FIXTURES / "bench" / "dcgm" / "dcgm-4.2.3-gb10-level1.json").read_text())
    data = bench_data(bench.result, bench.verdict, bench.report, diag)
    assert data["dcgm"]["version"] == "4.2.3" and data["dcgm"]["error"] == ""
    assert data["dcgm"]["results"] == [
        {"test": r.test, "category": r.category, "status": r.status, "gpu": r.gpu, "message": r.message}
        for r in diag.results
    ]
    assert len(data["dcgm"]["results"]) == len(diag.results) > 0


def test_fleet_reads_it_as_a_node_report(bench):
    text = json.dumps(bench_data(bench.result, bench.verdict, bench.report), indent=2)
    node = parse_report(text.encode(), "gpu-node-07.json")
    assert node.hostname == "redacted-host"
    assert [f.rule for f in node.findings] == ["GD-BENCH-004"]


def test_a_saved_report_is_the_next_runs_baseline(bench, fake_torch_python, tmp_path, monkeypatch):
    """`bench --baseline FILE` reads what this JSON holds (bench_facts.baseline_values): a d2d copy 20%
    slower than the saved run's is judged against it."""
    saved = json.loads(json.dumps(bench_data(bench.result, bench.verdict, bench.report)))
    earlier = baseline_values(saved)
    assert {k: round(v) for k, v in earlier.items()} == {
        ("matmul_bf16", 0, None): 300,
        ("d2d", 0, None): 4170,
    }
    monkeypatch.setenv("GPUDOCTOR_FAKE_GPU", str(scenario(tmp_path, rates={"matmul_bf16": 300, "d2d": 3336})))
    again = _bench(fake_torch_python, earlier)
    slower = [f for f in again.result.findings if f.rule.id == "GD-BENCH-013"]  # Slower than its baseline
    assert [f.item for f in slower] == [1]
    assert slower[0].message.endswith("20% below the baseline's 4170.")
