"""Real NCCL_DEBUG=INFO logs replayed against the topology of the same machine (issue 26, "checked against
NCCL itself"): each case builds the node from its thread's topology (an `nvidia-smi topo -m`, NCCL's own
topology lines), writes it as a gpudoctor snapshot (snapgen.py), replays the snapshot through the real
loader, probes and `topology.from_facts`, predicts, and compares with what NCCL printed (observed.py). The
log, the topology and every fact a case adds are cited in tests/nccl/data/SOURCES.md and beside the case.

`pairs` is the number of GPU pairs with a `Channel ... via` line, counted by hand in the log."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pytest

from gpudoctor.nccl.log import parse_log
from gpudoctor.nccl.observed import against_log
from gpudoctor.nccl.predict import predict
from gpudoctor.nccl.topology import Gpu, Topology, from_topo_matrix

from . import snapgen
from .topo_texts import read_matrix
from conftest import run_cli

DATA = Path(__file__).parent / "data"


def _text(*names: str) -> str:
    return "".join((DATA / n).read_text(encoding="utf-8") for n in names)


def _all_read_ok(n: int) -> dict[int, tuple[int, ...]]:
    return {i: tuple(j for j in range(n) if j != i) for i in range(n)}


class Case(NamedTuple):
    name: str
    logs: tuple[str, ...]  # files under data/, one run, joined in this order
    topology: Callable[[str], Topology]  # the log's text -> the node (its env from the log)
    snap: dict  # snapgen.write's keyword arguments; a callable value is called with the log's text
    pairs: int
    # the log's NET channels the prediction cannot judge, each with the reason (what the thread does not say)
    network: tuple[str, ...] = ()
    network_gpus: int = 0  # GPUs of this node with a NET channel to another node, counted by hand in the log


# ---------------------------------------------------------------------------------------------------
# NVIDIA/nccl#1817: 8x L20 PCIe, two GPUs to a switch, two switches to a socket, two sockets.


L20_BUSES = (  # nccl-tests' device list in the thread ("device 0 [0000:12:00] NVIDIA L20" ...) and the
    # log's own `busId 91000` .. `busId c5000` Destroy lines (cudaDev 4..7)
    "0000:12:00.0", "0000:13:00.0", "0000:47:00.0", "0000:48:00.0",
    "0000:91:00.0", "0000:92:00.0", "0000:c4:00.0", "0000:c5:00.0",
)  # fmt: skip


def l20(log: str) -> Topology:
    """The thread's topo -m gives rows GPU0-GPU3 (the stored copy cuts the rest after `GPU4 SYS SYS SYS SYS
    X PI`). The rows of GPUs 4-7 are completed as the fake NVML scenario pcie-l20-8.scn does: SYS to GPUs
    0-3 (the matrix is symmetric), PIX within 4-5 and 6-7 (4-5 shown as `PI` before the cut; the bus ids
    pair up as 12/13 and 47/48 do) and NODE between the pairs (one socket, as GPUs 0-3)."""
    topo = from_topo_matrix(*read_matrix(_text("nccl1817_shm_l20/topo.txt")), env=parse_log(log).env)
    lower = ("SYS",) * 4
    rows = {
        4: lower + ("X", "PIX", "NODE", "NODE"),
        5: lower + ("PIX", "X", "NODE", "NODE"),
        6: lower + ("NODE", "NODE", "X", "PIX"),
        7: lower + ("NODE", "NODE", "PIX", "X"),
    }
    gpus = tuple(
        dataclasses.replace(
            g,
            bus_id=L20_BUSES[g.index],
            paths=rows.get(g.index, g.paths),
            nvlink_to=g.nvlink_to or (0,) * 8,
            nvswitch_links=0,
            numa=g.numa if g.numa is not None else 1,  # GPUs 4-7: the other socket (SYS to 0-3)
        )
        for g in topo.gpus
    )
    return dataclasses.replace(topo, gpus=gpus)


# ---------------------------------------------------------------------------------------------------
# NVIDIA/nccl#1189: two H20 nodes, two GPUs each, every GPU on the NVSwitch (NCCL's own topology lines)

_GRAPH_GPU = re.compile(r"- GPU/([0-9A-Fa-f]+) \((\d+)\)")
_GRAPH_NVS = re.compile(r"\+ NVL\[([\d.]+)\] - NVS/0")


def graph_nvswitch_gpus(text: str) -> dict[str, float]:
    """NCCL's `=== System` lines: each `GPU/<busid> (rank)` with the NVLink bandwidth of its `+ NVL[bw] -
    NVS/0` line (the line right under it), {busid: bw}."""
    out: dict[str, float] = {}
    gpu = None
    for line in text.splitlines():
        m = _GRAPH_GPU.search(line)
        if m:
            gpu = m.group(1).lower()
            continue
        m = _GRAPH_NVS.search(line)
        if m and gpu:
            out[gpu] = float(m.group(1))
        gpu = None
    return out


def h20(log: str) -> Topology:
    """GPU/18000 and GPU/38000 each `+ NVL[370.8] - NVS/0`: 18 links to the NVSwitch (370.8 = 18 x
    SM90_NVLINK_BW 20.6, NVIDIA/nccl@v2.23.4-1:src/graph/topo.h); their bus ids are the log's `cudaDev 0
    ... busId 18000` and `cudaDev 1 ... busId 38000` Init COMPLETE lines."""
    nvs = graph_nvswitch_gpus(_text("nccl1189_h20_nvswitch/graph.txt"))
    assert nvs == {"18000": 370.8, "38000": 370.8}
    buses = ("0000:18:00.0", "0000:38:00.0")
    gpus = tuple(
        Gpu(
            index=i,
            bus_id=b,
            nvlink_to=(0, 0),
            nvswitch_links=round(370.8 / 20.6),
            paths=("X", None)[:: 1 - 2 * i],
        )
        for i, b in enumerate(buses)
    )
    return Topology(gpus=gpus, nics=None, env=parse_log(log).env)


# ---------------------------------------------------------------------------------------------------
# NVIDIA/nccl-tests#228: 8x A100-SXM4-80GB on NVSwitches, NCCL_P2P_LEVEL=LOC left in the environment

A100_228_BUSES = tuple(  # the log's brackets, rank = CUDA device (one process per GPU, ranks 0-7)
    f"0000:{b}:00.0" for b in ("27", "2a", "51", "57", "9e", "a4", "c7", "ca")
)


def a100_nvswitch(buses: tuple[str, ...], env: dict[str, str]) -> Topology:
    """8x A100-SXM4-80GB, 12 NVLinks each to the NVSwitches (nccl-tests#228's `nvidia-smi nvlink -s`, below);
    PCIe distances, NICs and NVML's P2P status not given."""
    gpus = tuple(
        Gpu(
            index=i,
            bus_id=b,
            nvlink_to=(0,) * 8,
            nvswitch_links=12,
            paths=tuple("X" if j == i else None for j in range(8)),
        )
        for i, b in enumerate(buses)
    )
    return Topology(gpus=gpus, nics=None, env=env)


def a100_loc(log: str) -> Topology:
    """`nvidia-smi nvlink -s`: GPU0 and GPU1 with links 0-11 up at 25 GB/s (GPU2 onwards elided by the
    poster with `......`), on a board the thread titles "has nvswitch": 12 links to the NVSwitch each.
    NCCL_P2P_LEVEL=LOC is the maintainer's quote of the user's log ("I see the following in the output:
    NCCL_P2P_LEVEL set by environment to LOC"); the excerpt kept here does not have that line."""
    env = dict(parse_log(log).env)
    env.setdefault("NCCL_P2P_LEVEL", "LOC")
    return a100_nvswitch(A100_228_BUSES, env)


# NVIDIA/nccl#1412: two nodes of 8x A100-SXM4-80GB over InfiniBand (ibstatus in the description)

A100_1412_BUSES = tuple(  # nccl-tests' device list of the same run (pid 2017630): `device 0 [0x07]` ..
    f"0000:{b}:00.0" for b in ("07", "0b", "48", "4c", "88", "8b", "c8", "cb")
)


def a100_1412(log: str) -> Topology:
    """Option (d) of the issue: the thread's device list names the product, eight A100-SXM4-80GB in one
    node, and posts no topology. The NVLink of that product is nccl-tests#228's (`nvidia-smi nvlink -s` of
    an A100-SXM4-80GB: links 0-11 up, on the NVSwitch), as NVIDIA/nccl#1505's DGX A100 `topo -m` shows
    (NV12 between every pair). The log names GPUs by CUDA device; the bus ids are the device list's."""
    return a100_nvswitch(A100_1412_BUSES, dict(parse_log(log).env))


# pytorch/pytorch#81628: RoCE, one GPU of host tf144 in the job (cudaDev 1, busId 86000, NCCL's bracket)


def roce_81628_ports(log: str) -> tuple[snapgen.RdmaPort, ...]:
    """The RDMA ports NCCL listed, `NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [2]i40iw0:1/RoCE`:
    NCCL lists a port only when it is ACTIVE and its link layer is InfiniBand or Ethernet, and prints
    `RoCE` for Ethernet (NVIDIA/nccl@v2.10.3-1:src/transport/net_ib.cc:166-175, `if (portAttr.state !=
    IBV_PORT_ACTIVE) continue;`; the same test in @v2.23.4-1:src/transport/net_ib.cc:558). Each is
    written as sysfs shows such a port ("4: ACTIVE", "Ethernet")."""
    return tuple(
        snapgen.RdmaPort(d.name, d.port, "4: ACTIVE", "Ethernet" if d.link_layer == "RoCE" else "InfiniBand")
        for d in parse_log(log).ib_devices
    )


def roce_81628(log: str) -> Topology:
    """The one GPU of tf144 the log shows (`0[2f000] -> 1[86000] [receive]`, rank 1 being `[1]`, cudaDev 1,
    on tf144); the thread gives neither its NVLinks nor where the NICs sit, and the job used no other GPU
    of the host."""
    gpu = Gpu(index=0, bus_id="0000:86:00.0", paths=("X",))
    return Topology(gpus=(gpu,), nics=None, env=parse_log(log).env)


# NVIDIA/Megatron-LM#516: an AWS p4d.24xlarge (8x A100 on NVSwitch), NCCL's brackets holding bus ids

P4D_BUSES = (  # aws/aws-ofi-nccl@35d97d28:topology/p4d-24xl-topo.xml, `<!-- GPU 0 -->` .. `<!-- GPU 7 -->`
    "0000:10:1c.0", "0000:10:1d.0", "0000:20:1c.0", "0000:20:1d.0",
    "0000:90:1c.0", "0000:90:1d.0", "0000:a0:1c.0", "0000:a0:1d.0",
)  # fmt: skip


def p4d_516(log: str) -> Topology:
    """The log's seven bus ids (`0[101c0]` .. `6[a01c0]`) are those of AWS's p4d.24xlarge topology file
    (P4D_BUSES, in its GPU order; GPU 7's a01d0 is not in the stored excerpt): two GPUs to a PCIe switch,
    two switches to a socket (PIX, NODE, SYS). NVLink: "8 x 40 GB NVIDIA Tesla A100 GPUs with NVSwitch"
    (AWS's "Amazon EC2 P4d instances deep dive", copy at
    https://dustinward.cloud/amazon-ec2-p4d-instances-deep-dive), 12 links each as any A100-SXM4
    (nccl-tests#228's `nvidia-smi nvlink -s`)."""
    tags = {int(t, 16) for c in parse_log(log).channels for t in (c.src_tag, c.dst_tag)}
    assert len(tags) == 7 and tags <= {int(b.replace(":", "").replace(".", ""), 16) for b in P4D_BUSES}
    gpus = tuple(
        Gpu(
            index=i,
            bus_id=b,
            numa=i // 4,
            nvlink_to=(0,) * 8,
            nvswitch_links=12,
            paths=tuple(
                "X" if i == j else "PIX" if i // 2 == j // 2 else "NODE" if i // 4 == j // 4 else "SYS"
                for j in range(8)
            ),
        )
        for i, b in enumerate(P4D_BUSES)
    )
    return Topology(gpus=gpus, nics=None, env=parse_log(log).env)


# NVIDIA/nccl#1357: two HGX H100 nodes (qh100-gpu19, qh100-gpu20), four InfiniBand NICs each, HPC-X's plugin


def h100_1357(log: str) -> Topology:
    """The description's `nvidia-smi topo -m`: NV18 between every pair (NVSwitch), NUMA 0 for GPUs 0-3 and 1
    for 4-6. The stored copy cuts GPU7's row; its cells are the column GPU7 of rows 0-6 (NV18 each: the
    matrix is symmetric). The matrix is one node's, and the two nodes are of one cluster ("2 nodes with 4
    nics"): the log's pairs of both hosts are read against it."""
    cells, gpus, nics, numa = read_matrix(_text("nccl1357_h100_ib_sharp/topo.txt"))
    for g in gpus[:-1]:
        cells[("GPU7", g)] = cells[(g, "GPU7")]
    cells[("GPU7", "GPU7")] = "X"
    return from_topo_matrix(cells, gpus, nics, numa, env=parse_log(log).env)


def ib_ports(log: str) -> tuple[snapgen.RdmaPort, ...]:
    """The RDMA ports of the log's `NET/IB : Using` line as ACTIVE ports (see roce_81628_ports). HPC-X's
    plugin prints the same line and lists a port on the same test (Mellanox/nccl-rdma-sharp-plugins@2f5ac02:
    src/p2p_plugin.c:586 `if (portAttr.state != IBV_PORT_ACTIVE) continue;`, :697 the `/SHARP` suffix)."""
    return roce_81628_ports(log)


# NVIDIA/nccl-tests#373 ("NCCL_IB_DISABLE=1 not work"): three nodes, one GPU each, HPC-X's IBext_v8 plugin

IBEXT_PLUGIN = "/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so"  # the log's `Plugin Path :` line
IBINIT = "NVIDIA/nccl@v2.23.4-1:src/transport/net_ib.cc:ncclIbInit"  # predict.py's citation


def ibext_373(log: str) -> Topology:
    """bigo's one GPU (`cudaDev 0 nvmlDev 0 busId 31000`, `localRanks 1`). NCCL_IB_DISABLE=1 is the
    poster's statement (the issue's title); the log has `NCCL_P2P_LEVEL set by environment to LOC`. The
    plugin NCCL loaded (`Plugin Path : ...`, `P2P plugin IBext_v8`) is HPC-X's nccl-rdma-sharp-plugins,
    which NCCL tries before its own IB and Socket (src/net.cc ncclNetInit) and which reads its own
    NCCL_IBEXT_DISABLE, not NCCL_IB_DISABLE (Mellanox/nccl-rdma-sharp-plugins@2f5ac02:src/ib_plugin.c:376
    `NCCL_PARAM(IbDisable, "IBEXT_DISABLE", 0)`)."""
    gpu = Gpu(index=0, bus_id="0000:31:00.0", paths=("X",))
    return Topology(gpus=(gpu,), nics=None, env={**parse_log(log).env, "NCCL_IB_DISABLE": "1"})


# NVIDIA/nccl#1817 again: the same L20 machine with NCCL_P2P_LEVEL=SYS


def l20_p2p_level_sys(log: str) -> Topology:
    """The L20 node of `l20`, run with the description's P2P command `NCCL_DEBUG=INFO NCCL_P2P_LEVEL=SYS
    ./build/alltoall_perf -b 8 -e 512M -f 2 -g 8` (the excerpt kept has no `set by environment` line)."""
    topo = l20(log)
    return dataclasses.replace(topo, env={**topo.env, "NCCL_P2P_LEVEL": "SYS"})


# ---------------------------------------------------------------------------------------------------
# NVIDIA/nccl#1453: HGX H100 (NV18 to every GPU, 9 NICs), 3 nodes, NCCL 2.21 with the HPC-X IBext plugin


def h100_1453(log: str) -> Topology:
    """The thread's `nvidia-smi topo -m` (tab-separated, as nvidia-smi prints it): NV18 between every pair
    (more than one GPU's 18 links: NVSwitch, topology.py from_topo_matrix), NUMA 0 for GPUs 0-3 and 1 for
    4-7. It gives no bus ids; the log names GPUs by CUDA device (`0[0] -> 7[7]`), so none is needed."""
    return from_topo_matrix(*read_matrix(_text("nccl1453_h100_nvswitch/topo.txt")), env=parse_log(log).env)


# NVIDIA/nccl#1259: "a HGX 8x H100 node (driver 535.129) with the prebuilt NCCL 2.20.5" (its description);
# the thread posts no topology, so the topology is a real one of that product from another thread.


def hgx_h100_1259(log: str) -> Topology:
    """Option (d) of the issue: the thread names the exact product, an HGX 8x H100, and posts no topology;
    the matrix is NVIDIA/nccl#1264's `nvidia-smi topo -m` of an "HGX H100 SXM" (NV18 between every pair:
    NVSwitch; NUMA 0/1). The log names GPUs by CUDA device, so no bus id is needed."""
    text = _text("nccl1259_hgx_h100/topo_hgx_h100_nccl1264.txt")
    return from_topo_matrix(*read_matrix(text), env=parse_log(log).env)


# NVIDIA/nccl-tests#307: 8x RTX 4090 on two CPUs, NCCL's own topology and path lines of the same run


_GRAPH_PATH = re.compile(r"GPU/([0-9A-Fa-f]+) :(.*)")
_GRAPH_HOP = re.compile(r"GPU/0-([0-9a-f]+) \(\d+/[\d.]+/([A-Z]+)\)")
RTX4090_BUSES = ("4e000", "4f000", "50000", "51000", "ce000", "cf000", "d0000", "d1000")


def graph_paths(text: str) -> dict[tuple[str, str], str]:
    """NCCL's `GPU/4E000 :GPU/0-4e000 (0/5000.0/LOC) GPU/0-4f000 (4/24.0/PHB) ...` lines (NCCL_DEBUG_SUBSYS
    =GRAPH, src/graph/paths.cc printNodePaths): {(gpu, gpu): path type} as NCCL computed them."""
    out = {}
    for line in text.splitlines():
        m = _GRAPH_PATH.search(line)
        if m:
            for peer, kind in _GRAPH_HOP.findall(m.group(2)):
                out[(m.group(1).lower(), peer)] = kind
    return out


def rtx4090_307(log: str) -> Topology:
    """NCCL's own lines of the run (graph.txt): the path lines of GPUs 4e000, 4f000 and 50000 (the last
    cut by the stored copy) give PHB among 4e000-51000 and SYS from them to ce000-d1000; the tree lines put
    ce000-d1000 under one PCIe switch (PCI/0-ca000) of the second CPU: PIX among them, SYS to the GPUs of
    the first CPU (every path between the CPUs crosses `+ SYS[10.0] - CPU/0`). Each label the lines state is
    checked against this matrix. Bus ids: the log's Init COMPLETE lines (cudaDev 0-1, 3, 5-7), the tree
    line `GPU/0-ce000 (4)`, and 50000, the one left, for cudaDev 2 (its Init line is cut in the copy).
    P2P: the stock driver gives none on a 4090 ("MAILBOXP2P ... is not present or disabled in hardware on
    the 4090s, and that's why P2P doesn't work", tinygrad/open-gpu-kernel-modules@1f40371d:README.md),
    so NVML's P2P status is not OK for every pair."""
    first = RTX4090_BUSES[:4]
    label = {}
    for a in RTX4090_BUSES:
        for b in RTX4090_BUSES:
            same = (a in first) == (b in first)
            label[(a, b)] = "X" if a == b else ("SYS" if not same else ("PHB" if a in first else "PIX"))
    stated = graph_paths(_text("nccltests307_4090_shm/graph.txt"))
    assert len(stated) == 21 and all(label[k] == v for k, v in stated.items() if v != "LOC"), stated
    gpus = tuple(
        Gpu(
            index=i,
            bus_id=f"0000:{b[:2]}:00.0",
            nvlink_to=(0,) * 8,
            nvswitch_links=0,
            paths=tuple(label[(b, c)] for c in RTX4090_BUSES),
        )
        for i, b in enumerate(RTX4090_BUSES)
    )
    return Topology(gpus=gpus, nics=None, env=parse_log(log).env)


NIC_UNKNOWN = "predicted unknown (the network NCCL takes is unknown), NCCL used ib-gdr ({})"
NIC_UNKNOWN_IB = "predicted unknown (the network NCCL takes is unknown), NCCL used ib ({})"
NIC_UNPLACED = (
    "predicted unknown (the PCIe distance from GPU0 to the active NICs is not known), NCCL used ib ({})"
)

CASES = (
    Case(
        "nccl1817_l20_pcie_two_sockets",
        ("nccl1817_shm_l20/nccl.log", "nccl1817_l20_ring/nccl.log"),
        l20,
        # no `topo -p2p` in the thread; NCCL's P2P between GPUs 2-3 and 4-5 shows CUDA allowed it
        {"p2p_read_ok": _all_read_ok(8)},
        11,
    ),
    Case(
        "nccl1189_h20_nvswitch",
        ("nccl1189_h20_ib_cumem/nccl.log",),
        h20,
        {},
        1,
        # NCCL's topology lines place a NIC beside each GPU, but not whether its port is up, nor whether
        # nvidia-peermem or DMA-BUF gives it GPU memory: the snapshot leaves the RDMA devices unrecorded
        tuple(f"GPU{g} -> network: " + NIC_UNKNOWN.format("NET/IB/GDRDMA") for g in (0, 1)),
        2,
    ),
    Case("nccltests228_a100_p2p_level_loc", ("nccltests228_p2p_level_loc/nccl.log",), a100_loc, {}, 7),
    Case(
        "nccltests307_rtx4090_no_p2p",
        ("nccltests307_4090_shm/nccl.log",),
        rtx4090_307,
        {"p2p_read_ok": {}},  # no P2P on a stock-driver 4090 (see rtx4090_307)
        8,
    ),
    Case("nccl1259_hgx_h100_nvswitch", ("nccl1259_hgx_h100/nccl.log",), hgx_h100_1259, {}, 3),
    Case(
        "nccl1453_h100_nvswitch",
        ("nccl1453_h100_nvswitch/nccl.log",),
        h100_1453,
        {},
        1,
        ("GPU0 -> network: " + NIC_UNKNOWN.format("NET/IBext_v8/GDRDMA"),),  # NIC ports, peermem: not posted
        1,
    ),
    Case(
        "nccl1817_l20_p2p_level_sys",
        ("nccl1817_p2p_l20/nccl.log",),
        l20_p2p_level_sys,
        {"p2p_read_ok": _all_read_ok(8)},  # as the SHM run of the same machine (see l20)
        5,
    ),
    Case(
        "nccl1412_a100_nvswitch_ib",
        ("nccl1412_a100_ib/nccl.log",),
        a100_1412,
        {},
        3,
        # ibstatus shows the ports ACTIVE but not where each NIC sits nor how GPU memory is reached
        tuple(f"GPU{g} -> network: " + NIC_UNKNOWN_IB.format("NET/IB") for g in (4, 5)),
        2,
    ),
    Case(
        "pytorch81628_roce",
        ("pytorch81628_roce_ib/nccl.log",),
        roce_81628,
        {"rdma": roce_81628_ports},
        0,
        # `Using network IB` is predicted from the RoCE ports; where the NICs sit is not in the thread
        ("GPU0 -> network: " + NIC_UNPLACED.format("NET/IB"),),
        1,
    ),
    Case("nccl1357_h100_nvswitch_ib", ("nccl1357_h100_ib_sharp/nccl.log",), h100_1357, {"rdma": ib_ports}, 4),
    Case("megatron516_p4d_nvswitch", ("megatron516_busid/nccl.log",), p4d_516, {}, 6),
    Case(
        "nccltests373_ib_disable_with_ibext_plugin",
        ("nccltests373_ib_disable_ibext/nccl.log",),
        ibext_373,
        {"net_plugin": IBEXT_PLUGIN},
        0,
        # the plugin comes first and NCCL_IB_DISABLE does not stop it: not Socket, and not modelled
        ("GPU0 -> network: " + NIC_UNKNOWN_IB.format("NET/IBext_v8"),),
        1,
    ),
)


def _snap(case: Case, log: str) -> dict:
    return {k: v(log) if callable(v) else v for k, v in case.snap.items()}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_prediction_on_the_replayed_snapshot_is_what_nccl_chose(case, tmp_path):
    log = _text(*case.logs)
    topo = case.topology(log)
    replayed = snapgen.replay(snapgen.write(topo, tmp_path / "snapshot", **_snap(case, log)))
    seen = against_log(log, predict(replayed), replayed)
    assert (seen.problem, seen.pairs, seen.disagreements) == ("", case.pairs, case.network)
    assert seen.network_gpus == case.network_gpus


def test_the_snapshot_carries_the_topology_through_the_probes(tmp_path):
    """What the snapshot replays is the topology it was written from: bus ids, PCIe labels, NVLink."""
    log = _text("nccl1817_shm_l20/nccl.log")
    topo = l20(log)
    replayed = snapgen.replay(snapgen.write(topo, tmp_path / "s", p2p_read_ok=_all_read_ok(8)))
    assert [g.bus_id for g in replayed.gpus] == list(L20_BUSES)
    assert [g.paths for g in replayed.gpus] == [g.paths for g in topo.gpus]
    assert {g.nvswitch_links for g in replayed.gpus} == {0}
    h = h20(_text("nccl1189_h20_ib_cumem/nccl.log"))
    back = snapgen.replay(snapgen.write(h, tmp_path / "h"))
    assert [(g.nvswitch_links, g.nvlink_to) for g in back.gpus] == [(18, (0, 0)), (18, (0, 0))]


def test_without_the_variable_the_same_node_disagrees_with_its_log(tmp_path):
    """The A100 case with NCCL_P2P_LEVEL left out of the snapshot: NVLink through the NVSwitch is
    predicted, and each of the log's SHM pairs is reported (the comparison can fail)."""
    case = next(c for c in CASES if c.name == "nccltests228_a100_p2p_level_loc")
    log = _text(*case.logs)
    topo = dataclasses.replace(case.topology(log), env={})
    replayed = snapgen.replay(snapgen.write(topo, tmp_path / "snapshot"))
    seen = against_log(log, predict(replayed), replayed)
    assert seen.pairs == 7
    assert seen.disagreements[0] == "GPU1 -> GPU0: predicted p2p-nvlink, NCCL used shm (SHM/direct/direct)"
    assert len(seen.disagreements) == 7


def test_the_4090s_pairs_under_one_switch_go_through_the_cpu_because_p2p_is_off(tmp_path):
    """nccl-tests#307: GPUs 4-7 share a PCIe switch (PIX), within NCCL's P2P level, yet NCCL used SHM:
    the prediction says why (NVML reports no P2P), and with P2P reported OK it would have said P2P there,
    which the log contradicts."""
    case = next(c for c in CASES if c.name == "nccltests307_rtx4090_no_p2p")
    log = _text(*case.logs)
    topo = case.topology(log)
    replayed = snapgen.replay(snapgen.write(topo, tmp_path / "off", **_snap(case, log)))
    pair = predict(replayed).pair(4, 5)
    assert (pair.transport, pair.path, pair.limited_by) == ("shm", "PIX", ("nvml-p2p",))
    replayed = snapgen.replay(snapgen.write(topo, tmp_path / "on", p2p_read_ok=_all_read_ok(8)))
    seen = against_log(log, predict(replayed), replayed)
    assert seen.disagreements == tuple(
        f"GPU{a} -> GPU{a + 1}: predicted p2p-pcie, NCCL used shm (SHM/direct/direct)" for a in (4, 5, 6)
    )


@pytest.mark.parametrize(
    "name", ["nccl1817_l20_pcie_two_sockets", "nccltests228_a100_p2p_level_loc", "nccl1357_h100_nvswitch_ib"]
)
def test_a_case_end_to_end_through_the_cli(name, tmp_path):
    """`gpudoctor nccl --snapshot S --log L --format json`, as a user runs it."""
    case = next(c for c in CASES if c.name == name)
    log = tmp_path / "nccl.log"
    text = _text(*case.logs)
    log.write_text(text, encoding="utf-8")
    snap = snapgen.write(case.topology(text), tmp_path / "snapshot", **_snap(case, text))
    r = run_cli("nccl", "--snapshot", str(snap), "--log", str(log), "--format", "json")
    assert r.returncode in (0, 1), r.stderr
    seen = json.loads(r.stdout)["log"]
    assert (seen["pairs"], seen["problem"], seen["disagreements"]) == (case.pairs, None, [])


def test_ib_disabled_is_sockets_only_without_a_network_plugin(tmp_path):
    """nccl-tests#373: NCCL_IB_DISABLE=1, yet NCCL used HPC-X's IBext_v8 plugin. With the plugin recorded the
    prediction does not claim sockets (the plugin comes first); left out, the prediction is Socket and both
    the network and the GPU's channels are reported as disagreeing with the log."""
    case = next(c for c in CASES if c.name == "nccltests373_ib_disable_with_ibext_plugin")
    log = _text(*case.logs)
    with_plugin = snapgen.replay(snapgen.write(case.topology(log), tmp_path / "on", **_snap(case, log)))
    prediction = predict(with_plugin)
    assert prediction.net_name is None
    assert prediction.net_reasons[0].startswith(f"NCCL loads the network plugin {IBEXT_PLUGIN} first")
    assert prediction.net_reasons[0].endswith(
        "without one, Socket: NCCL_IB_DISABLE=1: IB is off [" + IBINIT + "]"
    )
    without = snapgen.replay(snapgen.write(case.topology(log), tmp_path / "off"))
    seen = against_log(log, predict(without), without)
    assert seen.disagreements == (
        f"network: predicted Socket (NCCL_IB_DISABLE=1: IB is off [{IBINIT}]), NCCL used IBext_v8 "
        "(`Using network IBext_v8`)",
        "GPU0 -> network: predicted socket, NCCL used ib (NET/IBext_v8)",
    )


def test_the_roce_ports_nccl_listed_replay_as_active_ethernet_ports(tmp_path):
    """pytorch#81628: the three ports of `NET/IB : Using` come back from the snapshot as ACTIVE RoCE ports,
    and the network predicted from them is IB, as the log's `Using network IB`."""
    case = next(c for c in CASES if c.name == "pytorch81628_roce")
    log = _text(*case.logs)
    replayed = snapgen.replay(snapgen.write(case.topology(log), tmp_path / "s", **_snap(case, log)))
    assert [(n.port, n.state, n.link_layer) for n in replayed.nics] == [
        ("mlx5_0/1", "ACTIVE", "Ethernet"),
        ("mlx5_1/1", "ACTIVE", "Ethernet"),
        ("i40iw0/1", "ACTIVE", "Ethernet"),
    ]
    prediction = predict(replayed)
    assert prediction.net_name == "IB" and prediction.net_reasons[0].startswith(
        "3 ACTIVE RDMA port(s) (RoCE)"
    )
    none = snapgen.replay(snapgen.write(case.topology(log), tmp_path / "none", rdma=()))
    assert none.nics == () and predict(none).net_name == "Socket"
