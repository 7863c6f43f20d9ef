"""gpudoctor/nccl/path_facts.py: the prediction as facts, for rules and the report, on real topologies
(tests/nccl/topo_texts.py, each with its source)."""

from __future__ import annotations

import dataclasses

from gpudoctor.facts import known
from gpudoctor.nccl.busbw import busbw_detail
from gpudoctor.nccl.path_facts import prediction_facts
from gpudoctor.nccl.predict import predict
from gpudoctor.nccl.topology import from_facts, from_topo_matrix

from .test_predict import _ib_facts
from .topo_texts import HGX_H100, RTX5880_X2_ACS, RTX5880_X2_ACS_BRIDGES, read_matrix
from nvmlrig import gpudoctor

ACS_FINDING = (
    "GPU0-GPU1: ACS redirect on 00:03.1, 00:03.2, 00:03.3, 00:03.4, 20:01.1, 20:01.2, 20:01.3, 22:01.0, "
    "22:02.0, 22:03.0 sends their PCIe peer-to-peer traffic up to the CPU root complex (p2p-pcie): slower, "
    "and with the IOMMU on it can hang (NCCL troubleshooting: ACS); fix: disable ACS on those bridges: "
    "`setpci -s <bridge> ECAP_ACS+0x6.w=0000` for each, or in the BIOS"
)


def _facts_of(topo) -> dict:
    pred = predict(topo)
    return {k: (v.value if v.known else ("unknown", v.unknown)) for k, v in prediction_facts(
        pred, busbw_detail(pred, topo)
    ).items()}  # fmt: skip


def _matrix(text, **extra):
    cells, gpus, nics, numa = read_matrix(text)
    return from_topo_matrix(cells, gpus, nics, numa, **extra)


def test_acs_on_two_gpus_is_one_finding_with_its_bridges_and_fix():
    # NVIDIA/nccl#2079: the GPUs' bridges redirect P2P (the text of tests/rules/cases/GD-NCCL-004.yaml)
    topo = _matrix(
        RTX5880_X2_ACS, cpu_vendor="amd", acs_redirect=RTX5880_X2_ACS_BRIDGES, nccl_version="2.25.1"
    )
    topo = dataclasses.replace(topo, gpus=tuple(dataclasses.replace(g, p2p_no_read=()) for g in topo.gpus))
    facts = _facts_of(topo)
    assert facts["nccl_paths.pairs"] == ["GPU0-GPU1: p2p-pcie (PHB)"]
    assert (facts["nccl_paths.findings"], facts["nccl_paths.finding_count"]) == ([ACS_FINDING], 1)
    assert facts["nccl_paths.busbw_gbs"] == ("unknown", "GPU0's PCIe generation and width are not known")


def test_p2p_disabled_on_an_nvswitch_node_names_every_pair_once():
    # NVIDIA/nccl#1264's HGX H100 (NV18 everywhere) with NCCL_P2P_DISABLE=1 left in the environment
    topo = _matrix(HGX_H100, env={"NCCL_P2P_DISABLE": "1"})
    topo = dataclasses.replace(
        topo, gpus=tuple(dataclasses.replace(g, compute_capability="9.0") for g in topo.gpus)
    )
    facts = _facts_of(topo)
    (line,) = facts["nccl_paths.findings"]
    assert line.startswith("every GPU pair (28): NCCL_P2P_DISABLE=1 turns P2P off") and line.endswith(
        "fix: unset NCCL_P2P_DISABLE"
    )
    # the network was not in the matrix: unknown, with the reason, never "no finding"
    assert facts["nccl_paths.net_finding_count"] == ("unknown", "the RDMA ports' states were not read")


def test_the_networks_findings_are_apart_from_the_pairs():
    facts = _facts_of(from_facts(_ib_facts(**{"interconnect.gdr_path": known("none", "derived")})))
    assert facts["nccl_paths.network"] == [
        "GPU0: ib via mlx5_0 (PXB)",
        "GPU1: ib via mlx5_0 (SYS), through GPU0 (PXN)",
    ]
    assert facts["nccl_paths.net_findings"] == [
        "GPU0 -> mlx5_0, GPU1 -> mlx5_0: the NIC is close but cannot reach GPU memory (nvidia-peermem not "
        "loaded, DMA-BUF unusable): IB without GPUDirect RDMA, staged through host memory; fix: `modprobe "
        "nvidia-peermem` (and load it at boot)"
    ]
    assert facts["nccl_paths.net_finding_count"] == 1 and facts["nccl_paths.finding_count"] == 0


def test_through_the_real_bindings_an_hgx_h100_is_nvlink_between_every_pair(fake_lib):
    """The whole way: the fake libnvidia-ml's HGX H100 (tests/fake_nvml/scenarios/nvswitch-h100-8.scn, from
    a real `nvidia-smi topo -m`) read by pynvml, the facts derived, the prediction in the report."""
    paths = gpudoctor(fake_lib, "nvswitch-h100-8", "check", "--format", "json").json()["facts"]["nccl_paths"]
    assert len(paths["pairs"]) == 28 and {p.split(": ", 1)[1] for p in paths["pairs"]} == {"p2p-nvlink (NVL)"}
    assert (paths["findings"], paths["finding_count"], paths["nvls"]) == ([], 0, True)
