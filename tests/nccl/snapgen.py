"""A node's topology (gpudoctor/nccl/topology.py's Topology, read from a real `nvidia-smi topo -m` or from
NCCL's own topology lines) written as a gpudoctor snapshot directory (docs/snapshot-format.md), so that a
case replays through the real loader, the real probes and `topology.from_facts`, as `gpudoctor nccl
--snapshot` does.

Only what the topology source says is recorded; every other reading is left out of the snapshot, and the
loader answers it as "not recorded" (unknown), never as fine:
  - nvml.json: nvmlDeviceGetCount, and per GPU nvmlDeviceGetPciInfo (its bus id), nvmlDeviceGetName,
    nvmlDeviceGetCudaComputeCapability, nvmlDeviceGetNvLinkState(k) for its active links then
    NotSupported, with nvmlDeviceGetNvLinkRemoteDeviceType(k) / nvmlDeviceGetNvLinkRemotePciInfo(k),
    nvmlDeviceGetTopologyCommonAncestor(j) (the topo -m label as nvmlGpuTopologyLevel_t) where the label
    is known, nvmlDeviceGetP2PStatus(j,READ) only where the case passes it;
  - files/sys/bus/pci/devices/<bus>/numa_node where the NUMA node is known;
  - env.json: the NCCL variables the log says were set ("NCCL_IB_DISABLE set by environment to 1.");
  - files/sys/class/infiniband: the RDMA ports a case passes (`rdma`), each port's `state` and `link_layer`
    as the kernel writes them (drivers/infiniband/core/sysfs.c: "4: ACTIVE", "Ethernet"), the port's rate
    left unrecorded; `rdma=()` records the directory as absent (no RDMA device: NCCL's
    `NET/IB : No device found.`). The PCI tree is not recorded, so each NIC's distance to each GPU stays
    unknown.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple, Optional

from gpudoctor.host.base import NOT_FOUND
from gpudoctor.host.snapshot import FORMAT, VERSION, Recording, write_dir
from gpudoctor.nccl.topology import Topology

# `nvidia-smi topo -m` label -> nvmlGpuTopologyLevel_t (nvml.h NVML_TOPOLOGY_*; gpudoctor/probes/gpus.py)
LEVELS = {"PIX": 10, "PXB": 20, "PHB": 30, "NODE": 40, "SYS": 50}
NVLINK_SWITCH, NVLINK_GPU = 2, 0  # nvmlIntNvLinkDeviceType_t
NOT_SUPPORTED = {"error": "NVMLError_NotSupported", "msg": "Not Supported"}
P2P_OK, P2P_NOT_SUPPORTED = 0, 5  # nvmlGpuP2PStatus_t: OK, NVML_P2P_STATUS_NOT_SUPPORTED


IB_ROOT = "/sys/class/infiniband"  # gpudoctor/probes/interconnect.py reads the ports from there


class RdmaPort(NamedTuple):
    """One RDMA port as sysfs shows it: /sys/class/infiniband/<device>/ports/<port>/{state,link_layer}."""

    device: str  # mlx5_0
    port: int
    state: str  # as the kernel writes it: "4: ACTIVE"
    link_layer: str  # "InfiniBand", or "Ethernet" for RoCE


def nvml_bus(bus: str) -> str:
    """0000:18:00.0 as NVML writes it, 00000000:18:00.0 (32-bit domain, upper case)."""
    domain, rest = bus.split(":", 1)
    return f"{int(domain, 16):08x}:{rest}".upper()


def recording(
    topo: Topology,
    p2p_read_ok: Optional[dict[int, tuple[int, ...]]] = None,
    cc: Optional[tuple] = None,
    rdma: Optional[tuple[RdmaPort, ...]] = None,
    net_plugin: Optional[str] = None,
) -> Recording:
    """The snapshot of `topo`. A GPU without a bus id (a source that gives none: `nvidia-smi topo -m`) has
    its nvmlDeviceGetPciInfo and NUMA node unrecorded; direct NVLinks need the peer's bus id. `rdma` the
    RDMA ports (None: unrecorded, the RDMA devices unknown; (): none, /sys/class/infiniband absent).
    `net_plugin` the network plugin NCCL loaded (its `Plugin Path : /dir/libnccl-net.so` line): its
    directory is recorded on LD_LIBRARY_PATH and listed with that file, where gpudoctor looks for it
    (gpudoctor/probes/net_plugin.py, as NCCL's dlopen does).
    `p2p_read_ok` {gpu: GPUs it can read from peer-to-peer} gives NVML's P2P status for each pair (the
    others NOT_SUPPORTED); None leaves it unrecorded. `cc` the compute capability (major, minor)."""
    n = len(topo.gpus)
    buses = [g.bus_id for g in topo.gpus]
    devices: dict[str, dict] = {}
    files: dict[str, str] = {}
    for g in topo.gpus:
        d: dict = {"nvmlDeviceGetPciInfo": {"busId": nvml_bus(g.bus_id)}} if g.bus_id else {}
        if g.name:
            d["nvmlDeviceGetName"] = g.name
        if cc:
            d["nvmlDeviceGetCudaComputeCapability"] = list(cc)
        links: list[tuple[int, Optional[int]]] = []  # (device type, peer GPU) per active link
        if g.nvlink_to is not None and g.nvswitch_links is not None:
            links = [(NVLINK_SWITCH, None)] * g.nvswitch_links
            for j, count in enumerate(g.nvlink_to):
                links += [(NVLINK_GPU, j)] * count
            for k, (kind, peer) in enumerate(links):
                d[f"nvmlDeviceGetNvLinkState({k})"] = 1
                d[f"nvmlDeviceGetNvLinkVersion({k})"] = 4
                d[f"nvmlDeviceGetNvLinkRemoteDeviceType({k})"] = kind
                if peer is not None:
                    assert buses[peer], f"GPU{g.index}'s NVLink to GPU{peer}, whose bus id is not known"
                    d[f"nvmlDeviceGetNvLinkRemotePciInfo({k})"] = {"busId": nvml_bus(buses[peer])}
            d[f"nvmlDeviceGetNvLinkState({len(links)})"] = NOT_SUPPORTED
        for j in range(n):
            if j == g.index:
                continue
            label = g.paths[j] if j < len(g.paths) else None
            if label in LEVELS:
                d[f"nvmlDeviceGetTopologyCommonAncestor({j})"] = LEVELS[label]
            if p2p_read_ok is not None:
                ok = j in p2p_read_ok.get(g.index, ())
                d[f"nvmlDeviceGetP2PStatus({j},READ)"] = P2P_OK if ok else P2P_NOT_SUPPORTED
        devices[str(g.index)] = d
        if g.numa is not None and g.bus_id:
            files[f"/sys/bus/pci/devices/{g.bus_id.lower()}/numa_node"] = f"{g.numa}\n"
    dirs: dict = {}
    if rdma is not None:
        rdma_devices = list(dict.fromkeys(p.device for p in rdma))
        dirs[IB_ROOT] = rdma_devices if rdma_devices else {"error": NOT_FOUND}
        for dev in rdma_devices:
            dirs[f"{IB_ROOT}/{dev}/ports"] = [str(p.port) for p in rdma if p.device == dev]
        for p in rdma:
            base = f"{IB_ROOT}/{p.device}/ports/{p.port}"
            files[f"{base}/state"] = f"{p.state}\n"
            files[f"{base}/link_layer"] = f"{p.link_layer}\n"
    env: dict[str, Optional[str]] = {k: v for k, v in topo.env.items() if k.startswith("NCCL_")}
    if net_plugin is not None:
        directory, _, name = net_plugin.rpartition("/")
        env["LD_LIBRARY_PATH"] = directory
        dirs[directory] = [name]
    return Recording(
        files=files,
        dirs=dirs,
        nvml_system={"nvmlInit": None, "nvmlDeviceGetCount": n},
        nvml_devices=devices,
        env=env,
    )


def write(topo: Topology, root: Path, **kwargs) -> Path:
    """The snapshot directory of `topo` under `root` (see `recording` for the keyword arguments)."""
    manifest = {"format": FORMAT, "version": VERSION, "created": "2026-12-05T00:00:00Z", "redacted": True}
    write_dir(recording(topo, **kwargs), str(root), manifest)
    return root


def replay(root: Path) -> Topology:
    """The topology `gpudoctor nccl --snapshot root` sees: the real loader, probes and from_facts."""
    from gpudoctor.collect import collect
    from gpudoctor.commands._shared import collect as open_snapshot
    from gpudoctor.derive import derive
    from gpudoctor.nccl.topology import from_facts
    from gpudoctor.probes import registry

    host, _, deadline = open_snapshot(str(root), [], None, inspect_python=False)
    facts, _ = collect(host, deadline, registry())
    return from_facts(derive(facts))
