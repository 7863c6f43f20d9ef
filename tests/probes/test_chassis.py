"""The chassis reading (gpudoctor/probes/chassis.py) and the facts the system probe states from it.

The tables are systemd's hostnamed (systemd/systemd@007a895d1d3a26cdc1ce4d52a246e34fb1d8b3ad:
src/hostname/hostnamed.c, fallback_chassis_by_dmi and fallback_chassis_by_acpi, read 2026-12-05). The file
formats: the kernel prints /sys/class/dmi/id/chassis_type as a decimal number and a newline (the values
scripts compare it with in public repositories: "9", "10", "3", e.g. `[ "$type" = "9" ]` in a Void Linux
install script, `"$sys_type" -eq 3 # Desktop` in a Wacom mapping script); /sys/firmware/acpi/pm_profile the
same way: "0\\n" is what this build machine (a microVM without SMBIOS tables, 2026-12-05) has, where
/sys/class/dmi/id/chassis_type does not exist at all. /etc/machine-info is what `hostnamectl chassis laptop`
writes (CHASSIS=laptop, machine-info(5)).
"""

from __future__ import annotations

import pytest

from gpudoctor.host.base import NOT_FOUND, NOT_RECORDED
from gpudoctor.probes import chassis, system

from conftest import fake_host

DMI, ACPI, INFO = chassis.DMI_CHASSIS, chassis.ACPI_PROFILE, chassis.MACHINE_INFO


@pytest.mark.parametrize(
    "code, expected",
    [
        (3, "desktop"),  # Desktop
        (7, "desktop"),  # Tower
        (35, "desktop"),  # Mini PC
        (9, "laptop"),  # Laptop
        (10, "laptop"),  # Notebook
        (14, "laptop"),  # Sub Notebook
        (31, "convertible"),
        (17, "server"),  # Main Server Chassis
        (28, "server"),  # Blade
        (23, "server"),  # Rack Mount Chassis: gpudoctor's one addition to hostnamed's table
        (30, "tablet"),
    ],
)
def test_dmi_codes(code, expected):
    assert chassis.classify(None, "none", code, None) == (expected, f"{DMI} = {code}")


@pytest.mark.parametrize("code", [1, 2, 25])  # Other, Unknown, Multi-system chassis: hostnamed names none
def test_codes_hostnamed_leaves_unnamed(code):
    kind, why = chassis.classify(None, "none", code, None)
    assert kind is None
    assert why == f"SMBIOS chassis type {code} names no kind"


def test_order_is_hostnamed_order():
    # The administrator's word first, then a hypervisor, then DMI, then ACPI.
    assert chassis.classify("server", "kvm", 10, 2)[0] == "server"
    assert chassis.classify(None, "kvm", 10, 2) == ("vm", "virtualization: kvm")
    assert chassis.classify(None, "none", 10, 4)[0] == "laptop"
    assert chassis.classify(None, "none", 2, 4) == ("server", f"{ACPI} = 4")
    assert chassis.classify(None, None, None, 0) == (None, "ACPI PM profile 0 names no kind")


def test_parse_files():
    assert chassis.parse_code("10\n") == 10
    assert chassis.parse_code("0\n") == 0
    assert chassis.parse_code("") is None
    assert chassis.parse_machine_info('PRETTY_HOSTNAME="Lab laptop"\nCHASSIS=laptop\n') == "laptop"
    assert chassis.parse_machine_info('CHASSIS="server"\n') == "server"
    assert chassis.parse_machine_info("CHASSIS=spaceship\n") is None


def _host(files: dict, errors: dict | None = None, virtualization_files: dict | None = None):
    read_errors = {"/sys/class/dmi/id/sys_vendor": NOT_FOUND, "/sys/class/dmi/id/product_name": NOT_FOUND}
    read_errors.update(errors or {})
    return fake_host(files={**files, **(virtualization_files or {})}, read_errors=read_errors)


# No hypervisor flag and no DMI names of a hypervisor: virtualization "none" (as in test_system's host).
BARE_METAL = {"/proc/cpuinfo": "processor\t: 0\nflags\t\t: fpu vme sse2 avx512f\n"}


def test_system_probe_states_a_laptop():
    facts = system.probe(_host({DMI: "10\n", **BARE_METAL}))
    assert facts["system.chassis"].value == "laptop"
    assert facts["system.chassis"].source == f"{DMI} = 10"
    assert facts["system.chassis_type"].value == 10


def test_system_probe_on_a_microvm_without_smbios():
    # This build machine: no DMI, the hypervisor flag in cpuinfo, ACPI profile 0: a VM (firecracker).
    files = {ACPI: "0\n", "/proc/cpuinfo": "processor\t: 0\nflags\t\t: fpu hypervisor\n"}
    facts = system.probe(_host(files, {DMI: NOT_FOUND, INFO: NOT_FOUND}))
    assert facts["system.chassis"].value == "vm"
    assert facts["system.chassis_type"].unknown == NOT_FOUND


def test_old_snapshot_reads_unknown_not_recorded():
    facts = system.probe(_host(BARE_METAL))  # none of the three chassis files was recorded
    assert facts["system.chassis"].unknown == NOT_RECORDED
    assert facts["system.chassis_type"].unknown == NOT_RECORDED


def test_unnamed_code_is_unknown_with_the_code():
    facts = system.probe(_host({DMI: "2\n", **BARE_METAL}, {ACPI: NOT_FOUND, INFO: NOT_FOUND}))
    assert facts["system.chassis"].unknown == "SMBIOS chassis type 2 names no kind"
    assert facts["system.chassis_type"].value == 2
