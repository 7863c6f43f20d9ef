"""Which transport NCCL will use, predicted from a Topology by NCCL's own rules, before any job runs.

Inside the node, for each pair of GPUs (NCCL's order, NVIDIA/nccl@v2.23.4-1:src/transport.cc
selectTransport: the first of P2P, SHM, NET whose canConnect says yes):
  1. the path type: NVL over NVLink (direct or through an NVSwitch), NVB through one NVLink-connected GPU,
     else the PCIe distance PIX/PXB/PHB/SYS (src/graph/paths.cc ncclTopoSetPaths);
  2. P2P when the path is no farther than the P2P level: PXB by default, SYS for two GPUs on an AMD x86
     CPU, NCCL_P2P_DISABLE=1 or NCCL_P2P_LEVEL overriding both (paths.cc ncclTopoCheckP2p, ncclGetLevel),
     and NVML's P2P status read and write OK (same function; on an NVLink pair a bad status is an error);
  3. unless the network would be faster: both GPUs reach a NIC within PXB faster than they reach each
     other (paths.cc ncclTopoCheckNet, called by p2p.cc p2pCanConnect and shm.cc shmCanConnect);
  4. otherwise SHM through the CPU unless NCCL_SHM_DISABLE=1 (src/transport/shm.cc shmCanConnect),
     otherwise NET.
Between nodes, per GPU: the network NCCL takes (src/net.cc ncclNetInit: a plugin, else IB, else
Socket; IB is out when NCCL_IB_DISABLE is set or no port is ACTIVE, src/transport/net_ib.cc ncclIbInit),
the NIC nearest the GPU or, when that crosses the CPU, one reached through an NVLink peer (PXN,
paths.cc ncclTopoComputePaths), and GPUDirect RDMA when the NIC can reach GPU memory (nvidia-peermem or
DMA-BUF, net_ib.cc ncclIbGdrSupport / ncclIbDmaBufSupport; src/graph/topo.cc) and the GPU is within
NCCL_NET_GDR_LEVEL, PXB by default, of it (paths.cc ncclTopoCheckGdr).

The rules were read in v2.23.4-1 and compared with v2.29.7-1 and v2.30.7-1: the same but where a comment
says so (PATH_C2C/P2C for Grace systems, NVB from v2.8.3, PXN from v2.12.7, NVLS from v2.17.1). The
prediction is for a job that uses every GPU of the node, each rank sharing the host's /dev/shm (ranks in
separate containers with their own /dev/shm get neither P2P nor SHM, p2p.cc/shm.cc "isolated containers").
What the topology does not say is "unknown" with the reason; nothing is assumed fine.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional

from ..compat import version_tuple
from .log import parse_transport
from .topology import RANK, Gpu, Nic, Topology, nccl_path

TAG = "NVIDIA/nccl@v2.23.4-1"
CITE = {
    "setpaths": f"{TAG}:src/graph/paths.cc:ncclTopoSetPaths",
    "checkp2p": f"{TAG}:src/graph/paths.cc:ncclTopoCheckP2p",
    "getlevel": f"{TAG}:src/graph/paths.cc:ncclGetLevel",
    "checknet": f"{TAG}:src/graph/paths.cc:ncclTopoCheckNet",
    "checkgdr": f"{TAG}:src/graph/paths.cc:ncclTopoCheckGdr",
    "pxn": f"{TAG}:src/graph/paths.cc:ncclTopoComputePaths (PXN)",
    "select": f"{TAG}:src/transport.cc:selectTransport",
    "shm": f"{TAG}:src/transport/shm.cc:shmCanConnect",
    "p2p": f"{TAG}:src/transport/p2p.cc:p2pCanConnect",
    "netinit": f"{TAG}:src/net.cc:ncclNetInit",
    "ibinit": f"{TAG}:src/transport/net_ib.cc:ncclIbInit",
    "ibgdr": f"{TAG}:src/transport/net_ib.cc:ncclIbGdrSupport",
    "topogdr": f"{TAG}:src/graph/topo.cc:ncclTopoFillNet (gdr = NCCL_PTR_CUDA or DMA-BUF)",
    "nvls": f"{TAG}:src/transport/nvls.cc:ncclNvlsInit",
    "nvlbw": f"{TAG}:src/graph/topo.h:ncclTopoNVLinkBw",
    "pcibw": f"{TAG}:src/graph/topo.cc:ncclTopoAddPci (width*speed/80)",
    "cpubw": f"{TAG}:src/graph/topo.cc:ncclTopoGetInterCpuBw",
    "acs": "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"
    "#pci-access-control-services-acs",
}


@dataclass(frozen=True)
class PairPrediction:
    src: int
    dst: int
    transport: str  # p2p-nvlink | p2p-pcie | shm | net | none | unknown
    path: Optional[str]  # NCCL path type: NVL, NVB, PIX, PXB, PHB, SYS; None unknown
    reasons: tuple[str, ...]  # the rule chain, each ending with its NCCL source in brackets
    via: Optional[int] = None  # NVB: the GPU in between
    limited_by: tuple[str, ...] = ()  # cause codes where the hardware allows better (see FINDINGS)


@dataclass(frozen=True)
class NetPrediction:
    gpu: int
    transport: str  # ib-gdr | ib | socket | unknown (the network: Prediction.net_name)
    nic: Optional[str] = None
    path: Optional[str] = None  # NCCL path type GPU -> NIC
    gdr: Optional[bool] = None
    pxn_via: Optional[int] = None
    reasons: tuple[str, ...] = ()
    limited_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class Finding:
    code: str
    subjects: tuple[str, ...]  # "GPU0-GPU1" or "GPU3 -> network"
    cause: str
    fix: str

    def line(self) -> str:
        return f"{', '.join(self.subjects)}: {self.cause}. Fix: {self.fix}"


@dataclass(frozen=True)
class Prediction:
    pairs: tuple[PairPrediction, ...]
    network: tuple[NetPrediction, ...]
    net_name: Optional[str]
    net_reasons: tuple[str, ...]
    nvls: Optional[bool]
    nvls_reasons: tuple[str, ...]
    findings: tuple[Finding, ...] = field(default=())

    def pair(self, i: int, j: int) -> PairPrediction:
        for p in self.pairs:
            if p.src == i and p.dst == j:
                return p
        raise KeyError((i, j))

    def matrix(self) -> list[list[str]]:
        """Transport per ordered pair, "X" on the diagonal."""
        n = max([p.src for p in self.pairs] + [p.dst for p in self.pairs] + [-1]) + 1
        rows = [["X"] * n for _ in range(n)]
        for p in self.pairs:
            rows[p.src][p.dst] = p.transport
        return rows


# ---------------------------------------------------------------------------------------------------
# NCCL's environment parsing


def _strtol(text: str) -> Optional[int]:
    """C strtol(text, NULL, 0): leading integer (0x.., 0.. octal), None where there is no number."""
    s = text.strip()
    sign = -1 if s[:1] == "-" else 1
    s = s.lstrip("+-")
    base, digits = 10, "0123456789"
    if s[:2].lower() == "0x":
        base, digits, s = 16, "0123456789abcdefABCDEF", s[2:]
    elif s[:1] == "0" and len(s) > 1:
        base, digits = 8, "01234567"
    end = 0
    while end < len(s) and s[end] in digits:
        end += 1
    return sign * int(s[:end], base) if end else None


def _version_tuple(version: Optional[str]) -> Optional[tuple[int, ...]]:
    """'2.23.4' -> (2, 23, 4) by compat.version_tuple; None when there is no version or no number in it."""
    return version_tuple(version or "") or None


def _level_names(version: Optional[str]) -> tuple[str, ...]:
    """Names NCCL_P2P_LEVEL / NCCL_NET_GDR_LEVEL accept: topoPathTypeStr up to SYS (ncclGetLevel's loop).
    C2C exists from v2.26, P2C from v2.27 (NVIDIA/nccl@v2.26.2-1, @v2.27.3-1:src/graph/topo.cc)."""
    v = _version_tuple(version)
    names = [n for n in RANK if RANK[n] <= RANK["SYS"]]
    if v is not None and v < (2, 27):
        names.remove("P2C")
    if v is not None and v < (2, 26):
        names.remove("C2C")
    return tuple(names)


_OLD_LEVELS = ("LOC", "PIX", "PXB", "PHB", "SYS", "SYS")  # paths.cc levelsOldToNew


def user_level(env: dict, disable_var: Optional[str], level_var: str, version: Optional[str]):
    """NCCL's ncclGetLevel: (path type, the variable that set it) or (None, None) when unset/invalid."""
    if disable_var and disable_var in env and _strtol(env[disable_var]) == 1:
        return "LOC", disable_var
    text = env.get(level_var)
    if text is None:
        return None, None
    if text in _level_names(version):
        return text, level_var
    if text[:1].isdigit():
        old = _strtol(text) or 0
        return _OLD_LEVELS[min(old, len(_OLD_LEVELS) - 1)], level_var
    return None, None


def _param(env: dict, name: str, default: int) -> int:
    """NCCL_PARAM: strtoll(value, 0), the default when unset or empty (src/misc/param.cc ncclLoadParam)."""
    text = env.get(name)
    if not text:
        return default
    value = _strtol(text)
    return default if value is None else value


# ---------------------------------------------------------------------------------------------------
# bandwidths in NCCL's own model (GB/s), used only where NCCL compares them (ncclTopoCheckNet, NVB)

_NVL_BW = ((90, 20.6), (80, 20.0), (70, 20.0), (60, 18.0))  # topo.h SM*_NVLINK_BW; SM86 in nvlink_bw
_PCI_GEN_SPEED = {1: 15, 2: 30, 3: 60, 4: 120, 5: 240, 6: 480}  # topo.cc kvDictPciGen, x100 Mbps per lane
_CPU_BW = {"amd": 16.0, "arm": 6.0, "power": 32.0, "x86": 5000.0}  # topo.h AMD_BW, ARM_BW, P9_BW, LOC_BW
# Intel by CPU model: BDW_QPI_BW (QPI_BW before v2.26) 6, SKL_QPI_BW 10, and from v2.26.2 SRP_QPI_BW 22,
# ERP_QPI_BW 40 (NVIDIA/nccl@v2.26.2-1:src/graph/topo.h); Zhaoxin: ZPI_BW 6, YONGFENG_ZPI_BW 9
_MODEL_BW = {"bdw": 6.0, "skl": 10.0, "srp": 22.0, "erp": 40.0, "zx": 6.0, "yongfeng": 9.0}


def _cc(gpu: Gpu) -> Optional[int]:
    if not gpu.compute_capability:
        return None
    major, _, minor = gpu.compute_capability.partition(".")
    try:
        return int(major) * 10 + int(minor or 0)
    except ValueError:
        return None


def nvlink_bw(gpu: Gpu) -> Optional[float]:
    """NCCL's NVLink bandwidth per link for the GPU's compute capability (topo.h ncclTopoNVLinkBw)."""
    cc = _cc(gpu)
    if cc is None:
        return None
    if cc == 86:
        return 12.0
    for floor, bw in _NVL_BW:
        if cc >= floor:
            return bw
    return 20.0  # ncclTopoNVLinkBw's fallback (SM80_NVLINK_BW)


def pci_bw(gpu: Gpu) -> Optional[float]:
    if gpu.pcie_gen is None or gpu.pcie_width is None or gpu.pcie_gen not in _PCI_GEN_SPEED:
        return None
    width = gpu.pcie_width or 16  # topo.cc: "Manage cases where speed was not indicated in /sys"
    return width * _PCI_GEN_SPEED[gpu.pcie_gen] / 80.0


def cpu_bw(
    vendor: Optional[str], model: Optional[str] = None, version: Optional[str] = None
) -> Optional[float]:
    """NCCL's CPU-to-CPU bandwidth (topo.cc ncclTopoGetInterCpuBw); an x86 vendor NCCL does not know keeps
    LOC_BW. Intel and Zhaoxin depend on the model; Sapphire/Emerald Rapids on the release too (before
    v2.26 they count as Skylake). None when that is not known."""
    if vendor in ("intel", "zhaoxin"):
        if model in ("srp", "erp"):
            v = _version_tuple(version)
            if v is None:
                return None
            return _MODEL_BW[model] if v >= (2, 26) else _MODEL_BW["skl"]
        return _MODEL_BW.get(model or "")
    return _CPU_BW.get(vendor or "")


# ---------------------------------------------------------------------------------------------------
# the path between two GPUs


@dataclass(frozen=True)
class _Path:
    type: Optional[str]
    bw: Optional[float] = None
    via: Optional[int] = None
    why: str = ""


def _gpu_path(topo: Topology, i: int, j: int) -> _Path:
    gi, gj = topo.gpus[i], topo.gpus[j]
    label = gi.paths[j] if j < len(gi.paths) else None
    # A GPU known to have no NVLink at all rules out an NVLink path whatever the other GPU's links are.
    if _no_nvlink(gi) or _no_nvlink(gj):
        return _pcie_path(gi, gj, label)
    if gi.nvlink_to is None or gj.nvlink_to is None or gi.nvswitch_links is None or gj.nvswitch_links is None:
        missing = gi.index if gi.nvlink_to is None or gi.nvswitch_links is None else gj.index
        return _Path(
            None, why=f"GPU{missing}'s NVLink peers were not read, so an NVLink path cannot be ruled out"
        )
    nvl_bw = nvlink_bw(gi)
    direct = gi.nvlink_to[j]
    switched = min(gi.nvswitch_links, gj.nvswitch_links)
    if direct or switched:
        links = max(direct, switched)
        how = f"{direct} direct NVLink(s)" if direct else f"NVSwitch ({switched} links each)"
        return _Path("NVL", links * nvl_bw if nvl_bw else None, why=f"NVL: {how} [{CITE['setpaths']}]")
    pcie = _pcie_path(gi, gj, label)
    version = _version_tuple(topo.nccl_version)
    # PATH_NVB exists from v2.8.3 (NVIDIA/nccl@v2.8.3-1:src/graph/topo.cc topoPathTypeStr)
    if _param(topo.env, "NCCL_NVB_DISABLE", 0) == 0 and (version is None or version >= (2, 8)):
        best: Optional[tuple[int, int]] = None  # (links of the narrower hop, k): the widest route wins
        for k, gk in enumerate(topo.gpus):
            if k in (i, j) or gk.nvlink_to is None:
                continue
            a, b = gi.nvlink_to[k], gk.nvlink_to[j]
            if a and b and (best is None or min(a, b) > best[0]):
                best = (min(a, b), k)
        if best is not None:
            bw = best[0] * nvl_bw if nvl_bw else None
            # the BFS keeps a PCIe path of the same hop count (one switch, PIX) only when it is faster
            if not (pcie.type == "PIX" and bw is not None and pcie.bw is not None and pcie.bw >= bw):
                k = best[1]
                return _Path("NVB", bw, via=k, why=f"NVB: NVLink through GPU{k} [{CITE['setpaths']}]")
    return pcie


def _no_nvlink(gpu: Gpu) -> bool:
    return gpu.nvswitch_links == 0 and gpu.nvlink_to is not None and not any(gpu.nvlink_to)


def _pcie_path(gi: Gpu, gj: Gpu, label: Optional[str]) -> _Path:
    pci = nccl_path(label)
    if pci is None:
        return _Path(None, why=f"the PCIe distance between GPU{gi.index} and GPU{gj.index} is not known")
    bws = [pci_bw(gi), pci_bw(gj)]
    bw = None if any(b is None for b in bws) else min(bws)  # type: ignore[type-var]
    return _Path(pci, bw, why=f"{pci}: PCIe path {label} [{CITE['setpaths']}]")


# ---------------------------------------------------------------------------------------------------
# the network


def _network(topo: Topology) -> tuple[Optional[str], tuple[str, ...], tuple[str, ...]]:
    """(IB | Socket | None, reasons, cause codes)."""
    env = topo.env
    forced = env.get("NCCL_NET")
    if forced is None or forced.lower() not in ("ib", "socket"):
        plugin = _plugin_network(topo, forced)
        if plugin is not None:
            return plugin
    ib_disabled = _param(env, "NCCL_IB_DISABLE", 0) != 0
    active = [
        n for n in topo.nics or () if n.active and (n.link_layer or "").lower() in ("infiniband", "ethernet")
    ]
    why: list[str] = []
    if ib_disabled:
        why.append(f"NCCL_IB_DISABLE={env['NCCL_IB_DISABLE']}: IB is off [{CITE['ibinit']}]")
        codes = ("ib-disabled",) if active else ()
        if forced and forced.lower() == "ib":
            return (
                None,
                (*why, f"and NCCL_NET=IB: NCCL stops with 'network IB not found' [{CITE['netinit']}]"),
                codes,
            )
        return "Socket", tuple(why), codes
    if topo.nics is None:
        return None, ("the RDMA devices were not read",), ()
    if not topo.nics:
        why.append(f"no RDMA device: 'NET/IB : No device found.' [{CITE['ibinit']}]")
        return "Socket", tuple(why), ()
    if not active:
        if any(n.active is None for n in topo.nics):
            return None, ("the RDMA ports' states were not read",), ()
        names = ", ".join(n.port or n.name for n in topo.nics)
        why.append(f"no RDMA port is ACTIVE ({names}): IB finds no device [{CITE['ibinit']}]")
        return "Socket", tuple(why), ("ports-down",)
    if forced and forced.lower() == "socket":
        return "Socket", (f"NCCL_NET=Socket chooses sockets over IB [{CITE['netinit']}]",), ("net-socket",)
    kinds = sorted({"RoCE" if (n.link_layer or "").lower() == "ethernet" else "IB" for n in active})
    ports = f"{len(active)} ACTIVE RDMA port(s) ({'/'.join(kinds)})"
    if topo.net_plugin == "" or forced:
        why.append(f"{ports}: 'Using network IB' [{CITE['netinit']}]")
    else:
        why.append(
            f"{ports}: 'Using network IB' [{CITE['netinit']}]; a network plugin (libnccl-net.so) would come "
            "first: whether one is on the library path is not known"
        )
    return "IB", tuple(why), ()


def _plugin_network(topo: Topology, forced: Optional[str]):
    """_network's answer where a network plugin decides it (NCCL_NET unset or naming neither IB nor Socket),
    else None. NCCL tries the plugin first and takes it when it has a device (src/net.cc ncclNetInit, the
    plugin in ncclNets[0] before IB and Socket); which network a plugin drives is not modelled here."""
    plugin = topo.net_plugin
    if forced is not None:  # NCCL_NET=X, X neither IB nor Socket: only a plugin named X will do
        if plugin == "":
            names = topo.env.get("NCCL_NET_PLUGIN") or "libnccl-net.so"
            why = (
                f"NCCL_NET={forced} names no built-in network and no network plugin ({names}) is on the "
                f"library path: NCCL stops with 'network {forced} not found' [{CITE['netinit']}]"
            )
            return None, (why,), ()
        where = f" {plugin}" if plugin else " (whether one is on the library path is not known)"
        why = (
            f"NCCL_NET={forced} names a network plugin: NCCL uses the plugin{where} if that is its name, "
            f"else stops with 'network {forced} not found'; gpudoctor does not model plugins "
            f"[{CITE['netinit']}]"
        )
        return None, (why,), ()
    if not plugin:
        return None
    fallback, fallback_why, _ = _network(replace(topo, net_plugin=""))
    then = f"without one, {fallback or 'unknown'}: {'; '.join(fallback_why)}"
    why = (
        f"NCCL loads the network plugin {plugin} first and uses it when it finds a device ('Using network "
        f"<its name>', e.g. IBext for HPC-X's nccl-rdma-sharp plugin), a network gpudoctor does not model "
        f"[{CITE['netinit']}]; {then}"
    )
    return None, (why,), ()


def _nearest_nic(topo: Topology, g: int, nics: list[Nic]) -> tuple[Optional[Nic], Optional[str]]:
    """The NIC NCCL gives the GPU: ncclTopoGetLocal (NVIDIA/nccl@v2.23.4-1:src/graph/topo.cc) takes the
    highest path bandwidth, then the smallest path type; this orders by path type alone, which agrees
    wherever the nearer NIC is no slower (a farther, faster NIC would win in NCCL). None when a NIC's
    distance is unknown and none known is within PXB."""
    best, best_rank, unknown = None, None, False
    for nic in nics:
        label = nic.paths[g] if g < len(nic.paths) else None
        path = nccl_path(label)
        if path is None:
            unknown = True
            continue
        if best_rank is None or RANK[path] < best_rank:
            best, best_rank = nic, RANK[path]
    if best is None or (unknown and best_rank > RANK["PXB"]):
        return None, None
    return best, nccl_path(best.paths[g])


def _net_for_gpu(topo: Topology, g: int, network: Optional[str], paths: dict) -> NetPrediction:
    if network is None:
        return NetPrediction(g, "unknown", reasons=("the network NCCL takes is unknown",))
    if network == "Socket":
        return NetPrediction(g, "socket", reasons=("sockets: no GPUDirect RDMA",))
    env = topo.env
    active = [n for n in topo.nics or () if n.active]
    nic, path = _nearest_nic(topo, g, active)
    reasons: list[str] = []
    codes: list[str] = []
    # the GPU's own nearest NIC (any state): when it is down NCCL goes to a farther one
    own, own_path = _nearest_nic(topo, g, list(topo.nics or ()))
    if own is not None and own.active is False and (nic is None or RANK[own_path] < RANK[path]):
        reasons.append(f"its nearest NIC {own.port or own.name} ({own_path}) is {own.state}")
        codes.append("nic-down")
    if nic is None:
        why = f"the PCIe distance from GPU{g} to the active NICs is not known"
        return NetPrediction(g, "unknown", reasons=(*reasons, why), limited_by=tuple(codes))
    reasons.append(f"NIC {nic.name}, path {path} [{CITE['checkgdr']}]")
    pxn_via = None
    distance = path
    version = _version_tuple(topo.nccl_version)
    pxn = _param(env, "NCCL_PXN_DISABLE", 0) != 1 and (version is None or version >= (2, 12))  # PXN: v2.12.7
    if RANK[path] > RANK["PXB"] and pxn:
        for k in range(len(topo.gpus)):
            if k == g or paths.get((k, g)) != "NVL":
                continue
            knic, kpath = _nearest_nic(topo, k, [nic])
            if knic is not None and RANK[kpath] <= RANK["PXB"]:
                pxn_via, distance = k, kpath
                reasons.append(
                    f"PXN: through NVLink to GPU{k}, which is {kpath} from {nic.name} [{CITE['pxn']}]"
                )
                break
    level, var = user_level(env, None, "NCCL_NET_GDR_LEVEL", topo.nccl_version)
    level = level or "PXB"  # v2.27+: P2C when NCCL_NET_GDR_C2C (default 1); same as PXB without C2C
    # beyond the level, GPUDirect RDMA is off whatever the NIC can do (ncclTopoCheckGdr checks distance)
    if topo.gdr_path is None and RANK[distance] <= RANK[level]:
        return NetPrediction(
            g,
            "unknown",
            nic.name,
            path,
            None,
            pxn_via,
            (*reasons, "whether the NIC can reach GPU memory is unknown"),
            tuple(codes),
        )
    if topo.gdr_path == "none":
        reasons.append(
            "no GPUDirect RDMA: nvidia-peermem is not loaded and DMA-BUF is not usable "
            f"[{CITE['ibgdr']}; {CITE['topogdr']}]"
        )
        if RANK[distance] <= RANK["PXB"]:
            codes.append("peermem")
        return NetPrediction(g, "ib", nic.name, path, False, pxn_via, tuple(reasons), tuple(codes))
    if RANK[distance] > RANK[level]:
        reasons.append(
            f"GPUDirect RDMA off: distance {distance} > {var or 'default'} {level} [{CITE['checkgdr']}]"
        )
        if var and RANK[distance] <= RANK["PXB"]:
            codes.append("env-gdr-level")
        elif not var:
            codes.append("distance")
        return NetPrediction(g, "ib", nic.name, path, False, pxn_via, tuple(reasons), tuple(codes))
    reasons.append(
        f"GPUDirect RDMA on ({topo.gdr_path}): distance {distance} <= {level} [{CITE['checkgdr']}], as long "
        "as CUDA reports the GPU capable (cudaDevAttrGPUDirectRDMASupported, src/net.cc ncclGpuGdrSupport; "
        "GeForce boards are not)"
    )
    return NetPrediction(g, "ib-gdr", nic.name, path, True, pxn_via, tuple(reasons), tuple(codes))


# ---------------------------------------------------------------------------------------------------
# one pair


def _check_net(
    topo: Topology, i: int, j: int, speed: Optional[float], network: Optional[str]
) -> Optional[bool]:
    """ncclTopoCheckNet: True when both GPUs reach a NIC within PXB faster than `speed`; None unknown."""
    if _param(topo.env, "NCCL_NET_DISABLE_INTRA", 0) == 1:
        return False
    if network == "Socket":
        # NCCL's NET nodes are then IP interfaces, which gpudoctor does not place on the PCIe tree: a socket
        # interface within PXB of both GPUs and faster than this path would make NCCL choose NET (rare)
        return False
    nets: list[tuple[float, bool]] = []  # per GPU: best known bandwidth to a NIC within PXB, any unknown
    for g in (i, j):
        best, unsure = 0.0, False
        for nic in topo.nics or ():
            path = nccl_path(nic.paths[g] if g < len(nic.paths) else None)
            if nic.active is False or (path is not None and RANK[path] > RANK["PXB"]):
                continue  # a port that is not ACTIVE is no NCCL device (net_ib.cc ncclIbInit)
            gbw, nbw = pci_bw(topo.gpus[g]), (nic.rate_gbps / 8 if nic.rate_gbps else None)
            if path is None or gbw is None or nbw is None or nic.active is None or network is None:
                unsure = True
                continue
            best = max(best, min(gbw, nbw))  # NET bw = port speed / 8000 (topo.cc ncclTopoAddNet)
        nets.append((best, unsure))
    if any(best == 0.0 and not unsure for best, unsure in nets):
        return False  # a GPU with no NIC within PXB: never NET
    if speed is not None and all(best > speed for best, _ in nets):
        return True
    if speed is not None and any(best <= speed and not unsure for best, unsure in nets):
        return False
    return None


def _pair(topo: Topology, i: int, j: int, path: _Path, network: Optional[str]) -> PairPrediction:
    env, n = topo.env, len(topo.gpus)
    if path.type is None:
        return PairPrediction(i, j, "unknown", None, (path.why,))
    reasons = [path.why]
    codes: list[str] = []

    def unknown(why: str) -> PairPrediction:
        return PairPrediction(i, j, "unknown", path.type, (*reasons, why), path.via, tuple(codes))

    level, var = user_level(env, "NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL", topo.nccl_version)
    default = "PXB"
    if topo.cpu_vendor == "amd" and n <= 2:
        default = "SYS"
    elif topo.cpu_vendor is None and n <= 2 and RANK[path.type] > RANK["PXB"] and level is None:
        return unknown(
            "with two GPUs NCCL allows P2P up to SYS on AMD x86 CPUs only; the CPU vendor is not known "
            f"[{CITE['checkp2p']}]"
        )
    p2p_level = level or default
    p2p = RANK[path.type] <= RANK[p2p_level]
    source = f"{var}={env[var]}" if var else "default"
    reasons.append(
        f"P2P level {p2p_level} ({source}): {path.type} {'<=' if p2p else '>'} {p2p_level} "
        f"[{CITE['checkp2p']}]"
    )
    if not p2p and var and RANK[path.type] <= RANK[default]:
        codes.append("env-p2p-disable" if var == "NCCL_P2P_DISABLE" else "env-p2p-level")
    if p2p:
        hops = [(i, path.via), (path.via, j)] if path.via is not None else [(i, j)]
        status_unknown = False
        for a, b in hops:
            ga = topo.gpus[a]
            if ga.p2p_no_read is None:
                status_unknown = True
            elif b in ga.p2p_no_read:
                if RANK[path.type] <= RANK["NVB"] and not _param(env, "NCCL_IGNORE_DISABLED_P2P", 0):
                    reasons.append(
                        f"NVML reports P2P not OK between NVLink-connected GPU{a} and GPU{b}: NCCL stops "
                        "with "
                        f"'P2P is disabled between NVLINK connected GPUs' [{CITE['checkp2p']}]"
                    )
                    return PairPrediction(
                        i, j, "none", path.type, tuple(reasons), path.via, ("nvlink-p2p-off",)
                    )
                reasons.append(f"NVML reports P2P not OK from GPU{a} to GPU{b}: no P2P [{CITE['checkp2p']}]")
                codes.append("acs" if topo.acs_redirect else "nvml-p2p")
                p2p = False
                break
        if p2p and status_unknown:
            if RANK[path.type] > RANK["NVB"]:
                return unknown(
                    f"NVML's P2P status was not read: NCCL uses P2P only when it is OK [{CITE['checkp2p']}]"
                )
            reasons.append("NVML's P2P status was not read (NCCL requires it OK on NVLink, else it stops)")
    if p2p:
        use_net = _check_net(topo, i, j, path.bw, network) if path.type not in ("NVL", "NVB") else False
        if use_net is None:
            return unknown(f"whether a NIC would be faster than this path is unknown [{CITE['checknet']}]")
        if use_net:
            reasons.append(
                f"both GPUs reach a NIC faster than each other: NET [{CITE['checknet']}; {CITE['p2p']}]"
            )
            return PairPrediction(i, j, "net", path.type, tuple(reasons), path.via, tuple(codes))
        kind = "p2p-nvlink" if path.type in ("NVL", "NVB") else "p2p-pcie"
        if kind == "p2p-pcie" and topo.acs_redirect:
            reasons.append(
                f"ACS redirects P2P on {', '.join(topo.acs_redirect)}: the traffic goes up to the root "
                f"complex [{CITE['acs']}]"
            )
            codes.append("acs")
        return PairPrediction(i, j, kind, path.type, tuple(reasons), path.via, tuple(codes))
    # no P2P: SHM, else NET (shm.cc shmCanConnect, net.cc canConnect)
    if _param(env, "NCCL_SHM_DISABLE", 0) == 1:
        reasons.append(f"NCCL_SHM_DISABLE=1: no SHM; NET [{CITE['shm']}]")
        return PairPrediction(i, j, "net", path.type, tuple(reasons), path.via, (*codes, "env-shm-disable"))
    speed = _through_cpu_bw(topo, i, j, path)
    use_net = _check_net(topo, i, j, speed, network)
    if use_net is None:
        return unknown(
            f"no P2P; whether a NIC would beat SHM through the CPU is unknown [{CITE['checknet']}]"
        )
    if use_net:
        reasons.append(
            f"both GPUs reach a NIC faster than through the CPU: NET [{CITE['checknet']}; {CITE['shm']}]"
        )
        return PairPrediction(i, j, "net", path.type, tuple(reasons), path.via, tuple(codes))
    reasons.append(f"SHM through the CPU [{CITE['shm']}]")
    return PairPrediction(i, j, "shm", path.type, tuple(reasons), path.via, tuple(codes))


def _through_cpu_bw(topo: Topology, i: int, j: int, path: _Path) -> Optional[float]:
    """The GPU-to-GPU bandwidth once NCCL diverts a non-P2P pair through the CPU (paths.cc addInterStep):
    both GPUs' PCIe links, and the CPU-to-CPU link when the GPUs sit on two sockets
    (topo.cc ncclTopoGetInterCpuBw). Where NVLink hides the PCIe label, the NUMA nodes tell the sockets."""
    gi, gj = topo.gpus[i], topo.gpus[j]
    label = gi.paths[j] if j < len(gi.paths) else None
    if label is not None:
        cross: Optional[bool] = label == "SYS"
    elif gi.numa is not None and gj.numa is not None and gi.numa >= 0 and gj.numa >= 0:
        cross = gi.numa != gj.numa
    else:
        cross = None
    bws = [pci_bw(gi), pci_bw(gj)]
    if cross is None:
        return None
    if cross:
        bws.append(cpu_bw(topo.cpu_vendor, topo.cpu_model, topo.nccl_version))
    return None if any(b is None for b in bws) else min(bws)  # type: ignore[type-var]


# ---------------------------------------------------------------------------------------------------
# NVLS


def _nvls(topo: Topology) -> tuple[Optional[bool], tuple[str, ...]]:
    n = len(topo.gpus)
    if _param(topo.env, "NCCL_NVLS_ENABLE", 2) == 0:
        return False, (f"NCCL_NVLS_ENABLE=0 [{CITE['nvls']}]",)
    if n <= 2:
        return False, (f"NVLS needs more than 2 GPUs [{CITE['nvls']}]",)
    if any(g.nvswitch_links is None for g in topo.gpus):
        return None, ("the GPUs' NVSwitch links were not read",)
    if not all(g.nvswitch_links for g in topo.gpus):
        return False, ("not every GPU is on an NVSwitch",)
    ccs = [_cc(g) for g in topo.gpus]
    if any(c is None for c in ccs):
        return None, ("the GPUs' compute capability is not known (NVLS multicast needs Hopper or later)",)
    if min(ccs) < 90:  # type: ignore[type-var]
        return False, ("NVLink SHARP (multicast) needs compute capability 9.0 or later",)
    v = _version_tuple(topo.nccl_version)
    if v is not None and v < (2, 17):
        return False, (
            f"NCCL {topo.nccl_version} predates NVLS (src/transport/nvls.cc appears in v2.17.1-1)",
        )
    return True, (
        "NVSwitch on every GPU, sm90+: NVLS if CUDA reports multicast support (Fabric Manager running) "
        f"[{CITE['nvls']}]",
    )


# ---------------------------------------------------------------------------------------------------
# findings

FINDINGS = {
    "env-p2p-disable": (
        "NCCL_P2P_DISABLE=1 turns P2P off: these pairs go through {t}",
        "unset NCCL_P2P_DISABLE",
    ),
    "env-p2p-level": (
        "NCCL_P2P_LEVEL is below the pairs' path: they go through {t}",
        "unset NCCL_P2P_LEVEL (NCCL's default allows P2P up to PXB)",
    ),
    "nvml-p2p": (
        "the driver reports no peer-to-peer access (NVML P2P status) between these GPUs: they go through {t}",
        "check `nvidia-smi topo -p2p r`; P2P is off on GeForce boards and under IOMMU/ACS isolation",
    ),
    "acs": (
        "ACS redirect on {acs} sends their PCIe peer-to-peer traffic up to the CPU root complex ({t}): "
        "slower, and with the IOMMU on it can hang (NCCL troubleshooting: ACS)",
        "disable ACS on those bridges: `setpci -s <bridge> ECAP_ACS+0x6.w=0000` for each, or in the BIOS",
    ),
    "env-shm-disable": (
        "NCCL_SHM_DISABLE=1: pairs without P2P go over the network",
        "unset NCCL_SHM_DISABLE",
    ),
    "nvlink-p2p-off": (
        "NVML reports P2P not OK between NVLink-connected GPUs: NCCL stops at init",
        "check NVLink health (`nvidia-smi nvlink -s`) and the Fabric Manager; "
        "NCCL_IGNORE_DISABLED_P2P=1 only hides it",
    ),
    "ib-disabled": (
        "NCCL_IB_DISABLE is set although RDMA ports are ACTIVE: inter-node traffic uses TCP sockets",
        "unset NCCL_IB_DISABLE",
    ),
    "net-socket": (
        "NCCL_NET=Socket although RDMA ports are ACTIVE: inter-node traffic uses TCP sockets",
        "unset NCCL_NET",
    ),
    "ports-down": (
        "no RDMA port is ACTIVE: NCCL falls back to TCP sockets",
        "bring the ports up (`ibstat`: cable, switch port, subnet manager)",
    ),
    "nic-down": (
        "the GPU's nearest NIC port is down: NCCL uses a farther NIC",
        "bring that port up (`ibstat`: cable, switch port, subnet manager)",
    ),
    "peermem": (
        "the NIC is close but cannot reach GPU memory (nvidia-peermem not loaded, DMA-BUF unusable): "
        "IB without GPUDirect RDMA, staged through host memory",
        "`modprobe nvidia-peermem` (and load it at boot)",
    ),
    "distance": (
        "the GPU's nearest NIC is across the CPU (no PCIe switch in common, no NVLink peer near one): "
        "IB without GPUDirect RDMA",
        "put a NIC under the GPU's PCIe switch, or pin the rank to a NIC on its socket (NCCL_IB_HCA)",
    ),
    "env-gdr-level": (
        "NCCL_NET_GDR_LEVEL is below the GPU-NIC path: GPUDirect RDMA off",
        "unset NCCL_NET_GDR_LEVEL",
    ),
}


def _findings(
    pairs: list[PairPrediction], nets: list[NetPrediction], net_codes: tuple[str, ...], topo: Topology
):
    grouped: dict[str, list[str]] = {}
    transports: dict[str, set] = {}
    for p in pairs:
        if p.src > p.dst:
            continue  # one line per unordered pair
        for code in p.limited_by:
            grouped.setdefault(code, []).append(f"GPU{p.src}-GPU{p.dst}")
            transports.setdefault(code, set()).add(p.transport)
    for code in net_codes:
        grouped.setdefault(code, []).append("node -> network")
    for q in nets:
        for code in q.limited_by:
            grouped.setdefault(code, []).append(f"GPU{q.gpu} -> {q.nic or 'network'}")
    out = []
    for code, subjects in grouped.items():
        cause, fix = FINDINGS[code]
        t = "/".join(sorted(transports.get(code, ()))) or "the network"
        out.append(
            Finding(code, tuple(subjects), cause.format(t=t, acs=", ".join(topo.acs_redirect or ())), fix)
        )
    return tuple(out)


# ---------------------------------------------------------------------------------------------------
# what NCCL printed, against the prediction


def observed_transport(via: str) -> Optional[str]:
    """The transport of a `Channel ... via X` line of NCCL_DEBUG=INFO (the text after "via"), as log.py's
    parse_transport reads it: p2p, shm, net; None for anything else (COLLNET, NVLS). A log does not say
    whether P2P runs over NVLink or PCIe."""
    kind = parse_transport(via).kind
    return kind if kind in ("p2p", "shm", "net") else None


def disagreements(prediction: Prediction, observed: dict) -> tuple[str, ...]:
    """Where NCCL's log and the prediction differ: `observed` maps (GPU, GPU) by NVML index (the bracket
    of `0[0] -> 1[1]` from v2.19 on) to the text after "via". A predicted "unknown" is reported too."""
    out = []
    for (i, j), via in sorted(observed.items()):
        seen = observed_transport(via)
        if seen is None or i == j:
            continue
        try:
            pair = prediction.pair(i, j)
        except KeyError:
            out.append(f"GPU{i} -> GPU{j}: NCCL used {seen} ({via}); no such pair in the topology")
            continue
        if pair.transport.split("-", 1)[0] != seen:
            why = f" ({pair.reasons[-1]})" if pair.transport == "unknown" else ""
            out.append(f"GPU{i} -> GPU{j}: predicted {pair.transport}{why}, NCCL used {seen} ({via})")
    return tuple(out)


def predict(topo: Topology) -> Prediction:
    """The transports NCCL would choose on this node, with the rule chain and the findings."""
    n = len(topo.gpus)
    network, net_reasons, net_codes = _network(topo)
    paths = {(i, j): _gpu_path(topo, i, j) for i in range(n) for j in range(n) if i != j}
    pairs = [_pair(topo, i, j, paths[(i, j)], network) for (i, j) in paths]
    types = {k: v.type for k, v in paths.items()}
    nets = [_net_for_gpu(topo, g, network, types) for g in range(n)]
    nvls, nvls_reasons = _nvls(topo)
    return Prediction(
        pairs=tuple(pairs),
        network=tuple(nets),
        net_name=network,
        net_reasons=net_reasons,
        nvls=nvls,
        nvls_reasons=nvls_reasons,
        findings=_findings(pairs, nets, net_codes, topo),
    )
