"""`conda run`, `mamba run`, `micromamba run`: the environment they run the command in
(host/command_python.py reads the rest). `conda run`, read 2026-12-05 at
docs.conda.io/projects/conda/en/stable/commands/run.html: -n NAME or -p PREFIX, else the active environment.
A name is found as conda's locate_prefix_by_name finds it (conda/base/context.py: base/root is the root
prefix, else the first of Context.envs_dirs holding it)."""

from __future__ import annotations

import os
from typing import Any, Optional, Union

from .command_words import Inside, Judged, find, last, read_options, said, tail

# Options of `conda run` (docs.conda.io/projects/conda/en/stable/commands/run.html, read 2026-12-05) and of
# `micromamba run` / `mamba run` that take a value.
CONDA_VALUES = frozenset(
    (
        "-n",
        "--name",
        "-p",
        "--prefix",
        "--cwd",
        "-r",
        "--root-prefix",
        "-a",
        "--attach",
        "--label",
        "-e",
        "--env",
    )
)


def conda_run(tool: str, argv: list, env: dict, cwd: str, files: Any, how: str) -> Union[Judged, Inside]:
    args = argv[1:]
    run_at = read_options(args, CONDA_VALUES)[1]
    options = args[run_at + 1 :]
    found, start = read_options(options, CONDA_VALUES)
    command = options[start:]
    prefix = last(found, "-p", "--prefix")
    name = last(found, "-n", "--name")
    if prefix:
        prefix, what = (
            os.path.normpath(os.path.join(cwd, _user(prefix, env))),
            f"{tool} run -p {prefix}",
        )
    elif name:
        root = _conda_root(tool, argv, found, env, cwd, files)
        prefix, where = _conda_env(name, root, env, files)
        if prefix is None:
            dirs = ", ".join(_envs_dirs(root, env)) or "no envs directory known"
            listed = f"; {where}" if where else " nor in ~/.conda/environments.txt"
            return Judged(
                None, f"{tool} run -n {name}: no environment of that name in {dirs}{listed}{tail(how)}"
            )
        what = f"{tool} run -n {name}: the environment {prefix} ({where})"
    elif env.get("CONDA_PREFIX"):
        prefix, what = env["CONDA_PREFIX"], f"{tool} run: the active environment"
    else:
        root = _conda_root(tool, argv, found, env, cwd, files)
        if root is None:
            return Judged(None, f"{tool} run without -n or -p: its base environment is not known{tail(how)}")
        prefix, what = root, f"{tool} run: the base environment"
    return Inside(prefix, command, False, said(what, how))


def _conda_root(tool: str, argv: list, found: list, env: dict, cwd: str, files: Any) -> Optional[str]:
    """The root (base) prefix: micromamba's -r / MAMBA_ROOT_PREFIX, conda's CONDA_ROOT_PREFIX, else the
    installation the command's conda runs from (<root>/bin/conda or <root>/condabin/conda)."""
    given = last(found, "-r", "--root-prefix")
    if given:
        return os.path.join(cwd, _user(given, env))
    for var in ("MAMBA_ROOT_PREFIX", "CONDA_ROOT_PREFIX") if tool != "conda" else ("CONDA_ROOT_PREFIX",):
        if env.get(var):
            return env[var]
    path = find(argv[0], env, cwd, files) if tool != "micromamba" else None
    if path is None and tool == "conda":
        path = env.get("CONDA_EXE")  # set by conda's shell hook
    if path:
        path = files.real(path)  # /usr/local/bin/conda -> /opt/conda/bin/conda
        if os.path.basename(os.path.dirname(path)) in ("bin", "condabin"):
            return os.path.dirname(os.path.dirname(path))
    return None


def _user(path: str, env: dict) -> str:
    """`~/x` in the command's home."""
    if path == "~" or path.startswith("~/"):
        return env.get("HOME", "~") + path[1:]
    return path


def _envs_dirs(root: Optional[str], env: dict) -> list:
    """conda's envs_dirs: CONDA_ENVS_DIRS (or the older CONDA_ENVS_PATH), then <root>/envs and ~/.conda/envs
    (conda/base/context.py, Context.envs_dirs; .condarc's envs_dirs is not read here)."""
    dirs = []
    for var in ("CONDA_ENVS_DIRS", "CONDA_ENVS_PATH"):
        dirs += [d for d in env.get(var, "").split(os.pathsep) if d]
    if root:
        dirs.append(os.path.join(root, "envs"))
    if env.get("HOME"):
        dirs.append(os.path.join(env["HOME"], ".conda", "envs"))
    return list(dict.fromkeys(dirs))


def _conda_env(name: str, root: Optional[str], env: dict, files: Any) -> tuple[Optional[str], str]:
    """conda's locate_prefix_by_name (conda/conda@dab0333ab7a22310253b6b868c5405e49ab938f5:
    conda/base/context.py): base/root is the root prefix, else the first envs dir holding NAME, else none
    (EnvironmentNameNotFound). (prefix, where it was found), or (None, why). conda never looks a name up
    in its list of the environments it made (~/.conda/environments.txt: an environment made with -p, or by
    another installation, is reached by its path only, conda/conda#6449); that list is read only where
    conda's installation, so its envs directories, cannot be found from the command."""
    if name in ("base", "root"):
        return root, "the base environment"
    for directory in _envs_dirs(root, env):
        if files.is_dir(os.path.join(directory, name)):
            return os.path.join(directory, name), f"in the envs directory {directory}"
    path = os.path.join(env.get("HOME", "~"), ".conda", "environments.txt")
    for line in (files.text(path) or "").splitlines():
        if line.strip() and os.path.basename(line.strip().rstrip(os.sep)) == name:
            if root:
                return None, f"{path} lists {line.strip()}, which conda runs by its path only (-p)"
            return line.strip(), f"listed in {path}; conda's installation is not known from the command"
    return None, ""
