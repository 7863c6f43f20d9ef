"""The interconnect probe: RDMA ports, GPUDirect RDMA's module, ACS, the IOMMU mode, the nearest NIC.

Formats are the kernel's and lspci's own:
  * drivers/infiniband/core/sysfs.c (torvalds/linux): state and phys_state are "%d: %s" ("4: ACTIVE",
    "5: LinkUp", "2: Polling"), rate is "%d%s Gb/sec (%dX%s)" ("400 Gb/sec (4X NDR)", "2.5 Gb/sec (1X SDR)");
    Documentation/ABI/stable/sysfs-class-infiniband documents the same files.
  * lspci -vvv as root: "ACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl-
    DirectTrans-"; as another user the extended capabilities read "Capabilities: <access denied>".
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudoctor.host.base import NO_PERMISSION, HostError
from gpudoctor.host.snapshot import RecordingHost, SnapshotHost
from gpudoctor.probes import interconnect as ic

from conftest import RootedHost, fake_host

LSPCI_ROOT = """\
0000:16:01.0 PCI bridge: Intel Corporation Device 352a (rev 04) (prog-if 00 [Normal decode])
\tControl: I/O+ Mem+ BusMaster+
\tCapabilities: [220 v1] Access Control Services
\t\tACSCap:\tSrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-
\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-

0000:17:00.0 PCI bridge: Broadcom / LSI PEX890xx PCIe Gen 5 Switch (rev b0) (prog-if 00 [Normal decode])
\tCapabilities: [220 v1] Access Control Services
\t\tACSCap:\tSrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl+ DirectTrans+
\t\tACSCtl:\tSrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-

0000:18:00.0 3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev a1)
\tSubsystem: NVIDIA Corporation Device 16c1
"""
LSPCI_USER = """\
0000:16:01.0 PCI bridge: Intel Corporation Device 352a (rev 04) (prog-if 00 [Normal decode])
\tCapabilities: <access denied>
"""


def test_port_files_parse_as_the_kernel_writes_them():
    assert ic.parse_port_state("4: ACTIVE\n") == "ACTIVE"
    assert ic.parse_port_state("5: LinkUp\n") == "LinkUp"
    assert ic.parse_port_state("2: Polling\n") == "Polling"
    assert ic.parse_port_state("ACTIVE") is None
    assert ic.parse_rate_gbps("400 Gb/sec (4X NDR)\n") == 400.0
    assert ic.parse_rate_gbps("2.5 Gb/sec (1X SDR)\n") == 2.5
    assert ic.parse_rate_gbps("fast") is None


def test_modules_uevent_and_uid():
    modules = "nvidia_peermem 16384 0 - Live 0x0000000000000000 (OE)\nib_core 479232 8 - Live 0x0\n"
    assert ic.parse_modules(modules) == {"nvidia_peermem", "ib_core"}
    assert ic.parse_uevent_slot("DRIVER=mlx5_core\nPCI_SLOT_NAME=0000:17:00.0\n") == "0000:17:00.0"
    assert ic.parse_uid("Name:\tpython3\nUid:\t1000\t0\t1000\t1000\n") == 0


def test_iommu_modes():
    assert ic.iommu_mode("BOOT_IMAGE=/vmlinuz ro quiet") == ("default", [])
    assert ic.iommu_mode("ro intel_iommu=on") == ("translated", ["intel_iommu=on"])
    assert ic.iommu_mode("intel_iommu=on iommu=pt") == ("passthrough", ["intel_iommu=on", "iommu=pt"])
    assert ic.iommu_mode("amd_iommu=on iommu.passthrough=1")[0] == "passthrough"
    assert ic.iommu_mode("iommu.passthrough=0")[0] == "translated"
    assert ic.iommu_mode("intel_iommu=off")[0] == "off"


def test_lspci_acs_redirect_bits():
    parsed = ic.parse_lspci_acs(LSPCI_ROOT)
    assert parsed["0000:16:01.0"] == {"bridge": True, "redirect": True, "denied": False}
    assert parsed["0000:17:00.0"]["redirect"] is False
    assert parsed["0000:18:00.0"] == {"bridge": False, "redirect": None, "denied": False}
    assert ic.parse_lspci_acs(LSPCI_USER)["0000:16:01.0"]["denied"] is True


def test_relation():
    root, up, down = "0000:16:01.0", "0000:17:00.0", "0000:18:00.0"
    assert ic.relation([root, up, down], [root, up, down], 0, 0) == "pcie switch"
    assert ic.relation([root, up], [root], 0, 0) == "root port"
    assert ic.relation([root], ["0000:80:01.0"], 0, 0) == "same numa node"
    assert ic.relation([root], ["0000:80:01.0"], 0, 1) == "other numa node"
    assert ic.relation([root], ["0000:80:01.0"], -1, -1) == "unknown"


# --- a sysfs-like tree read through the live Host ---------------------------------------------------


def _write(root: Path, path: str, text: str) -> None:
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


def _interfaces(root: Path, *interfaces: tuple[str, str, str]) -> None:
    """Network interfaces under root/sys/class/net: (name, flags, operstate) each, as sysfs writes them."""
    for name, flags, operstate in interfaces:
        _write(root, f"/sys/class/net/{name}/flags", flags + "\n")
        _write(root, f"/sys/class/net/{name}/operstate", operstate + "\n")


def _pci(root: Path, bdf: str, vendor: str, cls: str, numa: int, parent: str = "") -> None:
    # Devices behind a bridge are subdirectories of its directory, as under /sys/devices/pci0000:16/...
    _write(root, f"/sys/bus/pci/devices/{bdf}/vendor", vendor + "\n")
    _write(root, f"/sys/bus/pci/devices/{bdf}/class", cls + "\n")
    _write(root, f"/sys/bus/pci/devices/{bdf}/numa_node", f"{numa}\n")
    if parent:
        (root / f"sys/bus/pci/devices/{parent}/{bdf}").mkdir(parents=True, exist_ok=True)


def hgx_tree(root: Path, uid: int = 1000) -> None:
    """Two GPUs, one behind the switch that also holds mlx5_0 (socket 0), one on socket 1 with no NIC."""
    _pci(root, "0000:16:01.0", "0x8086", "0x060400", 0)
    _pci(root, "0000:17:00.0", "0x1000", "0x060400", 0, parent="0000:16:01.0")
    _pci(root, "0000:18:00.0", "0x10de", "0x030200", 0, parent="0000:17:00.0")
    _pci(root, "0000:19:00.0", "0x15b3", "0x020700", 0, parent="0000:17:00.0")
    _pci(root, "0000:9a:00.0", "0x10de", "0x030200", 1)
    _pci(root, "0000:9b:00.0", "0x15b3", "0x020700", 1)
    port = "/sys/class/infiniband/mlx5_0/ports/1"
    _write(root, f"{port}/state", "4: ACTIVE\n")
    _write(root, f"{port}/phys_state", "5: LinkUp\n")
    _write(root, f"{port}/rate", "400 Gb/sec (4X NDR)\n")
    _write(root, f"{port}/link_layer", "InfiniBand\n")
    _write(
        root, "/sys/class/infiniband/mlx5_0/device/uevent", "DRIVER=mlx5_core\nPCI_SLOT_NAME=0000:19:00.0\n"
    )
    port = "/sys/class/infiniband/mlx5_1/ports/1"
    _write(root, f"{port}/state", "1: DOWN\n")
    _write(root, f"{port}/phys_state", "2: Polling\n")
    _write(root, f"{port}/rate", "10 Gb/sec (4X SDR)\n")
    _write(root, f"{port}/link_layer", "InfiniBand\n")
    _write(
        root, "/sys/class/infiniband/mlx5_1/device/uevent", "DRIVER=mlx5_core\nPCI_SLOT_NAME=0000:9b:00.0\n"
    )
    # flags and operstate as the helper machine's sysfs had them (2026-12-05): eth0 "0x1003" "up", lo "0x9"
    # "unknown", ifb0 "0x82" "down"; ib0 here as that eth0.
    _interfaces(root, ("eth0", "0x1003", "up"), ("ib0", "0x1003", "up"), ("lo", "0x9", "unknown"))
    _write(root, "/proc/modules", "mlx5_ib 495616 0 - Live 0x0\nib_core 479232 8 mlx5_ib, Live 0x0\n")
    _write(root, "/proc/cmdline", "BOOT_IMAGE=/vmlinuz-6.8.0 root=/dev/sda1 ro intel_iommu=on\n")
    _write(root, "/proc/self/status", f"Name:\tgpudoctor\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\n")


def _values(facts):
    return {k: (f.value if f.known else ("unknown", f.unknown)) for k, f in facts.items()}


def test_live_host_on_a_sysfs_tree(tmp_path):
    hgx_tree(tmp_path)
    facts = _values(ic.probe(RootedHost(tmp_path)))
    assert facts["interconnect.rdma.devices"] == ["mlx5_0", "mlx5_1"]
    assert facts["interconnect.ib_ports.count"] == 2
    assert facts["interconnect.ib_ports[0].name"] == "mlx5_0/1"
    assert facts["interconnect.ib_ports[0].rate_gbps"] == 400.0
    assert facts["interconnect.ib_ports[1].state"] == "DOWN"
    assert facts["interconnect.ib_ports[1].phys_state"] == "Polling"
    assert facts["interconnect.ib_ports_active"] == 1
    assert facts["interconnect.ib_rate_max_gbps"] == 400.0
    assert facts["interconnect.peermem_loaded"] is False
    assert facts["interconnect.iommu.mode"] == "translated"
    assert facts["interconnect.net_interfaces"] == ["eth0", "ib0", "lo"]
    assert facts["interconnect.net_running"] == ["eth0", "ib0", "lo"]
    assert facts["interconnect.memory_peers_nv_mem"] is False  # no /sys/kernel/mm/memory_peers
    # Not root: ACS is unknown with the reason, never "none found".
    assert facts["interconnect.acs.redirect_bridge_count"] == ("unknown", ic.NEEDS_ROOT)
    assert facts["interconnect.gpu_nics.count"] == 2
    assert facts["interconnect.gpu_nics[0].gpu"] == "0000:18:00.0"
    assert facts["interconnect.gpu_nics[0].nic"] == "mlx5_0"
    assert facts["interconnect.gpu_nics[0].relation"] == "pcie switch"
    assert facts["interconnect.gpu_nics[1].gpu"] == "0000:9a:00.0"
    assert facts["interconnect.gpu_nics[1].relation"] == "same numa node"
    assert facts["interconnect.gpu_nics[1].nic"] == "mlx5_1"


def test_snapshot_replays_what_the_live_probe_read(tmp_path):
    hgx_tree(tmp_path)
    recorder = RecordingHost(RootedHost(tmp_path))
    live = _values(ic.probe(recorder))
    replayed = _values(ic.probe(SnapshotHost(recorder.recording, source="test")))
    assert replayed == live
    assert recorder.recording.files["/sys/class/infiniband/mlx5_0/ports/1/rate"] == "400 Gb/sec (4X NDR)\n"


def test_no_rdma_stack_means_no_devices_not_unknown(tmp_path):
    _write(tmp_path, "/proc/modules", "nvidia 1 0 - Live 0x0\n")
    facts = _values(ic.probe(RootedHost(tmp_path)))
    assert facts["interconnect.rdma.device_count"] == 0
    assert facts["interconnect.ib_ports.count"] == 0
    assert facts["interconnect.ib_ports_active"] == 0


class NoRdmaListing(RootedHost):
    """The tree, with /sys/class/infiniband unreadable (a listing refused, as without permission)."""

    def listdir(self, path: str) -> list[str]:
        if path == ic.IB_ROOT:
            raise HostError(NO_PERMISSION, path)
        return super().listdir(path)


def test_unreadable_rdma_devices_leave_the_nearest_nic_unknown_not_none(tmp_path):
    hgx_tree(tmp_path)
    facts = _values(ic.probe(NoRdmaListing(tmp_path)))
    assert facts["interconnect.rdma.device_count"] == ("unknown", NO_PERMISSION)
    assert facts["interconnect.gpu_nics.count"] == ("unknown", NO_PERMISSION)
    # Without a GPU there is no GPU to be far from a NIC, whatever the listing said.
    for gpu in ("0000:18:00.0", "0000:9a:00.0"):
        (tmp_path / f"sys/bus/pci/devices/{gpu}/vendor").write_text("0x8086\n")
    assert _values(ic.probe(NoRdmaListing(tmp_path)))["interconnect.gpu_nics.count"] == 0


def _root_host(lspci: str, rc: int = 0):
    files = {
        "/proc/self/status": "Uid:\t0\t0\t0\t0\n",
        "/sys/bus/pci/devices/0000:16:01.0/vendor": "0x8086\n",
        "/sys/bus/pci/devices/0000:16:01.0/class": "0x060400\n",
        "/sys/bus/pci/devices/0000:17:00.0/vendor": "0x1000\n",
        "/sys/bus/pci/devices/0000:17:00.0/class": "0x060400\n",
        "/sys/bus/pci/devices/0000:18:00.0/vendor": "0x10de\n",
        "/sys/bus/pci/devices/0000:18:00.0/class": "0x030200\n",
    }
    dirs = {
        "/sys/class/infiniband": [],
        "/sys/bus/pci/devices": ["0000:16:01.0", "0000:17:00.0", "0000:18:00.0"],
        "/sys/bus/pci/devices/0000:16:01.0": ["0000:17:00.0", "class", "vendor"],
        "/sys/bus/pci/devices/0000:17:00.0": ["0000:18:00.0", "class", "vendor"],
    }
    commands = [{"argv": list(ic.LSPCI), "rc": rc, "stdout": lspci, "stderr": ""}]
    return fake_host(files=files, dirs=dirs, commands=commands)


def test_acs_as_root_names_the_redirecting_bridge_above_the_gpu():
    facts = _values(ic.probe(_root_host(LSPCI_ROOT)))
    assert facts["interconnect.acs.redirect_bridges"] == ["0000:16:01.0"]
    assert facts["interconnect.acs.redirect_bridge_count"] == 1


def test_acs_access_denied_or_failed_lspci_is_unknown():
    assert _values(ic.probe(_root_host(LSPCI_USER)))["interconnect.acs.redirect_bridge_count"] == (
        "unknown",
        ic.NEEDS_ROOT,
    )
    assert _values(ic.probe(_root_host("", rc=1)))["interconnect.acs.redirect_bridge_count"] == (
        "unknown",
        "lspci exited with status 1",
    )


# --- which interfaces are RUNNING (what NCCL's getifaddrs() walk keeps) -----------------------------------


@pytest.mark.parametrize(
    ("flags", "operstate", "expected"),
    [
        # The helper machine's /sys/class/net (2026-12-05): `ip -brief link` showed eth0 UP, lo UNKNOWN
        # <LOOPBACK,UP,LOWER_UP>, ifb0 DOWN.
        ("0x1003\n", "up\n", True),
        ("0x9\n", "unknown\n", True),
        ("0x82\n", "down\n", False),
        ("0x1003\n", "down\n", False),  # up, but no carrier
        ("x", "up", None),
    ],
)
def test_is_running(flags, operstate, expected):
    assert ic.is_running(flags, operstate) is expected


def test_only_loopback_and_docker_running(tmp_path):
    _interfaces(tmp_path, ("eth0", "0x1003", "down"), ("lo", "0x9", "unknown"), ("docker0", "0x1003", "up"))
    facts = _values(ic._net(RootedHost(tmp_path)))
    assert facts == {
        "interconnect.net_interfaces": ["docker0", "eth0", "lo"],
        "interconnect.net_running": ["docker0", "lo"],
    }


def test_unreadable_flags_make_running_unknown(tmp_path):
    (tmp_path / "sys/class/net/eth0").mkdir(parents=True)
    _write(tmp_path, "/sys/class/net/eth0/operstate", "up\n")
    (tmp_path / "sys/class/net/eth0/flags").mkdir()  # reading a directory fails: not "not found"
    facts = _values(ic._net(RootedHost(tmp_path)))
    assert facts["interconnect.net_running"][0] == "unknown"


def test_memory_peers_registration_is_read_by_existence(tmp_path):
    # NCCL (v2.22.3-1 net_ib.cc:614) only asks access(F_OK); the file's text is not read.
    _write(tmp_path, "/sys/kernel/mm/memory_peers/nv_mem_nc/version", "")
    assert ic._memory_peers(RootedHost(tmp_path)).value is True
