"""Read and validate per-node JSON reports, and name each node.

A file that cannot be used becomes an `Invalid` (the file and why), never an exception that stops the
others. Only report schema version 1 (docs/json-report.md) is read; other versions are refused by name.
"""

from __future__ import annotations

import gc
import json
import os
import re
import sys
from dataclasses import dataclass, replace
from typing import Any, Optional

from ..engine.model import SEVERITIES
from ..facts import SPECS, Facts, known, unknown
from .records import READS as RECORDS_READ

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
    facts: Facts  # the facts the fleet reads, type-checked, through the same Facts class as a check's
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


def read_report(path: str, whole: bool = False) -> NodeReport:
    """One report file, validated (`whole`: with all its facts, not only those the fleet rules read).
    Raises ReportError."""
    try:
        size = os.path.getsize(path)
        if size > MAX_REPORT_BYTES:
            raise ReportError(f"too large for a report ({size} bytes; the limit is {MAX_REPORT_BYTES})")
        with open(path, "rb") as f:
            data = f.read(MAX_REPORT_BYTES + 1)
    except OSError as e:
        raise ReportError(f"cannot read: {e.strerror or e}") from None
    return parse_report(data, path, whole)


def parse_report(data: bytes, file: str, whole: bool = False) -> NodeReport:
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
    # A slim record: only the facts the fleet rules read (type-checked), not the node's whole tree; the
    # whole tree to judge an image or a lockfile on the node (fleet --image, --lock).
    facts = facts_of(facts if whole else _slim(facts, SHAPE, "facts"))
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


def _shape(facts: list[str]) -> dict:
    """The part of a facts tree that `facts` read: {"driver": {"version": "driver.version"}, "gpus": [
    {...}]}; a leaf is the fact's schema name, a list is [member shape]."""
    shape: dict = {}
    for name in facts:
        node: Any = shape
        parts = name.replace("[]", ".[]").split(".")
        if parts[-1] == "count":  # `gpus.count` is the array's length: keep the array
            parts, leaf = parts[:-1], {}
        else:
            leaf = name
        for n, part in enumerate(parts):
            nxt = parts[n + 1] if n + 1 < len(parts) else None
            if part == "[]":
                continue
            child = leaf if nxt is None else ([{}] if nxt == "[]" else {})
            if isinstance(node, list):
                node = node[0]
            existing = node.get(part)
            if existing is None or (isinstance(existing, dict) and not existing and child != {}):
                node[part] = child
            node = node[part]
    return shape


# What the fleet reads of each node: what the records stage compares (and the members beside them: a GPU's
# index, a measurement's status).
FLEET_FACTS = sorted(RECORDS_READ)
SHAPE = _shape(FLEET_FACTS)

_TYPES = {
    "str": (str, "a string"),
    "version": (str, "a version string"),
    "int": (int, "an integer"),
    "float": ((int, float), "a number"),
    "bool": (bool, "true or false"),
    "list[str]": (str, "an array of strings"),
    "list[int]": (int, "an array of integers"),
}


def _slim(node: Any, shape: Any, where: str) -> Any:
    """The part of `node` that `shape` names, each value checked against the facts schema. An unknown
    fact ({"unknown": reason}) and null stay as they are; a wrongly typed value is a ReportError naming
    the fact."""
    if isinstance(node, dict) and set(node) == {"unknown"}:
        return node
    if isinstance(shape, str):
        _check_type(node, shape, where)
        return node
    if isinstance(shape, list):
        if not isinstance(node, list):
            return node  # read as "not an array"
        return [_slim(m, shape[0], f"{where}[{i}]") if isinstance(m, dict) else m for i, m in enumerate(node)]
    if not shape:
        return node if not isinstance(node, (dict, list)) else ([] if isinstance(node, list) else {})
    if not isinstance(node, dict):
        return node
    return {k: _slim(node[k], sub, f"{where}.{k}") for k, sub in shape.items() if k in node}


class ReportFacts(Facts):
    """Facts read from a report, which also knows where the report had an object (`gpus[0].pcie`), so that
    asking for an object's value says "not a value" without searching every name."""

    def __init__(self, items: dict, objects: frozenset) -> None:
        super().__init__(items)
        self.objects = objects


def facts_of(tree: Any) -> ReportFacts:
    """A report's facts tree as Facts: `driver.version`, `gpus.count`, `gpus[3].pcie.width_current`; an
    unknown ({"unknown": reason}) is an unknown fact. An array with objects in it is a list (its count and
    its members' facts; a member that is not an object is a fact of its own, `gpus[3]`); any other array is
    one value (`nccl.versions`)."""
    items: dict = {}
    objects: set = set()
    intern = sys.intern  # every node has the same names: one string each for the whole fleet

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            if set(node) == {"unknown"}:
                items[intern(path)] = unknown(str(node["unknown"]), "report")
                return
            objects.add(intern(path))
            for key, value in node.items():
                walk(value, f"{path}.{key}" if path else str(key))
        elif isinstance(node, list) and any(isinstance(m, dict) for m in node):
            items[intern(f"{path}.count")] = _known(len(node))
            for i, member in enumerate(node):
                if isinstance(member, dict):
                    walk(member, f"{path}[{i}]")
                else:
                    items[intern(f"{path}[{i}]")] = _known(member)
        elif path:
            items[intern(path)] = _known(node)

    walk(tree if isinstance(tree, dict) else {}, "")
    return ReportFacts(items, frozenset(objects))


_SHARED: dict = {}  # (type, value) -> its Fact: thousands of nodes report the same GPU model and driver
_SHARED_MAX = 100_000


def _known(value: Any) -> Any:
    """A known fact from a report; one Fact object for each distinct scalar value (Facts are frozen)."""
    if isinstance(value, (list, dict)):
        return known(value, "report")
    key = (type(value), value)
    fact = _SHARED.get(key)
    if fact is None:
        fact = known(value, "report")
        if len(_SHARED) < _SHARED_MAX:
            _SHARED[key] = fact
    return fact


def _check_type(value: Any, fact: str, where: str) -> None:
    spec = SPECS.get(fact)
    if value is None or spec is None or spec.type not in _TYPES:
        return
    kind, words = _TYPES[spec.type]
    if spec.type.startswith("list["):
        ok = isinstance(value, list) and all(isinstance(v, kind) and not isinstance(v, bool) for v in value)
    elif spec.type == "bool":
        ok = isinstance(value, bool)
    else:
        ok = isinstance(value, kind) and not isinstance(value, bool)
    if not ok:
        raise ReportError(f"{where}: expected {words} ({fact} is {spec.type}), got {_kind(value)}")


def _kind(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return {dict: "an object", list: "an array"}[type(value)]
    text = repr(value)
    return f"{type(value).__name__} {text[:40] + '...' if len(text) > 40 else text}"


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


def load_reports(paths: list[str], whole: bool = False) -> Loaded:
    """Every report under paths; the ones that cannot be used are listed with the reason, in order.
    `whole`: each with all its facts (read_report)."""
    files, invalid = find_report_files(paths)
    reports = []
    # Loading makes many small objects that all live to the end: the collector's full passes would walk
    # every one of them again and again (superlinear time). Collect once, after.
    enabled = gc.isenabled()
    gc.disable()
    try:
        for path in files:
            try:
                reports.append(read_report(path, whole))
            except ReportError as e:
                invalid.append(Invalid(path, str(e)))
    finally:
        if enabled:
            gc.enable()
    nodes, duplicates = name_nodes(reports)
    return Loaded(nodes=nodes, invalid=invalid, duplicates=duplicates)
