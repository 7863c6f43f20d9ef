"""Every Python environment on the machine, found through the host's files without starting anything.

`discover(files, places)` looks where each tool keeps its environments (places.py), resolves what it finds
to a prefix and a Python version, merges what several places found (a venv in ~/.virtualenvs that a
Jupyter kernel starts is one environment, found by both) and describes each from its files (layout.py).
An environment whose interpreter is gone, or whose directory conda or a kernel still names, is listed with
the reason, never dropped.
"""

from __future__ import annotations

import os
import re
from typing import Any, NamedTuple, Optional

from ..host import pyinspect
from . import layout, sources
from . import places as where
from .candidates import UV_PYTHON, Candidate, candidates, kernels
from .places import Places

# The kinds, in the order they are listed.
KINDS = ("system", "pyenv", "uv-python", "conda", "venv", "pipx", "uv-tool", "kernel")
LIB_PYTHON = re.compile(r"python(\d+\.\d+)t?")
RELEASE = re.compile(r"\d+\.\d+\.\d+")
CONDA_PYTHON = re.compile(r"python-(\d+\.\d+\.\d+)-.*\.json")


class Environment(NamedTuple):
    name: str  # stable: the directory's name, the kernel's, or the system interpreter's path
    kind: str  # one of KINDS
    prefix: str  # sys.prefix it would have
    interpreter: str  # its bin/python ("" when none is there)
    found_by: tuple[str, ...]  # every place that named it, first found first
    python: str  # its version (full where the layout says it, else X.Y; "" unknown)
    problem: str  # "" when it looks usable; else why it is broken
    dump: Optional[dict]  # pyinspect-shaped description (layout.describe); None when nothing to read


class Resolved(NamedTuple):
    candidate: Candidate
    prefix: str
    xy: str
    interpreter: str
    problem: str


def discover(files: Any, places: Places) -> list[Environment]:
    found = [r for r in (resolve(files, c) for c in candidates(files, places)) if r is not None]
    prefixes = {r.prefix for r in found if not r.problem.startswith(MISSING)}
    scanned = set(where.kernel_dirs(places))  # the system's (/usr/share/jupyter/kernels) belong to no one
    for prefix in sorted(prefixes):
        directory = os.path.join(prefix, "share", "jupyter", "kernels")
        if directory in scanned:
            continue
        for c in kernels(files, directory, places, prefix):
            r = resolve(files, c)
            if r is not None:
                found.append(r)
    return merge(files, found, places)


# --- what each is ------------------------------------------------------------------------------------------

MISSING = "no such directory"


def resolve(files: Any, c: Candidate) -> Optional[Resolved]:
    """The prefix, Python version and interpreter a candidate stands for; None for a directory of a scanned
    place that holds no Python environment."""
    if c.problem:  # a kernel that names no interpreter to read: listed as it is
        return Resolved(c, c.path, "", "", c.problem)
    if c.is_interpreter:
        return _resolve_interpreter(files, c)
    if not files.is_dir(c.path):
        return Resolved(c, c.path, "", "", f"{MISSING} (named by {c.how})") if c.listed else None
    xy = _prefix_xy(files, c.path)
    interpreter = layout.interpreter_in(files, c.path, xy)
    if not xy and not interpreter:
        if c.listed:
            return Resolved(c, c.path, "", "", f"no Python in {c.path} (named by {c.how})")
        return None
    return Resolved(c, c.path, xy, interpreter, _interpreter_problem(files, c.path, interpreter))


def _resolve_interpreter(files: Any, c: Candidate) -> Resolved:
    path = c.path
    if not files.lexists(path):
        prefix = os.path.dirname(os.path.dirname(path))
        return Resolved(c, prefix, "", path, f"{path}: no such file (named by {c.how})")
    root = os.path.dirname(os.path.dirname(path))
    if files.is_file(os.path.join(root, "pyvenv.cfg")) or files.is_dir(os.path.join(root, "conda-meta")):
        prefix = root  # a venv's python links to its base interpreter: the venv is what it runs
    else:
        real = files.real(path)
        prefix = os.path.dirname(os.path.dirname(real))
        m = LIB_PYTHON.fullmatch(os.path.basename(real))
        if m and files.is_dir(os.path.join(prefix, "lib", f"python{m.group(1)}")):
            return Resolved(c, prefix, m.group(1), path, _interpreter_problem(files, prefix, path))
    xy = _prefix_xy(files, prefix, files.real(path))
    return Resolved(c, prefix, xy, path, _interpreter_problem(files, prefix, path))


def _prefix_xy(files: Any, prefix: str, interpreter: str = "") -> str:
    """X.Y of the environment at `prefix`: its pyvenv.cfg's, else its lib/pythonX.Y directory's (the one
    the interpreter is named for where there are several, else the newest)."""
    version = _cfg_version(files, prefix)
    if version:
        return sources.xy(version)
    found = [
        m.group(1) for m in map(LIB_PYTHON.fullmatch, files.listdir(os.path.join(prefix, "lib")) or []) if m
    ]
    m = LIB_PYTHON.fullmatch(os.path.basename(interpreter)) if interpreter else None
    if m and m.group(1) in found:
        return m.group(1)
    return max(found, key=lambda v: tuple(int(n) for n in v.split(".")), default="")


def _cfg_version(files: Any, prefix: str) -> Optional[str]:
    """The Python version the environment's pyvenv.cfg records; None without one."""
    cfg = files.text(os.path.join(prefix, "pyvenv.cfg"), pyinspect.MAX_PYVENV_CFG)
    return None if cfg is None else sources.cfg_version(sources.pyvenv_cfg(cfg))


def _interpreter_problem(files: Any, prefix: str, interpreter: str) -> str:
    if not interpreter:
        return f"no interpreter in {os.path.join(prefix, 'bin')}"
    if files.is_file(interpreter):
        return ""
    if files.readlink(interpreter) is not None:
        return (
            f"{interpreter} is a dangling link to {files.real(interpreter)}: the Python it was made from is "
            "gone (recreate the environment)"
        )
    return f"{interpreter} is not a file"


def _full_version(files: Any, r: Resolved, kinds: set) -> str:
    """The full version where the layout records it: pyvenv.cfg, conda's python package record, a pyenv or
    uv install's directory name; else X.Y."""
    version = _cfg_version(files, r.prefix)
    if version and sources.xy(version) == r.xy:
        return version
    for name in files.listdir(os.path.join(r.prefix, "conda-meta")) or []:
        m = CONDA_PYTHON.fullmatch(name)
        if m and sources.xy(m.group(1)) == r.xy:
            return m.group(1)
    base = os.path.basename(r.prefix)
    m = UV_PYTHON.fullmatch(base)
    release = m.group(2) if m else base if "pyenv" in kinds and RELEASE.fullmatch(base) else ""
    return release if release and sources.xy(release) == r.xy else r.xy


# --- one entry per environment -----------------------------------------------------------------------------


def merge(files: Any, found: list[Resolved], places: Places) -> list[Environment]:
    """One Environment per resolved prefix and Python version, with every place that found it."""
    groups: dict[tuple, list[Resolved]] = {}
    for r in found:
        key = (files.real(r.prefix) if not r.problem.startswith(MISSING) else r.prefix, r.xy)
        if r.problem and not r.xy and not r.interpreter.startswith("/"):
            key = (r.candidate.path, "")  # nothing to merge on: a kernel that starts a wrapper
        groups.setdefault(key, []).append(r)
    out = []
    for group in groups.values():
        out.append(_entry(files, group, places))
    out.sort(key=lambda e: (KINDS.index(e.kind), _natural(e.name)))
    return _unique_names(out)


def _entry(files: Any, group: list[Resolved], places: Places) -> Environment:
    kinds = {r.candidate.kind for r in group}
    kind = _kind(files, group[0].prefix, kinds)
    # The name the tool itself gives it (a conda installation's `base`, a directory's) before a list's, and
    # a directory's own before a link's (pyenv's `3.12` alias of `3.12.1`); its path and version with it.
    ours = sorted(
        (r for r in group if r.candidate.kind == kind),
        key=lambda r: (r.candidate.listed, files.real(r.candidate.path) != r.candidate.path),
    )
    named_by = ours[0] if ours else group[0]
    usable = [r for r in group if not r.problem]
    best = named_by if not named_by.problem or not usable else usable[0]
    found_by = tuple(dict.fromkeys(r.candidate.how for r in group))
    interpreter = best.interpreter or next((r.interpreter for r in usable if r.interpreter), "")
    problem = "" if usable else named_by.problem
    dump = None
    python = ""
    if best.xy and files.is_dir(best.prefix):
        python = _full_version(files, best, kinds)
        dump = layout.describe(files, best.prefix, best.xy, interpreter, python, places.home)
    return Environment(
        named_by.candidate.name, kind, best.prefix, interpreter, found_by, python, problem, dump
    )


def _kind(files: Any, prefix: str, kinds: set) -> str:
    if files.is_dir(os.path.join(prefix, "conda-meta")):
        return "conda"
    if files.is_file(os.path.join(prefix, "pyvenv.cfg")):
        return next((k for k in ("pipx", "uv-tool") if k in kinds), "venv")
    order = ("pyenv", "uv-python", "system", "conda", "venv", "pipx", "uv-tool")
    return next((k for k in order if k in kinds), "kernel")


def _unique_names(envs: list[Environment]) -> list[Environment]:
    """Names as given, except that two environments with one name are told apart by their kind, then by
    a number."""
    count: dict[str, int] = {}
    for e in envs:
        count[e.name] = count.get(e.name, 0) + 1
    out, seen = [], set()
    for e in envs:
        name = e.name if count[e.name] == 1 else f"{e.name} ({e.kind})"
        n = 2
        unique = name
        while unique in seen:
            unique, n = f"{name} #{n}", n + 1
        seen.add(unique)
        out.append(e._replace(name=unique))
    return out


def holding(files: Any, envs: list[Environment], interpreter: str) -> Optional[Environment]:
    """The environment among `envs` that `interpreter` runs in (the same prefix and Python), or None."""
    r = resolve(files, Candidate(interpreter, "", "", "", is_interpreter=True))
    if r is None or not r.xy:
        return None
    wanted = (files.real(r.prefix), r.xy)
    return next(
        (e for e in envs if e.python and (files.real(e.prefix), sources.xy(e.python)) == wanted), None
    )


def _natural(name: str) -> tuple:
    """Names in a person's order: 3.9.18 before 3.10.13, v2 before v10."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", name))
