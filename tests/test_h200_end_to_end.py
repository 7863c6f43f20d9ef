"""The real H200 capture, replayed end to end through the same probe code a live check runs."""

from __future__ import annotations

from gpudoctor.check import exit_code, run_check
from gpudoctor.collect import collect
from gpudoctor.host.base import Deadline

from conftest import H200


def test_h200_facts(h200_host):
    facts, statuses = collect(h200_host, Deadline(10))
    assert [s.status for s in statuses] == ["ok"] * len(statuses)
    v = facts.value
    assert v("driver.version") == "580.159.04"
    assert v("driver.kernel_module") == "open"
    assert v("driver.max_cuda") == "13.0"
    assert v("driver.userspace_version") == "580.159.04"
    assert v("gpus.count") == 1
    assert v("gpus[0].name") == "NVIDIA H200"
    assert v("gpus[0].compute_capability") == "9.0"
    assert v("gpus[0].architecture") == "Hopper"
    assert (v("gpus[0].pcie.gen_current"), v("gpus[0].pcie.width_current")) == (5, 16)
    assert (v("gpus[0].pcie.gen_max"), v("gpus[0].pcie.width_max")) == (5, 16)
    assert (v("gpus[0].pcie.sysfs_gen_current"), v("gpus[0].pcie.sysfs_width_current")) == (5, 16)
    assert v("gpus[0].clocks.event_reason_names") == ["GpuIdle"]
    assert v("gpus[0].uuid") == "GPU-00000000-0000-0000-0000-000000000000"
    torch = [i for i in range(facts.count("frameworks")) if v(f"frameworks[{i}].name") == "torch"][0]
    assert v(f"frameworks[{torch}].version") == "2.11.0"
    assert v(f"frameworks[{torch}].build") == "cuda"
    assert v(f"frameworks[{torch}].cuda") == "13.0"
    cudnn = {
        (v(f"cudnn.installs[{j}].version"), v(f"cudnn.installs[{j}].origin"))
        for j in range(facts.count("cudnn.installs"))
    }
    assert cudnn == {("9.19.0.56", "pip"), ("9.14.0", "system")}
    assert v("cudnn.distinct_versions") == 2
    assert v("host.hostname") == "redacted-host"


def test_h200_has_no_error_and_only_onnxruntime_warns(h200_host):
    result = run_check(h200_host, str(H200), Deadline(10), [])
    by_severity = {(f.severity, f.rule.id) for f in result.findings}
    assert by_severity == {("warning", "GD-FW-004"), ("info", "GD-CUDNN-002")}
    assert exit_code(result.findings, "error") == 0
    assert exit_code(result.findings, "warning") == 1
    assert [r.rule.id for r in result.results if r.status == "unknown"] == []
