"""Typed, read-only access to the compatibility tables in rules/knowledge/*.yaml.

Each table file names the sources it was checked against (`sources`), the date it was checked (`checked`)
and, in every row, the source the row came from and whether a primary source confirmed it (`verified`,
with a `note` saying why not). This module validates the files strictly, reporting every problem at once
with file, line and row, and offers small lookups the fix-plan resolvers build on. It makes no decisions:
which wheel to recommend is the planner's business.

The package is split along those jobs: `rows` (the typed rows), `schema` (what a valid table is),
`loading` (parsing and validation), `cache` (the validated tables kept as JSON, so that later runs
neither parse nor validate them), `lookups` (the questions resolvers and derive ask). Tables load lazily,
once, from the installed package (gpudoctor/_rules/knowledge) or a source checkout.
"""

from __future__ import annotations

from .loading import KnowledgeError, knowledge, knowledge_dir, load_knowledge, parse_directory, parse_table
from .lookups import (
    Companions,
    cuda_min_cc,
    cuda_toolkit,
    cudnn_builds,
    driver_branch,
    gpu_by_name,
    host_compilers,
    jax_plugin,
    min_driver_for_cuda,
    minor_compat_floor,
    newest_host_compiler,
    pcie_generation,
    tensorflow_build,
    torch_companions,
    torch_index_pins,
    torch_index_url,
    torch_patches,
    torch_release,
    torch_variants,
    unverified_rows,
    wired_nvlinks,
    xid_code,
)
from .rows import (
    PEAK_DTYPES,
    CudaToolkit,
    CudnnSupport,
    DriverBranch,
    GpuModel,
    HostCompilers,
    JaxPlugin,
    Knowledge,
    MinorCompat,
    PcieGen,
    Row,
    Source,
    Table,
    TensorflowBuild,
    TorchCompanions,
    TorchRelease,
    TorchVariant,
    XidCode,
)
from .schema import KINDS, ROW_ATTRS, SECTIONS, TABLES, VARIANT_FIELDS, Section

__all__ = [
    "KINDS", "PEAK_DTYPES", "ROW_ATTRS", "SECTIONS", "TABLES", "VARIANT_FIELDS", "Companions", "CudaToolkit",
    "CudnnSupport", "DriverBranch", "GpuModel", "HostCompilers", "JaxPlugin", "Knowledge",
    "KnowledgeError", "MinorCompat", "PcieGen", "Row", "Section", "Source", "Table", "TensorflowBuild",
    "TorchCompanions", "TorchRelease", "TorchVariant", "cuda_min_cc", "cuda_toolkit", "cudnn_builds",
    "driver_branch",
    "gpu_by_name", "host_compilers", "jax_plugin", "knowledge", "knowledge_dir", "load_knowledge",
    "min_driver_for_cuda", "minor_compat_floor", "newest_host_compiler", "parse_directory", "parse_table",
    "pcie_generation", "tensorflow_build", "torch_companions", "torch_index_pins", "torch_index_url",
    "torch_patches", "torch_release", "torch_variants", "unverified_rows", "wired_nvlinks", "XidCode",
    "xid_code",
]  # fmt: skip
