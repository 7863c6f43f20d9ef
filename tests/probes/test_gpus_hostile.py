"""Hostile NVML readings: values no GPU gives are unknown with the reason, never facts that fire rules.

A driver in a bad state, a vGPU, or a hand-made snapshot can answer with sentinels (0xFFFFFFFF, 2**64-1
for "unlimited"), values wrapped through a signed type (a link width of -16, shown as "x-16"), negative
temperatures or power. Each becomes unknown, "implausible value: ..." and the range expected.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from gpudoctor.collect import collect
from gpudoctor.host.base import Deadline
from gpudoctor.probes import gpus
from gpudoctor.probes.gpus import Implausible, link_width, plausible, watts

from conftest import fake_host

RAW = Path(__file__).resolve().parents[1] / "fixtures" / "raw"
H200_NVML = json.loads((RAW / "h200-nvml.json").read_text())
U64_MAX = 2**64 - 1
U32_MAX = 0xFFFFFFFF


def gpu_host(**changes):
    dev = copy.deepcopy(H200_NVML["devices"]["0"])
    dev.update(changes)
    system = {**H200_NVML["system"], "nvmlDeviceGetCount": 1}
    return fake_host(nvml_system=system, nvml_devices={"0": dev}, files={})


def read(**changes) -> dict:
    facts = gpus.read_gpu(gpu_host(**changes), 0)
    return {k: (f.value if f.known else ("unknown", f.unknown)) for k, f in facts.items()}


def test_plausible_bounds():
    assert plausible(16, 0, 32) == 16
    for bad in (-16, 33, U32_MAX):
        with pytest.raises(Implausible, match=f"implausible value: {bad} "):
            plausible(bad, 0, 32)
    with pytest.raises(Implausible):
        watts(-5000)
    with pytest.raises(Implausible):
        link_width("-16\n")
    assert link_width("16\n") == 16


@pytest.mark.parametrize(
    "key, value, field",
    [
        ("nvmlDeviceGetMemoryInfo", {"total": U64_MAX, "used": 0, "free": U64_MAX}, "memory.total_bytes"),
        ("nvmlDeviceGetMemoryInfo", {"total": 0, "used": 0, "free": 0}, "memory.total_bytes"),
        ("nvmlDeviceGetCurrPcieLinkWidth", -16, "pcie.width_current"),
        ("nvmlDeviceGetMaxPcieLinkWidth", U32_MAX, "pcie.width_max"),
        ("nvmlDeviceGetCurrPcieLinkGeneration", 0, "pcie.gen_current"),
        ("nvmlDeviceGetClockInfo(SM)", U32_MAX, "clocks.sm_mhz"),
        ("nvmlDeviceGetMaxClockInfo(MEM)", -1, "clocks.mem_max_mhz"),
        ("nvmlDeviceGetTemperature(GPU)", -40, "temperature.gpu_c"),
        ("nvmlDeviceGetTemperatureThreshold(SLOWDOWN)", U32_MAX, "temperature.slowdown_c"),
        ("nvmlDeviceGetPowerUsage", -71000, "power.draw_w"),
        ("nvmlDeviceGetPowerManagementLimit", U32_MAX, "power.limit_w"),
        ("nvmlDeviceGetUtilizationRates", {"gpu": 4000, "memory": 0}, "utilization.gpu"),
        ("nvmlDeviceGetTotalEccErrors(UNCORRECTED,VOLATILE)", U64_MAX, "ecc.uncorrected_volatile"),
        ("nvmlDeviceGetTotalEccErrors(UNCORRECTED,VOLATILE)", -4, "ecc.uncorrected_volatile"),
        ("nvmlDeviceGetPcieReplayCounter", U32_MAX, "pcie.replay_counter"),
        ("nvmlDeviceGetCurrentClocksEventReasons", U64_MAX, "clocks.event_reasons"),
        ("nvmlDeviceGetEccMode", [U32_MAX, 1], "ecc.enabled"),
        ("nvmlDeviceGetCudaComputeCapability", [-1, 0], "compute_capability"),
    ],
)
def test_absurd_reading_is_unknown_with_the_reason(key, value, field):
    facts = read(**{key: value})
    assert facts[field][0] == "unknown", facts[field]
    assert facts[field][1].startswith("implausible value: ")
    # The other readings stay as they were.
    assert read()["name"] == facts["name"] and facts["index"] == 0


def test_an_implausible_nvlink_state_leaves_the_links_unknown():
    facts = read(**{"nvmlDeviceGetNvLinkState(0)": U32_MAX})
    assert facts["nvlink.links_down"][0] == "unknown"
    assert facts["nvlink.down"][1].startswith("implausible value: ")


def test_hostile_readings_fire_no_rule():
    """x16 of x4294967295, 0 bytes of memory, 0xFFFFFFFF errors and clock reasons: without the bounds
    GD-PCIE-001, GD-ECC-001, GD-CLOCK-001/002 and GD-GPU-001 fired on them; now they cannot be evaluated."""
    from gpudoctor.engine.evaluate import evaluate
    from gpudoctor.engine.loader import load_rules

    host = gpu_host(**{
        "nvmlDeviceGetCurrPcieLinkWidth": 16,
        "nvmlDeviceGetMaxPcieLinkWidth": U32_MAX,
        "nvmlDeviceGetTotalEccErrors(UNCORRECTED,VOLATILE)": U32_MAX,
        "nvmlDeviceGetCurrentClocksEventReasons": U32_MAX,
        "nvmlDeviceGetMemoryInfo": {"total": 0, "used": 0, "free": 0},
    })  # fmt: skip
    facts, _ = collect(host, Deadline(10))
    results = evaluate(load_rules([]), facts)
    status = {r.rule.id: r.status for r in results}
    for rule_id in ("GD-PCIE-001", "GD-ECC-001", "GD-CLOCK-001", "GD-CLOCK-002"):
        assert status[rule_id] == "unknown", rule_id
    assert status["GD-GPU-001"] == "unknown"  # 0 bytes of memory: "tight for training" it is not
