"""The typed rows of the knowledge tables: one frozen dataclass per table section, and Knowledge, all of them.

Every row carries its provenance: `source` (a source id), `also` (corroborating ids), `verified`,
`note`, `confirmed` (fields the sources state when the row as a whole is not verified), and its line.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Optional

# `note`, `confirmed` (fields the sources state when the row as a whole is not verified), and its line.


@dataclass(frozen=True)
class Source:
    id: str
    title: str
    url: str
    read: str


@dataclass(frozen=True)
class Table:
    name: str
    file: str
    checked: datetime.date
    sources: Mapping[str, Source]


@dataclass(frozen=True)
class Row:
    """What every table row carries besides its data: where it was read, and how sure that is."""

    label: str  # how messages name the row, e.g. "torch 2.5 cu124"
    source: str  # the id of the table's source that states it
    also: tuple[str, ...]  # corroborating sources
    verified: bool  # a primary source confirmed the whole row
    note: str  # why not, where not verified
    confirmed: tuple[str, ...]  # the fields a source states, where the whole row is not verified
    line: int


@dataclass(frozen=True)
class CudaToolkit(Row):
    cuda: str  # major.minor, e.g. "12.6"
    update: int  # 0 = GA
    release: Optional[str]  # only where it is not "<cuda>.<update>" (CUDA 11.0)
    driver: str  # minimum Linux x86_64 driver ("toolkit driver version")
    bundled_driver: Optional[str]  # the driver NVIDIA bundles, where it differs


@dataclass(frozen=True)
class MinorCompat(Row):
    cuda_major: int
    driver: str  # any CUDA <major>.x application runs, with limited features, on a driver >= this
    below_branch: Optional[int]  # the branch where minor-version compatibility ends (backward compat goes on)


@dataclass(frozen=True)
class DriverBranch(Row):
    branch: int
    designation: str  # LTSB | PB (production) | NFB (new feature)
    eol: str  # YYYY-MM
    max_cuda_major: Optional[int]


@dataclass(frozen=True)
class TorchVariant(Row):
    name: str  # cu126
    cuda: str  # 12.6
    cudnn: Optional[str]
    arch: tuple[str, ...]  # TORCH_CUDA_ARCH_LIST entries, e.g. ("7.5", ..., "12.0+PTX"); () when unknown
    experimental: bool

    @property
    def compiled_ccs(self) -> tuple[str, ...]:
        """Compute capabilities with native code (SASS), without the +PTX marker."""
        return tuple(a.replace("+PTX", "") for a in self.arch)

    @property
    def ptx_cc(self) -> Optional[str]:
        """The compute capability whose PTX is embedded (JIT-compiled for newer GPUs), if any."""
        ptx = [a[: -len("+PTX")] for a in self.arch if a.endswith("+PTX")]
        return ptx[-1] if ptx else None


@dataclass(frozen=True)
class TorchRelease(Row):
    version: str  # major.minor
    python_min: str
    python_max: str
    variants: tuple[TorchVariant, ...]
    pypi_default: Optional[str]  # the variant a plain install from the default index gets
    torchvision: str
    torchaudio: Optional[str]

    def variant(self, name: str) -> Optional[TorchVariant]:
        return next((v for v in self.variants if v.name == name), None)


@dataclass(frozen=True)
class TensorflowBuild(Row):
    version: str
    python_min: str
    python_max: str
    cudnn: str
    cuda: str


@dataclass(frozen=True)
class JaxPlugin(Row):
    extra: str  # the pip extra: jax[cuda13]
    cuda_major: int
    min_driver: str
    min_cc: str


@dataclass(frozen=True)
class CudnnSupport(Row):
    cudnn: str
    cuda_major: int
    cuda_min: str
    cuda_max: str
    driver: str
    ccs: tuple[str, ...]


@dataclass(frozen=True)
class GpuModel(Row):
    key: str
    name: str
    match: str  # regular expression for the whole NVML product name
    compute_capability: str
    architecture: Optional[str]
    memory_gb: Optional[float]
    memory_bandwidth_gbs: Optional[float]
    pcie_gen: Optional[int]
    pcie_width: Optional[int]
    nvlink_gen: Optional[int]
    nvlink_gbs: Optional[float]
    bf16_tflops: Optional[float]
    fp16_tflops: Optional[float]
    fp8: Optional[bool]
    mig_max_instances: Optional[int]
    mig_min_driver: Optional[str]
    segment: str  # data-center | workstation | consumer


@dataclass(frozen=True)
class PcieGen(Row):
    gen: int
    gts: str  # per-lane transfer rate, GT/s
    sysfs: str  # current_link_speed / max_link_speed as Linux writes it
    sysfs_legacy: Optional[str]  # the form kernels up to 5.6 wrote
    encoding: Optional[str]
    x16_gbs: Optional[float]  # per direction, x16, GB/s


@dataclass(frozen=True)
class HostCompilers(Row):
    cuda: str  # major.minor, e.g. "12.4"
    gcc_max: int  # the newest GCC major its nvcc accepts (crt/host_config.h: `#if __GNUC__ > N`)
    clang_max: Optional[int]  # the newest clang major (`__clang_major__ >= M`: M - 1); None: not recorded

    def newest(self, kind: str) -> Optional[int]:
        """The newest major of `kind` ("gcc" or "clang") this toolkit's nvcc accepts; None: not recorded."""
        return {"gcc": self.gcc_max, "clang": self.clang_max}.get(kind)


@dataclass(frozen=True)
class Knowledge:
    tables: Mapping[str, Table]
    cuda_toolkits: tuple[CudaToolkit, ...]
    minor_compat: tuple[MinorCompat, ...]
    driver_branches: tuple[DriverBranch, ...]
    torch_index_url: str
    torch_releases: tuple[TorchRelease, ...]
    tensorflow_builds: tuple[TensorflowBuild, ...]
    jax_plugins: tuple[JaxPlugin, ...]
    cudnn_support: tuple[CudnnSupport, ...]
    gpus: tuple[GpuModel, ...]
    pcie: tuple[PcieGen, ...]
    host_compilers: tuple[HostCompilers, ...]

    def rows(self) -> list[Any]:
        """Every row of every table (torch variants included), for cross-checks and listings."""
        out: list[Any] = []
        for attr in (f.name for f in fields(self) if f.name not in ("tables", "torch_index_url")):
            for row in getattr(self, attr):
                out.append(row)
                out.extend(getattr(row, "variants", ()))
        return out
