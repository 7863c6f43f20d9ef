"""Real environments for the remedy tests (tests/remedy): the wheels, a venv filled by real pip, copies of
it for the tests that change an environment (the hash of a whole site-packages tree is pyenvs.tree_hash).

A helper module, not a conftest.py: a second conftest module would shadow the root one that other test
modules import from (`from conftest import ROOT`).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from pyenvs import build_wheel, make_venv, pip_install, site_packages, tree_hash, wheelhouse  # noqa: F401


def remedy_wheels(where: Path) -> Path:
    """pyenvs' torch wheelhouse, plus two nvidia-* wheels sharing the `nvidia/__init__.py` namespace file
    (as the real ones do) and a wheel to install by path (so that it has a direct_url.json)."""
    wheels = wheelhouse(where)
    for part in ("a", "b"):
        files = {"nvidia/__init__.py": "", f"nvidia/{part}/__init__.py": f"PART = {part!r}\n"}
        build_wheel(wheels, f"nvidia-{part}", "1.0", files)
    build_wheel(wheels / "local", "localpkg", "0.3", {"localpkg/__init__.py": "X = 1\n"})
    return wheels


def pip_env(where: Path, wheels: Path) -> Path:
    """A venv (no pip of its own) that real pip filled: torch 2.5.1+cpu with filelock, nvidia-a, and
    localpkg from its wheel's path; its bin/python."""
    python = make_venv(sys.executable, where)
    local = next((wheels / "local").glob("localpkg-*.whl"))
    pip_install(python, wheels, "torch==2.5.1+cpu", "nvidia-a", str(local))
    return python


def copy_env(python: Path, dest: Path) -> Path:
    """A copy of the venv of `python` at `dest` (its bin/python): ten times faster than a new venv and pip.
    Copy before making a restore point: a restore point names the interpreter it was made through."""
    shutil.copytree(python.parent.parent, dest, symlinks=True)
    return dest / "bin" / "python"
