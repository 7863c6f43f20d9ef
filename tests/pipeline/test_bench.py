"""pipeline/bench.py: the bench pipeline on the recorded H200 (tests/fixtures/h200-driver580-snapshot) and the
recorded GPU-less CI runner (tests/fixtures/nogpu-ci-snapshot). For a measurement, the H200 recording's
interpreter is swapped for a local venv whose torch is the fake measurement source (tests/bench/torchfake.py),
so the real harness, worker, bench facts and bench rules run against the recorded GPU and clocks.
`gpudoctor bench` as a process is tested in tests/bench/test_bench_cli.py."""

from __future__ import annotations

import pytest

from gpudoctor.host.base import Deadline
from gpudoctor.host.snapshot import SnapshotHost, load
from gpudoctor.pipeline.bench import NO_GPU, CannotBench, run_bench, why_unknown
from tests.bench.torchfake import scenario

from conftest import FIXTURES, H200

RECORDED_PYTHON = "/opt/torch/.venv/bin/python3"  # the H200's interpreter, as python.json holds it


def h200_with(python: str) -> SnapshotHost:
    rec = load(str(H200))
    data = rec.python.pop(RECORDED_PYTHON)
    rec.python[python] = dict(data, executable=python)
    rec.python["default"] = python
    return SnapshotHost(rec, "h200")


@pytest.fixture
def slow_bf16(fake_torch_python, tmp_path, monkeypatch):
    """One H200 whose bf16 matmul reaches 300 of its 989 TFLOP/s; its copies run as they should."""
    monkeypatch.setenv("GPUDOCTOR_FAKE_GPU", str(scenario(tmp_path, rates={"matmul_bf16": 300})))
    return h200_with(fake_torch_python)


def _bench(host, fail_on="error", **kw):
    return run_bench(host, "h200", Deadline(60), fail_on, ("matmul_bf16", "d2d"), seconds=0.05, **kw)


def test_measurements_become_facts_judged_by_the_bench_rules(slow_bf16, fake_torch_python):
    bench = _bench(slow_bf16)
    assert (bench.report.run.status, bench.report.run.reason) == ("complete", "")
    rows = [(r.test, r.gpu, round(r.value), r.expected, r.status) for r in bench.report.rows]
    assert rows == [("matmul_bf16", 0, 300, 989, "ok"), ("d2d", 0, 4170, 4800, "ok")]
    (finding,) = bench.result.findings
    assert (finding.rule.id, finding.severity, finding.item) == ("GD-BENCH-004", "warning", 0)
    # The recorded clocks and throttle reasons of the H200 are what the message explains the slowness by.
    assert finding.message.startswith("bf16 matmul on GPU 0 (NVIDIA H200) at 30% of its rate (300 of 989")
    assert "SM clock at 345 of 1980 MHz" in finding.message
    assert bench.report.findings == (finding,)
    assert (bench.result.profile, bench.result.target.python) == ("bench", fake_torch_python)
    assert bench.result.facts.value("host.hostname") == bench.report.hostname == "redacted-host"
    assert bench.diag is None


def test_the_verdict_is_the_runs_threshold_applied_once(slow_bf16):
    under_error, under_warning = _bench(slow_bf16, "error"), _bench(slow_bf16, "warning")
    assert (under_error.verdict.code, under_error.report.verdict, under_error.report.fail_on) == (
        0,
        0,
        "error",
    )
    assert (under_warning.verdict.code, under_warning.report.verdict) == (1, 1)
    assert [f.rule.id for f in under_warning.verdict.failing] == ["GD-BENCH-004"]


def test_a_host_without_a_gpu_is_not_run_and_fails_nothing():
    host = SnapshotHost(load(str(FIXTURES / "nogpu-ci-snapshot")), "ci")
    bench = _bench(host)
    assert (bench.report.run.status, bench.report.run.reason) == ("not run", NO_GPU)
    assert (bench.report.rows, bench.result.findings, bench.verdict.code) == ((), [], 0)
    with pytest.raises(CannotBench, match=f"^{NO_GPU}$"):
        _bench(host, gpus=(0,))


def test_a_gpu_index_the_host_does_not_have_is_refused():
    with pytest.raises(CannotBench, match=r"^--gpu 3: this host has GPUs 0 to 0$"):
        _bench(SnapshotHost(load(str(H200)), "h200"), gpus=(3,))


def test_an_interpreter_that_is_not_there_cannot_bench():
    """The recording as it is: its interpreter exists on the H200, not here."""
    with pytest.raises(CannotBench, match=rf"^bench could not run in {RECORDED_PYTHON}: cannot start "):
        _bench(SnapshotHost(load(str(H200)), "h200"))


def test_without_nvml_it_cannot_tell_whether_there_is_a_gpu():
    rec = load(str(H200))
    rec.nvml_system.clear()
    rec.nvml_devices.clear()
    with pytest.raises(
        CannotBench, match=r"^cannot tell whether this host has a GPU: NVML not recorded in snapshot$"
    ):
        _bench(SnapshotHost(rec, "h200"))


def test_why_unknown_says_each_reason_once_and_how_many_facts():
    one = (("bench[0].sm_clock_mhz", "NVML gave no samples"),)
    assert why_unknown(one) == "NVML gave no samples"
    same = one + (("bench[1].sm_clock_mhz", "NVML gave no samples"),)
    assert why_unknown(same) == "NVML gave no samples (2 facts)"
    many = tuple((f"f{i}", f"reason {i}") for i in range(5))
    assert why_unknown(many) == "reason 0; reason 1; reason 2; and 2 more (5 facts)"
    assert why_unknown(()) == "unknown"
