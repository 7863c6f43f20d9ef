"""Interconnect facts for multi-node jobs: InfiniBand/RoCE ports, GPUDirect RDMA's kernel module, ACS on the
PCIe bridges above the GPUs, the IOMMU mode, and which RDMA NIC is nearest each GPU.

Formats, as the kernel writes them (drivers/infiniband/core/sysfs.c; Documentation/ABI/stable/
sysfs-class-infiniband):
    ports/<n>/state       "4: ACTIVE"            ("%d: %s": DOWN, INIT, ARMED, ACTIVE, ACTIVE_DEFER)
    ports/<n>/phys_state  "5: LinkUp"            (Sleep, Polling, Disabled, PortConfigurationTraining, LinkUp,
                                                  LinkErrorRecovery, Phy Test)
    ports/<n>/rate        "400 Gb/sec (4X NDR)"  ("%d%s Gb/sec (%dX%s)", the %s being ".5" or "")
    ports/<n>/link_layer  "InfiniBand" or "Ethernet" (RoCE)

ACS control lives in PCIe extended configuration space, which the kernel lets only root read past the first
64 bytes; so ACS is read from `lspci -vvv` run as root (its "ACSCtl:" lines), and is unknown with that reason
otherwise. The bridges that matter are those above a GPU: found by listing each bridge's sysfs directory,
whose subdirectories are the devices behind it, so no symlink needs to be resolved.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Optional

from ..facts import Fact, Facts, FactSpec, collected, known, list_facts, unknown
from ..host.base import NOT_FOUND, HostError
from ..host.base import listdir_or_reason as _listdir
from ..host.base import read_or_reason as _read
from . import ProbeSpec
from .system import version_numbers

FACT_SPECS: tuple[FactSpec, ...] = (
    FactSpec(
        "interconnect.rdma.devices", "list[str]", "", "RDMA devices in /sys/class/infiniband, e.g. mlx5_0"
    ),
    FactSpec(
        "interconnect.rdma.device_count", "int", "", "how many RDMA devices (InfiniBand or RoCE) there are"
    ),
    FactSpec("interconnect.ib_ports.count", "int", "", "RDMA ports (every port of every RDMA device)"),
    FactSpec("interconnect.ib_ports[].name", "str", "", "device/port, e.g. mlx5_0/1"),
    FactSpec(
        "interconnect.ib_ports[].state",
        "str",
        "",
        "logical port state: DOWN, INIT, ARMED, ACTIVE, ACTIVE_DEFER",
    ),
    FactSpec(
        "interconnect.ib_ports[].phys_state",
        "str",
        "",
        "physical port state: Sleep, Polling, Disabled, PortConfigurationTraining, LinkUp, LinkErrorRecovery",
    ),
    FactSpec(
        "interconnect.ib_ports[].rate_gbps",
        "float",
        "Gb/s",
        "the port's data rate (active width times speed)",
    ),
    FactSpec("interconnect.ib_ports[].link_layer", "str", "", "`InfiniBand`, or `Ethernet` for RoCE"),
    FactSpec("interconnect.ib_ports_active", "int", "", "RDMA ports whose state is ACTIVE"),
    FactSpec("interconnect.ib_rate_max_gbps", "float", "Gb/s", "the fastest rate of an active RDMA port"),
    FactSpec(
        "interconnect.peermem_loaded",
        "bool",
        "",
        "the GPUDirect RDMA kernel module is loaded (nvidia_peermem, or legacy nv_peer_mem; /proc/modules)",
    ),
    FactSpec("interconnect.peermem_module", "str", "", "which of the two is loaded"),
    FactSpec(
        "interconnect.memory_peers_nv_mem",
        "bool",
        "",
        "a peer-memory client is registered as nv_mem (/sys/kernel/mm/memory_peers/nv_mem{,_nc}/version): "
        "what NCCL before 2.23.4 looks for to use GPUDirect RDMA",
    ),
    FactSpec(
        "interconnect.gdr_path",
        "str",
        "",
        "derived: how NCCL (nccl.newest) can reach GPU memory from the RDMA NIC: `nvidia-peermem` (a "
        "peer-memory module it detects), `dma-buf` (possible: NCCL >= 2.13.4, Linux >= 5.12, a driver for "
        "CUDA >= 11.7; the GPU and rdma-core must support it too) or `none`",
    ),
    FactSpec(
        "interconnect.gdr_blockers",
        "list[str]",
        "",
        "derived: why each way is closed, when interconnect.gdr_path is none",
    ),
    FactSpec(
        "interconnect.iommu.mode",
        "str",
        "",
        "the IOMMU as the kernel command line sets it: `off`, `passthrough` (iommu=pt), `translated` "
        "(intel_iommu=on, amd_iommu=on, iommu.passthrough=0) or `default` (no IOMMU argument)",
    ),
    FactSpec("interconnect.iommu.args", "list[str]", "", "the IOMMU arguments of /proc/cmdline"),
    FactSpec("interconnect.net_interfaces", "list[str]", "", "network interface names (/sys/class/net)"),
    FactSpec(
        "interconnect.net_running",
        "list[str]",
        "",
        "network interfaces that are up and operational (IFF_UP in /sys/class/net/*/flags, operstate up or "
        "unknown): those getifaddrs() reports RUNNING",
    ),
    FactSpec(
        "interconnect.nccl_auto_interfaces",
        "list[str]",
        "",
        "derived: running interfaces NCCL's own choice takes before its fallbacks when NCCL_SOCKET_IFNAME is "
        "unset: names that start with neither docker, lo nor virbr (NCCL src/misc/socket.cc)",
    ),
    FactSpec(
        "interconnect.nccl_auto_fallback",
        "list[str]",
        "",
        "derived: running interfaces NCCL falls back to when there is none of those, in its order: docker*, "
        "then lo*, then virbr*",
    ),
    FactSpec(
        "interconnect.nccl_auto_interface_count",
        "int",
        "",
        "derived: how many nccl_auto_interfaces there are",
    ),
    FactSpec(
        "interconnect.nccl_auto_fallback_count", "int", "", "derived: how many nccl_auto_fallback there are"
    ),
    FactSpec(
        "interconnect.acs.redirect_bridges",
        "list[str]",
        "",
        "PCIe bridges above a GPU whose ACS control redirects peer-to-peer requests or completions "
        "(ReqRedir+ or CmpltRedir+ in lspci -vvv, read as root only)",
    ),
    FactSpec(
        "interconnect.acs.redirect_bridge_count",
        "int",
        "",
        "how many are in interconnect.acs.redirect_bridges",
    ),
    FactSpec(
        "interconnect.gpu_nics.count", "int", "", "NVIDIA GPUs on the PCI bus, when there is an RDMA NIC"
    ),
    FactSpec("interconnect.gpu_nics[].gpu", "str", "", "the GPU's PCI address"),
    FactSpec("interconnect.gpu_nics[].nic", "str", "", "the RDMA device nearest it"),
    FactSpec(
        "interconnect.gpu_nics[].relation",
        "str",
        "",
        "how near: `pcie switch` (a switch above both), `root port`, `same numa node`, `other numa node`, or "
        "`unknown` (no NUMA information)",
    ),
    FactSpec("interconnect.gpu_nics[].gpu_numa", "int", "", "the GPU's NUMA node (-1: none reported)"),
    # NCCL's predicted paths: derived by gpudoctor/nccl/path_facts.py (derive.py), on this probe's facts
    FactSpec(
        "nccl_paths.pairs",
        "list[str]",
        "",
        "derived: per pair of GPUs (lower index first), the transport NCCL will use between them, predicted "
        "by NCCL's own rules (gpudoctor/nccl/predict.py): `GPU0-GPU1: p2p-nvlink (NVL)`; p2p-nvlink, "
        "p2p-pcie, shm, net, none or unknown, with NCCL's path type",
    ),
    FactSpec(
        "nccl_paths.network",
        "list[str]",
        "",
        "derived: per GPU, how NCCL will reach other nodes: `GPU0: ib-gdr via mlx5_0/1 (PIX)`; ib-gdr (IB or "
        "RoCE with GPUDirect RDMA), ib (staged through host memory), socket or unknown",
    ),
    FactSpec(
        "nccl_paths.findings",
        "list[str]",
        "",
        "derived: where NCCL will take a slower path between GPUs of this node than the hardware allows: "
        "the pairs, the cause and the fix, one entry per cause",
    ),
    FactSpec(
        "nccl_paths.finding_count",
        "int",
        "",
        "derived: how many entries nccl_paths.findings has; unknown when it has none and a pair could not "
        "be predicted",
    ),
    FactSpec(
        "nccl_paths.net_findings",
        "list[str]",
        "",
        "derived: where NCCL will reach other nodes by a slower path than the hardware allows (sockets "
        "with IB present, IB without GPUDirect RDMA): the GPUs, the cause and the fix, one entry per cause",
    ),
    FactSpec(
        "nccl_paths.net_finding_count",
        "int",
        "",
        "derived: how many entries nccl_paths.net_findings has; unknown when it has none and a GPU's "
        "network path could not be predicted",
    ),
    FactSpec(
        "nccl_paths.busbw_gbs",
        "float",
        "GB/s",
        "derived: the all-reduce bus bandwidth the node's best ring allows over the predicted transports "
        "(gpudoctor/nccl/busbw.py), to compare with bench's measured all-reduce",
    ),
    FactSpec(
        "nccl_paths.nvls",
        "bool",
        "",
        "derived: NCCL can use NVLink SHARP (NVLS: NVSwitch multicast) on this node",
    ),
)
# Not in preflight: it lists the PCI tree and, as root, runs lspci -vvv.
PROBE = ProbeSpec("interconnect")

IB_ROOT = "/sys/class/infiniband"
NET_ROOT = "/sys/class/net"
PCI_ROOT = "/sys/bus/pci/devices"
MODULES = "/proc/modules"
CMDLINE = "/proc/cmdline"
STATUS = "/proc/self/status"
LSPCI = ("lspci", "-vvv", "-D")
PEERMEM_MODULES = ("nvidia_peermem", "nv_peer_mem")  # /proc/modules spells module names with underscores
NEEDS_ROOT = "needs root: ACS control is in PCIe extended configuration space, which only root can read"
# Held as text, compiled by re's own cache when first used: a host without InfiniBand uses none of them
# (compiled at import they cost every check 0.25 ms).
_BDF = r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]"
_RATE = r"\s*([0-9]+(?:\.[0-9]+)?) Gb/sec\b"
_STATE = r"\s*([0-9]+):\s*(\S.*?)\s*$"
_MAX_PORTS = 64  # a switch's sysfs lists port 0 only; a host has a handful of HCAs, a few ports each


# --- pure parse functions -------------------------------------------------------------------------------


def parse_port_state(text: str) -> Optional[str]:
    """ "4: ACTIVE" -> "ACTIVE"; "5: LinkUp" -> "LinkUp"; None when it is not that form."""
    m = re.fullmatch(_STATE, text.strip())
    return m.group(2) if m else None


def parse_rate_gbps(text: str) -> Optional[float]:
    """ "400 Gb/sec (4X NDR)" -> 400.0; "2.5 Gb/sec (1X SDR)" -> 2.5."""
    m = re.match(_RATE, text)
    return float(m.group(1)) if m else None


def parse_modules(text: str) -> set[str]:
    """Module names from /proc/modules ("nvidia_peermem 16384 0 - Live 0x0000000000000000 (OE)")."""
    return {line.split()[0] for line in text.splitlines() if line.strip()}


def parse_uevent_slot(text: str) -> Optional[str]:
    """PCI_SLOT_NAME from a device's uevent file, e.g. 0000:17:00.0."""
    m = re.search(r"^PCI_SLOT_NAME=(\S+)$", text, re.MULTILINE)
    return m.group(1).lower() if m else None


def parse_uid(text: str) -> Optional[int]:
    """The effective uid from /proc/self/status ("Uid:\t1000\t1000\t1000\t1000": real, effective, ...)."""
    m = re.search(r"^Uid:\s+[0-9]+\s+([0-9]+)", text, re.MULTILINE)
    return int(m.group(1)) if m else None


def iommu_mode(cmdline: str) -> tuple[str, list[str]]:
    """How the kernel command line sets the IOMMU, and the arguments that say so.

    `off` (intel_iommu=off, amd_iommu=off or iommu=off), `passthrough` (iommu=pt, iommu.passthrough=1: DMA
    is not translated for host-owned devices), `translated` (intel_iommu=on, iommu.passthrough=0, or
    amd_iommu=on/force without pt), or `default` (no IOMMU argument: the kernel's build default decides)."""
    args = [a for a in cmdline.split() if re.match(r"(intel_iommu|amd_iommu|iommu)(\.[a-z_]+)?=", a)]
    values: dict[str, str] = {}
    for arg in args:
        key, _, value = arg.partition("=")
        values[key] = value.lower()
    if any(values.get(k) == "off" for k in ("intel_iommu", "amd_iommu", "iommu")):
        return "off", args
    if values.get("iommu") == "pt" or values.get("iommu.passthrough") in ("1", "y", "on"):
        return "passthrough", args
    intel = set(values.get("intel_iommu", "").split(","))
    if (
        "on" in intel
        or values.get("iommu.passthrough") in ("0", "n", "off")
        or values.get("amd_iommu")
        in (
            "on",
            "force",
            "force_isolation",
        )
    ):
        return "translated", args
    return "default", args


def parse_lspci_acs(text: str) -> dict[str, dict[str, Any]]:
    """Per device in `lspci -vvv -D` output: {"bridge": bool, "redirect": bool or None, "denied": bool}.

    A device block starts at an unindented line "0000:16:01.0 PCI bridge: ..."; its ACS control line reads
    "ACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-". ReqRedir+
    or CmpltRedir+ send peer-to-peer requests or completions up to the root complex. Without root, lspci
    prints "Capabilities: <access denied>" instead of the extended capabilities."""
    out: dict[str, dict[str, Any]] = {}
    current: Optional[dict[str, Any]] = None
    for line in text.splitlines():
        if line and not line[0].isspace():
            head = line.split(" ", 1)
            bdf = head[0].lower()
            if re.fullmatch(_BDF, bdf):
                current = {"bridge": "PCI bridge" in line, "redirect": None, "denied": False}
                out[bdf] = current
            else:
                current = None
            continue
        if current is None:
            continue
        stripped = line.strip()
        if stripped.startswith("Capabilities:") and "<access denied>" in stripped:
            current["denied"] = True
        if stripped.startswith("ACSCtl:"):
            flags = stripped.split()[1:]
            redirect = any(f in ("ReqRedir+", "CmpltRedir+") for f in flags)
            current["redirect"] = bool(current["redirect"]) or redirect
    return out


def relation(
    gpu_path: list[str], nic_path: list[str], gpu_numa: Optional[int], nic_numa: Optional[int]
) -> str:
    """How a NIC sits relative to a GPU: `pcie switch` (a bridge below the root port is above both),
    `root port` (the same root port), `same numa node`, `other numa node`, or `unknown` (no bridge in common
    and the NUMA node of one is not known: a single-socket host reports -1). Paths list the bridges from the
    top down."""
    common = 0
    for a, b in zip(gpu_path, nic_path):
        if a != b:
            break
        common += 1
    if common >= 2:
        return "pcie switch"
    if common == 1:
        return "root port"
    if gpu_numa is None or nic_numa is None or gpu_numa < 0 or nic_numa < 0:
        return "unknown"
    return "same numa node" if gpu_numa == nic_numa else "other numa node"


_RANK = {"pcie switch": 0, "root port": 1, "same numa node": 2, "unknown": 3, "other numa node": 4}


# --- reading through the Host ---------------------------------------------------------------------------


def _numa(host: Any, bdf: str) -> Optional[int]:
    text, _ = _read(host, f"{PCI_ROOT}/{bdf}/numa_node")
    try:
        return int(text.strip()) if text is not None else None
    except ValueError:
        return None


def _ports(host: Any, devices: list[str]) -> list[dict[str, Fact]]:
    members: list[dict[str, Fact]] = []
    for dev in devices:
        names, _ = _listdir(host, f"{IB_ROOT}/{dev}/ports")
        for port in sorted(names or [], key=lambda n: (len(n), n))[:_MAX_PORTS]:
            base = f"{IB_ROOT}/{dev}/ports/{port}"
            member: dict[str, Fact] = {"name": known(f"{dev}/{port}", base)}
            for field, parse in (
                ("state", parse_port_state),
                ("phys_state", parse_port_state),
                ("rate_gbps", parse_rate_gbps),
                ("link_layer", str.strip),
            ):
                path = f"{base}/{'rate' if field == 'rate_gbps' else field}"
                text, reason = _read(host, path)
                value = parse(text) if text is not None else None
                if text is None:
                    member[field] = unknown(reason or NOT_FOUND, path)
                elif value in (None, ""):
                    member[field] = unknown(f"could not parse {text.strip()!r}", path)
                else:
                    member[field] = known(value, path)
            members.append(member)
    return members


def pci_classes(host: Any) -> tuple[Optional[dict[str, str]], Optional[str]]:
    """{bdf: "vendor class"} for every PCI device, or (None, why)."""
    names, reason = _listdir(host, PCI_ROOT)
    if names is None:
        return None, reason
    out: dict[str, str] = {}
    for bdf in names:
        vendor, _ = _read(host, f"{PCI_ROOT}/{bdf}/vendor")
        cls, _ = _read(host, f"{PCI_ROOT}/{bdf}/class")
        out[bdf.lower()] = f"{(vendor or '').strip()} {(cls or '').strip()}"
    return out, None


def _is_nvidia_gpu(desc: str) -> bool:
    vendor, _, cls = desc.partition(" ")
    return vendor == "0x10de" and (cls.startswith("0x0300") or cls.startswith("0x0302"))


def _parents(host: Any, bridges: list[str]) -> dict[str, str]:
    """child bdf -> the bridge directly above it: each bridge's sysfs directory holds its children."""
    parent: dict[str, str] = {}
    for bridge in bridges:
        names, _ = _listdir(host, f"{PCI_ROOT}/{bridge}")
        for name in names or []:
            if re.fullmatch(_BDF, name.lower()):
                parent[name.lower()] = bridge
    return parent


def _path(bdf: str, parent: dict[str, str]) -> list[str]:
    chain: list[str] = []
    node = bdf
    while node in parent and len(chain) < 32:
        node = parent[node]
        chain.append(node)
    return list(reversed(chain))


def probe(host: Any) -> dict[str, Fact]:
    facts: dict[str, Fact] = {}
    devices, dev_reason = _listdir(host, IB_ROOT)
    if devices is None and dev_reason == NOT_FOUND:
        devices = []  # no RDMA stack loaded: no RDMA devices
    if devices is None:
        facts["interconnect.rdma.device_count"] = unknown(dev_reason or NOT_FOUND, IB_ROOT)
        facts["interconnect.rdma.devices"] = unknown(dev_reason or NOT_FOUND, IB_ROOT)
        facts["interconnect.ib_ports.count"] = unknown(dev_reason or NOT_FOUND, IB_ROOT)
        facts["interconnect.ib_ports_active"] = unknown(dev_reason or NOT_FOUND, IB_ROOT)
        facts["interconnect.ib_rate_max_gbps"] = unknown(dev_reason or NOT_FOUND, IB_ROOT)
        ports: list[dict[str, Fact]] = []
    else:
        facts["interconnect.rdma.device_count"] = known(len(devices), IB_ROOT)
        facts["interconnect.rdma.devices"] = known(list(devices), IB_ROOT)
        ports = _ports(host, devices)
        facts.update(list_facts("interconnect.ib_ports", ports, IB_ROOT))
        active = [p for p in ports if p["state"].value == "ACTIVE"]
        facts["interconnect.ib_ports_active"] = known(len(active), f"{IB_ROOT}/*/ports/*/state")
        rates = [p["rate_gbps"].value for p in active if p["rate_gbps"].known]
        rate_source = f"{IB_ROOT}/*/ports/*/rate"
        facts["interconnect.ib_rate_max_gbps"] = (
            known(max(rates), rate_source) if rates else unknown("no active port", rate_source)
        )
    facts.update(_peermem(host))
    facts.update(_iommu(host))
    facts.update(_net(host))
    facts["interconnect.memory_peers_nv_mem"] = _memory_peers(host)
    facts.update(_topology(host, devices, dev_reason or NOT_FOUND))
    return facts


def _peermem(host: Any) -> dict[str, Fact]:
    text, reason = _read(host, MODULES)
    if text is None:
        return {
            "interconnect.peermem_loaded": unknown(reason or NOT_FOUND, MODULES),
            "interconnect.peermem_module": unknown(reason or NOT_FOUND, MODULES),
        }
    loaded = [m for m in PEERMEM_MODULES if m in parse_modules(text)]
    return {
        "interconnect.peermem_loaded": known(bool(loaded), MODULES),
        "interconnect.peermem_module": known(loaded[0], MODULES)
        if loaded
        else unknown("not loaded", MODULES),
    }


# The files NCCL before 2.23.4 takes as "a peer-memory module is loaded" (src/transport/net_ib.cc:614 at
# v2.22.3-1): the memory_peers registrations of nv_peer_mem, or of nvidia-peermem on a kernel with the
# MLNX_OFED peer-memory API. From 2.23.4 NCCL also accepts /sys/module/nvidia_peermem/version.
MEMORY_PEERS = ("/sys/kernel/mm/memory_peers/nv_mem/version", "/sys/kernel/mm/memory_peers/nv_mem_nc/version")


def _memory_peers(host: Any) -> Fact:
    failure = None
    for path in MEMORY_PEERS:
        text, reason = _read(host, path)
        if text is not None:
            return known(True, path)
        if reason != NOT_FOUND:
            failure = failure or reason
    source = ", ".join(MEMORY_PEERS)
    return unknown(failure, source) if failure else known(False, source)


def _iommu(host: Any) -> dict[str, Fact]:
    text, reason = _read(host, CMDLINE)
    if text is None:
        return {
            "interconnect.iommu.mode": unknown(reason or NOT_FOUND, CMDLINE),
            "interconnect.iommu.args": unknown(reason or NOT_FOUND, CMDLINE),
        }
    mode, args = iommu_mode(text)
    return {"interconnect.iommu.mode": known(mode, CMDLINE), "interconnect.iommu.args": known(args, CMDLINE)}


def is_running(flags: str, operstate: str) -> Optional[bool]:
    """Whether an interface is RUNNING as getifaddrs() reports it (the flag NCCL requires of a socket
    interface): the kernel's dev_get_flags() adds IFF_RUNNING to an interface that is up (IFF_UP, 0x1, in
    sysfs `flags`, which never carries IFF_RUNNING itself) and whose operstate is `up` or `unknown`
    (netif_oper_up()). None when `flags` is not a number."""
    try:
        value = int(flags.strip(), 0)
    except ValueError:
        return None
    return bool(value & 0x1) and operstate.strip() in ("up", "unknown")


def _net(host: Any) -> dict[str, Fact]:
    names, reason = _listdir(host, NET_ROOT)
    if names is None:
        why = reason or NOT_FOUND
        return {
            "interconnect.net_interfaces": unknown(why, NET_ROOT),
            "interconnect.net_running": unknown(why, NET_ROOT),
        }
    running: list[str] = []
    failed = None
    for name in names:
        flags, why = _read(host, f"{NET_ROOT}/{name}/flags")
        operstate, why2 = _read(host, f"{NET_ROOT}/{name}/operstate")
        if flags is None or operstate is None:
            if NOT_FOUND not in (why, why2):  # gone since the listing: not there
                failed = failed or why or why2
            continue
        up = is_running(flags, operstate)
        if up is None:
            failed = failed or f"could not parse {NET_ROOT}/{name}/flags"
        elif up:
            running.append(name)
    source = f"{NET_ROOT}/*/flags, operstate"
    return {
        "interconnect.net_interfaces": known(list(names), NET_ROOT),
        "interconnect.net_running": unknown(failed, source) if failed else known(running, source),
    }


def _topology(host: Any, devices: Optional[list[str]], devices_reason: str) -> dict[str, Fact]:
    """ACS on the bridges above the GPUs, and each GPU's nearest RDMA NIC (unknown, for devices_reason, when
    the RDMA devices could not be listed and there are GPUs: no NIC found must not read as no NIC there)."""
    out: dict[str, Fact] = {}
    classes, reason = pci_classes(host)
    if classes is None:
        why = reason or NOT_FOUND
        out["interconnect.acs.redirect_bridges"] = unknown(why, PCI_ROOT)
        out["interconnect.acs.redirect_bridge_count"] = unknown(why, PCI_ROOT)
        out["interconnect.gpu_nics.count"] = unknown(why, PCI_ROOT)
        return out
    gpus = sorted(b for b, d in classes.items() if _is_nvidia_gpu(d))
    bridges = sorted(b for b, d in classes.items() if d.split(" ")[-1].startswith("0x0604"))
    parent = _parents(host, bridges)
    above_gpus = sorted({b for g in gpus for b in _path(g, parent)})
    out.update(_acs(host, above_gpus))
    if devices is None and gpus:
        out["interconnect.gpu_nics.count"] = unknown(devices_reason, IB_ROOT)
        return out
    nics: list[tuple[str, str]] = []
    for dev in devices or []:
        text, _ = _read(host, f"{IB_ROOT}/{dev}/device/uevent")
        slot = parse_uevent_slot(text) if text is not None else None
        if slot:
            nics.append((dev, slot))
    members: list[dict[str, Fact]] = []
    source = f"{PCI_ROOT}, {IB_ROOT}/*/device/uevent"
    if nics:
        for gpu in gpus:
            gpu_path, gpu_numa = _path(gpu, parent), _numa(host, gpu)
            best = min(
                (
                    (relation(gpu_path, _path(slot, parent), gpu_numa, _numa(host, slot)), dev)
                    for dev, slot in nics
                ),
                key=lambda r: (_RANK[r[0]], r[1]),
            )
            members.append(
                {
                    "gpu": known(gpu, source),
                    "nic": known(best[1], source),
                    "relation": known(best[0], source),
                    "gpu_numa": known(gpu_numa, source)
                    if gpu_numa is not None
                    else unknown(NOT_FOUND, source),
                }
            )
    out.update(list_facts("interconnect.gpu_nics", members, source))
    return out


def _acs(host: Any, bridges: list[str]) -> dict[str, Fact]:
    source = " ".join(LSPCI)
    status, reason = _read(host, STATUS)
    uid = parse_uid(status) if status is not None else None
    why: Optional[str] = None
    if uid is None:
        why = f"could not tell whether this runs as root ({STATUS}: {reason or 'no Uid line'})"
    elif uid != 0:
        why = NEEDS_ROOT
    if why is None and bridges:
        try:
            result = host.run(LSPCI, timeout=5.0)
        except HostError as e:
            why = f"lspci: {e.reason}"
        else:
            if result.rc != 0:
                why = (
                    f"lspci exited with status {result.rc}"
                    if result.rc is not None
                    else "lspci did not finish"
                )
            else:
                parsed = parse_lspci_acs(result.stdout)
                if any(parsed.get(b, {}).get("denied") for b in bridges):
                    why = NEEDS_ROOT
                else:
                    redirect = [b for b in bridges if parsed.get(b, {}).get("redirect")]
                    return {
                        "interconnect.acs.redirect_bridges": known(redirect, source),
                        "interconnect.acs.redirect_bridge_count": known(len(redirect), source),
                    }
    if why is None:  # root, and no bridge above any GPU: nothing to redirect
        return {
            "interconnect.acs.redirect_bridges": known([], PCI_ROOT),
            "interconnect.acs.redirect_bridge_count": known(0, PCI_ROOT),
        }
    return {
        "interconnect.acs.redirect_bridges": unknown(why, source),
        "interconnect.acs.redirect_bridge_count": unknown(why, source),
    }


# NVIDIA/nccl@v2.30.7-1 (73cf112) src/misc/socket.cc:218-229, ncclFindInterfaces(): without NCCL_SOCKET_IFNAME
# (or NCCL_COMM_ID), "ib" interfaces first, then "^docker,lo,virbr" (anything else); only when both find none,
# "docker", then "lo", then "virbr". Each list is prefixes (src/os/linux.cc ncclOsFindInterfaces).
NCCL_FALLBACK_PREFIXES = ("docker", "lo", "virbr")


def nccl_auto_choice(running: Sequence[str]) -> tuple[list[str], list[str]]:
    """(the running interfaces NCCL's automatic choice takes, those it falls back to, in its order)."""
    chosen = [n for n in running if not n.startswith(NCCL_FALLBACK_PREFIXES)]
    fallback = [n for prefix in NCCL_FALLBACK_PREFIXES for n in running if n.startswith(prefix)]
    return chosen, fallback


def _nccl_auto(facts: Facts) -> dict[str, Fact]:
    if not collected(facts, "interconnect.net_running"):
        return {}
    running = facts.get("interconnect.net_running")
    source = "derived:interconnect.net_running"
    if not running.known:
        why = unknown(running.unknown or "", source)
        names = ("interfaces", "fallback", "interface_count", "fallback_count")
        return {f"interconnect.nccl_auto_{name}": why for name in names}
    chosen, fallback = nccl_auto_choice(running.value)
    return {
        "interconnect.nccl_auto_interfaces": known(chosen, source),
        "interconnect.nccl_auto_fallback": known(fallback, source),
        "interconnect.nccl_auto_interface_count": known(len(chosen), source),
        "interconnect.nccl_auto_fallback_count": known(len(fallback), source),
    }


# NVIDIA/nccl: /sys/module/nvidia_peermem/version is accepted from v2.23.4-1 (68b5423,
# src/transport/net_ib.cc:694-696; v2.22.3-1 (178b6b7) net_ib.cc:614 reads only memory_peers); DMA-BUF from
# v2.13.4-1 (19ab67d, src/init.cc:272-288: NCCL_DMABUF_ENABLE, cuDriverGetVersion >= 11070). The kernel's
# RDMA stack registers dma-bufs from Linux 5.12 (ibv_reg_dmabuf_mr, torvalds/linux@bfe0cc6e, cited in
# aws/aws-ofi-nccl#618).
NCCL_PEERMEM_MODULE = (2, 23, 4)


NCCL_DMABUF = (2, 13, 4)


KERNEL_DMABUF = (5, 12)


CUDA_DMABUF = (11, 7)


def gdr_path(
    nccl: tuple[int, ...],
    memory_peers: bool,
    peermem_module: Optional[str],
    kernel: tuple[int, ...],
    max_cuda: tuple[int, ...],
) -> tuple[str, list[str]]:
    """(how NCCL `nccl` reaches GPU memory from the NIC, why the other ways are closed)."""
    peermem = memory_peers or (nccl >= NCCL_PEERMEM_MODULE and peermem_module == "nvidia_peermem")
    if peermem:
        return "nvidia-peermem", []
    version = ".".join(map(str, nccl))
    blockers: list[str] = []
    if peermem_module == "nvidia_peermem":
        peermem_why = (
            f"nvidia_peermem is loaded, but NCCL {version} looks only for /sys/kernel/mm/memory_peers/nv_mem "
            "(NCCL 2.23.4 and later also detect nvidia_peermem)"
        )
    else:
        peermem_why = "no peer-memory module NCCL detects (nvidia_peermem, nv_peer_mem) is loaded"
    if nccl < NCCL_DMABUF:
        blockers.append(f"DMA-BUF needs NCCL 2.13.4 or later, and this is {version}")
    if kernel[:2] < KERNEL_DMABUF:
        blockers.append(f"DMA-BUF needs Linux 5.12 or later, and this is {'.'.join(map(str, kernel))}")
    if max_cuda[:2] < CUDA_DMABUF:
        cuda = ".".join(map(str, max_cuda))
        blockers.append(f"DMA-BUF needs a driver for CUDA 11.7 or later, and this one is for {cuda}")
    return ("none", [peermem_why, *blockers]) if blockers else ("dma-buf", [])


def _gdr(facts: Facts) -> dict[str, Fact]:
    """interconnect.gdr_*, from nccl.newest and system.kernel_release (derived before it) and raw facts."""
    needed = ("interconnect.memory_peers_nv_mem", "interconnect.peermem_loaded", "driver.max_cuda")
    if not (collected(facts, *needed) and "nccl.newest" in facts and "system.kernel_release" in facts):
        return {}
    src = (
        "derived:nccl.newest,interconnect.memory_peers_nv_mem,interconnect.peermem_module,system.kernel,"
        "driver.max_cuda"
    )
    inputs = [facts.get("nccl.newest"), facts.get("system.kernel_release")]
    inputs.append(facts.get("interconnect.memory_peers_nv_mem"))
    inputs += [facts.get("interconnect.peermem_loaded"), facts.get("driver.max_cuda")]
    missing = next((f.unknown for f in inputs if not f.known), None)
    nccl, kernel = version_numbers(inputs[0].value), version_numbers(inputs[1].value)
    cuda = version_numbers(inputs[4].value)
    if missing is not None or not (nccl and kernel and cuda):
        why = unknown(missing or "could not parse a version", src)
        return {"interconnect.gdr_path": why, "interconnect.gdr_blockers": why}
    module = facts.value("interconnect.peermem_module")
    path, blockers = gdr_path(nccl, bool(inputs[2].value), module, kernel, cuda)
    return {
        "interconnect.gdr_path": known(path, src),
        "interconnect.gdr_blockers": known(blockers, src),
    }


def derive(facts: Facts) -> dict[str, Fact]:
    """NCCL's automatic interface choice and its GPUDirect RDMA path (gpudoctor/derive.py runs it)."""
    return {**_nccl_auto(facts), **_gdr(facts)}
