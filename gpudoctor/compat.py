"""The one answer to "does this CUDA build run on this driver and these GPUs".

- CUDA versions: "12.8" -> (12, 8), and the wheel variant that names a build ("cu128").
- Driver floors: a CUDA X.Y application runs without conditions on a driver at or above the toolkit's own
  minimum (cuda_drivers.yaml rows); through minor-version compatibility on a driver at or above the CUDA
  X.x floor (minor_compat); otherwise not at all.
- The oldest GPU a CUDA major builds for: CUDA 13 toolkits and libraries have no code below compute
  capability 7.5 (cuda_drivers.yaml gpu_floors); a build of that major runs nothing on such a GPU, whatever
  its arch list says.
- Kernels against compute capability: native code (SASS) for X.y runs on a GPU of capability X.z, z >= y;
  embedded PTX for a capability at or below the GPU's is JIT-compiled by the driver, but only by a driver
  that meets the building toolkit's own minimum: under minor-version compatibility the driver cannot
  compile PTX from a newer toolkit.

derive.py (a torch build's unsupported GPUs) and the resolvers (which wheel to install) both ask here, so
the two cannot disagree. Pure functions over versions and the knowledge tables; no facts, no host.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Optional

from .knowledge import Knowledge, cuda_min_cc, min_driver_for_cuda, minor_compat_floor
from .knowledge.schema import cuda_variant

PTX = "+PTX"
__all__ = [
    "DriverVerdict", "covers", "cuda_variant", "driver_verdict", "jits_ptx", "kernel",
    "meets_toolkit_minimum", "ptx_for", "runs_on", "sm", "split_arch", "toolkit_supports_gpu",
    "version_tuple",
]  # fmt: skip


def version_tuple(version: object) -> tuple[int, ...]:
    """'535.183.01' -> (535, 183, 1); the numeric release part only ('12.8.1rc' -> (12, 8, 1))."""
    parts = []
    for piece in str(version).split("."):
        digits = re.match(r"\d+", piece)
        if not digits:
            break
        parts.append(int(digits.group()))
    return tuple(parts)


def sm(cc: str) -> str:
    """ "9.0" -> "sm_90"."""
    major, minor = version_tuple(cc)[:2]
    return f"sm_{major}{minor}"


# --- the driver -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DriverVerdict:
    runs: bool
    minor_compat: bool
    reason: str


def driver_verdict(cuda: str, driver: str, kb: Knowledge, avoid_minor_compat: bool = False) -> DriverVerdict:
    """Can `driver` run an application built with CUDA `cuda` ("12.4")?

    Yes without conditions at or above the toolkit's own minimum driver (cuda_drivers.yaml rows); yes through
    minor-version compatibility at or above the major's floor (minor_compat); otherwise no."""
    major = version_tuple(cuda)[0]
    try:
        floor = minor_compat_floor(major, kb)
        full = min_driver_for_cuda(cuda, kb)
    except LookupError as e:
        return DriverVerdict(False, False, f"CUDA {cuda}: {e}")
    if version_tuple(driver) >= version_tuple(full):
        return DriverVerdict(True, False, f"driver {driver} meets CUDA {cuda}'s minimum {full}")
    if version_tuple(driver) < version_tuple(floor):
        return DriverVerdict(
            False, False, f"CUDA {major}.x needs driver {floor} or newer; driver {driver} is older"
        )
    if avoid_minor_compat:
        return DriverVerdict(
            False,
            True,
            f"CUDA {cuda} needs driver {full} to run without minor-version compatibility; "
            f"driver {driver} is older",
        )
    return DriverVerdict(
        True,
        True,
        f"driver {driver} is below CUDA {cuda}'s minimum {full} but meets the CUDA {major}.x floor {floor}: "
        "it runs through minor-version compatibility (kernels built into the wheel run; PTX from the newer "
        "toolkit cannot be JIT-compiled by this driver: Triton and torch.compile kernels, for one)",
    )


def meets_toolkit_minimum(cuda: str, driver: str, kb: Knowledge) -> Optional[bool]:
    """Does `driver` run CUDA `cuda` without minor-version compatibility (at or above the toolkit's own
    minimum)? None when the table does not know that CUDA release."""
    try:
        full = min_driver_for_cuda(cuda, kb)
    except LookupError:
        return None
    return version_tuple(driver) >= version_tuple(full)


def jits_ptx(cuda: str, driver: str, kb: Knowledge) -> Optional[bool]:
    """Can `driver` JIT-compile PTX that CUDA `cuda` produced? Only at or above the toolkit's own minimum:
    under minor-version compatibility it cannot. None when the table does not know that CUDA release."""
    return meets_toolkit_minimum(cuda, driver, kb)


# --- the oldest GPU a CUDA major builds for ---------------------------------------------------------------


def toolkit_supports_gpu(cuda: str, cc: str, kb: Knowledge) -> Optional[bool]:
    """Can anything built with CUDA `cuda` ("13.0", or a major alone, "13") have code for a GPU of compute
    capability `cc`? False below the oldest capability that CUDA major builds for (CUDA 13: 7.5, so Maxwell,
    Pascal and Volta get nothing: nvcc refuses their targets and the CUDA 13 libraries carry no code for
    them); True at or above it; None where the table gives that major no floor."""
    floor = cuda_min_cc(version_tuple(cuda)[0], kb)
    if floor is None:
        return None
    return version_tuple(cc)[:2] >= version_tuple(floor)[:2]


# --- kernels against compute capability -----------------------------------------------------------------


def split_arch(arch: Iterable[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """TORCH_CUDA_ARCH_LIST entries ("8.6", "12.0+PTX") -> (capabilities with native code, capabilities
    whose PTX is embedded). An entry with +PTX has both."""
    entries = list(arch)
    native = tuple(a[: -len(PTX)] if a.endswith(PTX) else a for a in entries)
    ptx = tuple(a[: -len(PTX)] for a in entries if a.endswith(PTX))
    return native, ptx


def _fits(
    gpu: tuple[int, ...], entry: str, plain: Callable[[tuple[int, ...], tuple[int, ...]], bool]
) -> bool:
    """Whether code for `entry` runs on a GPU of capability `gpu`: an arch-specific entry ("9.0a") on that
    capability alone, a family one ("10.0f") on its major's GPUs of that minor and up (NVIDIA,
    "Family-Specific Architecture Features", CUDA 12.9), a plain one as `plain(entry, gpu)` says."""
    target = version_tuple(entry)[:2]
    if entry.endswith("a"):
        return target == gpu
    if entry.endswith("f"):
        return target[0] == gpu[0] and target[1] <= gpu[1]
    return plain(target, gpu)


def covers(cc: str, native: Iterable[str]) -> bool:
    """NVIDIA's binary compatibility: code for X.y runs on a GPU of capability X.z when z >= y (code for
    X.ya on X.y alone)."""
    gpu = version_tuple(cc)[:2]
    return any(_fits(gpu, str(a), lambda t, g: t[0] == g[0] and t[1] <= g[1]) for a in native)


def ptx_for(cc: str, ptx: Iterable[str]) -> Optional[str]:
    """The newest embedded PTX a GPU of capability `cc` can JIT-compile (PTX for a capability at or below
    its own; arch-specific PTX for its own capability alone, family PTX for its family), or None."""
    gpu = version_tuple(cc)[:2]
    fits = [p for p in ptx if _fits(gpu, str(p), lambda t, g: t <= g)]
    return max(fits, key=version_tuple) if fits else None


def kernel(cc: str, arch: Iterable[str], ptx_jit: Optional[bool] = True) -> Optional[str]:
    """Which code of a build for `arch` a GPU of capability `cc` runs: "native", "ptx" (JIT-compiled by a
    driver that can, `ptx_jit`), or None: none. "ptx?" when only PTX would do and `ptx_jit` is None
    (whether the driver can compile it is not known)."""
    native, ptx = split_arch(arch)
    if covers(cc, native):
        return "native"
    if ptx_for(cc, ptx) is None:
        return None
    return {True: "ptx", False: None, None: "ptx?"}[ptx_jit]


def runs_on(cc: str, arch: Iterable[str], ptx_jit: bool = True) -> bool:
    """Whether a build compiled for `arch` ("8.6", "12.0+PTX") has code a GPU of compute capability `cc`
    can run: native code (SASS) for the same major and a minor no higher, or PTX for a capability no higher
    when the driver can JIT-compile it (`ptx_jit`: see jits_ptx)."""
    return kernel(cc, arch, ptx_jit) is not None
