"""The real H200 capture, replayed end to end through the same probe code a live check runs."""

from __future__ import annotations

from gpudoctor.collect import collect
from gpudoctor.host.base import Deadline
from gpudoctor.pipeline.check import run_check
from gpudoctor.pipeline.verdict import exit_code

from conftest import H200


def test_h200_facts(h200_host):
    facts, statuses = collect(h200_host, Deadline(10))
    assert [s.status for s in statuses] == ["ok"] * len(statuses)
    v = facts.value
    assert v("driver.version") == "580.159.04"
    assert v("driver.kernel_module") == "open"
    assert v("driver.max_cuda") == "13.0"
    assert v("driver.userspace_version") == "580.159.04"
    assert v("gpus.count") == 1
    assert v("gpus[0].name") == "NVIDIA H200"
    assert v("gpus[0].compute_capability") == "9.0"
    assert v("gpus[0].architecture") == "Hopper"
    assert (v("gpus[0].pcie.gen_current"), v("gpus[0].pcie.width_current")) == (5, 16)
    assert (v("gpus[0].pcie.gen_max"), v("gpus[0].pcie.width_max")) == (5, 16)
    assert (v("gpus[0].pcie.sysfs_gen_current"), v("gpus[0].pcie.sysfs_width_current")) == (5, 16)
    assert v("gpus[0].clocks.event_reason_names") == ["GpuIdle"]
    assert v("gpus[0].uuid") == "GPU-00000000-0000-0000-0000-000000000000"
    torch = [i for i in range(facts.count("frameworks")) if v(f"frameworks[{i}].name") == "torch"][0]
    assert v(f"frameworks[{torch}].version") == "2.11.0"
    assert v(f"frameworks[{torch}].build") == "cuda"
    assert v(f"frameworks[{torch}].cuda") == "13.0"
    cudnn = {
        (v(f"cudnn.installs[{j}].version"), v(f"cudnn.installs[{j}].origin"))
        for j in range(facts.count("cudnn.installs"))
    }
    assert cudnn == {("9.19.0.56", "pip"), ("9.14.0", "system")}
    assert v("cudnn.distinct_versions") == 2
    assert v("host.hostname") == "redacted-host"
    assert v("system.machine") == "x86_64"  # the capture's uname -a
    assert facts.get("python.machine").unknown == "not recorded in snapshot"
    assert (v("knowledge.newer"), v("knowledge.newer_count")) == ([], 0)  # torch 2.11, driver R580
    # The capture predates the fabric probe: NVML's fabric call was not recorded, but the GPU's NVLink was
    # (link 0: NotSupported), and a GPU without NVLink is on no NVLink fabric. The one PCI device recorded is
    # the GPU: no NVSwitch. The services were not recorded.
    assert v("fabric.gpus[0].state") == "not supported"
    assert facts.get("fabric.gpus[0].state").source == "nvml:nvmlDeviceGetNvLinkState(0) (no NVLink)"
    assert (v("fabric.nvswitch_count"), v("fabric.nvswitch_system")) == (0, False)
    assert facts.get("fabric_manager.state").unknown == "not recorded in snapshot"
    assert facts.get("imex.installed").unknown == "not recorded in snapshot"


def test_h200_has_no_error_and_only_onnxruntime_warns(h200_host):
    result = run_check(h200_host, str(H200), Deadline(10), [])
    by_severity = {(f.severity, f.rule.id) for f in result.findings}
    assert by_severity == {("warning", "GD-FW-004"), ("info", "GD-CUDNN-002")}
    assert exit_code(result.findings, "error") == 0
    assert exit_code(result.findings, "warning") == 1
    # What the capture did not record is "could not be evaluated", each with that reason, never passed: PATH
    # and the compilers' --version (the build-toolchain rules), the kernel log, /sys/class/infiniband and
    # /proc/modules, the AER counters and the InfoROM, LD_PRELOAD and NVTX_INJECTION64_PATH, the GPU's uevent
    # and NVML's recovery action field.
    unknown = {r.rule.id: [n for n, _ in r.unknown_facts] for r in result.results if r.status == "unknown"}
    log = ["xid.count"]
    assert unknown == {
        "GD-BUILD-001": ["cuda.extension_nvcc.major"],
        "GD-CUDA-006": ["cuda.nvcc.on_path", "cuda.nvcc.version"],
        "GD-CUDA-007": ["cuda.host_compilers.count"],
        "GD-COUNTER-002": ["gpu_health[0].inforom_valid"],
        "GD-COUNTER-005": ["gpu_health[0].pcie.aer_fatal", "gpu_health[0].pcie.aer_nonfatal"],
        "GD-IB-001": ["interconnect.ib_ports.count"],
        "GD-IB-002": ["interconnect.ib_ports.count"],
        "GD-IB-003": ["interconnect.peermem_loaded", "interconnect.rdma.device_count"],
        "GD-IB-004": ["interconnect.gpu_nics.count"],
        "GD-IB-005": ["interconnect.gdr_path", "interconnect.ib_ports_active"],
        "GD-ENV-007": ["env.profiler_injection_count"],
        "GD-XID-001": log,
        "GD-XID-002": log,
        "GD-XID-003": log,
        "GD-XID-004": log,
        "GD-XID-005": ["sxid.count"],
        "GD-XID-006": ["sxid.count"],
        "GD-KLOG-001": ["kernel_log.status"],
        # Nor the GPU's uevent (which driver holds it): the capture ran in a container, where GD-GPU-005
        # judges the GPUs given to it (until 2026-12-05 it passed there unjudged). NVML's field values either.
        "GD-GPU-005": ["pci.missing_from_nvml_count"],
        "GD-GPU-006": ["gpus[0].recovery_action"],
        "GD-GPU-007": ["gpus[0].recovery_action"],
        "GD-GPU-008": ["gpus[0].recovery_action"],
        # Nor the interfaces' flags and operstate (which of them NCCL could bootstrap over).
        "GD-NCCL-002": ["interconnect.nccl_auto_fallback_count", "interconnect.nccl_auto_interface_count"],
        "GD-NCCL-003": ["interconnect.nccl_auto_fallback_count", "interconnect.nccl_auto_interface_count"],
        # the capture did not record the RDMA devices: NCCL's way out of the node cannot be predicted
        "GD-NCCL-005": ["interconnect.rdma.device_count"],
        # Neither /dev's listing nor /proc/self/status nor stat of /dev/shm was captured.
        "GD-SHM-002": ["system.shm.exists"],
        "GD-SHM-004": ["system.shm.exists", "system.shm.writable"],
        # Nor /proc/modules, modprobe.d and /lib/modules (the capture predates the kernel_modules probe).
        "GD-NOUVEAU-002": ["nouveau.blacklisted", "nouveau.loaded", "nvidia_module.for_running_kernel"],
    }
    reasons = {why for r in result.results if r.status == "unknown" for _, why in r.unknown_facts}
    assert reasons == {
        "not recorded in snapshot",
        "0000:00:06.0: not recorded in snapshot",
        "the kernel log could not be read: not recorded in snapshot",
        "/etc/modprobe.d: not recorded in snapshot",
        "/lib/modules: not recorded in snapshot",
    }
    passed = {r.rule.id for r in result.results if r.status == "passed"}
    assert {"GD-CUDA-003", "GD-CUDA-004", "GD-CUDA-005"} <= passed  # toolkit 13.0.88 on driver 580
    # No NVLink, no NVSwitch: every fabric rule passes, none is unknown (the facts above say why).
    fabric = {
        "GD-FABRIC-001",
        "GD-FABRIC-002",
        "GD-FABRIC-003",
        "GD-FABRIC-004",
        "GD-FABRIC-005",
        "GD-IMEX-001",
    }
    assert fabric <= passed


def test_h200_facts_of_the_wider_catalogue(h200_host):
    """The facts behind the multi-GPU, GPU-choice, monitoring and storage rules, as the capture gives them."""
    facts, _ = collect(h200_host, Deadline(10))
    v = facts.value
    assert (v("gpus[0].p2p.no_read"), v("gpus[0].p2p.no_read_count")) == ([], 0)  # one GPU: no peer
    assert (v("gpus[0].topology.cross_socket"), v("gpus[0].topology.cross_socket_count")) == ([], 0)
    # What NCCL's path prediction reads: its topology row is itself alone, no NVLink link reaches anything
    # (NVML answers NotSupported for link 0), and sysfs names no NUMA node in this VM (numa_node -1).
    assert (v("gpus[0].topology.levels"), v("gpus[0].nvlink.peers"), v("gpus[0].numa_node")) == (
        ["X"],
        [],
        -1,
    )
    assert v("pci.amd_gpus") == 0
    assert v("system.cpus_per_gpu") == 16.0
    assert v("python.rocm_frameworks") == 0
    torch = [i for i in range(facts.count("frameworks")) if v(f"frameworks[{i}].name") == "torch"][0]
    # torch.yaml pt-wheel-2.11: the capture's torch 2.11.0+cu130 release wheel carries no PTX
    assert v(f"frameworks[{torch}].arch_list") == ["7.5", "8.0", "8.6", "9.0", "10.0", "12.0"]
    assert (v(f"frameworks[{torch}].unsupported_gpus"), v(f"frameworks[{torch}].unsupported_ccs")) == ([], [])
    # The capture filtered `ldconfig -p` and never listed /usr/bin, so DCGM's absence cannot be told.
    assert facts.get("monitoring.dcgm.installed").unknown == "not recorded in snapshot"
    assert facts.get("storage.data_dir.fstype").unknown == "no --data-dir given"


def test_h200_data_dir_on_the_driver_mount(h200_host):
    result = run_check(h200_host, str(H200), Deadline(10), [], data_dir="/usr/local/nvidia/lib64")
    assert result.facts.value("storage.data_dir.mount_point") == "/usr/local/nvidia"
    assert result.facts.value("storage.data_dir.fstype") == "squashfs"
    assert "GD-STORAGE-001" not in {f.rule.id for f in result.findings}


def test_a_torch_newer_than_the_tables_is_said_once(h200_host):
    """The same host with a torch release past the torch table's last row: one info finding, GD-KB-001."""
    from gpudoctor.table_digest import newest_row

    newest = newest_row("torch")
    release = f"{newest.split('.')[0]}.{int(newest.split('.')[1]) + 1}.0"
    dump = h200_host.rec.python[h200_host.target_python()]
    (torch,) = [d for d in dump["distributions"] if d["name"] == "torch"]
    torch["version"] = f"{release}+cu130"
    text = torch["texts"]["torch/version.py"]
    torch["texts"]["torch/version.py"] = text.replace("2.11.0+cu130", f"{release}+cu130")
    result = run_check(h200_host, str(H200), Deadline(10), [])
    (finding,) = [f for f in result.findings if f.rule.id == "GD-KB-001"]
    assert finding.severity == "info"
    assert finding.message == (
        f"Newer than gpudoctor's knowledge tables: torch {release} (the torch table ends at {newest})."
    )
