"""The driver probe, against text captured on a real H200 host (driver 580.159.04) and variants of it.

Real: the /proc version text, the ldconfig cache, the NVML system readings, the GPU's sysfs vendor and class.
Made up to match: the /usr/local/nvidia/lib64 listing (the capture's `find` did not look there; ldconfig
shows its other driver libraries carry the 580.159.04 suffix) and the PCI device directory listing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpudoctor.facts import SCHEMA
from gpudoctor.probes import driver
from gpudoctor.probes.driver import branch_of, decode_cuda_version, is_gpu_class, parse_proc_version

from conftest import fake_host

RAW = Path(__file__).resolve().parents[1] / "fixtures" / "raw"
H200_PROC_VERSION = (RAW / "h200-proc-driver-nvidia-version").read_text()
H200_LDCONFIG = (RAW / "h200-ldconfig-p.txt").read_text()
H200_NVML_SYSTEM = json.loads((RAW / "h200-nvml.json").read_text())["system"]
PROPRIETARY = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n"
GPU = "0000:00:06.0"
PCI = "/sys/bus/pci/devices"
NVIDIA_LIB64 = [
    "libcuda.so",
    "libcuda.so.1",
    "libcuda.so.580.159.04",
    "libnvidia-ml.so",
    "libnvidia-ml.so.1",
    "libnvidia-ml.so.580.159.04",
    "libnvidia-tls.so.580.159.04",
]
DEVICE_DIR = ["class", "current_link_speed", "device", "driver", "max_link_speed", "numa_node", "vendor"]
DRIVER_FACTS = {
    s.name for s in SCHEMA if s.name.startswith(("driver.", "pci.")) and not s.doc.startswith("derived:")
}
H200_INFORMATION = (
    Path(__file__).resolve().parents[1]
    / "fixtures/h200-driver580-snapshot/files/proc/driver/nvidia/gpus/0000:00:06.0/information"
).read_text()
# An H100's, as https://landontclipp.github.io/sysadmin/gpu shows `cat /proc/driver/nvidia/gpus/0000:62:00.0/
# information` (its spacing as the page gives it).
H100_INFORMATION = """Model:           NVIDIA H100 80GB HBM3
IRQ:             10
GPU UUID:        GPU-9221d5d1-b60b-a624-bf14-0a1819cfda3b
Video BIOS:      96.00.99.00.01
Bus Type:        PCIe
DMA Size:        52 bits
DMA Mask:        0xfffffffffffff
Bus Location:    0000:62:00.0
Device Minor:    5
GPU Firmware:    535.129.03
GPU Excluded:    No
"""
# The device nodes the driver's GPUs and control device have (libnvidia-container src/nvc_internal.h
# @63d366ee3b4183513c310ac557bf31b05b83328f:33-37: /dev/nvidia%d, nvidiactl, nvidia-uvm, -uvm-tools,
# -modeset).
DEV = ["console", "null", "nvidia-uvm", "nvidia-uvm-tools", "nvidia0", "nvidiactl", "pts", "shm", "zero"]
# Made up to match (the capture did not copy uevent): what the kernel writes for a GPU the nvidia module has.
H200_UEVENT = "DRIVER=nvidia\nPCI_CLASS=30200\nPCI_ID=10DE:2335\nPCI_SLOT_NAME=0000:00:06.0\n"


def ldconfig(stdout: str, argv: tuple = ("ldconfig", "-p"), rc: int = 0) -> dict:
    return {"argv": list(argv), "rc": rc, "stdout": stdout, "stderr": ""}


def h200(**over) -> dict:
    parts = {
        "files": {
            "/proc/driver/nvidia/version": H200_PROC_VERSION,
            f"{PCI}/{GPU}/vendor": "0x10de\n",
            f"{PCI}/{GPU}/class": "0x030200\n",
            f"{PCI}/{GPU}/uevent": H200_UEVENT,
            f"/proc/driver/nvidia/gpus/{GPU}/information": H200_INFORMATION,
        },
        "dirs": {
            PCI: [GPU],
            f"{PCI}/{GPU}": DEVICE_DIR,
            "/usr/local/nvidia/lib64": NVIDIA_LIB64,
            "/dev": DEV,
        },
        "commands": [ldconfig(H200_LDCONFIG)],
        "nvml_system": dict(H200_NVML_SYSTEM),
    }
    parts.update(over)
    return parts


def values(facts: dict) -> dict:
    return {k: (f.value if f.known else ("unknown", f.unknown)) for k, f in facts.items()}


# --- pure functions ---------------------------------------------------------------------------------------


def test_parse_real_open_module_text():
    assert parse_proc_version(H200_PROC_VERSION) == ("580.159.04", "open")


def test_parse_proprietary_text():
    assert parse_proc_version(PROPRIETARY) == ("535.104.05", "proprietary")


def test_parse_aarch64_and_two_part_versions():
    arm = "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  570.86.15  Release Build  (dvs@U16)"
    assert parse_proc_version(arm) == ("570.86.15", "open")
    old = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  390.157  Wed Oct 12 09:19:07 UTC 2022\nGCC: x"
    assert parse_proc_version(old) == ("390.157", "proprietary")


@pytest.mark.parametrize("text", ["", "GCC version:  gcc version 15.3.0 (GCC)\n", "NVRM version: garbled"])
def test_parse_unrecognised(text):
    assert parse_proc_version(text) is None


@pytest.mark.parametrize(
    "value, expected",
    [(13000, ("13.0", 13)), (12040, ("12.4", 12)), (12020, ("12.2", 12)), (11080, ("11.8", 11))],
)
def test_decode_cuda_version(value, expected):
    assert decode_cuda_version(value) == expected


@pytest.mark.parametrize("value", [0, -1, "13000", None, True])
def test_decode_cuda_version_rejects(value):
    with pytest.raises(ValueError):
        decode_cuda_version(value)


def test_branch_and_class():
    assert branch_of("580.159.04") == 580
    assert is_gpu_class("0x030200\n") and is_gpu_class("0x030000")
    assert not is_gpu_class("0x040300") and not is_gpu_class("0x068000")


# --- probe ------------------------------------------------------------------------------------------------


def test_h200_exact_facts():
    facts = driver.probe(fake_host(**h200()))
    assert set(facts) == DRIVER_FACTS
    assert values(facts) == {
        "driver.loaded": True,
        "driver.version": "580.159.04",
        "driver.kernel_version": "580.159.04",
        "driver.kernel_module": "open",
        "driver.userspace_version": "580.159.04",
        "driver.nvml_version": "13.580.159.04",
        "driver.nvml_status": "ok",
        "driver.max_cuda": "13.0",
        "driver.max_cuda_major": 13,
        "driver.branch": 580,
        "pci.nvidia_gpus": 1,
        "pci.unbound": 0,
        "pci.unbound_addresses": [],
        "pci.nvidia_driver_addresses": [GPU],
        "pci.device_node_addresses": [GPU],
        "pci.amd_gpus": 0,
    }
    assert facts["driver.version"].source == "nvml:nvmlSystemGetDriverVersion"
    assert facts["driver.max_cuda"].source == "nvml:nvmlSystemGetCudaDriverVersion_v2"
    assert facts["driver.kernel_module"].source == "/proc/driver/nvidia/version"
    assert facts["driver.userspace_version"].source == "/usr/local/nvidia/lib64/libnvidia-ml.so.580.159.04"
    assert facts["pci.nvidia_gpus"].source == "sysfs"


def test_proprietary_module():
    parts = h200()
    parts["files"]["/proc/driver/nvidia/version"] = PROPRIETARY
    facts = driver.probe(fake_host(**parts))
    assert facts["driver.kernel_module"].value == "proprietary"
    assert facts["driver.kernel_version"].value == "535.104.05"


def test_library_version_mismatch_falls_back_to_kernel_version():
    # The classic half-upgraded host: kernel module 535 still loaded, userspace already 550.
    parts = h200(
        nvml_system={
            "nvmlInit": {
                "error": "NVMLError_LibRmVersionMismatch",
                "msg": "RM has detected an NVML/RM version mismatch.",
            }
        },
        dirs={
            PCI: [GPU],
            f"{PCI}/{GPU}": DEVICE_DIR,
            "/usr/local/nvidia/lib64": ["libnvidia-ml.so.1", "libnvidia-ml.so.550.54.15"],
        },
    )
    parts["files"]["/proc/driver/nvidia/version"] = PROPRIETARY
    facts = driver.probe(fake_host(**parts))
    assert facts["driver.nvml_status"].value == "NVMLError_LibRmVersionMismatch"
    assert facts["driver.version"].value == "535.104.05"
    assert facts["driver.version"].source == "/proc/driver/nvidia/version"
    assert facts["driver.branch"].value == 535
    assert facts["driver.userspace_version"].value == "550.54.15"
    for name in ("driver.nvml_version", "driver.max_cuda", "driver.max_cuda_major"):
        assert facts[name].unknown == "driver/library version mismatch"


def test_no_driver_at_all():
    facts = driver.probe(
        fake_host(
            read_errors={"/proc/driver/nvidia/version": "not found"},
            nvml_system={
                "nvmlInit": {"error": "NVMLError_LibraryNotFound", "msg": "NVML Shared Library Not Found"}
            },
            commands=[ldconfig("\tlibc.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libc.so.6\n")],
            dirs={PCI: ["0000:00:00.0"]},
            files={f"{PCI}/0000:00:00.0/vendor": "0x8086\n"},
        )
    )
    assert facts["driver.loaded"].known and facts["driver.loaded"].value is False
    assert facts["driver.kernel_version"].unknown == "driver not loaded"
    assert facts["driver.nvml_status"].value == "NVMLError_LibraryNotFound"
    assert facts["driver.version"].unknown == "NVML library not found"
    assert facts["driver.userspace_version"].unknown == "libnvidia-ml.so.1 not in the loader cache"
    assert values(facts)["pci.nvidia_gpus"] == 0


def test_unreadable_proc_file_is_unknown_not_absent():
    facts = driver.probe(
        fake_host(**h200(files={}, read_errors={"/proc/driver/nvidia/version": "no permission"}))
    )
    assert facts["driver.loaded"].unknown == "no permission"
    assert facts["driver.version"].value == "580.159.04"  # NVML still answers


def test_unrecognised_proc_text():
    parts = h200()
    parts["files"]["/proc/driver/nvidia/version"] = "something else\n"
    facts = driver.probe(fake_host(**parts))
    assert facts["driver.loaded"].value is True
    assert facts["driver.kernel_version"].unknown == "unrecognised format"


def test_not_supported_system_call_is_unknown():
    system = dict(H200_NVML_SYSTEM)
    system["nvmlSystemGetCudaDriverVersion_v2"] = {"error": "NVMLError_NotSupported", "msg": "Not Supported"}
    facts = driver.probe(fake_host(**h200(nvml_system=system)))
    assert facts["driver.max_cuda"].unknown == "not supported"
    assert facts["driver.max_cuda_major"].unknown == "not supported"
    assert facts["driver.version"].value == "580.159.04"


def test_unbound_nvidia_gpu():
    # A second GPU that vfio/nouveau/nvidia never claimed, and an NVIDIA audio function that is not a GPU.
    files = {
        f"{PCI}/{GPU}/vendor": "0x10de\n",
        f"{PCI}/{GPU}/class": "0x030200\n",
        f"{PCI}/0000:41:00.0/vendor": "0x10de\n",
        f"{PCI}/0000:41:00.0/class": "0x030000\n",
        f"{PCI}/0000:41:00.1/vendor": "0x10de\n",
        f"{PCI}/0000:41:00.1/class": "0x040300\n",
        f"{PCI}/0000:00:1f.0/vendor": "0x8086\n",
    }
    dirs = {
        PCI: ["0000:00:1f.0", GPU, "0000:41:00.0", "0000:41:00.1"],
        f"{PCI}/{GPU}": DEVICE_DIR,
        f"{PCI}/0000:41:00.0": ["class", "device", "vendor", "power", "resource"],
    }
    facts = driver.probe(fake_host(files=files, dirs=dirs))
    assert values(facts)["pci.nvidia_gpus"] == 2
    assert values(facts)["pci.unbound"] == 1
    assert values(facts)["pci.unbound_addresses"] == ["0000:41:00.0"]


def test_which_driver_holds_each_gpu():
    # GPU 0000:00:06.0 is the nvidia module's; 0000:41:00.0 is bound to vfio-pci (passed through to a VM), so
    # NVML on this host is not expected to list it; 0000:81:00.0's uevent names no driver.
    files = {
        f"{PCI}/{GPU}/vendor": "0x10de\n",
        f"{PCI}/{GPU}/class": "0x030200\n",
        f"{PCI}/{GPU}/uevent": H200_UEVENT,
    }
    for addr, uevent in (
        ("0000:41:00.0", "DRIVER=vfio-pci\nPCI_CLASS=30200\n"),
        ("0000:81:00.0", "PCI_CLASS=30200\n"),
    ):
        files.update({f"{PCI}/{addr}/vendor": "0x10de\n", f"{PCI}/{addr}/class": "0x030200\n",
                      f"{PCI}/{addr}/uevent": uevent})  # fmt: skip
    dirs = {
        PCI: [GPU, "0000:41:00.0", "0000:81:00.0"],
        **{f"{PCI}/{a}": DEVICE_DIR for a in (GPU, "0000:41:00.0", "0000:81:00.0")},
    }
    facts = driver.probe(fake_host(files=files, dirs=dirs))
    assert values(facts)["pci.nvidia_driver_addresses"] == [GPU]
    assert facts["pci.nvidia_driver_addresses"].source == "/sys/bus/pci/devices/*/uevent"
    assert values(facts)["pci.unbound"] == 0
    # An unreadable uevent leaves the list unknown, naming the device: a partial list would read as complete.
    del files[f"{PCI}/0000:81:00.0/uevent"]
    facts = driver.probe(
        fake_host(files=files, dirs=dirs, read_errors={f"{PCI}/0000:81:00.0/uevent": "no permission"})
    )
    assert values(facts)["pci.nvidia_driver_addresses"] == ("unknown", "0000:81:00.0: no permission")


def test_device_minor():
    assert driver.device_minor(H200_INFORMATION) == 0 and driver.device_minor(H100_INFORMATION) == 5
    with pytest.raises(ValueError):
        driver.device_minor("Model: NVIDIA H200\n")


def test_the_gpus_given_here_are_those_whose_device_node_is_here():
    # Two GPUs bound to nvidia: the H200 at 0000:00:06.0 (minor 0) and the H100 at 0000:62:00.0 (minor 5).
    h100 = "0000:62:00.0"
    files = {f"/proc/driver/nvidia/gpus/{GPU}/information": H200_INFORMATION}
    for addr in (GPU, h100):
        files.update({f"{PCI}/{addr}/vendor": "0x10de\n", f"{PCI}/{addr}/class": "0x030200\n",
                      f"{PCI}/{addr}/uevent": H200_UEVENT})  # fmt: skip
    dirs = {PCI: [GPU, h100], f"{PCI}/{GPU}": DEVICE_DIR, f"{PCI}/{h100}": DEVICE_DIR, "/dev": DEV}

    def given(files=files, dirs=dirs, read_errors=None):
        host = fake_host(files=files, dirs=dirs, read_errors=read_errors or {})
        return values(driver.probe(host))["pci.device_node_addresses"]

    # nvidia-container-cli gave the container the H200 only: the H100's /proc entry is hidden (not found).
    assert given(read_errors={f"/proc/driver/nvidia/gpus/{h100}/information": "not found"}) == [GPU]
    # The H100's entry is there but not its node /dev/nvidia5 (a runtime that does not hide the entries).
    more = {**files, f"/proc/driver/nvidia/gpus/{h100}/information": H100_INFORMATION}
    assert given(files=more) == [GPU]
    assert given(files=more, dirs={**dirs, "/dev": DEV + ["nvidia5"]}) == [GPU, h100]
    # What cannot be read leaves the list unknown, never shorter than it is.
    assert given(files=more, dirs={**dirs, "/dev": {"error": "no permission"}}) == (
        "unknown",
        "/dev: no permission",
    )
    assert given(read_errors={f"/proc/driver/nvidia/gpus/{h100}/information": "no permission"}) == (
        "unknown",
        f"/proc/driver/nvidia/gpus/{h100}/information: no permission",
    )


def test_uevent_driver():
    assert driver.uevent_driver(H200_UEVENT) == "nvidia"
    assert driver.uevent_driver("PCI_CLASS=30200\nDRIVER=\n") is None
    assert driver.uevent_driver("") is None


def test_amd_gpus_are_counted_apart_from_their_audio_and_bridge_functions():
    # An MI300X (processing accelerator 0x1200), a Radeon PRO W7900 (VGA) with its HDMI audio function, an
    # Instinct MI250X (display controller 0x0380), and an AMD PCIe switch port; no NVIDIA device at all.
    amd = {
        "0000:05:00.0": "0x120000\n",
        "0000:83:00.0": "0x030000\n",
        "0000:83:00.1": "0x040300\n",
        "0000:c1:00.0": "0x038000\n",
        "0000:00:01.1": "0x060400\n",
    }
    files = {f"{PCI}/{addr}/vendor": "0x1002\n" for addr in amd}
    files.update({f"{PCI}/{addr}/class": cls for addr, cls in amd.items()})
    facts = driver.probe(fake_host(files=files, dirs={PCI: sorted(amd)}))
    assert values(facts)["pci.amd_gpus"] == 3
    assert values(facts)["pci.nvidia_gpus"] == 0
    assert facts["pci.amd_gpus"].source == "sysfs"


def test_amd_class():
    assert driver.is_amd_gpu_class("0x038000\n") and driver.is_amd_gpu_class("0x120000")
    assert driver.is_amd_gpu_class("0x030000")
    assert not driver.is_amd_gpu_class("0x040300") and not driver.is_amd_gpu_class("0x060400")


def test_pci_unreadable():
    facts = driver.probe(fake_host(dirs={PCI: {"error": "no permission"}}))
    for name in ("pci.nvidia_gpus", "pci.unbound", "pci.unbound_addresses", "pci.nvidia_driver_addresses",
                 "pci.device_node_addresses", "pci.amd_gpus"):  # fmt: skip
        assert facts[name].unknown == "no permission"
        assert facts[name].source == "sysfs"


def test_ldconfig_not_on_path_falls_back_to_sbin():
    commands = [
        {"argv": ["ldconfig", "-p"], "error": "not found"},
        ldconfig(H200_LDCONFIG, argv=("/sbin/ldconfig", "-p")),
    ]
    facts = driver.probe(fake_host(**h200(commands=commands)))
    assert facts["driver.userspace_version"].value == "580.159.04"


def test_ldconfig_missing_everywhere():
    commands = [
        {"argv": ["ldconfig", "-p"], "error": "not found"},
        {"argv": ["/sbin/ldconfig", "-p"], "error": "not found"},
    ]
    facts = driver.probe(fake_host(**h200(commands=commands)))
    assert facts["driver.userspace_version"].unknown == "ldconfig not found"


def test_ldconfig_timeout():
    facts = driver.probe(fake_host(**h200(commands=[{"argv": ["ldconfig", "-p"], "error": "timed out"}])))
    assert facts["driver.userspace_version"].unknown == "timed out"


def test_library_dir_without_versioned_file():
    parts = h200()
    parts["dirs"]["/usr/local/nvidia/lib64"] = ["libnvidia-ml.so", "libnvidia-ml.so.1"]
    facts = driver.probe(fake_host(**parts))
    assert facts["driver.userspace_version"].unknown == "no versioned libnvidia-ml.so file"


def test_empty_host_never_raises():
    facts = driver.probe(fake_host())
    assert set(facts) == DRIVER_FACTS
    assert not any(f.known for f in facts.values())
