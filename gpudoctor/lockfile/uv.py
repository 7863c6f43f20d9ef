"""uv.lock: uv's universal lock, one [[package]] per resolved distribution (several for one name where the
resolution forks by platform or Python, each with its `resolution-markers`).

What applies to the target is what `uv sync` would install there: the project (a `virtual` or `editable`
source) and everything reached from it through `dependencies`, the default dev group and the project's
extras (by default every extra that conflicts with none: see parse), over edges whose markers hold. A lock without such a root (exported oddly) falls back to the packages'
own resolution markers. A registry package's version carries the local tag of its wheel ("2.5.1+cu124");
one from a PyTorch-style index without it is given the index's variant.
"""

from __future__ import annotations

from typing import Optional

from .model import Lock, LockError, Pin, finish, load_toml, normalise, tables, text_of, with_variant
from .target import Target, marker_holds

FORMAT = "uv.lock"
ROOT_SOURCES = ("virtual", "editable")
DEFAULT_GROUPS = ("dev",)  # `uv sync` installs the dev group unless told otherwise


def parse(text: str, path: str, t: Target, extras: Optional[tuple] = None) -> Lock:
    """The pins `uv sync --extra ...` installs on the target with the project's `extras`; None: every
    extra that conflicts with none (a gate judges all that may be installed; of conflicting extras, such as
    a cpu and a cu124 variant of torch, only one can be, so none is judged unless named)."""
    data = load_toml(text, path)
    if not isinstance(data.get("version"), int) or "package" not in data:
        raise LockError(f"{path}: not a uv.lock (no `version` and [[package]] tables)")
    packages = tables(data, "package", path)
    skipped: list = []
    entries = []  # (name, version, source dict, package table)
    for number, pkg in enumerate(packages, 1):
        name = normalise(text_of(pkg.get("name")))
        source = pkg.get("source") if isinstance(pkg.get("source"), dict) else {}
        if not name:
            skipped.append(f"[[package]] {number}: no name")
            continue
        entries.append((name, text_of(pkg.get("version")), source, pkg))
    conflicting = _conflicting(data)
    if extras is None:
        extras = tuple(e for e in _root_extras(entries) if e not in conflicting)
    reached = _walk(entries, t, skipped, tuple(sorted(extras)))
    pins = []
    versions = {}
    for i in reached:
        versions.setdefault(entries[i][0], entries[i][1])
    for i, (name, version, source, pkg) in enumerate(entries):
        where = f"{name} {version}".strip()
        if any(k in source for k in ROOT_SOURCES):
            skipped.append(f"{where}: the locked project itself ({_kind(source)} source), not a dependency")
            continue
        if i not in reached:
            skipped.append(f"{where}: {_extra_of(entries, i, conflicting) or _why_not(pkg, t)}")
            continue
        if not version:
            skipped.append(f"{where}: no version ({_kind(source)} source)")
            continue
        index = text_of(source.get("registry")) or text_of(source.get("url"))
        requires = sorted(
            f"{entries[j][0]}=={entries[j][1]}" for j in _edges(entries, i, t, skipped=None) if entries[j][1]
        )
        pins.append(Pin(name, with_variant(name, version, index), index, requires))
    return finish(path, FORMAT, text_of(data.get("requires-python")), pins, skipped)


def _kind(source: dict) -> str:
    return next(iter(source), "unknown")


def _why_not(pkg: dict, t: Target) -> str:
    markers = [m for m in pkg.get("resolution-markers", []) if isinstance(m, str)]
    place = f"{t.platform} {t.machine}" + (f" Python {t.python}" if t.python else "")
    if markers and not any(_holds(m, t) for m in markers):
        return f"its resolution markers ({'; '.join(markers)}) do not hold on {place}"
    return f"not installed on {place}: nothing that is required there requires it"


def _root_extras(entries: list) -> list:
    out = []
    for root in (e for e in entries if any(k in e[2] for k in ROOT_SOURCES)):
        optional = root[3].get("optional-dependencies")
        out += [str(extra) for extra in optional] if isinstance(optional, dict) else []
    return out


def _conflicting(data: dict) -> set:
    """The extras named in the lock's `conflicts` (sets of extras that cannot be installed together)."""
    sets = data.get("conflicts") if isinstance(data.get("conflicts"), list) else []
    return {
        str(item["extra"])
        for group in sets
        if isinstance(group, list)
        for item in group
        if isinstance(item, dict) and "extra" in item
    }


def _extra_of(entries: list, i: int, conflicting: set) -> str:
    """ "installed only with the project's extra X" when a root's optional dependencies name entry i."""
    names = []
    for root in (e for e in entries if any(k in e[2] for k in ROOT_SOURCES)):
        optional = root[3].get("optional-dependencies")
        for extra, deps in optional.items() if isinstance(optional, dict) else []:
            if any(isinstance(d, dict) and _resolve(entries, d) == i for d in deps or []):
                names.append(str(extra))
    if not names:
        return ""
    which = " or ".join(names)
    if any(name in conflicting for name in names):
        return (
            f"installed only with the project's extra {which}, which conflicts with another: name the extra"
        )
    return f"installed only with the project's extra {which}, not asked for"


def _holds(marker: str, t: Target) -> bool:
    try:
        return marker_holds(marker, t)
    except LockError:
        return True  # a marker packaging cannot read: not ruled out


def _resolve(entries: list, dep: dict):
    """The entry a dependency edge names: by name, and version and source where the edge gives them."""
    name = normalise(text_of(dep.get("name")))
    version = text_of(dep.get("version"))
    source = dep.get("source") if isinstance(dep.get("source"), dict) else None
    for j, (n, v, s, _pkg) in enumerate(entries):
        if n == name and (not version or v == version) and (source is None or s == source):
            return j
    return None


def _edges(entries: list, i: int, t: Target, skipped, root: bool = False, extras: tuple = ()) -> list:
    """The entries package i requires on the target: its dependencies whose markers hold, the default dev
    group's for a root, and the optional dependencies of the extras asked for."""
    pkg = entries[i][3]
    deps = list(pkg.get("dependencies", []) or [])
    optional = pkg.get("optional-dependencies") or {}
    for extra in extras:
        deps += list(optional.get(extra, []) or []) if isinstance(optional, dict) else []
    groups = pkg.get("dev-dependencies") or {}
    if root and isinstance(groups, dict):
        for group in DEFAULT_GROUPS:
            deps += list(groups.get(group, []) or [])
    out = []
    for dep in deps:
        if not isinstance(dep, dict):
            continue
        marker = text_of(dep.get("marker"))
        try:
            holds = marker_holds(marker, t)
        except LockError as e:
            if skipped is not None:
                skipped.append(f"{entries[i][0]} -> {dep.get('name')}: {e.reason}")
            holds = False
        j = _resolve(entries, dep) if holds else None
        if j is not None:
            out.append(j)
    return out


def _walk(entries: list, t: Target, skipped: list, extras: tuple) -> set:
    """The entries installed on the target: reached from the project (with `extras`) through edges that
    hold. Without a project in the lock, every entry whose resolution markers hold (or that has none)."""
    roots = [i for i, e in enumerate(entries) if any(k in e[2] for k in ROOT_SOURCES)]
    if not roots:
        return {
            i
            for i, e in enumerate(entries)
            if not e[3].get("resolution-markers") or any(_holds(m, t) for m in e[3]["resolution-markers"])
        }
    seen: set = set()
    todo = [(i, extras, True) for i in roots]
    asked: set = set()
    while todo:
        i, extras, root = todo.pop()
        if (i, extras) in asked:
            continue
        asked.add((i, extras))
        seen.add(i)
        pkg = entries[i][3]
        deps = list(pkg.get("dependencies", []) or [])
        for j in _edges(entries, i, t, skipped, root=root, extras=extras):
            wanted = ()
            for dep in deps:
                if (
                    isinstance(dep, dict)
                    and _resolve(entries, dep) == j
                    and isinstance(dep.get("extra"), list)
                ):
                    wanted = tuple(sorted(str(x) for x in dep["extra"]))
            todo.append((j, wanted, False))
    return {i for i in seen if i not in roots} | set(roots)
