"""The system probe, against text captured on a real H200 host and hand-made variants of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudoctor.probes import system

from conftest import fake_host

RAW = Path(__file__).resolve().parents[1] / "fixtures" / "raw"
OS_RELEASE = (RAW / "h200-os-release").read_text()
MEMINFO = (RAW / "h200-meminfo").read_text()
H200_ENV = dict(line.split("=", 1) for line in (RAW / "h200-env_nv.txt").read_text().splitlines())

# The capture has `ulimit -a` (max locked memory unlimited); this is the same in /proc/self/limits form.
H200_LIMITS = "".join(
    f"{name:<25} {soft:<20} {hard:<20} {units:<10}\n"  # the kernel's own layout, trailing blanks included
    for name, soft, hard, units in (
        ("Limit", "Soft Limit", "Hard Limit", "Units"),
        ("Max stack size", "8388608", "unlimited", "bytes"),
        ("Max core file size", "0", "unlimited", "bytes"),
        ("Max open files", "20000", "20000", "files"),
        ("Max locked memory", "unlimited", "unlimited", "bytes"),
        ("Max address space", "unlimited", "unlimited", "bytes"),
    )
)
# The capture has `mount | grep -e shm -e nvidia`; these are its lines in /proc/mounts form.
H200_MOUNTS = """\
tmpfs /dev/shm tmpfs rw,relatime,size=131981020k 0 0
/dev/vdb /usr/local/nvidia squashfs ro,nosuid,nodev,relatime,errors=continue 0 0
tmpfs /dev/shm tmpfs rw,relatime,size=134217728k 0 0
"""
# /proc/cpuinfo was not captured; a Firecracker guest's CPU flags include `hypervisor`.
VM_CPUINFO = "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu vme sse2 hypervisor avx512f\n\n"
HOST_CPUINFO = "processor\t: 0\nflags\t\t: fpu vme sse2 avx512f\n"
PYTHON = {
    "default": "/opt/torch/.venv/bin/python",
    "/opt/torch/.venv/bin/python": {
        "format": 1,
        "executable": "/opt/torch/.venv/bin/python",
        "libc": ["glibc", "2.39"],
    },
}


def h200_files() -> dict[str, str]:
    return {
        "/etc/os-release": OS_RELEASE,
        "/proc/sys/kernel/osrelease": "6.18.44-fc-v657-gpu\n",
        "/proc/sys/kernel/hostname": "vm\n",
        "/proc/sys/kernel/arch": "x86_64\n",  # the capture's `uname -a`: ... x86_64 x86_64 x86_64 GNU/Linux
        "/sys/devices/system/cpu/online": "0-15\n",
        "/proc/meminfo": MEMINFO,
        "/proc/self/limits": H200_LIMITS,
        "/proc/self/mounts": H200_MOUNTS,
        "/proc/cpuinfo": VM_CPUINFO,
    }


def h200(**changes):
    files = h200_files()
    files.update(changes.pop("files", {}))
    for path in changes.pop("drop", ()):
        files.pop(path)
    parts = {
        "files": files,
        # Firecracker has no SMBIOS, so the DMI files are not there.
        "read_errors": {
            "/sys/class/dmi/id/sys_vendor": "not found",
            "/sys/class/dmi/id/product_name": "not found",
        },
        "env": {k: H200_ENV.get(k) for k in ("LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES")},
        "python": PYTHON,
    }
    parts["read_errors"].update(changes.pop("read_errors", {}))
    parts.update(changes)
    return fake_host(**parts)


def values(facts):
    return {name: (f.value if f.known else ("unknown", f.unknown)) for name, f in facts.items()}


def test_h200_capture():
    facts = system.probe(h200())
    assert values(facts) == {
        "system.os": "Ubuntu 24.04.3 LTS",
        "system.os_id": "ubuntu",
        "system.os_version": "24.04",
        "system.kernel": "6.18.44-fc-v657-gpu",
        "host.hostname": "vm",
        "system.cpus": 16,
        "system.memory_bytes": 131981020 * 1024,
        "system.memlock_bytes": -1,
        "system.shm_bytes": 137438953472,  # what `df -B1 /dev/shm` printed there
        # The capture listed neither /dev nor /proc/self/status, nor ran stat: the mode is the tmpfs's.
        "system.shm.exists": ("unknown", "not recorded in snapshot"),
        "system.shm.read_only": False,
        "system.shm.mode": "1777",
        "system.shm.uid": 0,
        "system.shm.writable": ("unknown", "not recorded in snapshot"),
        "system.virtualization": "firecracker",
        # the capture's lscpu (reference/torch_collect_env.txt) says "Vendor ID: GenuineIntel", "CPU
        # family: 6"; VM_CPUINFO carries the vendor alone
        "system.cpu.vendor": "GenuineIntel",
        "system.cpu.family": ("unknown", "no `cpu family` in /proc/cpuinfo (printed by x86 CPUs)"),
        "system.cpu.model": ("unknown", "no `model` in /proc/cpuinfo (printed by x86 CPUs)"),
        "system.cpu.implementer": ("unknown", "no `CPU implementer` in /proc/cpuinfo (printed by ARM CPUs)"),
        "system.chassis": "vm",  # a hypervisor seen names a VM whatever the firmware says (hostnamed's order)
        "system.chassis_type": ("unknown", "not recorded in snapshot"),
        "system.machine": "x86_64",
        "system.glibc": "2.39",
        "env.ld_library_path": "/usr/local/nvidia/lib64:/usr/local/nvidia/lib",
        "env.cuda_visible_devices": ("unknown", "not set"),
        "env.cuda_launch_blocking": ("unknown", "not set"),
        "env.cuda_injection64_path": ("unknown", "not set"),
        "env.nvtx_injection64_path": ("unknown", "not set"),
        "env.ld_preload": ("unknown", "not set"),
        "env.nccl_p2p_disable": ("unknown", "not set"),
        "env.nccl_ib_disable": ("unknown", "not set"),
        "env.nccl_socket_ifname": ("unknown", "not set"),
        "env.profiler_injection": [],
        "env.profiler_injection_count": 0,
        # env_nv.txt has no NCCL_ variable
        **{f"env.{name.lower()}": ("unknown", "not set") for name in system.NCCL_PATH_VARIABLES},
    }
    assert facts["system.os"].source == "/etc/os-release"
    assert facts["system.shm_bytes"].source == "/proc/self/mounts"
    assert facts["system.machine"].source == "/proc/sys/kernel/arch"
    assert facts["env.ld_library_path"].source == "env:LD_LIBRARY_PATH"


def test_every_fact_is_in_the_schema():
    from gpudoctor.derive import DERIVED
    from gpudoctor.facts import SPECS

    facts = system.probe(h200())
    assert set(facts) <= set(SPECS)
    wanted = {n for n in SPECS if n.startswith(("system.", "env.")) and n not in DERIVED}
    assert wanted | {"host.hostname"} == set(facts)


# --- os-release -----------------------------------------------------------------------------------------


def test_parse_os_release_quotes_comments_and_escapes():
    text = (
        "# comment\n\nNAME=Fedora\nPRETTY_NAME=\"Fedora Linux 40 (Server Edition)\"\nID='rhel'\n"
        'X="a \\"b\\""\nbad line\n'
    )
    assert system.parse_os_release(text) == {
        "NAME": "Fedora",
        "PRETTY_NAME": "Fedora Linux 40 (Server Edition)",
        "ID": "rhel",
        "X": 'a "b"',
    }


def test_parse_os_release_of_captured_file():
    fields = system.parse_os_release(OS_RELEASE)
    assert fields["PRETTY_NAME"] == "Ubuntu 24.04.3 LTS"
    assert fields["VERSION"] == "24.04.3 LTS (Noble Numbat)"
    assert fields["UBUNTU_CODENAME"] == "noble"


def test_os_release_falls_back_to_usr_lib():
    host = h200(
        drop=["/etc/os-release"], files={"/usr/lib/os-release": 'PRETTY_NAME="Arch Linux"\nID=arch\n'}
    )
    facts = system.probe(host)
    assert facts["system.os"].value == "Arch Linux"
    assert facts["system.os"].source == "/usr/lib/os-release"
    assert facts["system.os_id"].value == "arch"
    # Arch is rolling: no VERSION_ID, and none is made up.
    assert facts["system.os_version"].unknown == "no VERSION_ID"


def test_os_release_unreadable_keeps_the_first_reason():
    host = h200(drop=["/etc/os-release"], read_errors={"/etc/os-release": "no permission"})
    facts = system.probe(host)
    for name in ("system.os", "system.os_id", "system.os_version"):
        assert facts[name].unknown == "no permission"
        assert facts[name].source == "/etc/os-release"


# --- CPUs, memory, memlock ------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "count"), [("0-15\n", 16), ("0-3,8-11", 8), ("0", 1), ("0,2,4-5", 4)])
def test_parse_cpu_list(text, count):
    assert system.parse_cpu_list(text) == count


@pytest.mark.parametrize("text", ["", "a-b", "5-2"])
def test_parse_cpu_list_rejects(text):
    with pytest.raises(ValueError):
        system.parse_cpu_list(text)


def test_parse_meminfo_total():
    assert system.parse_meminfo_total(MEMINFO) == 135148564480
    assert system.parse_meminfo_total("MemFree: 5 kB\n") is None


def test_memlock_in_bytes():
    limits = H200_LIMITS.replace(
        "Max locked memory         unlimited            unlimited",
        "Max locked memory         65536                65536    ",
    )
    assert system.parse_memlock(limits) == 65536
    assert system.probe(h200(files={"/proc/self/limits": limits}))["system.memlock_bytes"].value == 65536


def test_memlock_soft_limit_is_the_one_that_counts():
    assert (
        system.parse_memlock("Max locked memory         8388608              unlimited            bytes\n")
        == 8388608
    )


def test_unreadable_files_are_unknown_with_the_reason():
    host = h200(
        drop=[
            "/proc/meminfo",
            "/proc/self/limits",
            "/sys/devices/system/cpu/online",
            "/proc/sys/kernel/osrelease",
        ],
        read_errors={"/proc/meminfo": "no permission", "/proc/self/limits": "timed out"},
    )
    facts = system.probe(host)
    assert facts["system.memory_bytes"].unknown == "no permission"
    assert facts["system.memory_bytes"].source == "/proc/meminfo"
    assert facts["system.memlock_bytes"].unknown == "timed out"
    assert facts["system.cpus"].unknown == "not recorded in snapshot"
    assert facts["system.kernel"].unknown == "not recorded in snapshot"
    # shm has its own size=, so it does not need MemTotal.
    assert facts["system.shm_bytes"].value == 137438953472


def test_garbage_is_unknown_not_a_guess():
    host = h200(files={"/sys/devices/system/cpu/online": "\n", "/proc/self/limits": "nothing here\n"})
    facts = system.probe(host)
    assert facts["system.cpus"].unknown == "could not parse"
    assert facts["system.memlock_bytes"].unknown == "could not parse"


# --- /dev/shm -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("size", "expected"),
    [("65536k", 64 << 20), ("64m", 64 << 20), ("1g", 1 << 30), ("1G", 1 << 30), ("4096", 4096), ("x", None)],
)
def test_parse_size(size, expected):
    assert system.parse_size(size) == expected


def test_kubernetes_pod_default_64m_shm():
    mounts = (
        "overlay / overlay rw,relatime,lowerdir=/var/lib/containerd/l1,upperdir=/u,workdir=/w 0 0\n"
        "proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n"
        "shm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=65536k 0 0\n"
    )
    fact = system.probe(h200(files={"/proc/self/mounts": mounts}))["system.shm_bytes"]
    assert fact.value == 67108864
    assert fact.source == "/proc/self/mounts"


def test_shm_without_size_is_half_of_memtotal():
    mounts = "tmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0\n"
    fact = system.probe(h200(files={"/proc/self/mounts": mounts}))["system.shm_bytes"]
    assert fact.value == 131981020 * 1024 // 2
    assert "half of MemTotal" in fact.source


def test_shm_without_size_and_without_meminfo_is_unknown():
    mounts = "tmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0\n"
    host = h200(files={"/proc/self/mounts": mounts}, drop=["/proc/meminfo"])
    assert system.probe(host)["system.shm_bytes"].unknown == "/proc/meminfo unreadable"


def test_shm_size_zero_means_no_limit():
    # The kernel prints size=0k for a tmpfs mounted without a limit; RAM is then the bound, not zero.
    fact = system.probe(h200(files={"/proc/self/mounts": "tmpfs /dev/shm tmpfs rw,size=0k 0 0\n"}))[
        "system.shm_bytes"
    ]
    assert fact.value == 131981020 * 1024
    assert "size=0" in fact.source


def test_no_shm_mount_is_not_found():
    fact = system.probe(h200(files={"/proc/self/mounts": "proc /proc proc rw 0 0\n"}))["system.shm_bytes"]
    assert fact.unknown == "not found"
    assert fact.source == "/proc/self/mounts"


def test_mounts_unreadable():
    host = h200(drop=["/proc/self/mounts"], read_errors={"/proc/self/mounts": "no permission"})
    assert system.probe(host)["system.shm_bytes"].unknown == "no permission"


def test_find_mount_takes_the_last_and_unescapes():
    assert system.find_mount(H200_MOUNTS, "/dev/shm") == (
        "tmpfs",
        {"rw": "", "relatime": "", "size": "134217728k"},
    )
    assert system.find_mount("a /mnt/my\\040disk ext4 rw 0 0\n", "/mnt/my disk") == ("ext4", {"rw": ""})


# --- virtualization -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("vendor", "product", "flag", "expected"),
    [
        ("QEMU", "Standard PC (Q35 + ICH9, 2009)", True, "kvm"),
        ("Red Hat", "KVM", True, "kvm"),
        ("VMware, Inc.", "VMware Virtual Platform", True, "vmware"),
        ("Microsoft Corporation", "Virtual Machine", True, "hyperv"),
        ("Microsoft Corporation", "Surface Laptop 5", False, "none"),
        ("Xen", "HVM domU", True, "xen"),
        ("Amazon EC2", "p5.48xlarge", True, "amazon"),
        ("Amazon EC2", "p4d.metal", False, "none"),
        ("Google", "Google Compute Engine", True, "google"),
        (None, None, True, "firecracker"),
        ("Acme", "Hypervisor 9", True, "other"),
        ("Supermicro", "SYS-821GE-TNHR", False, "none"),
        (None, None, False, "none"),
        ("Supermicro", "SYS-821GE-TNHR", None, None),
    ],
)
def test_classify_virtualization(vendor, product, flag, expected):
    assert system.classify_virtualization(vendor, product, flag) == expected


def test_virtualization_from_dmi_files():
    host = h200(
        files={
            "/sys/class/dmi/id/sys_vendor": "Microsoft Corporation\n",
            "/sys/class/dmi/id/product_name": "Virtual Machine\n",
        },
    )
    assert system.probe(host)["system.virtualization"].value == "hyperv"


def test_bare_metal():
    host = h200(
        files={
            "/sys/class/dmi/id/sys_vendor": "Supermicro\n",
            "/sys/class/dmi/id/product_name": "SYS-821GE-TNHR\n",
            "/proc/cpuinfo": HOST_CPUINFO,
        },
    )
    assert system.probe(host)["system.virtualization"].value == "none"


def test_dmi_unreadable_is_not_taken_for_firecracker():
    host = h200(
        read_errors={
            "/sys/class/dmi/id/sys_vendor": "no permission",
            "/sys/class/dmi/id/product_name": "no permission",
        }
    )
    assert system.probe(host)["system.virtualization"].value == "other"


def test_virtualization_unknown_without_cpuinfo():
    host = h200(drop=["/proc/cpuinfo"], read_errors={"/proc/cpuinfo": "no permission"})
    fact = system.probe(host)["system.virtualization"]
    assert fact.unknown == "no permission"


# --- machine --------------------------------------------------------------------------------------------

ARCH = "/proc/sys/kernel/arch"


def uname_m(rc=0, stdout="aarch64\n"):
    return [{"argv": ["uname", "-m"], "rc": rc, "stdout": stdout, "stderr": ""}]


def test_machine_from_uname_on_a_kernel_without_the_arch_sysctl():
    host = h200(drop=[ARCH], read_errors={ARCH: "not found"}, commands=uname_m())
    fact = system.probe(host)["system.machine"]
    assert (fact.value, fact.source) == ("aarch64", "uname -m")


def test_machine_of_a_snapshot_recorded_before_it_was_asked_is_not_recorded():
    host = h200(drop=[ARCH], commands=uname_m())  # the read was never recorded: uname -m is not asked
    fact = system.probe(host)["system.machine"]
    assert (fact.unknown, fact.source) == ("not recorded in snapshot", ARCH)


@pytest.mark.parametrize(
    ("commands", "why"),
    [
        ([], "not recorded in snapshot"),
        ([{"argv": ["uname", "-m"], "error": "not found", "detail": "uname"}], "not found"),
        (uname_m(rc=1, stdout=""), "exited with status 1"),
        (uname_m(rc=None, stdout=""), "did not finish"),
        (uname_m(stdout="\n"), "could not parse"),
        (uname_m(stdout="x86_64 extra words\n"), "could not parse"),
    ],
)
def test_machine_unknown_when_uname_gives_no_answer(commands, why):
    host = h200(drop=[ARCH], read_errors={ARCH: "not found"}, commands=commands)
    fact = system.probe(host)["system.machine"]
    assert (fact.unknown, fact.source) == (why, "uname -m")


def test_empty_arch_file_falls_back_to_uname():
    fact = system.probe(h200(files={ARCH: "\n"}, commands=uname_m(stdout="ppc64le\n")))["system.machine"]
    assert (fact.value, fact.source) == ("ppc64le", "uname -m")


# --- glibc and environment ------------------------------------------------------------------------------


def test_glibc_not_glibc():
    python = {"default": "/x/python", "/x/python": {"format": 1, "executable": "/x/python", "libc": ["", ""]}}
    assert system.probe(h200(python=python))["system.glibc"].unknown == "libc not identified"


def test_glibc_python_failed():
    python = {"default": "/x/python", "/x/python": {"error": "python failed", "detail": "boom"}}
    fact = system.probe(h200(python=python))["system.glibc"]
    assert fact.unknown == "python failed"


def test_environment_values_are_kept_verbatim():
    host = h200(env={"LD_LIBRARY_PATH": "", "CUDA_VISIBLE_DEVICES": "GPU-1,2"})
    facts = system.probe(host)
    assert facts["env.ld_library_path"].value == ""  # set but empty is not the same as unset
    assert facts["env.cuda_visible_devices"].value == "GPU-1,2"
    assert facts["env.cuda_visible_devices"].source == "env:CUDA_VISIBLE_DEVICES"


# --- CPU vendor (issue 26: NCCL's P2P level and its inter-CPU bandwidth follow it) -----------------------

# archspec/archspec-json@a1e9ed31326dcc788f6caced551776302304d8de:tests/targets/linux-rhel9-graniterapids
# (an Intel Xeon 6972P's /proc/cpuinfo), its first lines (flags and the lines after them cut)
INTEL_GRANITE_RAPIDS = """\
processor       : 0
vendor_id       : GenuineIntel
cpu family      : 6
model           : 173
model name      : Intel(R) Xeon(R) 6972P
stepping        : 1
microcode       : 0x1000380
cpu MHz         : 2400.000
cache size      : 491520 KB
physical id     : 0
siblings        : 96
core id         : 0
cpu cores       : 96
apicid          : 0
initial apicid  : 0
fpu             : yes
fpu_exception   : yes
cpuid level     : 36
wp              : yes
"""
# https://github.com/ansible/ansible/issues/82244 (turn 6 by niharrp: /proc/cpuinfo of an AMD EPYC 9654P,
# its processor 4 as posted there; flags and the lines after them cut)
AMD_EPYC_9654P = """\
processor       : 4
vendor_id       : AuthenticAMD
cpu family      : 25
model           : 17
model name      : AMD EPYC 9654P 96-Core Processor
stepping        : 1
microcode       : 0xa10113e
cpu MHz         : 1500.000
cache size      : 1024 KB
physical id     : 0
siblings        : 191
core id         : 4
cpu cores       : 96
apicid          : 8
initial apicid  : 8
fpu             : yes
fpu_exception   : yes
cpuid level     : 16
wp              : yes
"""
# archspec/archspec-json@21bff09eaacc224e1937e81a766b5b369dafc6b2:tests/targets/linux-ubuntu20.04-znver3
# (an AMD Ryzen 9 5950X, the kernel's own tab layout), its first two processors' first lines
AMD_RYZEN_TABS = (
    "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 33\n"
    "model name\t: AMD Ryzen 9 5950X 16-Core Processor\nstepping\t: 0\n\n"
    "processor\t: 1\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 33\n"
)
# A Grace (Neoverse-V2) machine's /proc/cpuinfo, processor 71 as posted to linux-serial by Breno Leitao,
# 2025-07-03, https://lore.kernel.org/all/aGaQBghdAl8VGWmV@gmail.com/ (the mail's two-tab indent removed)
GRACE = """\
processor\t: 71
BogoMIPS\t: 2000.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma \
lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm sb paca pacg dcpodp sve2 sveaes \
svepmull svebitperm svesha3 svesm4 flagm2 frint svei8mm svebf16 i8mm bf16 dgh bti
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x0
CPU part\t: 0xd4f
CPU revision\t: 0
"""
CPU_FACTS = ("system.cpu.vendor", "system.cpu.family", "system.cpu.model", "system.cpu.implementer")


def cpu(text):
    facts = system.probe(h200(files={"/proc/cpuinfo": text}))
    return tuple(facts[n].value if facts[n].known else ("unknown", facts[n].unknown) for n in CPU_FACTS)


@pytest.mark.parametrize(
    "text, expected",
    [
        (INTEL_GRANITE_RAPIDS, ("GenuineIntel", 6, 173)),
        (AMD_EPYC_9654P, ("AuthenticAMD", 25, 17)),
        (AMD_RYZEN_TABS, ("AuthenticAMD", 25, 33)),
    ],
)
def test_x86_vendor_family_and_model(text, expected):
    assert cpu(text) == (
        *expected,
        ("unknown", "no `CPU implementer` in /proc/cpuinfo (printed by ARM CPUs)"),
    )


def test_grace_has_an_implementer_and_no_x86_vendor():
    assert cpu(GRACE) == (
        ("unknown", "no `vendor_id` in /proc/cpuinfo (printed by x86 CPUs)"),
        ("unknown", "no `cpu family` in /proc/cpuinfo (printed by x86 CPUs)"),
        ("unknown", "no `model` in /proc/cpuinfo (printed by x86 CPUs)"),
        "0x41",
    )


def test_first_cpu_stops_at_the_first_blank_line():
    assert system.first_cpu(AMD_RYZEN_TABS)["processor"] == "0"
    assert system.first_cpu(GRACE)["CPU part"] == "0xd4f"


def test_cpu_unread_is_unknown_with_the_reason_and_an_unparsable_model_says_so():
    host = h200(drop=["/proc/cpuinfo"], read_errors={"/proc/cpuinfo": "no permission"})
    facts = system.probe(host)
    assert {facts[n].unknown for n in CPU_FACTS} == {"no permission"}
    broken = AMD_EPYC_9654P.replace("model           : 17", "model           : x17")
    assert cpu(broken)[2] == ("unknown", "could not parse model: x17")


# --- NCCL variables that change its path ---------------------------------------------------------------


def test_nccl_path_variables_are_read_by_name_and_unset_ones_say_so():
    host = h200(env={"NCCL_P2P_LEVEL": "NVL", "NCCL_NET": "Socket", "NCCL_IB_HCA": "=mlx5_0:1"})
    facts = system.probe(host)
    assert (facts["env.nccl_p2p_level"].value, facts["env.nccl_p2p_level"].source) == (
        "NVL",
        "env:NCCL_P2P_LEVEL",
    )
    assert facts["env.nccl_net"].value == "Socket"
    assert facts["env.nccl_ib_hca"].value == "=mlx5_0:1"
    assert facts["env.nccl_shm_disable"].unknown == "not set"


def test_nccl_variables_a_snapshot_did_not_record_are_unknown_as_such():
    host = h200(env={"NCCL_P2P_LEVEL": "NVL"})
    host.rec.env = {"NCCL_P2P_LEVEL": "NVL"}  # an older snapshot: only the variables it knew
    facts = system.probe(host)
    assert facts["env.nccl_p2p_level"].value == "NVL"
    assert facts["env.nccl_net_plugin"].unknown == "not recorded in snapshot"
