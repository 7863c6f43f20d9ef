"""Read and validate per-node JSON reports, and name each node.

A file that cannot be used becomes an `Invalid` (the file and why), never an exception that stops the
others. Only report schema version 1 (docs/json-report.md) is read; other versions are refused by name.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, replace
from typing import Any, Optional

from ..engine.model import SEVERITIES

REPORT_SCHEMA = "gpudoctor.report"
READS_VERSION = 1  # the report schema_version this gpudoctor reads
MAX_REPORT_BYTES = 16 * 1024 * 1024  # a real report is ~15 kB; anything this big is not one


@dataclass(frozen=True)
class NodeFinding:
    rule: str
    severity: str
    category: str
    title: str
    message: str
    item: Optional[int]  # the list index the per-item rule fired on, as in the report
    item_label: Optional[str]  # "GPU 0", "onnxruntime", "cuda.runtimes[1]"; None for node-wide findings
    gpu: Optional[int]  # the GPU's NVML index when the finding is about one GPU


@dataclass(frozen=True)
class NodeReport:
    file: str
    hostname: Optional[str]
    written_by: str  # the gpudoctor version that wrote the report
    findings: tuple[NodeFinding, ...]
    facts: dict  # the report's facts tree (an unknown fact is {"unknown": reason})
    timed_out: tuple[str, ...]
    incomplete: tuple[str, ...]  # probes that did not finish, e.g. "gpus timed out"
    unknown_rules: int  # rules the node could not evaluate (facts unknown)
    name: str = ""  # given by name_nodes: the hostname, else the file name; unique in the fleet


@dataclass(frozen=True)
class Invalid:
    file: str
    reason: str


@dataclass(frozen=True)
class Loaded:
    nodes: list[NodeReport]
    invalid: list[Invalid]
    duplicates: dict[str, list[str]]  # a name several reports carry -> the node names they were given


class ReportError(ValueError):
    """A report that cannot be used; the message says why."""


def find_report_files(paths: list[str]) -> tuple[list[str], list[Invalid]]:
    """Files as given, and the *.json files under directories (recursively, sorted); each file once."""
    files: list[str] = []
    invalid: list[Invalid] = []
    seen: set[str] = set()

    def add(path: str) -> None:
        real = os.path.realpath(path)
        if real not in seen:
            seen.add(real)
            files.append(path)

    for path in paths:
        if os.path.isdir(path):
            found = []
            for top, dirs, names in os.walk(path):
                dirs.sort()
                found += [os.path.join(top, n) for n in sorted(names) if n.endswith(".json")]
            if not found:
                invalid.append(Invalid(path, "no *.json files in this directory"))
            for f in found:
                add(f)
        elif os.path.exists(path):
            add(path)
        else:
            invalid.append(Invalid(path, "no such file or directory"))
    return files, invalid


def read_report(path: str) -> NodeReport:
    """One report file, validated. Raises ReportError."""
    try:
        size = os.path.getsize(path)
        if size > MAX_REPORT_BYTES:
            raise ReportError(f"too large for a report ({size} bytes; the limit is {MAX_REPORT_BYTES})")
        with open(path, "rb") as f:
            data = f.read(MAX_REPORT_BYTES + 1)
    except OSError as e:
        raise ReportError(f"cannot read: {e.strerror or e}") from None
    return parse_report(data, path)


def parse_report(data: bytes, file: str) -> NodeReport:
    """A report from its bytes. Raises ReportError naming the first problem found."""
    if not data.strip():
        raise ReportError("empty file")
    try:
        doc = json.loads(data)
    except ValueError as e:  # JSONDecodeError, UnicodeDecodeError, an integer too long to read
        raise ReportError(f"not JSON: {e}") from None
    except RecursionError:
        raise ReportError("not JSON that can be read: nested too deeply") from None
    if not isinstance(doc, dict):
        raise ReportError("not a gpudoctor report (not a JSON object)")
    _check_schema(doc)
    host = _get(doc, "host", dict)
    hostname = host.get("hostname")
    if hostname is not None and not isinstance(hostname, str):
        raise ReportError("host.hostname: expected a string or null")
    facts = _get(doc, "facts", dict)
    findings = tuple(_finding(f, i, facts) for i, f in enumerate(_get(doc, "findings", list)))
    timed_out = _get(doc, "timed_out", list, default=[])
    probes = _get(doc, "probes", list, default=[])
    rules = _get(doc, "rules", list, default=[])
    incomplete = tuple(
        f"{p.get('name')} {p.get('status')}"
        for p in probes
        if isinstance(p, dict) and p.get("status") not in (None, "ok")
    )
    return NodeReport(
        file=file,
        hostname=hostname or None,
        written_by=str(doc.get("gpudoctor", "unknown")),
        findings=findings,
        facts=facts,
        timed_out=tuple(str(t) for t in timed_out),
        incomplete=incomplete,
        unknown_rules=sum(1 for r in rules if isinstance(r, dict) and r.get("status") == "unknown"),
    )


def _check_schema(doc: dict) -> None:
    schema = doc.get("schema")
    if schema != REPORT_SCHEMA:
        raise ReportError(
            f"not a gpudoctor report (schema is {schema!r}, expected {REPORT_SCHEMA!r}; "
            "write reports with `gpudoctor check --format json`)"
        )
    version = doc.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ReportError("schema_version is missing or not an integer")
    if version > READS_VERSION:
        raise ReportError(
            f"report schema_version {version} is newer than this gpudoctor reads ({READS_VERSION}); "
            "merge with the gpudoctor version that wrote it, or a newer one"
        )
    if version < READS_VERSION:
        raise ReportError(
            f"report schema_version {version} is not supported (this gpudoctor reads {READS_VERSION})"
        )


_MISSING = object()


def _get(obj: dict, key: str, kind: type, where: str = "", default: Any = _MISSING) -> Any:
    value = obj.get(key, _MISSING)
    if value is _MISSING and default is not _MISSING:
        return default
    if not isinstance(value, kind):
        expected = {dict: "an object", list: "an array", str: "a string"}[kind]
        got = "missing" if value is _MISSING else f"got {type(value).__name__}"
        raise ReportError(f"{where}{key}: expected {expected}, {got}")
    return value


def _finding(f: Any, i: int, facts: dict) -> NodeFinding:
    where = f"findings[{i}]."
    if not isinstance(f, dict):
        raise ReportError(f"findings[{i}]: expected an object")
    severity = _get(f, "severity", str, where)
    if severity not in SEVERITIES:
        raise ReportError(f"{where}severity: expected one of {', '.join(SEVERITIES)}, got {severity!r}")
    item = f.get("item")
    if item is not None and (not isinstance(item, int) or isinstance(item, bool)):
        raise ReportError(f"{where}item: expected an integer or null")
    evidence = _get(f, "evidence", dict, where, default={})
    label, gpu = item_label(evidence, item, facts)
    return NodeFinding(
        rule=_get(f, "rule", str, where),
        severity=severity,
        category=_get(f, "category", str, where),
        title=_get(f, "title", str, where),
        message=_get(f, "message", str, where),
        item=item,
        item_label=label,
        gpu=gpu,
    )


_ITEM_REF = re.compile(r"([a-z_][a-z_0-9.]*)\[(\d{1,9})\]")


def item_label(evidence: dict, item: Optional[int], facts: dict) -> tuple[Optional[str], Optional[int]]:
    """What a per-item finding is about, from the facts it read: ("GPU 2", 2), ("onnxruntime", None)."""
    if item is None:
        return None, None
    for name in evidence:
        m = _ITEM_REF.match(name)
        if not m or int(m.group(2)) != item:
            continue
        lst = m.group(1)
        member = _member(facts, lst, item)
        if lst == "gpus":
            index = member.get("index")
            gpu = index if isinstance(index, int) and not isinstance(index, bool) else item
            return f"GPU {gpu}", gpu
        if lst == "frameworks" and isinstance(member.get("name"), str):
            return member["name"], None
        return f"{lst}[{item}]", None
    return f"item {item}", None


def _member(facts: dict, dotted: str, index: int) -> dict:
    node: Any = facts
    for part in dotted.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    if isinstance(node, list) and index < len(node) and isinstance(node[index], dict):
        return node[index]
    return {}


def name_nodes(reports: list[NodeReport]) -> tuple[list[NodeReport], dict[str, list[str]]]:
    """Each report named by its hostname, else its file name; a name several carry gets #1, #2, ..."""
    bases = [r.hostname or _file_name(r.file) for r in reports]
    counts: dict[str, int] = {}
    for b in bases:
        counts[b] = counts.get(b, 0) + 1
    taken = {b for b in bases if counts[b] == 1}
    duplicates: dict[str, list[str]] = {}
    named = []
    for report, base in zip(reports, bases):
        name = base
        if counts[base] > 1:
            n = len(duplicates.get(base, [])) + 1
            name = f"{base}#{n}"
            while name in taken:
                n += 1
                name = f"{base}#{n}"
            duplicates.setdefault(base, []).append(name)
        taken.add(name)
        named.append(replace(report, name=name))
    return named, duplicates


def _file_name(path: str) -> str:
    name = os.path.basename(path.rstrip("/"))
    return name[: -len(".json")] if name.endswith(".json") and len(name) > len(".json") else name


def load_reports(paths: list[str]) -> Loaded:
    """Every report under paths; the ones that cannot be used are listed with the reason, in order."""
    files, invalid = find_report_files(paths)
    reports = []
    for path in files:
        try:
            reports.append(read_report(path))
        except ReportError as e:
            invalid.append(Invalid(path, str(e)))
    nodes, duplicates = name_nodes(reports)
    return Loaded(nodes=nodes, invalid=invalid, duplicates=duplicates)
