"""Typed, read-only access to the compatibility tables in rules/knowledge/*.yaml.

Each table file names the sources it was checked against (`sources`), the date it was checked (`checked`)
and, in every row, the source the row came from and whether a primary source confirmed it (`verified`,
with a `note` saying why not). This module validates the files strictly, reporting every problem at once
with file, line and row, and offers small lookups the fix-plan resolvers build on. It makes no decisions:
which wheel to recommend is the planner's business.

Tables load lazily, once, from the installed package (gpudoctor/_rules/knowledge) or a source checkout.
"""

from __future__ import annotations

import datetime
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Optional

from packaging.version import Version

from .datafiles import Problem, shipped_rules_dir
from .engine import yamlsafe


class KnowledgeError(Exception):
    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("\n".join(str(p) for p in problems))
        self.problems = problems


# --- the typed rows ---------------------------------------------------------------------------------
# Every row carries its provenance: `source` (a source id), `also` (corroborating ids), `verified`,
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

    def rows(self) -> list[Any]:
        """Every row of every table (torch variants included), for cross-checks and listings."""
        out: list[Any] = []
        for attr in ROW_ATTRS:
            for row in getattr(self, attr):
                out.append(row)
                out.extend(getattr(row, "variants", ()))
        return out


# --- the schema -------------------------------------------------------------------------------------

_DOTTED = re.compile(r"^\d+(\.\d+)*$")
_MAJOR_MINOR = re.compile(r"^\d+\.\d+$")
_CC = re.compile(r"^\d+\.\d$")
_ARCH = re.compile(r"^\d+\.\d(\+PTX)?$")
_VARIANT = re.compile(r"^cu\d{3,}$")
_MONTH = re.compile(r"^\d{4}-(0[1-9]|1[0-2])$")


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


def _choice(*options: str) -> Callable[[Any], bool]:
    return lambda v: v in options


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
    "arch_list": (_list_of(_ARCH), 'a list of arch entries like ["9.0", "12.0+PTX"]'),
    "variant": (lambda v: isinstance(v, str) and bool(_VARIANT.match(v)), "a CUDA wheel variant like cu128"),
    "regex": (_regex_ok, "a valid regular expression"),
    "month": (lambda v: isinstance(v, str) and bool(_MONTH.match(v)), 'a quoted "YYYY-MM"'),
    "designation": (_choice("LTSB", "PB", "NFB"), "one of LTSB, PB, NFB"),
    "segment": (
        _choice("data-center", "workstation", "consumer"),
        "one of data-center, workstation, consumer",
    ),
    "ids": (lambda v: isinstance(v, list) and all(_is_str(x) for x in v), "a list of source ids"),
    "names": (lambda v: isinstance(v, list) and all(_is_str(x) for x in v), "a list of field names"),
    "variants": (lambda v: isinstance(v, list) and bool(v), "a list of CUDA wheel variants"),
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
    Section("torch", "rows", "torch_releases", TorchRelease,
            {"version": ("major_minor", True), "python_min": ("major_minor", True),
             "python_max": ("major_minor", True), "variants": ("variants", True),
             "pypi_default": ("variant", False), "torchvision": ("major_minor", True),
             "torchaudio": ("major_minor", False)},
            ("version",), "torch {version}"),
    Section("tensorflow", "rows", "tensorflow_builds", TensorflowBuild,
            {"version": ("major_minor", True), "python_min": ("major_minor", True),
             "python_max": ("major_minor", True), "cudnn": ("version", True), "cuda": ("major_minor", True)},
            ("version",), "tensorflow {version}"),
    Section("jax", "rows", "jax_plugins", JaxPlugin,
            {"extra": ("str", True), "cuda_major": ("int", True), "min_driver": ("version", True),
             "min_cc": ("cc", True)},
            ("extra",), "jax[{extra}]"),
    Section("cudnn", "rows", "cudnn_support", CudnnSupport,
            {"cudnn": ("version", True), "cuda_major": ("int", True), "cuda_min": ("major_minor", True),
             "cuda_max": ("major_minor", True), "driver": ("version", True), "ccs": ("cc_list", True)},
            ("cudnn", "cuda_min", "cuda_max"), "cuDNN {cudnn} for CUDA {cuda_min}-{cuda_max}"),
    Section("gpus", "rows", "gpus", GpuModel,
            {"key": ("str", True), "name": ("str", True), "match": ("regex", True),
             "compute_capability": ("cc", True), "architecture": ("str", False),
             "memory_gb": ("number", False), "memory_bandwidth_gbs": ("number", False),
             "pcie_gen": ("int", False), "pcie_width": ("int", False),
             "nvlink_gen": ("int", False), "nvlink_gbs": ("number", False), "bf16_tflops": ("number", False),
             "fp16_tflops": ("number", False), "fp8": ("bool", False), "mig_max_instances": ("int", False),
             "mig_min_driver": ("version", False), "segment": ("segment", True)},
            ("key",), "{name}"),
    Section("pcie", "rows", "pcie", PcieGen,
            {"gen": ("int", True), "gts": ("version", True), "sysfs": ("str", True),
             "sysfs_legacy": ("str", False), "encoding": ("str", False), "x16_gbs": ("number", False)},
            ("gen",), "PCIe Gen{gen}"),
)  # fmt: skip

VARIANT_FIELDS: Mapping[str, tuple[str, bool]] = {
    "name": ("variant", True), "cuda": ("major_minor", True), "cudnn": ("version", False),
    "arch": ("arch_list", False), "experimental": ("bool", False), "source": ("str", False),
    "verified": ("bool", False), "note": ("str", False),
}  # fmt: skip

# Top-level keys beyond table/checked/sources and the row sections.
EXTRA_KEYS: Mapping[str, Mapping[str, str]] = {"torch": {"index_url": "str"}}
TABLES: tuple[str, ...] = tuple(dict.fromkeys(s.table for s in SECTIONS))
ROW_ATTRS: tuple[str, ...] = tuple(s.attr for s in SECTIONS)
SOURCE_KEYS = ("title", "url", "read")


# --- loading and validation -------------------------------------------------------------------------


def knowledge_dir() -> Path:
    """The tables installed with the package, or the repository's rules/knowledge in a source checkout."""
    return shipped_rules_dir() / "knowledge"


@functools.lru_cache(maxsize=1)
def knowledge() -> Knowledge:
    """The shipped tables, loaded and validated on first use. Raises KnowledgeError listing every problem."""
    return load_knowledge(knowledge_dir())


def load_knowledge(directory: Path) -> Knowledge:
    kb, problems = parse_directory(directory)
    if problems or kb is None:
        raise KnowledgeError(problems)
    return kb


def parse_directory(directory: Path) -> tuple[Optional[Knowledge], list[Problem]]:
    """Every table in `directory`: the Knowledge when all are valid, and every problem found."""
    problems: list[Problem] = []
    present = {p.stem: p for p in sorted(directory.glob("*.yaml"))} if directory.is_dir() else {}
    for stem, path in present.items():
        if stem not in TABLES:
            problems.append(Problem(path.name, 0, "", "", f"unknown table (expected: {', '.join(TABLES)})"))
    tables: dict[str, Table] = {}
    parts: dict[str, Any] = {}
    for name in TABLES:
        path = present.get(name)
        if path is None:
            problems.append(Problem(f"{name}.yaml", 0, "", "", f"missing table file in {directory}"))
            continue
        table, table_parts, table_problems = parse_table(path.read_text(encoding="utf-8"), path.name, name)
        problems += table_problems
        if table is not None:
            tables[name] = table
            parts.update(table_parts)
    if problems:
        return None, problems
    return Knowledge(
        tables=MappingProxyType(tables),
        torch_index_url=parts["torch_index_url"],
        **{attr: tuple(parts[attr]) for attr in ROW_ATTRS},
    ), []


@dataclass
class _Ctx:
    """Where problems of one file go, with the line of every YAML node."""

    file: str
    lines: dict
    sources: Mapping[str, Source]
    problems: list

    def report(self, path: tuple, label: str, where: str, message: str) -> None:
        self.problems.append(Problem(self.file, self.line(path), label, where, message))

    def line(self, path: tuple) -> int:
        while path and path not in self.lines:
            path = path[:-1]
        return self.lines.get(path, 1)


def parse_table(text: str, file: str, name: str) -> tuple[Optional[Table], dict[str, Any], list[Problem]]:
    """One table file: its metadata, its typed rows by Knowledge attribute, and every problem."""
    try:
        data, lines = yamlsafe.load(text)
    except yamlsafe.YamlError as e:
        return None, {}, [Problem(file, e.line, "", "", e.message)]
    if not isinstance(data, dict):
        return (
            None,
            {},
            [Problem(file, 1, "", "", "a table file is a mapping (table, checked, sources, rows)")],
        )
    ctx = _Ctx(file, lines, {}, [])
    sections = [s for s in SECTIONS if s.table == name]
    extra = EXTRA_KEYS.get(name, {})
    allowed = ("table", "checked", "sources", *(s.name for s in sections), *extra)
    for key in data:
        if key not in allowed:
            ctx.report((key,), "", str(key), f"unknown top-level key (expected: {', '.join(allowed)})")
    for key in allowed:
        if key not in data:
            ctx.report((), "", "", f"missing top-level key '{key}'")
    if "table" in data and data["table"] != name:
        ctx.report(("table",), "", "table", f"expected '{name}' (the file name), got {data['table']!r}")
    checked = data.get("checked")
    if "checked" in data and (
        not isinstance(checked, datetime.date) or isinstance(checked, datetime.datetime)
    ):
        ctx.report(
            ("checked",), "", "checked", f"expected the date it was checked (YYYY-MM-DD), got {checked!r}"
        )
    ctx.sources = _sources(data.get("sources"), ctx)
    for key, kind in extra.items():
        if key in data and not KINDS[kind][0](data[key]):
            ctx.report((key,), "", key, f"expected {KINDS[kind][1]}")
    if name == "torch" and _is_str(data.get("index_url")) and "{variant}" not in data["index_url"]:
        ctx.report(("index_url",), "", "index_url", "expected a URL pattern containing {variant}")
    parts: dict[str, Any] = {s.attr: _section(s, data.get(s.name), ctx) for s in sections}
    if name == "torch":
        parts["torch_index_url"] = data.get("index_url", "")
    if ctx.problems:
        return None, {}, ctx.problems
    return Table(name, file, checked, MappingProxyType(ctx.sources)), parts, []


def _sources(raw: Any, ctx: _Ctx) -> dict[str, Source]:
    if not isinstance(raw, dict) or not raw:
        ctx.report(("sources",), "", "sources", "expected a mapping of source id -> {title, url, read}")
        return {}
    out = {}
    for sid, entry in raw.items():
        path, where = ("sources", sid), f"sources.{sid}"
        if not isinstance(entry, dict):
            ctx.report(path, "", where, "expected a mapping with title, url, read")
            continue
        for key in entry:
            if key not in SOURCE_KEYS:
                ctx.report(
                    (*path, key), "", f"{where}.{key}", f"unknown key (expected: {', '.join(SOURCE_KEYS)})"
                )
        missing = [k for k in SOURCE_KEYS if not _is_str(entry.get(k))]
        for key in missing:
            ctx.report(path, "", f"{where}.{key}", "expected a non-empty string (what was read, and where)")
        url = entry.get("url")
        if _is_str(url) and "://" in url and not url.startswith("https://"):
            ctx.report(
                (*path, "url"), "", f"{where}.url", "expected an https:// URL or a repository-relative path"
            )
        if not missing:
            out[str(sid)] = Source(str(sid), entry["title"], entry["url"], " ".join(entry["read"].split()))
    return out


def _section(section: Section, raw: Any, ctx: _Ctx) -> list[Any]:
    if not isinstance(raw, list) or not raw:
        ctx.report((section.name,), "", section.name, "expected a non-empty list of rows")
        return []
    rows: list[Any] = []
    seen: dict[tuple, int] = {}
    for i, item in enumerate(raw):
        path, where = (section.name, i), f"{section.name}[{i}]"
        if not isinstance(item, dict):
            ctx.report(path, "", where, "a row is a mapping")
            continue
        label = _label(section.label, item)
        ok = _check_fields(item, {**section.fields, **PROVENANCE}, path, where, label, ctx)
        ok = _check_provenance(item, section.fields, path, where, label, ctx) and ok
        ok = _check_row(section, item, path, where, label, ctx) and ok
        key = tuple(str(item.get(k)) for k in section.key)
        if key in seen:
            ctx.report(
                path,
                label,
                where,
                f"duplicate row (same {', '.join(section.key)} as {section.name}[{seen[key]}])",
            )
            ok = False
        seen.setdefault(key, i)
        if ok:
            rows.append(_build(section, item, label, ctx.line(path)))
    return rows


def _label(template: str, item: dict) -> str:
    return template.format(**{k: item.get(k, "?") for k in re.findall(r"{(\w+)}", template)})


def _check_fields(item: dict, spec: Mapping[str, tuple[str, bool]], path: tuple, where: str, label: str,
                  ctx: _Ctx) -> bool:  # fmt: skip
    ok = True
    for key in item:
        if key not in spec:
            ctx.report((*path, key), label, f"{where}.{key}", f"unknown key (expected: {', '.join(spec)})")
            ok = False
    for key, (kind, required) in spec.items():
        value = item.get(key)
        if value is None:
            if required:
                ctx.report(path, label, f"{where}.{key}", f"missing required key '{key}'")
                ok = False
            continue
        check, expected = KINDS[kind]
        if not check(value):
            ctx.report((*path, key), label, f"{where}.{key}", f"expected {expected}, got {value!r}")
            ok = False
    return ok


def _check_provenance(item: dict, fields: Mapping, path: tuple, where: str, label: str, ctx: _Ctx) -> bool:
    ok = True
    for key in ("source", "also"):
        ids = item.get(key)
        for sid in ids if isinstance(ids, list) else [ids]:
            if isinstance(sid, str) and sid not in ctx.sources:
                ctx.report(
                    (*path, key), label, f"{where}.{key}", f"source {sid!r} is not defined under sources"
                )
                ok = False
    if item.get("verified") is False and not _is_str(item.get("note")):
        ctx.report(path, label, f"{where}.note", "a row with verified: false needs a note saying why")
        ok = False
    for name in item.get("confirmed") or []:
        if name not in fields or item.get(name) is None:
            ctx.report(
                (*path, "confirmed"), label, f"{where}.confirmed", f"{name!r} is not a field this row sets"
            )
            ok = False
    return ok


def _check_row(section: Section, item: dict, path: tuple, where: str, label: str, ctx: _Ctx) -> bool:
    """Checks that relate fields of one row to each other."""
    ok = True
    if section.table == "torch" and isinstance(item.get("variants"), list):
        ok = _check_variants(item, path, where, label, ctx)
    for low, high in (("python_min", "python_max"), ("cuda_min", "cuda_max")):
        lo, hi = item.get(low), item.get(high)
        if _dotted(lo) and _dotted(hi) and Version(lo) > Version(hi):
            ctx.report((*path, low), label, f"{where}.{low}", f"{low} {lo} is above {high} {hi}")
            ok = False
    if section.table == "cudnn" and _dotted(item.get("cuda_min")) and _is_int(item.get("cuda_major")):
        if int(item["cuda_min"].split(".")[0]) != item["cuda_major"]:
            ctx.report((*path, "cuda_min"), label, f"{where}.cuda_min", "cuda_min is not in cuda_major")
            ok = False
    return ok


def _check_variants(item: dict, path: tuple, where: str, label: str, ctx: _Ctx) -> bool:
    ok = True
    names = []
    for j, variant in enumerate(item["variants"]):
        vpath, vwhere = (*path, "variants", j), f"{where}.variants[{j}]"
        if not isinstance(variant, dict):
            ctx.report(vpath, label, vwhere, "a variant is a mapping")
            ok = False
            continue
        ok = _check_fields(variant, VARIANT_FIELDS, vpath, vwhere, label, ctx) and ok
        name, cuda = variant.get("name"), variant.get("cuda")
        if isinstance(name, str) and isinstance(cuda, str) and name != "cu" + cuda.replace(".", ""):
            ctx.report(
                (*vpath, "name"), label, f"{vwhere}.name", f"variant {name} does not match cuda {cuda}"
            )
            ok = False
        sid = variant.get("source")
        if isinstance(sid, str) and sid not in ctx.sources:
            ctx.report(
                (*vpath, "source"), label, f"{vwhere}.source", f"source {sid!r} is not defined under sources"
            )
            ok = False
        if variant.get("verified") is False and not _is_str(variant.get("note")):
            ctx.report(
                vpath, label, f"{vwhere}.note", "a variant with verified: false needs a note saying why"
            )
            ok = False
        names.append(name)
    if len(set(names)) != len(names):
        ctx.report((*path, "variants"), label, f"{where}.variants", "a variant is listed twice")
        ok = False
    default = item.get("pypi_default")
    if isinstance(default, str) and _VARIANT.match(default) and default not in names:
        ctx.report(
            (*path, "pypi_default"), label, f"{where}.pypi_default", f"{default!r} is not one of the variants"
        )
        ok = False
    return ok


def _dotted(v: Any) -> bool:
    return isinstance(v, str) and bool(_DOTTED.match(v))


def _build(section: Section, item: dict, label: str, line: int) -> Any:
    values: dict[str, Any] = {}
    for key, (kind, _required) in section.fields.items():
        value = item.get(key)
        values[key] = tuple(value) if isinstance(value, list) and kind != "variants" else value
    if section.table == "torch":
        values["variants"] = tuple(_variant(v, item, label, line) for v in item["variants"])
    return section.cls(
        **values,
        label=label,
        source=item["source"],
        also=tuple(item.get("also") or ()),
        verified=item["verified"],
        note=" ".join((item.get("note") or "").split()),
        confirmed=tuple(item.get("confirmed") or ()),
        line=line,
    )


def _variant(raw: dict, row: dict, row_label: str, line: int) -> TorchVariant:
    """A variant inherits the row's provenance unless it names its own."""
    own = "verified" in raw or "source" in raw
    note = raw.get("note") if own else (raw.get("note") or row.get("note"))
    return TorchVariant(
        name=raw["name"],
        cuda=raw["cuda"],
        cudnn=raw.get("cudnn"),
        arch=tuple(raw.get("arch") or ()),
        experimental=bool(raw.get("experimental", False)),
        label=f"{row_label} {raw['name']}",
        source=raw.get("source", row["source"]),
        verified=raw.get("verified", row["verified"]),
        note=" ".join((note or "").split()),
        also=(),
        confirmed=(),
        line=line,
    )


# --- lookups ----------------------------------------------------------------------------------------
# Each takes an optional Knowledge (tests pass their own); by default the shipped tables.

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
