"""What each measurement should reach (bench/expect.py), from the shipped GPU catalogue and PCIe table, and
the bench facts built from a run (bench/bench_facts.py)."""

from __future__ import annotations

import pytest

from gpudoctor.bench.bench_facts import judge
from gpudoctor.bench.expect import expectation, pcie_gbs
from gpudoctor.bench.model import OK, TIMED_OUT, BenchRun, Measurement, Samples
from gpudoctor.facts import Facts, known
from gpudoctor.knowledge import knowledge


def host_facts(gpus: int = 1, name: str = "NVIDIA H200", nvlink_up: int = 18, nvswitch: bool = True) -> Facts:
    items = {"gpus.count": known(gpus, "t"), "fabric.nvswitch_system": known(nvswitch, "t")}
    for i in range(gpus):
        for key, value in (
            ("name", name),
            ("pcie.gen_gpu_max", 5),
            ("pcie.width_max", 16),
            ("nvlink.links_up", nvlink_up),
            ("clocks.sm_max_mhz", 1980),
            ("power.default_limit_w", 700.0),
        ):
            items[f"gpus[{i}].{key}"] = known(value, "t")
    return Facts(items)


@pytest.mark.parametrize(
    ("test", "value", "basis"),
    [
        ("matmul_fp32", 67, "dense FP32 peak of the NVIDIA H200 SXM5 (67 TFLOP/s)"),
        ("matmul_tf32", 494, "dense TF32 peak of the NVIDIA H200 SXM5 (494 TFLOP/s)"),
        ("matmul_bf16", 989, "dense BF16 peak of the NVIDIA H200 SXM5 (989 TFLOP/s)"),
        ("matmul_fp16", 989, "dense FP16 peak of the NVIDIA H200 SXM5 (989 TFLOP/s)"),
        ("matmul_fp8", 1979, "dense FP8 peak of the NVIDIA H200 SXM5 (1979 TFLOP/s)"),
        ("d2d", 4800, "memory bandwidth of the NVIDIA H200 SXM5 (4800 GB/s)"),
        ("h2d_pinned", 63.02, "PCIe gen 5 x16, per direction (63.0 GB/s)"),
        ("p2p", 450, "NVLink of the NVIDIA H200 SXM5, per direction (450 of 900 GB/s)"),
    ],
)
def test_an_h200_expects_its_catalogue_figures(test, value, basis):
    e = expectation(test, "NVIDIA H200", host_facts(2), [0, 1] if test == "p2p" else [0], knowledge())
    assert (e.value, e.basis, e.none) == (value, basis, "")


def test_what_has_no_expectation_says_why():
    kb, facts = knowledge(), host_facts(2)
    assert expectation("matmul_bf16", "NVIDIA Z9000", facts, [0], kb).none == (
        "the GPU catalogue does not know the NVIDIA Z9000"
    )
    assert expectation("h2d_pageable", "NVIDIA H200", facts, [0], kb).none == (
        "pageable copies go through the host's memory and CPU: see the pinned ones"
    )
    direct = host_facts(2, nvswitch=False)
    assert expectation("p2p", "NVIDIA H200", direct, [0, 1], kb).none == (
        "the GPUs are joined by direct NVLink; how many links join them is not known"
    )


def test_pairs_without_nvlink_expect_the_pcie_link():
    e = expectation("allreduce", "NVIDIA H200", host_facts(2, nvlink_up=0), [0, 1], knowledge())
    assert (e.value, e.link) == (63.02, "PCIe")


def test_pcie_bandwidth_scales_with_width():
    kb = knowledge()
    assert pcie_gbs(4, 16, kb) == 31.51 and pcie_gbs(5, 8, kb) == 31.51 and pcie_gbs(6, 16, kb) is None


def m(test: str, value=None, status=OK, **kw) -> Measurement:
    return Measurement(test=test, gpu=0, status=status, value=value, **kw)


def test_a_run_becomes_bench_facts_with_ratios_samples_and_baseline():
    busy = Samples(count=9, sm_mhz_median=1110, power_w_max=349.0, power_limit_w=350.0, event_reasons=0x4)
    run = BenchRun(
        "incomplete",
        measurements=(
            m("matmul_bf16", 376.2, samples=busy),
            m("h2d_pinned", 55.0, samples=Samples(count=3, pcie_gen_min=5, pcie_width_min=16)),
            m("h2d_pageable", 7.0),
            m("d2d", None, TIMED_OUT, detail="still running after 60 s, the worker was stopped"),
        ),
    )
    facts, rows = judge(run, host_facts(), knowledge(), baseline={("matmul_bf16", 0, None): 740.0})
    v = facts.value
    assert (v("bench.count"), v("bench[0].ratio"), v("bench[0].percent")) == (4, 0.38, 38)
    assert (v("bench[0].power_limit_w"), v("bench[0].default_limit_w"), v("bench[0].sm_clock_ratio")) == (
        350.0,
        700.0,
        0.56,
    )
    assert v("bench[0].event_reason_names") == ["SwPowerCap"]
    assert (v("bench[0].baseline"), v("bench[0].baseline_ratio"), v("bench[0].baseline_percent")) == (
        740.0,
        0.508,
        49,
    )
    assert v("bench[0].group") == "NVIDIA H200 matmul_bf16"
    assert (v("bench[1].pcie_gen"), v("bench[1].pcie_gen_expected"), v("bench[2].pinned_ratio")) == (
        5,
        5,
        7.9,
    )
    assert facts.get("bench[2].expected").unknown == (
        "pageable copies go through the host's memory and CPU: see the pinned ones"
    )
    # Not measured is unknown with the reason, never zero.
    assert (
        facts.get("bench[3].value").unknown == "timed out: still running after 60 s, the worker was stopped"
    )
    assert (
        facts.get("bench[3].ratio").unknown == "timed out: still running after 60 s, the worker was stopped"
    )
    assert facts.get("bench[1].sm_mhz").unknown == "NVML gave no such reading during the test"
    assert facts.get("bench[2].sm_mhz").unknown == "not sampled"
    assert [(r.index, r.test, r.expected, r.baseline) for r in rows] == [
        (0, "matmul_bf16", 989, 740.0),
        (1, "h2d_pinned", 63.02, None),
        (2, "h2d_pageable", None, None),
        (3, "d2d", 4800, None),
    ]
