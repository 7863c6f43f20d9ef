"""The node as NCCL sees it when it picks a transport: GPUs, their NVLinks and PCIe distances, RDMA NICs,
the NCCL environment, GPUDirect RDMA's way in, ACS. Built from gpudoctor's facts (`from_facts`) or from an
`nvidia-smi topo -m` matrix (`from_topo_matrix`). Every field that could not be read is None; nothing is
guessed, so predict.py can say "unknown" with the reason.

PCIe distances are kept as `nvidia-smi topo -m` labels (X, PIX, PXB, PHB, NODE, SYS); `nccl_path`
translates one into NCCL's path type (NVIDIA/nccl@v2.23.4-1:src/graph/topo.h, PATH_* defines). The two
vocabularies share PIX, PXB, PHB and SYS with the same meaning (topo.h: "Connection traversing at most a
single PCIe bridge" / "multiple PCIe bridges (without traversing the PCIe Host Bridge)" / "PCIe as well
as a PCIe Host Bridge (typically the CPU)" / "PCIe as well as the SMP interconnect between NUMA nodes");
NCCL has no NODE: two host bridges of one CPU meet at NCCL's CPU node, a path through it is PATH_PHB
(ncclTopoSetPaths: "Consider a path going through the CPU as PATH_PHB"; reported by a user as "why does
nccl recognize PHB instead of NODE", https://github.com/NVIDIA/nccl/issues/1502).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from ..probes.gpus import MAX_NVLINKS, SELF, TOPOLOGY_LABELS
from ..probes.kernel_log import normalise_pci
from ..probes.system import NCCL_PATH_VARIABLES

# X, PIX, PXB, PHB, NODE, SYS: the labels gpus[].topology.levels holds, as `nvidia-smi topo -m` prints them
LABELS = (SELF, *TOPOLOGY_LABELS.values())

# NCCL's path types in their order of distance (NVIDIA/nccl@v2.29.7-1:src/graph/topo.cc topoPathTypeStr:
# LOC NVL NVB C2C PIX PXB P2C PXN PHB SYS NET DIS). The numbers differ between releases (C2C came in
# v2.26, P2C in v2.27, and moved before PXN in v2.28) but the order of the ones a PCIe/NVLink x86 node
# has (LOC < NVL < NVB < PIX < PXB < PHB < SYS < NET) is the same in every tag from v2.12 to v2.30, and
# NCCL only ever compares them with <= against a level, so ranks here are what matters.
PATH_TYPES = ("LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS", "NET", "DIS")
RANK = {name: i for i, name in enumerate(PATH_TYPES)}

_LABEL_TO_PATH = {"X": "LOC", "PIX": "PIX", "PXB": "PXB", "PHB": "PHB", "NODE": "PHB", "SYS": "SYS"}

# interconnect.gpu_nics[].relation (gpudoctor/probes/interconnect.py) as a topo label. `pcie switch` is a
# switch above both: PIX or PXB, which NCCL treats alike wherever it compares with its defaults (PXB).
_RELATION_TO_LABEL = {
    "pcie switch": "PXB",
    "root port": "PHB",
    "same numa node": "NODE",
    "other numa node": "SYS",
}


def nccl_path(label: Optional[str]) -> Optional[str]:
    """An nvidia-smi topo label (X, PIX, PXB, PHB, NODE, SYS) as NCCL's path type; None if unknown."""
    return _LABEL_TO_PATH.get(label or "")


@dataclass(frozen=True)
class Gpu:
    index: int
    bus_id: Optional[str] = None
    name: Optional[str] = None  # NVML product name, "NVIDIA H100 80GB HBM3"
    numa: Optional[int] = None  # -1: the platform reports none
    # NVLinks: active links to each GPU (by index, same length as the node's GPUs); None when not read
    nvlink_to: Optional[tuple[int, ...]] = None
    nvswitch_links: Optional[int] = None  # active links to an NVSwitch
    # PCIe distance to each GPU as a topo label ("X" for itself); None where unknown
    paths: tuple[Optional[str], ...] = ()
    # NVML P2P status: GPUs this one cannot read from (nvmlDeviceGetP2PStatus READ not OK); None unknown
    p2p_no_read: Optional[tuple[int, ...]] = None
    compute_capability: Optional[str] = None  # "9.0"
    pcie_gen: Optional[int] = None
    pcie_width: Optional[int] = None


@dataclass(frozen=True)
class Nic:
    name: str  # the RDMA device, mlx5_0
    port: Optional[str] = None  # mlx5_0/1
    state: Optional[str] = None  # ACTIVE, DOWN, INIT ...
    link_layer: Optional[str] = None  # InfiniBand | Ethernet (RoCE)
    rate_gbps: Optional[float] = None
    paths: tuple[Optional[str], ...] = ()  # topo label to each GPU; None unknown

    @property
    def active(self) -> Optional[bool]:
        return None if self.state is None else self.state.upper().endswith("ACTIVE")


@dataclass(frozen=True)
class Topology:
    gpus: tuple[Gpu, ...]
    nics: Optional[tuple[Nic, ...]] = ()  # None: whether there are RDMA NICs is unknown
    env: Mapping[str, str] = field(default_factory=dict)  # NCCL_* variables that are set
    nccl_version: Optional[str] = None
    peermem: Optional[bool] = None
    gdr_path: Optional[str] = None  # nvidia-peermem | dma-buf | none
    acs_redirect: Optional[tuple[str, ...]] = ()  # None: not read (needs root)
    cpu_vendor: Optional[str] = None  # intel | amd | zhaoxin | x86 (another x86 vendor) | arm | power
    # Intel: bdw | skl | srp | erp, Zhaoxin: yongfeng | zx, by CPUID family and model (cpu_model); else None
    cpu_model: Optional[str] = None
    # the network plugin NCCL would load (its path); "" none on the library path; None not looked for
    net_plugin: Optional[str] = None
    sources: tuple[str, ...] = ()  # where the inputs came from, for the report


# ---------------------------------------------------------------------------------------------------
# from gpudoctor's facts

# The NCCL variables gpudoctor/probes/system.py collects, each env.<its name in lower case>.
ENV_FACTS = {
    f"env.{var.lower()}": var
    for var in ("NCCL_P2P_DISABLE", "NCCL_IB_DISABLE", "NCCL_SOCKET_IFNAME", *NCCL_PATH_VARIABLES)
}

# The CPU as NCCL names it (NVIDIA/nccl@v2.23.4-1:src/graph/xml.cc ncclTopoGetXmlFromCpu: arch from the
# build, x86_64 | arm64 | ppc64, and on x86 CPUID's vendor string; topo.cc kvDictCpuVendor). An x86 vendor
# not in that dictionary (HygonGenuine ...) falls back to no vendor (xml.h kvConvertToInt): "x86" here.
_MACHINE_ARCH = {"x86_64": "x86", "amd64": "x86", "aarch64": "arm", "arm64": "arm"}
_X86_VENDOR = {
    "GenuineIntel": "intel",
    "AuthenticAMD": "amd",
    "CentaurHauls": "zhaoxin",
    "Shanghai": "zhaoxin",  # "  Shanghai  " in CPUID; /proc/cpuinfo's value without the blanks
}


def cpu_vendor(machine: Optional[str], vendor_id: Optional[str]) -> Optional[str]:
    """The CPU vendor as NCCL tells it, from `uname -m` and /proc/cpuinfo's vendor_id; None unknown."""
    arch = _MACHINE_ARCH.get(machine or "") or ("power" if (machine or "").startswith("ppc64") else None)
    if arch is None and machine is None and vendor_id:
        arch = "x86"  # only x86 CPUs print vendor_id
    if arch != "x86":
        return arch
    if vendor_id is None:
        return None
    return _X86_VENDOR.get(vendor_id.strip(), "x86")


def cpu_model(vendor: Optional[str], family: Optional[int], model: Optional[int]) -> Optional[str]:
    """NCCL's CPU model class (topo.cc ncclTopoAddCpu): Intel family 6 from model 0x55 Skylake (skl), 0x8F
    Sapphire Rapids (srp), 0xCF Emerald Rapids (erp), else Broadwell (bdw) (srp/erp from v2.26.2,
    NVIDIA/nccl@v2.26.2-1:src/graph/topo.cc); Zhaoxin family 7 model 0x5B Yongfeng. None when not known."""
    if vendor == "intel":
        if family is None or model is None:
            return None
        if family != 6:
            return "bdw"
        return "erp" if model >= 0xCF else "srp" if model >= 0x8F else "skl" if model >= 0x55 else "bdw"
    if vendor == "zhaoxin" and family is not None and model is not None:
        return "yongfeng" if (family, model) == (7, 0x5B) else "zx"
    return None


def _value(facts: Any, name: str) -> Any:
    fact = facts.get(name)
    return fact.value if fact.known else None


def _int(value: Any) -> Optional[int]:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _bus_key(bus: Any) -> Optional[str]:
    """00000000:1B:00.0 (NVML) and 0000:1b:00.0 (sysfs) as one key (probes/kernel_log.normalise_pci); None
    for no bus id or one that is no PCI address."""
    return normalise_pci(str(bus)) if bus else None


def _gpu_from_facts(facts: Any, i: int, n: int, bus_index: dict[str, int]) -> Gpu:
    p = f"gpus[{i}]"
    levels = _value(facts, f"{p}.topology.levels")
    paths: list[Optional[str]] = [None] * n
    if isinstance(levels, list) and len(levels) == n:
        paths = [lv if lv in LABELS else None for lv in levels]
    else:  # the older fact: only which GPUs are across the socket interconnect
        cross = _value(facts, f"{p}.topology.cross_socket")
        if isinstance(cross, list):
            for j in cross:
                if isinstance(j, int) and 0 <= j < n:
                    paths[j] = "SYS"
    paths[i] = "X"
    nvlink_to: Optional[tuple[int, ...]] = None
    nvswitch: Optional[int] = None
    peers = _value(facts, f"{p}.nvlink.peers")
    links_up = _value(facts, f"{p}.nvlink.links_up")
    if isinstance(peers, list):
        counts = [0] * n
        nvswitch = 0
        unmatched = False
        for peer in peers:
            if str(peer).lower() == "nvswitch":
                nvswitch += 1
            elif _bus_key(peer) in bus_index:
                counts[bus_index[_bus_key(peer)]] += 1
            else:
                unmatched = True  # a peer that is no GPU here (a CPU, a GPU not visible): not counted
        nvlink_to = tuple(counts)
        if unmatched and not any(counts) and not nvswitch:
            nvlink_to, nvswitch = None, None
    elif links_up == 0:  # no active link at all: no NVLink to anything
        nvlink_to, nvswitch = (0,) * n, 0
    no_read = _value(facts, f"{p}.p2p.no_read")
    cc = _value(facts, f"{p}.compute_capability")
    numa = _int(_value(facts, f"{p}.numa_node"))
    return Gpu(
        index=i,
        bus_id=_value(facts, f"{p}.bus_id"),
        name=_value(facts, f"{p}.name"),
        numa=numa,
        nvlink_to=nvlink_to,
        nvswitch_links=nvswitch,
        paths=tuple(paths),
        p2p_no_read=tuple(j for j in no_read if isinstance(j, int)) if isinstance(no_read, list) else None,
        compute_capability=str(cc) if cc is not None else None,
        pcie_gen=_int(_value(facts, f"{p}.pcie.gen_max")),
        pcie_width=_int(_value(facts, f"{p}.pcie.width_max")),
    )


def _nics_from_facts(facts: Any, gpus: tuple[Gpu, ...]) -> Optional[tuple[Nic, ...]]:
    count = facts.get("interconnect.ib_ports.count")
    if not count.known or not isinstance(count.value, int):
        return None
    n = len(gpus)
    near: dict[tuple[str, Optional[str]], str] = {}  # (nic device, gpu bus) -> label
    for k in range(facts.count("interconnect.gpu_nics")):
        q = f"interconnect.gpu_nics[{k}]"
        gpu, nic, rel = (_value(facts, f"{q}.{x}") for x in ("gpu", "nic", "relation"))
        bus = _bus_key(gpu)
        if bus and nic and rel in _RELATION_TO_LABEL:
            near[(str(nic), bus)] = _RELATION_TO_LABEL[rel]
    nics = []
    for k in range(count.value):
        q = f"interconnect.ib_ports[{k}]"
        port = _value(facts, f"{q}.name")
        if not port:
            continue
        device = str(port).split("/", 1)[0]
        rate = _value(facts, f"{q}.rate_gbps")
        paths = tuple(near.get((device, _bus_key(g.bus_id))) for g in gpus)
        nics.append(
            Nic(
                name=device,
                port=str(port),
                state=_value(facts, f"{q}.state"),
                link_layer=_value(facts, f"{q}.link_layer"),
                rate_gbps=float(rate) if isinstance(rate, (int, float)) else None,
                paths=paths if len(paths) == n else (None,) * n,
            )
        )
    return tuple(nics)


def from_facts(facts: Any) -> Topology:
    """The node from gpudoctor's Facts (gpudoctor/facts.py). Facts not collected give None fields."""
    n = facts.value("gpus.count", 0)
    n = n if isinstance(n, int) else 0
    bus_index = {}
    for i in range(n):
        bus = _bus_key(facts.value(f"gpus[{i}].bus_id"))
        if bus:
            bus_index[bus] = i
    gpus = tuple(_gpu_from_facts(facts, i, n, bus_index) for i in range(n))
    env = {}
    for name, var in ENV_FACTS.items():
        fact = facts.get(name)
        if fact.known and fact.value is not None:
            env[var] = str(fact.value)
    acs_fact = facts.get("interconnect.acs.redirect_bridges")
    acs = tuple(str(b) for b in acs_fact.value) if acs_fact.known and acs_fact.value is not None else None
    newest = facts.get("nccl.newest")
    vendor = cpu_vendor(_value(facts, "system.machine"), _value(facts, "system.cpu.vendor"))
    family, model = (_int(_value(facts, f"system.cpu.{k}")) for k in ("family", "model"))
    found = _value(facts, "nccl.net_plugin.found")
    path = _value(facts, "nccl.net_plugin.path")
    net_plugin = "" if found is False else str(path) if found and path else None
    return Topology(
        gpus=gpus,
        nics=_nics_from_facts(facts, gpus),
        env=env,
        nccl_version=str(newest.value) if newest.known else None,
        peermem=facts.value("interconnect.peermem_loaded"),
        gdr_path=facts.value("interconnect.gdr_path"),
        acs_redirect=acs,
        cpu_vendor=vendor,
        cpu_model=cpu_model(vendor, family, model),
        net_plugin=net_plugin,
        sources=("facts",),
    )


# ---------------------------------------------------------------------------------------------------
# from an `nvidia-smi topo -m` matrix

_NV = re.compile(r"NV(\d+)")
# MAX_NVLINKS (probes/gpus.py, NVML_NVLINK_MAX_LINKS): 18, an H100 SXM5's and a B200's, the most of any GPU


def from_topo_matrix(
    cells: Mapping[tuple[str, str], str],
    gpus: list[str],
    nics: list[str] = (),  # type: ignore[assignment]
    numa: Optional[Mapping[str, int]] = None,
    env: Optional[Mapping[str, str]] = None,
    **extra: Any,
) -> Topology:
    """The node from the cells of `nvidia-smi topo -m`: {("GPU0", "GPU1"): "NV18", ("GPU0", "NIC0"): "PIX"}.

    `gpus` and `nics` are the names in column order (GPU0.., NIC0.. or mlx5_0..), `numa` the NUMA Affinity
    column; a GPU whose row is missing (a cut excerpt) is known by nothing but its column. What the matrix
    cannot say stays None: NVML's P2P status, port states, rates, peermem, ACS; pass them as keyword
    arguments of Topology (`peermem=`, `gdr_path=`, `acs_redirect=`...) when known.
    An NVSwitch node shows every pair as NV#: when a GPU's NV# counts add up to more than 18 (the most
    links any NVIDIA GPU has, H100/B200), the links go to NVSwitches and NV# is the count per GPU."""
    n = len(gpus)
    nv = [[0] * n for _ in range(n)]
    labels: list[list[Optional[str]]] = [[None] * n for _ in range(n)]
    for i, a in enumerate(gpus):
        for j, b in enumerate(gpus):
            cell = (cells.get((a, b)) or "").strip()
            m = _NV.fullmatch(cell)
            if m:
                nv[i][j] = int(m.group(1))
            elif cell in LABELS:
                labels[i][j] = cell
            elif cell == "SOC":  # older nvidia-smi: "Path traverses a socket-level link (e.g. QPI)"
                labels[i][j] = "SYS"
    switched = any(sum(row) > MAX_NVLINKS for row in nv)
    gpu_rows = []
    for i in range(n):
        if not any((gpus[i], b) in cells for b in gpus):  # a row the text does not have: nothing known
            gpu_rows.append(
                Gpu(
                    index=i,
                    numa=(numa or {}).get(gpus[i]),
                    paths=tuple("X" if j == i else None for j in range(n)),
                )
            )
            continue
        if switched:
            to, sw = (0,) * n, max(nv[i][j] for j in range(n) if j != i)
        else:
            to, sw = tuple(nv[i]), 0
        gpu_rows.append(
            Gpu(
                index=i,
                numa=(numa or {}).get(gpus[i]),
                nvlink_to=to,
                nvswitch_links=sw,
                paths=tuple(labels[i]),
            )
        )
    nic_rows = tuple(
        Nic(
            name=name,
            paths=tuple(
                c if (c := (cells.get((gpus[g], name)) or "").strip()) in LABELS else None for g in range(n)
            ),
        )
        for name in nics
    )
    return Topology(gpus=tuple(gpu_rows), nics=nic_rows, env=dict(env or {}), sources=("topo -m",), **extra)
