"""The driver probe: kernel module, NVML, userspace library and the PCI view of NVIDIA GPUs.

Produces `driver.*` and `pci.*`. The three views (kernel module, NVML, loader) are read independently so
that a mismatch between them, the commonest broken-driver state, shows up as facts instead of one error.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any, NamedTuple, Optional

from ..facts import Fact, Facts, FactSpec, Inputs, collected, known, unknown
from ..host.base import NOT_FOUND, HostError, NvmlError
from . import EVERY_PROFILE, ProbeSpec
from .ldcache import find_soname, parse_ldconfig, versioned_name

FACT_SPECS: tuple[FactSpec, ...] = (
    FactSpec(
        "driver.loaded", "bool", "", "the NVIDIA kernel module is loaded (/proc/driver/nvidia/version exists)"
    ),
    FactSpec(
        "driver.version", "version", "", "driver version as NVML reports it, else as the kernel module does"
    ),
    FactSpec(
        "driver.kernel_version",
        "version",
        "",
        "version of the loaded kernel module (/proc/driver/nvidia/version)",
    ),
    FactSpec("driver.kernel_module", "str", "", "`open` (NVIDIA open GPU kernel modules) or `proprietary`"),
    FactSpec(
        "driver.userspace_version", "version", "", "version of libnvidia-ml.so the loader finds (file name)"
    ),
    FactSpec("driver.nvml_version", "str", "", "NVML library version (nvmlSystemGetNVMLVersion)"),
    FactSpec("driver.nvml_status", "str", "", "`ok`, or the NVML error name nvmlInit failed with"),
    FactSpec(
        "driver.max_cuda", "version", "", "newest CUDA the driver supports (cuDriverGetVersion), e.g. 13.0"
    ),
    FactSpec("driver.max_cuda_major", "int", "", "major part of driver.max_cuda"),
    FactSpec("driver.branch", "int", "", "driver branch: the major part of driver.version, e.g. 580"),
    FactSpec("pci.nvidia_gpus", "int", "", "NVIDIA display/3D controllers on the PCI bus (sysfs)"),
    FactSpec("pci.unbound", "int", "", "of those, how many have no kernel driver bound"),
    FactSpec("pci.unbound_addresses", "list[str]", "", "PCI addresses of NVIDIA GPUs with no driver bound"),
    FactSpec(
        "pci.nvidia_driver_addresses",
        "list[str]",
        "",
        "PCI addresses of NVIDIA GPUs the nvidia kernel module is bound to (their uevent's DRIVER=nvidia)",
    ),
    FactSpec(
        "pci.device_node_addresses",
        "list[str]",
        "",
        "of pci.nvidia_driver_addresses, those whose /dev/nvidia<minor> is here (given to this container)",
    ),
    FactSpec(
        "pci.missing_from_nvml",
        "list[str]",
        "",
        "derived: GPUs the nvidia module is bound to that NVML does not list (in a container: of those it "
        "was given, pci.device_node_addresses)",
    ),
    FactSpec(
        "pci.missing_from_nvml_count", "int", "", "derived: how many addresses are in pci.missing_from_nvml"
    ),
    FactSpec(
        "pci.amd_gpus",
        "int",
        "",
        "AMD (vendor 0x1002) display controllers and accelerators on the PCI bus (sysfs)",
    ),
)
PROBE = ProbeSpec("driver", profiles=EVERY_PROFILE)

PROC_VERSION = "/proc/driver/nvidia/version"
PROC_GPUS = "/proc/driver/nvidia/gpus"  # one directory per GPU the driver probed, named by PCI address
PCI_DEVICES = "/sys/bus/pci/devices"
NVIDIA_VENDOR = "0x10de"
# VGA-compatible (0x0300) and 3D (0x0302) controllers; data-centre GPUs are the latter.
GPU_CLASSES = ("0x0300", "0x0302")
AMD_VENDOR = "0x1002"
NVIDIA_DRIVER = "nvidia"  # the kernel module's name in a bound device's uevent (DRIVER=nvidia)
# AMD GPUs: display controllers of any kind (Radeon 0x0300, Instinct 0x0380) and processing accelerators.
AMD_GPU_CLASSES = ("0x03", "0x1200")
NVML_LIBRARY = "libnvidia-ml.so.1"
LDCONFIG_ARGVS = (("ldconfig", "-p"), ("/sbin/ldconfig", "-p"))

# Held as text, compiled by re's own cache when first used: a host without what it reads never uses it
# (compiled at import, it cost every check 0.05-0.15 ms).
# The version is the first whitespace-delimited dotted number; "x86_64" and "aarch64" never match.
_KERNEL_VERSION = r"(?<!\S)(\d+\.\d+(?:\.\d+)*)(?!\S)"


# --- pure parsing ---------------------------------------------------------------------------------------


def parse_proc_version(text: str) -> Optional[tuple[str, str]]:
    """(version, "open" | "proprietary") from /proc/driver/nvidia/version, or None if unrecognised."""
    for line in text.splitlines():
        if line.startswith("NVRM version:"):
            m = re.search(_KERNEL_VERSION, line)
            if not m:
                return None
            return m.group(1), "open" if "Open Kernel Module" in line else "proprietary"
    return None


def decode_cuda_version(value: int) -> tuple[str, int]:
    """cuDriverGetVersion's integer as (version, major): 13000 -> ("13.0", 13), 12040 -> ("12.4", 12)."""
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"not a CUDA version: {value!r}")
    major, minor = value // 1000, (value % 1000) // 10
    return f"{major}.{minor}", major


def branch_of(version: str) -> int:
    """The driver branch: 580.159.04 -> 580."""
    return int(version.split(".", 1)[0])


def is_gpu_class(pci_class: str) -> bool:
    return pci_class.strip().lower().startswith(GPU_CLASSES)


def is_amd_gpu_class(pci_class: str) -> bool:
    return pci_class.strip().lower().startswith(AMD_GPU_CLASSES)


# --- probe ----------------------------------------------------------------------------------------------


def probe(host: Any) -> dict[str, Fact]:
    facts: dict[str, Fact] = {}
    facts.update(_kernel(host))
    facts.update(_nvml(host, facts["driver.kernel_version"]))
    facts["driver.userspace_version"] = _userspace(host)
    facts.update(_pci(host))
    return facts


def _kernel(host: Any) -> dict[str, Fact]:
    src = PROC_VERSION
    try:
        text = host.read(PROC_VERSION)
    except HostError as e:
        # Only a missing file means "not loaded"; unreadable or unrecorded says nothing either way.
        loaded = known(False, src) if e.reason == NOT_FOUND else unknown(e.reason, src)
        why = "driver not loaded" if e.reason == NOT_FOUND else e.reason
        return {
            "driver.loaded": loaded,
            "driver.kernel_version": unknown(why, src),
            "driver.kernel_module": unknown(why, src),
        }
    parsed = parse_proc_version(text)
    if parsed is None:
        bad = unknown("unrecognised format", src)
        return {"driver.loaded": known(True, src), "driver.kernel_version": bad, "driver.kernel_module": bad}
    version, module = parsed
    return {
        "driver.loaded": known(True, src),
        "driver.kernel_version": known(version, src),
        "driver.kernel_module": known(module, src),
    }


def _nvml(host: Any, kernel_version: Fact) -> dict[str, Fact]:
    out: dict[str, Fact] = {}
    init_error: Optional[str] = None
    src = "nvml:nvmlInit"
    try:
        host.nvml("nvmlInit")
        out["driver.nvml_status"] = known("ok", src)
    except NvmlError as e:
        init_error = e.reason
        # A snapshot that never recorded nvmlInit tells us nothing about whether it worked.
        recorded = not e.name.endswith("NotRecorded")
        out["driver.nvml_status"] = known(e.name, src) if recorded else unknown(e.reason, src)
    except HostError as e:
        init_error = e.reason
        out["driver.nvml_status"] = unknown(e.reason, src)

    def system(function: str) -> Fact:
        source = f"nvml:{function}"
        if init_error is not None:
            return unknown(init_error, source)
        try:
            return known(host.nvml(function), source)
        except HostError as e:
            return unknown(e.reason, source)

    version_fact = system("nvmlSystemGetDriverVersion")
    if not (version_fact.known and isinstance(version_fact.value, str) and version_fact.value):
        # The kernel module's version is the driver's version when NVML cannot say.
        version_fact = kernel_version if kernel_version.known else version_fact
    out["driver.version"] = version_fact
    out["driver.branch"] = _derived(version_fact, branch_of)

    out["driver.nvml_version"] = _derived(system("nvmlSystemGetNVMLVersion"), str)
    cuda = system("nvmlSystemGetCudaDriverVersion_v2")
    out["driver.max_cuda"] = _derived(cuda, lambda v: decode_cuda_version(v)[0])
    out["driver.max_cuda_major"] = _derived(cuda, lambda v: decode_cuda_version(v)[1])
    return out


def _derived(fact: Fact, convert: Any) -> Fact:
    """A fact computed from another: unknown for the same reason, or because the value will not convert."""
    if not fact.known:
        return fact
    try:
        return known(convert(fact.value), fact.source)
    except (TypeError, ValueError, IndexError, AttributeError):
        return unknown(f"unexpected value {fact.value!r}"[:80], fact.source)


def _userspace(host: Any) -> Fact:
    result = None
    for argv in LDCONFIG_ARGVS:
        try:
            result = host.run(argv)
            break
        except HostError as e:
            if e.reason != NOT_FOUND:
                return unknown(e.reason, "ldconfig")
    if result is None:
        return unknown("ldconfig not found", "ldconfig")
    path = find_soname(parse_ldconfig(result.stdout), NVML_LIBRARY)
    if path is None:
        missing = f"{NVML_LIBRARY} not in the loader cache"
        return unknown(f"ldconfig failed (rc={result.rc})" if result.rc != 0 else missing, "ldconfig")
    directory = os.path.dirname(path)
    try:
        names = host.listdir(directory)
    except HostError as e:
        return unknown(e.reason, directory)
    version = versioned_name(names, "libnvidia-ml.so.")
    if version is None:
        return unknown("no versioned libnvidia-ml.so file", directory)
    return known(version, f"{directory}/libnvidia-ml.so.{version}")


def uevent_driver(text: str) -> Optional[str]:
    """The kernel driver a sysfs device's `uevent` names ("DRIVER=nvidia"), or None."""
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key == "DRIVER" and value.strip():
            return value.strip()
    return None


def device_minor(information: str) -> int:
    """The "Device Minor:" of /proc/driver/nvidia/gpus/<address>/information: the N of /dev/nvidiaN."""
    for line in information.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "Device Minor":
            return int(value.strip())
    raise ValueError("no Device Minor line")


PCI_FIELDS = (
    "pci.nvidia_gpus", "pci.unbound", "pci.unbound_addresses", "pci.nvidia_driver_addresses",
    "pci.device_node_addresses",
)  # fmt: skip


class PciScan(NamedTuple):
    gpus: list[str]  # NVIDIA GPU addresses, sorted
    unbound: list[str]  # of those, the ones with no driver bound
    amd: list[str]  # AMD GPU addresses
    nvidia_driver: list[str]  # NVIDIA GPUs the nvidia driver is bound to
    unread: dict[str, str]  # bound GPUs whose uevent could not be read: why


def _pci(host: Any) -> dict[str, Fact]:
    src = "sysfs"
    try:
        scan = _scan_pci(host)
    except HostError as e:
        bad = unknown(e.reason, src)
        return {**dict.fromkeys(PCI_FIELDS, bad), "pci.amd_gpus": bad}
    uevents = f"{PCI_DEVICES}/*/uevent"
    first_unread = next(iter(scan.unread.items()), None)
    return {
        "pci.nvidia_gpus": known(len(scan.gpus), src),
        "pci.unbound": known(len(scan.unbound), src),
        "pci.unbound_addresses": known(scan.unbound, src),
        "pci.nvidia_driver_addresses": (
            unknown(f"{first_unread[0]}: {first_unread[1]}", uevents)
            if first_unread
            else known(scan.nvidia_driver, uevents)
        ),
        "pci.device_node_addresses": _device_nodes(host, scan.nvidia_driver),
        "pci.amd_gpus": known(len(scan.amd), src),
    }


def _device_nodes(host: Any, bound: list[str]) -> Fact:
    """The nvidia-bound GPUs whose device node /dev/nvidia<minor> is in this /dev: the GPUs given to the host
    or container gpudoctor runs in. sysfs is not namespaced and lists every GPU of the machine; a container
    runtime gives a container the nodes of its GPUs only, and nvidia-container-cli also covers
    /proc/driver/nvidia with a tmpfs holding the entries of those GPUs only (libnvidia-container
    src/nvc_mount.c @63d366ee3b4183513c310ac557bf31b05b83328f, mount_procfs 350-413, mount_procfs_gpu
    417-459): a GPU whose entry is not there was not given."""
    src = f"{PROC_GPUS}/*/information, /dev"
    if not bound:
        return known([], src)
    try:
        nodes = set(host.listdir("/dev"))
    except HostError as e:
        return unknown(f"/dev: {e.reason}", src)
    here = []
    for addr in bound:
        path = f"{PROC_GPUS}/{addr}/information"
        try:
            minor = device_minor(host.read(path))
        except HostError as e:
            if e.reason == NOT_FOUND:
                continue
            return unknown(f"{path}: {e.reason}", src)
        except ValueError as e:
            return unknown(f"{path}: {e}", src)
        if f"nvidia{minor}" in nodes:
            here.append(addr)
    return known(here, src)


def _scan_pci(host: Any) -> PciScan:
    """The GPUs on the PCI bus and their drivers; HostError if the bus is unreadable."""
    scan = PciScan([], [], [], [], {})
    for addr in sorted(host.listdir(PCI_DEVICES)):
        base = f"{PCI_DEVICES}/{addr}"
        try:
            vendor = host.read(f"{base}/vendor")
        except HostError as e:
            if e.reason == NOT_FOUND:  # hot-unplugged between listing and reading
                continue
            raise
        vendor = vendor.strip().lower()
        if vendor == AMD_VENDOR:
            if is_amd_gpu_class(host.read(f"{base}/class")):
                scan.amd.append(addr)  # HDMI audio, USB and PCIe bridge functions of the board are not
            continue
        if vendor != NVIDIA_VENDOR:
            continue
        if not is_gpu_class(host.read(f"{base}/class")):
            continue  # NVIDIA audio, USB-C and NVSwitch functions are not GPUs
        scan.gpus.append(addr)
        if "driver" not in host.listdir(base):
            scan.unbound.append(addr)
            continue
        try:  # nvidia, or vfio-pci for a GPU passed through to a VM, nouveau, ...
            if uevent_driver(host.read(f"{base}/uevent")) == NVIDIA_DRIVER:
                scan.nvidia_driver.append(addr)
        except HostError as e:
            scan.unread[addr] = e.reason
    return scan


def missing_from_nvml(bound: Sequence[str], nvml_bus_ids: Sequence[str]) -> list[str]:
    """The PCI addresses the nvidia module is bound to that no GPU NVML lists has (NVML spells addresses in
    capitals, sysfs in lower case)."""
    listed = {b.lower() for b in nvml_bus_ids}
    return [addr for addr in bound if addr.lower() not in listed]


def _missing_from_nvml(facts: Facts) -> dict[str, Fact]:
    """On a host every GPU the nvidia module is bound to should be in NVML's list; in a container (whose
    sysfs lists the machine's GPUs, NVML only those it was given) only those given to it, whose device node
    it has."""
    get = Inputs(facts)
    bound, count = get("pci.nvidia_driver_addresses"), get("gpus.count")
    bus_ids = [get(f"gpus[{i}].bus_id") for i in range(count if isinstance(count, int) else 0)]
    if get("container.detected") is not False:
        given = get("pci.device_node_addresses")
        bound = (
            [a for a in bound if a in given] if isinstance(bound, list) and isinstance(given, list) else bound
        )
    missing = get.result(lambda: (missing_from_nvml(bound, bus_ids), None))
    return {
        "pci.missing_from_nvml": missing,
        "pci.missing_from_nvml_count": (
            known(len(missing.value), missing.source) if missing.known else missing
        ),
    }


def derive(facts: Facts) -> dict[str, Fact]:
    """pci.missing_from_nvml (gpudoctor/derive.py runs it)."""
    if not collected(facts, "pci.nvidia_driver_addresses", "gpus.count"):
        return {}
    return _missing_from_nvml(facts)
