"""uv.lock: uv's universal lock, one [[package]] per resolved distribution (several for one name where the
resolution forks by platform or Python, each with its `resolution-markers`).

What applies to the target is what `uv sync` would install there: the project (a `virtual` or `editable`
source) and everything reached from it through `dependencies`, the default dev group and the project's
extras (by default every extra that conflicts with none: see parse), over edges whose markers hold. A lock
without such a root falls back to the packages' own resolution markers. A registry package's version
carries the local tag of its wheel ("2.5.1+cu124"); one from a PyTorch-style index without it is given
the index's variant.
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
    skipped: list = []
    graph = Graph(tables(data, "package", path), t, skipped)
    conflicting = _conflicting(data)
    if extras is None:
        extras = tuple(e for e in graph.root_extras() if e not in conflicting)
    reached = graph.walk(tuple(sorted(extras)))
    pins = []
    for i, (name, version, source, pkg) in enumerate(graph.entries):
        where = f"{name} {version}".strip()
        if i in graph.roots:
            skipped.append(f"{where}: the locked project itself ({_kind(source)} source), not a dependency")
        elif i not in reached:
            skipped.append(
                f"{where}: {_markers_fail(pkg, t) or graph.extra_of(i, conflicting) or _unreached(t)}"
            )
        elif not version:
            skipped.append(f"{where}: no version ({_kind(source)} source)")
        else:
            index = text_of(source.get("registry")) or text_of(source.get("url"))
            deps = graph.edges(i, extras=reached[i])
            requires = sorted({f"{graph.entries[j][0]}=={graph.entries[j][1]}" for j, _ in deps})
            pins.append(Pin(name, with_variant(name, version, index), index, requires))
    return finish(path, FORMAT, text_of(data.get("requires-python")), pins, skipped)


class Graph:
    """The lock's packages and their dependency edges, as judged on one target."""

    def __init__(self, packages: list, t: Target, skipped: list) -> None:
        self.t = t
        self.skipped = skipped  # where an edge whose marker cannot be read is reported
        self.entries: list = []  # (name, version, source table, package table)
        for number, pkg in enumerate(packages, 1):
            name = normalise(text_of(pkg.get("name")))
            if not name:
                skipped.append(f"[[package]] {number}: no name")
                continue
            source = pkg.get("source") if isinstance(pkg.get("source"), dict) else {}
            self.entries.append((name, text_of(pkg.get("version")), source, pkg))
        self.by_name: dict = {}
        for i, entry in enumerate(self.entries):
            self.by_name.setdefault(entry[0], []).append(i)
        self.roots = [i for i, e in enumerate(self.entries) if any(k in e[2] for k in ROOT_SOURCES)]

    def resolve(self, dep: dict) -> Optional[int]:
        """The entry a dependency edge names: by name, and by version and source where the edge gives them."""
        version = text_of(dep.get("version"))
        source = dep.get("source") if isinstance(dep.get("source"), dict) else None
        for i in self.by_name.get(normalise(text_of(dep.get("name"))), ()):
            _name, v, s, _pkg = self.entries[i]
            if (not version or v == version) and (source is None or s == source):
                return i
        return None

    def edges(self, i: int, extras: tuple = (), root: bool = False) -> list:
        """(entry, edge table) of what package i requires on the target: its dependencies whose markers
        hold, the optional dependencies of the extras asked for, and for a root the default dev group's."""
        pkg = self.entries[i][3]
        deps = list(_list(pkg.get("dependencies")))
        optional = (
            pkg.get("optional-dependencies") if isinstance(pkg.get("optional-dependencies"), dict) else {}
        )
        for extra in extras:
            deps += _list(optional.get(extra))
        groups = pkg.get("dev-dependencies") if isinstance(pkg.get("dev-dependencies"), dict) else {}
        if root:
            for group in DEFAULT_GROUPS:
                deps += _list(groups.get(group))
        out = []
        for dep in deps:
            if not isinstance(dep, dict):
                continue
            try:
                holds = marker_holds(text_of(dep.get("marker")), self.t)
            except LockError as e:
                self.skipped.append(f"{self.entries[i][0]} -> {dep.get('name')}: {e.reason}")
                continue
            j = self.resolve(dep) if holds else None
            if j is not None:
                out.append((j, dep))
        return out

    def walk(self, extras: tuple) -> dict:
        """{entry: the extras asked of it} of the entries installed on the target: reached from the project
        (with `extras`) through edges that hold. Without a project in the lock, every entry whose
        resolution markers hold (or that has none)."""
        if not self.roots:
            return {i: () for i, e in enumerate(self.entries) if _markers_hold(e[3], self.t)}
        reached: dict = {}
        asked: set = set()
        todo = [(i, extras, True) for i in self.roots]
        while todo:
            i, wanted, root = todo.pop()
            if (i, wanted) in asked:
                continue
            asked.add((i, wanted))
            reached[i] = tuple(sorted(set(reached.get(i, ())) | set(wanted)))
            for j, dep in self.edges(i, wanted, root):
                extra = dep.get("extra") if isinstance(dep.get("extra"), list) else []
                todo.append((j, tuple(sorted(str(x) for x in extra)), False))
        return reached

    def root_extras(self) -> list:
        return [
            str(extra) for i in self.roots for extra in _table(self.entries[i][3], "optional-dependencies")
        ]

    def extra_of(self, i: int, conflicting: set) -> str:
        """Why entry i is not installed when only a root's extras require it ("" when none does)."""
        names = [
            str(extra)
            for root in self.roots
            for extra, deps in _table(self.entries[root][3], "optional-dependencies").items()
            if any(
                isinstance(d, dict) and self.resolve(d) == i and _holds(text_of(d.get("marker")), self.t)
                for d in _list(deps)
            )
        ]
        if not names:
            return ""
        which = " or ".join(names)
        if any(name in conflicting for name in names):
            return (
                f"installed only with the project's extra {which}, which conflicts with another: "
                "name the extra"
            )
        return f"installed only with the project's extra {which}, not asked for"


def _list(value: object) -> list:
    return value if isinstance(value, list) else []


def _table(pkg: dict, key: str) -> dict:
    return pkg[key] if isinstance(pkg.get(key), dict) else {}


def _kind(source: dict) -> str:
    return next(iter(source), "unknown")


def _markers_hold(pkg: dict, t: Target) -> bool:
    markers = [m for m in _list(pkg.get("resolution-markers")) if isinstance(m, str)]
    return not markers or any(_holds(m, t) for m in markers)


def _place(t: Target) -> str:
    return f"{t.platform} {t.machine}" + (f" Python {t.python}" if t.python else "")


def _markers_fail(pkg: dict, t: Target) -> str:
    """Why a package's own resolution markers rule it out on the target ("" when they do not)."""
    if _markers_hold(pkg, t):
        return ""
    markers = "; ".join(m for m in _list(pkg.get("resolution-markers")) if isinstance(m, str))
    return f"its resolution markers ({markers}) do not hold on {_place(t)}"


def _unreached(t: Target) -> str:
    return f"not installed on {_place(t)}: nothing that is required there requires it"


def _holds(marker: str, t: Target) -> bool:
    try:
        return marker_holds(marker, t)
    except LockError:
        return True  # a marker packaging cannot read: not ruled out


def _conflicting(data: dict) -> set:
    """The extras named in the lock's `conflicts` (sets of extras that cannot be installed together)."""
    return {
        str(item["extra"])
        for group in _list(data.get("conflicts"))
        if isinstance(group, list)
        for item in group
        if isinstance(item, dict) and "extra" in item
    }
