"""Suspend and resume: what the NVIDIA driver keeps of the GPU across a sleep, and whether CUDA can come back.

What is read (all files; nothing is run):

    /proc/driver/nvidia/params     the nvidia module's parameters as it loaded them, one `Name: value` a line
                                   (open-gpu-kernel-modules kernel-open/nvidia/nv-procfs.c,
                                   nv_procfs_read_params: `%s: %u` for numbers, `%s: "%s"` for strings)
    /proc/modules                  whether nvidia_uvm is loaded, and its use count (the third column; `-`
                                   where the kernel was built without module unloading)
    /sys/power/state               the sleep states the kernel offers (`freeze mem disk`; empty in most VMs)
    /etc/systemd/system, /usr/lib/systemd/system, /lib/systemd/system
        whether nvidia-suspend, nvidia-resume and nvidia-hibernate.service are installed, enabled (a link
        in a `<unit>.wants/` or `.requires/` directory of a sleep unit: NVIDIA ships them with
        `RequiredBy=systemd-suspend.service`, some distributions with WantedBy=) or masked (a link to
        /dev/null in /etc, which reads as an empty file), and whether suspend.target or sleep.target is
        masked (servers often mask them)

The unit files are read rather than asked of `systemctl is-enabled`: reading a few directories costs no
process (a check has a budget of tens of milliseconds), needs no systemd running (containers, chroots), and
replays from a snapshot as plain file reads. In a container, /etc/systemd is the image's, not the host's: the
rules do not judge units there (container.detected).

What the parameters mean, by driver (NVIDIA's README, "Configuring Power Management Support", 440.100 and
595.45.04; NVIDIA/open-gpu-kernel-modules@595.45.04:kernel-open/nvidia/nv-reg.h and
src/nvidia/arch/nvalloc/unix/src/osinit.c; all read 2026-12-05):

- PreserveVideoMemoryAllocations 0 (the default up to 590): only select video memory is saved; CUDA's UVM
  state is not carried over ("supports power management with advanced CUDA features (such as UVM)" is said
  of the /proc/driver/nvidia/suspend mechanism alone). 1: all video memory is saved, to an unnamed file in
  TemporaryFilePath (default /tmp), but only through /proc/driver/nvidia/suspend, which the
  nvidia-suspend/resume/hibernate services write; without them the driver refuses to suspend ("NVRM: ...
  PreserveVideoMemoryAllocations module parameter is set. System Power Management attempted without driver
  procfs suspend interface.", nv.c).
- 595 and later: UseKernelSuspendNotifiers (default 0). With it 1, the driver saves and restores on the
  kernel's own suspend notifications (nv_pm_notifier), and PreserveVideoMemoryAllocations' new default, 2,
  means "on when the notifiers are on". The services then have nothing to do (their ExecCondition skips
  them while the parameter is 1) and /proc/driver/nvidia/suspend is not created.

So power.preservation is `kernel notifiers` (UseKernelSuspendNotifiers 1 and Preserve 1 or 2), `systemd
units` (Preserve 1 without the notifiers: the services must be enabled) or `off`.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from ..facts import Fact, FactSpec, known, unknown
from ..host.base import NOT_FOUND
from ..host.base import listdir_or_reason as _listdir
from ..host.base import read_or_reason as _read
from . import ProbeSpec
from .kernel_modules import parse_module

FACT_SPECS: tuple[FactSpec, ...] = (
    FactSpec(
        "power.params_status",
        "str",
        "",
        "`ok` when /proc/driver/nvidia/params was read, else why not (`not found`: the nvidia module is not "
        "loaded)",
    ),
    FactSpec(
        "power.preserve_video_memory",
        "int",
        "",
        "the nvidia module's PreserveVideoMemoryAllocations: 0 select allocations only, 1 all, 2 (595+, its "
        "default) all when UseKernelSuspendNotifiers is on",
    ),
    FactSpec(
        "power.kernel_suspend_notifiers",
        "int",
        "",
        "UseKernelSuspendNotifiers (595+): 1 the driver saves and restores on the kernel's suspend "
        "notifications, without the nvidia-suspend services; unknown before 595 (no such parameter)",
    ),
    FactSpec(
        "power.temporary_file_path",
        "str",
        "",
        "TemporaryFilePath: where video memory is saved during a sleep; empty: the default, /tmp",
    ),
    FactSpec("power.s0ix", "bool", "", "EnableS0ixPowerManagement: S0ix-based suspend-to-idle is on"),
    FactSpec(
        "power.preservation",
        "str",
        "",
        "how the driver keeps video memory across a sleep: `kernel notifiers`, `systemd units` "
        "(PreserveVideoMemoryAllocations=1: needs nvidia-suspend/resume/hibernate.service) or `off`",
    ),
    FactSpec(
        "power.unit_suspend",
        "str",
        "",
        "nvidia-suspend.service: `enabled`, `disabled`, `masked` or `not installed` (unit files under "
        "/etc, /usr/lib and /lib systemd/system)",
    ),
    FactSpec("power.unit_resume", "str", "", "nvidia-resume.service: the same"),
    FactSpec("power.unit_hibernate", "str", "", "nvidia-hibernate.service: the same"),
    FactSpec(
        "power.units_enabled",
        "bool",
        "",
        "nvidia-suspend, nvidia-resume and nvidia-hibernate.service are all enabled",
    ),
    FactSpec(
        "power.sleep_states",
        "list[str]",
        "",
        "the sleep states the kernel offers (/sys/power/state): freeze, mem, disk; empty: none",
    ),
    FactSpec(
        "power.sleep_masked",
        "bool",
        "",
        "sleep.target or suspend.target is masked (a link to /dev/null in /etc/systemd/system): systemd "
        "never suspends",
    ),
    FactSpec("nvidia_uvm.loaded", "bool", "", "the nvidia_uvm module (CUDA's unified memory) is loaded"),
    FactSpec(
        "nvidia_uvm.refcount",
        "int",
        "",
        "nvidia_uvm's use count (/proc/modules): each process holding /dev/nvidia-uvm open counts; 0: "
        "`rmmod nvidia_uvm` can unload it now",
    ),
)
PROBE = ProbeSpec("power")

PARAMS = "/proc/driver/nvidia/params"
MODULES = "/proc/modules"
SLEEP_STATE = "/sys/power/state"
UNIT_DIRS = ("/etc/systemd/system", "/usr/lib/systemd/system", "/lib/systemd/system")
UNITS = {"suspend": "nvidia-suspend.service", "resume": "nvidia-resume.service"}
UNITS["hibernate"] = "nvidia-hibernate.service"
# The units whose .wants/ or .requires/ directory enables the NVIDIA services (their [Install] sections name
# systemd-suspend.service and systemd-hibernate.service; some packagings name the targets or the hybrid ones).
SLEEP_UNITS = (
    "systemd-suspend.service",
    "systemd-hibernate.service",
    "systemd-hybrid-sleep.service",
    "systemd-suspend-then-hibernate.service",
    "suspend.target",
    "hibernate.target",
    "sleep.target",
)
MASKABLE = ("sleep.target", "suspend.target")

# --- pure parse functions ------------------------------------------------------------------------------


def parse_params(text: str) -> dict[str, Any]:
    """/proc/driver/nvidia/params as {name: int or str}: `PreserveVideoMemoryAllocations: 1` gives 1,
    `TemporaryFilePath: "/var/tmp"` gives "/var/tmp"."""
    out: dict[str, Any] = {}
    for line in text.splitlines():
        name, sep, value = line.partition(":")
        if not sep or not re.fullmatch(r"[A-Za-z0-9_]+", name.strip()):
            continue
        value = value.strip()
        if re.fullmatch(r"\d{1,10}", value):
            out[name.strip()] = int(value)
        elif len(value) >= 2 and value[0] == value[-1] == '"':
            out[name.strip()] = value[1:-1]
    return out


def preservation(preserve: Optional[int], notifiers: Optional[int]) -> Optional[str]:
    """How video memory is kept across a sleep (see the module's docstring); None when Preserve is not
    known. A driver without UseKernelSuspendNotifiers (before 595) has notifiers None."""
    if preserve is None:
        return None
    if notifiers == 1 and preserve in (1, 2):
        return "kernel notifiers"
    if preserve == 1:
        return "systemd units"
    return "off"


def parse_sleep_states(text: str) -> list[str]:
    """/sys/power/state: the words the kernel offers, e.g. ["freeze", "mem", "disk"]; [] when empty."""
    return text.split()


def unit_state(installed: bool, enabled: bool, masked: bool) -> str:
    if masked:
        return "masked"
    if not installed:
        return "not installed"
    return "enabled" if enabled else "disabled"


# --- the probe -----------------------------------------------------------------------------------------


def probe(host: Any) -> dict[str, Fact]:
    facts: dict[str, Fact] = {}
    facts.update(_params(host))
    facts.update(_units(host))
    facts.update(_uvm(host))
    text, reason = _read(host, SLEEP_STATE)
    facts["power.sleep_states"] = (
        known(parse_sleep_states(text), SLEEP_STATE) if text is not None else unknown(reason, SLEEP_STATE)
    )
    return facts


def _params(host: Any) -> dict[str, Fact]:
    text, reason = _read(host, PARAMS)
    names = (
        "power.preserve_video_memory",
        "power.kernel_suspend_notifiers",
        "power.temporary_file_path",
        "power.s0ix",
        "power.preservation",
    )
    if text is None:
        why = "the nvidia module is not loaded" if reason == NOT_FOUND else reason
        return {"power.params_status": known(reason, PARAMS), **{n: unknown(why, PARAMS) for n in names}}
    params = parse_params(text)
    preserve = params.get("PreserveVideoMemoryAllocations")
    notifiers = params.get("UseKernelSuspendNotifiers")
    s0ix = params.get("EnableS0ixPowerManagement")
    path = params.get("TemporaryFilePath")
    mode = preservation(preserve if isinstance(preserve, int) else None, notifiers)

    def fact(value: Any, missing: str) -> Fact:
        return known(value, PARAMS) if value is not None else unknown(missing, PARAMS)

    return {
        "power.params_status": known("ok", PARAMS),
        "power.preserve_video_memory": fact(preserve, "no PreserveVideoMemoryAllocations line"),
        "power.kernel_suspend_notifiers": fact(
            notifiers, "no UseKernelSuspendNotifiers line: a driver before 595 has no such parameter"
        ),
        "power.temporary_file_path": fact(path, "no TemporaryFilePath line"),
        "power.s0ix": fact(None if s0ix is None else s0ix == 1, "no EnableS0ixPowerManagement line"),
        "power.preservation": fact(mode, "no PreserveVideoMemoryAllocations line"),
    }


def _units(host: Any) -> dict[str, Fact]:
    src = ", ".join(UNIT_DIRS)
    listings: dict[str, list[str]] = {}
    reasons: list[str] = []
    for d in UNIT_DIRS:
        names, reason = _listdir(host, d)
        if names is None:
            reasons.append(reason)
        else:
            listings[d] = names
    if "/etc/systemd/system" not in listings or not (set(listings) - {"/etc/systemd/system"}):
        # Without /etc the enablement links cannot be seen; without any vendor directory, what is installed.
        why = "no systemd unit directories" if set(reasons) <= {NOT_FOUND} else reasons[0]
        names = ["power.unit_suspend", "power.unit_resume", "power.unit_hibernate", "power.units_enabled"]
        return {n: unknown(why, src) for n in names} | {"power.sleep_masked": unknown(why, src)}
    etc = listings["/etc/systemd/system"]
    enabled: set[str] = set()
    for d, names in listings.items():
        for entry in names:
            base, _, kind = entry.rpartition(".")
            if kind in ("wants", "requires") and base in SLEEP_UNITS:
                linked, _ = _listdir(host, f"{d}/{entry}")
                enabled.update(linked or ())
    masked = {
        u
        for u in (*UNITS.values(), *MASKABLE)
        if u in etc and _read(host, f"/etc/systemd/system/{u}")[0] == ""
    }
    facts: dict[str, Fact] = {}
    states = []
    for short, unit in UNITS.items():
        installed = any(unit in names for names in listings.values())
        state = unit_state(installed, unit in enabled, unit in masked)
        states.append(state)
        facts[f"power.unit_{short}"] = known(state, src)
    facts["power.units_enabled"] = known(all(s == "enabled" for s in states), src)
    facts["power.sleep_masked"] = known(bool(masked & set(MASKABLE)), "/etc/systemd/system")
    return facts


def _uvm(host: Any) -> dict[str, Fact]:
    text, reason = _read(host, MODULES)
    if text is None:
        return {
            "nvidia_uvm.loaded": unknown(reason, MODULES),
            "nvidia_uvm.refcount": unknown(reason, MODULES),
        }
    line = parse_module(text, "nvidia_uvm")
    if line is None:
        return {
            "nvidia_uvm.loaded": known(False, MODULES),
            "nvidia_uvm.refcount": unknown("nvidia_uvm is not loaded", MODULES),
        }
    refcount = line["refcount"]
    return {
        "nvidia_uvm.loaded": known(True, MODULES),
        "nvidia_uvm.refcount": (
            known(refcount, MODULES)
            if refcount is not None
            else unknown(
                "the kernel keeps no module use counts (built without CONFIG_MODULE_UNLOAD)", MODULES
            )
        ),
    }
