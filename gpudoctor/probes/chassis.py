"""The machine's chassis, read as systemd's hostnamed reads it: a laptop, a desktop, a server, a VM.

The suspend rules need it (a laptop's lid closes; a rack server does not sleep), and reports can say what
kind of machine they judged. The order and the tables are hostnamed's (systemd/systemd@007a895d1d3a:
src/hostname/hostnamed.c, context_get_chassis and fallback_chassis*), read 2026-12-05:

1. `CHASSIS=` in /etc/machine-info, the administrator's own word (`hostnamectl chassis ...` writes it);
2. a virtual machine is `vm` whatever its firmware tables say (hostnamed: detect_virtualization(); here the
   system probe's reading of DMI and the cpuinfo hypervisor flag);
3. the SMBIOS chassis type, /sys/class/dmi/id/chassis_type (DMTF DSP0134 3.5.0, section 7.4.1), with only
   hostnamed's "really obvious cases" named: 3, 4, 6, 7, 13, 35, 36 desktop; 8, 9, 10, 14 laptop; 17, 28, 29
   server; 30 tablet; 31, 32 convertible; 11 handset; 33, 34 embedded (anything else, e.g. 1 "Other" or 2
   "Unknown", names nothing). One addition: 23, "Rack Mount Chassis", is `server` here. hostnamed leaves it
   unnamed, but it is what most rack servers report, and the suspend rules must never take a rack server
   for a machine that sleeps;
4. the ACPI preferred power-management profile, /sys/firmware/acpi/pm_profile (ACPI 5.0, 5.2.9.1): 1, 3, 6
   desktop; 2 laptop; 4, 5, 7 server; 8 tablet.

This module only reads and maps; the system probe states the facts (system.chassis, system.chassis_type).
"""

from __future__ import annotations

import re
from typing import Any, Optional

from ..host.base import HostError

MACHINE_INFO = "/etc/machine-info"
DMI_CHASSIS = "/sys/class/dmi/id/chassis_type"
ACPI_PROFILE = "/sys/firmware/acpi/pm_profile"

# hostnamed's valid_chassis(): the words /etc/machine-info may use.
VALID = (
    "vm",
    "container",
    "desktop",
    "laptop",
    "convertible",
    "server",
    "tablet",
    "handset",
    "watch",
    "embedded",
)
# hostnamed's fallback_chassis_by_dmi(), SMBIOS chassis type codes.
BY_DMI = {
    0x03: "desktop",  # Desktop
    0x04: "desktop",  # Low Profile Desktop
    0x06: "desktop",  # Mini Tower
    0x07: "desktop",  # Tower
    0x0D: "desktop",  # All in One
    0x23: "desktop",  # Mini PC
    0x24: "desktop",  # Stick PC
    0x08: "laptop",  # Portable
    0x09: "laptop",  # Laptop
    0x0A: "laptop",  # Notebook
    0x0E: "laptop",  # Sub Notebook
    0x0B: "handset",  # Hand Held
    0x11: "server",  # Main Server Chassis
    0x17: "server",  # Rack Mount Chassis: not in hostnamed's list, but what rack servers report (see above)
    0x1C: "server",  # Blade
    0x1D: "server",  # Blade Enclosure
    0x1E: "tablet",  # Tablet
    0x1F: "convertible",  # Convertible
    0x20: "convertible",  # Detachable
    0x21: "embedded",  # IoT Gateway
    0x22: "embedded",  # Embedded PC
}
# hostnamed's fallback_chassis_by_acpi(), ACPI preferred PM profiles.
BY_ACPI = {
    1: "desktop",
    3: "desktop",
    6: "desktop",
    2: "laptop",
    4: "server",
    5: "server",
    7: "server",
    8: "tablet",
}


def parse_code(text: str) -> Optional[int]:
    """A sysfs number such as chassis_type's "10\\n"; None when it is not one."""
    m = re.fullmatch(r"\s*(\d{1,3})\s*", text)
    return int(m.group(1)) if m else None


def parse_machine_info(text: str) -> Optional[str]:
    """CHASSIS= of /etc/machine-info (an environment-style file, values optionally quoted), when valid."""
    for line in text.splitlines():
        m = re.fullmatch(r"\s*CHASSIS=([\"']?)([a-z]*)\1\s*", line)
        if m and m.group(2) in VALID:
            return m.group(2)
    return None


def classify(
    machine_info: Optional[str], virtualization: Optional[str], dmi: Optional[int], acpi: Optional[int]
) -> tuple[Optional[str], str]:
    """(chassis, what said so) in hostnamed's order; (None, why) when nothing names one. `virtualization`
    is the system probe's reading: "none", a hypervisor's name, or None when it could not tell."""
    if machine_info:
        return machine_info, f"{MACHINE_INFO} CHASSIS="
    if virtualization and virtualization != "none":
        return "vm", f"virtualization: {virtualization}"
    if dmi is not None and dmi in BY_DMI:
        return BY_DMI[dmi], f"{DMI_CHASSIS} = {dmi}"
    if acpi is not None and acpi in BY_ACPI:
        return BY_ACPI[acpi], f"{ACPI_PROFILE} = {acpi}"
    said = []
    if dmi is not None:
        said.append(f"SMBIOS chassis type {dmi} names no kind")
    if acpi is not None:
        said.append(f"ACPI PM profile {acpi} names no kind")
    return None, "; ".join(said) or "no /etc/machine-info CHASSIS=, no DMI chassis type, no ACPI PM profile"


def read(host: Any) -> dict[str, Any]:
    """The three files, each parsed, or None where it could not be read; "reasons" holds, per file that
    could not be read, the Host's reason (not found, no permission, not recorded in snapshot)."""
    reasons: dict[str, str] = {}

    def text(path: str) -> Optional[str]:
        try:
            return host.read(path)
        except HostError as e:
            reasons[path] = e.reason
            return None

    info, dmi, acpi = text(MACHINE_INFO), text(DMI_CHASSIS), text(ACPI_PROFILE)
    return {
        "machine_info": parse_machine_info(info) if info is not None else None,
        "dmi": parse_code(dmi) if dmi is not None else None,
        "acpi": parse_code(acpi) if acpi is not None else None,
        "reasons": reasons,
    }
