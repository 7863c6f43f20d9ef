"""The GPU probe: what NVML says about each GPU, plus the PCIe link as sysfs sees it.

Produces `gpus.count` and `gpus[i].*`. Each reading is its own fact, so one unsupported call (common on
virtual GPUs and consumer cards) costs only that fact. A reading no GPU can give (a negative width, a
memory size of 2**64-1 meaning "unlimited", a clock of 0xFFFFFFFF) is unknown ("implausible value: ..."),
never a fact that fires a rule. A GPU that stops answering (fallen off the bus,
NVML hung) costs only that GPU: all its facts become unknown with the reason, the other GPUs stay intact.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Union

from ..facts import Fact, FactSpec, known, list_facts, unknown
from ..host.base import HostError, NvmlError, nvml_key, nvml_reason
from . import EVERY_PROFILE, ProbeSpec

FACT_SPECS: tuple[FactSpec, ...] = (
    FactSpec("gpus.count", "int", "", "GPUs NVML can see (0 without a working driver)"),
    FactSpec("gpus[].index", "int", "", "NVML index"),
    FactSpec("gpus[].name", "str", "", "product name, e.g. NVIDIA H200"),
    FactSpec("gpus[].uuid", "str", "", "GPU UUID (redacted in snapshots unless --no-redact)"),
    FactSpec(
        "gpus[].lost",
        "bool",
        "",
        "NVML answers GpuIsLost for this GPU: it fell off the bus or stopped responding (Xid 79)",
    ),
    FactSpec(
        "gpus[].recovery_action",
        "str",
        "",
        "what NVML says the GPU needs (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION): none, gpu reset, node reboot,"
        " drain p2p, drain and reset, recover imex domain, bus reset, system reboot; `not reported` where"
        " the driver does not offer the field",
    ),
    FactSpec("gpus[].bus_id", "str", "", "PCI address, domain:bus:device.function, e.g. 0000:00:06.0"),
    FactSpec(
        "gpus[].brand",
        "str",
        "",
        "brand as NVIDIA_REQUIRE_* names it, in lower case: tesla, nvidia, geforcertx, ... (unknown: a brand "
        "the container runtime has no name for)",
    ),
    FactSpec(
        "gpus[].architecture", "str", "", "architecture name: Volta, Turing, Ampere, Ada, Hopper, Blackwell"
    ),
    FactSpec("gpus[].compute_capability", "version", "", "CUDA compute capability, e.g. 9.0"),
    FactSpec("gpus[].memory.total_bytes", "int", "bytes", "framebuffer memory"),
    FactSpec("gpus[].memory.used_bytes", "int", "bytes", "framebuffer memory in use"),
    FactSpec("gpus[].pcie.gen_current", "int", "", "PCIe generation the link runs at now (drops when idle)"),
    FactSpec("gpus[].pcie.gen_max", "int", "", "highest PCIe generation of GPU and slot together"),
    FactSpec("gpus[].pcie.gen_gpu_max", "int", "", "highest PCIe generation the GPU supports"),
    FactSpec("gpus[].pcie.width_current", "int", "lanes", "PCIe link width now"),
    FactSpec("gpus[].pcie.width_max", "int", "lanes", "widest PCIe link of GPU and slot together"),
    FactSpec("gpus[].pcie.replay_counter", "int", "", "PCIe replays (link-level retransmissions) since boot"),
    FactSpec(
        "gpus[].pcie.sysfs_gen_current", "int", "", "PCIe generation now, from sysfs current_link_speed"
    ),
    FactSpec("gpus[].pcie.sysfs_gen_max", "int", "", "PCIe generation maximum, from sysfs max_link_speed"),
    FactSpec(
        "gpus[].pcie.sysfs_width_current", "int", "lanes", "PCIe width now, from sysfs current_link_width"
    ),
    FactSpec("gpus[].pcie.sysfs_width_max", "int", "lanes", "PCIe width maximum, from sysfs max_link_width"),
    FactSpec(
        "gpus[].numa_node",
        "int",
        "",
        "the NUMA node of the GPU's PCI device, from sysfs (/sys/bus/pci/devices/<bus id>/numa_node); -1: "
        "the platform names none (one node, or a VM that does not say)",
    ),
    FactSpec("gpus[].nvlink.links", "int", "", "NVLink links NVML reports a state for"),
    FactSpec("gpus[].nvlink.links_up", "int", "", "links whose state is active"),
    FactSpec("gpus[].nvlink.links_down", "int", "", "links whose state is inactive"),
    FactSpec("gpus[].nvlink.down", "list[int]", "", "numbers of the inactive links"),
    FactSpec("gpus[].nvlink.version", "int", "", "NVLink version of the first active link"),
    FactSpec(
        "gpus[].nvlink.peers",
        "list[str]",
        "",
        "the far end of each active NVLink link, in link order: the peer GPU's bus id as gpus[].bus_id "
        "writes it, `nvswitch`, or `ibmnpu` (nvmlDeviceGetNvLinkRemoteDeviceType; where the driver does "
        "not say, a bus id that is none of this host's GPUs is an NVSwitch, as NCCL assumes); [] without "
        "NVLink; unknown when any active link's far end could not be read",
    ),
    FactSpec(
        "gpus[].nvlink.links_wired",
        "int",
        "",
        "derived: the NVLink links the GPU's model wires, as gpudoctor's GPU catalogue (rules/knowledge/"
        "gpus.yaml) knows them, no more than NVML reports (an H100 PCIe card: 12 of the 18 NVML numbers); "
        "for a model whose wiring it does not know, every link NVML reports (gpus[].nvlink.links)",
    ),
    FactSpec(
        "gpus[].nvlink.links_down_wired",
        "int",
        "",
        "derived: wired links that are not active: links_wired less the active links (never below 0), so "
        "links a model leaves unwired by design are not counted; for a model whose wiring the catalogue does "
        "not know, every inactive link (gpus[].nvlink.links_down)",
    ),
    FactSpec(
        "gpus[].nvlink.down_wired",
        "list[int]",
        "",
        "derived: numbers of the inactive links, less those the catalogue names as unwired on the model and "
        "those beyond its numbering; every inactive link (gpus[].nvlink.down) for a model it does not know",
    ),
    FactSpec("gpus[].clocks.sm_mhz", "int", "MHz", "SM clock now"),
    FactSpec("gpus[].clocks.sm_max_mhz", "int", "MHz", "highest SM clock"),
    FactSpec("gpus[].clocks.mem_mhz", "int", "MHz", "memory clock now"),
    FactSpec("gpus[].clocks.mem_max_mhz", "int", "MHz", "highest memory clock"),
    FactSpec(
        "gpus[].clocks.event_reasons", "int", "bitmask", "active clock event (throttle) reasons, nvml.h bits"
    ),
    FactSpec(
        "gpus[].clocks.event_reason_names", "list[str]", "", "the active reasons by name, e.g. SwPowerCap"
    ),
    FactSpec("gpus[].utilization.gpu", "int", "%", "time a kernel ran over the last sample period"),
    FactSpec("gpus[].utilization.memory", "int", "%", "time memory was read or written over the last period"),
    FactSpec("gpus[].temperature.gpu_c", "int", "°C", "GPU core temperature"),
    FactSpec("gpus[].temperature.slowdown_c", "int", "°C", "temperature at which the GPU slows down"),
    FactSpec("gpus[].temperature.shutdown_c", "int", "°C", "temperature at which the GPU shuts down"),
    FactSpec("gpus[].power.draw_w", "float", "W", "power draw"),
    FactSpec("gpus[].power.limit_w", "float", "W", "power management limit in force"),
    FactSpec("gpus[].power.default_limit_w", "float", "W", "default power management limit"),
    FactSpec("gpus[].persistence_mode", "bool", "", "persistence mode is on"),
    FactSpec("gpus[].compute_mode", "str", "", "Default, Exclusive_Thread, Prohibited or Exclusive_Process"),
    FactSpec("gpus[].mig.current", "bool", "", "MIG mode is on"),
    FactSpec("gpus[].mig.pending", "bool", "", "MIG mode after the next GPU reset"),
    FactSpec("gpus[].ecc.enabled", "bool", "", "ECC is on"),
    FactSpec("gpus[].ecc.pending", "bool", "", "ECC mode after the next reboot"),
    FactSpec("gpus[].ecc.uncorrected_volatile", "int", "", "uncorrected ECC errors since the driver loaded"),
    FactSpec("gpus[].ecc.uncorrected_aggregate", "int", "", "uncorrected ECC errors over the GPU's life"),
    FactSpec("gpus[].ecc.corrected_volatile", "int", "", "corrected ECC errors since the driver loaded"),
    FactSpec("gpus[].remapped_rows.correctable", "int", "", "rows remapped after correctable errors"),
    FactSpec("gpus[].remapped_rows.uncorrectable", "int", "", "rows remapped after uncorrectable errors"),
    FactSpec("gpus[].remapped_rows.pending", "bool", "", "a row remap waits for a GPU reset"),
    FactSpec("gpus[].remapped_rows.failed", "bool", "", "a row remap failed"),
    FactSpec("gpus[].virtualization_mode", "str", "", "None, Passthrough, vGPU, Host vGPU or Host vSGA"),
    FactSpec(
        "gpus[].p2p.no_read",
        "list[int]",
        "",
        "other GPUs (NVML index) this one cannot read from peer-to-peer (nvmlDeviceGetP2PStatus READ not OK)",
    ),
    FactSpec("gpus[].p2p.no_read_count", "int", "", "how many other GPUs are in gpus[].p2p.no_read"),
    FactSpec(
        "gpus[].topology.cross_socket",
        "list[int]",
        "",
        "other GPUs whose PCIe path crosses the CPU socket interconnect (NVML topology level SYSTEM)",
    ),
    FactSpec(
        "gpus[].topology.cross_socket_count",
        "int",
        "",
        "how many other GPUs are in gpus[].topology.cross_socket",
    ),
    FactSpec(
        "gpus[].topology.levels",
        "list[str]",
        "",
        "the PCIe path to each GPU by NVML index, as `nvidia-smi topo -m` labels it without NVLink: X "
        "(itself), PIX, PXB, PHB, NODE or SYS (nvmlDeviceGetTopologyCommonAncestor SINGLE, MULTIPLE, "
        "HOSTBRIDGE, NODE, SYSTEM); unknown when any pair could not be read (a partial row would read as "
        "complete)",
    ),
)
PROBE = ProbeSpec("gpus", profiles=EVERY_PROFILE)

Convert = Optional[Callable[[Any], Any]]
# What the probe reads of each GPU; the derived gpus[].* facts (gpudoctor/derive.py) are added after it.
FIELDS: tuple[str, ...] = tuple(
    s.name[len("gpus[].") :]
    for s in FACT_SPECS
    if s.name.startswith("gpus[].") and not s.doc.startswith("derived:")
)
MAX_NVLINKS = 18  # NVML_NVLINK_MAX_LINKS
MAX_GPUS = 1024  # far beyond any host; a snapshot claiming more would keep the probe busy for nothing
PCI_DEVICES = "/sys/bus/pci/devices"

# What nvidia-container-cli calls each NVML brand (nvmlBrandType_t), because NVIDIA_REQUIRE_* `brand=`
# constraints are compared (without case) with these words: libnvidia-container src/driver.c
# driver_get_device_brand_1_svc @63d366ee3b4183513c310ac557bf31b05b83328f lines 544-599, a switch unchanged
# since 6845f41 ("Update switch statement to include new brands from latest nvml.h", release 1.9.0). The
# numbers are nvml.h's (src/nvml.h @63d366ee lines 609-629; the same in nvidia-ml-py 13.615.71). Every
# other number is "Unknown" to the runtime (the switch's default): NVML_BRAND_UNKNOWN (0), and the brands
# newer than its nvml.h (NVML_BRAND_NVIDIA_DLA 17, _VGAMEDEV 18, _NPU 19 in nvidia-ml-py 13.615.71).
CONTAINER_BRANDS = {
    1: "Quadro", 2: "Tesla", 3: "NVS", 4: "GRID", 5: "GeForce", 6: "TITAN", 7: "VApps", 8: "VPC", 9: "VCS",
    10: "VWS", 11: "CloudGaming", 12: "QuadroRTX", 13: "NvidiaRTX", 14: "Nvidia", 15: "GeForceRTX",
    16: "TitanRTX",
}  # fmt: skip
UNKNOWN_BRAND = "Unknown"
ARCHITECTURES = {
    2: "Kepler", 3: "Maxwell", 4: "Pascal", 5: "Volta", 6: "Turing", 7: "Ampere", 8: "Ada", 9: "Hopper",
    10: "Blackwell",
}  # fmt: skip
COMPUTE_MODES = {0: "Default", 1: "Exclusive_Thread", 2: "Prohibited", 3: "Exclusive_Process"}
VIRTUALIZATIONS = {0: "None", 1: "Passthrough", 2: "vGPU", 3: "Host vGPU", 4: "Host vSGA"}
# nvml.h nvmlClocksEventReason* bits, in bit order.
EVENT_REASONS = (
    (0x1, "GpuIdle"), (0x2, "ApplicationsClocksSetting"), (0x4, "SwPowerCap"), (0x8, "HwSlowdown"),
    (0x10, "SyncBoost"), (0x20, "SwThermalSlowdown"), (0x40, "HwThermalSlowdown"),
    (0x80, "HwPowerBrakeSlowdown"), (0x100, "DisplayClockSetting"),
)  # fmt: skip
# nvmlGpuP2PStatus_t: only NVML_P2P_STATUS_OK (0) means the peer can be reached; nvmlGpuTopologyLevel_t:
# NVML_TOPOLOGY_SYSTEM (50) is a path through the interconnect between CPU sockets (NUMA nodes).
P2P_OK = 0
TOPOLOGY_SYSTEM = 50
# nvmlGpuTopologyLevel_t (nvml.h; nvidia-ml-py 13.615.71 pynvml.py NVML_TOPOLOGY_*) -> the label `nvidia-smi
# topo -m` gives a path of that kind, by its legend (as printed in
# https://github.com/HazyResearch/ThunderKittens/issues/167, driver of 2026-01, read 2026-12-05):
#   PIX  10 SINGLE      "Connection traversing at most a single PCIe bridge"
#   PXB  20 MULTIPLE    "Connection traversing multiple PCIe bridges (without traversing the PCIe Host
#                        Bridge)"
#   PHB  30 HOSTBRIDGE  "Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)"
#   NODE 40 NODE        "... as well as the interconnect between PCIe Host Bridges within a NUMA node"
#   SYS  50 SYSTEM      "... as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)"
# NVML_TOPOLOGY_INTERNAL (0, "e.g. Tesla K80": two GPUs on one board) has no label in the legend, so a level
# of 0 (or any other number) leaves the row unknown rather than guessed.
TOPOLOGY_LABELS = {10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
SELF = "X"  # the legend's "X = Self"
# nvmlIntNvLinkDeviceType_t (nvml.h; pynvml NVML_NVLINK_DEVICE_TYPE_*): what is at the far end of a link.
NVLINK_GPU, NVLINK_IBMNPU, NVLINK_SWITCH, NVLINK_UNKNOWN = 0, 1, 2, 0xFF
NVSWITCH, IBMNPU = "nvswitch", "ibmnpu"
MAX_NUMA_NODE = 1 << 16  # far beyond any machine's node count; sysfs says -1 for "none"
# sysfs link speed in GT/s -> PCIe generation.
PCIE_SPEEDS = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6, 128.0: 7}

# After these nothing more can be read from the GPU (or from NVML at all), so reading on only repeats them.
_FATAL = frozenset((
    "NVMLError_GpuIsLost", "NVMLError_Timeout", "NVMLError_TimedOut", "NVMLError_Uninitialized",
    "NVMLError_DriverNotLoaded", "NVMLError_LibraryNotFound", "NVMLError_LibRmVersionMismatch",
))  # fmt: skip
# Failures meaning "no such reading here", as opposed to a reading that went wrong.
_ABSENT = ("NotSupported", "FunctionNotFound", "InvalidArgument", "NotRecorded")


# What a reading can plausibly be. Outside these bounds it is a sentinel (0xFFFFFFFF, 2**64-1 for
# "unlimited" or "not available"), a value wrapped through a signed type (-16), or a broken driver.
U32_MAX = 0xFFFFFFFF
MAX_MEMORY_BYTES = 1 << 44  # 16 TiB on one GPU (the largest today holds 288 GB)
MAX_PCIE_GEN = 16
MAX_PCIE_WIDTH = 32  # the widest link the PCIe specification defines
MAX_CLOCK_MHZ = 100_000
MAX_TEMPERATURE_C = 200
MAX_MILLIWATTS = 10_000_000  # 10 kW for one GPU
MAX_COUNTER = U32_MAX - 1  # ECC errors, remapped rows, PCIe replays: all ones is a sentinel, not a count
MAX_NVLINK_VERSION = 16


class Implausible(ValueError):
    """A reading that no GPU gives; str() is the unknown fact's reason."""


# --- pure decoding --------------------------------------------------------------------------------------


def _int(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"not an integer: {value!r}")
    return value


def plausible(value: Any, low: int, high: int) -> int:
    """The integer reading, or Implausible when it lies outside [low, high]."""
    n = _int(value)
    if not low <= n <= high:
        raise Implausible(f"implausible value: {n} (expected {low} to {high})")
    return n


def _between(low: int, high: int) -> Callable[[Any], int]:
    return lambda value: plausible(value, low, high)


def _on(value: Any) -> bool:
    """NVML's enable states (NVML_FEATURE_ENABLED, NVML_DEVICE_MIG_ENABLE, ...) are 1 for on, 0 for off."""
    return plausible(value, 0, 1) == 1


def bus_id(pci_info: dict) -> str:
    """NVML's busId "00000000:00:06.0" (32-bit domain) -> sysfs spelling "0000:00:06.0"."""
    return str(pci_info["busId"])[-12:].lower()


def brand_name(value: int) -> str:
    """The runtime's name for an NVML brand number, in lower case ("nvidia"); a number it has no name for
    is "unknown", as it is to the runtime."""
    return CONTAINER_BRANDS.get(_int(value), UNKNOWN_BRAND).lower()


def architecture_name(value: int) -> str:
    return ARCHITECTURES[_int(value)]


def compute_capability(value: Any) -> str:
    major, minor = value
    return f"{plausible(major, 1, 99)}.{plausible(minor, 0, 9)}"


def watts(milliwatts: Any) -> float:
    return plausible(milliwatts, 0, MAX_MILLIWATTS) / 1000.0


def event_reasons(mask: Any) -> int:
    """The clock event reasons bitmask; all 32 bits set (or more) is a sentinel, not every reason at once."""
    return plausible(mask, 0, U32_MAX - 1)


def event_reason_names(mask: Any) -> list[str]:
    """Names of the set bits, e.g. 0x44 -> ["SwPowerCap", "HwThermalSlowdown"]; unknown bits are left out."""
    m = event_reasons(mask)
    return [name for bit, name in EVENT_REASONS if m & bit]


def pcie_generation(speed: str) -> int:
    """sysfs link speed ("32.0 GT/s PCIe", older kernels "16 GT/s") -> PCIe generation (5, 4)."""
    return PCIE_SPEEDS[float(speed.split()[0])]


def link_width(text: str) -> int:
    return plausible(int(text.strip()), 0, MAX_PCIE_WIDTH)


def numa_node(text: str) -> int:
    """sysfs numa_node ("1\n"; "-1\n" where the platform names no node) -> the node."""
    return plausible(int(text.strip()), -1, MAX_NUMA_NODE)


def topology_label(level: Any) -> str:
    """An nvmlGpuTopologyLevel_t -> its `nvidia-smi topo -m` label (40 -> "NODE")."""
    n = _int(level)
    if n not in TOPOLOGY_LABELS:
        raise Implausible(f"topology level {n} has no nvidia-smi topo label")
    return TOPOLOGY_LABELS[n]


def topology_levels(index: int, count: int, levels: dict[int, Any]) -> list[str]:
    """GPU `index`'s row of the topology matrix: for each GPU 0..count-1, X for itself, else the label of
    its NVML topology level ({peer: level})."""
    return [SELF if j == index else topology_label(levels[j]) for j in range(count)]


class RemoteBus(str):
    """The far end of an NVLink link known only by its PCI bus id: the driver did not say what device it is
    (NVML_NVLINK_DEVICE_TYPE_UNKNOWN, or no nvmlDeviceGetNvLinkRemoteDeviceType). Settled by
    settle_nvlink_peers once every GPU's bus id is known."""


def settle_nvlink_peers(members: list[dict[str, Fact]]) -> None:
    """Replaces each RemoteBus in the GPUs' nvlink.peers: one of this host's GPUs' bus ids stays that bus id,
    any other is an NVSwitch, as NCCL judges a link whose far end is not a GPU it can see (NCCL
    v2.23.4-1:src/graph/xml.cc ncclTopoGetXmlFromGpu: the target's PCI class, and a target not visible "in
    this VM" is assumed an NVSwitch). While some GPU's bus id is unknown, such a bus id cannot be told from
    that GPU's, so the list is unknown."""
    buses = {m["bus_id"].value for m in members if m["bus_id"].known}
    blind = [i for i, m in enumerate(members) if not m["bus_id"].known]
    for m in members:
        fact = m["nvlink.peers"]
        if not fact.known or not any(isinstance(end, RemoteBus) for end in fact.value):
            continue
        ends: list[str] = []
        for end in fact.value:
            if isinstance(end, RemoteBus) and end not in buses:
                if blind:
                    reason = f"far end {end} not identified: GPU {blind[0]}'s bus id is unknown"
                    m["nvlink.peers"] = unknown(reason[:80], fact.source)
                    break
                end = NVSWITCH
            ends.append(str(end))
        else:
            m["nvlink.peers"] = known(ends, fact.source)


SYSFS_READINGS = (
    ("pcie.sysfs_gen_current", "current_link_speed", pcie_generation),
    ("pcie.sysfs_gen_max", "max_link_speed", pcie_generation),
    ("pcie.sysfs_width_current", "current_link_width", link_width),
    ("pcie.sysfs_width_max", "max_link_width", link_width),
    ("numa_node", "numa_node", numa_node),  # the file interconnect.py reads for gpu_nics[].gpu_numa
)
NVLINK_FIELDS = (
    "nvlink.links", "nvlink.links_up", "nvlink.links_down", "nvlink.down", "nvlink.version", "nvlink.peers",
)  # fmt: skip


def reading_fact(value: Any, convert: Convert, source: str) -> Fact:
    """A reading as a fact, through `convert`: a value no GPU gives (Implausible) or one of the wrong shape
    is unknown with why, never a crash."""
    try:
        return known(convert(value) if convert else value, source)
    except Implausible as e:
        return unknown(str(e)[:80], source)
    except (TypeError, ValueError, KeyError, IndexError, AttributeError):
        return unknown(f"unexpected value {value!r}"[:80], source)


# --- probe ----------------------------------------------------------------------------------------------


class _Lost(Exception):
    """The GPU stopped answering; args are the reason and the NVML error name."""


def nvml_error_is(error: Optional[HostError], names: tuple[str, ...]) -> bool:
    """Whether the error is an NVML error of one of these names (their NVMLError_ suffixes)."""
    return isinstance(error, NvmlError) and error.name.endswith(names)


class _Gpu:
    """Reads one GPU, each call once (several facts share a call), raising _Lost on a fatal error."""

    def __init__(self, host: Any, index: int) -> None:
        self.host = host
        self.index = index
        self._cache: dict[tuple[str, Optional[str]], tuple[Any, Optional[HostError]]] = {}
        self.answered = False  # some call on it came back with a reading

    def raw(
        self, function: str, arg: Optional[str] = None, peer: bool = False
    ) -> tuple[Any, Optional[HostError]]:
        """The reading, or the error. A call about a peer GPU (peer=True) can fail because of that GPU, so
        its failures never count as this GPU being lost."""
        key = (function, arg)
        if key not in self._cache:
            try:
                self._cache[key] = (self.host.nvml(function, device=self.index, arg=arg), None)
                self.answered = True
            except NvmlError as e:
                if e.name in _FATAL and not peer:
                    raise _Lost(e.reason, e.name) from e
                self._cache[key] = (None, e)
            except HostError as e:
                self._cache[key] = (None, e)
        return self._cache[key]

    def fact(self, function: str, convert: Convert = None, arg: Optional[str] = None) -> Fact:
        source = f"nvml:{nvml_key(function, arg)}"
        value, error = self.raw(function, arg)
        if error is not None:
            return unknown(error.reason, source)
        return reading_fact(value, convert, source)


def peer_indices(values: dict[int, Any], selected: Callable[[Any], bool]) -> list[int]:
    """The peers (GPU index -> reading) whose reading is selected, in index order."""
    return [peer for peer in sorted(values) if selected(values[peer])]


def p2p_unreadable(status: Any) -> bool:
    return _int(status) != P2P_OK


def crosses_sockets(level: Any) -> bool:
    return _int(level) == TOPOLOGY_SYSTEM


COUNT_SOURCE = "nvml:nvmlDeviceGetCount"


def nvml_gpu_count(host: Any) -> Union[int, Fact]:
    """NVML's GPU count, or the fact a per-GPU probe's `.count` is instead: known 0 with the reason when there
    is no NVML library or kernel module (certainly no GPU a program could use), else unknown with the
    reason. Every probe that reads each GPU counts them so."""
    try:
        count = host.nvml("nvmlDeviceGetCount")
    except NvmlError as e:
        if e.name in ("NVMLError_LibraryNotFound", "NVMLError_DriverNotLoaded"):
            return known(0, f"{COUNT_SOURCE} ({e.reason})")
        return unknown(e.reason, COUNT_SOURCE)
    except HostError as e:
        return unknown(e.reason, COUNT_SOURCE)
    if not isinstance(count, int) or isinstance(count, bool) or not 0 <= count <= MAX_GPUS:
        return unknown(f"unexpected value {count!r}"[:80], COUNT_SOURCE)
    return count


def probe(host: Any) -> dict[str, Fact]:
    count = nvml_gpu_count(host)
    if isinstance(count, Fact):
        return {"gpus.count": count}
    members = [read_gpu(host, i, count) for i in range(count)]
    settle_nvlink_peers(members)
    return list_facts("gpus", members, COUNT_SOURCE)


def read_gpu(host: Any, index: int, count: int = 1) -> dict[str, Fact]:
    """Every gpus[].* field of GPU `index` of `count`, in schema order; nvlink.peers may hold RemoteBus
    entries until settle_nvlink_peers has seen every GPU."""
    gpu = _Gpu(host, index)
    try:
        facts = _read(gpu)
        facts.update(_peers(gpu, count))
        # Not lost: it answered. A GPU that answered nothing (a snapshot that never read it) cannot tell.
        facts["lost"] = known(False, "nvml") if gpu.answered else unknown(facts["name"].unknown or "", "nvml")
    except _Lost as e:
        reason, name = e.args
        facts = {field: unknown(reason, f"nvml:GPU {index}") for field in FIELDS}
        # What it said before it stopped answering still names it (a GPU lost part way through a read).
        for field, function, convert in IDENTITY:
            cached = gpu._cache.get((function, None))
            if cached is not None and cached[1] is None:
                facts[field] = reading_fact(cached[0], convert, f"nvml:{function}")
        src = f"nvml:GPU {index} ({name})"
        facts["lost"] = known(True, src) if name == LOST else unknown(reason, src)
    facts["index"] = known(index, "nvml:nvmlDeviceGetCount")
    return {field: facts[field] for field in FIELDS}


LOST = "NVMLError_GpuIsLost"
# The readings that name a GPU, kept when it is lost after answering them.
IDENTITY = (
    ("name", "nvmlDeviceGetName", str),
    ("uuid", "nvmlDeviceGetUUID", str),
    ("bus_id", "nvmlDeviceGetPciInfo", bus_id),
)
# nvmlDeviceGpuRecoveryAction_t (nvml.h; NVIDIA's "Error Recovery and Response Flags" page says what each
# asks of the operator).
RECOVERY_ACTIONS = {
    0: "none", 1: "gpu reset", 2: "node reboot", 3: "drain p2p", 4: "drain and reset",
    5: "recover imex domain", 6: "bus reset", 7: "system reboot",
}  # fmt: skip
RECOVERY_FIELD = 230  # NVML_FI_DEV_GET_GPU_RECOVERY_ACTION
NOT_REPORTED = "not reported"
# nvmlReturn_t codes a field value can carry in its own nvmlReturn, by pynvml's error class names.
FIELD_RETURNS = {
    1: "Uninitialized", 2: "InvalidArgument", 3: "NotSupported", 4: "NoPermission", 6: "NotFound",
    10: "Timeout", 15: "GpuIsLost", 999: "Unknown",
}  # fmt: skip


def recovery_action(values: Any) -> str:
    """nvmlDeviceGetFieldValues' answer for the recovery action field -> its name; NOT_REPORTED when the
    driver does not offer the field (its return code NOT_SUPPORTED); ValueError for anything else."""
    (entry,) = values
    if entry["fieldId"] != RECOVERY_FIELD:
        raise ValueError(f"field {entry['fieldId']!r}, not {RECOVERY_FIELD}")
    code = entry["nvmlReturn"]
    if code == 0:
        return RECOVERY_ACTIONS[_int(entry["value"])]
    name = FIELD_RETURNS.get(code)
    if name == "NotSupported":
        return NOT_REPORTED
    raise Implausible(nvml_reason(f"NVMLError_{name}") if name else f"NVML return code {code!r} for it")


def _recovery(g: _Gpu) -> Fact:
    function, arg = "nvmlDeviceGetFieldValues", "GPU_RECOVERY_ACTION"
    value, error = g.raw(function, arg)
    if error is not None and nvml_error_is(error, ("NotSupported", "FunctionNotFound")):  # older driver
        return known(NOT_REPORTED, f"nvml:{nvml_key(function, arg)} ({error.reason})")
    return g.fact(function, recovery_action, arg)


def _read(g: _Gpu) -> dict[str, Fact]:
    gen, width = _between(1, MAX_PCIE_GEN), _between(0, MAX_PCIE_WIDTH)
    clock, temperature = _between(0, MAX_CLOCK_MHZ), _between(0, MAX_TEMPERATURE_C)
    counter, percent, memory = _between(0, MAX_COUNTER), _between(0, 100), _between(0, MAX_MEMORY_BYTES)
    reasons = "nvmlDeviceGetCurrentClocksEventReasons"
    # Drivers and pynvml before 535 only know the older name for the same bitmask.
    if nvml_error_is(g.raw(reasons)[1], ("NotSupported", "FunctionNotFound", "NotRecorded")):
        reasons = "nvmlDeviceGetCurrentClocksThrottleReasons"
    f: dict[str, Fact] = {
        "name": g.fact("nvmlDeviceGetName", str),
        "uuid": g.fact("nvmlDeviceGetUUID", str),
        "bus_id": g.fact("nvmlDeviceGetPciInfo", bus_id),
        "brand": g.fact("nvmlDeviceGetBrand", brand_name),
        "architecture": g.fact("nvmlDeviceGetArchitecture", architecture_name),
        "compute_capability": g.fact("nvmlDeviceGetCudaComputeCapability", compute_capability),
        "memory.total_bytes": g.fact(
            "nvmlDeviceGetMemoryInfo", lambda m: plausible(m["total"], 1, MAX_MEMORY_BYTES)
        ),
        "memory.used_bytes": g.fact("nvmlDeviceGetMemoryInfo", lambda m: memory(m["used"])),
        "pcie.gen_current": g.fact("nvmlDeviceGetCurrPcieLinkGeneration", gen),
        "pcie.gen_max": g.fact("nvmlDeviceGetMaxPcieLinkGeneration", gen),
        "pcie.gen_gpu_max": g.fact("nvmlDeviceGetGpuMaxPcieLinkGeneration", gen),
        "pcie.width_current": g.fact("nvmlDeviceGetCurrPcieLinkWidth", width),
        "pcie.width_max": g.fact("nvmlDeviceGetMaxPcieLinkWidth", width),
        "pcie.replay_counter": g.fact("nvmlDeviceGetPcieReplayCounter", counter),
        "clocks.sm_mhz": g.fact("nvmlDeviceGetClockInfo", clock, "SM"),
        "clocks.sm_max_mhz": g.fact("nvmlDeviceGetMaxClockInfo", clock, "SM"),
        "clocks.mem_mhz": g.fact("nvmlDeviceGetClockInfo", clock, "MEM"),
        "clocks.mem_max_mhz": g.fact("nvmlDeviceGetMaxClockInfo", clock, "MEM"),
        "clocks.event_reasons": g.fact(reasons, event_reasons),
        "clocks.event_reason_names": g.fact(reasons, event_reason_names),
        "utilization.gpu": g.fact("nvmlDeviceGetUtilizationRates", lambda u: percent(u["gpu"])),
        "utilization.memory": g.fact("nvmlDeviceGetUtilizationRates", lambda u: percent(u["memory"])),
        "temperature.gpu_c": g.fact("nvmlDeviceGetTemperature", temperature, "GPU"),
        "temperature.slowdown_c": g.fact("nvmlDeviceGetTemperatureThreshold", temperature, "SLOWDOWN"),
        "temperature.shutdown_c": g.fact("nvmlDeviceGetTemperatureThreshold", temperature, "SHUTDOWN"),
        "power.draw_w": g.fact("nvmlDeviceGetPowerUsage", watts),
        "power.limit_w": g.fact("nvmlDeviceGetPowerManagementLimit", watts),
        "power.default_limit_w": g.fact("nvmlDeviceGetPowerManagementDefaultLimit", watts),
        "persistence_mode": g.fact("nvmlDeviceGetPersistenceMode", _on),
        "compute_mode": g.fact("nvmlDeviceGetComputeMode", lambda v: COMPUTE_MODES[_int(v)]),
        "mig.current": g.fact("nvmlDeviceGetMigMode", lambda v: _on(v[0])),
        "mig.pending": g.fact("nvmlDeviceGetMigMode", lambda v: _on(v[1])),
        "ecc.enabled": g.fact("nvmlDeviceGetEccMode", lambda v: _on(v[0])),
        "ecc.pending": g.fact("nvmlDeviceGetEccMode", lambda v: _on(v[1])),
        "ecc.uncorrected_volatile": g.fact("nvmlDeviceGetTotalEccErrors", counter, "UNCORRECTED,VOLATILE"),
        "ecc.uncorrected_aggregate": g.fact("nvmlDeviceGetTotalEccErrors", counter, "UNCORRECTED,AGGREGATE"),
        "ecc.corrected_volatile": g.fact("nvmlDeviceGetTotalEccErrors", counter, "CORRECTED,VOLATILE"),
        "remapped_rows.correctable": g.fact("nvmlDeviceGetRemappedRows", lambda v: counter(v[0])),
        "remapped_rows.uncorrectable": g.fact("nvmlDeviceGetRemappedRows", lambda v: counter(v[1])),
        "remapped_rows.pending": g.fact("nvmlDeviceGetRemappedRows", lambda v: _on(v[2])),
        "remapped_rows.failed": g.fact("nvmlDeviceGetRemappedRows", lambda v: _on(v[3])),
        "virtualization_mode": g.fact("nvmlDeviceGetVirtualizationMode", lambda v: VIRTUALIZATIONS[_int(v)]),
        "recovery_action": _recovery(g),
    }
    f.update(_nvlink(g))
    f.update(_sysfs(g.host, f["bus_id"]))
    return f


def _nvlink(g: _Gpu) -> dict[str, Fact]:
    src = "nvml:nvmlDeviceGetNvLinkState"
    states: list[Any] = []
    stop = "no NVLink"
    for link in range(MAX_NVLINKS):
        value, error = g.raw("nvmlDeviceGetNvLinkState", str(link))
        if error is None:
            states.append(value)
            continue
        # A link with no state ends the list; but a snapshot that never asked about link 0 says nothing.
        if not nvml_error_is(error, _ABSENT) or (link == 0 and nvml_error_is(error, ("NotRecorded",))):
            return dict.fromkeys(NVLINK_FIELDS, unknown(error.reason, src))
        stop = error.reason
        break
    try:
        states = [plausible(state, 0, 1) for state in states]  # NVML_FEATURE_DISABLED, NVML_FEATURE_ENABLED
    except (Implausible, TypeError) as e:
        return dict.fromkeys(NVLINK_FIELDS, unknown(str(e)[:80], src))
    up = [i for i, state in enumerate(states) if state == 1]
    down = [i for i, state in enumerate(states) if state != 1]
    if up:
        version = g.fact("nvmlDeviceGetNvLinkVersion", _between(1, MAX_NVLINK_VERSION), str(up[0]))
    else:
        version = unknown("no active link" if states else stop, src)
    return {
        "nvlink.links": known(len(states), src),
        "nvlink.links_up": known(len(up), src),
        "nvlink.links_down": known(len(down), src),
        "nvlink.down": known(down, src),
        "nvlink.version": version,
        "nvlink.peers": _far_ends(g, up) if up else known([], src),
    }


REMOTE_TYPE = "nvmlDeviceGetNvLinkRemoteDeviceType"
REMOTE_PCI = "nvmlDeviceGetNvLinkRemotePciInfo"  # pynvml's name for nvmlDeviceGetNvLinkRemotePciInfo_v2


def _far_ends(g: _Gpu, links: list[int]) -> Fact:
    """What each active link reaches: the device type NVML names, and for a GPU (or a device NVML does not
    name) the remote PCI bus id. One link that cannot be read leaves the whole list unknown."""
    src = f"nvml:{REMOTE_TYPE}"
    ends: list[str] = []
    for link in links:
        kind, error = g.raw(REMOTE_TYPE, str(link))
        if error is not None:
            # Drivers without the call (or a snapshot that did not ask): judged from the bus id alone.
            if not nvml_error_is(error, ("NotSupported", "FunctionNotFound", "NotRecorded")):
                return unknown(error.reason, src)
            kind = NVLINK_UNKNOWN
        if isinstance(kind, bool) or not isinstance(kind, int):
            return unknown(f"unexpected value {kind!r} for link {link}"[:80], src)
        if kind == NVLINK_SWITCH or kind == NVLINK_IBMNPU:
            ends.append(NVSWITCH if kind == NVLINK_SWITCH else IBMNPU)
            continue
        if kind != NVLINK_GPU and kind != NVLINK_UNKNOWN:
            return unknown(f"unexpected value {kind!r} for link {link}"[:80], src)
        info, error = g.raw(REMOTE_PCI, str(link))
        if error is not None:
            return unknown(error.reason, f"nvml:{REMOTE_PCI}")
        try:
            bus = bus_id(info)
        except (TypeError, KeyError, IndexError):
            return unknown(f"unexpected value {info!r}"[:80], f"nvml:{REMOTE_PCI}")
        ends.append(bus if kind == NVLINK_GPU else RemoteBus(bus))
    return known(ends, src)


PEER_READINGS = (
    ("p2p.no_read", "nvmlDeviceGetP2PStatus", "READ", p2p_unreadable),
    ("topology.cross_socket", "nvmlDeviceGetTopologyCommonAncestor", None, crosses_sockets),
)


def _peers(g: _Gpu, count: int) -> dict[str, Fact]:
    """How this GPU reaches each other GPU: a list of the peers that a reading singles out, and its length.
    One peer that cannot be read leaves the list unknown: a partial list would read as complete."""
    out: dict[str, Fact] = {}
    peers = [j for j in range(count) if j != g.index]
    for field, function, capability, selected in PEER_READINGS:
        src = f"nvml:{nvml_key(function, capability)}" if peers else "nvml:nvmlDeviceGetCount (no other GPU)"
        listed = _peer_list(g, peers, function, capability, selected, src)
        out[field] = listed
        out[f"{field}_count"] = known(len(listed.value), src) if listed.known else listed
    out["topology.levels"] = _levels(g, count)
    return out


def _levels(g: _Gpu, count: int) -> Fact:
    """The row of `nvidia-smi topo -m`'s matrix for this GPU, from the topology readings the cross-socket
    list has made already (the call is cached: NVML is asked once a pair)."""
    function = "nvmlDeviceGetTopologyCommonAncestor"
    src = f"nvml:{function}" if count > 1 else "nvml:nvmlDeviceGetCount (no other GPU)"
    levels: dict[int, Any] = {}
    for peer in range(count):
        if peer != g.index:
            value, error = g.raw(function, str(peer), peer=True)
            if error is not None:
                return unknown(error.reason, src)
            levels[peer] = value
    return reading_fact(levels, lambda v: topology_levels(g.index, count, v), src)


def _peer_list(
    g: _Gpu, peers: list[int], function: str, capability: Optional[str], selected: Callable, src: str
) -> Fact:
    values: dict[int, Any] = {}
    for peer in peers:
        value, error = g.raw(function, f"{peer},{capability}" if capability else str(peer), peer=True)
        if error is not None:
            return unknown(error.reason, src)
        values[peer] = value
    return reading_fact(values, lambda v: peer_indices(v, selected), src)


def _sysfs(host: Any, bus: Fact) -> dict[str, Fact]:
    """The GPU's PCI device attributes in sysfs: its link, and its NUMA node."""
    out: dict[str, Fact] = {}
    for field, name, parse in SYSFS_READINGS:
        if not bus.known:
            out[field] = unknown(bus.unknown or "bus id unknown", "sysfs")
            continue
        path = f"{PCI_DEVICES}/{bus.value}/{name}"
        try:
            out[field] = reading_fact(host.read(path), parse, path)
        except HostError as e:
            out[field] = unknown(e.reason, path)
    return out
