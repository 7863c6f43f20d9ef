# ruff: noqa: E501 - the matrices are real nvidia-smi output, kept whole
"""Real `nvidia-smi topo -m` outputs from public issue threads, verbatim but for the legend and the
lines after the matrix (cut), and readers for the tests: read_matrix (their cells, by
gpudoctor/nccl/topo_text.py), read_channels (an NCCL_DEBUG=INFO excerpt, by gpudoctor/nccl/log.py), read_p2p."""

from __future__ import annotations

from gpudoctor.nccl.log import parse_log
from gpudoctor.nccl.topo_text import parse_topo

# https://github.com/NVIDIA/nccl/issues/1264 (HGX H100 SXM, "it is NV18 across all to all gpus within a
# node"), read 2026-12-05; NIC rows cut after NIC2 (the excerpt ends there), GPU rows complete.
HGX_H100 = """\
\tGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tGPU5\tGPU6\tGPU7\tNIC0\tNIC1\tNIC2\tNIC3\tNIC4\tNIC5\tNIC6\tNIC7\tNIC8\tNIC9\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID
GPU0\t X \tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tPIX\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\t0-55,112-167\t0\t\tN/A
GPU1\tNV18\t X \tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tSYS\tPIX\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\t0-55,112-167\t0\t\tN/A
GPU2\tNV18\tNV18\t X \tNV18\tNV18\tNV18\tNV18\tNV18\tSYS\tSYS\tPIX\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\t0-55,112-167\t0\t\tN/A
GPU3\tNV18\tNV18\tNV18\t X \tNV18\tNV18\tNV18\tNV18\tSYS\tSYS\tSYS\tSYS\tSYS\tPIX\tSYS\tSYS\tSYS\tSYS\t0-55,112-167\t0\t\tN/A
GPU4\tNV18\tNV18\tNV18\tNV18\t X \tNV18\tNV18\tNV18\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tPIX\tSYS\tSYS\tSYS\t56-111,168-223\t1\t\tN/A
GPU5\tNV18\tNV18\tNV18\tNV18\tNV18\t X \tNV18\tNV18\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tPIX\tSYS\tSYS\t56-111,168-223\t1\t\tN/A
GPU6\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\t X \tNV18\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tPIX\tSYS\t56-111,168-223\t1\t\tN/A
GPU7\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\t X \tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tPIX\t56-111,168-223\t1\t\tN/A
NIC0\tPIX\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\t X \tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\t\t\t\t
NIC1\tSYS\tPIX\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\t X \tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\t\t\t\t
NIC2\tSYS\tSYS\tPIX\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\t X \tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\t\t\t\t
"""

# https://github.com/NVIDIA/go-gpuallocator/issues/17 ("a 8 cards 4090 server"), read 2026-12-05.
RTX4090_X8 = """\
\tGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tGPU5\tGPU6\tGPU7\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID
GPU0\t X \tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\t0-55,112-167\t0\t\tN/A
GPU1\tSYS\t X \tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\t0-55,112-167\t0\t\tN/A
GPU2\tSYS\tSYS\t X \tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\t0-55,112-167\t0\t\tN/A
GPU3\tSYS\tSYS\tSYS\t X \tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\t0-55,112-167\t0\t\tN/A
GPU4\tSYS\tSYS\tSYS\tSYS\t X \tSYS\tSYS\tSYS\tSYS\tSYS\t56-111,168-223\t1\t\tN/A
GPU5\tSYS\tSYS\tSYS\tSYS\tSYS\t X \tSYS\tSYS\tSYS\tSYS\t56-111,168-223\t1\t\tN/A
GPU6\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\t X \tSYS\tPHB\tPHB\t56-111,168-223\t1\t\tN/A
GPU7\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\t X \tSYS\tSYS\t56-111,168-223\t1\t\tN/A
NIC0\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tPHB\tSYS\t X \tPIX
NIC1\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tPHB\tSYS\tPIX\t X
"""

# https://github.com/noonghunna/club-3090/issues/46 ("[bench] Dual 4090": five GPUs), read 2026-12-05.
RTX4090_X5 = """\
        GPU0    GPU1    GPU2    GPU3    GPU4    CPU Affinity    NUMA Affinity   GPU NUMA ID
GPU0     X      SYS     SYS     SYS     SYS     8-15,24-31      1               N/A
GPU1    SYS      X      PHB     NODE    NODE    0-7,16-23       0               N/A
GPU2    SYS     PHB      X      NODE    NODE    0-7,16-23       0               N/A
GPU3    SYS     NODE    NODE     X      PHB     0-7,16-23       0               N/A
GPU4    SYS     NODE    NODE    PHB      X      0-7,16-23       0               N/A
"""

# https://github.com/noonghunna/club-3090/issues/1140 ("2x 5090 + DDR4 3200 + 3975x TR", an AMD
# Threadripper), read 2026-12-05; with its `nvidia-smi topo -p2p rw`: GNS = GPU not supported.
RTX5090_X2 = """\
\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID
GPU0\t X \tPHB\t0-63\t0\t\tN/A
GPU1\tPHB\t X \t0-63\t0\t\tN/A
"""
RTX5090_X2_P2P = """\
 \tGPU0\tGPU1\t
 GPU0\tX\tGNS\t
 GPU1\tGNS\tX\t
"""

# https://github.com/rapidsai/ucx-py/issues/749 ("Given the DGX-A100 has several mlx5 devices"; no
# NVLink in the matrix: GPU pairs PXB/SYS), read 2026-12-05; NIC rows cut after mlx5_0 (excerpt).
DGXA100_NO_NVLINK = """\
\tGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tGPU5\tGPU6\tGPU7\tmlx5_0\tmlx5_1\tmlx5_2\tmlx5_3\tmlx5_4\tmlx5_5\tmlx5_6\tmlx5_7\tmlx5_8\tmlx5_9\tmlx5_10\tmlx5_11\tCPU Affinity\tNUMA Affinity
GPU0\t X \tPXB\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tPXB\tPXB\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\t112-127,240-255\t6-7
GPU1\tPXB\t X \tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tPXB\tPXB\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\t112-127,240-255\t6-7
GPU2\tSYS\tSYS\t X \tPXB\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tPXB\tPXB\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\t112-127,240-255\t6-7
GPU3\tSYS\tSYS\tPXB\t X \tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tPXB\tPXB\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\t112-127,240-255\t6-7
GPU4\tSYS\tSYS\tSYS\tSYS\t X \tPXB\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tPXB\tPXB\tSYS\tSYS\tSYS\tSYS\t112-127,240-255\t6-7
GPU5\tSYS\tSYS\tSYS\tSYS\tPXB\t X \tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tPXB\tPXB\tSYS\tSYS\tSYS\tSYS\t112-127,240-255\t6-7
GPU6\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\t X \tPXB\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tPXB\tPXB\tSYS\tSYS\t112-127,240-255\t6-7
GPU7\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tPXB\t X \tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tPXB\tPXB\tSYS\tSYS\t112-127,240-255\t6-7
mlx5_0\tPXB\tPXB\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\t X \tPXB\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\t\t
"""

# https://github.com/NVIDIA/nccl/issues/2079 ("ncclAllReduce deadlocks on 2x RTX 5880 Ada (PCIe PHB
# topology, no NVLink)"), read 2026-12-05: NCCL 2.25.1; the fix was "disabling ACS ... on the AMD PCIe
# root complex bridges ... behind AMD Starship/Matisse GPP bridges that had ACS enabled (ACSCtl: 0x001d =
# SrcValid+, ReqRedir+, CmpltRedir+, UpstreamFwd+)", for bdf in 00:03.1 00:03.2 00:03.3 00:03.4 20:01.1
# 20:01.2 20:01.3 22:01.0 22:02.0 22:03.0; and NCCL_P2P_DISABLE=1 alone also ended the deadlock.
RTX5880_X2_ACS = """\
        GPU0    GPU1    CPU Affinity    NUMA Affinity
GPU0     X      NODE    0-63            0
GPU1    NODE     X      0-63            0
"""
RTX5880_X2_ACS_BRIDGES = (
    "00:03.1", "00:03.2", "00:03.3", "00:03.4", "20:01.1", "20:01.2", "20:01.3", "22:01.0", "22:02.0", "22:03.0",
)  # fmt: skip

# https://github.com/NVIDIA/nccl-tests/issues/29 (DGX-1 style V100 hybrid cube mesh, "I enable the GPU
# Direct RDMA and the performance doubled"), read 2026-12-05; the GPU7 row is cut in the thread after its
# CPU Affinity begins, every GPU and NIC column is there.
DGX1_V100 = """\
        GPU0    GPU1    GPU2    GPU3    GPU4    GPU5    GPU6    GPU7    mlx5_0  mlx5_1  CPU Affinity
GPU0     X      NV2     NV2     NV1     NV1     SYS     SYS     SYS     NODE    NODE    0-23,48-71
GPU1    NV2      X      NV1     NV2     SYS     NV1     SYS     SYS     NODE    NODE    0-23,48-71
GPU2    NV2     NV1      X      NV1     SYS     SYS     NV2     SYS     PIX     PIX     0-23,48-71
GPU3    NV1     NV2     NV1      X      SYS     SYS     SYS     NV2     PIX     PIX     0-23,48-71
GPU4    NV1     SYS     SYS     SYS      X      NV2     NV2     NV1     SYS     SYS     24-47,72-95
GPU5    SYS     NV1     SYS     SYS     NV2      X      NV1     NV2     SYS     SYS     24-47,72-95
GPU6    SYS     SYS     NV2     SYS     NV2     NV1      X      NV1     SYS     SYS     24-47,72-95
GPU7    SYS     SYS     SYS     NV2     NV1     NV2     NV1      X      SYS     SYS     24-47,
"""

# https://github.com/NVIDIA/nccl/issues/19 ("Testing nccl with a difficult topology", K80s, an older
# nvidia-smi that wrote SOC for SYS), read 2026-12-05.
K80_SOC = """\
        GPU0 GPU1 GPU2 GPU3 GPU4 GPU5 CPU Affinity
GPU0\t X \tPIX\tSOC\tSOC\tSOC\tSOC\t0-7,16-23
GPU1\tPIX\t X \tSOC\tSOC\tSOC\tSOC\t0-7,16-23
GPU2\tSOC\tSOC\t X \tPIX\tPHB\tPHB\t8-15,24-31
GPU3\tSOC\tSOC\tPIX\t X \tPHB\tPHB\t8-15,24-31
GPU4\tSOC\tSOC\tPHB\tPHB\t X \tPIX\t8-15,24-31
GPU5\tSOC\tSOC\tPHB\tPHB\tPIX\t X \t8-15,24-31
"""

# https://github.com/NVIDIA/nccl/issues/1817 ("P2P is slow than SHM"), read 2026-12-05: the matrix's
# first four rows (the thread's excerpt cuts the rest), and four lines of the first NCCL_DEBUG=INFO log.
PCIE8_1817 = """\
        GPU0    GPU1    GPU2    GPU3    GPU4    GPU5    GPU6    GPU7    CPU Affinity    NUMA Affinity   GPU NUMA ID
GPU0     X      PIX     NODE    NODE    SYS     SYS     SYS     SYS     0-47,96-143     0               N/A
GPU1    PIX      X      NODE    NODE    SYS     SYS     SYS     SYS     0-47,96-143     0               N/A
GPU2    NODE    NODE     X      PIX     SYS     SYS     SYS     SYS     0-47,96-143     0               N/A
GPU3    NODE    NODE    PIX      X      SYS     SYS     SYS     SYS     0-47,96-143     0               N/A
"""
PCIE8_1817_LOG = """\
sh9-machine-20250813085604-64df4c99dc-m27xf:3884652:3884747 [0] NCCL INFO Channel 00 : 0[0] -> 4[4] via SHM/direct/direct
sh9-machine-20250813085604-64df4c99dc-m27xf:3884652:3884744 [3] NCCL INFO Channel 00 : 3[3] -> 7[7] via SHM/direct/direct
sh9-machine-20250813085604-64df4c99dc-m27xf:3884652:3884746 [1] NCCL INFO Channel 00 : 1[1] -> 5[5] via SHM/direct/direct
sh9-machine-20250813085604-64df4c99dc-m27xf:3884652:3884745 [2] NCCL INFO Channel 00 : 2[2] -> 6[6] via SHM/direct/direct
"""

# https://github.com/NVIDIA/nccl/issues/1439 ("ALLREDUCE timeout"), read 2026-12-05.
PCIE8_1439 = """\
        GPU0    GPU1    GPU2    GPU3    GPU4    GPU5    GPU6    GPU7    CPU Affinity    NUMA Affinity   GPU NUMA ID
GPU0     X      PIX     PHB     PHB     SYS     SYS     SYS     SYS     0-13,28-41      0               N/A
GPU1    PIX      X      PHB     PHB     SYS     SYS     SYS     SYS     0-13,28-41      0               N/A
GPU2    PHB     PHB      X      PIX     SYS     SYS     SYS     SYS     0-13,28-41      0               N/A
GPU3    PHB     PHB     PIX      X      SYS     SYS     SYS     SYS     0-13,28-41      0               N/A
GPU4    SYS     SYS     SYS     SYS      X      PIX     PHB     PHB     14-27,42-55     1               N/A
GPU5    SYS     SYS     SYS     SYS     PIX      X      PHB     PHB     14-27,42-55     1               N/A
GPU6    SYS     SYS     SYS     SYS     PHB     PHB      X      PIX     14-27,42-55     1               N/A
GPU7    SYS     SYS     SYS     SYS     PHB     PHB     PIX      X      14-27,42-55     1               N/A
"""


def read_matrix(text: str):
    """(cells {(row, col): label}, gpu names, nic names, {gpu: numa}) of a topo -m text, as
    gpudoctor/nccl/topo_text.py reads it (some excerpts cut rows: the GPUs and NICs are the header's)."""
    m = parse_topo(text)
    numa = {g: int(v) for g, v in m.numa_affinity.items() if v.strip().isdigit()}
    return dict(m.cells), list(m.gpus), list(m.nics), numa


def read_channels(text: str) -> dict[tuple[int, int], str]:
    """`Channel NN[/c] : r[dev] -> r[dev] ... via X` lines, as gpudoctor/nccl/log.py reads them: {(dev, dev): X}."""
    return {(int(c.src_tag), int(c.dst_tag)): c.transport.raw for c in parse_log(text).channels}


def read_p2p(text: str) -> dict[int, tuple[int, ...]]:
    """`nvidia-smi topo -p2p r|rw`: for each GPU, the GPUs whose status is not OK."""
    rows = [ln.split() for ln in text.splitlines() if ln.strip()]
    cols = rows[0]
    out = {}
    for row in rows[1:]:
        i = int(row[0][3:])
        out[i] = tuple(int(c[3:]) for c, v in zip(cols, row[1:]) if v not in ("X", "OK"))
    return out
