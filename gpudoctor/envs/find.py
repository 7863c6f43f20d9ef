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

from . import layout, sources
from . import places as where
from .places import Places

# The kinds, in the order they are listed.
KINDS = ("system", "pyenv", "uv-python", "conda", "venv", "pipx", "uv-tool", "kernel")
LIB_PYTHON = re.compile(r"python(\d+\.\d+)t?")
SYSTEM_NAME = re.compile(r"python3(\.\d+)?")
UV_PYTHON = re.compile(r"(cpython|pypy|graalpy)-(\d+\.\d+\.\d+)\S*")
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


class Candidate(NamedTuple):
    path: str  # a prefix directory, or an interpreter when `is_interpreter`
    how: str  # found_by's words
    kind: str  # what the place says it is ("venv", "conda", "pipx", ..., "kernel")
    name: str
    is_interpreter: bool = False
    problem: str = ""  # known broken from the start (a kernel whose program is not Python)
    listed: bool = False  # named by a list (environments.txt, kernel.json, VIRTUAL_ENV): kept if missing


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
        for c in _kernels(files, directory, places, prefix):
            r = resolve(files, c)
            if r is not None:
                found.append(r)
    return merge(files, found, places)


# --- where to look -----------------------------------------------------------------------------------------


def candidates(files: Any, places: Places) -> list[Candidate]:
    home = places.home
    out: list[Candidate] = []
    active = places.var("VIRTUAL_ENV")
    if active:
        out.append(Candidate(active, "VIRTUAL_ENV", "venv", _venv_name(active), listed=True))
    project = _project_venv(files, places.cwd)
    if project:
        out.append(Candidate(project, f"project .venv ({_tilde(os.path.dirname(project), home)})", "venv",
                             _venv_name(project)))  # fmt: skip
    for directory, label in where.venv_dirs(places):
        out += _entries(files, directory, label, "venv")
    for directory in where.pipx_dirs(places):
        out += _entries(files, directory, "pipx", "pipx")
    out += _entries(files, where.uv_tool_dir(places), "uv tools", "uv-tool")
    out += [
        c
        for c in _entries(files, where.uv_python_dir(places), "uv python", "uv-python")
        if UV_PYTHON.fullmatch(c.name)
    ]
    for directory in where.pyenv_dirs(places):
        for c in _entries(files, directory, "pyenv", "pyenv"):
            out.append(c)
            # pyenv-virtualenv keeps its venvs under the version they were made from
            out += _entries(files, os.path.join(c.path, "envs"), "pyenv-virtualenv", "venv")
    out += _conda(files, places)
    out += _system(files, places)
    for directory in where.kernel_dirs(places):
        out += _kernels(files, directory, places)
    return out


def _entries(files: Any, directory: str, how: str, kind: str) -> list[Candidate]:
    """Each directory in `directory` (hidden ones and files, such as virtualenvwrapper's hook scripts,
    are not environments)."""
    out = []
    for name in files.listdir(directory) or []:
        path = os.path.join(directory, name)
        if not name.startswith(".") and files.is_dir(path):
            out.append(Candidate(path, how, kind, name))
    return out


def _project_venv(files: Any, cwd: str) -> Optional[str]:
    """The nearest `.venv` from the working directory up (where uv and most editors look for it)."""
    here = os.path.abspath(cwd) if cwd else ""
    while here:
        candidate = os.path.join(here, ".venv")
        if files.is_dir(candidate):
            return candidate
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent
    return None


def _conda(files: Any, places: Places) -> list[Candidate]:
    home = places.home
    out = []
    listed = files.text(where.environments_txt(places))
    for prefix in sources.environments_txt(listed or ""):
        out.append(Candidate(prefix, "~/.conda/environments.txt", "conda", _conda_name(prefix), listed=True))
    for root in where.conda_roots(places):
        if files.is_dir(os.path.join(root, "conda-meta")):
            out.append(Candidate(root, f"conda base {_tilde(root, home)}", "conda", "base"))
    for directory in where.conda_envs_dirs(places):
        out += _entries(files, directory, _tilde(directory, home), "conda")
    active = places.var("CONDA_PREFIX")
    if active:
        out.append(Candidate(active, "CONDA_PREFIX", "conda", _conda_name(active), listed=True))
    return out


def _system(files: Any, places: Places) -> list[Candidate]:
    """python3 and python3.X in the system's bin directories, and python3, python3.X and python on PATH.
    Shim directories (pyenv's, asdf's) hold scripts that choose a version found elsewhere: not read."""
    out = []
    dirs = [(d, d, False) for d in places.system_bins] + [(d, "PATH", True) for d in places.path_dirs()]
    for directory, how, on_path in dirs:
        if directory.rstrip("/").endswith("/shims"):
            continue
        for name in files.listdir(directory) or []:
            if SYSTEM_NAME.fullmatch(name) or (on_path and name == "python"):
                path = os.path.join(directory, name)
                if layout.machine(files, path):  # an ELF interpreter, not a wrapper script
                    out.append(Candidate(path, how, "system", files.real(path), is_interpreter=True))
    return out


def _kernels(files: Any, directory: str, places: Places, owner: str = "") -> list[Candidate]:
    """The kernels in a kernelspec directory (`owner`: the environment whose share/jupyter/kernels it is).

    A kernel whose program is a bare `python`, `python3` or `python3.X` is started by Jupyter with its own
    interpreter (jupyter/jupyter_client@23a116b72a15623228c5d448dfa0a4cda13bc1f8:jupyter_client/manager.py,
    KernelManager.format_kernel_cmd). ipykernel's wheel installs such a kernel into every environment it is
    installed in (share/jupyter/kernels/python3, argv[0] `python`: ipython/ipykernel@
    08d9d18be1e0133777936954dc69424f44ae138b:hatch_build.py), which only a Jupyter running from that
    environment reads: there it is the environment's interpreter. Elsewhere it is whichever Jupyter starts
    it, which no file says."""
    out = []
    for name in files.listdir(directory) or []:
        spec_path = os.path.join(directory, name, "kernel.json")
        text = files.text(spec_path)
        if text is None:
            continue
        how = f"jupyter kernel '{name}'"
        try:
            spec = sources.kernel_spec(text)
        except ValueError as e:
            out.append(Candidate(spec_path, how, "kernel", name, True, f"{spec_path}: {e}", listed=True))
            continue
        if spec.language and spec.language != "python":
            continue  # an R or Julia kernel: not a Python environment
        program = spec.argv0
        if "/" not in program and sources.is_python_name(program):
            if not owner:
                problem = (
                    f"the kernel starts `{program}`, which Jupyter replaces with its own interpreter: the "
                    "environment it runs is the one Jupyter runs from"
                )
                out.append(Candidate(spec_path, how, "kernel", name, True, problem, listed=True))
                continue
            program = _interpreter_in(files, owner, "") or program
        elif "/" not in program:
            program = _on_path(files, program, places) or program
        if not sources.is_python_name(program):
            problem = (
                f"the kernel starts {spec.argv0}, not a Python interpreter: which environment it runs "
                "cannot be read from its kernel.json"
            )
            out.append(Candidate(program, how, "kernel", name, True, problem, listed=True))
        elif "/" not in program:
            out.append(
                Candidate(program, how, "kernel", name, True, f"{program} is not on PATH", listed=True)
            )
        else:
            out.append(Candidate(program, how, "kernel", name, True, listed=True))
    return out


def _on_path(files: Any, name: str, places: Places) -> Optional[str]:
    for directory in places.path_dirs():
        path = os.path.join(directory, name)
        if files.is_file(path):
            return path
    return None


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
    interpreter = _interpreter_in(files, c.path, xy)
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
    cfg = files.text(os.path.join(prefix, "pyvenv.cfg"), layout.MAX_PYVENV_CFG)
    if cfg is not None:
        version = sources.cfg_version(sources.pyvenv_cfg(cfg))
        if version:
            return sources.xy(version)
    found = [
        m.group(1) for m in map(LIB_PYTHON.fullmatch, files.listdir(os.path.join(prefix, "lib")) or []) if m
    ]
    m = LIB_PYTHON.fullmatch(os.path.basename(interpreter)) if interpreter else None
    if m and m.group(1) in found:
        return m.group(1)
    return max(found, key=lambda v: tuple(int(n) for n in v.split(".")), default="")


def _interpreter_in(files: Any, prefix: str, xy: str) -> str:
    """The environment's interpreter: bin/python, bin/python3 or bin/pythonX.Y, a dangling link too."""
    names = ["python", "python3"] + ([f"python{xy}"] if xy else [])
    for name in names:
        path = os.path.join(prefix, "bin", name)
        if files.lexists(path):
            return path
    return ""


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
    cfg = files.text(os.path.join(r.prefix, "pyvenv.cfg"), layout.MAX_PYVENV_CFG)
    if cfg is not None:
        version = sources.cfg_version(sources.pyvenv_cfg(cfg))
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


def _natural(name: str) -> tuple:
    """Names in a person's order: 3.9.18 before 3.10.13, v2 before v10."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", name))


def _venv_name(prefix: str) -> str:
    """A venv's name: its directory's, or `project/.venv` for a project's."""
    prefix = prefix.rstrip("/")
    base = os.path.basename(prefix)
    return f"{os.path.basename(os.path.dirname(prefix))}/{base}" if base.startswith(".") else base


def _conda_name(prefix: str) -> str:
    """The directory's name (conda's own for an environment in an envs directory)."""
    return os.path.basename(prefix.rstrip("/")) or prefix


def _tilde(path: str, home: str) -> str:
    home = home.rstrip("/")
    return "~" + path[len(home) :] if home and (path == home or path.startswith(home + "/")) else path
