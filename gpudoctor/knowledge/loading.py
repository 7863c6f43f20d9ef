"""Loading and validating the knowledge tables: every problem at once, each with file, line and row.

Tables load lazily, once, from the installed package (gpudoctor/_rules/knowledge) or a source checkout,
through the table cache (cache.py): validated once, then read back as JSON without PyYAML. PyYAML and
packaging are imported only when a table is parsed.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Optional

from ..datafiles import Problem, shipped_rules_dir
from ..engine import yamlsafe
from .rows import Knowledge, Source, Table, TorchVariant
from .schema import (
    _DOTTED,
    _VARIANT,
    EXTRA_KEYS,
    KINDS,
    PROVENANCE,
    ROW_ATTRS,
    SECTIONS,
    SOURCE_KEYS,
    TABLES,
    VARIANT_FIELDS,
    Section,
    _is_int,
    _is_str,
    cuda_variant,
    torch_requirement_admits,
)


class KnowledgeError(Exception):
    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("\n".join(str(p) for p in problems))
        self.problems = problems


def knowledge_dir() -> Path:
    """The tables installed with the package, or the repository's rules/knowledge in a source checkout."""
    return shipped_rules_dir() / "knowledge"


@functools.lru_cache(maxsize=1)
def knowledge() -> Knowledge:
    """The shipped tables, loaded and validated on first use (from the table cache when it holds these
    tables). Raises KnowledgeError listing every problem."""
    from . import cache

    directory = knowledge_dir()
    return cache.load(read_tables(directory), lambda files: build_knowledge(files, directory))


def load_knowledge(directory: Path) -> Knowledge:
    """The tables in `directory`, parsed and validated (never through the cache)."""
    return build_knowledge(read_tables(directory), directory)


def build_knowledge(files: Mapping[str, bytes], directory: Path) -> Knowledge:
    """The Knowledge of the table files `files` (read_tables(directory)), or KnowledgeError."""
    kb, problems = parse_files(files, directory)
    if problems or kb is None:
        raise KnowledgeError(problems)
    return kb


def read_tables(directory: Path) -> dict[str, bytes]:
    """The bytes of every *.yaml file in `directory`, by file name, in name order; {} when it is missing."""
    if not directory.is_dir():
        return {}
    paths = sorted(path for path in directory.iterdir() if path.name.endswith(".yaml") and path.is_file())
    return {path.name: path.read_bytes() for path in paths}


def parse_directory(directory: Path) -> tuple[Optional[Knowledge], list[Problem]]:
    """Every table in `directory`: the Knowledge when all are valid, and every problem found."""
    return parse_files(read_tables(directory), directory)


def parse_files(files: Mapping[str, bytes], directory: Path) -> tuple[Optional[Knowledge], list[Problem]]:
    """Every table among `files` (file name -> bytes, from `directory`): the Knowledge when all are valid,
    and every problem found."""
    problems: list[Problem] = []
    present = {name[: -len(".yaml")]: name for name in sorted(files)}
    for stem, file in present.items():
        if stem not in TABLES:
            problems.append(Problem(file, 0, "", "", f"unknown table (expected: {', '.join(TABLES)})"))
    tables: dict[str, Table] = {}
    parts: dict[str, Any] = {}
    for name in TABLES:
        file = present.get(name)
        if file is None:
            problems.append(Problem(f"{name}.yaml", 0, "", "", f"missing table file in {directory}"))
            continue
        table, table_parts, table_problems = parse_table(_text(files[file]), file, name)
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


def _text(data: bytes) -> str:
    """The file's text as Path.read_text gives it: UTF-8, with universal newlines."""
    return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


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
    for key, (kinds, _attr) in extra.items():
        failed = next((kind for kind in kinds if not KINDS[kind][0](data.get(key))), None)
        if key in data and failed is not None:
            ctx.report((key,), "", key, f"expected {KINDS[failed][1]}")
    parts: dict[str, Any] = {s.attr: _section(s, data.get(s.name), ctx) for s in sections}
    for key, (_kinds, attr) in extra.items():
        parts[attr] = data.get(key, "")
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
    from packaging.version import Version  # lazy: a check that reads the table cache never needs it

    if section.variants and isinstance(item.get("variants"), list):
        ok = _check_variants(item, path, where, label, ctx)
    for low, high in section.ranges:
        lo, hi = item.get(low), item.get(high)
        if _dotted(lo) and _dotted(hi) and Version(lo) > Version(hi):
            ctx.report((*path, low), label, f"{where}.{low}", f"{low} {lo} is above {high} {hi}")
            ok = False
    for field, major in section.in_major:
        if _dotted(item.get(field)) and _is_int(item.get(major)):
            if int(item[field].split(".")[0]) != item[major]:
                ctx.report((*path, field), label, f"{where}.{field}", f"{field} is not in {major}")
                ok = False
    for group in section.together:
        unset = [f for f in group if item.get(f) is None]
        if unset and len(unset) < len(group):
            first = next(f for f in group if f not in unset)
            ctx.report((*path, first), label, f"{where}.{first}",
                       f"{', '.join(group)} are set together: {', '.join(unset)} missing")  # fmt: skip
            ok = False
    for requirement, field in section.admits:
        req, version = item.get(requirement), item.get(field)
        if isinstance(req, str) and _dotted(version) and KINDS["torch_requirement"][0](req):
            if not torch_requirement_admits(req, version):
                ctx.report((*path, requirement), label, f"{where}.{requirement}",
                           f"{req} does not admit {field} {version}")  # fmt: skip
                ok = False
    for field, bound in section.above:
        ok = _check_above(item, field, bound, path, where, label, ctx) and ok
    for field, flag in section.only_with:
        if item.get(field) is not None and item.get(flag) is not True:
            ctx.report((*path, field), label, f"{where}.{field}", f"{field} is set only where {flag} is true")
            ok = False
    for numbers, count in section.link_sets:
        kind = section.fields[numbers][0]
        ok = _check_link_set(item, numbers, count, kind, path, where, label, ctx) and ok
    return ok


def _check_above(item: dict, field: str, bound: str, path: tuple, where: str, label: str,
                 ctx: _Ctx) -> bool:  # fmt: skip
    """Every version a list field names lies above the bound field's version, and none twice."""
    versions, limit = item.get(field), item.get(bound)
    if not KINDS["major_minor_list"][0](versions) or not _dotted(limit):
        return True  # absent, or the kind checks already reported it
    from packaging.version import Version  # lazy, as in the range checks

    ok = True
    below = [v for v in versions if Version(v) <= Version(limit)]
    if below:
        ctx.report((*path, field), label, f"{where}.{field}",
                   f"{', '.join(below)} not above {bound} {limit}")  # fmt: skip
        ok = False
    if len(set(versions)) != len(versions):
        ctx.report((*path, field), label, f"{where}.{field}", "a version is listed twice")
        ok = False
    return ok


def _check_link_set(item: dict, numbers: str, count: str, kind: str, path: tuple, where: str,
                    label: str, ctx: _Ctx) -> bool:  # fmt: skip
    """Link numbers (the ones a model leaves unwired) need the count of wired links, and must lie among the
    links NVML numbers for it: 0 to count + len(numbers) - 1."""
    links, n = item.get(numbers), item.get(count)
    if links is None or not KINDS[kind][0](links):
        return True  # absent, or the kind check already reported it
    if not _is_int(n) or n == 0:
        ctx.report((*path, numbers), label, f"{where}.{numbers}", f"{numbers} needs {count} (above 0)")
        return False
    beyond = [x for x in links if x >= n + len(links)]
    if beyond:
        ctx.report(
            (*path, numbers),
            label,
            f"{where}.{numbers}",
            f"links {beyond} lie beyond the {n + len(links)} links NVML numbers ({count} {n} plus these)",
        )
        return False
    return True


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
        if isinstance(name, str) and isinstance(cuda, str) and name != cuda_variant(cuda):
            ctx.report(
                (*vpath, "name"), label, f"{vwhere}.name", f"variant {name} does not match cuda {cuda}"
            )
            ok = False
        for key in ("source", "also"):
            ids = variant.get(key)
            for sid in ids if isinstance(ids, list) else [ids]:
                if isinstance(sid, str) and sid not in ctx.sources:
                    why = f"source {sid!r} is not defined under sources"
                    ctx.report((*vpath, key), label, f"{vwhere}.{key}", why)
                    ok = False
        if "also" in variant and "source" not in variant:
            ctx.report(
                (*vpath, "also"), label, f"{vwhere}.also", "a variant's also needs the variant's own source"
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
    defaults = {f.name for f in dataclasses.fields(section.cls) if f.default is not dataclasses.MISSING}
    for key, (kind, _required) in section.fields.items():
        value = item.get(key)
        if value is None and key in defaults:
            continue  # an optional field with a default (python_experimental: ()) keeps it
        values[key] = tuple(value) if isinstance(value, list) and kind != "variants" else value
    if section.variants:
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
    """A variant inherits the row's provenance unless it names its own (then `also` is its own too)."""
    own = "verified" in raw or "source" in raw
    note = raw.get("note") if own else (raw.get("note") or row.get("note"))
    return TorchVariant(
        name=raw["name"],
        cuda=raw["cuda"],
        cudnn=raw.get("cudnn"),
        arch=tuple(raw.get("arch") or ()),
        arch_aarch64=tuple(raw.get("arch_aarch64") or ()),
        experimental=bool(raw.get("experimental", False)),
        label=f"{row_label} {raw['name']}",
        source=raw.get("source", row["source"]),
        verified=raw.get("verified", row["verified"]),
        note=" ".join((note or "").split()),
        also=tuple(raw.get("also") or ()) if own else (),
        confirmed=(),
        line=line,
    )
