"""gpudoctor/nccl/predict.py: NCCL's transport choice on real topologies.

Each topology is a real `nvidia-smi topo -m` (tests/nccl/topo_texts.py, sources there); what the matrix
cannot say (port states, NVML's P2P status, the CPU vendor) is added only from the same thread or from
another real source named beside it. The expected transports follow NCCL's code (NVIDIA/nccl@v2.23.4-1,
the functions named in each test) and, where the thread has an NCCL_DEBUG=INFO log, what NCCL printed.
"""

from __future__ import annotations

import dataclasses

import pytest

from gpudoctor.facts import Facts, known
from gpudoctor.nccl.predict import cpu_bw, disagreements, observed_transport, predict, user_level
from gpudoctor.nccl.topology import Nic, from_facts, from_topo_matrix

from .test_topology import _facts
from .topo_texts import (
    DGX1_V100,
    DGXA100_NO_NVLINK,
    HGX_H100,
    PCIE8_1439,
    PCIE8_1817,
    PCIE8_1817_LOG,
    RTX4090_X5,
    RTX4090_X8,
    RTX5090_X2,
    RTX5090_X2_P2P,
    RTX5880_X2_ACS,
    RTX5880_X2_ACS_BRIDGES,
    read_channels,
    read_matrix,
    read_p2p,
)


def _topo(text, **extra):
    cells, gpus, nics, numa = read_matrix(text)
    return from_topo_matrix(cells, gpus, nics, numa, **extra)


def _with_gpus(topo, **fields):
    return dataclasses.replace(topo, gpus=tuple(dataclasses.replace(g, **fields) for g in topo.gpus))


def _transports(pred):
    return {(p.src, p.dst): p.transport for p in pred.pairs}


# --- inside the node ---------------------------------------------------------------------------------


def test_hgx_h100_every_pair_is_nvlink_through_the_nvswitch():
    # nccl#1264: NV18 everywhere; NCCL's path is NVL through the NVS node (ncclTopoAddNvLinks, SetPaths),
    # within the default P2P level PXB (ncclTopoCheckP2p); H100 = sm90, so NVLS applies (ncclNvlsInit).
    pred = predict(_with_gpus(_topo(HGX_H100), compute_capability="9.0"))
    assert set(_transports(pred).values()) == {"p2p-nvlink"}
    assert {p.path for p in pred.pairs} == {"NVL"}
    p01 = pred.pair(0, 1)
    assert p01.reasons[0].startswith("NVL: NVSwitch (18 links each)")
    assert "P2P level PXB (default): NVL <= PXB" in p01.reasons[1]
    assert "NVML's P2P status was not read" in p01.reasons[2]  # the matrix has no NVML status: said so
    assert pred.nvls is True
    assert pred.findings == ()
    # no port states in a matrix: the network is unknown, not "sockets"
    assert pred.net_name is None and {q.transport for q in pred.network} == {"unknown"}


def test_nvls_unknown_without_compute_capability():
    pred = predict(_topo(HGX_H100))
    assert pred.nvls is None and "compute capability" in pred.nvls_reasons[0]


@pytest.mark.parametrize(
    ("var", "value", "code"),
    [
        # "NCCL_P2P_LEVEL set by environment to LOC": https://github.com/NVIDIA/nccl-tests/issues/228, where
        # an NVSwitch A100 node ran "SHM/direct" until it was unset (the maintainer: "This forces P2P off")
        ("NCCL_P2P_LEVEL", "LOC", "env-p2p-level"),
        ("NCCL_P2P_DISABLE", "1", "env-p2p-disable"),
    ],
)
def test_p2p_turned_off_by_env_on_nvlink_is_a_finding(var, value, code):
    topo = dataclasses.replace(_with_gpus(_topo(HGX_H100), compute_capability="9.0"), env={var: value})
    pred = predict(topo)
    p = pred.pair(0, 4)
    assert f"P2P level LOC ({var}={value}): NVL > LOC" in p.reasons[1]
    assert p.limited_by == (code,)
    # SHM or NET: NCCL would take NET if a NIC within PXB of both were faster than through the CPU, and the
    # matrix gives no port state or speed (ncclTopoCheckNet), so the transport stays unknown
    assert p.transport == "unknown" and "SHM through the CPU is unknown" in p.reasons[-1]
    (finding,) = pred.findings
    assert finding.code == code and len(finding.subjects) == 28  # every unordered pair of 8 GPUs
    assert finding.fix.startswith(f"unset {var}")


def test_p2p_disable_zero_changes_nothing():
    # ncclGetLevel: only strtol(NCCL_P2P_DISABLE) == 1 disables; "export NCCL_P2P_DISABLE=0" is what fixed
    # https://github.com/NVIDIA/nccl-tests/issues/228
    topo = dataclasses.replace(_topo(HGX_H100), env={"NCCL_P2P_DISABLE": "0"})
    assert set(_transports(predict(topo)).values()) == {"p2p-nvlink"}


def test_eight_4090s_across_sockets_use_shm():
    # go-gpuallocator#17: every pair SYS > PXB (ncclTopoCheckP2p: no P2P); the NICs are PHB from GPU6
    # only, so no GPU has a NIC within PXB (ncclTopoCheckNet: never NET) -> SHM (shmCanConnect)
    pred = predict(_topo(RTX4090_X8))
    assert set(_transports(pred).values()) == {"shm"}
    assert {p.path for p in pred.pairs} == {"SYS"}
    assert pred.pair(6, 7).reasons[-1].startswith("SHM through the CPU")
    assert pred.findings == ()  # SHM is NCCL's default for SYS pairs: nothing worse than the hardware allows


def test_five_4090s_phb_node_sys_all_shm_and_sockets():
    # club-3090#46: PHB, NODE (NCCL: PHB) and SYS are all beyond PXB; no NIC in the matrix: no RDMA device,
    # so the network is sockets (net_ib.cc ncclIbInit: "NET/IB : No device found.")
    pred = predict(_topo(RTX4090_X5))
    assert set(_transports(pred).values()) == {"shm"}
    assert pred.pair(1, 2).path == "PHB" and pred.pair(1, 3).path == "PHB" and pred.pair(0, 1).path == "SYS"
    assert pred.net_name == "Socket" and {q.transport for q in pred.network} == {"socket"}


def test_two_5090s_on_amd_p2p_allowed_by_level_but_not_by_the_driver():
    # club-3090#1140: two GPUs on an AMD Threadripper: NCCL raises the P2P level to SYS ("Allow P2P
    # between pairs of GPUs on AMD systems", ncclTopoCheckP2p), PHB <= SYS; but `topo -p2p rw` says GNS
    # (GPU not supported), so NVML's status is not OK and P2P is off -> SHM.
    no_read = read_p2p(RTX5090_X2_P2P)
    topo = _topo(RTX5090_X2, cpu_vendor="amd")
    topo = dataclasses.replace(
        topo, gpus=tuple(dataclasses.replace(g, p2p_no_read=no_read[g.index]) for g in topo.gpus)
    )
    pred = predict(topo)
    p = pred.pair(0, 1)
    assert p.transport == "shm" and p.path == "PHB"
    assert "P2P level SYS (default): PHB <= SYS" in p.reasons[1]
    assert p.reasons[2].startswith("NVML reports P2P not OK from GPU0 to GPU1")
    (finding,) = pred.findings
    assert finding.code == "nvml-p2p" and finding.subjects == ("GPU0-GPU1",)


def test_two_gpus_beyond_pxb_with_unknown_cpu_vendor_is_unknown():
    p = predict(_topo(RTX5090_X2)).pair(0, 1)
    assert p.transport == "unknown" and "CPU vendor is not known" in p.reasons[-1]


def test_pxb_pair_without_nvml_status_is_unknown_not_p2p():
    # ucx-py#749 (DGX A100 matrix with no NVLink): GPU0-GPU1 PXB <= PXB, but NCCL also needs NVML's P2P
    # status OK (ncclTopoCheckP2p), which a matrix does not give
    p = predict(_topo(DGXA100_NO_NVLINK)).pair(0, 1)
    assert p.transport == "unknown" and p.path == "PXB"
    assert "NVML's P2P status was not read" in p.reasons[-1]


def _dgxa100_ib(vendor):
    # The same DGX A100 with what NCCL's own topology dump of a DGX A100 says (https://github.com/NVIDIA/nccl/
    # issues/1505): GPUs at link_speed="16.0 GT/s PCIe" link_width="16", mlx5 NICs at speed="200000" (Mb/s);
    # ports ACTIVE InfiniBand as NCCL's "NET/IB : Using [0]mlx5_0:1/IB" implies.
    topo = _topo(DGXA100_NO_NVLINK, cpu_vendor=vendor)
    topo = _with_gpus(topo, pcie_gen=4, pcie_width=16, p2p_no_read=())
    nics = tuple(
        dataclasses.replace(n, state="ACTIVE", link_layer="InfiniBand", rate_gbps=200.0) for n in topo.nics
    )
    return dataclasses.replace(topo, nics=nics, gdr_path="nvidia-peermem")


def test_cross_socket_pair_goes_over_the_nic_when_it_beats_the_cpu_link():
    # ncclTopoCheckNet: through the CPUs, min(PCIe 24, AMD_BW 16) = 16 GB/s; each GPU reaches its PXB NIC at
    # min(24, 200 Gb/s = 25 GB/s) = 24 > 16, so shmCanConnect says no and NET carries the pair.
    pred = predict(_dgxa100_ib("amd"))
    p = pred.pair(0, 2)
    assert p.transport == "net" and p.path == "SYS"
    assert "NIC faster than through the CPU" in p.reasons[-1]
    assert pred.pair(0, 1).transport == "p2p-pcie"  # PXB, NVML OK, NIC 24 not faster than PCIe 24
    assert pred.findings == ()


def test_cross_socket_pair_on_intel_is_unknown():
    # Intel's inter-socket figure depends on the CPU model (QPI_BW 6 or SKL_QPI_BW 10, topo.h)
    assert predict(_dgxa100_ib("intel")).pair(0, 2).transport == "unknown"


@pytest.mark.parametrize(
    "model, version, transport",
    [
        ("skl", "2.23.4", "net"),  # through the CPUs min(24, SKL_QPI_BW 10) = 10 < 24 to the NIC
        ("srp", "2.23.4", "net"),  # before v2.26 a Sapphire Rapids is a Skylake to NCCL: 10
        ("erp", "2.26.2", "shm"),  # min(24, ERP_QPI_BW 40) = 24, the NIC's 24 is not faster
        ("srp", None, "unknown"),  # 10 or 22 by release
    ],
)
def test_cross_socket_pair_on_intel_by_model(model, version, transport):
    topo = dataclasses.replace(_dgxa100_ib("intel"), cpu_model=model, nccl_version=version)
    assert predict(topo).pair(0, 2).transport == transport


@pytest.mark.parametrize(
    "vendor, model, version, bw",
    [
        ("intel", "bdw", None, 6.0),
        ("intel", "skl", None, 10.0),
        ("intel", "srp", "2.26.2", 22.0),
        ("intel", "erp", "2.25.1", 10.0),
        ("intel", None, None, None),
        ("zhaoxin", "yongfeng", None, 9.0),
        ("amd", None, None, 16.0),
        ("x86", None, None, 5000.0),  # an x86 vendor NCCL does not know keeps LOC_BW
        ("arm", None, None, 6.0),
    ],
)
def test_inter_cpu_bandwidth(vendor, model, version, bw):
    assert cpu_bw(vendor, model, version) == bw


def test_net_disable_intra_keeps_shm():
    topo = _dgxa100_ib("amd")
    topo = dataclasses.replace(topo, env={"NCCL_NET_DISABLE_INTRA": "1"})
    assert predict(topo).pair(0, 2).transport == "shm"


def test_shm_disabled_goes_to_net_and_is_a_finding():
    topo = dataclasses.replace(_topo(RTX4090_X8), env={"NCCL_SHM_DISABLE": "1"})
    pred = predict(topo)
    assert set(_transports(pred).values()) == {"net"}
    assert [f.code for f in pred.findings] == ["env-shm-disable"]


# --- between nodes (facts as the probes give them; see tests/nccl/test_topology.py _facts) -------------


def test_ib_disable_with_an_active_port_falls_back_to_sockets():
    pred = predict(from_facts(_facts()))  # env.nccl_ib_disable = "1", mlx5_0/1 ACTIVE
    assert pred.net_name == "Socket"
    assert pred.net_reasons[0].startswith("NCCL_IB_DISABLE=1: IB is off")
    assert {q.transport for q in pred.network} == {"socket"}
    (finding,) = pred.findings
    assert finding.code == "ib-disabled" and finding.fix == "unset NCCL_IB_DISABLE"


def _ib_facts(**overrides):
    return _facts(**{"env.nccl_ib_disable": None, **overrides})


def test_gdr_on_near_nic_and_pxn_for_the_far_gpu():
    pred = predict(from_facts(_ib_facts()))
    assert pred.net_name == "IB"
    near, far = pred.network
    assert (near.transport, near.nic, near.path, near.gdr) == ("ib-gdr", "mlx5_0", "PXB", True)
    # GPU1 is SYS from mlx5_0 but NVLink-connected (NVSwitch) to GPU0, which is PXB from it: PXN
    # (ncclTopoComputePaths), and the GDR distance is GPU0's (ncclTopoCheckGdr)
    assert (far.transport, far.pxn_via, far.gdr) == ("ib-gdr", 0, True)
    assert pred.findings == ()


def test_far_gpu_without_pxn_loses_gdr():
    topo = dataclasses.replace(from_facts(_ib_facts()), env={"NCCL_PXN_DISABLE": "1"})
    pred = predict(topo)
    far = pred.network[1]
    assert (far.transport, far.gdr, far.path) == ("ib", False, "SYS")
    assert "distance SYS > default PXB" in far.reasons[-1]
    assert [(f.code, f.subjects) for f in pred.findings] == [("distance", ("GPU1 -> mlx5_0",))]


def test_a_far_nic_is_ib_without_gdr_even_when_peermem_is_unknown():
    # ncclTopoCheckGdr turns GPUDirect RDMA off by distance whatever the NIC can reach: with the GDR path
    # unknown, the near GPU stays unknown, the far one (PXN off) is IB without it
    topo = dataclasses.replace(from_facts(_ib_facts()), env={"NCCL_PXN_DISABLE": "1"}, gdr_path=None)
    near, far = predict(topo).network
    assert (near.transport, near.reasons[-1]) == (
        "unknown",
        "whether the NIC can reach GPU memory is unknown",
    )
    assert (far.transport, far.gdr) == ("ib", False) and "distance SYS > default PXB" in far.reasons[-1]


def test_peermem_missing_means_ib_without_gdr():
    pred = predict(from_facts(_ib_facts(**{"interconnect.gdr_path": known("none", "derived")})))
    assert {q.transport for q in pred.network} == {"ib"}
    (finding,) = pred.findings
    assert finding.code == "peermem" and finding.fix.startswith("`modprobe nvidia-peermem`")


def test_port_down_means_sockets():
    pred = predict(from_facts(_ib_facts(**{"interconnect.ib_ports[0].state": known("DOWN", "sysfs")})))
    assert pred.net_name == "Socket" and "no RDMA port is ACTIVE (mlx5_0/1)" in pred.net_reasons[0]
    assert [f.code for f in pred.findings] == ["ports-down"]


def test_gpus_nearest_port_down_uses_a_farther_one():
    topo = from_facts(_ib_facts())
    # a second port, as the DGX A100 dump in nccl#1505 lists mlx5_0 and mlx5_1 beside one GPU: mlx5_0 down
    nics = (
        dataclasses.replace(topo.nics[0], state="DOWN"),
        Nic("mlx5_1", "mlx5_1/1", "ACTIVE", "InfiniBand", 200.0, ("SYS", "SYS")),
    )
    pred = predict(dataclasses.replace(topo, nics=nics))
    q = pred.network[0]
    assert (
        q.nic == "mlx5_1" and q.transport == "ib" and q.reasons[0] == "its nearest NIC mlx5_0/1 (PXB) is DOWN"
    )
    assert [f.code for f in pred.findings] == ["nic-down", "distance"]


def test_a_down_nearest_port_is_a_finding_even_where_the_other_ports_distance_is_unknown():
    topo = from_facts(_ib_facts())
    nics = (
        dataclasses.replace(topo.nics[0], state="DOWN"),
        Nic("mlx5_1", "mlx5_1/1", "ACTIVE", "InfiniBand", 200.0, (None, None)),
    )
    pred = predict(dataclasses.replace(topo, nics=nics))
    q = pred.network[0]
    assert (q.transport, q.reasons[0]) == ("unknown", "its nearest NIC mlx5_0/1 (PXB) is DOWN")
    assert q.limited_by == ("nic-down",) and [f.code for f in pred.findings] == ["nic-down"]


def test_rdma_devices_not_read_is_unknown():
    facts = _facts(**{"interconnect.ib_ports.count": None, "env.nccl_ib_disable": None})
    pred = predict(from_facts(facts))
    assert pred.net_name is None and pred.net_reasons == ("the RDMA devices were not read",)


def test_nccl_net_plugin_is_unknown():
    topo = dataclasses.replace(from_facts(_ib_facts()), env={"NCCL_NET": "AWS Libfabric"})
    assert predict(topo).net_name is None


# The HPC-X plugin where NVIDIA/nccl#952's log found it (`Plugin Path : ...`); that log then printed
# `P2P plugin IBext` and used NET/Socket between nodes, in a thread titled "NCCL INFO NET/IB : No device
# found" (tests/nccl/data/nccl952_ib_nodev_socket).
HPCX_PLUGIN = "/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so"


def test_a_network_plugin_found_comes_first_and_is_not_modelled():
    pred = predict(
        from_facts(
            _ib_facts(
                **{
                    "nccl.net_plugin.found": known(True, HPCX_PLUGIN),
                    "nccl.net_plugin.path": known(HPCX_PLUGIN, HPCX_PLUGIN),
                }
            )
        )
    )
    assert pred.net_name is None and {q.transport for q in pred.network} == {"unknown"}
    (why,) = pred.net_reasons
    assert why.startswith(
        f"NCCL loads the network plugin {HPCX_PLUGIN} first and uses it when it finds a device"
    )
    # what NCCL falls back to when the plugin has no device: its own IB on the ACTIVE port
    assert "; without one, IB: 1 ACTIVE RDMA port(s) (IB): 'Using network IB'" in why
    assert pred.findings == ()


def test_a_plugin_without_rdma_ports_falls_back_to_sockets_as_nccl952s_log_did():
    facts = _ib_facts(
        **{
            "nccl.net_plugin.found": known(True, HPCX_PLUGIN),
            "nccl.net_plugin.path": known(HPCX_PLUGIN, HPCX_PLUGIN),
            "interconnect.ib_ports.count": known(0, "sysfs"),
        }
    )
    (why,) = predict(from_facts(facts)).net_reasons
    assert why.endswith(
        "without one, Socket: no RDMA device: 'NET/IB : No device found.' "
        "[NVIDIA/nccl@v2.23.4-1:src/transport/net_ib.cc:ncclIbInit]"
    )


def test_no_plugin_on_the_library_path_leaves_ib_without_the_caveat():
    absent = predict(from_facts(_ib_facts(**{"nccl.net_plugin.found": known(False, "search")})))
    assert absent.net_name == "IB"
    assert absent.net_reasons[-1].endswith(
        "'Using network IB' [NVIDIA/nccl@v2.23.4-1:src/net.cc:ncclNetInit]"
    )
    unread = predict(from_facts(_ib_facts()))  # nccl.net_plugin.* not collected
    assert unread.net_name == "IB"
    assert unread.net_reasons[-1].endswith("whether one is on the library path is not known")


def test_nccl_net_ib_takes_nccls_own_ib_over_a_plugin():
    facts = _ib_facts(
        **{
            "nccl.net_plugin.found": known(True, HPCX_PLUGIN),
            "nccl.net_plugin.path": known(HPCX_PLUGIN, HPCX_PLUGIN),
            "env.nccl_net": known("IB", "env:NCCL_NET"),
        }
    )
    assert predict(from_facts(facts)).net_name == "IB"


def test_nccl_net_naming_a_plugin_found_is_that_plugin_or_an_error():
    facts = _ib_facts(
        **{
            "nccl.net_plugin.found": known(True, HPCX_PLUGIN),
            "nccl.net_plugin.path": known(HPCX_PLUGIN, HPCX_PLUGIN),
            "env.nccl_net": known("IBext", "env:NCCL_NET"),
        }
    )
    pred = predict(from_facts(facts))
    assert pred.net_name is None
    assert pred.net_reasons[0].startswith(
        f"NCCL_NET=IBext names a network plugin: NCCL uses the plugin {HPCX_PLUGIN} if that is its name, "
        "else stops with 'network IBext not found'"
    )


def test_nccl_net_naming_a_plugin_that_is_not_there_stops_nccl():
    # the CSCS documentation's setting (NCCL_NET="AWS Libfabric": "if the plugin can not be found,
    # applications will fail to start", https://github.com/msimberg/cscs-docs/pull/1)
    facts = _ib_facts(
        **{
            "nccl.net_plugin.found": known(False, "search"),
            "env.nccl_net": known("AWS Libfabric", "env:NCCL_NET"),
        }
    )
    pred = predict(from_facts(facts))
    assert pred.net_name is None
    assert "NCCL stops with 'network AWS Libfabric not found'" in pred.net_reasons[0]


# --- NCCL's environment parsing (paths.cc ncclGetLevel, misc/param.cc ncclLoadParam) ------------------


@pytest.mark.parametrize(
    ("env", "version", "expected"),
    [
        ({"NCCL_P2P_DISABLE": "1"}, "2.23.4", ("LOC", "NCCL_P2P_DISABLE")),
        ({"NCCL_P2P_DISABLE": "0x1"}, "2.23.4", ("LOC", "NCCL_P2P_DISABLE")),  # strtol base 0
        ({"NCCL_P2P_DISABLE": "true"}, "2.23.4", (None, None)),  # strtol("true") = 0: not disabled
        ({"NCCL_P2P_LEVEL": "PHB"}, "2.23.4", ("PHB", "NCCL_P2P_LEVEL")),
        ({"NCCL_P2P_LEVEL": "2"}, "2.23.4", ("PXB", "NCCL_P2P_LEVEL")),  # levelsOldToNew
        ({"NCCL_P2P_LEVEL": "9"}, "2.23.4", ("SYS", "NCCL_P2P_LEVEL")),  # capped at maxOldLevel
        ({"NCCL_P2P_LEVEL": "NODE"}, "2.23.4", (None, None)),  # not an NCCL path name: ignored
        ({"NCCL_P2P_LEVEL": "C2C"}, "2.23.4", (None, None)),  # C2C came in v2.26
        ({"NCCL_P2P_LEVEL": "C2C"}, "2.29.7", ("C2C", "NCCL_P2P_LEVEL")),
        ({"NCCL_P2P_DISABLE": "1", "NCCL_P2P_LEVEL": "SYS"}, "2.23.4", ("LOC", "NCCL_P2P_DISABLE")),
    ],
)
def test_user_level(env, version, expected):
    assert user_level(env, "NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL", version) == expected


def test_matrix_and_finding_line():
    pred = predict(dataclasses.replace(_topo(RTX4090_X8), env={"NCCL_SHM_DISABLE": "1"}))
    assert pred.matrix()[0][:3] == ["X", "net", "net"]
    assert pred.findings[0].line().startswith("GPU0-GPU1, GPU0-GPU2, ")
    assert pred.findings[0].line().endswith("Fix: unset NCCL_SHM_DISABLE")


def test_facts_without_gpus_predict_nothing():
    pred = predict(from_facts(Facts({"gpus.count": known(0, "nvml")})))
    assert pred.pairs == () and pred.network == ()


# --- ACS, NVB, PXN on real nodes ---------------------------------------------------------------------


def test_acs_redirect_under_p2p_is_the_finding():
    # nccl#2079: two GPUs (NODE = NCCL's PHB) on an AMD CPU: P2P level SYS (ncclTopoCheckP2p), NCCL used
    # P2P (NCCL_P2P_DISABLE=1 alone ended the deadlock, so NVML's status was OK) and ACS redirect on the
    # GPP bridges sent it through the IOMMU: a hang. gpudoctor predicts P2P and names ACS and its fix.
    topo = _topo(RTX5880_X2_ACS, cpu_vendor="amd", acs_redirect=RTX5880_X2_ACS_BRIDGES, nccl_version="2.25.1")
    topo = _with_gpus(topo, p2p_no_read=())
    pred = predict(topo)
    p = pred.pair(0, 1)
    assert (p.transport, p.path) == ("p2p-pcie", "PHB")
    assert p.reasons[-1].startswith("ACS redirects P2P on 00:03.1, 00:03.2")
    (finding,) = pred.findings
    assert finding.code == "acs" and finding.subjects == ("GPU0-GPU1",)
    assert finding.fix.startswith("disable ACS on those bridges: `setpci -s <bridge> ECAP_ACS+0x6.w=0000`")


def test_dgx1_hybrid_cube_mesh_nvb_through_one_gpu():
    # nccl-tests#29: GPU0-GPU5 has no NVLink of its own (SYS) but GPU0-GPU1 NV2 + GPU1-GPU5 NV1 and
    # GPU0-GPU4 NV1 + GPU4-GPU5 NV2: PATH_NVB, one NVLink hop through a GPU (ncclTopoSetPaths "allow
    # routing through a GPU only as 1 hop"), P2P within PXB (ncclTopoCheckP2p)
    pred = predict(_topo(DGX1_V100))
    assert set(_transports(pred).values()) == {"p2p-nvlink"}
    assert pred.pair(0, 1).path == "NVL" and pred.pair(0, 5).path == "NVB"
    assert pred.pair(0, 5).via in (1, 4)
    # with NVB off the same pair is SYS through the CPUs: no P2P
    off = predict(dataclasses.replace(_topo(DGX1_V100), env={"NCCL_NVB_DISABLE": "1"})).pair(0, 5)
    assert off.path == "SYS" and "P2P level PXB (default): SYS > PXB" in off.reasons[1]


def test_dgx1_net_pxn_and_far_gpus():
    # nccl-tests#29 with GPUDirect RDMA on (the thread's "I enable the GPU Direct RDMA"): mlx5_0/1 are PIX
    # from GPU2/3, NODE (PHB) from GPU0/1 and SYS from GPU4-7. GPU0 and GPU6 reach mlx5_0 through their
    # NVLink peer GPU2 (PXN, ncclTopoComputePaths), GPU7 through GPU3; GPU4 and GPU5 have no NVLink peer
    # near a NIC: IB without GDR.
    topo = _topo(DGX1_V100, gdr_path="nvidia-peermem")
    nics = tuple(dataclasses.replace(n, state="ACTIVE", link_layer="InfiniBand") for n in topo.nics)
    pred = predict(dataclasses.replace(topo, nics=nics))
    by_gpu = {q.gpu: q for q in pred.network}
    assert (by_gpu[2].transport, by_gpu[2].path, by_gpu[2].pxn_via) == ("ib-gdr", "PIX", None)
    assert (by_gpu[0].transport, by_gpu[0].path, by_gpu[0].pxn_via) == ("ib-gdr", "PHB", 2)
    assert (by_gpu[6].transport, by_gpu[6].pxn_via, by_gpu[7].pxn_via) == ("ib-gdr", 2, 3)
    assert (by_gpu[4].transport, by_gpu[4].path, by_gpu[4].gdr) == ("ib", "SYS", False)
    (finding,) = pred.findings
    assert finding.code == "distance" and finding.subjects == ("GPU4 -> mlx5_0", "GPU5 -> mlx5_0")
    # before v2.12.7 there is no PXN: GPU0 loses GPUDirect RDMA too
    old = predict(dataclasses.replace(topo, nics=nics, nccl_version="2.11.4"))
    assert old.network[0].transport == "ib" and old.network[0].pxn_via is None


def test_roce_port_is_ib_transport():
    # "NET/IB : Using [0]mlx5_0:1/RoCE ... Using network IB" (https://github.com/NVIDIA/nccl/issues/1358):
    # an ACTIVE port with link layer Ethernet is an NCCL IB device (net_ib.cc ncclIbInit)
    facts = _ib_facts(**{"interconnect.ib_ports[0].link_layer": known("Ethernet", "sysfs")})
    pred = predict(from_facts(facts))
    assert pred.net_name == "IB" and "(RoCE)" in pred.net_reasons[0]
    assert pred.network[0].transport == "ib-gdr"


def test_nothing_collected_predicts_nothing_and_does_not_fail():
    pred = predict(from_facts(Facts({})))
    assert (pred.pairs, pred.network, pred.findings) == ((), (), ())
    assert pred.net_name is None and pred.nvls is False


# --- against NCCL's own log -------------------------------------------------------------------------


def test_prediction_agrees_with_nccls_log_on_a_pcie_node():
    # nccl#1817: the cross-socket pairs (SYS) NCCL ran "via SHM/direct/direct"; gpudoctor predicts SHM for
    # them (SYS > PXB, ncclTopoCheckP2p; no NIC, so no NET) from the rows the thread shows.
    pred = predict(_topo(PCIE8_1817))
    observed = read_channels(PCIE8_1817_LOG)
    assert observed == {(0, 4): "SHM/direct/direct", (3, 7): "SHM/direct/direct",
                        (1, 5): "SHM/direct/direct", (2, 6): "SHM/direct/direct"}  # fmt: skip
    assert disagreements(pred, observed) == ()
    # the rows the excerpt cuts stay unknown rather than guessed
    assert pred.pair(4, 0).transport == "unknown"


def test_a_disagreement_is_reported_not_hidden():
    # The same log against the node with NCCL_P2P_LEVEL=SYS, which would have made those pairs P2P
    pred = predict(dataclasses.replace(_topo(PCIE8_1817), env={"NCCL_P2P_LEVEL": "SYS"}))
    found = disagreements(pred, read_channels(PCIE8_1817_LOG))
    assert found[0].startswith("GPU0 -> GPU4: predicted unknown (NVML's P2P status was not read")
    assert found[0].endswith("NCCL used shm (SHM/direct/direct)")


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        # https://github.com/NVIDIA/nccl/issues/1817
        ("Channel 00/0 : 7[7] -> 6[6] via P2P/direct pointer", "p2p"),
        # https://github.com/NVIDIA/nccl/issues/1189
        ("Channel 00/0 : 3[1] -> 2[0] via P2P/CUMEM", "p2p"),
        ("Channel 00/0 : 1[1] -> 3[1] [receive] via NET/IB/2/GDRDMA", "net"),
        # https://github.com/NVIDIA/nccl-tests/issues/166
        ("Channel 14/0 : 15[7] -> 0[0] [send] via NET/Socket/0", "net"),
        ("Channel 09 : 6[6] -> 7[7] via SHM/direct/direct", "shm"),
        # https://github.com/NVIDIA/nccl/issues/1190 (before v2.8: bus ids in the brackets)
        ("Channel 00 : 1[89000] -> 0[3d000] via direct shared memory", "shm"),
    ],
)
def test_observed_transport(line, kind):
    assert observed_transport(line.split(" via ", 1)[1]) == kind


def test_pcie_switch_pairs_p2p_the_rest_shm():
    # nccl#1439: PIX pairs within PXB -> P2P once NVML says OK (ncclTopoCheckP2p); PHB and SYS -> SHM
    topo = _with_gpus(_topo(PCIE8_1439), p2p_no_read=())
    pred = predict(topo)
    t = _transports(pred)
    assert [t[(0, j)] for j in range(1, 8)] == ["p2p-pcie", "shm", "shm", "shm", "shm", "shm", "shm"]
    assert sum(v == "p2p-pcie" for v in t.values()) == 8  # 4 PIX pairs, both directions
    assert pred.findings == ()
    # NCCL_P2P_DISABLE=1 (what nccl#667's user set to get past the hang) turns the PIX pairs to SHM
    off = predict(dataclasses.replace(topo, env={"NCCL_P2P_DISABLE": "1"}))
    assert set(_transports(off).values()) == {"shm"}
    (finding,) = off.findings
    assert finding.code == "env-p2p-disable"
    assert finding.subjects == ("GPU0-GPU1", "GPU2-GPU3", "GPU4-GPU5", "GPU6-GPU7")
