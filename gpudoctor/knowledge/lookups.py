"""Lookups over the knowledge tables. Each takes an optional Knowledge (tests pass their own); by default
the shipped tables."""

from __future__ import annotations

import re
from typing import Any, Optional, TypedDict

from .loading import knowledge
from .rows import (
    CudaToolkit,
    CudnnSupport,
    DriverBranch,
    GpuModel,
    HostCompilers,
    JaxPlugin,
    Knowledge,
    PcieGen,
    TensorflowBuild,
    TorchCompanions,
    TorchRelease,
    TorchVariant,
    XidCode,
    wheel_glibc,
    wheel_machine,
)
from .schema import _VARIANT, ROW_ATTRS

_CUDA_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?$")
_TORCH_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.\d+)?(?:[a-z]+\d*)?(?:\+[\w.]+)?$")
_TORCH_PATCH = re.compile(r"^(\d+\.\d+\.\d+)(?:\+[\w.]+)?$")


def cuda_toolkit(cuda: str, kb: Optional[Knowledge] = None) -> CudaToolkit:
    """The row for "12.6" (GA) or "12.6.3" (update 3). LookupError when the table has no such release."""
    kb = kb or knowledge()
    m = _CUDA_VERSION.match(cuda.strip())
    if not m:
        raise LookupError(f"not a CUDA version: {cuda!r}")
    major_minor, patch = f"{m.group(1)}.{m.group(2)}", m.group(3)
    if patch is not None:
        by_release = [t for t in kb.cuda_toolkits if t.release == cuda.strip()]
        if by_release:
            return by_release[0]
    update = int(patch) if patch is not None else 0
    for toolkit in kb.cuda_toolkits:
        if toolkit.cuda == major_minor and toolkit.update == update:
            return toolkit
    raise LookupError(f"CUDA {cuda} is not in the cuda_drivers table")


def min_driver_for_cuda(cuda: str, kb: Optional[Knowledge] = None) -> str:
    """Minimum Linux x86_64 driver for a CUDA toolkit release, without minor-version compatibility."""
    return cuda_toolkit(cuda, kb).driver


def minor_compat_floor(cuda_major: int, kb: Optional[Knowledge] = None) -> str:
    """Oldest driver that runs any CUDA <major>.x application through minor-version compatibility."""
    kb = kb or knowledge()
    for row in kb.minor_compat:
        if row.cuda_major == cuda_major:
            return row.driver
    raise LookupError(f"no minor-version compatibility floor for CUDA {cuda_major}.x")


def cuda_min_cc(cuda_major: int, kb: Optional[Knowledge] = None) -> Optional[str]:
    """The oldest compute capability CUDA <major>.x toolkits build for ("7.5" for CUDA 13), or None where
    the cuda_drivers table does not say."""
    kb = kb or knowledge()
    return next((row.min_cc for row in kb.cuda_gpu_floors if row.cuda_major == cuda_major), None)


def driver_branch(branch: int, kb: Optional[Knowledge] = None) -> Optional[DriverBranch]:
    kb = kb or knowledge()
    return next((b for b in kb.driver_branches if b.branch == branch), None)


def torch_release(version: str, kb: Optional[Knowledge] = None) -> TorchRelease:
    """The release "2.11", "2.11.0" or "2.11.0+cu128" belongs to. LookupError when not in the table."""
    kb = kb or knowledge()
    m = _TORCH_VERSION.match(version.strip())
    if not m:
        raise LookupError(f"not a torch version: {version!r}")
    major_minor = f"{m.group(1)}.{m.group(2)}"
    for release in kb.torch_releases:
        if release.version == major_minor:
            return release
    raise LookupError(f"torch {major_minor} is not in the torch table")


def torch_variants(version: str, kb: Optional[Knowledge] = None) -> tuple[TorchVariant, ...]:
    return torch_release(version, kb).variants


def torch_index_pins(version: str, kb: Optional[Knowledge] = None) -> Optional[dict[str, Optional[str]]]:
    """What PyTorch's own install command for torch `version` ("2.5.1") pins on its CUDA indexes
    (torch.yaml index_pins, from its previous-versions page): {"torchvision": "0.20.1", "torchaudio":
    "2.5.1"}, a companion it does not name as None. None when the table records no such command."""
    try:
        release = torch_release(version, kb)
    except LookupError:
        return None
    patch = version.split("+")[0].strip()
    for line in release.index_pins:
        pins = dict(p.split("==") for p in line.split())
        if pins["torch"] == patch:
            return {name: pins.get(name) for name in ("torchvision", "torchaudio")}
    return None


def torch_index_url(variant: str, kb: Optional[Knowledge] = None) -> str:
    """The wheel index of a variant (cu128, or cpu)."""
    kb = kb or knowledge()
    if variant != "cpu" and not _VARIANT.match(variant):
        raise ValueError(f"not a torch wheel variant: {variant!r}")
    return kb.torch_index_url.format(variant=variant)


class Companions(TypedDict):
    """What the default package index's metadata says goes with one torch patch release."""

    torch: str  # "2.0.1"
    torchvision: Optional[str]  # "0.15.2"; None: no torchvision release requires this torch
    torchaudio: Optional[str]  # "2.0.2"; None: no torchaudio release requires it (none from 2.12 on)
    requires: dict[str, Optional[str]]  # each companion's Requires-Dist on torch: "torch==2.0.1"
    platforms: list[str]  # machines torch has a Linux wheel for there: ["x86_64", "aarch64"]
    glibc: dict[str, str]  # machine -> the oldest glibc that wheel accepts ("2.28")
    cuda: dict[str, Optional[str]]  # machine -> CUDA runtime its metadata requires; None: a CPU build
    torchvision_platforms: list[str]  # machines torchvision has a wheel for
    torchaudio_platforms: list[str]


def torch_companions(version: str, kb: Optional[Knowledge] = None) -> Optional[Companions]:
    """The torchvision and torchaudio releases whose metadata on the default package index requires torch
    `version` ("2.0.1"; a local tag such as "+cu118" is dropped: the answer is the default index's), and
    the machines each has wheels for there; None for a release the table does not list (a minor alone,
    "2.0", is not a release: see torch_patches). LookupError for what is not a torch version."""
    row = _companion_row(version, kb)
    if row is None:
        return None
    return Companions(
        torch=row.torch,
        torchvision=row.torchvision,
        torchaudio=row.torchaudio,
        requires={"torchvision": row.torchvision_requires, "torchaudio": row.torchaudio_requires},
        platforms=list(row.machines),
        glibc={wheel_machine(t): wheel_glibc(t) for t in row.platforms},
        cuda={m: row.cuda(m) for m in row.machines},
        torchvision_platforms=[wheel_machine(t) for t in row.torchvision_platforms or ()],
        torchaudio_platforms=[wheel_machine(t) for t in row.torchaudio_platforms or ()],
    )


def torch_patches(version: str, kb: Optional[Knowledge] = None) -> tuple[str, ...]:
    """The patch releases of the minor "2.0" (or of the release "2.0.1", "2.0.1+cu118") the companions
    table lists, oldest first, newest last: ("2.0.0", "2.0.1"). Empty when it lists none."""
    kb = kb or knowledge()
    m = _TORCH_VERSION.match(version.strip())
    if not m:
        raise LookupError(f"not a torch version: {version!r}")
    minor = (int(m.group(1)), int(m.group(2)))
    rows = [r for r in kb.torch_companions if tuple(int(x) for x in r.torch.split(".")[:2]) == minor]
    return tuple(r.torch for r in sorted(rows, key=lambda r: tuple(int(x) for x in r.torch.split("."))))


def _companion_row(version: str, kb: Optional[Knowledge]) -> Optional[TorchCompanions]:
    kb = kb or knowledge()
    if not _TORCH_VERSION.match(version.strip()):
        raise LookupError(f"not a torch version: {version!r}")
    m = _TORCH_PATCH.match(version.strip())
    if not m:
        return None
    return next((r for r in kb.torch_companions if r.torch == m.group(1)), None)


def tensorflow_build(version: str, kb: Optional[Knowledge] = None) -> TensorflowBuild:
    kb = kb or knowledge()
    m = _TORCH_VERSION.match(version.strip())  # the same shape: X.Y[.Z][suffix]
    major_minor = f"{m.group(1)}.{m.group(2)}" if m else version
    for build in kb.tensorflow_builds:
        if build.version == major_minor:
            return build
    raise LookupError(f"tensorflow {version} is not in the tensorflow table")


def jax_plugin(cuda_major: int, kb: Optional[Knowledge] = None) -> Optional[JaxPlugin]:
    kb = kb or knowledge()
    return next((p for p in kb.jax_plugins if p.cuda_major == cuda_major), None)


def cudnn_builds(cudnn: str, kb: Optional[Knowledge] = None) -> tuple[CudnnSupport, ...]:
    """The support-matrix rows of a cuDNN release ("9.10.2"): one per build (CUDA range)."""
    kb = kb or knowledge()
    return tuple(row for row in kb.cudnn_support if row.cudnn == cudnn)


def gpu_by_name(nvml_name: str, kb: Optional[Knowledge] = None) -> Optional[GpuModel]:
    """The catalogue entry whose pattern matches the whole NVML product name, or None."""
    kb = kb or knowledge()
    name = nvml_name.strip()
    return next((gpu for gpu in kb.gpus if re.fullmatch(gpu.match, name)), None)


def wired_nvlinks(nvml_name: str, kb: Optional[Knowledge] = None) -> Optional[tuple[int, ...]]:
    """The NVML numbers of the NVLink links the GPU of that product name wires ("NVIDIA H100 PCIe": 0-3,
    6-9, 12-15), or None when the catalogue does not know the GPU or its wiring."""
    gpu = gpu_by_name(nvml_name, kb)
    return gpu.wired_links if gpu else None


def pcie_generation(sysfs_speed: str, kb: Optional[Knowledge] = None) -> Optional[PcieGen]:
    """The generation a sysfs link-speed string ("16.0 GT/s PCIe", or the older "16 GT/s") stands for."""
    kb = kb or knowledge()
    speed = sysfs_speed.strip()
    return next((g for g in kb.pcie if speed in (g.sysfs, g.sysfs_legacy)), None)


def host_compilers(cuda: str, kb: Optional[Knowledge] = None) -> HostCompilers:
    """The host compilers the nvcc of CUDA "12.4" (or "12.4.1", "12.4.131": only major.minor counts) accepts.
    LookupError when the table has no row for that release."""
    kb = kb or knowledge()
    m = _CUDA_VERSION.match(cuda.strip())
    if not m:
        raise LookupError(f"not a CUDA version: {cuda!r}")
    major_minor = f"{m.group(1)}.{m.group(2)}"
    for row in kb.host_compilers:
        if row.cuda == major_minor:
            return row
    raise LookupError(f"CUDA {major_minor} is not in the host_compilers table")


def newest_host_compiler(cuda: str, kind: str, kb: Optional[Knowledge] = None) -> int:
    """The newest major version of `kind` ("gcc" or "clang") that CUDA `cuda`'s nvcc accepts as its host
    compiler. LookupError when the table has no row for that release, or records no limit for that kind."""
    row = host_compilers(cuda, kb)
    newest = row.newest(kind)
    if newest is None:
        raise LookupError(f"the host_compilers table records no {kind} limit for CUDA {row.cuda}")
    return newest


def unverified_rows(kb: Optional[Knowledge] = None) -> list[Any]:
    """Rows no primary source confirmed, for docs and reports. A torch variant is listed on its own only
    when it has its own provenance; otherwise its release's row stands for it."""
    kb = kb or knowledge()
    out: list[Any] = []
    for attr in ROW_ATTRS:
        for row in getattr(kb, attr):
            if not row.verified:
                out.append(row)
            for variant in getattr(row, "variants", ()):
                if not variant.verified and (row.verified or variant.source != row.source):
                    out.append(variant)
    return out


def xid_code(code: int, kb: Optional[Knowledge] = None) -> Optional[XidCode]:
    """The Xid catalogue's row for an Xid code (xid.yaml); None when it does not list it."""
    kb = kb or knowledge()
    return next((row for row in kb.xid_codes if row.code == code), None)
