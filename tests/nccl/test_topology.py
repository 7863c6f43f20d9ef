"""gpudoctor/nccl/topology.py: the node read from real `nvidia-smi topo -m` matrices and from facts."""

from __future__ import annotations

import pytest

from gpudoctor.facts import Facts, known, unknown
from gpudoctor.nccl.topology import ENV_FACTS, cpu_model, cpu_vendor, from_facts, from_topo_matrix, nccl_path
from gpudoctor.probes import env_pitfalls, system

from .topo_texts import HGX_H100, K80_SOC, RTX4090_X5, RTX4090_X8, read_matrix


def _topo(text, **extra):
    cells, gpus, nics, numa = read_matrix(text)
    return from_topo_matrix(cells, gpus, nics, numa, **extra)


def test_nvswitch_node_reads_as_links_to_an_nvswitch():
    topo = _topo(HGX_H100)
    assert len(topo.gpus) == 8
    # NV18 to each of 7 peers is 126 links, more than the 18 an H100 has: they go to NVSwitches
    assert [g.nvswitch_links for g in topo.gpus] == [18] * 8
    assert topo.gpus[0].nvlink_to == (0,) * 8
    assert [g.numa for g in topo.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert [n.name for n in topo.nics] == [f"NIC{k}" for k in range(10)]
    assert topo.nics[0].paths == ("PIX", "SYS", "SYS", "SYS", "SYS", "SYS", "SYS", "SYS")
    assert topo.nics[0].state is None and topo.nics[0].active is None  # the matrix has no port state


def test_pcie_only_node_keeps_labels_and_no_nvlink():
    topo = _topo(RTX4090_X5)
    assert topo.gpus[1].paths == ("SYS", "X", "PHB", "NODE", "NODE")
    assert topo.gpus[1].nvlink_to == (0,) * 5 and topo.gpus[1].nvswitch_links == 0
    assert topo.nics == ()
    assert topo.gpus[0].numa == 1


def test_nic_rows_and_gpu_columns_agree():
    topo = _topo(RTX4090_X8)
    assert [n.paths[6] for n in topo.nics] == ["PHB", "PHB"]
    assert topo.nics[0].paths[:6] == ("SYS",) * 6


def test_nvidia_smi_labels_as_nccl_path_types():
    # topo.h: PIX, PXB, PHB, SYS mean what nvidia-smi's legend says; NCCL has no NODE (a path through the
    # CPU node is PATH_PHB, paths.cc ncclTopoSetPaths; https://github.com/NVIDIA/nccl/issues/1502)
    assert [nccl_path(x) for x in ("X", "PIX", "PXB", "PHB", "NODE", "SYS", "NV18", None)] == [
        "LOC", "PIX", "PXB", "PHB", "PHB", "SYS", None, None,
    ]  # fmt: skip


# Facts as gpudoctor's probes name them (the vocabulary of gpudoctor/probes/gpus.py and interconnect.py).
# The bus ids are two GPUs of the NCCL_DEBUG=INFO log in https://github.com/NVIDIA/nccl/issues/1817
# ("cudaDev 4 busId 91000", "cudaDev 5 busId 92000"); the port is the mlx5_0 of the topology dump in
# https://github.com/NVIDIA/nccl/issues/1505 (speed="200000"); the NVSwitch links those of an H100
# (NV18, https://github.com/NVIDIA/nccl/issues/1264).
def _facts(**overrides):
    items = {
        "gpus.count": known(2, "nvml"),
        "gpus[0].bus_id": known("00000000:91:00.0", "nvml"),
        "gpus[1].bus_id": known("00000000:92:00.0", "nvml"),
        "gpus[0].nvlink.peers": known(["nvswitch"] * 18, "nvml"),
        "gpus[1].nvlink.peers": known(["nvswitch"] * 18, "nvml"),
        "gpus[0].topology.levels": known(["X", "PXB"], "nvml"),
        "gpus[1].topology.levels": known(["PXB", "X"], "nvml"),
        "gpus[0].p2p.no_read": known([], "nvml"),
        "gpus[1].p2p.no_read": known([], "nvml"),
        "gpus[0].compute_capability": known("9.0", "nvml"),
        "gpus[0].numa_node": known(0, "sysfs"),
        "interconnect.ib_ports.count": known(1, "sysfs"),
        "interconnect.ib_ports[0].name": known("mlx5_0/1", "sysfs"),
        "interconnect.ib_ports[0].state": known("ACTIVE", "sysfs"),
        "interconnect.ib_ports[0].link_layer": known("InfiniBand", "sysfs"),
        "interconnect.ib_ports[0].rate_gbps": known(200, "sysfs"),
        "interconnect.gpu_nics.count": known(2, "sysfs"),
        "interconnect.gpu_nics[0].gpu": known("0000:91:00.0", "sysfs"),
        "interconnect.gpu_nics[0].nic": known("mlx5_0", "sysfs"),
        "interconnect.gpu_nics[0].relation": known("pcie switch", "sysfs"),
        "interconnect.gpu_nics[1].gpu": known("0000:92:00.0", "sysfs"),
        "interconnect.gpu_nics[1].nic": known("mlx5_0", "sysfs"),
        "interconnect.gpu_nics[1].relation": known("other numa node", "sysfs"),
        "interconnect.peermem_loaded": known(True, "/proc/modules"),
        "interconnect.gdr_path": known("nvidia-peermem", "derived"),
        "interconnect.acs.redirect_bridges": known([], "lspci"),
        "nccl.newest": known("2.23.4", "derived"),
        "env.nccl_p2p_disable": unknown("not set", "env"),
        "env.nccl_ib_disable": known("1", "env"),
    }
    items.update(overrides)
    return Facts({k: v for k, v in items.items() if v is not None})


def test_from_facts_reads_every_field():
    topo = from_facts(_facts())
    g0, g1 = topo.gpus
    assert g0.bus_id == "00000000:91:00.0" and g0.numa == 0 and g1.numa is None
    assert g0.nvswitch_links == 18 and g0.nvlink_to == (0, 0)
    assert g0.paths == ("X", "PXB") and g0.p2p_no_read == ()
    assert g0.compute_capability == "9.0" and g1.compute_capability is None
    (nic,) = topo.nics
    assert (nic.name, nic.port, nic.state, nic.link_layer, nic.rate_gbps) == (
        "mlx5_0", "mlx5_0/1", "ACTIVE", "InfiniBand", 200.0,
    )  # fmt: skip
    # the bus id written two ways (NVML 00000000:91:00.0, sysfs 0000:91:00.0) is one GPU
    assert nic.paths == ("PXB", "SYS")
    assert topo.env == {"NCCL_IB_DISABLE": "1"}  # an unset variable is absent, not ""
    assert (topo.nccl_version, topo.peermem, topo.gdr_path, topo.acs_redirect) == (
        "2.23.4", True, "nvidia-peermem", (),
    )  # fmt: skip


def test_from_facts_nvlink_peers_by_bus_id():
    topo = from_facts(
        _facts(
            **{
                "gpus[0].nvlink.peers": known(["00000000:92:00.0"] * 4, "nvml"),
                "gpus[1].nvlink.peers": known(["00000000:91:00.0"] * 4, "nvml"),
            }
        )
    )
    assert topo.gpus[0].nvlink_to == (0, 4) and topo.gpus[0].nvswitch_links == 0


def test_from_facts_unknown_stays_unknown():
    topo = from_facts(
        _facts(
            **{
                "gpus[0].nvlink.peers": None,
                "gpus[0].topology.levels": None,
                "gpus[0].p2p.no_read": unknown("not supported"),
                "interconnect.ib_ports.count": unknown("no permission"),
                "interconnect.acs.redirect_bridges": unknown("needs root"),
            }
        )
    )
    g0 = topo.gpus[0]
    assert g0.nvlink_to is None and g0.nvswitch_links is None  # links_up not read either
    assert g0.paths == ("X", None)
    assert g0.p2p_no_read is None
    assert topo.nics is None and topo.acs_redirect is None


def test_from_facts_older_facts_cross_socket_and_no_links():
    topo = from_facts(
        _facts(
            **{
                "gpus[0].nvlink.peers": None,
                "gpus[0].nvlink.links_up": known(0, "nvml"),
                "gpus[0].topology.levels": None,
                "gpus[0].topology.cross_socket": known([1], "nvml"),
            }
        )
    )
    assert topo.gpus[0].nvlink_to == (0, 0) and topo.gpus[0].nvswitch_links == 0
    assert topo.gpus[0].paths == ("X", "SYS")


def test_older_soc_label_is_sys():
    topo = _topo(K80_SOC)
    assert topo.gpus[0].paths == ("X", "PIX", "SYS", "SYS", "SYS", "SYS")
    assert topo.gpus[2].paths[4] == "PHB"


# --- the CPU and the network plugin, from the system and libraries probes' facts -------------------------
# vendor_id, family and model as /proc/cpuinfo printed them in tests/probes/test_system.py's real captures
# (Intel Xeon 6972P, AMD EPYC 9654P, a Grace's `CPU implementer : 0x41`, which has no vendor_id); the
# machine names are `uname -m`'s (the H200 capture's x86_64; aarch64 on Grace, whose lscpu the same mail
# shows as "Vendor ID: ARM").


@pytest.mark.parametrize(
    "machine, vendor_id, expected",
    [
        ("x86_64", "GenuineIntel", "intel"),
        ("x86_64", "AuthenticAMD", "amd"),
        ("x86_64", "HygonGenuine", "x86"),  # not in NCCL's dictionary: no vendor, P2P up to PXB
        ("x86_64", None, None),
        ("aarch64", None, "arm"),
        ("ppc64le", None, "power"),
        (None, "AuthenticAMD", "amd"),  # only x86 prints vendor_id
        (None, None, None),
        ("riscv64", None, None),
    ],
)
def test_cpu_vendor_as_nccl_tells_it(machine, vendor_id, expected):
    assert cpu_vendor(machine, vendor_id) == expected


@pytest.mark.parametrize(
    "vendor, family, model, expected",
    [
        ("intel", 6, 173, "srp"),  # Xeon 6972P (Granite Rapids): 0xAD >= 0x8F
        ("intel", 6, 143, "srp"),  # Xeon Platinum 8480+ (Sapphire Rapids): 0x8F
        ("intel", 6, 0x55, "skl"),
        ("intel", 6, 0xCF, "erp"),
        ("intel", 6, 0x4F, "bdw"),
        ("intel", None, None, None),
        ("amd", 25, 17, None),  # NCCL gives AMD one figure whatever the model
        ("zhaoxin", 7, 0x5B, "yongfeng"),
    ],
)
def test_cpu_model_class(vendor, family, model, expected):
    assert cpu_model(vendor, family, model) == expected


def test_from_facts_reads_the_cpu_the_nccl_variables_and_the_plugin():
    hpcx = "/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so"  # NVIDIA/nccl#952's `Plugin Path`
    topo = from_facts(
        _facts(
            **{
                "system.machine": known("x86_64", "/proc/sys/kernel/arch"),
                "system.cpu.vendor": known("GenuineIntel", "/proc/cpuinfo"),
                "system.cpu.family": known(6, "/proc/cpuinfo"),
                "system.cpu.model": known(173, "/proc/cpuinfo"),
                "env.nccl_p2p_level": known("NVL", "env:NCCL_P2P_LEVEL"),
                "env.nccl_shm_disable": known("1", "env:NCCL_SHM_DISABLE"),
                "env.nccl_net_gdr_level": unknown("not set", "env:NCCL_NET_GDR_LEVEL"),
                "nccl.net_plugin.found": known(True, hpcx),
                "nccl.net_plugin.path": known(hpcx, hpcx),
            }
        )
    )
    assert (topo.cpu_vendor, topo.cpu_model, topo.net_plugin) == ("intel", "srp", hpcx)
    assert topo.env == {"NCCL_IB_DISABLE": "1", "NCCL_P2P_LEVEL": "NVL", "NCCL_SHM_DISABLE": "1"}


def test_from_facts_no_plugin_and_unknown_ones():
    none = from_facts(_facts(**{"nccl.net_plugin.found": known(False, "search")}))
    assert none.net_plugin == ""
    unread = from_facts(_facts(**{"nccl.net_plugin.found": unknown("the loader cache: no permission")}))
    assert unread.net_plugin is None and unread.cpu_vendor is None and unread.cpu_model is None
    grace = from_facts(
        _facts(
            **{
                "system.machine": known("aarch64", "uname -m"),
                "system.cpu.vendor": unknown("no `vendor_id` in /proc/cpuinfo (printed by x86 CPUs)"),
                "system.cpu.implementer": known("0x41", "/proc/cpuinfo"),
            }
        )
    )
    assert (grace.cpu_vendor, grace.cpu_model) == ("arm", None)


def test_env_facts_are_every_variable_the_system_probe_collects():
    nccl = {v for v in env_pitfalls.VARIABLES if v.startswith("NCCL_")} | set(system.NCCL_PATH_VARIABLES)
    assert set(ENV_FACTS.values()) == nccl
    assert all(name == f"env.{var.lower()}" for name, var in ENV_FACTS.items())
