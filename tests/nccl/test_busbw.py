"""gpudoctor/nccl/busbw.py: the ring's slowest link on real topologies, and the comparison with bench."""

from __future__ import annotations

import dataclasses

from gpudoctor.facts import Facts, known
from gpudoctor.nccl.busbw import busbw, busbw_detail, compare, measured_allreduce
from gpudoctor.nccl.predict import predict

from .test_predict import _dgxa100_ib, _topo, _with_gpus
from .topo_texts import HGX_H100, RTX4090_X5, RTX5090_X2, RTX5090_X2_P2P, read_p2p


def test_hgx_h100_ring_is_half_the_nvlink_bandwidth():
    # nccl#1264's HGX H100 SXM: NVML names it "NVIDIA H100 80GB HBM3" (the catalogue's h100-sxm row:
    # nvlink_gbs 900, both directions): every link 450 GB/s per direction
    topo = _with_gpus(_topo(HGX_H100), compute_capability="9.0", name="NVIDIA H100 80GB HBM3")
    detail = busbw_detail(predict(topo), topo)
    assert detail.value == 450.0
    assert detail.bottleneck.startswith("GPU0 -> GPU1: NVLink of the NVIDIA H100 SXM5 80GB behind NVSwitch")


def test_unknown_gpu_model_gives_no_figure():
    topo = _topo(HGX_H100)
    detail = busbw_detail(predict(topo), topo)
    assert detail.value is None and "GPU catalogue has no NVLink bandwidth" in detail.unknown


def test_two_5090s_through_shm_are_bounded_by_pcie():
    # club-3090#1140: SHM (PHB) on one socket: the PCIe link, gen 5 x16 for the RTX 5090 in the catalogue
    no_read = read_p2p(RTX5090_X2_P2P)
    topo = _topo(RTX5090_X2, cpu_vendor="amd")
    topo = dataclasses.replace(
        topo,
        gpus=tuple(
            dataclasses.replace(g, p2p_no_read=no_read[g.index], name="NVIDIA GeForce RTX 5090")
            for g in topo.gpus
        ),
    )
    detail = busbw_detail(predict(topo), topo)
    assert detail.value == 63.02 and "shm: PCIe gen 5 x16" in detail.bottleneck


def test_ring_across_sockets_needs_the_cpu_figure():
    # club-3090#46: GPU0 is alone on the other socket, so every ring crosses the sockets through SHM
    topo = _with_gpus(_topo(RTX4090_X5), name="NVIDIA GeForce RTX 4090")
    detail = busbw_detail(predict(topo), topo)
    assert detail.value is None and "CPU vendor" in detail.unknown


def test_dgxa100_without_nvlink_ring_is_limited_by_the_nic():
    # PXB pairs P2P over PCIe gen 4 (31.51 GB/s), the cross-socket pairs over the 200 Gb/s NICs (25 GB/s):
    # any ring through all 8 GPUs leaves a PXB pair at least once, so 25 GB/s
    topo = _with_gpus(_dgxa100_ib("amd"), name="NVIDIA A100-SXM4-40GB")
    pred = predict(topo)
    assert busbw(pred, topo) == 25.0
    assert "the NIC port's rate" in busbw_detail(pred, topo).bottleneck


def _bench(value):
    # "# Avg bus bandwidth    : 6.13096" of the all_reduce_perf run in https://github.com/NVIDIA/nccl/issues/1817
    return Facts(
        {
            "bench.count": known(1, "bench"),
            "bench[0].test": known("allreduce", "bench"),
            "bench[0].status": known("ok", "bench"),
            "bench[0].value": known(value, "bench"),
        }
    )


def test_compare_with_bench():
    topo = _with_gpus(_dgxa100_ib("amd"), name="NVIDIA A100-SXM4-40GB")
    result = compare(busbw_detail(predict(topo), topo), _bench(6.13096))
    assert (result.predicted, result.measured, result.ratio) == (25.0, 6.13096, 0.245)
    assert result.text.startswith("measured 6.13096 GB/s, 25% of the predicted 25 GB/s (limited by GPU")


def test_compare_without_measurement_or_prediction():
    assert measured_allreduce(Facts({})) is None
    topo = _topo(HGX_H100)
    result = compare(busbw_detail(predict(topo), topo), _bench(6.13096))
    assert result.predicted is None and result.text.startswith("no prediction: ")
