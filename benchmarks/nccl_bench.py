"""Time gpudoctor.nccl's prediction for a node of 8 GPUs and 8 RDMA NICs (issue 26: under 10 ms, the
`check` budget's share). Prints medians; never fails.

    python benchmarks/nccl_bench.py [--runs 200]

Two nodes: an HGX H100 (8 GPUs behind NVSwitches, one NIC under each GPU's PCIe switch, as
https://github.com/NVIDIA/nccl/issues/1264 shows it) and a PCIe node of the same size where every GPU pair
crosses the CPU (PXB pairs and SYS pairs, NICs PXB to two GPUs each, as the DGX A100 matrix without NVLink
of https://github.com/rapidsai/ucx-py/issues/749), where every pair goes through the P2P, SHM and NET checks.
"""

from __future__ import annotations

import argparse
import statistics
import time

from gpudoctor.nccl.busbw import busbw_detail
from gpudoctor.nccl.predict import predict
from gpudoctor.nccl.topology import Gpu, Nic, Topology


def hgx_h100() -> Topology:
    gpus = tuple(
        Gpu(i, name="NVIDIA H100 80GB HBM3", numa=i // 4, nvlink_to=(0,) * 8, nvswitch_links=18,
            paths=tuple("X" if j == i else None for j in range(8)), p2p_no_read=(), compute_capability="9.0",
            pcie_gen=5, pcie_width=16)
        for i in range(8)
    )  # fmt: skip
    nics = tuple(
        Nic(f"mlx5_{k}", f"mlx5_{k}/1", "ACTIVE", "InfiniBand", 400.0,
            tuple("PIX" if g == k else "SYS" for g in range(8)))
        for k in range(8)
    )  # fmt: skip
    return Topology(gpus, nics, {}, "2.23.4", True, "nvidia-peermem", (), "intel")


def pcie_node() -> Topology:
    def label(i: int, j: int) -> str:
        return "X" if i == j else "PXB" if i // 2 == j // 2 else "SYS"

    gpus = tuple(
        Gpu(i, name="NVIDIA A100-SXM4-40GB", numa=i // 4, nvlink_to=(0,) * 8, nvswitch_links=0,
            paths=tuple(label(i, j) for j in range(8)), p2p_no_read=(), compute_capability="8.0",
            pcie_gen=4, pcie_width=16)
        for i in range(8)
    )  # fmt: skip
    nics = tuple(
        Nic(f"mlx5_{k}", f"mlx5_{k}/1", "ACTIVE", "InfiniBand", 200.0,
            tuple("PXB" if g // 2 == k // 2 else "SYS" for g in range(8)))
        for k in range(8)
    )  # fmt: skip
    return Topology(gpus, nics, {}, "2.23.4", True, "nvidia-peermem", (), "amd")


def bench(label: str, fn, runs: int) -> None:
    fn()  # warm-up
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    print(f"{label:40s} median {statistics.median(times) * 1000:7.3f} ms   max {max(times) * 1000:7.3f} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    for name, topo in (
        ("HGX H100 (8 GPUs, 8 NICs)", hgx_h100()),
        ("PCIe node (8 GPUs, 8 NICs)", pcie_node()),
    ):
        pred = predict(topo)
        bench(f"predict: {name}", lambda t=topo: predict(t), args.runs)
        bench(f"busbw:   {name}", lambda t=topo, p=pred: busbw_detail(p, t), args.runs)
        print(f"    {len(pred.findings)} findings; busbw {busbw_detail(pred, topo).value} GB/s")


if __name__ == "__main__":
    main()
