"""What each measurement should reach (bench/expect.py), from the shipped GPU catalogue and PCIe table. The
bench facts built from a run are tested in test_bench_facts.py."""

from __future__ import annotations

import pytest

from gpudoctor.bench.expect import expectation, pcie_gbs
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
