"""The schema of the knowledge tables: value kinds, each section's fields, and what makes a row unique."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable

from ..variants import cuda_variant  # noqa: F401 - re-exported: knowledge tables name variants with it
from .rows import (
    CudaGpuFloor,
    CudaToolkit,
    CudnnSupport,
    DriverBranch,
    GpuModel,
    HostCompilers,
    JaxPlugin,
    MinorCompat,
    OnnxruntimeGpu,
    PcieGen,
    TensorflowBuild,
    TorchCompanions,
    TorchRelease,
    XidCode,
)

_DOTTED = re.compile(r"^\d+(\.\d+)*$")
_MAJOR_MINOR = re.compile(r"^\d+\.\d+$")
_CC = re.compile(r"^\d+\.\d$")
_ARCH = re.compile(r"^\d+\.\d(\+PTX)?$")
_VARIANT = re.compile(r"^cu\d{3,}$")
_MONTH = re.compile(r"^\d{4}-(0[1-9]|1[0-2])$")
_WHEEL_PLATFORM = re.compile(r"^manylinux_\d+_\d+_(x86_64|aarch64)$")
_SPECIFIER = re.compile(r"^(==|!=|>=|<=|>|<)(\d+(?:\.\d+)*)$")
# One install command of PyTorch's for a release's CUDA indexes, as its previous-versions page writes it
_INDEX_PIN = re.compile(r"^torch==\d+\.\d+\.\d+( torchvision==\d+\.\d+\.\d+)?( torchaudio==\d+\.\d+\.\d+)?$")
_TORCH_REQUIREMENT = re.compile(r"^torch(==|!=|>=|<=|>|<)\d+(\.\d+)*(,(==|!=|>=|<=|>|<)\d+(\.\d+)*)*$")
# NVML numbers a GPU's NVLink links from 0, below NVML_NVLINK_MAX_LINKS (18 in nvml.h).
MAX_NVLINKS = 18


def _is_str(v: Any) -> bool:
    return isinstance(v, str) and bool(v.strip())


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _regex_ok(v: Any) -> bool:
    if not _is_str(v):
        return False
    try:
        re.compile(v)
    except re.error:
        return False
    return True


def _list_of(pattern: re.Pattern) -> Callable[[Any], bool]:
    return lambda v: (
        isinstance(v, list) and bool(v) and all(isinstance(x, str) and pattern.match(x) for x in v)
    )


def torch_requirement_admits(requirement: str, version: str) -> bool:
    """Whether "torch==2.0.1" or "torch>=2.14.0,<2.15" admits a plain release version. The grammar is the
    _TORCH_REQUIREMENT one (no wildcards, no local versions), where comparing versions is all a specifier
    does; packaging.specifiers is not imported for it (a check loads these tables)."""
    from packaging.version import Version

    v = Version(version)
    ops = {"==": v.__eq__, "!=": v.__ne__, ">=": v.__ge__, "<=": v.__le__, ">": v.__gt__, "<": v.__lt__}
    for spec in requirement[len("torch") :].split(","):
        m = _SPECIFIER.match(spec.strip())
        if not m or not ops[m.group(1)](Version(m.group(2))):
            return False
    return True


def _choice(*options: str) -> Callable[[Any], bool]:
    return lambda v: v in options


def _link_numbers(v: Any) -> bool:
    """NVML link numbers: distinct integers from 0 up, below MAX_NVLINKS."""
    return (
        isinstance(v, list)
        and bool(v)
        and all(_is_int(x) and 0 <= x < MAX_NVLINKS for x in v)
        and len(set(v)) == len(v)
    )


# kind -> (check, what the error message says was expected)
KINDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "str": (_is_str, "a non-empty string"),
    "int": (_is_int, "an integer"),
    "number": (_is_number, "a number"),
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "version": (lambda v: isinstance(v, str) and bool(_DOTTED.match(v)), 'a quoted version like "525.60.13"'),
    "major_minor": (
        lambda v: isinstance(v, str) and bool(_MAJOR_MINOR.match(v)),
        'a quoted "X.Y" like "2.10"',
    ),
    "cc": (lambda v: isinstance(v, str) and bool(_CC.match(v)), 'a quoted compute capability like "9.0"'),
    "cc_list": (_list_of(_CC), 'a list of compute capabilities like ["8.0", "9.0"]'),
    "major_minor_list": (_list_of(_MAJOR_MINOR), 'a list of quoted "X.Y" versions like ["3.13"]'),
    "arch_list": (_list_of(_ARCH), 'a list of arch entries like ["9.0", "12.0+PTX"]'),
    "variant": (lambda v: isinstance(v, str) and bool(_VARIANT.match(v)), "a CUDA wheel variant like cu128"),
    "regex": (_regex_ok, "a valid regular expression"),
    "month": (lambda v: isinstance(v, str) and bool(_MONTH.match(v)), 'a quoted "YYYY-MM"'),
    "designation": (_choice("LTSB", "PB", "NFB"), "one of LTSB, PB, NFB"),
    "segment": (
        _choice("data-center", "workstation", "consumer"),
        "one of data-center, workstation, consumer",
    ),
    "link_count": (
        lambda v: _is_int(v) and 0 <= v <= MAX_NVLINKS,
        f"a number of NVLink links from 0 to {MAX_NVLINKS}",
    ),
    "link_numbers": (_link_numbers, f"a list of distinct NVLink link numbers from 0 to {MAX_NVLINKS - 1}"),
    "ids": (lambda v: isinstance(v, list) and all(_is_str(x) for x in v), "a list of source ids"),
    "names": (lambda v: isinstance(v, list) and all(_is_str(x) for x in v), "a list of field names"),
    "variants": (lambda v: isinstance(v, list) and bool(v), "a list of CUDA wheel variants"),
    "wheel_platforms": (_list_of(_WHEEL_PLATFORM), "a list of wheel platform tags: manylinux_2_28_x86_64"),
    "torch_requirement": (
        lambda v: isinstance(v, str) and bool(_TORCH_REQUIREMENT.match(v)),
        'a requirement on torch like "torch==2.0.1" or "torch>=2.14.0"',
    ),
    "xid_category": (
        _choice("hardware", "driver", "application", "nvlink"),
        "one of hardware, driver, application, nvlink",
    ),
    "xid_action": (
        _choice(
            "none", "restart_app", "reset_gpu", "reboot", "drain_inspect", "contact_support", "follow_other"
        ),
        "one of none, restart_app, reset_gpu, reboot, drain_inspect, contact_support, follow_other",
    ),
    "index_pins": (
        _list_of(_INDEX_PIN),
        'a list of pins like "torch==2.5.1 torchvision==0.20.1 torchaudio==2.5.1"',
    ),
    "url_pattern": (lambda v: isinstance(v, str) and "{variant}" in v, "a URL pattern containing {variant}"),
}

PROVENANCE = {"source": ("str", True), "also": ("ids", False), "verified": ("bool", True),
              "note": ("str", False), "confirmed": ("names", False)}  # fmt: skip


@dataclass(frozen=True)
class Section:
    table: str
    name: str  # the key in the file
    attr: str  # the Knowledge attribute
    cls: type
    fields: Mapping[str, tuple[str, bool]]  # field -> (kind, required)
    key: tuple[str, ...]  # what makes a row unique
    label: str  # format string over the row's fields
    # What relates the fields of one row, as data rather than as special cases in the loader:
    ranges: tuple[tuple[str, str], ...] = ()  # (low, high): low is not above high
    in_major: tuple[tuple[str, str], ...] = ()  # (field, major field): the version is in that major
    # (link numbers, count): the numbers are set only with the count, and lie among the links NVML numbers,
    # which are the count plus the numbers themselves (links 0 to count + len(numbers) - 1)
    link_sets: tuple[tuple[str, str], ...] = ()
    variants: bool = False  # rows carry torch wheel variants (VARIANT_FIELDS), each checked and typed
    together: tuple[tuple[str, ...], ...] = ()  # fields set together or not at all
    admits: tuple[tuple[str, str], ...] = ()  # (requirement, version field): the requirement admits it
    # (list field, version field): each version in the list is above that field's, and listed once
    above: tuple[tuple[str, str], ...] = ()
    only_with: tuple[tuple[str, str], ...] = ()  # (field, flag): the field is set only where the flag is true


SECTIONS: tuple[Section, ...] = (
    Section("cuda_drivers", "rows", "cuda_toolkits", CudaToolkit,
            {"cuda": ("major_minor", True), "update": ("int", True), "release": ("version", False),
             "driver": ("version", True), "bundled_driver": ("version", False)},
            ("cuda", "update"), "CUDA {cuda} update {update}"),
    Section("cuda_drivers", "minor_compat", "minor_compat", MinorCompat,
            {"cuda_major": ("int", True), "driver": ("version", True), "below_branch": ("int", False)},
            ("cuda_major",), "CUDA {cuda_major}.x minor-version floor"),
    Section("cuda_drivers", "branches", "driver_branches", DriverBranch,
            {"branch": ("int", True), "designation": ("designation", True), "eol": ("month", True),
             "max_cuda_major": ("int", False)},
            ("branch",), "R{branch}"),
    Section("cuda_drivers", "gpu_floors", "cuda_gpu_floors", CudaGpuFloor,
            {"cuda_major": ("int", True), "min_cc": ("cc", True)},
            ("cuda_major",), "CUDA {cuda_major}.x oldest GPU"),
    Section("torch", "rows", "torch_releases", TorchRelease,
            {"version": ("major_minor", True), "python_min": ("major_minor", True),
             "python_max": ("major_minor", True), "variants": ("variants", True),
             "pypi_default": ("variant", False), "torchvision": ("major_minor", False),
             "torchaudio": ("major_minor", False), "python_experimental": ("major_minor_list", False),
             "aarch64_torch_tag": ("bool", False), "aarch64_companion_tag": ("bool", False),
             "index_pins": ("index_pins", False)},
            ("version",), "torch {version}", ranges=(("python_min", "python_max"),), variants=True,
            above=(("python_experimental", "python_max"),)),
    Section("torch_companions", "rows", "torch_companions", TorchCompanions,
            {"torch": ("version", True), "torchvision": ("version", False),
             "torchvision_requires": ("torch_requirement", False), "torchaudio": ("version", False),
             "torchaudio_requires": ("torch_requirement", False), "platforms": ("wheel_platforms", True),
             "cuda_x86_64": ("major_minor", False), "cuda_aarch64": ("major_minor", False),
             "torchvision_platforms": ("wheel_platforms", False),
             "torchaudio_platforms": ("wheel_platforms", False)},
            ("torch",), "torch {torch} companions",
            together=(("torchvision", "torchvision_requires", "torchvision_platforms"),
                      ("torchaudio", "torchaudio_requires", "torchaudio_platforms")),
            admits=(("torchvision_requires", "torch"), ("torchaudio_requires", "torch"))),
    Section("tensorflow", "rows", "tensorflow_builds", TensorflowBuild,
            {"version": ("major_minor", True), "python_min": ("major_minor", True),
             "python_max": ("major_minor", True), "cudnn": ("version", True), "cuda": ("major_minor", True)},
            ("version",), "tensorflow {version}", ranges=(("python_min", "python_max"),)),
    Section("jax", "rows", "jax_plugins", JaxPlugin,
            {"extra": ("str", True), "cuda_major": ("int", True), "min_driver": ("version", True),
             "min_cc": ("cc", True)},
            ("extra",), "jax[{extra}]"),
    Section("onnxruntime", "rows", "onnxruntime_gpu", OnnxruntimeGpu,
            {"version": ("version", True), "cuda_major": ("int", True), "cudnn_major": ("int", True),
             "extras": ("bool", True), "python_min": ("major_minor", False)},
            ("version",), "onnxruntime-gpu {version}"),
    Section("cudnn", "rows", "cudnn_support", CudnnSupport,
            {"cudnn": ("version", True), "cuda_major": ("int", True), "cuda_min": ("major_minor", True),
             "cuda_max": ("major_minor", True), "driver": ("version", True), "ccs": ("cc_list", True)},
            ("cudnn", "cuda_min", "cuda_max"), "cuDNN {cudnn} for CUDA {cuda_min}-{cuda_max}",
            ranges=(("cuda_min", "cuda_max"),), in_major=(("cuda_min", "cuda_major"),)),
    Section("gpus", "rows", "gpus", GpuModel,
            {"key": ("str", True), "name": ("str", True), "match": ("regex", True),
             "compute_capability": ("cc", True), "architecture": ("str", False),
             "memory_gb": ("number", False), "memory_bandwidth_gbs": ("number", False),
             "pcie_gen": ("int", False), "pcie_width": ("int", False),
             "nvlink_gen": ("int", False), "nvlink_gbs": ("number", False),
             "nvlink_links": ("link_count", False), "nvlink_unwired": ("link_numbers", False),
             "fp32_tflops": ("number", False), "tf32_tflops": ("number", False),
             "bf16_tflops": ("number", False), "fp16_tflops": ("number", False),
             "fp8_tflops": ("number", False), "fp8": ("bool", False),
             "mig_max_instances": ("int", False), "mig_min_driver": ("version", False),
             "segment": ("segment", True)},
            ("key",), "{name}", link_sets=(("nvlink_unwired", "nvlink_links"),),
            only_with=(("fp8_tflops", "fp8"),)),
    Section("pcie", "rows", "pcie", PcieGen,
            {"gen": ("int", True), "gts": ("version", True), "sysfs": ("str", True),
             "sysfs_legacy": ("str", False), "encoding": ("str", False), "x16_gbs": ("number", False)},
            ("gen",), "PCIe Gen{gen}"),
    Section("host_compilers", "rows", "host_compilers", HostCompilers,
            {"cuda": ("major_minor", True), "gcc_max": ("int", True), "clang_max": ("int", False)},
            ("cuda",), "CUDA {cuda} host compilers"),
    Section("xid", "rows", "xid_codes", XidCode,
            {"code": ("int", True), "mnemonic": ("str", True), "bucket": ("str", True),
             "fatal": ("bool", True), "category": ("xid_category", True), "action": ("xid_action", True)},
            ("code",), "Xid {code}"),
)  # fmt: skip

VARIANT_FIELDS: Mapping[str, tuple[str, bool]] = {
    "name": ("variant", True), "cuda": ("major_minor", True), "cudnn": ("version", False),
    "arch": ("arch_list", False), "arch_aarch64": ("arch_list", False), "experimental": ("bool", False),
    "source": ("str", False), "also": ("ids", False), "verified": ("bool", False), "note": ("str", False),
}  # fmt: skip

# Top-level keys beyond table/checked/sources and the row sections: table -> key -> (the kinds its value
# must be, checked in order, the first failure reported; the Knowledge attribute it becomes).
EXTRA_KEYS: Mapping[str, Mapping[str, tuple[tuple[str, ...], str]]] = {
    "torch": {"index_url": (("str", "url_pattern"), "torch_index_url")},
}
TABLES: tuple[str, ...] = tuple(dict.fromkeys(s.table for s in SECTIONS))
ROW_ATTRS: tuple[str, ...] = tuple(s.attr for s in SECTIONS)
SOURCE_KEYS = ("title", "url", "read")
