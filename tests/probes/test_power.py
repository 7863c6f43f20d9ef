"""The power probe: the nvidia module's suspend parameters, the nvidia-suspend/resume/hibernate units,
nvidia_uvm's use count and the kernel's sleep states, each on real contents.

Where each input comes from:
- /proc/driver/nvidia/params, whole: the real H200 capture (driver 580.159.04, shared/fixtures/h200-driver580,
  2026-11-30), copied in tests/fixtures/h200-driver580-snapshot. Its PreserveVideoMemoryAllocations is 0 and
  it has no UseKernelSuspendNotifiers line (580 has no such parameter).
- The 595+ lines: "PreserveVideoMemoryAllocations: 1" with "UseKernelSuspendNotifiers: 1" (nvidia-utils
  610's defaults) quoted from https://github.com/omacom/omarchy/issues/8352; "PreserveVideoMemoryAllocations:
  2", "UseKernelSuspendNotifiers: 1", "EnableS0ixPowerManagement: 0", `TemporaryFilePath: ""` printed by a
  610.57.04 open module in a Fedora 44 user's notes (XG Mobile suspend write-up, seen through the code
  corpus, 2026-12-05); `TemporaryFilePath: "/var/tmp"` is what the ArchWiki (NVIDIA/Tips and tricks,
  "Preserve video memory after suspend") says `sort /proc/driver/nvidia/params` shows. The format is the
  driver's own: nv_procfs_read_params prints `%s: %u` and `%s: "%s"`
  (NVIDIA/open-gpu-kernel-modules@595.45.04:kernel-open/nvidia/nv-procfs.c:423-450), in the table order of
  kernel-open/nvidia/nv-reg.h:1123-1125 (PreserveVideoMemoryAllocations, UseKernelSuspendNotifiers,
  EnableS0ixPowerManagement).
- /proc/modules: "nvidia_uvm 1146880 - - Live 0xffffffffc2733000 (PO)" from Talos's NVIDIA guide
  (siderolabs/talos website/content/v1.12/talos-guides/configuration/nvidia-gpu-proprietary.md: a kernel
  without module unloading prints `-` for the count); "nvidia_uvm 1384448 2 - Live 0x0000000000000000 (POE)"
  and "nvidia_modeset 1241088 67 nvidia_drm, Live ..." as a desktop's /proc/modules reads (the columns are
  the kernel's: kernel/module/procfs.c m_show).
- /sys/power/state: empty on this build machine (a microVM, 2026-12-05); "freeze mem disk" is the kernel's
  list on a PC with S3 and hibernation (Documentation/admin-guide/pm/sleep-states.rst, "/sys/power/state").
- Unit files: the three units NVIDIA's driver ships, verbatim as a user's write-up on restoring them quotes
  them (code corpus, 2026-12-05; their RequiredBy= is confirmed by NVIDIA's Aaron Plattner in
  https://github.com/systemd/systemd/issues/21991), enabled and masked by this machine's own
  `systemctl --root=DIR enable/mask` (systemd 252); the links it makes,
  /etc/systemd/system/systemd-suspend.service.requires/nvidia-suspend.service, are the ones
  https://github.com/lebensterben/awesome-clear-linux/pull/18 lists.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gpudoctor.host.base import NOT_FOUND, NOT_RECORDED
from gpudoctor.probes import power
from gpudoctor.probes.kernel_modules import parse_module

from conftest import H200, RootedHost, fake_host

H200_PARAMS = (H200 / "files/proc/driver/nvidia/params").read_text()
OMARCHY_610 = "PreserveVideoMemoryAllocations: 1\nUseKernelSuspendNotifiers: 1\n"
FEDORA_610 = """PreserveVideoMemoryAllocations: 2
UseKernelSuspendNotifiers: 1
EnableS0ixPowerManagement: 0
TemporaryFilePath: ""
"""
TALOS_MODULES = """nvidia_uvm 1146880 - - Live 0xffffffffc2733000 (PO)
nvidia_drm 69632 - - Live 0xffffffffc2721000 (PO)
nvidia_modeset 1142784 - - Live 0xffffffffc25ea000 (PO)
nvidia 39047168 - - Live 0xffffffffc00ac000 (PO)
"""
DESKTOP_MODULES = """nvidia_uvm 1384448 2 - Live 0x0000000000000000 (POE)
nvidia_drm 69632 26 - Live 0x0000000000000000 (POE)
nvidia_modeset 1241088 67 nvidia_drm, Live 0x0000000000000000 (POE)
"""
NVIDIA_SUSPEND_UNIT = """[Unit]
Description=NVIDIA system suspend actions
Before=systemd-suspend.service

[Service]
Type=oneshot
ExecStart=/usr/bin/logger -t suspend -s "nvidia-suspend.service"
ExecStart=/usr/bin/nvidia-sleep.sh "suspend"

[Install]
RequiredBy=systemd-suspend.service
"""
NVIDIA_RESUME_UNIT = """[Unit]
Description=NVIDIA system resume actions
After=systemd-suspend.service
After=systemd-hibernate.service

[Service]
Type=oneshot
ExecStart=/usr/bin/logger -t suspend -s "nvidia-resume.service"
ExecStart=/usr/bin/nvidia-sleep.sh "resume"

[Install]
RequiredBy=systemd-suspend.service
RequiredBy=systemd-hibernate.service
"""
NVIDIA_HIBERNATE_UNIT = """[Unit]
Description=NVIDIA system hibernate actions
Before=systemd-hibernate.service

[Service]
Type=oneshot
ExecStart=/usr/bin/logger -t hibernate -s "nvidia-hibernate.service"
ExecStart=/usr/bin/nvidia-sleep.sh "hibernate"

[Install]
RequiredBy=systemd-hibernate.service
"""


# --- parse functions -----------------------------------------------------------------------------------


def test_parse_h200_params():
    params = power.parse_params(H200_PARAMS)
    assert params["PreserveVideoMemoryAllocations"] == 0
    assert params["EnableS0ixPowerManagement"] == 0
    assert params["TemporaryFilePath"] == ""
    assert params["ResmanDebugLevel"] == 4294967295
    assert "UseKernelSuspendNotifiers" not in params  # 580 has no such parameter
    assert len(params) == 42  # every line of the capture


def test_parse_595_params():
    assert power.parse_params(FEDORA_610) == {
        "PreserveVideoMemoryAllocations": 2,
        "UseKernelSuspendNotifiers": 1,
        "EnableS0ixPowerManagement": 0,
        "TemporaryFilePath": "",
    }
    assert power.parse_params('TemporaryFilePath: "/var/tmp"\n') == {"TemporaryFilePath": "/var/tmp"}


@pytest.mark.parametrize(
    "preserve, notifiers, expected",
    [
        (0, None, "off"),  # every driver's default up to 590 (the H200's 580)
        (1, None, "systemd units"),  # the README's setting before 595: needs the nvidia-suspend services
        (1, 0, "systemd units"),
        (2, 0, "off"),  # 595+'s default without the notifiers: osinit.c reads 2 as "notifiers on?"
        (2, 1, "kernel notifiers"),
        (1, 1, "kernel notifiers"),  # nv_pm_notifier drives the same save as the procfs interface
        (0, 1, "off"),
        (None, 1, None),
    ],
)
def test_preservation(preserve, notifiers, expected):
    assert power.preservation(preserve, notifiers) == expected


def test_parse_modules():
    assert parse_module(DESKTOP_MODULES, "nvidia_uvm") == {"refcount": 2, "used_by": []}
    assert parse_module(DESKTOP_MODULES, "nvidia_modeset") == {
        "refcount": 67,
        "used_by": ["nvidia_drm"],
    }
    assert parse_module(TALOS_MODULES, "nvidia_uvm") == {"refcount": None, "used_by": []}
    assert parse_module(DESKTOP_MODULES, "nvidia") is None


# --- the probe on files --------------------------------------------------------------------------------


def test_h200_params_read_off():
    host = fake_host(files={power.PARAMS: H200_PARAMS, power.MODULES: DESKTOP_MODULES})
    facts = power.probe(host)
    assert facts["power.params_status"].value == "ok"
    assert facts["power.preserve_video_memory"].value == 0
    assert facts["power.kernel_suspend_notifiers"].unknown.startswith("no UseKernelSuspendNotifiers line")
    assert facts["power.preservation"].value == "off"
    assert facts["power.s0ix"].value is False
    assert facts["power.temporary_file_path"].value == ""
    assert facts["nvidia_uvm.loaded"].value is True
    assert facts["nvidia_uvm.refcount"].value == 2
    # Not recorded: unknown, never "not installed".
    assert facts["power.unit_suspend"].unknown == NOT_RECORDED
    assert facts["power.sleep_states"].unknown == NOT_RECORDED


def test_notifier_driver_and_uvm_without_counts():
    facts = power.probe(fake_host(files={power.PARAMS: FEDORA_610, power.MODULES: TALOS_MODULES}))
    assert facts["power.preservation"].value == "kernel notifiers"
    assert facts["power.kernel_suspend_notifiers"].value == 1
    assert facts["nvidia_uvm.loaded"].value is True
    assert "without CONFIG_MODULE_UNLOAD" in facts["nvidia_uvm.refcount"].unknown


def test_610_defaults_on_arch_preserve_through_the_notifiers():
    facts = power.probe(fake_host(files={power.PARAMS: OMARCHY_610}))
    assert facts["power.preserve_video_memory"].value == 1
    assert facts["power.preservation"].value == "kernel notifiers"
    assert facts["power.s0ix"].unknown == "no EnableS0ixPowerManagement line"


def test_no_driver():
    host = fake_host(files={"/proc/modules": "snd 1 0 - Live 0x0\n"}, read_errors={power.PARAMS: NOT_FOUND})
    facts = power.probe(host)
    assert facts["power.params_status"].value == NOT_FOUND
    assert facts["power.preservation"].unknown == "the nvidia module is not loaded"
    assert facts["nvidia_uvm.loaded"].value is False
    assert facts["nvidia_uvm.refcount"].unknown == "nvidia_uvm is not loaded"


# --- unit files, made by systemctl itself ---------------------------------------------------------------

SYSTEMCTL = shutil.which("systemctl")


def _root(tmp_path: Path, units: dict[str, str]) -> Path:
    root = tmp_path / "root"
    (root / "etc/systemd/system").mkdir(parents=True)
    vendor = root / "usr/lib/systemd/system"
    vendor.mkdir(parents=True)
    for name, text in units.items():
        (vendor / name).write_text(text)
    (root / "sys/power").mkdir(parents=True)
    (root / "sys/power/state").write_text("freeze mem disk\n")
    return root


def _systemctl(root: Path, *args: str) -> None:
    subprocess.run([SYSTEMCTL, f"--root={root}", *args], check=True, capture_output=True, timeout=30)


ALL_UNITS = {
    "nvidia-suspend.service": NVIDIA_SUSPEND_UNIT,
    "nvidia-resume.service": NVIDIA_RESUME_UNIT,
    "nvidia-hibernate.service": NVIDIA_HIBERNATE_UNIT,
}


@pytest.mark.skipif(SYSTEMCTL is None, reason="needs systemctl to make the enablement links")
def test_units_enabled_disabled_masked(tmp_path):
    root = _root(tmp_path, ALL_UNITS)
    facts = power.probe(RootedHost(root))
    assert [facts[f"power.unit_{u}"].value for u in ("suspend", "resume", "hibernate")] == ["disabled"] * 3
    assert facts["power.units_enabled"].value is False
    assert facts["power.sleep_masked"].value is False
    assert facts["power.sleep_states"].value == ["freeze", "mem", "disk"]

    _systemctl(root, "enable", "nvidia-suspend.service", "nvidia-resume.service", "nvidia-hibernate.service")
    assert (root / "etc/systemd/system/systemd-suspend.service.requires/nvidia-suspend.service").is_symlink()
    facts = power.probe(RootedHost(root))
    assert [facts[f"power.unit_{u}"].value for u in ("suspend", "resume", "hibernate")] == ["enabled"] * 3
    assert facts["power.units_enabled"].value is True

    _systemctl(root, "mask", "nvidia-hibernate.service", "sleep.target")
    facts = power.probe(RootedHost(root))
    assert facts["power.unit_hibernate"].value == "masked"
    assert facts["power.units_enabled"].value is False
    assert facts["power.sleep_masked"].value is True


@pytest.mark.skipif(SYSTEMCTL is None, reason="needs systemctl to make the enablement links")
def test_units_not_installed(tmp_path):
    root = _root(tmp_path, {"nvidia-suspend.service": NVIDIA_SUSPEND_UNIT})
    _systemctl(root, "enable", "nvidia-suspend.service")
    facts = power.probe(RootedHost(root))
    assert facts["power.unit_suspend"].value == "enabled"
    assert facts["power.unit_resume"].value == "not installed"
    assert facts["power.units_enabled"].value is False


def test_no_systemd(tmp_path):
    (tmp_path / "etc").mkdir()
    facts = power.probe(RootedHost(tmp_path))
    assert facts["power.unit_suspend"].unknown == "no systemd unit directories"
    assert facts["power.units_enabled"].unknown == "no systemd unit directories"


def test_this_machine_offers_no_sleep(tmp_path):
    # This build machine's /sys/power/state is empty (a microVM): no state to sleep in.
    (tmp_path / "sys/power").mkdir(parents=True)
    (tmp_path / "sys/power/state").write_text("\n")
    assert power.probe(RootedHost(tmp_path))["power.sleep_states"].value == []


def test_live_host_reads_what_the_files_say():
    """On this machine, through the live Host: each fact is what its file says, or unknown with the reason."""
    from gpudoctor.host.live import LiveHost

    facts = power.probe(LiveHost())
    try:
        states = Path(power.SLEEP_STATE).read_text().split()
    except OSError:
        states = None
    if states is None:
        assert facts["power.sleep_states"].unknown
    else:
        assert facts["power.sleep_states"].value == states
    try:
        params = Path(power.PARAMS).read_text()
    except FileNotFoundError:
        assert facts["power.params_status"].value == NOT_FOUND
        assert facts["power.preservation"].unknown == "the nvidia module is not loaded"
    else:
        preserve = power.parse_params(params).get("PreserveVideoMemoryAllocations")
        assert facts["power.preserve_video_memory"].value == preserve
    for name in ("power.unit_suspend", "power.unit_resume", "power.unit_hibernate"):
        fact = facts[name]
        assert (
            fact.value in ("enabled", "disabled", "masked", "not installed") if fact.known else fact.unknown
        )


# --- through the whole check ----------------------------------------------------------------------------


def _as_a_machine(chassis_type: str):
    """The H200 capture replayed as if it ran on bare metal with the given SMBIOS chassis type: no container,
    no hypervisor flag, a kernel offering suspend and hibernation, NVIDIA's three units installed but not
    enabled, and a kernel log with one deep sleep (the lines of test_kernel_log's sources)."""
    from gpudoctor.host.snapshot import SnapshotHost, load

    rec = load(str(H200))
    rec.dirs["/"] = [n for n in rec.dirs.get("/", []) if n != ".dockerenv"]
    rec.files.update({
        "/sys/class/dmi/id/chassis_type": chassis_type,
        "/proc/cpuinfo": "processor\t: 0\nflags\t\t: fpu vme sse2 avx512f\n",
        power.SLEEP_STATE: "freeze mem disk\n",
        power.MODULES: DESKTOP_MODULES,
        "/dev/kmsg": "6,1,0,-;Linux version 6.8.0-45-generic\n6,900,1200000100,-;PM: suspend entry (deep)\n"
        "6,950,1201500000,-;PM: suspend exit\n",
        "/proc/uptime": "3600.50 7000.00\n",
    })  # fmt: skip
    rec.read_errors.update({"/proc/1/cgroup": NOT_FOUND, "/etc/machine-info": NOT_FOUND})
    rec.dirs.update({
        "/etc/systemd/system": ["multi-user.target.wants", "getty.target.wants"],
        "/usr/lib/systemd/system": list(ALL_UNITS),
        "/lib/systemd/system": {"error": NOT_FOUND},
    })  # fmt: skip
    return SnapshotHost(rec, "h200-as-a-machine")


def _check(host):
    from gpudoctor.host.base import Deadline
    from gpudoctor.pipeline.check import run_check
    from gpudoctor.profiles import PROFILES

    result = run_check(host, "test", Deadline(20), [], profile=PROFILES["workstation"])
    return {r.rule.id: r for r in result.results}, result


def test_a_desktop_with_the_580_defaults_gets_the_warning_and_its_fix():
    by_id, result = _check(_as_a_machine("3\n"))  # Desktop
    assert result.facts.value("system.chassis") == "desktop"
    assert result.facts.value("suspend.count") == 1
    assert by_id["GD-SUSPEND-002"].status == "fired"
    assert by_id["GD-SUSPEND-001"].status == "passed"
    assert by_id["GD-SUSPEND-003"].status == "passed"
    finding = next(f for f in result.findings if f.rule.id == "GD-SUSPEND-002")
    assert finding.message.startswith("This desktop can sleep, but the NVIDIA driver (580.159.04)")
    assert [s.argv for s in finding.rule.fix if s.kind == "command"] == [
        (
            "sudo",
            "systemctl",
            "enable",
            "nvidia-suspend.service",
            "nvidia-resume.service",
            "nvidia-hibernate.service",
        )
    ]


def test_a_rack_server_never_gets_the_laptop_warning():
    by_id, result = _check(_as_a_machine("23\n"))  # Rack Mount Chassis
    assert result.facts.value("system.chassis") == "server"
    for rule in ("GD-SUSPEND-001", "GD-SUSPEND-002", "GD-SUSPEND-003"):
        assert by_id[rule].status == "not_applicable"
