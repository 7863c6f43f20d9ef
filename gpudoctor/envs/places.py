"""Where Python environments live: the directories `gpudoctor envs` looks in, from the user's home, the
working directory and the few environment variables that move them.

Each place is read from the tool that makes it (its documentation or source, cited beside it); nothing here
reads a file. `Places` is plain data so that a test can name a temporary home and its own system
directories.
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple, Optional

# The variables that move a place (and PATH, HOME); read by name, never the whole environment.
VARIABLES = (
    "HOME",
    "PATH",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "CONDA_ENVS_DIRS",
    "WORKON_HOME",
    "PIPX_HOME",
    "UV_TOOL_DIR",
    "UV_PYTHON_INSTALL_DIR",
    "PYENV_ROOT",
    "XDG_DATA_HOME",
    "JUPYTER_PATH",
    "JUPYTER_DATA_DIR",
)
SYSTEM_BINS = ("/usr/bin", "/usr/local/bin")
SYSTEM_KERNELS = ("/usr/local/share/jupyter/kernels", "/usr/share/jupyter/kernels")
SYSTEM_CONDAS = ("/opt/conda", "/opt/miniconda3", "/opt/miniforge3")
# The installers' default roots under the home (conda's, Anaconda's and conda-forge's installers).
HOME_CONDAS = ("miniconda3", "anaconda3", "miniforge3", "mambaforge", "micromamba")


class Places(NamedTuple):
    home: str
    cwd: str
    env: dict  # VARIABLES' values that are set
    system_bins: tuple = SYSTEM_BINS
    system_kernels: tuple = SYSTEM_KERNELS
    system_condas: tuple = SYSTEM_CONDAS

    def var(self, name: str) -> Optional[str]:
        value = self.env.get(name)
        return value if value else None

    def under_home(self, *parts: str) -> str:
        return os.path.join(self.home, *parts)

    def data_home(self) -> str:
        """XDG_DATA_HOME, else ~/.local/share (the XDG base directory specification's default)."""
        return self.var("XDG_DATA_HOME") or self.under_home(".local", "share")

    def path_dirs(self) -> list[str]:
        return [d for d in (self.var("PATH") or "").split(os.pathsep) if d]


def from_host(host: Any, cwd: str) -> Places:
    """The places of the user gpudoctor runs as: HOME and the VARIABLES from the host."""
    env = {}
    for name in VARIABLES:
        value = host.env(name)
        if value:
            env[name] = value
    home = env.get("HOME") or os.path.expanduser("~")
    return Places(home=home, cwd=cwd, env=env)


def venv_dirs(places: Places) -> list[tuple[str, str]]:
    """(directory holding one venv per entry, how it is named in `found by`)."""
    out = [
        # virtualenvwrapper's default WORKON_HOME.
        (places.under_home(".virtualenvs"), "~/.virtualenvs"),
        # pipenv's (a kernel made from one: veit/jupyter-tutorial docs/workspace/jupyter/kernels/install.rst).
        (os.path.join(places.data_home(), "virtualenvs"), "~/.local/share/virtualenvs"),
        # poetry's, under its cache directory on Linux.
        (places.under_home(".cache", "pypoetry", "virtualenvs"), "poetry"),
    ]
    workon = places.var("WORKON_HOME")
    if workon:
        out.insert(0, (workon, "WORKON_HOME"))
    return out


def pipx_dirs(places: Places) -> list[str]:
    """pipx's venvs: $PIPX_HOME/venvs, else ~/.local/share/pipx/venvs on Linux, and the older default
    ~/.local/pipx/venvs, which pipx still uses where it exists (https://pipx.pypa.io/latest/how-to/configure-paths/,
    read 2026-12-05)."""
    home = places.var("PIPX_HOME")
    if home:
        return [os.path.join(home, "venvs")]
    return [os.path.join(places.data_home(), "pipx", "venvs"), places.under_home(".local", "pipx", "venvs")]


def uv_tool_dir(places: Places) -> str:
    """uv's tools: UV_TOOL_DIR, else the tools directory in uv's persistent data directory, $XDG_DATA_HOME/uv
    else ~/.local/share/uv (https://docs.astral.sh/uv/reference/storage, read 2026-12-05)."""
    return places.var("UV_TOOL_DIR") or os.path.join(places.data_home(), "uv", "tools")


def uv_python_dir(places: Places) -> str:
    """uv's Python installs: UV_PYTHON_INSTALL_DIR, else `python` in uv's persistent data directory
    (https://docs.astral.sh/uv/reference/storage)."""
    return places.var("UV_PYTHON_INSTALL_DIR") or os.path.join(places.data_home(), "uv", "python")


def pyenv_dirs(places: Places) -> list[str]:
    """pyenv's versions: $PYENV_ROOT/versions and ~/.pyenv/versions, its default root."""
    dirs = [places.under_home(".pyenv", "versions")]
    root = places.var("PYENV_ROOT")
    if root:
        dirs.insert(0, os.path.join(root, "versions"))
    return dirs


def conda_roots(places: Places) -> list[str]:
    """The conda installations to look in: CONDA_PREFIX's (the base, or the base of the env it names),
    the installers' defaults under the home, and the system ones."""
    roots = []
    active = places.var("CONDA_PREFIX")
    if active:
        parent = os.path.dirname(active.rstrip("/"))
        roots.append(os.path.dirname(parent) if os.path.basename(parent) == "envs" else active)
    roots += [places.under_home(name) for name in HOME_CONDAS]
    roots += list(places.system_condas)
    return roots


def conda_envs_dirs(places: Places) -> list[str]:
    """CONDA_ENVS_DIRS, each root's envs, and ~/.conda/envs (the directories conda's Context.envs_dirs
    names, as host/command_conda.py reads them for `conda run -n`)."""
    dirs = [d for d in (places.var("CONDA_ENVS_DIRS") or "").split(os.pathsep) if d]
    dirs += [os.path.join(root, "envs") for root in conda_roots(places)]
    dirs.append(places.under_home(".conda", "envs"))
    return dirs


def environments_txt(places: Places) -> str:
    """conda's own list of the environments it made: ~/.conda/environments.txt
    (https://github.com/conda/conda/issues/11845, which cites conda/core/envs_manager.py)."""
    return places.under_home(".conda", "environments.txt")


def kernel_dirs(places: Places) -> list[str]:
    """Jupyter's kernelspec directories: JUPYTER_PATH's, the user data directory (JUPYTER_DATA_DIR, else
    ~/.local/share/jupyter), then the system ones; each environment's own share/jupyter/kernels is read
    with that environment (find.py)."""
    dirs = [os.path.join(d, "kernels") for d in (places.var("JUPYTER_PATH") or "").split(os.pathsep) if d]
    data = places.var("JUPYTER_DATA_DIR") or os.path.join(places.data_home(), "jupyter")
    dirs.append(os.path.join(data, "kernels"))
    dirs += list(places.system_kernels)
    return dirs
