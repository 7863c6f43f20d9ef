"""Lookups over the knowledge tables. Each takes an optional Knowledge (tests pass their own); by default
the shipped tables."""

from __future__ import annotations

import re
from typing import Any, Optional

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
    TorchRelease,
    TorchVariant,
)
from .schema import _VARIANT, ROW_ATTRS

_CUDA_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?$")
_TORCH_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.\d+)?(?:[a-z]+\d*)?(?:\+[\w.]+)?$")


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


def torch_index_url(variant: str, kb: Optional[Knowledge] = None) -> str:
    """The wheel index of a variant (cu128, or cpu)."""
    kb = kb or knowledge()
    if variant != "cpu" and not _VARIANT.match(variant):
        raise ValueError(f"not a torch wheel variant: {variant!r}")
    return kb.torch_index_url.format(variant=variant)


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
