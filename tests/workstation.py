"""A workstation's home directory with real Python environments in it, for `gpudoctor envs` and
`check --all-envs` (tests/envs/test_find.py, tests/commands/test_envs.py).

Every venv is made by the real tool (`python -m venv`, `uv venv`); torch-like wheels (tests/pyenvs.py) are
installed by real pip where the venv's Python is this one, and laid down as pip lays them (unpack_wheel)
in venvs of other Pythons. The conda environment and the Jupyter kernel copy the layout of real ones:

- conda: akirachuangjp/envoracle@f929dcf147acc79ff557f8bc7cd11e3f05e622da, a conda environment committed
  whole: conda-meta/history (its first lines below), conda-meta/<name>-<version>-<build>.json records
  (python-3.10.4-h12debd9_0 in its history), bin/python3.10, lib/python3.10/site-packages;
- kernel.json: the same repository's share/jupyter/kernels/python3/kernel.json, as ipykernel 6 writes it
  (make_ipkernel_cmd: [executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]);
- ~/.conda/environments.txt: one prefix a line, and it keeps environments since removed
  (https://github.com/conda/conda/issues/2704, https://github.com/conda/conda/pull/6313);
- a venv whose interpreter link dangles, its base Python removed: a venv's bin/python is a link to the
  absolute path of the Python it was made from (bin/python -> /home/fkinds/.local/share/uv/python/
  cpython-3.14.0-linux-x86_64-gnu/bin/python3.14, python3 -> python: Fkinds/python_template@
  7ab8d2b285c87b15508d768434999dd9c833acd9:dir_tree.md),
  so removing that Python (a pyenv or uv install) leaves the link dangling; made here by the real tool,
  then its link pointed at a path that does not exist.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from pyenvs import make_venv, other_pythons, pip_install, site_packages, unpack_wheel, uv, wheelhouse

XY = f"{sys.version_info[0]}.{sys.version_info[1]}"
VERSION = ".".join(str(n) for n in sys.version_info[:3])
CONDA_HISTORY = (
    "==> 2022-09-21 17:40:40 <==\n"
    "# cmd: /home/akira/anaconda3/bin/conda create --name envoracle Python\n"
    "# conda version: 4.8.2\n"
    "+defaults/linux-64::python-3.10.4-h12debd9_0\n"
)


def kernel_json(python: str) -> str:
    """kernel.json as ipykernel writes it (akirachuangjp/envoracle@f929dcf:share/jupyter/kernels/python3/
    kernel.json), its interpreter replaced."""
    spec = {
        "argv": [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
        "metadata": {"debugger": True},
    }
    return json.dumps(spec, indent=1)


def real_python() -> str:
    return os.path.realpath(sys.executable)


def build(root: Path) -> dict:
    """The home under `root`: returns {"home", "cwd", "wheels", and each environment's prefix by name}."""
    home = root / "home"
    wheels = wheelhouse(root / "wheels")
    out: dict = {"home": home, "wheels": wheels}

    # ~/.virtualenvs/ml: this Python, torch 2.5.1+cu124 by pip; a Jupyter kernel starts it.
    ml = make_venv(sys.executable, home / ".virtualenvs" / "ml")
    pip_install(ml, wheels, "torch==2.5.1+cu124")
    out["ml"] = ml.parent.parent
    kernel = home / ".local" / "share" / "jupyter" / "kernels" / "ml"
    kernel.mkdir(parents=True)
    (kernel / "kernel.json").write_text(kernel_json(str(ml)))

    # a project's .venv made by uv, of another Python where the machine has one, torch +cpu by uv pip.
    others = other_pythons()
    other = others[0] if others else sys.executable
    project = home / "code" / "proj"
    (project / "src").mkdir(parents=True)
    subprocess.run(
        [uv(), "venv", "--quiet", "--python", other, str(project / ".venv")], check=True, timeout=120
    )
    subprocess.run(
        [uv(), "pip", "install", "--quiet", "--python", str(project / ".venv" / "bin" / "python")]
        + ["--no-index", "--find-links", str(wheels), "torch==2.5.1+cpu"],
        check=True,
        timeout=300,
    )
    out["proj"] = project / ".venv"
    out["cwd"] = project / "src"
    out["other_xy"] = _xy(other)

    # ~/.virtualenvs/newest: the newest other Python, torch +cpu laid down as pip does.
    newest = others[-1] if others else sys.executable
    nv = make_venv(newest, home / ".virtualenvs" / "newest")
    unpack_wheel(next(wheels.glob("torch-2.5.1+cpu-*.whl")), site_packages(nv))
    out["newest"] = nv.parent.parent
    out["newest_xy"] = _xy(newest)

    # a conda environment in ~/miniconda3/envs/cv, listed in environments.txt with one since removed.
    cv = home / "miniconda3" / "envs" / "cv"
    (cv / "conda-meta").mkdir(parents=True)
    (cv / "conda-meta" / "history").write_text(CONDA_HISTORY.replace("3.10.4", VERSION))
    (cv / "conda-meta" / f"python-{VERSION}-h12debd9_0.json").write_text("{}\n")
    (cv / "bin").mkdir()
    (cv / "bin" / f"python{XY}").symlink_to(real_python())
    (cv / "bin" / "python").symlink_to(f"python{XY}")
    cv_site = cv / "lib" / f"python{XY}" / "site-packages"
    cv_site.mkdir(parents=True)
    unpack_wheel(next(wheels.glob("torch-2.5.1+cu124-*.whl")), cv_site, installer="conda")
    gone = home / "miniconda3" / "envs" / "removed"
    (home / ".conda").mkdir()
    (home / ".conda" / "environments.txt").write_text(f"{cv}\n{gone}\n{cv}\n")
    out["cv"], out["removed"] = cv, gone

    # pipx's venv of a tool, without frameworks.
    black = make_venv(sys.executable, home / ".local" / "share" / "pipx" / "venvs" / "black")
    out["black"] = black.parent.parent

    # a venv whose base Python is gone: its interpreter link dangles.
    broken = make_venv(sys.executable, home / ".virtualenvs" / "broken")
    for link in broken.parent.glob("python*"):
        if link.is_symlink() and os.path.isabs(os.readlink(link)):
            link.unlink()
            link.symlink_to(str(root / "removed-pyenv" / "versions" / VERSION / "bin" / f"python{XY}"))
    out["broken"] = broken.parent.parent
    return out


def _xy(python: str) -> str:
    done = subprocess.run(
        [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return done.stdout.strip()
