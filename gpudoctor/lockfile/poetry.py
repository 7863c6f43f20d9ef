"""poetry.lock: one [[package]] per locked distribution, its [package.dependencies] as constraints with
markers, and [package.source] where it does not come from the default index.

Lock format 2.0 (Poetry 1.x) has no per-package markers: a package is locked once per distinct source,
e.g. a wheel URL per Python (cp310, cp311...), and which one installs follows from the wheel's tags. Format
2.1 (Poetry 2) adds `markers`. A torch locked from a PyTorch-style source (`type = "legacy"`, url ending
/whl/cu118) without the local tag in its version is given the source's variant.
"""

from __future__ import annotations

from typing import Optional

from .model import Lock, LockError, Pin, entry_of, finish, load_toml, normalise, tables, text_of, with_variant
from .target import Target, marker_holds, wheel_misfit

FORMAT = "poetry.lock"


def parse(text: str, path: str, t: Target, extras: Optional[tuple] = None) -> Lock:
    """The pins `poetry install` installs on the target with `extras` (the lock's [extras] names); None:
    every extra (a gate judges all that may be installed; a poetry.lock has one resolution for them all)."""
    data = load_toml(text, path)
    metadata = data.get("metadata")
    if not isinstance(metadata, dict) or "package" not in data and "content-hash" not in metadata:
        raise LockError(f"{path}: not a poetry.lock (no [metadata] with content-hash)")
    skipped: list = []
    applied = []  # (pin, its dependencies table)
    for number, pkg in enumerate(tables(data, "package", path), 1):
        name, version, where, lacks = entry_of(pkg, "package", number)
        if lacks:
            skipped.append(f"{where}: no {lacks}")
            continue
        why = _not_here(pkg, t)
        if why:
            skipped.append(f"{where}: {why}")
            continue
        source = pkg.get("source") if isinstance(pkg.get("source"), dict) else {}
        index = text_of(source.get("url")) if source.get("type") in ("legacy", "url") else ""
        deps = pkg.get("dependencies") if isinstance(pkg.get("dependencies"), dict) else {}
        applied.append((Pin(name, with_variant(name, version, index), index, []), deps))
    if extras is not None:
        applied = _installed(applied, data.get("extras"), extras, t, skipped, tables(data, "package", path))
    versions = {}
    for pin, _ in applied:
        versions.setdefault(pin.name, pin.version)
    pins = []
    for pin, deps in applied:
        names = [normalise(n) for n, spec in deps.items() if _required(spec, t)]
        pins.append(pin._replace(requires=sorted(f"{n}=={versions[n]}" for n in names if n in versions)))
    python = text_of(metadata.get("python-versions"))
    return finish(path, FORMAT, "" if python == "*" else python, pins, skipped)


def _installed(applied: list, table: object, extras: tuple, t: Target, skipped: list, packages: list) -> list:
    """The applied entries `poetry install -E ...` installs: every one not marked optional, and the optional
    ones the chosen extras name or what those require (through dependencies that hold)."""
    optional = {normalise(text_of(p.get("name"))) for p in packages if p.get("optional")}
    named = table if isinstance(table, dict) else {}
    wanted = {
        normalise(str(n)) for e in extras for n in (named.get(e) or []) if isinstance(named.get(e), list)
    }
    deps = {}
    for pin, spec in applied:
        deps.setdefault(pin.name, set()).update(normalise(n) for n, v in spec.items() if _required(v, t))
    todo = list(wanted) + [pin.name for pin, _ in applied if pin.name not in optional]
    reached: set = set()
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            todo += deps.get(name, ())
    extra_of = {normalise(str(n)): e for e, names in named.items() if isinstance(names, list) for n in names}
    out = []
    for pin, spec in applied:
        if pin.name in reached:
            out.append((pin, spec))
        else:
            hint = f" (poetry install -E {extra_of[pin.name]})" if pin.name in extra_of else ""
            skipped.append(f"{pin.name} {pin.version}: optional, and no extra asked for requires it{hint}")
    return out


def _not_here(pkg: dict, t: Target) -> str:
    """Why a package does not install on the target ("" when it does): its markers (format 2.1) do not
    hold, or its only file, a wheel URL, is for another platform or Python."""
    markers = pkg.get("markers")
    if isinstance(markers, dict):  # per dependency group
        markers = [m for m in markers.values() if isinstance(m, str)]
    elif isinstance(markers, str):
        markers = [markers]
    else:
        markers = []
    try:
        if markers and not any(marker_holds(m, t) for m in markers):
            return f"its markers ({'; '.join(markers)}) do not hold on {t.platform} {t.machine}"
    except LockError as e:
        return e.reason
    source = pkg.get("source") if isinstance(pkg.get("source"), dict) else {}
    if source.get("type") == "url":
        misfit = wheel_misfit(text_of(source.get("url")).replace("%2B", "+"), t)
        if misfit:
            return misfit
    return ""


def _required(spec: object, t: Target) -> bool:
    """Whether a [package.dependencies] value requires the dependency on the target: a plain constraint
    always; a table unless it is optional (an extra's) or its markers or python constraint rule it out; a
    list of tables (one per environment) when any of them does."""
    if isinstance(spec, str):
        return True
    if isinstance(spec, list):
        return any(_required(s, t) for s in spec)
    if not isinstance(spec, dict) or spec.get("optional"):
        return False
    try:
        if not marker_holds(text_of(spec.get("markers")), t):
            return False
    except LockError:
        return True  # not ruled out
    python = text_of(spec.get("python"))
    return not python or not t.python or _python_allows(python, t.python)


def _python_allows(constraint: str, python: str) -> bool:
    """A Poetry python constraint (">=3.9,<3.13", "^3.8", "3.10") against a version; unreadable: True."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    text = constraint.replace(" ", "")
    if text.startswith("^"):
        major, _, rest = text[1:].partition(".")
        text = f">={text[1:]},<{int(major) + 1}" if major.isdigit() else text
    elif text[:1].isdigit():
        text = f"=={text}.*" if text.count(".") < 2 else f"=={text}"
    try:
        return any(SpecifierSet(part).contains(python) for part in text.split("||"))
    except InvalidSpecifier:
        return True
