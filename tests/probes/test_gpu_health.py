"""The counters probe (gpudoctor/probes/gpu_health.py), and both part-D probes through the real fake NVML."""

from __future__ import annotations

import pytest

from gpudoctor.probes.gpu_health import aer_total, vbios_differs

from nvmlrig import check

# aer_dev_correctable as the kernel prints it (drivers/pci/pcie/aer.c; the file is documented in
# Documentation/ABI/testing/sysfs-bus-pci-devices-aer_stats): one "NAME COUNT" line per error type, then
# the total.
AER_CORRECTABLE = (
    "RxErr 0\nBadTLP 2\nBadDLLP 1\nRollover 0\nTimeout 0\nNonFatalErr 0\nCorrIntErr 0\nHeaderOF 0\n"
    "TOTAL_ERR_COR 3\n"
)


def test_aer_total_reads_the_total_line():
    assert aer_total(AER_CORRECTABLE, "TOTAL_ERR_COR") == 3
    with pytest.raises(ValueError):
        aer_total("RxErr 0\n", "TOTAL_ERR_COR")  # no total: not a count of 0


def test_vbios_differs_only_within_one_model():
    versions = {0: ("H100", "96.00.89"), 1: ("H100", "96.00.61"), 2: ("L4", "95.04.1")}
    assert vbios_differs(versions, 0) == [1]
    assert vbios_differs(versions, 2) == []
    with pytest.raises(LookupError):  # a sibling's VBIOS unread: the list would be partial
        vbios_differs({0: ("H100", "96.00.89"), 1: ("H100", None)}, 0)


def _findings(data: dict, rule_id: str) -> list[str]:
    return [f["message"] for f in data["findings"] if f["rule"] == rule_id]


def test_leftovers_through_real_pynvml(fake_lib):
    data = check(fake_lib, "leftover-process")
    procs = data["facts"]["gpu_processes"]
    assert [(p["gpu"], p["pid"], p["type"], p["used_bytes"]) for p in procs] == [
        (3, 4242, "compute", 32212254720)
    ]
    assert data["facts"]["gpu_mig"][5] == {
        "index": 5,
        "name": "NVIDIA H100 80GB HBM3",
        "enabled": True,
        "devices": 0,
    }
    assert _findings(data, "GD-MODE-003") == [
        "GPU 5 (NVIDIA H100 80GB HBM3) is in MIG mode but has no MIG device: CUDA sees no GPU there."
    ]
    assert _findings(data, "GD-MODE-001") == [
        "GPU 6 (NVIDIA H100 80GB HBM3) is in compute mode Prohibited: "
        "no program can create a CUDA context on it."
    ]


def test_counters_through_real_pynvml(fake_lib):
    data = check(fake_lib, "nvlink-crc-errors")
    health = data["facts"]["gpu_health"]
    assert health[2]["nvlink"] == {
        "replay_errors": 0, "recovery_errors": 1, "crc_flit_errors": 37, "crc_data_errors": 0,
        "error_links": [7, 9],
    }  # fmt: skip
    assert [g["inforom_valid"] for g in health] == [True] * 4 + [False] + [True] * 3
    assert health[6]["vbios_differs"] == [0, 1, 2, 3, 4, 5, 7]
    assert _findings(data, "GD-COUNTER-004") == [
        "GPU 2 (NVIDIA H100 80GB HBM3) has NVLink errors on link(s) 7, 9: "
        "0 replay, 1 recovery, 37 flit CRC, 0 data CRC."
    ]
    assert len(_findings(data, "GD-COUNTER-002")) == 1
    assert len(_findings(data, "GD-COUNTER-003")) == 8  # GPU 6 differs from each, each from GPU 6
    assert _findings(data, "GD-COUNTER-001") == []  # Hopper: row remapping, not page retirement


def test_healthy_node_has_no_leftover_and_no_counter_finding(fake_lib):
    data = check(fake_lib, "healthy-h100-8")
    assert data["facts"]["gpu_processes"] == []
    rules = {r["id"]: r["status"] for r in data["rules"]}
    for rule_id in ("GD-PROC-001", "GD-MODE-003", "GD-COUNTER-002", "GD-COUNTER-003", "GD-COUNTER-004"):
        assert _findings(data, rule_id) == []
        assert rules[rule_id] in ("passed", "not_applicable"), rule_id
