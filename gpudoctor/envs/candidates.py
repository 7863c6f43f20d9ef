"""Where each Python environment is named: the places of places.py listed, each entry a Candidate (a
prefix directory or an interpreter) with the words `found by` shows and the kind its place says it is.

Nothing here decides what a candidate is (find.py resolves them): a directory of a scanned place that holds
no Python environment is dropped there, one a list names (environments.txt, a kernel, VIRTUAL_ENV) is kept
with its reason.
"""

from __future__ import annotations

import os
import re
from typing import Any, NamedTuple, Optional

from . import layout, sources
from . import places as where
from .places import Places

SYSTEM_NAME = re.compile(r"python3(\.\d+)?")
UV_PYTHON = re.compile(r"(cpython|pypy|graalpy)-(\d+\.\d+\.\d+)\S*")


class Candidate(NamedTuple):
    path: str  # a prefix directory, or an interpreter when `is_interpreter`
    how: str  # found_by's words
    kind: str  # what the place says it is ("venv", "conda", "pipx", ..., "kernel")
    name: str
    is_interpreter: bool = False
    problem: str = ""  # known broken from the start (a kernel whose program is not Python)
    listed: bool = False  # named by a list (environments.txt, kernel.json, VIRTUAL_ENV): kept if missing


def candidates(files: Any, places: Places) -> list[Candidate]:
    home = places.home
    out: list[Candidate] = []
    active = places.var("VIRTUAL_ENV")
    if active:
        out.append(Candidate(active, "VIRTUAL_ENV", "venv", venv_name(active), listed=True))
    project = _project_venv(files, places.cwd)
    if project:
        out.append(Candidate(project, f"project .venv ({tilde(os.path.dirname(project), home)})", "venv",
                             venv_name(project)))  # fmt: skip
    for directory, label in where.venv_dirs(places):
        out += entries(files, directory, label, "venv")
    for directory in where.pipx_dirs(places):
        out += entries(files, directory, "pipx", "pipx")
    out += entries(files, where.uv_tool_dir(places), "uv tools", "uv-tool")
    out += [
        c
        for c in entries(files, where.uv_python_dir(places), "uv python", "uv-python")
        if UV_PYTHON.fullmatch(c.name)
    ]
    for directory in where.pyenv_dirs(places):
        for c in entries(files, directory, "pyenv", "pyenv"):
            out.append(c)
            # pyenv-virtualenv keeps its venvs under the version they were made from
            out += entries(files, os.path.join(c.path, "envs"), "pyenv-virtualenv", "venv")
    out += _conda(files, places)
    out += _system(files, places)
    for directory in where.kernel_dirs(places):
        out += kernels(files, directory, places)
    return out


def entries(files: Any, directory: str, how: str, kind: str) -> list[Candidate]:
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
        out.append(Candidate(prefix, "~/.conda/environments.txt", "conda", conda_name(prefix), listed=True))
    for root in where.conda_roots(places):
        if files.is_dir(os.path.join(root, "conda-meta")):
            out.append(Candidate(root, f"conda base {tilde(root, home)}", "conda", "base"))
    for directory in where.conda_envs_dirs(places):
        out += entries(files, directory, tilde(directory, home), "conda")
    active = places.var("CONDA_PREFIX")
    if active:
        out.append(Candidate(active, "CONDA_PREFIX", "conda", conda_name(active), listed=True))
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


def kernels(files: Any, directory: str, places: Places, owner: str = "") -> list[Candidate]:
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
            program = layout.interpreter_in(files, owner, "") or program
        elif "/" not in program:
            program = _on_path(files, program, places) or program
        if not sources.is_python_name(program):
            problem = (
                f"the kernel starts {spec.argv0}, not a Python interpreter: which environment it runs "
                "cannot be read from its kernel.json"
            )
            out.append(Candidate(program, how, "kernel", name, True, problem, listed=True))
        elif "/" not in program:  # an environment's own kernel, and no interpreter in that environment
            problem = f"the kernel starts `{program}`, and {owner}/bin holds none"
            out.append(Candidate(spec_path, how, "kernel", name, True, problem, listed=True))
        else:
            out.append(Candidate(program, how, "kernel", name, True, listed=True))
    return out


def _on_path(files: Any, name: str, places: Places) -> Optional[str]:
    for directory in places.path_dirs():
        path = os.path.join(directory, name)
        if files.is_file(path):
            return path
    return None


def venv_name(prefix: str) -> str:
    """A venv's name: its directory's, or `project/.venv` for a project's."""
    prefix = prefix.rstrip("/")
    base = os.path.basename(prefix)
    return f"{os.path.basename(os.path.dirname(prefix))}/{base}" if base.startswith(".") else base


def conda_name(prefix: str) -> str:
    """The directory's name (conda's own for an environment in an envs directory)."""
    return os.path.basename(prefix.rstrip("/")) or prefix


def tilde(path: str, home: str) -> str:
    home = home.rstrip("/")
    return "~" + path[len(home) :] if home and (path == home or path.startswith(home + "/")) else path
