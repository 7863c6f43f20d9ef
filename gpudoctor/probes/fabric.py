"""The NVLink fabric of NVSwitch systems: each GPU's fabric state as NVML reports it, the NVSwitch devices on
the PCI bus, and the services that bring the fabric up (NVIDIA Fabric Manager) and share GPU memory between
nodes over it (IMEX).

Produces `fabric.*`, `fabric_manager.*` and `imex.*` (three sections, so that a profile can let the
services' facts be unknown, as they are in a container, without letting NVML's be: Profile.unknown_ok).

NVML (nvml.h). Where GPUs are connected through NVSwitch, the
driver registers each GPU with the fabric that Fabric Manager (or, on multi-node NVLink systems, the NVLink
switch trays) sets up; until a GPU's registration is complete, CUDA initialisation fails with
CUDA_ERROR_SYSTEM_NOT_READY (802). nvmlDeviceGetGpuFabricInfoV fills nvmlGpuFabricInfo_v3_t (clusterUuid,
status, cliqueId, state, healthMask, healthSummary) or _v2_t (no healthSummary: older drivers accept only
this one); nvmlDeviceGetGpuFabricInfo fills the unversioned structure (no health at all), which pynvml has
had from 12.535 (gpudoctor's floor), so that its FunctionNotFound is the driver's. Each is asked in that
order, the next when the driver refuses the structure's version (NVML_ERROR_ARGUMENT_VERSION_MISMATCH), lacks
the call or answers NotSupported. The live Host lays the structures out as nvml.h does (nvml_live.structure):
pynvml's classes read the one-byte state as a 4-byte integer, padding included. The fields:
    state          nvmlGpuFabricState_t: NOT_SUPPORTED 0, NOT_STARTED 1, IN_PROGRESS 2, COMPLETED 3
    status         an nvmlReturn_t, the result of the registration: "must be checked only if" the state is
                   COMPLETED (nvml.h), so it is a fact only then
    healthMask     NVML_GPU_FABRIC_HEALTH_MASK_*: 2-bit fields; bits 0-1 degraded bandwidth (NOT_SUPPORTED
                   0, TRUE 1, FALSE 2)
    healthSummary  NVML_GPU_FABRIC_HEALTH_SUMMARY_*: NOT_SUPPORTED 0, HEALTHY 1, UNHEALTHY 2,
                   LIMITED_CAPACITY 3
A GPU that NVML answers NotSupported for (a PCIe card, a GPU before Hopper, a driver without the calls) is on
no NVLink fabric that NVML can report: its state is the known "not supported". A GPU whose fabric call failed
otherwise (no permission, a snapshot that did not record it) but that reports no NVLink at all (link 0's
state NotSupported, as the gpus probe reads it) is on no NVLink fabric either; anything else is unknown.

NVSwitch devices: NVIDIA (vendor 0x10de) PCI functions of class 0x0680 (bridge, subclass "other"), the
class the NVSwitches of HGX and DGX boards have (lspci: "Bridge: NVIDIA Corporation Device 1af1" on A100
boards, "... Device 22a3" on H100 boards); NVIDIA's GPUs are class 0x0300 or 0x0302 and Grace's root ports
0x0604. On GB200 NVL72 the switches are in separate NVLink switch trays, not on the compute tray's PCI bus,
and run their own fabric manager: there a GPU's fabric state is what says the host is on an NVLink fabric.

Services, through systemd: `systemctl show` for nvidia-fabricmanager.service and nvidia-imex.service in one
call (`systemctl is-active` prints "inactive" both for a unit that is stopped and for one that does not
exist; `show` says LoadState=not-found for the latter). Where systemd is not the service manager
(/run/systemd/system is absent: a container, another init system) nothing is run and the services' facts
are unknown with that reason, never "inactive". Fabric Manager's version is `nv-fabricmanager --version`
("Fabric Manager version is : 535.161.08"), asked only where the unit is installed.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from ..facts import Fact, FactSpec, known, list_facts, unknown
from ..host.base import NOT_FOUND, NOT_RECORDED, HostError, NvmlError, nvml_key
from . import EVERY_PROFILE, ProbeSpec
from .gpus import (
    COUNT_SOURCE,
    U32_MAX,
    Implausible,
    nvml_error_is,
    nvml_gpu_count,
    plausible,
    reading_fact,
)
from .interconnect import PCI_ROOT, pci_classes

FACT_SPECS: tuple[FactSpec, ...] = (
    FactSpec("fabric.gpus.count", "int", "", "GPUs the fabric reading covers (every GPU NVML lists)"),
    FactSpec("fabric.gpus[].index", "int", "", "NVML index"),
    FactSpec(
        "fabric.gpus[].state",
        "str",
        "",
        "the GPU's NVLink fabric state (nvmlDeviceGetGpuFabricInfoV, else nvmlDeviceGetGpuFabricInfo): "
        "`not supported` (on no NVLink fabric NVML reports: a PCIe card, a GPU before Hopper, a GPU "
        "without NVLink, a driver without the call), `not started`, `in progress`, or `completed` "
        "(registered with the fabric: until then CUDA initialisation fails with CUDA_ERROR_SYSTEM_NOT_READY, "
        "802)",
    ),
    FactSpec(
        "fabric.gpus[].status",
        "str",
        "",
        "the result of the GPU's fabric registration, as nvml.h names the nvmlReturn_t: `NVML_SUCCESS`, "
        "`NVML_ERROR_NOT_READY`, ...; set only once the state is completed",
    ),
    FactSpec(
        "fabric.gpus[].clique_id", "int", "", "the fabric clique the GPU belongs to; set once completed"
    ),
    FactSpec(
        "fabric.gpus[].health_mask",
        "int",
        "bitmask",
        "the fabric's healthMask (NVML_GPU_FABRIC_HEALTH_MASK_* fields; not in the unversioned structure)",
    ),
    FactSpec(
        "fabric.gpus[].bandwidth",
        "str",
        "",
        "NVLink fabric bandwidth from the health mask: `full`, `degraded` or `not supported`",
    ),
    FactSpec(
        "fabric.gpus[].health_summary",
        "str",
        "",
        "NVML's fabric health summary (v3 structure): `healthy`, `unhealthy`, `limited capacity` or "
        "`not supported`",
    ),
    FactSpec(
        "fabric.nvswitch_count",
        "int",
        "",
        "NVSwitch devices on the PCI bus (sysfs: NVIDIA vendor 0x10de, class 0x0680), as on HGX/DGX boards",
    ),
    FactSpec(
        "fabric.nvswitch_system",
        "bool",
        "",
        "NVSwitch devices on the PCI bus, or a GPU whose fabric state is not `not supported` (GB200 NVL72 "
        "compute trays, whose switches are elsewhere)",
    ),
    FactSpec(
        "fabric_manager.installed",
        "bool",
        "",
        "systemd knows nvidia-fabricmanager.service (systemctl show: LoadState is not `not-found`)",
    ),
    FactSpec(
        "fabric_manager.state",
        "str",
        "",
        "nvidia-fabricmanager.service: its ActiveState (`active`, `inactive`, `failed`, `activating`, ...), "
        "`not installed` or `masked`; unknown where systemd is not the service manager (a container)",
    ),
    FactSpec(
        "fabric_manager.version",
        "version",
        "",
        "NVIDIA Fabric Manager's version (nv-fabricmanager --version), which must equal driver.version",
    ),
    FactSpec(
        "imex.installed",
        "bool",
        "",
        "IMEX (multi-node NVLink memory sharing) is installed: /etc/nvidia-imex exists or systemd knows "
        "nvidia-imex.service",
    ),
    FactSpec(
        "imex.state",
        "str",
        "",
        "nvidia-imex.service: its ActiveState, `not installed` or `masked`, as fabric_manager.state",
    ),
)
# In preflight: a GPU not yet on its NVLink fabric fails every CUDA job (802); one to three NVML calls per
# GPU, the PCI class files, one systemctl where systemd runs.
PROBE = ProbeSpec("fabric", profiles=EVERY_PROFILE)

FABRIC_STATES = {0: "not supported", 1: "not started", 2: "in progress", 3: "completed"}
NOT_SUPPORTED = FABRIC_STATES[0]
COMPLETED = FABRIC_STATES[3]
HEALTH_SUMMARIES = {0: "not supported", 1: "healthy", 2: "unhealthy", 3: "limited capacity"}
# NVML_GPU_FABRIC_HEALTH_MASK_DEGRADED_BW_*: the mask's bits 0-1 (..._SHIFT_DEGRADED_BW 0, ..._WIDTH_ 0x3).
BANDWIDTH = {0: "not supported", 1: "degraded", 2: "full"}
# nvmlReturn_t, as nvml.h names its values (pynvml's NVML_SUCCESS, NVML_ERROR_* constants).
NVML_RETURNS = {
    0: "SUCCESS", 1: "ERROR_UNINITIALIZED", 2: "ERROR_INVALID_ARGUMENT", 3: "ERROR_NOT_SUPPORTED",
    4: "ERROR_NO_PERMISSION", 5: "ERROR_ALREADY_INITIALIZED", 6: "ERROR_NOT_FOUND",
    7: "ERROR_INSUFFICIENT_SIZE", 8: "ERROR_INSUFFICIENT_POWER", 9: "ERROR_DRIVER_NOT_LOADED",
    10: "ERROR_TIMEOUT", 11: "ERROR_IRQ_ISSUE", 12: "ERROR_LIBRARY_NOT_FOUND", 13: "ERROR_FUNCTION_NOT_FOUND",
    14: "ERROR_CORRUPTED_INFOROM", 15: "ERROR_GPU_IS_LOST", 16: "ERROR_RESET_REQUIRED",
    17: "ERROR_OPERATING_SYSTEM", 18: "ERROR_LIB_RM_VERSION_MISMATCH", 19: "ERROR_IN_USE", 20: "ERROR_MEMORY",
    21: "ERROR_NO_DATA", 22: "ERROR_VGPU_ECC_NOT_SUPPORTED", 23: "ERROR_INSUFFICIENT_RESOURCES",
    24: "ERROR_FREQ_NOT_SUPPORTED", 25: "ERROR_ARGUMENT_VERSION_MISMATCH", 26: "ERROR_DEPRECATED",
    27: "ERROR_NOT_READY", 28: "ERROR_GPU_NOT_FOUND", 29: "ERROR_INVALID_STATE",
    30: "ERROR_RESET_TYPE_NOT_SUPPORTED", 999: "ERROR_UNKNOWN",
}  # fmt: skip
# The calls, newest structure first: (function, symbolic argument, what the structure carries).
FABRIC_CALLS = (
    ("nvmlDeviceGetGpuFabricInfoV", "v3", "v3"),
    ("nvmlDeviceGetGpuFabricInfoV", "v2", "v2"),
    ("nvmlDeviceGetGpuFabricInfo", None, "v1"),
)
# Failures after which the next, older call is asked.
_OLDER = ("ArgumentVersionMismatch", "FunctionNotFound", "NotSupported")
# Failures of nvmlDeviceGetNvLinkState(0) meaning the GPU has no NVLink (as the gpus probe reads them).
_NO_NVLINK = ("NotSupported", "FunctionNotFound", "InvalidArgument")
NO_FABRIC = "no NVLink fabric"
FIELDS = ("index", "state", "status", "clique_id", "health_mask", "bandwidth", "health_summary")
NVSWITCH_CLASS = "0x0680"

SYSTEMD_DIR = "/run/systemd"  # holds `system` exactly when systemd is the running service manager (sd_booted)
FABRIC_MANAGER_UNIT = "nvidia-fabricmanager.service"
IMEX_UNIT = "nvidia-imex.service"
IMEX_DIR = "/etc/nvidia-imex"  # the nvidia-imex package's configuration (config.cfg, nodes_config.cfg)
SYSTEMCTL = (
    "systemctl", "show", "-p", "Id", "-p", "LoadState", "-p", "ActiveState", FABRIC_MANAGER_UNIT, IMEX_UNIT,
)  # fmt: skip
FM_VERSION = ("nv-fabricmanager", "--version")
FM_FACTS = ("fabric_manager.installed", "fabric_manager.state", "fabric_manager.version")
NO_SYSTEMD = "systemd is not the service manager here (no /run/systemd/system): in a container?"
# Held as text, compiled by re's own cache when first used: a host without what it reads never uses it
# (compiled at import, it cost every check 0.05-0.15 ms).
_FM_VERSION = r"Fabric Manager version is\s*:\s*([0-9]+(?:\.[0-9]+)+)\s*$"


# --- pure decoding --------------------------------------------------------------------------------------


def fabric_state(value: Any) -> str:
    """nvmlGpuFabricState_t -> "not supported", "not started", "in progress" or "completed"."""
    return FABRIC_STATES[plausible(value, 0, 3)]


def return_name(value: Any) -> str:
    """An nvmlReturn_t as nvml.h names it: 0 -> "NVML_SUCCESS", 27 -> "NVML_ERROR_NOT_READY"."""
    code = plausible(value, 0, U32_MAX)
    return f"NVML_{NVML_RETURNS[code]}" if code in NVML_RETURNS else f"nvmlReturn_t {code}"


def bandwidth(mask: Any) -> str:
    """The degraded-bandwidth field of a healthMask: "full", "degraded" or "not supported"."""
    field = plausible(mask, 0, U32_MAX) & 0x3
    if field not in BANDWIDTH:
        raise Implausible(f"implausible value: degraded-bandwidth field {field} of healthMask {mask:#x}")
    return BANDWIDTH[field]


def health_summary(value: Any) -> str:
    return HEALTH_SUMMARIES[plausible(value, 0, 3)]


def parse_systemctl_show(text: str) -> dict[str, dict[str, str]]:
    """`systemctl show -p Id -p LoadState ... UNIT...` output -> {unit id: {property: value}}: one block of
    Key=Value lines per unit, blocks separated by a blank line."""
    units: dict[str, dict[str, str]] = {}
    for block in re.split(r"\n\s*\n", text.strip()):
        props = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
        if props.get("Id"):
            units[props["Id"]] = props
    return units


def unit_state(props: dict[str, str]) -> str:
    """A unit's state: "not installed" (LoadState=not-found), "masked", else its ActiveState (active,
    inactive, failed, activating, deactivating, reloading)."""
    load, active = props.get("LoadState", ""), props.get("ActiveState", "")
    if load == "not-found":
        return "not installed"
    if load == "masked":
        return "masked"
    if not re.fullmatch(r"[a-z-]+", active):
        raise ValueError(f"unexpected ActiveState {active!r}")
    return active


def parse_fm_version(text: str) -> Optional[str]:
    """ "Fabric Manager version is : 535.161.08" -> "535.161.08"."""
    m = re.search(_FM_VERSION, text, re.MULTILINE)
    return m.group(1) if m else None


# --- NVML ----------------------------------------------------------------------------------------------


def _fabric_info(host: Any, index: int) -> tuple[Any, str, str, Optional[HostError]]:
    """(the filled structure, its version, the source, None), or (None, "", source, the last error)."""
    error: Optional[HostError] = None
    source = ""
    for function, arg, version in FABRIC_CALLS:
        source = f"nvml:{nvml_key(function, arg)}"
        try:
            value = host.nvml(function, device=index, arg=arg)
        except HostError as e:
            error = e
            if nvml_error_is(e, _OLDER):
                continue
            break
        return value, version, source, None
    return None, "", source, error


def _no_nvlink(host: Any, index: int) -> bool:
    try:
        host.nvml("nvmlDeviceGetNvLinkState", device=index, arg="0")
    except HostError as e:
        return nvml_error_is(e, _NO_NVLINK)
    return False


def read_gpu(host: Any, index: int) -> dict[str, Fact]:
    """fabric.gpus[index].*: its fabric state, and the status and health NVML gives with it."""
    f: dict[str, Fact] = {"index": known(index, "nvml:nvmlDeviceGetCount")}
    info, version, source, error = _fabric_info(host, index)
    if error is not None:
        if nvml_error_is(error, ("NotSupported", "FunctionNotFound")):
            f["state"] = known(NOT_SUPPORTED, f"{source} ({error.reason})")
        elif isinstance(error, NvmlError) and _no_nvlink(host, index):
            f["state"] = known(NOT_SUPPORTED, "nvml:nvmlDeviceGetNvLinkState(0) (no NVLink)")
        else:
            f.update(dict.fromkeys(FIELDS[1:], unknown(error.reason, source)))
            return f
        f.update(dict.fromkeys(FIELDS[2:], unknown(NO_FABRIC, f["state"].source)))
        return f
    if not isinstance(info, dict):
        f.update(dict.fromkeys(FIELDS[1:], unknown(f"unexpected value {info!r}"[:80], source)))
        return f
    f["state"] = reading_fact(info.get("state"), fabric_state, source)
    if not f["state"].known:
        f.update(dict.fromkeys(FIELDS[2:], f["state"]))
        return f
    state = f["state"].value
    if state == NOT_SUPPORTED:
        f.update(dict.fromkeys(FIELDS[2:], unknown(NO_FABRIC, source)))
        return f
    if state == COMPLETED:
        f["status"] = reading_fact(info.get("status"), return_name, source)
        f["clique_id"] = reading_fact(info.get("cliqueId"), lambda v: plausible(v, 0, U32_MAX), source)
    else:
        f["status"] = f["clique_id"] = unknown(f"set once the fabric state is completed ({state})", source)
    if version == "v1":
        none = unknown("nvmlDeviceGetGpuFabricInfo's structure has no health fields", source)
        f["health_mask"] = f["bandwidth"] = f["health_summary"] = none
        return f
    f["health_mask"] = reading_fact(info.get("healthMask"), lambda v: plausible(v, 0, U32_MAX), source)
    f["bandwidth"] = reading_fact(info.get("healthMask"), bandwidth, source)
    if version == "v2":
        f["health_summary"] = unknown("the driver answers only the v2 structure: no health summary", source)
    else:
        f["health_summary"] = reading_fact(info.get("healthSummary"), health_summary, source)
    return f


def _gpus(host: Any) -> dict[str, Fact]:
    count = nvml_gpu_count(host)
    if isinstance(count, Fact):
        return {"fabric.gpus.count": count}
    return list_facts("fabric.gpus", [read_gpu(host, i) for i in range(count)], COUNT_SOURCE)


def is_nvswitch(desc: str) -> bool:
    """A PCI function's "vendor class" (as interconnect.pci_classes gives it) is an NVSwitch's."""
    vendor, _, cls = desc.partition(" ")
    return vendor == "0x10de" and cls.startswith(NVSWITCH_CLASS)


def _nvswitches(host: Any) -> Fact:
    classes, reason = pci_classes(host)
    source = f"{PCI_ROOT}/*/vendor, class"
    if classes is None:
        return unknown(reason or NOT_FOUND, source)
    return known(sum(1 for desc in classes.values() if is_nvswitch(desc)), source)


def _nvswitch_system(nvswitches: Fact, gpus: dict[str, Fact]) -> Fact:
    """True when there are NVSwitch devices or a GPU is on an NVLink fabric; False when neither is (known)."""
    source = "fabric.nvswitch_count, fabric.gpus[].state"
    count = gpus["fabric.gpus.count"]
    states = [gpus[f"fabric.gpus[{i}].state"] for i in range(count.value)] if count.known else []
    on_fabric = any(s.known and s.value != NOT_SUPPORTED for s in states)
    if (nvswitches.known and nvswitches.value > 0) or on_fabric:
        return known(True, source)
    unknowns = [f for f in (nvswitches, count, *states) if not f.known]
    if unknowns:
        return unknown(unknowns[0].unknown or "", source)
    return known(False, source)


# --- services -------------------------------------------------------------------------------------------


def _units(host: Any) -> tuple[Optional[dict[str, dict[str, str]]], str]:
    """The two units' properties, or (None, why they could not be read)."""
    try:
        names: Optional[list[str]] = host.listdir(SYSTEMD_DIR)
    except HostError as e:
        if e.reason in (NOT_FOUND, NOT_RECORDED):
            return None, NO_SYSTEMD if e.reason == NOT_FOUND else e.reason
        names = None  # not listable: systemctl says whether it can reach systemd
    if names is not None and "system" not in names:
        return None, NO_SYSTEMD
    try:
        result = host.run(SYSTEMCTL, timeout=2.0)
    except HostError as e:
        return None, e.reason if e.reason == NOT_RECORDED else f"systemctl: {e.reason}"
    if result.rc != 0:
        if result.rc is None:
            return None, "systemctl did not finish"
        return None, f"systemctl show exited with status {result.rc}"
    units = parse_systemctl_show(result.stdout)
    if not all(u in units for u in (FABRIC_MANAGER_UNIT, IMEX_UNIT)):
        return None, "unexpected systemctl show output"
    return units, ""


def _unit_facts(props: dict[str, str], source: str) -> tuple[Fact, Fact]:
    """(installed, state) of one unit systemd answered for."""
    try:
        state = unit_state(props)
    except ValueError as e:
        return unknown(str(e)[:80], source), unknown(str(e)[:80], source)
    return known(state != "not installed", source), known(state, source)


def _fabric_manager(host: Any, units: Optional[dict[str, dict[str, str]]], why: str) -> dict[str, Fact]:
    source = " ".join(SYSTEMCTL)
    if units is None:
        return dict.fromkeys(FM_FACTS, unknown(why, source))
    installed, state = _unit_facts(units[FABRIC_MANAGER_UNIT], source)
    out = {"fabric_manager.installed": installed, "fabric_manager.state": state}
    if installed.value is not True:
        out["fabric_manager.version"] = unknown(
            "not installed" if installed.known else installed.unknown or "", source
        )
        return out
    vsource = " ".join(FM_VERSION)
    try:
        result = host.run(FM_VERSION, timeout=2.0)
    except HostError as e:
        out["fabric_manager.version"] = unknown(e.reason, vsource)
        return out
    version = parse_fm_version(result.stdout + "\n" + result.stderr) if result.rc == 0 else None
    if version is not None:
        out["fabric_manager.version"] = known(version, vsource)
    elif result.rc != 0:
        out["fabric_manager.version"] = unknown(f"{vsource} exited with status {result.rc}", vsource)
    else:
        out["fabric_manager.version"] = unknown(f"could not parse {result.stdout.strip()[:40]!r}", vsource)
    return out


def _imex(host: Any, units: Optional[dict[str, dict[str, str]]], why: str) -> dict[str, Fact]:
    source = " ".join(SYSTEMCTL)
    try:
        host.listdir(IMEX_DIR)
        configured: Optional[bool] = True
        dir_reason = ""
    except HostError as e:
        configured = False if e.reason == NOT_FOUND else None
        dir_reason = e.reason
    if units is None:
        if configured:
            return {"imex.installed": known(True, IMEX_DIR), "imex.state": unknown(why, source)}
        gone = unknown(why if configured is False else dir_reason, f"{IMEX_DIR}, {source}")
        return {"imex.installed": gone, "imex.state": gone}
    installed, state = _unit_facts(units[IMEX_UNIT], source)
    if configured and not (installed.known and installed.value):
        installed = known(True, f"{IMEX_DIR}, {source}")
    elif configured is None and installed.known and not installed.value:
        installed = unknown(dir_reason, f"{IMEX_DIR}, {source}")
    return {"imex.installed": installed, "imex.state": state}


# --- probe ----------------------------------------------------------------------------------------------


def probe(host: Any) -> dict[str, Fact]:
    facts = _gpus(host)
    nvswitches = _nvswitches(host)
    facts["fabric.nvswitch_count"] = nvswitches
    facts["fabric.nvswitch_system"] = _nvswitch_system(nvswitches, facts)
    units, why = _units(host)
    facts.update(_fabric_manager(host, units, why))
    facts.update(_imex(host, units, why))
    return facts
