"""What each measurement should reach, from the GPU catalogue (rules/knowledge/gpus.yaml) and the PCIe table
(rules/knowledge/pcie.yaml), each with what it is made of or why there is none.

- matmul_<type>: the model's dense peak for that data type (no sparsity).
- host copies, pinned: the per-direction bandwidth of the PCIe link the model is rated for (generation and
  width); pageable copies depend on the host's memory and CPU and are compared with the pinned ones.
- d2d: the model's memory bandwidth (a copy reads and writes, and is counted so).
- p2p and allreduce: half the model's NVLink bandwidth (the catalogue gives both directions together)
  where every GPU taking part has NVLink up behind NVSwitches; the PCIe link's where NVLink is down or
  absent. Directly wired NVLink (no switch) has no expectation: how many links join a pair is not known.
The thresholds that make a result a finding are the bench rules' (rules/bench/bench.yaml), not these.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ..knowledge.lookups import gpu_by_name
from ..knowledge.rows import GpuModel, Knowledge
from .model import KINDS, MATMUL_TESTS

DTYPES = {t: t.split("_", 1)[1] for t in MATMUL_TESTS}  # matmul_bf16 -> bf16


@dataclass(frozen=True)
class Expectation:
    value: Optional[float] = None
    basis: str = ""  # what value is
    none: str = ""  # why there is no value
    link: str = ""  # p2p, allreduce: NVLink | PCIe
    pcie_gen: Optional[int] = None  # host copies: the link the value assumes
    pcie_width: Optional[int] = None


def pcie_gbs(gen: Optional[int], width: Optional[int], kb: Knowledge) -> Optional[float]:
    """Per-direction bandwidth of a PCIe link, GB/s, from the PCIe table's x16 figure."""
    row = next((r for r in kb.pcie if r.gen == gen), None)
    if row is None or row.x16_gbs is None or not width:
        return None
    return row.x16_gbs * width / 16


def expectation(test: str, gpu_name: str, facts: Any, gpus: list[int], kb: Knowledge) -> Expectation:
    """The expectation of `test` on the GPUs `gpus` (NVML indices; the first is the one measured)."""
    model = gpu_by_name(gpu_name, kb) if gpu_name else None
    if model is None:
        return Expectation(none=f"the GPU catalogue does not know the {gpu_name or 'GPU'}")
    kind = KINDS[test]
    if kind == "matmul":
        dtype = DTYPES[test]
        peak = model.peak_tflops(dtype)
        if peak is None:
            return Expectation(
                none=f"the GPU catalogue has no dense {dtype.upper()} figure for the {model.name}"
            )
        return Expectation(peak, f"dense {dtype.upper()} peak of the {model.name} ({peak:g} TFLOP/s)")
    if kind == "device_copy":
        if model.memory_bandwidth_gbs is None:
            return Expectation(none=f"the GPU catalogue has no memory bandwidth for the {model.name}")
        bw = model.memory_bandwidth_gbs
        return Expectation(bw, f"memory bandwidth of the {model.name} ({bw:g} GB/s)")
    if kind == "host_copy":
        if test.endswith("_pageable"):
            return Expectation(
                none="pageable copies go through the host's memory and CPU: see the pinned ones"
            )
        return _pcie(model, facts, gpus[0], kb)
    return _between_gpus(model, facts, gpus, kb)


def _pcie(model: GpuModel, facts: Any, gpu: int, kb: Knowledge) -> Expectation:
    gen = model.pcie_gen or facts.value(f"gpus[{gpu}].pcie.gen_gpu_max")
    width = model.pcie_width or facts.value(f"gpus[{gpu}].pcie.width_max")
    gbs = pcie_gbs(gen, width, kb)
    if gbs is None:
        return Expectation(none=f"the PCIe link the {model.name} is rated for is not known")
    return Expectation(
        round(gbs, 2),
        f"PCIe gen {gen} x{width}, per direction ({gbs:.1f} GB/s)",
        link="PCIe",
        pcie_gen=gen,
        pcie_width=width,
    )


def _between_gpus(model: GpuModel, facts: Any, gpus: list[int], kb: Knowledge) -> Expectation:
    ups = [facts.value(f"gpus[{g}].nvlink.links_up") for g in gpus]
    if any(u is None for u in ups):
        return Expectation(none="whether NVLink joins these GPUs is not known")
    if all(u > 0 for u in ups):
        if facts.value("fabric.nvswitch_system") is not True:
            return Expectation(
                none="the GPUs are joined by direct NVLink; how many links join them is not known"
            )
        if model.nvlink_gbs is None:
            return Expectation(none=f"the GPU catalogue has no NVLink bandwidth for the {model.name}")
        half = model.nvlink_gbs / 2
        basis = f"NVLink of the {model.name}, per direction ({half:g} of {model.nvlink_gbs:g} GB/s)"
        return Expectation(half, basis, link="NVLink")
    pcie = _pcie(model, facts, gpus[0], kb)
    return Expectation(pcie.value, pcie.basis, pcie.none, "PCIe", pcie.pcie_gen, pcie.pcie_width)
