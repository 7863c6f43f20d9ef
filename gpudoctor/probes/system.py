"""System facts: OS, kernel, CPUs, memory, the locked-memory and /dev/shm limits that pinned-memory
transfers and DataLoader workers run into, virtualization, glibc, and the environment that steers CUDA."""

from __future__ import annotations

import re
import shlex
from typing import Any, Optional

from ..facts import Fact, Facts, FactSpec, Inputs, collected, known, unknown
from ..host.base import NOT_FOUND, NOT_RECORDED, HostError
from ..host.base import read_or_reason as _read
from . import EVERY_PROFILE, ProbeSpec, chassis, env_pitfalls, shm
from .shm import find_mount

FACT_SPECS: tuple[FactSpec, ...] = (
    FactSpec("system.os", "str", "", "distribution name and version, e.g. Ubuntu 24.04.1 LTS"),
    FactSpec("system.os_id", "str", "", "os-release ID, e.g. ubuntu"),
    FactSpec("system.os_version", "version", "", "os-release VERSION_ID, e.g. 24.04"),
    FactSpec("system.kernel", "str", "", "kernel release"),
    FactSpec(
        "system.machine",
        "str",
        "",
        "the machine as the kernel reports it (`uname -m`): x86_64, aarch64, ... (the kernel.arch sysctl, "
        "else `uname -m`)",
    ),
    FactSpec("system.glibc", "version", "", "glibc version of the inspected interpreter"),
    FactSpec("system.cpus", "int", "", "online CPUs"),
    FactSpec(
        "system.cpus_per_gpu",
        "float",
        "",
        "derived: online CPUs per GPU NVML sees (system.cpus / gpus.count)",
    ),
    FactSpec("system.memory_bytes", "int", "bytes", "total RAM (MemTotal)"),
    FactSpec("system.memlock_bytes", "int", "bytes", "max locked memory of this process; -1 when unlimited"),
    FactSpec("system.shm_bytes", "int", "bytes", "size of /dev/shm"),
    FactSpec(
        "system.shm.exists", "bool", "", "/dev lists shm (a directory, or a link to one such as /run/shm)"
    ),
    FactSpec(
        "system.shm.read_only",
        "bool",
        "",
        "the mount /dev/shm lies on (its own, else /dev's or /'s) is read-only (`ro` in /proc/self/mounts)",
    ),
    FactSpec(
        "system.shm.mode",
        "str",
        "",
        "permission bits of /dev/shm in octal, e.g. 1777 (stat; read only for a user other than root)",
    ),
    FactSpec("system.shm.uid", "int", "", "owner of /dev/shm (stat; read only for a user other than root)"),
    FactSpec(
        "system.shm.writable",
        "bool",
        "",
        "this user can create files in /dev/shm: it exists, its mount is not read-only, and its mode lets "
        "this process's uid, gid or groups (/proc/self/status) write there (root: always); ACLs and "
        "security modules are not read",
    ),
    FactSpec(
        "system.virtualization", "str", "", "none, or the hypervisor seen: kvm, vmware, hyperv, xen, ..."
    ),
    FactSpec(
        "system.chassis",
        "str",
        "",
        "the kind of machine, as systemd's hostnamectl names it: `laptop`, `desktop`, `convertible`, "
        "`tablet`, `server`, `embedded`, `handset` or `vm` (/etc/machine-info CHASSIS=, else a hypervisor "
        "seen, else the SMBIOS chassis type, else the ACPI power profile: gpudoctor/probes/chassis.py)",
    ),
    FactSpec(
        "system.chassis_type",
        "int",
        "",
        "the SMBIOS chassis type code (/sys/class/dmi/id/chassis_type), e.g. 10 Notebook, 3 Desktop, 23 Rack "
        "Mount Chassis",
    ),
    FactSpec(
        "system.kernel_release",
        "version",
        "",
        "derived: the numeric part of system.kernel, e.g. 6.8.0 of 6.8.0-90-generic",
    ),
    FactSpec("env.ld_library_path", "str", "", "LD_LIBRARY_PATH"),
    FactSpec("env.cuda_visible_devices", "str", "", "CUDA_VISIBLE_DEVICES"),
    FactSpec("env.cuda_launch_blocking", "str", "", "CUDA_LAUNCH_BLOCKING (unknown: not set)"),
    FactSpec("env.nccl_p2p_disable", "str", "", "NCCL_P2P_DISABLE"),
    FactSpec("env.nccl_ib_disable", "str", "", "NCCL_IB_DISABLE"),
    FactSpec("env.nccl_socket_ifname", "str", "", "NCCL_SOCKET_IFNAME"),
    # The other variables that change the path NCCL takes (gpudoctor/nccl/predict.py reads them through
    # gpudoctor/nccl/topology.py ENV_FACTS), unknown "not set" when unset
    FactSpec("env.nccl_p2p_level", "str", "", "NCCL_P2P_LEVEL: the farthest GPU-GPU path P2P is used on"),
    FactSpec("env.nccl_shm_disable", "str", "", "NCCL_SHM_DISABLE: 1 turns shared-memory transport off"),
    FactSpec("env.nccl_net", "str", "", "NCCL_NET: the network NCCL must use (IB, Socket, a plugin's name)"),
    FactSpec(
        "env.nccl_net_plugin",
        "str",
        "",
        "NCCL_NET_PLUGIN: the network plugin library NCCL loads (X or libnccl-net-X.so)",
    ),
    FactSpec(
        "env.nccl_net_gdr_level",
        "str",
        "",
        "NCCL_NET_GDR_LEVEL: the farthest GPU-NIC path GPUDirect RDMA is used on",
    ),
    FactSpec("env.nccl_net_gdr_read", "str", "", "NCCL_NET_GDR_READ: GPUDirect RDMA for sends too"),
    FactSpec("env.nccl_ib_hca", "str", "", "NCCL_IB_HCA: the RDMA devices and ports NCCL may use"),
    FactSpec("env.nccl_cross_nic", "str", "", "NCCL_CROSS_NIC: rings and trees may change NIC between nodes"),
    FactSpec(
        "env.nccl_nvb_disable", "str", "", "NCCL_NVB_DISABLE: 1 turns P2P through an NVLink-connected GPU off"
    ),
    FactSpec(
        "env.nccl_pxn_disable", "str", "", "NCCL_PXN_DISABLE: 1 turns PXN (a NIC reached through NVLink) off"
    ),
    FactSpec("env.nccl_nvls_enable", "str", "", "NCCL_NVLS_ENABLE: 0 turns NVLink SHARP off"),
    FactSpec(
        "env.nccl_net_disable_intra", "str", "", "NCCL_NET_DISABLE_INTRA: 1 keeps the network out of a node"
    ),
    FactSpec(
        "env.nccl_ignore_disabled_p2p",
        "str",
        "",
        "NCCL_IGNORE_DISABLED_P2P: 1 lets NCCL go on when the driver reports P2P off between NVLink GPUs",
    ),
    FactSpec(
        "env.nccl_dmabuf_enable", "str", "", "NCCL_DMABUF_ENABLE: 0 turns GPUDirect RDMA over DMA-BUF off"
    ),
    FactSpec(
        "env.nccl_topo_file",
        "str",
        "",
        "NCCL_TOPO_FILE: an XML topology NCCL loads before it reads the machine's own",
    ),
    FactSpec(
        "env.cuda_injection64_path",
        "str",
        "",
        "CUDA_INJECTION64_PATH: a library CUDA loads into every process",
    ),
    FactSpec(
        "env.nvtx_injection64_path", "str", "", "NVTX_INJECTION64_PATH: a library NVTX loads to record ranges"
    ),
    FactSpec("env.ld_preload", "str", "", "LD_PRELOAD"),
    FactSpec(
        "env.profiler_injection",
        "list[str]",
        "",
        "what loads a profiler into every CUDA process, as NAME=value: CUDA_INJECTION64_PATH, "
        "NVTX_INJECTION64_PATH, and LD_PRELOAD entries whose file name names CUPTI or an injection library",
    ),
    FactSpec("env.profiler_injection_count", "int", "", "how many entries env.profiler_injection has"),
    FactSpec(
        "env.cuda_visible_devices_unmatched",
        "list[str]",
        "",
        "derived: CUDA_VISIBLE_DEVICES entries, up to the one CUDA stops at, that name no GPU NVML sees: an "
        "index at or past gpus.count, a GPU-/MIG- identifier no GPU's UUID starts with, or anything else",
    ),
    FactSpec(
        "env.cuda_visible_devices_unmatched_count",
        "int",
        "",
        "derived: how many are in env.cuda_visible_devices_unmatched",
    ),
    FactSpec(
        "env.nccl_socket_ifname_matches",
        "int",
        "",
        "derived: network interfaces NCCL_SOCKET_IFNAME selects, by NCCL's rules (prefixes, ^ to exclude, = "
        "for exact names)",
    ),
    FactSpec(
        "system.cpu.vendor",
        "str",
        "",
        "the CPU vendor string of an x86 CPU (/proc/cpuinfo vendor_id: GenuineIntel, AuthenticAMD, ...), "
        "which NCCL reads through CPUID; unknown on other CPUs",
    ),
    FactSpec(
        "system.cpu.family", "int", "", "the x86 CPU family (/proc/cpuinfo `cpu family`): 6 for Intel Xeons"
    ),
    FactSpec("system.cpu.model", "int", "", "the x86 CPU model number (/proc/cpuinfo `model`)"),
    FactSpec(
        "system.cpu.implementer",
        "str",
        "",
        "the implementer code of an ARM CPU (/proc/cpuinfo `CPU implementer`): 0x41 Arm (Grace's "
        "Neoverse-V2 cores too), 0x4e NVIDIA, ...; unknown on other CPUs",
    ),
    FactSpec("host.kind", "str", "", "`live` or `snapshot`: where the raw data came from"),
    FactSpec("host.hostname", "str", "", "the machine's hostname (redacted in snapshots unless --no-redact)"),
)
PROBE = ProbeSpec("system", profiles=EVERY_PROFILE, per_env=True)

OS_RELEASE = ("/etc/os-release", "/usr/lib/os-release")
MOUNTS = "/proc/self/mounts"
MEMINFO = "/proc/meminfo"
ARCH = "/proc/sys/kernel/arch"  # the kernel's utsname machine, as `uname -m` prints it
UNAME_M = ("uname", "-m")
UNPARSED = "could not parse"
# NCCL variables that change the transport NCCL picks, beyond env_pitfalls.VARIABLES' NCCL_P2P_DISABLE,
# NCCL_IB_DISABLE and NCCL_SOCKET_IFNAME: those gpudoctor/nccl/predict.py reads, and those NCCL's
# environment-variable documentation describes as choosing devices or paths (NCCL_NET_GDR_READ,
# NCCL_IB_HCA, NCCL_CROSS_NIC, NCCL_NET_PLUGIN, NCCL_DMABUF_ENABLE, NCCL_TOPO_FILE;
# https://docs.nvidia.com/deeplearning/nccl/archives/nccl_2155/user-guide/docs lists them all, read
# 2026-12-05). NCCL also reads them from /etc/nccl.conf and NCCL_CONF_FILE: not read here.
NCCL_PATH_VARIABLES = (
    "NCCL_P2P_LEVEL",
    "NCCL_SHM_DISABLE",
    "NCCL_NET",
    "NCCL_NET_PLUGIN",
    "NCCL_NET_GDR_LEVEL",
    "NCCL_NET_GDR_READ",
    "NCCL_IB_HCA",
    "NCCL_CROSS_NIC",
    "NCCL_NVB_DISABLE",
    "NCCL_PXN_DISABLE",
    "NCCL_NVLS_ENABLE",
    "NCCL_NET_DISABLE_INTRA",
    "NCCL_IGNORE_DISABLED_P2P",
    "NCCL_DMABUF_ENABLE",
    "NCCL_TOPO_FILE",
)
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SIZE = re.compile(r"([0-9]{1,30})([kmgtpe]?)", re.IGNORECASE)  # longer is no size, and int() may refuse it


def parse_os_release(text: str) -> dict[str, str]:
    """os-release is shell-compatible assignments; shlex undoes quoting and backslash escapes."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, raw = line.split("=", 1)
        if not _KEY.fullmatch(key):
            continue
        try:
            out[key] = " ".join(shlex.split(raw))
        except ValueError:  # an unbalanced quote: keep what is there rather than drop the line
            out[key] = raw.strip("\"'")
    return out


def parse_cpu_list(text: str) -> int:
    """Count CPUs in a kernel cpu list such as "0-15" or "0-3,8-11"; ValueError when it is not one."""
    count = 0
    for part in text.strip().split(","):
        first, _, last = part.partition("-")
        lo, hi = int(first), int(last or first)
        if hi < lo:
            raise ValueError(part)
        count += hi - lo + 1
    return count


def parse_meminfo_total(text: str) -> Optional[int]:
    m = re.search(r"^MemTotal:\s+([0-9]{1,20})\s*kB", text, re.MULTILINE)
    return int(m.group(1)) * 1024 if m else None


def parse_memlock(text: str) -> Optional[int]:
    """The soft limit (what mlock is refused above), in bytes; -1 when unlimited."""
    m = re.search(r"^Max locked memory\s+(unlimited|[0-9]{1,20})\s", text, re.MULTILINE)
    return None if m is None else -1 if m.group(1) == "unlimited" else int(m.group(1))


def parse_size(text: str) -> Optional[int]:
    """A tmpfs size= option ("65536k", "64m", "1g", or bytes) in bytes."""
    m = _SIZE.fullmatch(text.strip())
    if not m:
        return None
    return int(m.group(1)) * 1024 ** " kmgtpe".index(m.group(2).lower() or " ")


def first_cpu(cpuinfo: str) -> dict[str, str]:
    """The fields of the first processor block of /proc/cpuinfo ("key<tabs>: value" lines up to the first
    blank line), keys as printed ("vendor_id", "cpu family", "CPU implementer"). x86 prints vendor_id,
    `cpu family` and `model` per processor; arm64 prints `CPU implementer` and `CPU part` per processor."""
    out: dict[str, str] = {}
    for line in cpuinfo.strip().splitlines():
        if not line.strip():
            break
        key, sep, value = line.partition(":")
        if sep:
            out.setdefault(key.strip(), value.strip())
    return out


def has_hypervisor_flag(cpuinfo: str) -> bool:
    return re.search(r"^flags\s*:.*\bhypervisor\b", cpuinfo, re.MULTILINE) is not None


def classify_virtualization(
    vendor: Optional[str], product: Optional[str], hypervisor: Optional[bool]
) -> Optional[str]:
    """Name the hypervisor from DMI (vendor/product None: no DMI) and the cpuinfo flag (None: unread).
    None when it cannot be told."""
    v, p = (vendor or "").strip(), (product or "").strip()
    if v == "Amazon EC2":
        # Nitro bare-metal instances keep the EC2 vendor string but run on no hypervisor.
        return "none" if p.endswith(".metal") and hypervisor is False else "amazon"
    if "QEMU" in v or p == "KVM" or p.startswith("Standard PC") or p.startswith("OpenStack"):
        return "kvm"
    if v.startswith("VMware") or p.startswith("VMware"):
        return "vmware"
    if v == "Microsoft Corporation" and p == "Virtual Machine":
        return "hyperv"
    if v == "Xen" or p.startswith("HVM domU"):
        return "xen"
    if v == "Google" or p == "Google Compute Engine":
        return "google"
    if hypervisor is None:
        return None
    if hypervisor:
        # Firecracker microVMs expose no SMBIOS tables at all.
        return "firecracker" if vendor is None and product is None else "other"
    return "none"


def _parsed(text: Optional[str], reason: Optional[str], source: str, parse: Any) -> Fact:
    """Apply parse to what a read gave; a failed read or parse is unknown, with why."""
    if text is None:
        return unknown(reason or NOT_FOUND, source)
    try:
        value = parse(text)
    except ValueError:
        value = None
    return unknown(UNPARSED, source) if value in (None, "") else known(value, source)


def _os_facts(host: Any) -> dict[str, Fact]:
    text, reason = _read(host, OS_RELEASE[0])
    source = OS_RELEASE[0]
    if text is None:
        text, _ = _read(host, OS_RELEASE[1])
        source = OS_RELEASE[1] if text is not None else source
    fields = parse_os_release(text) if text is not None else {}
    out: dict[str, Fact] = {}
    for name, key in (
        ("system.os", "PRETTY_NAME"),
        ("system.os_id", "ID"),
        ("system.os_version", "VERSION_ID"),
    ):
        missing = reason if text is None else f"no {key}"
        out[name] = known(fields[key], source) if fields.get(key) else unknown(missing or NOT_FOUND, source)
    return out


def _shm(mounts: Optional[str], reason: Optional[str], mem_total: Optional[int]) -> Fact:
    if mounts is None:
        return unknown(reason or NOT_FOUND, MOUNTS)
    found = find_mount(mounts, "/dev/shm")
    if found is None:
        return unknown(NOT_FOUND, MOUNTS)
    fstype, opts = found
    size = parse_size(opts["size"]) if "size" in opts else None
    if "size" in opts and size is None:
        return unknown(f"{UNPARSED} size={opts['size']}", MOUNTS)
    if fstype != "tmpfs" and size is None:
        return unknown(f"{fstype} without size=", MOUNTS)
    if size:
        return known(size, MOUNTS)
    # No size= (or size=0, no limit): tmpfs can grow to half of RAM, or to all of it.
    note = "tmpfs default: half of MemTotal" if size is None else "size=0: no limit but MemTotal"
    source = f"{MOUNTS}, {MEMINFO} ({note})"
    if mem_total is None:
        return unknown(f"{MEMINFO} unreadable", source)
    return known(mem_total // 2 if size is None else mem_total, source)


def _virtualization(host: Any, cpuinfo: Optional[str], cpu_err: Optional[str]) -> Fact:
    vendor, vendor_err = _read(host, "/sys/class/dmi/id/sys_vendor")
    product, product_err = _read(host, "/sys/class/dmi/id/product_name")
    source = "/sys/class/dmi/id, /proc/cpuinfo"
    hypervisor = has_hypervisor_flag(cpuinfo) if cpuinfo is not None else None
    if vendor is None and product is None and {vendor_err, product_err} - {NOT_FOUND}:
        vendor = ""  # DMI is there but unreadable: not the no-DMI mark of Firecracker
    kind = classify_virtualization(vendor, product, hypervisor)
    return unknown(cpu_err or NOT_FOUND, source) if kind is None else known(kind, source)


CPUINFO = "/proc/cpuinfo"
# (fact, /proc/cpuinfo key, parse, the CPUs that print the key)
_CPU_FIELDS = (
    ("system.cpu.vendor", "vendor_id", str, "x86"),
    ("system.cpu.family", "cpu family", int, "x86"),
    ("system.cpu.model", "model", int, "x86"),
    ("system.cpu.implementer", "CPU implementer", str, "ARM"),
)


def cpu_facts(cpuinfo: Optional[str], reason: Optional[str]) -> dict[str, Fact]:
    """The CPU's vendor (x86: vendor_id, family and model; ARM: its implementer code) from /proc/cpuinfo's
    first processor. A field the CPU does not print is unknown, saying which CPUs print it."""
    if cpuinfo is None:
        return {name: unknown(reason or NOT_FOUND, CPUINFO) for name, _, _, _ in _CPU_FIELDS}
    fields = first_cpu(cpuinfo)
    out: dict[str, Fact] = {}
    for name, key, parse, kind in _CPU_FIELDS:
        text = fields.get(key)
        if not text:
            out[name] = unknown(f"no `{key}` in {CPUINFO} (printed by {kind} CPUs)", CPUINFO)
            continue
        try:
            out[name] = known(parse(text), CPUINFO)
        except ValueError:
            out[name] = unknown(f"{UNPARSED} {key}: {text[:40]}", CPUINFO)
    return out


def _chassis(host: Any, virtualization: Fact) -> dict[str, Fact]:
    read = chassis.read(host)
    reasons, dmi = read["reasons"], read["dmi"]
    kind, said = chassis.classify(read["machine_info"], virtualization.value, dmi, read["acpi"])
    if kind is None and len(reasons) == 3 and set(reasons.values()) == {NOT_RECORDED}:
        said = NOT_RECORDED  # a snapshot made before gpudoctor read these files
    dmi_fact = (
        known(dmi, chassis.DMI_CHASSIS)
        if dmi is not None
        else unknown(reasons.get(chassis.DMI_CHASSIS, UNPARSED), chassis.DMI_CHASSIS)
    )
    return {
        "system.chassis": known(kind, said)
        if kind
        else unknown(said, "/sys/class/dmi/id, /etc/machine-info"),
        "system.chassis_type": dmi_fact,
    }


def kernel_machine(host: Any) -> Fact:
    """The machine as the kernel reports it (uname -m: x86_64, aarch64): the kernel.arch sysctl, and
    `uname -m` on kernels without that file. An old snapshot has neither: unknown, not recorded."""
    text, reason = _read(host, ARCH)
    if text is not None and text.strip():
        return known(text.strip(), ARCH)
    if reason == NOT_RECORDED:
        return unknown(reason, ARCH)
    source = " ".join(UNAME_M)
    try:
        result = host.run(UNAME_M)
    except HostError as e:
        return unknown(e.reason, source)
    value = result.stdout.strip()
    if result.rc != 0:
        return unknown(
            f"exited with status {result.rc}" if result.rc is not None else "did not finish", source
        )
    if not value or len(value.split()) != 1:
        return unknown(UNPARSED, source)
    return known(value, source)


def _glibc(host: Any) -> Fact:
    try:
        data = host.python()
    except HostError as e:
        return unknown(e.reason, "python")
    source = f"python:{data.get('executable', '')} platform.libc_ver()"
    libc = data.get("libc")
    if not isinstance(libc, list) or len(libc) != 2:
        return unknown("not reported", source)
    if libc[0] != "glibc" or not libc[1]:
        return unknown(f"not glibc ({libc[0]})" if libc[0] else "libc not identified", source)
    return known(str(libc[1]), source)


_ONE_FILE = (
    ("system.kernel", "/proc/sys/kernel/osrelease", str.strip),
    ("host.hostname", "/proc/sys/kernel/hostname", str.strip),
    ("system.cpus", "/sys/devices/system/cpu/online", parse_cpu_list),
    ("system.memory_bytes", MEMINFO, parse_meminfo_total),
    ("system.memlock_bytes", "/proc/self/limits", parse_memlock),
)


def probe(host: Any) -> dict[str, Fact]:
    facts = _os_facts(host)
    for name, path, parse in _ONE_FILE:
        facts[name] = _parsed(*_read(host, path), path, parse)
    text, reason = _read(host, MOUNTS)
    facts["system.shm_bytes"] = _shm(text, reason, facts["system.memory_bytes"].value)
    facts.update(shm.facts(host, text, reason, MOUNTS))  # issue 23: /dev/shm there and writable
    cpuinfo, cpu_err = _read(host, CPUINFO)
    facts["system.virtualization"] = _virtualization(host, cpuinfo, cpu_err)
    facts.update(cpu_facts(cpuinfo, cpu_err))  # issue 26: NCCL's P2P level and CPU bandwidth follow it
    facts.update(_chassis(host, facts["system.virtualization"]))  # issue 27: laptops sleep, servers do not
    facts["system.machine"] = kernel_machine(host)
    facts["system.glibc"] = _glibc(host)
    facts["env.ld_library_path"] = env_pitfalls.env_fact(host, "LD_LIBRARY_PATH")
    facts["env.cuda_visible_devices"] = env_pitfalls.env_fact(host, "CUDA_VISIBLE_DEVICES")
    facts.update(env_pitfalls.facts(host))  # issue 11, part C: variables that slow or break jobs
    for name in NCCL_PATH_VARIABLES:  # issue 26: what steers NCCL's transport choice
        facts[f"env.{name.lower()}"] = env_pitfalls.env_fact(host, name)
    return facts


def _cpus_per_gpu(facts: Facts) -> Fact:
    get = Inputs(facts)
    cpus, count = get("system.cpus"), get("gpus.count")
    return get.result(lambda: (round(cpus / count, 2), None) if count else (None, "no GPU"))


_NUMERIC = re.compile(r"(\d{1,6})\.(\d{1,6})(?:\.(\d{1,6}))?")


def version_numbers(text: Any) -> Optional[tuple[int, ...]]:
    """The leading major.minor[.patch] of a version or kernel release, as numbers; None without one."""
    m = _NUMERIC.match(str(text or ""))
    return tuple(int(p) for p in m.groups() if p is not None) if m else None


def _kernel_release(facts: Facts) -> Fact:
    kernel = facts.get("system.kernel")
    numbers = version_numbers(kernel.value) if kernel.known else None
    src = "derived:system.kernel"
    return (
        known(".".join(map(str, numbers)), src)
        if numbers
        else unknown(kernel.unknown or "could not parse", src)
    )


def derive(facts: Facts) -> dict[str, Fact]:
    """The system and environment facts computed from other facts (gpudoctor/derive.py runs it)."""
    out: dict[str, Fact] = {}
    if collected(facts, "system.cpus", "gpus.count"):
        out["system.cpus_per_gpu"] = _cpus_per_gpu(facts)
    if collected(facts, "system.kernel"):
        out["system.kernel_release"] = _kernel_release(facts)
    out.update(env_pitfalls.derive(facts))
    return out
