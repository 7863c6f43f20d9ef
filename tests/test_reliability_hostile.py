"""Hostile NVML values end to end: the fake NVML library answers readings no GPU gives, through the real
pynvml and LiveHost; each is an unknown fact with its reason, and no rule fires on one."""

from __future__ import annotations

from nvmlrig import U, check, gpu_facts, gpu_findings, h100, rule

U32 = 0xFFFFFFFF


def implausible(value: int, low: int, high: int) -> dict:
    return U(f"implausible value: {value} (expected {low} to {high})")


def test_hostile_nvml_values_are_unknown_and_fire_no_rule(fake_lib):
    data = check(fake_lib, "hostile-values")
    assert gpu_facts(data) == [
        h100(0, 2, pcie__width_max=implausible(0xFFFFFFF0, 0, 32),
             memory__total_bytes=implausible(2**64 - 1, 1, 2**44),
             clocks__sm_mhz=implausible(U32, 0, 100000),
             temperature__gpu_c=implausible(U32, 0, 200),
             power__draw_w=implausible(U32, 0, 10000000),
             ecc__uncorrected_volatile=implausible(2**64 - 1, 0, U32 - 1),
             clocks__event_reasons=implausible(U32, 0, U32 - 1),
             clocks__event_reason_names=implausible(U32, 0, U32 - 1)),
        h100(1, 2),
    ]  # fmt: skip
    assert gpu_findings(data) == []
    for rule_id, fact in (
        ("GD-PCIE-001", "gpus[0].pcie.width_max"),
        ("GD-ECC-001", "gpus[0].ecc.uncorrected_volatile"),
        ("GD-CLOCK-001", "gpus[0].clocks.event_reasons"),
    ):
        result = rule(data, rule_id)
        assert result["status"] == "unknown", rule_id
        assert result["unknown_facts"][fact].startswith("implausible value: ")
