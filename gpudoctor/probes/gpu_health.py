"""Counters that predict failure: retired pages, InfoROM, VBIOS, NVLink errors and PCIe AER, per GPU.

Produces `gpu_health.*`. Every counter is its own fact, so a GPU that does not support one (retired pages
on GPUs that remap rows instead, NVLink counters on a PCIe card) costs only that fact, unknown with the
reason. Not in `preflight`: the NVLink counters alone are four NVML calls per link, 72 per H100.

PCIe AER counters come from sysfs, /sys/bus/pci/devices/<bdf>/aer_dev_{correctable,nonfatal,fatal}: one
"NAME COUNT" line per error type and a TOTAL_ERR_COR / TOTAL_ERR_NONFATAL / TOTAL_ERR_FATAL line
(the kernel's Documentation/ABI/testing/sysfs-bus-pci-devices-aer-stats).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from ..facts import Fact, FactSpec, known, list_facts, unknown
from ..host.base import HostError, NvmlError
from . import ProbeSpec
from .gpus import ARCHITECTURES, COUNT_SOURCE, MAX_COUNTER, MAX_NVLINKS, PCI_DEVICES, bus_id, nvml_gpu_count

FACT_SPECS: tuple[FactSpec, ...] = (
    FactSpec("gpu_health.count", "int", "", "GPUs the health counters cover (every GPU NVML lists)"),
    FactSpec("gpu_health[].index", "int", "", "NVML index"),
    FactSpec("gpu_health[].name", "str", "", "product name"),
    FactSpec("gpu_health[].architecture", "str", "", "architecture name, as gpus[].architecture"),
    FactSpec(
        "gpu_health[].retired_pages.sbe", "int", "", "pages retired after multiple single-bit ECC errors"
    ),
    FactSpec("gpu_health[].retired_pages.dbe", "int", "", "pages retired after a double-bit ECC error"),
    FactSpec("gpu_health[].retired_pages.pending", "bool", "", "a page retirement waits for a driver reload"),
    FactSpec(
        "gpu_health[].inforom_valid", "bool", "", "the InfoROM checksum is valid (nvmlDeviceValidateInforom)"
    ),
    FactSpec("gpu_health[].vbios_version", "str", "", "VBIOS version, e.g. 96.00.89.00.01"),
    FactSpec(
        "gpu_health[].vbios_differs",
        "list[int]",
        "",
        "other GPUs of the same product name on this host whose VBIOS version differs",
    ),
    FactSpec(
        "gpu_health[].vbios_differs_count", "int", "", "how many GPUs are in gpu_health[].vbios_differs"
    ),
    FactSpec(
        "gpu_health[].nvlink.replay_errors", "int", "", "NVLink data-link replays, all links, since boot"
    ),
    FactSpec("gpu_health[].nvlink.recovery_errors", "int", "", "NVLink data-link recoveries, all links"),
    FactSpec("gpu_health[].nvlink.crc_flit_errors", "int", "", "NVLink flit CRC errors, all links"),
    FactSpec("gpu_health[].nvlink.crc_data_errors", "int", "", "NVLink data CRC errors, all links"),
    FactSpec("gpu_health[].nvlink.error_links", "list[int]", "", "links with any of those counters above 0"),
    FactSpec("gpu_health[].pcie.aer_correctable", "int", "", "PCIe AER correctable errors (TOTAL_ERR_COR)"),
    FactSpec("gpu_health[].pcie.aer_nonfatal", "int", "", "PCIe AER non-fatal errors (TOTAL_ERR_NONFATAL)"),
    FactSpec("gpu_health[].pcie.aer_fatal", "int", "", "PCIe AER fatal errors (TOTAL_ERR_FATAL)"),
)
# Not in preflight: 72 NVLink counter calls per GPU.
PROBE = ProbeSpec("gpu_health")

# nvmlNvLinkErrorCounter_t, as the live Host's symbolic arguments spell them.
NVLINK_COUNTERS = (
    ("nvlink.replay_errors", "REPLAY"),
    ("nvlink.recovery_errors", "RECOVERY"),
    ("nvlink.crc_flit_errors", "CRC_FLIT"),
    ("nvlink.crc_data_errors", "CRC_DATA"),
)
NVLINK_FIELDS = tuple(f for f, _ in NVLINK_COUNTERS) + ("nvlink.error_links",)
AER = (
    ("pcie.aer_correctable", "aer_dev_correctable", "TOTAL_ERR_COR"),
    ("pcie.aer_nonfatal", "aer_dev_nonfatal", "TOTAL_ERR_NONFATAL"),
    ("pcie.aer_fatal", "aer_dev_fatal", "TOTAL_ERR_FATAL"),
)
FIELDS = (
    "index", "name", "architecture", "retired_pages.sbe", "retired_pages.dbe", "retired_pages.pending",
    "inforom_valid", "vbios_version", "vbios_differs", "vbios_differs_count",
) + NVLINK_FIELDS + tuple(f for f, _, _ in AER)  # fmt: skip
_ABSENT = ("NotSupported", "FunctionNotFound", "InvalidArgument", "NotRecorded")


# --- pure parsers --------------------------------------------------------------------------------------


def aer_total(text: str, total: str) -> int:
    """The TOTAL_ERR_* count of an aer_dev_* file ("RxErr 0\\n...\\nTOTAL_ERR_COR 2\\n")."""
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == total:
            return _count(int(parts[1]))
    raise ValueError(f"no {total} line")


def _count(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_COUNTER:
        raise ValueError(f"implausible count {value!r}")
    return value


def vbios_differs(versions: dict[int, tuple[Optional[str], Optional[str]]], index: int) -> list[int]:
    """Other GPUs with the same name as GPU `index` whose VBIOS differs; versions: index -> (name, vbios),
    None where unread. LookupError when a same-named GPU's VBIOS is unread (the list would be partial)."""
    name, mine = versions[index]
    out = []
    for other in sorted(versions):
        other_name, theirs = versions[other]
        if other == index or name is None or other_name != name:
            continue
        if mine is None or theirs is None:
            raise LookupError(f"GPU {other}: VBIOS unread")
        if theirs != mine:
            out.append(other)
    return out


# --- probe ----------------------------------------------------------------------------------------------


def _nvml(host: Any, function: str, index: int, convert: Callable[[Any], Any], arg: Optional[str] = None):
    source = f"nvml:{function}" + (f"({arg})" if arg else "")
    try:
        return known(convert(host.nvml(function, device=index, arg=arg)), source)
    except HostError as e:
        return unknown(e.reason, source)
    except (TypeError, ValueError, KeyError, IndexError) as e:
        return unknown(f"unexpected value ({e})"[:80], source)


def probe(host: Any) -> dict[str, Fact]:
    count = nvml_gpu_count(host)
    if isinstance(count, Fact):
        return {"gpu_health.count": count}
    members = [read_gpu(host, i) for i in range(count)]
    versions = {
        i: (m["name"].value if m["name"].known else None, m["vbios_version"].value)
        for i, m in enumerate(members)
    }
    for i, member in enumerate(members):
        src = "nvml:nvmlDeviceGetVbiosVersion"
        try:
            differs = vbios_differs(versions, i)
            member["vbios_differs"] = known(differs, src)
            member["vbios_differs_count"] = known(len(differs), src)
        except LookupError as e:
            member["vbios_differs"] = member["vbios_differs_count"] = unknown(str(e), src)
    return list_facts("gpu_health", members, COUNT_SOURCE)


def read_gpu(host: Any, index: int) -> dict[str, Fact]:
    f: dict[str, Fact] = {
        "index": known(index, "nvml:nvmlDeviceGetCount"),
        "name": _nvml(host, "nvmlDeviceGetName", index, str),
        "architecture": _nvml(host, "nvmlDeviceGetArchitecture", index, lambda v: ARCHITECTURES[v]),
    }
    for field, cause in (("sbe", "MULTIPLE_SINGLE_BIT_ECC_ERRORS"), ("dbe", "DOUBLE_BIT_ECC_ERROR")):
        f[f"retired_pages.{field}"] = _nvml(host, "nvmlDeviceGetRetiredPages", index, len, cause)
    pending = "nvmlDeviceGetRetiredPagesPendingStatus"
    f["retired_pages.pending"] = _nvml(host, pending, index, lambda v: v == 1)
    f["inforom_valid"] = _inforom(host, index)
    f["vbios_version"] = _nvml(host, "nvmlDeviceGetVbiosVersion", index, lambda v: str(v).strip())
    f.update(_nvlink(host, index))
    pci = _nvml(host, "nvmlDeviceGetPciInfo", index, bus_id)
    f.update(_aer(host, pci))
    return {field: f[field] for field in FIELDS if field in f}


def _inforom(host: Any, index: int) -> Fact:
    src = "nvml:nvmlDeviceValidateInforom"
    try:
        host.nvml("nvmlDeviceValidateInforom", device=index)
    except NvmlError as e:
        if e.name == "NVMLError_CorruptedInforom":  # NVML_ERROR_CORRUPTED_INFOROM: the checksum failed
            return known(False, src)
        return unknown(e.reason, src)
    except HostError as e:
        return unknown(e.reason, src)
    return known(True, src)


def _nvlink(host: Any, index: int) -> dict[str, Fact]:
    """Each counter summed over the GPU's links (those NVML reports a state for), and the links with any."""
    src = "nvml:nvmlDeviceGetNvLinkErrorCounter"
    links = 0
    for link in range(MAX_NVLINKS):
        try:
            host.nvml("nvmlDeviceGetNvLinkState", device=index, arg=str(link))
        except NvmlError as e:
            if not e.name.endswith(_ABSENT) or (link == 0 and e.name.endswith("NotRecorded")):
                return dict.fromkeys(NVLINK_FIELDS, unknown(e.reason, "nvml:nvmlDeviceGetNvLinkState"))
            break
        except HostError as e:
            return dict.fromkeys(NVLINK_FIELDS, unknown(e.reason, "nvml:nvmlDeviceGetNvLinkState"))
        links += 1
    if links == 0:  # NVML reports no link: a GPU without NVLink has no NVLink errors
        none = "nvml:nvmlDeviceGetNvLinkState (no NVLink)"
        return {**{f: known(0, none) for f, _ in NVLINK_COUNTERS}, "nvlink.error_links": known([], none)}
    totals = dict.fromkeys((f for f, _ in NVLINK_COUNTERS), 0)
    bad: list[int] = []
    for link in range(links):
        for field, counter in NVLINK_COUNTERS:
            try:
                n = _count(host.nvml(src[5:], device=index, arg=f"{link},{counter}"))
            except HostError as e:
                return dict.fromkeys(NVLINK_FIELDS, unknown(e.reason, src))
            except ValueError as e:
                return dict.fromkeys(NVLINK_FIELDS, unknown(str(e)[:80], src))
            totals[field] += n
            if n and link not in bad:
                bad.append(link)
    out = {field: known(total, src) for field, total in totals.items()}
    out["nvlink.error_links"] = known(bad, src)
    return out


def _aer(host: Any, pci: Fact) -> dict[str, Fact]:
    out: dict[str, Fact] = {}
    for field, name, total in AER:
        if not pci.known:
            out[field] = unknown(pci.unknown or "bus id unknown", "sysfs")
            continue
        path = f"{PCI_DEVICES}/{pci.value}/{name}"
        try:
            out[field] = known(aer_total(host.read(path), total), path)
        except HostError as e:
            out[field] = unknown(e.reason, path)
        except ValueError as e:
            out[field] = unknown(f"unexpected content ({e})"[:80], path)
    return out
