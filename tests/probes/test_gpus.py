"""The GPU probe, against NVML readings and sysfs values captured on a real H200 host, and variants of them.

The multi-GPU, NVLink and throttling cases are the H200 readings with single keys changed; the hostile
ones (sentinels, wrapped or negative values) are unknown with their reason.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from gpudoctor.collect import collect
from gpudoctor.facts import SCHEMA
from gpudoctor.host.base import Deadline
from gpudoctor.probes import gpus
from gpudoctor.probes.gpus import (
    FIELDS,
    Implausible,
    architecture_name,
    brand_name,
    bus_id,
    compute_capability,
    event_reason_names,
    link_width,
    pcie_generation,
    plausible,
    watts,
)

from conftest import fake_host
from nvmlrig import SCENARIOS, check, flat, gpu_facts, gpudoctor

RAW = Path(__file__).resolve().parents[1] / "fixtures" / "raw"
H200_NVML = json.loads((RAW / "h200-nvml.json").read_text())
H200_DEVICE = H200_NVML["devices"]["0"]
GPU = "0000:00:06.0"
# The GPU's link files in sysfs, as captured.
H200_SYSFS = {
    f"/sys/bus/pci/devices/{GPU}/current_link_speed": "32.0 GT/s PCIe\n",
    f"/sys/bus/pci/devices/{GPU}/max_link_speed": "32.0 GT/s PCIe\n",
    f"/sys/bus/pci/devices/{GPU}/current_link_width": "16\n",
    f"/sys/bus/pci/devices/{GPU}/max_link_width": "16\n",
    # As the capture copied it (tests/fixtures/h200-driver580-snapshot/files/sys/...): a VM names no node.
    f"/sys/bus/pci/devices/{GPU}/numa_node": "-1\n",
}
NOT_SUPPORTED = {"error": "NVMLError_NotSupported", "msg": "Not Supported"}
LOST = {"error": "NVMLError_GpuIsLost", "msg": "GPU is lost"}


def device(**changes) -> dict:
    dev = copy.deepcopy(H200_DEVICE)
    dev.update(changes)
    return dev


def host(devices: dict, files: dict = None, system: dict = None):
    system = system if system is not None else {**H200_NVML["system"], "nvmlDeviceGetCount": len(devices)}
    return fake_host(
        nvml_system=system, nvml_devices=devices, files=files if files is not None else H200_SYSFS
    )


def member(facts: dict, i: int) -> dict:
    prefix = f"gpus[{i}]."
    return {k[len(prefix) :]: f for k, f in facts.items() if k.startswith(prefix)}


def values(facts: dict) -> dict:
    return {k: (f.value if f.known else ("unknown", f.unknown)) for k, f in facts.items()}


# --- pure functions ---------------------------------------------------------------------------------------


def test_fields_cover_the_schema():
    # Every gpus[] fact but the derived ones (gpudoctor/derive.py adds those after the probe).
    read = {s.name for s in SCHEMA if s.name.startswith("gpus[].") and not s.doc.startswith("derived:")}
    assert {f"gpus[].{f}" for f in FIELDS} == read


def test_decoders():
    assert bus_id({"busId": "00000000:00:06.0"}) == "0000:00:06.0"
    assert bus_id({"busId": "00000000:CA:00.0"}) == "0000:ca:00.0"
    assert brand_name(14) == "nvidia" and brand_name(2) == "tesla" and brand_name(16) == "titanrtx"
    assert architecture_name(9) == "Hopper" and architecture_name(10) == "Blackwell"
    assert compute_capability([9, 0]) == "9.0" and compute_capability((12, 0)) == "12.0"
    assert watts(700000) == 700.0 and watts(80368) == 80.368


def test_a_brand_number_the_runtime_has_no_name_for_is_unknown_as_to_the_runtime():
    # libnvidia-container src/driver.c @63d366ee3b4183513c310ac557bf31b05b83328f:597-598 (the switch's
    # default): NVML_BRAND_UNKNOWN, and NVML_BRAND_NVIDIA_DLA/_VGAMEDEV/_NPU (17-19 in nvidia-ml-py
    # 13.615.71), which its nvml.h predates, are all "Unknown"; so is a number NVML has yet to define.
    assert [brand_name(n) for n in (0, 17, 18, 19, 20, 99)] == ["unknown"] * 6
    with pytest.raises(TypeError):
        brand_name("NVIDIA")  # not a number NVML returns: an unexpected value, not a brand


@pytest.mark.parametrize("bad", [lambda: architecture_name(0xFFFFFFFF), lambda: watts(None)])
def test_decoders_reject_unknown_values(bad):
    with pytest.raises((KeyError, TypeError)):
        bad()


@pytest.mark.parametrize(
    "mask, names",
    [
        (0, []),
        (0x1, ["GpuIdle"]),
        (0x4, ["SwPowerCap"]),
        (0x44, ["SwPowerCap", "HwThermalSlowdown"]),
        (
            0x1FF,
            [
                "GpuIdle",
                "ApplicationsClocksSetting",
                "SwPowerCap",
                "HwSlowdown",
                "SyncBoost",
                "SwThermalSlowdown",
                "HwThermalSlowdown",
                "HwPowerBrakeSlowdown",
                "DisplayClockSetting",
            ],
        ),  # fmt: skip
        (0x200 | 0x8, ["HwSlowdown"]),
    ],
)
def test_event_reason_names(mask, names):
    assert event_reason_names(mask) == names


@pytest.mark.parametrize(
    "text, gen",
    [
        ("32.0 GT/s PCIe\n", 5),
        ("16 GT/s\n", 4),
        ("16.0 GT/s PCIe", 4),
        ("8.0 GT/s PCIe", 3),
        ("5.0 GT/s PCIe", 2),
        ("2.5 GT/s PCIe", 1),
        ("64.0 GT/s PCIe", 6),
    ],
)
def test_pcie_generation(text, gen):
    assert pcie_generation(text) == gen


@pytest.mark.parametrize("text", ["Unknown", "Unknown speed", "", "3.0 GT/s"])
def test_pcie_generation_rejects(text):
    with pytest.raises((ValueError, KeyError, IndexError)):
        pcie_generation(text)


def test_link_width():
    assert link_width("16\n") == 16


def test_numa_node():
    assert gpus.numa_node("1\n") == 1
    assert gpus.numa_node("-1\n") == -1  # the H200 capture's, in a VM
    with pytest.raises(Implausible):
        gpus.numa_node("-2\n")
    with pytest.raises(ValueError):
        gpus.numa_node("\n")


def test_topology_labels_are_nvidia_smis():
    # nvmlGpuTopologyLevel_t SINGLE 10 ... SYSTEM 50, as `nvidia-smi topo -m` labels each.
    assert [gpus.topology_label(n) for n in (10, 20, 30, 40, 50)] == ["PIX", "PXB", "PHB", "NODE", "SYS"]
    assert gpus.topology_levels(1, 3, {0: 50, 2: 10}) == ["SYS", "X", "PIX"]
    # NVML_TOPOLOGY_INTERNAL (a two-GPU board) has no label in nvidia-smi's legend: no guess.
    for bad in (0, 45, 60):
        with pytest.raises(Implausible):
            gpus.topology_label(bad)
    with pytest.raises(TypeError):
        gpus.topology_label("NODE")


# --- probe ------------------------------------------------------------------------------------------------


def test_h200_exact_facts():
    facts = gpus.probe(host({"0": device()}))
    assert set(facts) == {"gpus.count"} | {f"gpus[0].{f}" for f in FIELDS}
    assert facts["gpus.count"].value == 1
    assert values(member(facts, 0)) == {
        "index": 0,
        "name": "NVIDIA H200",
        "uuid": "GPU-00000000-1111-2222-3333-444444444444",
        "bus_id": GPU,
        "brand": "nvidia",
        "architecture": "Hopper",
        "compute_capability": "9.0",
        "memory.total_bytes": 150754820096,
        "memory.used_bytes": 644939776,
        "pcie.gen_current": 5,
        "pcie.gen_max": 5,
        "pcie.gen_gpu_max": 5,
        "pcie.width_current": 16,
        "pcie.width_max": 16,
        "pcie.replay_counter": 1,
        "pcie.sysfs_gen_current": 5,
        "pcie.sysfs_gen_max": 5,
        "pcie.sysfs_width_current": 16,
        "pcie.sysfs_width_max": 16,
        "numa_node": -1,
        "nvlink.links": 0,
        "nvlink.links_up": 0,
        "nvlink.links_down": 0,
        "nvlink.down": [],
        "nvlink.version": ("unknown", "not supported"),
        "nvlink.peers": [],
        "clocks.sm_mhz": 345,
        "clocks.sm_max_mhz": 1980,
        "clocks.mem_mhz": 3201,
        "clocks.mem_max_mhz": 3201,
        "clocks.event_reasons": 1,
        "clocks.event_reason_names": ["GpuIdle"],
        "utilization.gpu": 0,
        "utilization.memory": 0,
        "temperature.gpu_c": 36,
        "temperature.slowdown_c": 89,
        "temperature.shutdown_c": 95,
        "power.draw_w": 80.368,
        "power.limit_w": 700.0,
        "power.default_limit_w": 700.0,
        "persistence_mode": True,
        "compute_mode": "Default",
        "mig.current": False,
        "mig.pending": False,
        "ecc.enabled": True,
        "ecc.pending": True,
        "ecc.uncorrected_volatile": 0,
        "ecc.uncorrected_aggregate": 0,
        "ecc.corrected_volatile": 0,
        "remapped_rows.correctable": 0,
        "remapped_rows.uncorrectable": 0,
        "remapped_rows.pending": False,
        "remapped_rows.failed": False,
        "virtualization_mode": "Passthrough",
        "lost": False,
        # The capture asked NVML for no field values: the recovery action was not recorded.
        "recovery_action": ("unknown", "not recorded in snapshot"),
        "p2p.no_read": [],
        "p2p.no_read_count": 0,
        "topology.cross_socket": [],
        "topology.cross_socket_count": 0,
        "topology.levels": ["X"],
    }
    g = member(facts, 0)
    assert g["p2p.no_read"].source == "nvml:nvmlDeviceGetCount (no other GPU)"
    assert g["clocks.sm_mhz"].source == "nvml:nvmlDeviceGetClockInfo(SM)"
    assert g["clocks.event_reasons"].source == "nvml:nvmlDeviceGetCurrentClocksEventReasons"
    assert g["pcie.sysfs_gen_current"].source == f"/sys/bus/pci/devices/{GPU}/current_link_speed"
    assert g["numa_node"].source == f"/sys/bus/pci/devices/{GPU}/numa_node"
    assert g["topology.levels"].source == "nvml:nvmlDeviceGetCount (no other GPU)"


@pytest.mark.parametrize("error", ["NVMLError_LibraryNotFound", "NVMLError_DriverNotLoaded"])
def test_no_driver_means_no_gpus(error):
    facts = gpus.probe(fake_host(nvml_system={"nvmlDeviceGetCount": {"error": error, "msg": ""}}))
    assert list(facts) == ["gpus.count"]
    assert facts["gpus.count"].known and facts["gpus.count"].value == 0


def test_broken_driver_count_is_unknown():
    err = {"error": "NVMLError_LibRmVersionMismatch", "msg": "RM has detected an NVML/RM version mismatch."}
    facts = gpus.probe(fake_host(nvml_system={"nvmlDeviceGetCount": err}))
    assert facts["gpus.count"].unknown == "driver/library version mismatch"
    assert not gpus.probe(fake_host())["gpus.count"].known


def test_not_supported_fields_are_unknown_and_others_stay():
    dev = device(
        nvmlDeviceGetMigMode=NOT_SUPPORTED,
        nvmlDeviceGetEccMode=NOT_SUPPORTED,
        nvmlDeviceGetRemappedRows=NOT_SUPPORTED,
        nvmlDeviceGetGpuMaxPcieLinkGeneration=NOT_SUPPORTED,
        **{"nvmlDeviceGetTotalEccErrors(UNCORRECTED,VOLATILE)": NOT_SUPPORTED},
    )
    g = member(gpus.probe(host({"0": dev})), 0)
    for name in ("mig.current", "mig.pending", "ecc.enabled", "ecc.pending", "ecc.uncorrected_volatile"):
        assert g[name].unknown == "not supported", name
    for name in ("remapped_rows.correctable", "remapped_rows.failed", "pcie.gen_gpu_max"):
        assert g[name].unknown == "not supported", name
    assert g["ecc.uncorrected_aggregate"].value == 0
    assert g["name"].value == "NVIDIA H200"
    assert g["mig.current"].source == "nvml:nvmlDeviceGetMigMode"


def test_unexpected_value_is_unknown_not_a_crash():
    g = member(gpus.probe(host({"0": device(nvmlDeviceGetBrand="99", nvmlDeviceGetMemoryInfo="garbage")})), 0)
    assert g["brand"].unknown.startswith("unexpected value")
    assert g["memory.total_bytes"].unknown.startswith("unexpected value")
    assert g["architecture"].value == "Hopper"


def test_lost_gpu_hides_only_itself():
    # An 8-GPU board where GPU 1 fell off the bus: every NVML call on it fails with GpuIsLost.
    devices = {}
    for i in range(8):
        devices[str(i)] = device(nvmlDeviceGetPciInfo={"busId": f"00000000:{0x18 + i:02X}:00.0"})
    devices["1"] = {key: LOST for key in H200_DEVICE}
    facts = gpus.probe(host(devices, files={}))
    assert facts["gpus.count"].value == 8
    lost = member(facts, 1)
    assert set(lost) == set(FIELDS)
    assert lost["index"].value == 1
    assert lost["lost"].value is True and lost["lost"].source == "nvml:GPU 1 (NVMLError_GpuIsLost)"
    assert all(f.unknown == "GPU is lost" for k, f in lost.items() if k not in ("index", "lost"))
    for i in (0, 2, 7):
        g = member(facts, i)
        assert g["name"].value == "NVIDIA H200"
        assert g["bus_id"].value == f"0000:{0x18 + i:02x}:00.0"
        assert g["power.limit_w"].value == 700.0


def test_gpu_lost_midway_keeps_only_what_names_it():
    # Lost at its power reading: its name, UUID and PCI address, read before, still say which GPU it is (the
    # finding names it); every reading about its state is discarded, even those read before it was lost.
    facts = gpus.probe(host({"0": device(nvmlDeviceGetPowerUsage=LOST), "1": device()}))
    g = values(member(facts, 0))
    assert (g["name"], g["uuid"], g["bus_id"], g["lost"]) == (
        "NVIDIA H200", "GPU-00000000-1111-2222-3333-444444444444", GPU, True,
    )  # fmt: skip
    assert g["memory.total_bytes"] == g["pcie.sysfs_gen_current"] == ("unknown", "GPU is lost")
    assert member(facts, 1)["name"].value == "NVIDIA H200"
    assert values(member(facts, 1))["lost"] is False


def test_a_timed_out_gpu_is_not_called_lost():
    timeout = {"error": "NVMLError_Timeout", "msg": "nvmlDeviceGetPowerUsage did not return within 2.0 s"}
    g = member(gpus.probe(host({"0": device(nvmlDeviceGetPowerUsage=timeout)})), 0)
    assert g["lost"].unknown == "timed out"
    assert g["name"].value == "NVIDIA H200"


RECOVERY = "nvmlDeviceGetFieldValues(GPU_RECOVERY_ACTION)"


@pytest.mark.parametrize(
    "reading, expected",
    [
        ([{"fieldId": 230, "nvmlReturn": 0, "value": 0}], "none"),
        ([{"fieldId": 230, "nvmlReturn": 0, "value": 1}], "gpu reset"),
        ([{"fieldId": 230, "nvmlReturn": 0, "value": 4}], "drain and reset"),
        ([{"fieldId": 230, "nvmlReturn": 0, "value": 7}], "system reboot"),
        ([{"fieldId": 230, "nvmlReturn": 3, "value": None}], "not reported"),  # the field's NOT_SUPPORTED
        (NOT_SUPPORTED, "not reported"),
        ({"error": "NVMLError_FunctionNotFound", "msg": ""}, "not reported"),
        ([{"fieldId": 230, "nvmlReturn": 4, "value": None}], ("unknown", "no permission")),
        (
            [{"fieldId": 230, "nvmlReturn": 0, "value": 42}],
            ("unknown", "unexpected value [{'fieldId': 230, 'nvmlReturn': 0, 'value': 42}]"),
        ),
        (
            [{"fieldId": 231, "nvmlReturn": 0, "value": 1}],
            ("unknown", "unexpected value [{'fieldId': 231, 'nvmlReturn': 0, 'value': 1}]"),
        ),
        (
            {"error": "NVMLError_NoPermission", "msg": "Insufficient Permissions"},
            ("unknown", "no permission"),
        ),
    ],
)
def test_recovery_action(reading, expected):
    g = values(member(gpus.probe(host({"0": device(**{RECOVERY: reading})})), 0))
    assert g["recovery_action"] == expected


def test_nvml_timeout_stops_reading_that_gpu():
    dev = {key: {"error": "NVMLError_Timeout", "msg": "did not return"} for key in H200_DEVICE}
    g = member(gpus.probe(host({"0": dev})), 0)
    assert g["name"].unknown == "timed out"
    assert g["nvlink.links"].unknown == "timed out"


def test_gpu_not_recorded_is_unknown():
    facts = gpus.probe(host({"0": device()}, system={**H200_NVML["system"], "nvmlDeviceGetCount": 2}))
    assert facts["gpus.count"].value == 2
    assert member(facts, 0)["name"].known
    assert not any(f.known for k, f in member(facts, 1).items() if k != "index")


def nvlink_states(states: list, stop=None, version: int = 4) -> dict:
    links = {f"nvmlDeviceGetNvLinkState({i})": s for i, s in enumerate(states)}
    if stop is not None:
        links[f"nvmlDeviceGetNvLinkState({len(states)})"] = stop
    first_up = states.index(1) if 1 in states else None
    if first_up is not None:
        links[f"nvmlDeviceGetNvLinkVersion({first_up})"] = version
    return links


def test_nvlink_18_links_one_down():
    states = [1] * 18
    states[3] = 0
    g = member(gpus.probe(host({"0": device(**nvlink_states(states))})), 0)
    assert values({k: g[k] for k in g if k.startswith("nvlink.")}) == {
        "nvlink.links": 18,
        "nvlink.links_up": 17,
        "nvlink.links_down": 1,
        "nvlink.down": [3],
        "nvlink.version": 4,
        # The far ends: no device type recorded, and the remote PCI info the capture read for link 0 is
        # NotSupported (it has no NVLink), so which devices the links reach is not known.
        "nvlink.peers": ("unknown", "not supported"),
    }
    assert g["nvlink.version"].source == "nvml:nvmlDeviceGetNvLinkVersion(0)"


def test_nvlink_12_links_then_not_supported():
    # A100 SXM: 12 links, link 12 answers NotSupported; the first active link is 1.
    states = [0] + [1] * 11
    g = member(gpus.probe(host({"0": device(**nvlink_states(states, stop=NOT_SUPPORTED, version=3))})), 0)
    assert g["nvlink.links"].value == 12
    assert g["nvlink.links_up"].value == 11
    assert g["nvlink.down"].value == [0]
    assert g["nvlink.version"].value == 3


def test_nvlink_all_down():
    g = member(gpus.probe(host({"0": device(**nvlink_states([0, 0], stop=NOT_SUPPORTED))})), 0)
    assert g["nvlink.links_down"].value == 2
    assert g["nvlink.version"].unknown == "no active link"


def test_nvlink_error_other_than_not_supported():
    dev = device(
        **{"nvmlDeviceGetNvLinkState(0)": 1, "nvmlDeviceGetNvLinkState(1)": {"error": "NVMLError_Unknown"}}
    )
    g = member(gpus.probe(host({"0": dev})), 0)
    assert g["nvlink.links"].unknown == "NVML error"
    assert g["nvlink.down"].unknown == "NVML error"


def test_nvlink_never_recorded_is_unknown():
    dev = device()
    del dev["nvmlDeviceGetNvLinkState(0)"]
    g = member(gpus.probe(host({"0": dev})), 0)
    assert not g["nvlink.links"].known


def test_throttle_reasons_fallback_for_older_drivers():
    dev = device(
        nvmlDeviceGetCurrentClocksEventReasons={"error": "NVMLError_FunctionNotFound", "msg": ""},
        nvmlDeviceGetCurrentClocksThrottleReasons=0x44,
    )
    g = member(gpus.probe(host({"0": dev})), 0)
    assert g["clocks.event_reasons"].value == 0x44
    assert g["clocks.event_reason_names"].value == ["SwPowerCap", "HwThermalSlowdown"]
    assert g["clocks.event_reasons"].source == "nvml:nvmlDeviceGetCurrentClocksThrottleReasons"


def test_power_capped_under_load():
    # The capture's reading 8 s into a matmul loop: SwPowerCap at 707 W against 700 W.
    dev = device(nvmlDeviceGetCurrentClocksEventReasons=4, nvmlDeviceGetPowerUsage=707123)
    g = member(gpus.probe(host({"0": dev})), 0)
    assert g["clocks.event_reason_names"].value == ["SwPowerCap"]
    assert g["power.draw_w"].value == 707.123


def test_sysfs_missing_and_older_kernel_format():
    files = dict(H200_SYSFS)
    del files[f"/sys/bus/pci/devices/{GPU}/max_link_speed"]
    files[f"/sys/bus/pci/devices/{GPU}/current_link_speed"] = "16 GT/s\n"
    g = member(
        gpus.probe(
            fake_host(
                nvml_system=H200_NVML["system"],
                nvml_devices={"0": device()},
                files=files,
                read_errors={f"/sys/bus/pci/devices/{GPU}/max_link_speed": "not found"},
            )
        ),
        0,
    )
    assert g["pcie.sysfs_gen_current"].value == 4
    assert g["pcie.sysfs_gen_max"].unknown == "not found"
    assert g["pcie.sysfs_width_max"].value == 16


def test_sysfs_unknown_speed_and_unknown_bus_id():
    files = {**H200_SYSFS, f"/sys/bus/pci/devices/{GPU}/current_link_speed": "Unknown\n"}
    g = member(gpus.probe(host({"0": device()}, files=files)), 0)
    assert g["pcie.sysfs_gen_current"].unknown.startswith("unexpected value")
    g = member(gpus.probe(host({"0": device(nvmlDeviceGetPciInfo=NOT_SUPPORTED)})), 0)
    assert g["pcie.sysfs_width_current"].unknown == "not supported"


# --- how GPUs reach each other ------------------------------------------------------------------------


def peer_readings(p2p: dict, topology: dict) -> dict:
    """NVML keys as the capture script writes them: {peer: status} -> nvmlDeviceGetP2PStatus(peer,READ)."""
    keys = {f"nvmlDeviceGetP2PStatus({j},READ)": v for j, v in p2p.items()}
    keys.update({f"nvmlDeviceGetTopologyCommonAncestor({j})": v for j, v in topology.items()})
    return keys


def test_peer_helpers():
    assert gpus.peer_indices({3: 0, 1: 2, 2: 0}, gpus.p2p_unreadable) == [1]
    assert gpus.peer_indices({1: 50, 2: 40, 3: 50}, gpus.crosses_sockets) == [1, 3]
    assert gpus.p2p_unreadable(5) and not gpus.p2p_unreadable(0)
    with pytest.raises(TypeError):
        gpus.crosses_sockets("SYSTEM")


def test_p2p_and_topology_of_a_four_gpu_two_socket_board():
    # GPUs 0-1 on socket 0, 2-3 on socket 1; P2P reads work within a socket only (3: IOH topology not
    # supported); the common ancestor is a host bridge (30) within a socket, SYSTEM (50) across.
    socket = {0: 0, 1: 0, 2: 1, 3: 1}
    devices = {}
    for i in range(4):
        others = [j for j in range(4) if j != i]
        p2p = {j: 0 if socket[j] == socket[i] else 3 for j in others}
        topo = {j: 30 if socket[j] == socket[i] else 50 for j in others}  # HOSTBRIDGE or SYSTEM
        devices[str(i)] = device(**peer_readings(p2p, topo))
    facts = gpus.probe(host(devices))
    got = {
        i: values({k: f for k, f in member(facts, i).items() if k.startswith(("p2p.", "topology.cross"))})
        for i in range(4)
    }
    assert got == {
        0: {"p2p.no_read": [2, 3], "p2p.no_read_count": 2, "topology.cross_socket": [2, 3],
            "topology.cross_socket_count": 2},
        1: {"p2p.no_read": [2, 3], "p2p.no_read_count": 2, "topology.cross_socket": [2, 3],
            "topology.cross_socket_count": 2},
        2: {"p2p.no_read": [0, 1], "p2p.no_read_count": 2, "topology.cross_socket": [0, 1],
            "topology.cross_socket_count": 2},
        3: {"p2p.no_read": [0, 1], "p2p.no_read_count": 2, "topology.cross_socket": [0, 1],
            "topology.cross_socket_count": 2},
    }  # fmt: skip
    g = member(facts, 0)
    assert g["p2p.no_read"].source == "nvml:nvmlDeviceGetP2PStatus(READ)"
    assert g["topology.cross_socket"].source == "nvml:nvmlDeviceGetTopologyCommonAncestor"
    levels = [member(facts, i)["topology.levels"].value for i in range(4)]
    assert levels == [
        ["X", "PHB", "SYS", "SYS"],
        ["PHB", "X", "SYS", "SYS"],
        ["SYS", "SYS", "X", "PHB"],
        ["SYS", "SYS", "PHB", "X"],
    ]
    assert g["topology.levels"].source == "nvml:nvmlDeviceGetTopologyCommonAncestor"


class CountingHost:
    """A host that counts the NVML calls made through it."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.calls: list[tuple] = []

    def nvml(self, function, device=None, arg=None):
        self.calls.append((function, device, arg))
        return self.inner.nvml(function, device, arg)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_the_topology_of_a_pair_is_asked_once_for_both_facts():
    devices = {str(i): device(**peer_readings({1 - i: 0}, {1 - i: 50})) for i in range(2)}
    counting = CountingHost(host(devices))
    facts = gpus.probe(counting)
    topology = [c for c in counting.calls if c[0] == "nvmlDeviceGetTopologyCommonAncestor"]
    assert sorted(topology) == [("nvmlDeviceGetTopologyCommonAncestor", 0, "1"),
                                ("nvmlDeviceGetTopologyCommonAncestor", 1, "0")]  # fmt: skip
    assert member(facts, 0)["topology.levels"].value == ["X", "SYS"]
    assert member(facts, 0)["topology.cross_socket"].value == [1]


def test_an_nvswitch_board_reaches_every_peer():
    devices = {}
    for i in range(8):
        others = [j for j in range(8) if j != i]
        devices[str(i)] = device(**peer_readings(dict.fromkeys(others, 0), dict.fromkeys(others, 40)))
    facts = gpus.probe(host(devices))
    for i in range(8):
        g = member(facts, i)
        assert (g["p2p.no_read"].value, g["p2p.no_read_count"].value) == ([], 0)
        assert (g["topology.cross_socket"].value, g["topology.cross_socket_count"].value) == ([], 0)


def test_a_peer_that_cannot_be_read_leaves_the_list_unknown_not_partial():
    devices = {
        "0": device(**peer_readings({1: 0, 2: NOT_SUPPORTED}, {1: 40, 2: 40})),
        "1": device(**peer_readings({0: 0, 2: 0}, {0: 40})),  # topology with GPU 2 never recorded
        "2": device(**peer_readings({0: 0, 1: 0}, {0: 40, 1: "garbage"})),
    }
    facts = gpus.probe(host(devices))
    assert member(facts, 0)["p2p.no_read"].unknown == "not supported"
    assert member(facts, 0)["p2p.no_read_count"].unknown == "not supported"
    assert member(facts, 0)["topology.cross_socket"].value == []
    assert member(facts, 1)["p2p.no_read"].value == []
    assert member(facts, 1)["topology.cross_socket"].unknown == "not recorded in snapshot"
    assert member(facts, 2)["topology.cross_socket"].unknown.startswith("unexpected value")
    # The matrix row the same: one pair unread leaves the whole row unknown, never a row with a hole.
    assert member(facts, 0)["topology.levels"].value == ["X", "NODE", "NODE"]
    assert member(facts, 1)["topology.levels"].unknown == "not recorded in snapshot"
    assert member(facts, 2)["topology.levels"].unknown.startswith("unexpected value")


def test_a_lost_peer_does_not_make_this_gpu_lost():
    # Asking GPU 0 about GPU 1 fails with GpuIsLost because GPU 1 fell off the bus; GPU 0 is fine.
    devices = {
        "0": device(**peer_readings({1: LOST}, {1: LOST})),
        "1": {key: LOST for key in H200_DEVICE},
    }
    facts = gpus.probe(host(devices, files={}))
    g = member(facts, 0)
    assert g["name"].value == "NVIDIA H200"
    assert g["p2p.no_read"].unknown == "GPU is lost"
    assert g["topology.cross_socket_count"].unknown == "GPU is lost"
    assert g["topology.levels"].unknown == "GPU is lost"
    assert member(facts, 1)["p2p.no_read"].unknown == "GPU is lost"


# --- what each NVLink link reaches ----------------------------------------------------------------------
# Bus ids from an HGX H100 node's NCCL topology dump (https://github.com/aliyun/SimAI/issues/128, read
# 2026-12-05): GPU dev 5 at 0000:b8:00.0 and dev 7 at 0000:d9:00.0, each with 18 links to four NVSwitches,
# `<nvlink target="0000:08:00.0" count="4"/>`, 06 count 5, 07 count 5, 05 count 4 (tclass 0x068000, a bridge).
HGX_GPUS = ("00000000:B8:00.0", "00000000:D9:00.0")
SWITCH_LINKS = (
    ["00000000:08:00.0"] * 4 + ["00000000:06:00.0"] * 5 + ["00000000:07:00.0"] * 5 + ["00000000:05:00.0"] * 4
)


def pci(bus: str) -> dict:
    """pynvml's nvmlPciInfo_t made plain, as the snapshot stores it (the H200 capture's shape)."""
    legacy = bus[4:]
    return {"bus": int(bus[9:11], 16), "busId": bus, "busIdLegacy": legacy, "device": 0, "domain": 0,
            "pciDeviceId": 0, "pciSubSystemId": 0}  # fmt: skip


def linked(bus: str, remotes: list, types=None, **more) -> dict:
    """An H200 reading changed into a GPU at `bus` whose links are all up, reaching `remotes` (bus ids; a
    dict is an NVML error), with these device types (one number for every link, a list, or an error)."""
    keys = nvlink_states([1] * len(remotes), stop=NOT_SUPPORTED)
    for link, remote in enumerate(remotes):
        keys[f"nvmlDeviceGetNvLinkRemotePciInfo({link})"] = (
            remote if isinstance(remote, dict) else pci(remote)
        )
        kind = types[link] if isinstance(types, list) else types
        if kind is not None:
            keys[f"nvmlDeviceGetNvLinkRemoteDeviceType({link})"] = kind
    return device(nvmlDeviceGetPciInfo=pci(bus), **keys, **more)


def test_an_hgx_gpu_reaches_the_nvswitch_on_every_link():
    facts = gpus.probe(
        host({"0": linked(HGX_GPUS[0], SWITCH_LINKS, types=2)})
    )  # NVML_NVLINK_DEVICE_TYPE_SWITCH
    g = member(facts, 0)
    assert g["nvlink.peers"].value == ["nvswitch"] * 18
    assert g["nvlink.peers"].source == "nvml:nvmlDeviceGetNvLinkRemoteDeviceType"
    assert g["nvlink.links_up"].value == 18


def test_direct_links_name_the_peer_gpu_by_its_bus_id():
    # Two GPUs bridged to each other (as NV# in `nvidia-smi topo -m` without a switch): type GPU (0).
    devices = {
        "0": linked(HGX_GPUS[0], [HGX_GPUS[1]] * 4, types=0),
        "1": linked(HGX_GPUS[1], [HGX_GPUS[0]] * 4, types=0),
    }
    facts = gpus.probe(host(devices))
    assert member(facts, 0)["nvlink.peers"].value == ["0000:d9:00.0"] * 4
    assert member(facts, 1)["nvlink.peers"].value == ["0000:b8:00.0"] * 4
    assert member(facts, 0)["nvlink.peers"].value[0] == member(facts, 1)["bus_id"].value


@pytest.mark.parametrize(
    "no_type",
    [
        NOT_SUPPORTED,
        {"error": "NVMLError_FunctionNotFound", "msg": "Function Not Found"},
        None,  # a snapshot that never asked
        0xFF,  # NVML_NVLINK_DEVICE_TYPE_UNKNOWN
    ],
)
def test_without_a_device_type_the_bus_id_decides(no_type):
    # Two links to the other GPU, the rest to NVSwitches: only a bus id of one of this host's GPUs is a GPU.
    remotes = [HGX_GPUS[1]] * 2 + SWITCH_LINKS[2:]
    devices = {
        "0": linked(HGX_GPUS[0], remotes, types=no_type),
        "1": device(nvmlDeviceGetPciInfo=pci(HGX_GPUS[1])),
    }
    g = member(gpus.probe(host(devices)), 0)
    assert g["nvlink.peers"].value == ["0000:d9:00.0"] * 2 + ["nvswitch"] * 16
    assert all(type(end) is str for end in g["nvlink.peers"].value)


def test_a_bus_id_that_could_be_a_blind_gpus_is_not_guessed():
    remotes = [HGX_GPUS[1]] * 2
    devices = {
        "0": linked(HGX_GPUS[0], remotes, types=NOT_SUPPORTED),
        "1": device(nvmlDeviceGetPciInfo=NOT_SUPPORTED),
    }
    g = member(gpus.probe(host(devices)), 0)
    assert g["nvlink.peers"].unknown == "far end 0000:d9:00.0 not identified: GPU 1's bus id is unknown"


def test_one_unreadable_link_leaves_the_far_ends_unknown():
    remotes = SWITCH_LINKS[:3]
    error = {"error": "NVMLError_Unknown", "msg": "Unknown Error"}
    g = member(gpus.probe(host({"0": linked(HGX_GPUS[0], remotes, types=[2, error, 2])})), 0)
    assert g["nvlink.peers"].unknown == "NVML error"
    assert g["nvlink.links_up"].value == 3  # the link states stand
    g = member(gpus.probe(host({"0": linked(HGX_GPUS[0], [HGX_GPUS[1], error], types=0)})), 0)
    assert g["nvlink.peers"].unknown == "NVML error"
    assert g["nvlink.peers"].source == "nvml:nvmlDeviceGetNvLinkRemotePciInfo"
    g = member(gpus.probe(host({"0": linked(HGX_GPUS[0], SWITCH_LINKS[:2], types=[2, 7])})), 0)
    assert g["nvlink.peers"].unknown == "unexpected value 7 for link 1"


def test_inactive_links_are_not_asked_about():
    keys = nvlink_states([1, 0, 1], stop=NOT_SUPPORTED)
    keys.update({f"nvmlDeviceGetNvLinkRemoteDeviceType({link})": 2 for link in (0, 2)})
    counting = CountingHost(host({"0": device(**keys)}))
    g = member(gpus.probe(counting), 0)
    assert g["nvlink.peers"].value == ["nvswitch", "nvswitch"]
    asked = sorted(c[2] for c in counting.calls if c[0] == "nvmlDeviceGetNvLinkRemoteDeviceType")
    assert asked == ["0", "2"]
    assert not [
        c for c in counting.calls if c[0] == "nvmlDeviceGetNvLinkRemotePciInfo"
    ]  # a switch: no bus id


def test_no_nvlink_no_far_ends_and_an_unreadable_nvlink_no_list():
    assert member(gpus.probe(host({"0": device()})), 0)["nvlink.peers"].value == []
    dev = device(**{"nvmlDeviceGetNvLinkState(0)": {"error": "NVMLError_Unknown"}})
    assert member(gpus.probe(host({"0": dev})), 0)["nvlink.peers"].unknown == "NVML error"


def test_numa_node_unreadable_or_bus_unknown():
    files = {k: v for k, v in H200_SYSFS.items() if not k.endswith("numa_node")}
    g = member(gpus.probe(host({"0": device()}, files=files)), 0)
    assert g["numa_node"].unknown == "not recorded in snapshot"
    g = member(gpus.probe(host({"0": device(nvmlDeviceGetPciInfo=NOT_SUPPORTED)})), 0)
    assert g["numa_node"].unknown == "not supported"
    files = {**H200_SYSFS, f"/sys/bus/pci/devices/{GPU}/numa_node": "1\n"}
    assert member(gpus.probe(host({"0": device()}, files=files)), 0)["numa_node"].value == 1


# --- hostile readings ---------------------------------------------------------------------------------------
# Hostile NVML readings: values no GPU gives are unknown with the reason, never facts that fire rules. A
# driver in a bad state, a vGPU, or a hand-made snapshot can answer with sentinels (0xFFFFFFFF, 2**64-1 for
# "unlimited"), values wrapped through a signed type (a link width of -16, shown as "x-16"), negative
# temperatures or power. Each becomes unknown, "implausible value: ..." and the range expected.

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


# --- through the real pynvml, against the fake NVML (tests/nvmlrig.py) -------------------------------------
# `nvidia-smi topo -m` as printed on real hosts, the GPU columns of each GPU row (cut where the source was).
# An HGX H100 node, https://github.com/HazyResearch/ThunderKittens/issues/167 (read 2026-12-05):
TOPO_HGX_H100 = """
GPU0     X      NV18    NV18    NV18    NV18    NV18    NV18    NV18    0-47,96-143     0               N/A
GPU1    NV18     X      NV18    NV18    NV18    NV18    NV18    NV18    0-47,96-143     0               N/A
GPU2    NV18    NV18     X      NV18    NV18    NV18    NV18    NV18    0-47,96-143     0               N/A
GPU3    NV18    NV18    NV18     X      NV18    NV18    NV18    NV18    0-47,96-143     0               N/A
GPU4    NV18    NV18    NV18    NV18     X      NV18    NV18    NV18    48-95,144-191   1               N/A
GPU5    NV18    NV18    NV18    NV18    NV18     X      NV18    NV18    48-95,144-191   1               N/A
GPU6    NV18    NV18    NV18    NV18    NV18    NV18     X      NV18    48-95,144-191   1               N/A
GPU7    NV18    NV18    NV18    NV18    NV18    NV18    NV18     X      48-95,144-191   1               N/A
"""
# Eight L20 on PCIe, two to a switch, https://github.com/NVIDIA/nccl/issues/1817 (read 2026-12-05; the copy
# read shows the rows of GPUs 0-3 only):
TOPO_PCIE_L20 = """
GPU0     X      PIX     NODE    NODE    SYS     SYS     SYS     SYS     0-47,96-143     0               N/A
GPU1    PIX      X      NODE    NODE    SYS     SYS     SYS     SYS     0-47,96-143     0               N/A
GPU2    NODE    NODE     X      PIX     SYS     SYS     SYS     SYS     0-47,96-143     0               N/A
GPU3    NODE    NODE    PIX      X      SYS     SYS     SYS     SYS     0-47,96-143     0               N/A
"""
# Four H100 joined directly, https://github.com/NVIDIA/nccl/issues/1617 (read 2026-12-05; NIC columns cut):
TOPO_H100_NV6 = """
GPU0     X      NV6     NV6     NV6
GPU1    NV6      X      NV6     NV6
GPU2    NV6     NV6      X      NV6
GPU3    NV6     NV6     NV6      X
"""


def topo_rows(text: str, gpus_: int) -> list[list[str]]:
    """The GPU-to-GPU cells of each row of a `nvidia-smi topo -m` matrix."""
    return [line.split()[1 : 1 + gpus_] for line in text.strip().splitlines()]


def nv_matrix(facts: list[dict]) -> list[list[str]]:
    """What `nvidia-smi topo -m` shows for a pair joined by NVLink, from the GPUs' facts: NV# for # links
    from one GPU whose far end is the other (directly or, for every pair, through the NVSwitches), X on the
    diagonal."""
    out = []
    for i, g in enumerate(facts):
        switched = g["nvlink.peers"].count("nvswitch")
        row = []
        for j, h in enumerate(facts):
            links = switched + g["nvlink.peers"].count(h["bus_id"])
            row.append("X" if i == j else f"NV{links}" if links else g["topology.levels"][j])
        out.append(row)
    return out


def test_an_nvswitch_node_reads_as_its_nvidia_smi_topo(fake_lib):
    facts = gpu_facts(check(fake_lib, "nvswitch-h100-8"))
    assert nv_matrix(facts) == topo_rows(TOPO_HGX_H100, 8)
    assert [g["nvlink.peers"] for g in facts] == [["nvswitch"] * 18] * 8
    # Beneath NV18, the PCIe level: NODE with the GPUs of its own NUMA node (topo -m's NUMA Affinity column,
    # 0 for GPUs 0-3 and 1 for 4-7), SYS with the others.
    numa = [int(line.split()[-2]) for line in TOPO_HGX_H100.strip().splitlines()]
    assert [g["topology.levels"] for g in facts] == [
        ["X" if i == j else "NODE" if numa[i] == numa[j] else "SYS" for j in range(8)] for i in range(8)
    ]


def test_a_driver_that_cannot_name_the_far_end_still_finds_the_nvswitch(fake_lib, tmp_path):
    # No nvmlDeviceGetNvLinkRemoteDeviceType answer: the far ends' bus ids (the NVSwitches') are none of the
    # GPUs', so each is an NVSwitch, as NCCL takes it.
    scenario = tmp_path / "no-type.scn"
    scenario.write_text(
        (SCENARIOS / "nvswitch-h100-8.scn").read_text()
        + "fail nvmlDeviceGetNvLinkRemoteDeviceType NOT_SUPPORTED\n"
    )
    facts = gpu_facts(check(fake_lib, scenario))
    assert nv_matrix(facts) == topo_rows(TOPO_HGX_H100, 8)
    assert [g["nvlink.peers"] for g in facts] == [["nvswitch"] * 18] * 8


def test_directly_joined_gpus_read_as_their_nvidia_smi_topo(fake_lib):
    facts = gpu_facts(check(fake_lib, "h100-nv6-4"))
    assert nv_matrix(facts) == topo_rows(TOPO_H100_NV6, 4)
    buses = [g["bus_id"] for g in facts]
    # Each far end is named as gpus[].bus_id names the GPU there: 6 links to each of the other three.
    assert [sorted(set(g["nvlink.peers"])) for g in facts] == [
        sorted(b for b in buses if b != buses[i]) for i in range(4)
    ]
    assert all(g["nvlink.peers"].count(b) == 6 for g in facts for b in buses if b != g["bus_id"])


def test_a_pcie_node_reads_as_its_nvidia_smi_topo(fake_lib):
    facts = gpu_facts(check(fake_lib, "pcie-l20-8"))
    # No NVLink: topo -m's cells are the PCIe levels themselves.
    assert [g["topology.levels"] for g in facts][:4] == topo_rows(TOPO_PCIE_L20, 8)
    assert nv_matrix(facts)[:4] == topo_rows(TOPO_PCIE_L20, 8)
    # GPUs 4-7 as the scenario mirrors GPUs 0-3 (the source's rows are cut): the matrix is symmetric.
    levels = [g["topology.levels"] for g in facts]
    assert all(levels[i][j] == levels[j][i] for i in range(8) for j in range(8))
    assert levels[4:] == [
        ["SYS"] * 4 + ["X", "PIX", "NODE", "NODE"],
        ["SYS"] * 4 + ["PIX", "X", "NODE", "NODE"],
        ["SYS"] * 4 + ["NODE", "NODE", "X", "PIX"],
        ["SYS"] * 4 + ["NODE", "NODE", "PIX", "X"],
    ]
    assert [g["nvlink.peers"] for g in facts] == [[]] * 8
    assert [g["bus_id"] for g in facts] == [
        f"0000:{b}:00.0" for b in ("12", "13", "47", "48", "91", "92", "c4", "c5")
    ]


@pytest.mark.parametrize("scenario", ["nvswitch-h100-8", "pcie-l20-8", "h100-nv6-4"])
def test_the_topology_replays_from_a_snapshot(fake_lib, tmp_path, scenario):
    # The NVML answers the facts come from are recorded (nvmlDeviceGetNvLinkRemoteDeviceType(L), ...) and
    # replay to the same facts, the NUMA node included (this machine's sysfs, recorded with them).
    archive = tmp_path / "node.tar.gz"
    assert gpudoctor(fake_lib, scenario, "snapshot", "-o", str(archive)).rc == 0
    live = gpudoctor(fake_lib, scenario, "check", "--format", "json").json()
    replayed = gpudoctor(fake_lib, None, "check", "--snapshot", str(archive), "--format", "json").json()
    keys = ("bus_id", "numa_node", "topology.levels", "nvlink.peers")

    def topology(data: dict) -> list[dict]:
        return [{k: flat(g)[k] for k in keys} for g in data["facts"]["gpus"]]

    assert topology(replayed) == topology(live)
    assert topology(live)[0]["topology.levels"][0] == "X"
