"""The Facts tree: every fact a probe may produce, with its type, unit and meaning.

This table is the public contract that rules (shipped and user-written) are written against. Names are
dotted; list members are written `gpus[0].name` and documented as `gpus[].name`, and every list has a
`<list>.count` fact. A fact that could not be read is *unknown*, with a reason, never a guessed value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional

# The ML frameworks gpudoctor knows, in report order (the values of frameworks[].name).
FRAMEWORKS = ("torch", "tensorflow", "jax", "cupy", "onnxruntime")


@dataclass(frozen=True)
class Fact:
    """One fact: its value, where it came from, and, when it could not be read, why not."""

    value: Any = None
    source: str = ""
    unknown: Optional[str] = None

    @property
    def known(self) -> bool:
        return self.unknown is None


def known(value: Any, source: str) -> Fact:
    return Fact(value=value, source=source)


def unknown(reason: str, source: str = "") -> Fact:
    return Fact(value=None, source=source, unknown=reason)


@dataclass(frozen=True)
class FactSpec:
    name: str  # with [] for list members
    type: str  # str | int | float | bool | version | list[str] | list[int]
    unit: str  # "" when the value has none
    doc: str


def _s(name: str, type_: str, unit: str, doc: str) -> FactSpec:
    return FactSpec(name, type_, unit, doc)


SCHEMA: tuple[FactSpec, ...] = (
    # --- host -------------------------------------------------------------------------------------
    _s("host.kind", "str", "", "`live` or `snapshot`: where the raw data came from"),
    _s("host.hostname", "str", "", "the machine's hostname (redacted in snapshots unless --no-redact)"),
    # --- driver -----------------------------------------------------------------------------------
    _s(
        "driver.loaded", "bool", "", "the NVIDIA kernel module is loaded (/proc/driver/nvidia/version exists)"
    ),
    _s("driver.version", "version", "", "driver version as NVML reports it, else as the kernel module does"),
    _s(
        "driver.kernel_version",
        "version",
        "",
        "version of the loaded kernel module (/proc/driver/nvidia/version)",
    ),
    _s("driver.kernel_module", "str", "", "`open` (NVIDIA open GPU kernel modules) or `proprietary`"),
    _s("driver.userspace_version", "version", "", "version of libnvidia-ml.so the loader finds (file name)"),
    _s("driver.nvml_version", "str", "", "NVML library version (nvmlSystemGetNVMLVersion)"),
    _s("driver.nvml_status", "str", "", "`ok`, or the NVML error name nvmlInit failed with"),
    _s("driver.max_cuda", "version", "", "newest CUDA the driver supports (cuDriverGetVersion), e.g. 13.0"),
    _s("driver.max_cuda_major", "int", "", "major part of driver.max_cuda"),
    _s("driver.branch", "int", "", "driver branch: the major part of driver.version, e.g. 580"),
    _s("pci.nvidia_gpus", "int", "", "NVIDIA display/3D controllers on the PCI bus (sysfs)"),
    _s("pci.unbound", "int", "", "of those, how many have no kernel driver bound"),
    _s("pci.unbound_addresses", "list[str]", "", "PCI addresses of NVIDIA GPUs with no driver bound"),
    _s(
        "pci.nvidia_driver_addresses",
        "list[str]",
        "",
        "PCI addresses of NVIDIA GPUs the nvidia kernel module is bound to (their uevent's DRIVER=nvidia)",
    ),
    _s(
        "pci.device_node_addresses",
        "list[str]",
        "",
        "of pci.nvidia_driver_addresses, those whose /dev/nvidia<minor> is here (given to this container)",
    ),
    _s(
        "pci.missing_from_nvml",
        "list[str]",
        "",
        "derived: GPUs the nvidia module is bound to that NVML does not list (in a container: of those it "
        "was given, pci.device_node_addresses)",
    ),
    _s("pci.missing_from_nvml_count", "int", "", "derived: how many addresses are in pci.missing_from_nvml"),
    _s(
        "pci.amd_gpus",
        "int",
        "",
        "AMD (vendor 0x1002) display controllers and accelerators on the PCI bus (sysfs)",
    ),
    # --- GPUs -------------------------------------------------------------------------------------
    _s("gpus.count", "int", "", "GPUs NVML can see (0 without a working driver)"),
    _s("gpus[].index", "int", "", "NVML index"),
    _s("gpus[].name", "str", "", "product name, e.g. NVIDIA H200"),
    _s("gpus[].uuid", "str", "", "GPU UUID (redacted in snapshots unless --no-redact)"),
    _s(
        "gpus[].lost",
        "bool",
        "",
        "NVML answers GpuIsLost for this GPU: it fell off the bus or stopped responding (Xid 79)",
    ),
    _s(
        "gpus[].recovery_action",
        "str",
        "",
        "what NVML says the GPU needs (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION): none, gpu reset, node reboot,"
        " drain p2p, drain and reset, recover imex domain, bus reset, system reboot; `not reported` where"
        " the driver does not offer the field",
    ),
    _s("gpus[].bus_id", "str", "", "PCI address, domain:bus:device.function, e.g. 0000:00:06.0"),
    _s(
        "gpus[].brand",
        "str",
        "",
        "brand as NVIDIA_REQUIRE_* names it, in lower case: tesla, nvidia, geforcertx, ... (unknown: a brand "
        "the container runtime has no name for)",
    ),
    _s("gpus[].architecture", "str", "", "architecture name: Volta, Turing, Ampere, Ada, Hopper, Blackwell"),
    _s("gpus[].compute_capability", "version", "", "CUDA compute capability, e.g. 9.0"),
    _s("gpus[].memory.total_bytes", "int", "bytes", "framebuffer memory"),
    _s("gpus[].memory.used_bytes", "int", "bytes", "framebuffer memory in use"),
    _s("gpus[].pcie.gen_current", "int", "", "PCIe generation the link runs at now (drops when idle)"),
    _s("gpus[].pcie.gen_max", "int", "", "highest PCIe generation of GPU and slot together"),
    _s("gpus[].pcie.gen_gpu_max", "int", "", "highest PCIe generation the GPU supports"),
    _s("gpus[].pcie.width_current", "int", "lanes", "PCIe link width now"),
    _s("gpus[].pcie.width_max", "int", "lanes", "widest PCIe link of GPU and slot together"),
    _s("gpus[].pcie.replay_counter", "int", "", "PCIe replays (link-level retransmissions) since boot"),
    _s("gpus[].pcie.sysfs_gen_current", "int", "", "PCIe generation now, from sysfs current_link_speed"),
    _s("gpus[].pcie.sysfs_gen_max", "int", "", "PCIe generation maximum, from sysfs max_link_speed"),
    _s("gpus[].pcie.sysfs_width_current", "int", "lanes", "PCIe width now, from sysfs current_link_width"),
    _s("gpus[].pcie.sysfs_width_max", "int", "lanes", "PCIe width maximum, from sysfs max_link_width"),
    _s("gpus[].nvlink.links", "int", "", "NVLink links NVML reports a state for"),
    _s("gpus[].nvlink.links_up", "int", "", "links whose state is active"),
    _s("gpus[].nvlink.links_down", "int", "", "links whose state is inactive"),
    _s("gpus[].nvlink.down", "list[int]", "", "numbers of the inactive links"),
    _s("gpus[].nvlink.version", "int", "", "NVLink version of the first active link"),
    _s(
        "gpus[].nvlink.links_wired",
        "int",
        "",
        "derived: the NVLink links the GPU's model wires, as gpudoctor's GPU catalogue (rules/knowledge/"
        "gpus.yaml) knows them, no more than NVML reports (an H100 PCIe card: 12 of the 18 NVML numbers); "
        "for a model whose wiring it does not know, every link NVML reports (gpus[].nvlink.links)",
    ),
    _s(
        "gpus[].nvlink.links_down_wired",
        "int",
        "",
        "derived: wired links that are not active: links_wired less the active links (never below 0), so "
        "links a model leaves unwired by design are not counted; for a model whose wiring the catalogue does "
        "not know, every inactive link (gpus[].nvlink.links_down)",
    ),
    _s(
        "gpus[].nvlink.down_wired",
        "list[int]",
        "",
        "derived: numbers of the inactive links, less those the catalogue names as unwired on the model and "
        "those beyond its numbering; every inactive link (gpus[].nvlink.down) for a model it does not know",
    ),
    _s("gpus[].clocks.sm_mhz", "int", "MHz", "SM clock now"),
    _s("gpus[].clocks.sm_max_mhz", "int", "MHz", "highest SM clock"),
    _s("gpus[].clocks.mem_mhz", "int", "MHz", "memory clock now"),
    _s("gpus[].clocks.mem_max_mhz", "int", "MHz", "highest memory clock"),
    _s("gpus[].clocks.event_reasons", "int", "bitmask", "active clock event (throttle) reasons, nvml.h bits"),
    _s("gpus[].clocks.event_reason_names", "list[str]", "", "the active reasons by name, e.g. SwPowerCap"),
    _s("gpus[].utilization.gpu", "int", "%", "time a kernel ran over the last sample period"),
    _s("gpus[].utilization.memory", "int", "%", "time memory was read or written over the last period"),
    _s("gpus[].temperature.gpu_c", "int", "°C", "GPU core temperature"),
    _s("gpus[].temperature.slowdown_c", "int", "°C", "temperature at which the GPU slows down"),
    _s("gpus[].temperature.shutdown_c", "int", "°C", "temperature at which the GPU shuts down"),
    _s("gpus[].power.draw_w", "float", "W", "power draw"),
    _s("gpus[].power.limit_w", "float", "W", "power management limit in force"),
    _s("gpus[].power.default_limit_w", "float", "W", "default power management limit"),
    _s("gpus[].persistence_mode", "bool", "", "persistence mode is on"),
    _s("gpus[].compute_mode", "str", "", "Default, Exclusive_Thread, Prohibited or Exclusive_Process"),
    _s("gpus[].mig.current", "bool", "", "MIG mode is on"),
    _s("gpus[].mig.pending", "bool", "", "MIG mode after the next GPU reset"),
    _s("gpus[].ecc.enabled", "bool", "", "ECC is on"),
    _s("gpus[].ecc.pending", "bool", "", "ECC mode after the next reboot"),
    _s("gpus[].ecc.uncorrected_volatile", "int", "", "uncorrected ECC errors since the driver loaded"),
    _s("gpus[].ecc.uncorrected_aggregate", "int", "", "uncorrected ECC errors over the GPU's life"),
    _s("gpus[].ecc.corrected_volatile", "int", "", "corrected ECC errors since the driver loaded"),
    _s("gpus[].remapped_rows.correctable", "int", "", "rows remapped after correctable errors"),
    _s("gpus[].remapped_rows.uncorrectable", "int", "", "rows remapped after uncorrectable errors"),
    _s("gpus[].remapped_rows.pending", "bool", "", "a row remap waits for a GPU reset"),
    _s("gpus[].remapped_rows.failed", "bool", "", "a row remap failed"),
    _s("gpus[].virtualization_mode", "str", "", "None, Passthrough, vGPU, Host vGPU or Host vSGA"),
    _s(
        "gpus[].p2p.no_read",
        "list[int]",
        "",
        "other GPUs (NVML index) this one cannot read from peer-to-peer (nvmlDeviceGetP2PStatus READ not OK)",
    ),
    _s("gpus[].p2p.no_read_count", "int", "", "how many other GPUs are in gpus[].p2p.no_read"),
    _s(
        "gpus[].topology.cross_socket",
        "list[int]",
        "",
        "other GPUs whose PCIe path crosses the CPU socket interconnect (NVML topology level SYSTEM)",
    ),
    _s(
        "gpus[].topology.cross_socket_count",
        "int",
        "",
        "how many other GPUs are in gpus[].topology.cross_socket",
    ),
    # --- CUDA -------------------------------------------------------------------------------------
    _s("cuda.home", "str", "", "CUDA_HOME (or CUDA_PATH), else /usr/local/cuda when it exists"),
    _s("cuda.toolkit.version", "version", "", "CUDA toolkit version (version.json, else nvcc --version)"),
    _s("cuda.runtimes.count", "int", "", "copies of libcudart found"),
    _s("cuda.runtimes[].version", "version", "", "libcudart version"),
    _s("cuda.runtimes[].path", "str", "", "where it lives"),
    _s(
        "cuda.runtimes[].origin",
        "str",
        "",
        "`system` (loader path), `toolkit`, `pip` (nvidia-* wheel) or `conda`",
    ),
    _s("cuda.compat.version", "version", "", "forward-compatibility libcuda version ($CUDA_HOME/compat)"),
    _s("cuda.compat.active", "bool", "", "the compat libcuda's directory is on LD_LIBRARY_PATH"),
    _s(
        "cuda.home_source",
        "str",
        "",
        "what chose cuda.home: `CUDA_HOME`, `CUDA_PATH`, or `default` (neither is set: /usr/local/cuda)",
    ),
    _s(
        "cuda.home_exists",
        "bool",
        "",
        "the directory cuda.home names exists (false: CUDA_HOME or CUDA_PATH names a missing directory, or, "
        "with neither set, there is no /usr/local/cuda)",
    ),
    _s(
        "cuda.toolkit.found",
        "bool",
        "",
        "a CUDA toolkit was found (version.json or nvcc in cuda.home, else nvcc on PATH); false only when "
        "none of those places has one",
    ),
    _s(
        "cuda.toolkit.driver_support",
        "str",
        "",
        "derived: how the driver runs what this toolkit builds (by its major.minor): `full` (no newer than "
        "driver.max_cuda, or the driver meets the toolkit's own minimum), `minor_compat` (below that "
        "minimum but at or above the CUDA major's "
        "minor-version-compatibility floor: SASS runs, PTX the toolkit made cannot be JIT-compiled) or "
        "`none` (below that floor, or a newer CUDA major than the driver supports)",
    ),
    _s(
        "cuda.toolkit.min_cc",
        "version",
        "",
        "derived: the oldest compute capability the toolkit's CUDA major builds for (the cuda_drivers "
        "table's gpu_floors: 7.5 for CUDA 13)",
    ),
    _s(
        "cuda.toolkit.unsupported_gpus",
        "list[int]",
        "",
        "derived: GPUs (NVML index) below cuda.toolkit.min_cc, for which nothing the toolkit builds has code",
    ),
    _s("cuda.toolkit.unsupported_gpu_count", "int", "", "derived: how many GPUs are in unsupported_gpus"),
    _s(
        "cuda.toolkit.unsupported_ccs",
        "list[str]",
        "",
        "derived: the distinct compute capabilities of the GPUs in cuda.toolkit.unsupported_gpus",
    ),
    _s("cuda.nvcc.on_path", "bool", "", "a PATH directory holds an nvcc (searched as the shell searches)"),
    _s("cuda.nvcc.path", "str", "", "the nvcc PATH finds, e.g. /usr/local/cuda-12.4/bin/nvcc"),
    _s("cuda.nvcc.version", "version", "", "that nvcc's version (nvcc --version, the V part), e.g. 12.4.131"),
    _s(
        "cuda.nvcc.home_version",
        "version",
        "",
        "the version of the nvcc in cuda.home (<cuda.home>/bin/nvcc --version), the one CUDA extensions "
        "built by torch.utils.cpp_extension use",
    ),
    _s(
        "cuda.extension_nvcc.version",
        "version",
        "",
        "derived: the version of the nvcc torch.utils.cpp_extension builds CUDA extensions with, found as it "
        "finds it (cuda.extension_nvcc.found_by)",
    ),
    _s("cuda.extension_nvcc.major", "int", "", "derived: that nvcc's CUDA major"),
    _s(
        "cuda.extension_nvcc.found_by",
        "str",
        "",
        "derived: what names that nvcc: `CUDA_HOME`, `CUDA_PATH`, `PATH` (the nvcc a PATH search finds), or "
        "`/usr/local/cuda` (neither variable set, no nvcc on PATH)",
    ),
    _s(
        "cuda.host_compilers.count",
        "int",
        "",
        "host compilers a CUDA build may hand nvcc: nvcc's default (NVCC_CCBIN, else gcc on PATH) and those "
        "CUDAHOSTCXX, CC and CXX name",
    ),
    _s(
        "cuda.host_compilers[].variable",
        "str",
        "",
        "what names it: `NVCC_CCBIN`, `CUDAHOSTCXX` (CMake's CUDA host compiler), `CC` (passed to nvcc as "
        "-ccbin by torch.utils.cpp_extension), `CXX`, or `PATH` (gcc on PATH, nvcc's default)",
    ),
    _s("cuda.host_compilers[].command", "str", "", "the command as the variable gives it, e.g. gcc-13"),
    _s("cuda.host_compilers[].kind", "str", "", "`gcc`, `clang` or `other`, from what --version prints"),
    _s("cuda.host_compilers[].version", "version", "", "its version (--version), e.g. 13.2.0"),
    _s("cuda.host_compilers[].major", "int", "", "major part of cuda.host_compilers[].version"),
    _s(
        "cuda.host_compilers[].max_major",
        "int",
        "",
        "derived: the newest major of its kind that the nvcc of cuda.toolkit.version accepts (its "
        "crt/host_config.h check), from the host_compilers knowledge table",
    ),
    # --- cuDNN and NCCL ---------------------------------------------------------------------------
    _s("cudnn.installs.count", "int", "", "copies of cuDNN found"),
    _s("cudnn.installs[].version", "version", "", "cuDNN version"),
    _s("cudnn.installs[].path", "str", "", "where it lives"),
    _s("cudnn.installs[].origin", "str", "", "`system`, `pip` or `conda`"),
    _s("cudnn.versions", "list[str]", "", "the distinct cuDNN versions found, newest first"),
    _s("cudnn.distinct_versions", "int", "", "how many distinct cuDNN versions are installed"),
    _s(
        "cudnn.ld_library_path_version", "version", "", "version of the first cuDNN in an LD_LIBRARY_PATH dir"
    ),
    _s("nccl.installs.count", "int", "", "copies of NCCL found"),
    _s("nccl.installs[].version", "version", "", "NCCL version"),
    _s("nccl.installs[].path", "str", "", "where it lives"),
    _s("nccl.installs[].origin", "str", "", "`system`, `pip` or `conda`"),
    _s("nccl.versions", "list[str]", "", "the distinct NCCL versions found, newest first"),
    # --- Python environment -----------------------------------------------------------------------
    _s(
        "python.executable",
        "str",
        "",
        "the interpreter inspected: --python, else the active venv, else the active conda env, else "
        "python3 on PATH",
    ),
    _s(
        "python.selected_by",
        "str",
        "",
        "what chose that interpreter: `--python`, `VIRTUAL_ENV`, `CONDA_PREFIX`, `PATH` (python3 found "
        "there), `gpudoctor` (its own, when there is no other), or `command` (`gpudoctor run`: the "
        "interpreter the failed command runs)",
    ),
    _s("python.version", "version", "", "its version, e.g. 3.12.3"),
    _s("python.prefix", "str", "", "sys.prefix of that interpreter"),
    _s("python.venv", "bool", "", "it runs in a virtual environment"),
    _s("python.installer", "str", "", "what manages the environment: pip, uv, conda or poetry"),
    _s(
        "python.machine",
        "str",
        "",
        "the machine as that interpreter sees it (os.uname().machine in it): x86_64, aarch64, ...",
    ),
    _s("frameworks.count", "int", "", "ML frameworks installed (torch, tensorflow, jax, cupy, onnxruntime)"),
    _s("frameworks[].name", "str", "", "torch, tensorflow, jax, cupy or onnxruntime"),
    _s(
        "frameworks[].distribution",
        "str",
        "",
        "the installed distribution, e.g. cupy-cuda13x, onnxruntime-gpu",
    ),
    _s("frameworks[].version", "version", "", "installed version, without a local tag"),
    _s("frameworks[].build", "str", "", "`cpu`, `cuda` or `rocm`"),
    _s(
        "frameworks[].cuda",
        "version",
        "",
        "CUDA version the build targets, e.g. 13.0 (major only when only that is known)",
    ),
    _s("frameworks[].cuda_major", "int", "", "major part of frameworks[].cuda"),
    _s("frameworks[].cudnn", "version", "", "cuDNN version the build pins or bundles"),
    _s("frameworks[].rocm", "version", "", "ROCm version of a rocm build"),
    _s(
        "frameworks[].arch_list",
        "list[str]",
        "",
        "derived: compute capabilities a torch CUDA build is compiled for (TORCH_CUDA_ARCH_LIST, +PTX: "
        "embedded PTX): as the imported torch reports them (runtime.torch.arch_list, with --deep), else from "
        "the knowledge table by version and CUDA variant",
    ),
    _s(
        "frameworks[].unsupported_gpus",
        "list[int]",
        "",
        "derived: GPUs (NVML index) the build has neither native code nor usable PTX for",
    ),
    _s("frameworks[].unsupported_gpu_count", "int", "", "derived: how many GPUs are in unsupported_gpus"),
    _s(
        "frameworks[].unsupported_ccs",
        "list[str]",
        "",
        "derived: the distinct compute capabilities of the GPUs in unsupported_gpus",
    ),
    _s(
        "frameworks[].cuda_min_cc",
        "version",
        "",
        "derived: the oldest compute capability the CUDA major of a CUDA build builds for (7.5 for CUDA 13)",
    ),
    _s(
        "frameworks[].cuda_unsupported_gpus",
        "list[int]",
        "",
        "derived: GPUs (NVML index) below frameworks[].cuda_min_cc, which no build of that CUDA major serves",
    ),
    _s(
        "frameworks[].cuda_unsupported_gpu_count",
        "int",
        "",
        "derived: how many GPUs are in cuda_unsupported_gpus",
    ),
    _s(
        "frameworks[].cuda_unsupported_ccs",
        "list[str]",
        "",
        "derived: the distinct compute capabilities of the GPUs in cuda_unsupported_gpus",
    ),
    _s("python.rocm_frameworks", "int", "", "derived: how many installed frameworks are ROCm builds"),
    # --- CUDA extensions (check --deep): shared libraries with GPU code of their own, built for torch ----
    _s(
        "extensions.count",
        "int",
        "",
        "CUDA extensions (check --deep): shared libraries of the distributions that depend on torch "
        "(flash-attn, xformers, torchvision's _C, ...) that carry GPU code of their own (an .nv_fatbin "
        "section); 0 without torch; editable installs, whose RECORD lists no library, are not seen",
    ),
    _s("extensions[].distribution", "str", "", "the distribution that installed it, e.g. flash-attn"),
    _s("extensions[].version", "str", "", "that distribution's version, e.g. 2.8.3"),
    _s("extensions[].file", "str", "", "the shared library, e.g. .../site-packages/flash_attn_2_cuda.so"),
    _s(
        "extensions[].arch",
        "list[str]",
        "",
        "the GPU code it carries, in torch.cuda.get_arch_list()'s form: sm_XY machine code (SASS) for "
        "compute capability X.Y (sm_90a: for 9.0 alone; sm_100f: for the 10.x family), compute_XY PTX the "
        "driver can compile for X.Y and newer",
    ),
    _s(
        "extensions[].unsupported_gpus",
        "list[int]",
        "",
        "derived: GPUs (NVML index) it has neither machine code nor PTX the driver can compile for (the "
        "PTX judged as made by the CUDA of the installed torch: torch.utils.cpp_extension builds with that "
        "major)",
    ),
    _s("extensions[].unsupported_gpu_count", "int", "", "derived: how many GPUs are in unsupported_gpus"),
    _s(
        "extensions[].unsupported_ccs",
        "list[str]",
        "",
        "derived: the distinct compute capabilities of the GPUs in unsupported_gpus",
    ),
    _s(
        "extensions[].torch_covers",
        "bool",
        "",
        "derived: the installed torch build has code for every GPU in unsupported_gpus "
        "(frameworks[].unsupported_gpus)",
    ),
    _s(
        "extensions[].rebuild_arch",
        "str",
        "",
        "derived: TORCH_CUDA_ARCH_LIST for a rebuild that runs on every GPU here: their distinct compute "
        "capabilities, e.g. 8.0;9.0",
    ),
    _s("python.ctranslate2", "version", "", "installed version of ctranslate2 (unknown: not installed)"),
    _s(
        "python.faster_whisper",
        "version",
        "",
        "installed version of faster-whisper, which runs Whisper (convolutions) on CTranslate2",
    ),
    _s(
        "cuda_libs.loader_sonames",
        "list[str]",
        "",
        "CUDA sonames dlopen finds by name: libcublas, libcublasLt, libcudnn, libcufft, libcurand and "
        "libcudart files in LD_LIBRARY_PATH directories, the loader cache (ldconfig -p) and a conda "
        "environment's lib directory (its packages' RPATH)",
    ),
    _s(
        "cuda_libs.wheel_sonames",
        "list[str]",
        "",
        "those sonames shipped by the nvidia-* wheels of the inspected environment (found by dlopen only "
        "once something loads them by path, e.g. import torch, or LD_LIBRARY_PATH names the wheel directory)",
    ),
    _s(
        "cuda_libs.consumers.count",
        "int",
        "",
        "derived: runtimes installed that dlopen CUDA libraries by soname (onnxruntime-gpu, ctranslate2)",
    ),
    _s("cuda_libs.consumers[].name", "str", "", "derived: onnxruntime-gpu or ctranslate2"),
    _s("cuda_libs.consumers[].version", "version", "", "derived: its installed version"),
    _s("cuda_libs.consumers[].cuda_major", "int", "", "derived: the CUDA major its build loads libraries of"),
    _s(
        "cuda_libs.consumers[].needs",
        "list[str]",
        "",
        "derived: the sonames it loads (gpudoctor/cuda_consumers.py, from each runtime's own sources)",
    ),
    _s("cuda_libs.consumers[].missing", "list[str]", "", "derived: needed sonames found nowhere here"),
    _s("cuda_libs.consumers[].missing_count", "int", "", "derived: how many sonames are in missing"),
    _s(
        "cuda_libs.consumers[].wheel_only",
        "list[str]",
        "",
        "derived: needed sonames only nvidia-* wheels hold (dlopen by name does not find them)",
    ),
    _s("cuda_libs.consumers[].wheel_only_count", "int", "", "derived: how many sonames are in wheel_only"),
    # --- system and container ---------------------------------------------------------------------
    _s("system.os", "str", "", "distribution name and version, e.g. Ubuntu 24.04.1 LTS"),
    _s("system.os_id", "str", "", "os-release ID, e.g. ubuntu"),
    _s("system.os_version", "version", "", "os-release VERSION_ID, e.g. 24.04"),
    _s("system.kernel", "str", "", "kernel release"),
    _s(
        "system.machine",
        "str",
        "",
        "the machine as the kernel reports it (`uname -m`): x86_64, aarch64, ... (the kernel.arch sysctl, "
        "else `uname -m`)",
    ),
    _s("system.glibc", "version", "", "glibc version of the inspected interpreter"),
    _s("system.cpus", "int", "", "online CPUs"),
    _s(
        "system.cpus_per_gpu",
        "float",
        "",
        "derived: online CPUs per GPU NVML sees (system.cpus / gpus.count)",
    ),
    _s("system.memory_bytes", "int", "bytes", "total RAM (MemTotal)"),
    _s("system.memlock_bytes", "int", "bytes", "max locked memory of this process; -1 when unlimited"),
    _s("system.shm_bytes", "int", "bytes", "size of /dev/shm"),
    _s("system.shm.exists", "bool", "", "/dev lists shm (a directory, or a link to one such as /run/shm)"),
    _s(
        "system.shm.read_only",
        "bool",
        "",
        "the mount /dev/shm lies on (its own, else /dev's or /'s) is read-only (`ro` in /proc/self/mounts)",
    ),
    _s(
        "system.shm.mode",
        "str",
        "",
        "permission bits of /dev/shm in octal, e.g. 1777 (stat; read only for a user other than root)",
    ),
    _s("system.shm.uid", "int", "", "owner of /dev/shm (stat; read only for a user other than root)"),
    _s(
        "system.shm.writable",
        "bool",
        "",
        "this user can create files in /dev/shm: it exists, its mount is not read-only, and its mode lets "
        "this process's uid, gid or groups (/proc/self/status) write there (root: always); ACLs and "
        "security modules are not read",
    ),
    _s("system.virtualization", "str", "", "none, or the hypervisor seen: kvm, vmware, hyperv, xen, ..."),
    _s("env.ld_library_path", "str", "", "LD_LIBRARY_PATH"),
    _s("env.cuda_visible_devices", "str", "", "CUDA_VISIBLE_DEVICES"),
    # --- issue 11, part C "interconnect": RDMA ports, GPUDirect RDMA, ACS, IOMMU, nearest NIC, env pitfalls
    _s("interconnect.rdma.devices", "list[str]", "", "RDMA devices in /sys/class/infiniband, e.g. mlx5_0"),
    _s("interconnect.rdma.device_count", "int", "", "how many RDMA devices (InfiniBand or RoCE) there are"),
    _s("interconnect.ib_ports.count", "int", "", "RDMA ports (every port of every RDMA device)"),
    _s("interconnect.ib_ports[].name", "str", "", "device/port, e.g. mlx5_0/1"),
    _s(
        "interconnect.ib_ports[].state",
        "str",
        "",
        "logical port state: DOWN, INIT, ARMED, ACTIVE, ACTIVE_DEFER",
    ),
    _s(
        "interconnect.ib_ports[].phys_state",
        "str",
        "",
        "physical port state: Sleep, Polling, Disabled, PortConfigurationTraining, LinkUp, LinkErrorRecovery",
    ),
    _s(
        "interconnect.ib_ports[].rate_gbps",
        "float",
        "Gb/s",
        "the port's data rate (active width times speed)",
    ),
    _s("interconnect.ib_ports[].link_layer", "str", "", "`InfiniBand`, or `Ethernet` for RoCE"),
    _s("interconnect.ib_ports_active", "int", "", "RDMA ports whose state is ACTIVE"),
    _s("interconnect.ib_rate_max_gbps", "float", "Gb/s", "the fastest rate of an active RDMA port"),
    _s(
        "interconnect.peermem_loaded",
        "bool",
        "",
        "the GPUDirect RDMA kernel module is loaded (nvidia_peermem, or legacy nv_peer_mem; /proc/modules)",
    ),
    _s("interconnect.peermem_module", "str", "", "which of the two is loaded"),
    _s(
        "interconnect.memory_peers_nv_mem",
        "bool",
        "",
        "a peer-memory client is registered as nv_mem (/sys/kernel/mm/memory_peers/nv_mem{,_nc}/version): "
        "what NCCL before 2.23.4 looks for to use GPUDirect RDMA",
    ),
    _s(
        "interconnect.gdr_path",
        "str",
        "",
        "derived: how NCCL (nccl.newest) can reach GPU memory from the RDMA NIC: `nvidia-peermem` (a "
        "peer-memory module it detects), `dma-buf` (possible: NCCL >= 2.13.4, Linux >= 5.12, a driver for "
        "CUDA >= 11.7; the GPU and rdma-core must support it too) or `none`",
    ),
    _s(
        "interconnect.gdr_blockers",
        "list[str]",
        "",
        "derived: why each way is closed, when interconnect.gdr_path is none",
    ),
    _s("nccl.newest", "version", "", "derived: the newest NCCL installed (first of nccl.versions)"),
    _s(
        "system.kernel_release",
        "version",
        "",
        "derived: the numeric part of system.kernel, e.g. 6.8.0 of 6.8.0-90-generic",
    ),
    _s(
        "interconnect.iommu.mode",
        "str",
        "",
        "the IOMMU as the kernel command line sets it: `off`, `passthrough` (iommu=pt), `translated` "
        "(intel_iommu=on, amd_iommu=on, iommu.passthrough=0) or `default` (no IOMMU argument)",
    ),
    _s("interconnect.iommu.args", "list[str]", "", "the IOMMU arguments of /proc/cmdline"),
    _s("interconnect.net_interfaces", "list[str]", "", "network interface names (/sys/class/net)"),
    _s(
        "interconnect.net_running",
        "list[str]",
        "",
        "network interfaces that are up and operational (IFF_UP in /sys/class/net/*/flags, operstate up or "
        "unknown): those getifaddrs() reports RUNNING",
    ),
    _s(
        "interconnect.nccl_auto_interfaces",
        "list[str]",
        "",
        "derived: running interfaces NCCL's own choice takes before its fallbacks when NCCL_SOCKET_IFNAME is "
        "unset: names that start with neither docker, lo nor virbr (NCCL src/misc/socket.cc)",
    ),
    _s(
        "interconnect.nccl_auto_fallback",
        "list[str]",
        "",
        "derived: running interfaces NCCL falls back to when there is none of those, in its order: docker*, "
        "then lo*, then virbr*",
    ),
    _s(
        "interconnect.nccl_auto_interface_count",
        "int",
        "",
        "derived: how many nccl_auto_interfaces there are",
    ),
    _s("interconnect.nccl_auto_fallback_count", "int", "", "derived: how many nccl_auto_fallback there are"),
    _s(
        "interconnect.acs.redirect_bridges",
        "list[str]",
        "",
        "PCIe bridges above a GPU whose ACS control redirects peer-to-peer requests or completions "
        "(ReqRedir+ or CmpltRedir+ in lspci -vvv, read as root only)",
    ),
    _s(
        "interconnect.acs.redirect_bridge_count",
        "int",
        "",
        "how many are in interconnect.acs.redirect_bridges",
    ),
    _s("interconnect.gpu_nics.count", "int", "", "NVIDIA GPUs on the PCI bus, when there is an RDMA NIC"),
    _s("interconnect.gpu_nics[].gpu", "str", "", "the GPU's PCI address"),
    _s("interconnect.gpu_nics[].nic", "str", "", "the RDMA device nearest it"),
    _s(
        "interconnect.gpu_nics[].relation",
        "str",
        "",
        "how near: `pcie switch` (a switch above both), `root port`, `same numa node`, `other numa node`, or "
        "`unknown` (no NUMA information)",
    ),
    _s("interconnect.gpu_nics[].gpu_numa", "int", "", "the GPU's NUMA node (-1: none reported)"),
    _s("env.cuda_launch_blocking", "str", "", "CUDA_LAUNCH_BLOCKING (unknown: not set)"),
    _s("env.nccl_p2p_disable", "str", "", "NCCL_P2P_DISABLE"),
    _s("env.nccl_ib_disable", "str", "", "NCCL_IB_DISABLE"),
    _s("env.nccl_socket_ifname", "str", "", "NCCL_SOCKET_IFNAME"),
    _s(
        "env.cuda_injection64_path",
        "str",
        "",
        "CUDA_INJECTION64_PATH: a library CUDA loads into every process",
    ),
    _s(
        "env.nvtx_injection64_path", "str", "", "NVTX_INJECTION64_PATH: a library NVTX loads to record ranges"
    ),
    _s("env.ld_preload", "str", "", "LD_PRELOAD"),
    _s(
        "env.profiler_injection",
        "list[str]",
        "",
        "what loads a profiler into every CUDA process, as NAME=value: CUDA_INJECTION64_PATH, "
        "NVTX_INJECTION64_PATH, and LD_PRELOAD entries whose file name names CUPTI or an injection library",
    ),
    _s("env.profiler_injection_count", "int", "", "how many entries env.profiler_injection has"),
    _s(
        "env.cuda_visible_devices_unmatched",
        "list[str]",
        "",
        "derived: CUDA_VISIBLE_DEVICES entries, up to the one CUDA stops at, that name no GPU NVML sees: an "
        "index at or past gpus.count, a GPU-/MIG- identifier no GPU's UUID starts with, or anything else",
    ),
    _s(
        "env.cuda_visible_devices_unmatched_count",
        "int",
        "",
        "derived: how many are in env.cuda_visible_devices_unmatched",
    ),
    _s(
        "env.nccl_socket_ifname_matches",
        "int",
        "",
        "derived: network interfaces NCCL_SOCKET_IFNAME selects, by NCCL's rules (prefixes, ^ to exclude, = "
        "for exact names)",
    ),
    _s("container.detected", "bool", "", "running inside a container"),
    _s("container.runtime", "str", "", "docker, podman, kubernetes, containerd, lxc, or none"),
    _s("container.nvidia_require_cuda", "str", "", "NVIDIA_REQUIRE_CUDA as the image declares it"),
    _s(
        "container.nvidia_requires",
        "list[str]",
        "",
        "every NVIDIA_REQUIRE_* variable (JETPACK ones too) as NAME=value: NVIDIA_REQUIRE_CUDA=cuda>=13.0",
    ),
    _s("container.cuda_version", "str", "", "CUDA_VERSION as the image declares it, e.g. 13.0.2"),
    _s(
        "container.nvidia_disable_require",
        "bool",
        "",
        "NVIDIA_DISABLE_REQUIRE is true as Go's strconv.ParseBool reads it (1 t T TRUE true True); any other "
        "value leaves the checks on",
    ),
    _s("container.nvidia_visible_devices", "str", "", "NVIDIA_VISIBLE_DEVICES"),
    _s("container.nvidia_driver_capabilities", "str", "", "NVIDIA_DRIVER_CAPABILITIES"),
    _s(
        "container.toolkit_mode",
        "str",
        "",
        "the NVIDIA Container Toolkit's runtime mode ([nvidia-container-runtime] mode of "
        "/etc/nvidia-container-runtime/config.toml; auto when unset): legacy, cdi, jit-cdi, csv, auto",
    ),
    _s(
        "container.toolkit_disable_require",
        "bool",
        "",
        "disable-require in the toolkit's config.toml: the hook checks no requirement",
    ),
    _s(
        "container.require_verdict",
        "str",
        "",
        "derived: the NVIDIA container runtime's legacy check of the NVIDIA_REQUIRE_* requirements on this "
        "host's driver and GPUs: not required, disabled, not a GPU container, met, unmet, invalid",
    ),
    _s("container.require_failed", "str", "", "derived: the requirement that is refused, as NAME=value"),
    _s(
        "container.require_gpu",
        "str",
        "",
        "derived: the GPU it is refused on, with the brand and arch the runtime compares (its sixteen brand "
        "names since release 1.9.0: Tesla, Nvidia, NvidiaRTX, ...; any other brand is Unknown to it)",
    ),
    _s("container.require_error", "str", "", "derived: the runtime's error message"),
    _s(
        "container.require_enforcement",
        "str",
        "",
        "derived: which NVIDIA Container Toolkit mode refuses an unmet requirement, as this host shows it",
    ),
    # --- gpudoctor's own knowledge ---------------------------------------------------------------------
    _s(
        "knowledge.newer",
        "list[str]",
        "",
        "derived: what on this host is newer than gpudoctor's knowledge tables, e.g. `torch 2.16.0 (the "
        "torch table ends at 2.15)`, `driver 630.10 (the driver table ends at R620)`: an installed torch or "
        "tensorflow whose major.minor is past its table's newest release, a driver whose branch is past the "
        "newest in cuda_drivers; listed when known even if another version is unknown, unknown when nothing "
        "is known to be newer and a version is unknown",
    ),
    _s("knowledge.newer_count", "int", "", "derived: how many entries knowledge.newer has"),
    # --- monitoring and storage --------------------------------------------------------------------
    _s(
        "monitoring.dcgm.installed",
        "bool",
        "",
        "NVIDIA DCGM is installed (its library or nv-hostengine found)",
    ),
    _s("monitoring.dcgm.library", "str", "", "libdcgm.so.N as the loader cache lists it"),
    _s("monitoring.dcgm.hostengine", "str", "", "where nv-hostengine (DCGM's daemon) is installed"),
    _s("monitoring.dcgm.dcgmi", "str", "", "where dcgmi (DCGM's command-line client) is installed"),
    _s(
        "monitoring.dcgm.hostengine_listening",
        "bool",
        "",
        "a socket listens on DCGM's host engine port, 5555, where dcgmi connects by default (/proc/net/tcp, "
        "tcp6: this network namespace)",
    ),
    _s("storage.data_dir.path", "str", "", "the data directory `gpudoctor check --data-dir` names"),
    _s("storage.data_dir.mount_point", "str", "", "the mount the data directory lies on (longest prefix)"),
    _s(
        "storage.data_dir.fstype",
        "str",
        "",
        "that mount's filesystem type as /proc/self/mounts says: ext4, nfs4, ...",
    ),
    # --- runtime truth (check --deep): child processes that load libcuda and import each framework -------
    _s(
        "runtime.cuda.status",
        "str",
        "",
        "the CUDA driver smoke test: `ok` (cuInit and a context on every GPU), `failed` (a call returned an "
        "error: see runtime.cuda.result), `no library` (libcuda.so.1 not found or not loadable) or `crashed`",
    ),
    _s(
        "runtime.cuda.library",
        "str",
        "",
        "the libcuda file the loader chose, e.g. /usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05",
    ),
    _s(
        "runtime.cuda.driver_version",
        "version",
        "",
        "newest CUDA the loaded libcuda supports (cuDriverGetVersion), e.g. 13.0",
    ),
    _s(
        "runtime.cuda.device_count",
        "int",
        "",
        "GPUs CUDA sees (cuDeviceGetCount, after CUDA_VISIBLE_DEVICES)",
    ),
    _s("runtime.cuda.failed_devices", "list[int]", "", "CUDA devices on which no context could be opened"),
    _s("runtime.cuda.failed_device_count", "int", "", "how many devices are in runtime.cuda.failed_devices"),
    _s(
        "runtime.cuda.failed_call",
        "str",
        "",
        "the first driver call that failed, e.g. cuInit, cuDevicePrimaryCtxRetain",
    ),
    _s(
        "runtime.cuda.result",
        "str",
        "",
        "the CUresult of that call by name, e.g. CUDA_ERROR_SYSTEM_NOT_READY; CUDA_SUCCESS when none failed",
    ),
    _s("runtime.cuda.code", "int", "", "its number, e.g. 802; 0 when none failed"),
    _s(
        "runtime.cuda.error",
        "str",
        "",
        "what failed, in one line: the call, the device, the CUresult and the driver's message",
    ),
    _s(
        "runtime.python",
        "str",
        "",
        "the interpreter the frameworks were imported in (the one python.* describes)",
    ),
    _s(
        "runtime.import_failures",
        "list[str]",
        "",
        "the installed frameworks whose import failed or crashed, each as `name: Type: message`",
    ),
    _s("runtime.import_failure_count", "int", "", "how many are in runtime.import_failures"),
    _s(
        "runtime.torch.status",
        "str",
        "",
        "`ok` (imported), `import failed` or `crashed`; the same field exists for tensorflow, jax, cupy and "
        "onnxruntime",
    ),
    _s(
        "runtime.torch.error",
        "str",
        "",
        "the import error, or, when torch imported but CUDA is not available, the exact CUDA initialisation "
        "error (torch.cuda.init(), else its warning)",
    ),
    _s("runtime.torch.version", "str", "", "torch.__version__ as imported, e.g. 2.9.0+cu128"),
    _s(
        "runtime.torch.build",
        "str",
        "",
        "`cuda`, `rocm` or `cpu`: what the imported torch says it was built for",
    ),
    _s("runtime.torch.cuda", "version", "", "torch.version.cuda: the CUDA it was built with"),
    _s("runtime.torch.cuda_available", "bool", "", "torch.cuda.is_available()"),
    _s("runtime.torch.device_count", "int", "", "torch.cuda.device_count()"),
    _s(
        "runtime.torch.capabilities",
        "list[str]",
        "",
        'each CUDA device\'s compute capability as torch sees it, e.g. ["9.0"]',
    ),
    _s(
        "runtime.torch.arch_list",
        "list[str]",
        "",
        "torch.cuda.get_arch_list(): the architectures compiled in, e.g. sm_90, compute_90 (PTX)",
    ),
    _s(
        "runtime.torch.cudnn", "version", "", "the cuDNN torch really loaded (torch.backends.cudnn.version())"
    ),
    _s("runtime.torch.cudnn_path", "str", "", "the libcudnn file it was loaded from (/proc/self/maps)"),
    _s("runtime.torch.nccl", "version", "", "the NCCL version torch uses (torch.cuda.nccl.version())"),
    _s(
        "runtime.torch.unsupported_devices",
        "list[int]",
        "",
        "derived: CUDA devices whose compute capability runtime.torch.arch_list has no code for",
    ),
    _s(
        "runtime.torch.unsupported_device_count",
        "int",
        "",
        "derived: how many devices are in runtime.torch.unsupported_devices",
    ),
    _s(
        "runtime.torch.unsupported_ccs",
        "list[str]",
        "",
        "derived: the distinct compute capabilities of the devices in runtime.torch.unsupported_devices",
    ),
    _s(
        "runtime.torch.cudnn_pinned",
        "version",
        "",
        "derived: the cuDNN the installed torch wheel pins (frameworks[].cudnn), to the three parts torch "
        "reports, e.g. 9.10.2",
    ),
    _s("runtime.tensorflow.status", "str", "", "`ok`, `import failed` or `crashed`"),
    _s(
        "runtime.tensorflow.error",
        "str",
        "",
        "the import error, or, when it lists no GPU, the reason TensorFlow logged (e.g. Cannot dlopen some "
        "GPU libraries)",
    ),
    _s("runtime.tensorflow.version", "str", "", "tf.__version__ as imported"),
    _s("runtime.tensorflow.cuda_build", "bool", "", "tf.sysconfig.get_build_info()['is_cuda_build']"),
    _s("runtime.tensorflow.cuda", "version", "", "the CUDA version in its build info"),
    _s("runtime.tensorflow.cudnn", "version", "", "the cuDNN version in its build info"),
    _s("runtime.tensorflow.gpu_count", "int", "", "GPUs tf.config.list_physical_devices('GPU') lists"),
    _s("runtime.jax.status", "str", "", "`ok`, `import failed` or `crashed`"),
    _s(
        "runtime.jax.error",
        "str",
        "",
        "the import error, or, when JAX runs on the CPU, why (its fall-back message or the GPU backend's "
        "error)",
    ),
    _s("runtime.jax.version", "str", "", "jax.__version__ as imported"),
    _s("runtime.jax.platform", "str", "", "jax.default_backend(): `gpu`, `cuda`, `rocm`, `tpu` or `cpu`"),
    _s("runtime.jax.device_count", "int", "", "devices jax.devices() lists"),
    _s(
        "runtime.jax.cuda_plugin",
        "bool",
        "",
        "a JAX CUDA plugin (jax-cuda12-plugin, jax-cuda13-plugin) is importable",
    ),
    _s("runtime.jax.fell_back", "bool", "", "JAX runs on the CPU although a CUDA plugin is installed"),
    _s("runtime.cupy.status", "str", "", "`ok`, `import failed` or `crashed`"),
    _s(
        "runtime.cupy.error",
        "str",
        "",
        "the import error, or the CUDA error CuPy raised (e.g. getDeviceCount)",
    ),
    _s("runtime.cupy.version", "str", "", "cupy.__version__ as imported"),
    _s(
        "runtime.cupy.runtime_version",
        "version",
        "",
        "the CUDA runtime CuPy loaded (runtimeGetVersion), e.g. 12.8",
    ),
    _s(
        "runtime.cupy.driver_version",
        "version",
        "",
        "the driver's CUDA version as CuPy sees it (driverGetVersion)",
    ),
    _s("runtime.cupy.device_count", "int", "", "cupy.cuda.runtime.getDeviceCount()"),
    _s("runtime.onnxruntime.status", "str", "", "`ok`, `import failed` or `crashed`"),
    _s(
        "runtime.onnxruntime.error",
        "str",
        "",
        "the import error, or the error get_available_providers() raised",
    ),
    _s("runtime.onnxruntime.version", "str", "", "onnxruntime.__version__ as imported"),
    _s(
        "runtime.onnxruntime.device",
        "str",
        "",
        "onnxruntime.get_device(): `GPU` for a CUDA build, else `CPU`",
    ),
    _s(
        "runtime.onnxruntime.providers",
        "list[str]",
        "",
        "onnxruntime.get_available_providers(), e.g. CUDAExecutionProvider, CPUExecutionProvider",
    ),
    # --- kernel log (issue 11, part B "kernel-log": gpudoctor/probes/kernel_log.py) --------------------
    _s("kernel_log.status", "str", "", "`ok`, or why the kernel log could not be read: `no permission`, ..."),
    _s(
        "kernel_log.error",
        "str",
        "",
        "when it could not be read: what /dev/kmsg, dmesg and journalctl -k each answered, and what grants "
        "access; empty when it was read",
    ),
    _s("kernel_log.source", "str", "", "what answered: `/dev/kmsg`, `dmesg` or `journalctl -k`"),
    _s("kernel_log.window", "str", "", "the events judged: `since boot`, or `last N s` (check --since)"),
    _s("kernel_log.lines", "int", "", "kernel log lines read (the newest 50,000 at most)"),
    _s("kernel_log.truncated", "bool", "", "more lines than were kept: older events are not judged"),
    _s(
        "kernel_log.earliest_seconds",
        "float",
        "s",
        "time since boot of the oldest line read; above a few seconds, the ring buffer no longer reaches "
        "back to boot and older events are lost",
    ),
    _s("xid.count", "int", "", "distinct NVRM Xid events (by PCI address and code) in the window"),
    _s("xid[].code", "int", "", "the Xid code, e.g. 79"),
    _s("xid[].pci", "str", "", "the GPU's PCI address as domain:bus:device, e.g. 0000:3b:00"),
    _s("xid[].pid", "int", "", "the process the last event names (pid=), when it names one"),
    _s("xid[].process", "str", "", "that process's name (name=), when the line gives it"),
    _s("xid[].text", "str", "", "the last event's text after the code (and pid and name)"),
    _s("xid[].events", "int", "", "how many times this code was reported for this GPU in the window"),
    _s("xid[].first_seconds", "float", "s", "time since boot of the first of them"),
    _s("xid[].last_seconds", "float", "s", "time since boot of the last of them"),
    _s("xid[].age_seconds", "float", "s", "how long ago the last one was (/proc/uptime less last_seconds)"),
    _s(
        "xid[].gpu",
        "int",
        "",
        "derived: the NVML index of the GPU at that PCI address (gpus[].bus_id); unknown when NVML lists "
        "no GPU there (a GPU that fell off the bus)",
    ),
    _s(
        "xid[].where",
        "str",
        "",
        "derived: how reports name the GPU: `GPU 0 (PCI 0000:3b:00)`, or by PCI address alone when it is "
        "not among NVML's GPUs",
    ),
    _s(
        "xid[].catalogued", "bool", "", "derived: the Xid catalogue (rules/knowledge/xid.yaml) lists the code"
    ),
    _s("xid[].mnemonic", "str", "", "derived: NVIDIA's name for the code, e.g. ROBUST_CHANNEL_GPU_ECC_DBE"),
    _s("xid[].bucket", "str", "", "derived: NVIDIA's resolution bucket (immediate action), e.g. RESTART_BM"),
    _s(
        "xid[].category",
        "str",
        "",
        "derived: `hardware`, `driver`, `application` or `nvlink` (the catalogue)",
    ),
    _s(
        "xid[].action",
        "str",
        "",
        "derived: `none`, `restart_app`, `reset_gpu`, `reboot`, `drain_inspect`, `contact_support` or "
        "`follow_other` (the catalogue's reading of the bucket)",
    ),
    _s("xid[].action_text", "str", "", "derived: that action in words, with the command where there is one"),
    _s("sxid.count", "int", "", "distinct NVSwitch SXid events (by switch and code) in the window"),
    _s("sxid[].code", "int", "", "the SXid code, e.g. 12028"),
    _s("sxid[].device", "str", "", "the switch, e.g. nvidia-nvswitch0"),
    _s("sxid[].pci", "str", "", "the switch's PCI address as domain:bus:device"),
    _s("sxid[].fatal", "bool", "", "the line says Fatal (true) or Non-fatal (false)"),
    _s("sxid[].text", "str", "", "the last event's text after the code"),
    _s("sxid[].events", "int", "", "how many times this code was reported for this switch in the window"),
    _s("sxid[].first_seconds", "float", "s", "time since boot of the first of them"),
    _s("sxid[].last_seconds", "float", "s", "time since boot of the last of them"),
    _s("sxid[].age_seconds", "float", "s", "how long ago the last one was"),
    # --- part D (issue 11): processes holding GPUs, MIG devices, counters that predict failure ---------
    _s("gpu_processes.count", "int", "", "processes NVML lists on any GPU (compute and graphics)"),
    _s("gpu_processes[].gpu", "int", "", "NVML index of the GPU the process holds"),
    _s("gpu_processes[].pid", "int", "", "process ID as NVML reports it (the host's PID namespace)"),
    _s("gpu_processes[].name", "str", "", "the process's name (/proc/<pid>/comm)"),
    _s("gpu_processes[].type", "str", "", "`compute` or `graphics`: which NVML list named it"),
    _s("gpu_processes[].used_bytes", "int", "bytes", "GPU memory the process holds"),
    _s(
        "gpu_processes[].same_job",
        "bool",
        "",
        "the process belongs to the job gpudoctor runs in: it is gpudoctor or one of its ancestors, or its "
        "/proc/<pid>/cgroup names the Slurm job SLURM_JOB_ID names, or equals gpudoctor's own cgroup (not a "
        "login session's); unknown where /proc does not number processes as the host's PID namespace does "
        "(a container's own PID namespace), in which NVML's PIDs name no process",
    ),
    _s("gpu_mig.count", "int", "", "GPUs the MIG reading covers (every GPU NVML lists)"),
    _s("gpu_mig[].index", "int", "", "NVML index"),
    _s("gpu_mig[].name", "str", "", "product name"),
    _s("gpu_mig[].enabled", "bool", "", "MIG mode is on now"),
    _s(
        "gpu_mig[].devices",
        "int",
        "",
        "MIG devices (compute instances CUDA can use) on the GPU (nvmlDeviceGetMigDeviceHandleByIndex)",
    ),
    _s("gpu_health.count", "int", "", "GPUs the health counters cover (every GPU NVML lists)"),
    _s("gpu_health[].index", "int", "", "NVML index"),
    _s("gpu_health[].name", "str", "", "product name"),
    _s("gpu_health[].architecture", "str", "", "architecture name, as gpus[].architecture"),
    _s("gpu_health[].retired_pages.sbe", "int", "", "pages retired after multiple single-bit ECC errors"),
    _s("gpu_health[].retired_pages.dbe", "int", "", "pages retired after a double-bit ECC error"),
    _s("gpu_health[].retired_pages.pending", "bool", "", "a page retirement waits for a driver reload"),
    _s("gpu_health[].inforom_valid", "bool", "", "the InfoROM checksum is valid (nvmlDeviceValidateInforom)"),
    _s("gpu_health[].vbios_version", "str", "", "VBIOS version, e.g. 96.00.89.00.01"),
    _s(
        "gpu_health[].vbios_differs",
        "list[int]",
        "",
        "other GPUs of the same product name on this host whose VBIOS version differs",
    ),
    _s("gpu_health[].vbios_differs_count", "int", "", "how many GPUs are in gpu_health[].vbios_differs"),
    _s("gpu_health[].nvlink.replay_errors", "int", "", "NVLink data-link replays, all links, since boot"),
    _s("gpu_health[].nvlink.recovery_errors", "int", "", "NVLink data-link recoveries, all links"),
    _s("gpu_health[].nvlink.crc_flit_errors", "int", "", "NVLink flit CRC errors, all links"),
    _s("gpu_health[].nvlink.crc_data_errors", "int", "", "NVLink data CRC errors, all links"),
    _s("gpu_health[].nvlink.error_links", "list[int]", "", "links with any of those counters above 0"),
    _s("gpu_health[].pcie.aer_correctable", "int", "", "PCIe AER correctable errors (TOTAL_ERR_COR)"),
    _s("gpu_health[].pcie.aer_nonfatal", "int", "", "PCIe AER non-fatal errors (TOTAL_ERR_NONFATAL)"),
    _s("gpu_health[].pcie.aer_fatal", "int", "", "PCIe AER fatal errors (TOTAL_ERR_FATAL)"),
    # --- end of part D -------------------------------------------------------------------------------
    # --- issue 11, part 3 "fabric": NVSwitch systems' NVLink fabric, Fabric Manager, IMEX --------------
    _s("fabric.gpus.count", "int", "", "GPUs the fabric reading covers (every GPU NVML lists)"),
    _s("fabric.gpus[].index", "int", "", "NVML index"),
    _s(
        "fabric.gpus[].state",
        "str",
        "",
        "the GPU's NVLink fabric state (nvmlDeviceGetGpuFabricInfoV, else nvmlDeviceGetGpuFabricInfo): "
        "`not supported` (on no NVLink fabric NVML reports: a PCIe card, a GPU before Hopper, a GPU "
        "without NVLink, a driver without the call), `not started`, `in progress`, or `completed` "
        "(registered with the fabric: until then CUDA initialisation fails with CUDA_ERROR_SYSTEM_NOT_READY, "
        "802)",
    ),
    _s(
        "fabric.gpus[].status",
        "str",
        "",
        "the result of the GPU's fabric registration, as nvml.h names the nvmlReturn_t: `NVML_SUCCESS`, "
        "`NVML_ERROR_NOT_READY`, ...; set only once the state is completed",
    ),
    _s("fabric.gpus[].clique_id", "int", "", "the fabric clique the GPU belongs to; set once completed"),
    _s(
        "fabric.gpus[].health_mask",
        "int",
        "bitmask",
        "the fabric's healthMask (NVML_GPU_FABRIC_HEALTH_MASK_* fields; not in the unversioned structure)",
    ),
    _s(
        "fabric.gpus[].bandwidth",
        "str",
        "",
        "NVLink fabric bandwidth from the health mask: `full`, `degraded` or `not supported`",
    ),
    _s(
        "fabric.gpus[].health_summary",
        "str",
        "",
        "NVML's fabric health summary (v3 structure): `healthy`, `unhealthy`, `limited capacity` or "
        "`not supported`",
    ),
    _s(
        "fabric.nvswitch_count",
        "int",
        "",
        "NVSwitch devices on the PCI bus (sysfs: NVIDIA vendor 0x10de, class 0x0680), as on HGX/DGX boards",
    ),
    _s(
        "fabric.nvswitch_system",
        "bool",
        "",
        "NVSwitch devices on the PCI bus, or a GPU whose fabric state is not `not supported` (GB200 NVL72 "
        "compute trays, whose switches are elsewhere)",
    ),
    _s(
        "fabric_manager.installed",
        "bool",
        "",
        "systemd knows nvidia-fabricmanager.service (systemctl show: LoadState is not `not-found`)",
    ),
    _s(
        "fabric_manager.state",
        "str",
        "",
        "nvidia-fabricmanager.service: its ActiveState (`active`, `inactive`, `failed`, `activating`, ...), "
        "`not installed` or `masked`; unknown where systemd is not the service manager (a container)",
    ),
    _s(
        "fabric_manager.version",
        "version",
        "",
        "NVIDIA Fabric Manager's version (nv-fabricmanager --version), which must equal driver.version",
    ),
    _s(
        "imex.installed",
        "bool",
        "",
        "IMEX (multi-node NVLink memory sharing) is installed: /etc/nvidia-imex exists or systemd knows "
        "nvidia-imex.service",
    ),
    _s(
        "imex.state",
        "str",
        "",
        "nvidia-imex.service: its ActiveState, `not installed` or `masked`, as fabric_manager.state",
    ),
    # --- bench (only `gpudoctor bench` produces these; the bench rules in rules/bench/ read them) ------
    _s("bench.count", "int", "", "measurements of this bench run (one per test and GPU, pair or node)"),
    _s(
        "bench[].test",
        "str",
        "",
        "the test: matmul_fp32, matmul_tf32, matmul_bf16, matmul_fp16, matmul_fp8, h2d_pinned, h2d_pageable, "
        "d2h_pinned, d2h_pageable, d2d, p2p, allreduce",
    ),
    _s("bench[].kind", "str", "", "`matmul`, `host_copy`, `device_copy`, `p2p` or `allreduce`"),
    _s("bench[].label", "str", "", "the test as reports name it: `bf16 matmul`, `H2D pinned`"),
    _s("bench[].gpu", "int", "", "NVML index of the GPU measured (p2p: the source; allreduce: the first)"),
    _s("bench[].peer", "int", "", "p2p: NVML index of the destination GPU"),
    _s("bench[].gpus", "int", "", "GPUs taking part (2 for p2p, all of the node's for allreduce)"),
    _s("bench[].gpu_name", "str", "", "product name of the GPU measured, as gpus[].name"),
    _s("bench[].group", "str", "", "what the measurement compares with across a fleet: `<gpu_name> <test>`"),
    _s("bench[].status", "str", "", "`ok`, `failed` (the test raised: bench[].detail says what), `skipped`"),
    _s(
        "bench[].detail",
        "str",
        "",
        "sizes and iterations of a test that ran; the reason for one that did not",
    ),
    _s(
        "bench[].value",
        "float",
        "",
        "the result in bench[].unit: TFLOP/s for matmuls; GB/s (10^9 bytes a second) for copies, "
        "device-to-device counting bytes read and written, and all-reduce bus bandwidth as nccl-tests "
        "defines it",
    ),
    _s("bench[].unit", "str", "", "`TFLOP/s` or `GB/s`"),
    _s("bench[].expected", "float", "", "what the GPU should reach, from the GPU catalogue, in bench[].unit"),
    _s("bench[].expected_basis", "str", "", "what bench[].expected is: the catalogue figure and its row"),
    _s("bench[].ratio", "float", "", "bench[].value / bench[].expected, rounded to 3 places"),
    _s("bench[].percent", "int", "%", "bench[].ratio as a whole percentage"),
    _s("bench[].sm_mhz", "int", "MHz", "median SM clock sampled during the test"),
    _s("bench[].sm_max_mhz", "int", "MHz", "the GPU's highest SM clock (gpus[].clocks.sm_max_mhz)"),
    _s("bench[].sm_clock_ratio", "float", "", "bench[].sm_mhz / bench[].sm_max_mhz, rounded to 2 places"),
    _s("bench[].power_max_w", "float", "W", "highest power draw sampled during the test"),
    _s("bench[].power_limit_w", "float", "W", "power limit in force during the test (lowest sampled)"),
    _s(
        "bench[].default_limit_w",
        "float",
        "W",
        "the GPU's default power limit (gpus[].power.default_limit_w)",
    ),
    _s("bench[].temperature_max_c", "int", "°C", "highest GPU temperature sampled during the test"),
    _s(
        "bench[].event_reasons",
        "int",
        "bitmask",
        "every clock event (throttle) reason sampled during the test, ORed; nvml.h bits as gpus[].clocks",
    ),
    _s("bench[].event_reason_names", "list[str]", "", "those reasons by name, e.g. SwPowerCap"),
    _s("bench[].pcie_gen", "int", "", "host copies: lowest PCIe generation sampled during the copy"),
    _s("bench[].pcie_width", "int", "lanes", "host copies: narrowest PCIe width sampled during the copy"),
    _s("bench[].pcie_gen_expected", "int", "", "host copies: the PCIe generation the expectation assumes"),
    _s("bench[].pcie_width_expected", "int", "lanes", "host copies: the PCIe width the expectation assumes"),
    _s(
        "bench[].pinned_ratio",
        "float",
        "",
        "pageable copies: the same direction's pinned result divided by this one, rounded to 1 place",
    ),
    _s("bench[].peer_access", "bool", "", "p2p: the two GPUs can use peer access (cudaDeviceCanAccessPeer)"),
    _s("bench[].link", "str", "", "p2p and allreduce: `NVLink` or `PCIe`, the link the expectation assumes"),
    _s("bench[].baseline", "float", "", "the same test on the same GPU in the --baseline run"),
    _s("bench[].baseline_ratio", "float", "", "bench[].value / bench[].baseline, rounded to 3 places"),
    _s("bench[].baseline_percent", "int", "%", "how far below the baseline: (1 - baseline_ratio) x 100"),
    _s(
        "dcgm.count",
        "int",
        "",
        "results of DCGM's diagnostic (`bench --dcgm`: dcgmi diag -r LEVEL --json); unknown if not run",
    ),
    _s("dcgm[].test", "str", "", "the DCGM test, as dcgmi names it: memory, pcie, targeted_power, ..."),
    _s("dcgm[].category", "str", "", "DCGM's category of the test: Deployment, Hardware, Integration, ..."),
    _s("dcgm[].status", "str", "", "`pass`, `fail`, `warn` or `skip`; another DCGM status lower-cased"),
    _s("dcgm[].gpu", "int", "", "NVML index of the GPU the result is about; unknown for node-wide tests"),
    _s("dcgm[].where", "str", "", "`GPU N`, or `the node` for a result about no GPU in particular"),
    _s("dcgm[].message", "str", "", "the warning or information DCGM attached to the result"),
    # --- fleet records: BEGIN (only `gpudoctor fleet` produces these, gpudoctor/fleet/records.py, from the
    # nodes' reports; the rules of rules/fleet/peers.yaml read them). One block: move it as one. -----------
    _s("peers.count", "int", "", "fleet: distinct (counter, peer group, value) records of the fleet"),
    _s(
        "peers[].counter",
        "str",
        "",
        "fleet: what is compared: `ecc_corrected`, `pcie_replays`, `pcie_aer_correctable`, `nvlink_errors`, "
        "`xid_events` or `sm_clock_under_load` (docs/fleet.md lists the report fact each is read from)",
    ),
    _s(
        "peers[].group",
        "str",
        "",
        "fleet: the peers compared: the GPU model (gpus[].name); for a node-wide counter the node's GPU "
        "models; for a bench measurement its bench[].group (`<gpu_name> <test>`)",
    ),
    _s("peers[].value", "float", "", "fleet: the value these GPUs (or nodes) have"),
    _s("peers[].unit", "str", "", "fleet: what the value counts: `corrected ECC errors`, `MHz`, ..."),
    _s("peers[].count", "int", "", "fleet: how many GPUs (or nodes) of the group have this value"),
    _s("peers[].peers", "int", "", "fleet: how many known values the group has (this one among them)"),
    _s("peers[].median", "float", "", "fleet: the median of the group's values"),
    _s("peers[].mode", "float", "", "fleet: the group's most common value (of a tie, the lowest)"),
    _s("peers[].deviation", "float", "", "fleet: peers[].value - peers[].median"),
    _s(
        "peers[].ratio",
        "float",
        "",
        "fleet: peers[].value / peers[].median, to 3 places; unknown where the median is 0",
    ),
    _s(
        "peers[].where",
        "list[str]",
        "",
        "fleet: the GPUs (or nodes) that have the value, `gpu-node-04 GPU 5`, the first 20 and then "
        "`and N more`",
    ),
    # --- fleet records: END ----------------------------------------------------------------------------
)

SPECS: dict[str, FactSpec] = {s.name: s for s in SCHEMA}
LISTS: tuple[str, ...] = tuple(sorted({s.name.split("[]")[0] for s in SCHEMA if "[]" in s.name}))

_INDEX = re.compile(r"\[\d+\]")


def head(name: str) -> str:
    """A fact name's first part, the section a probe owns: `gpus[3].pcie.gen_current` -> `gpus`."""
    return re.split(r"[.\[]", name, maxsplit=1)[0]


def spec_name(path: str) -> str:
    """`gpus[3].pcie.gen_current` -> `gpus[].pcie.gen_current`."""
    return _INDEX.sub("[]", path)


def spec_for(path: str) -> Optional[FactSpec]:
    return SPECS.get(spec_name(path))


class Facts:
    """All facts of one check: a flat mapping from dotted name to Fact, read-only once built."""

    def __init__(
        self, items: Optional[dict[str, Fact]] = None, missing: Optional[dict[str, str]] = None
    ) -> None:
        self._items: dict[str, Fact] = dict(items or {})
        # Why facts under a prefix are absent: {"gpus": "timed out"} when the GPU probe did not finish.
        self.missing: dict[str, str] = dict(missing or {})

    def __contains__(self, path: str) -> bool:
        return path in self._items

    def __len__(self) -> int:
        return len(self._items)

    def get(self, path: str) -> Fact:
        """The fact, or an unknown one when no probe produced it."""
        fact = self._items.get(path)
        if fact is None:
            return unknown(self.missing.get(head(path), "not collected"))
        return fact

    def value(self, path: str, default: Any = None) -> Any:
        fact = self._items.get(path)
        return fact.value if fact is not None and fact.known else default

    def count(self, list_name: str) -> int:
        n = self.value(f"{list_name}.count", 0)
        return n if isinstance(n, int) else 0

    def items(self) -> list[tuple[str, Fact]]:
        return sorted(self._items.items(), key=lambda kv: _sort_key(kv[0]))

    def tree(self) -> dict:
        """Nested plain data for JSON: values, or {"unknown": reason} where a fact could not be read.

        Lists become JSON arrays; their `.count` facts are implied by the array's length. A list whose
        count is unknown is {"unknown": reason}, never an empty array (which would read as "none"); so is
        the whole section of a probe that crashed or ran out of time."""
        root: dict = {section: {"unknown": reason} for section, reason in self.missing.items()}
        for path, fact in self.items():
            parts = _split(path)
            is_count = parts[-1] == "count" and ".".join(map(str, parts[:-1])) in LISTS
            if is_count:
                parts, leaf = parts[:-1], ([] if fact.known else {"unknown": fact.unknown})
            else:
                leaf = fact.value if fact.known else {"unknown": fact.unknown}
            node: Any = root
            for part, nxt in zip(parts, parts[1:]):
                if isinstance(part, int):
                    while len(node) <= part:
                        node.append({})
                    node = node[part]
                else:
                    node = node.setdefault(part, [] if isinstance(nxt, int) else {})
            if not (is_count and parts[-1] in node):
                node[parts[-1]] = leaf
        return root


def _split(path: str) -> list:
    parts: list = []
    for piece in path.split("."):
        m = re.fullmatch(r"([a-z_0-9]+)\[(\d+)\]", piece)
        if m:
            parts += [m.group(1), int(m.group(2))]
        else:
            parts.append(piece)
    return parts


def _sort_key(path: str) -> list:
    return [(0, p, "") if isinstance(p, int) else (1, 0, p) for p in _split(path)]


def list_facts(name: str, members: list[dict[str, Fact]], source: str) -> dict[str, Fact]:
    """Flatten list members ({field: Fact}) into `name[i].field` facts plus `name.count`."""
    out: dict[str, Fact] = {f"{name}.count": known(len(members), source)}
    for i, member in enumerate(members):
        for field, fact in member.items():
            out[f"{name}[{i}].{field}"] = fact
    return out
