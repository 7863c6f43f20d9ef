"""pyenv's shims: `python3`, `pip`, `torchrun` found on PATH in ~/.pyenv/shims are bash scripts that run
`pyenv exec PROGRAM`, which picks a Python version and runs that version's PROGRAM (host/command_python.py
reads the rest). Read in pyenv 2.6.30 (pyenv/pyenv@f6a5b409e9fd1ad78aa4350ddc1fc5fc3d0fa666, read
2026-12-05):

- libexec/pyenv-rehash, create_prototype_shim: every shim is the same script, holding `export
  PYENV_ROOT="<root>"` and `exec "<pyenv>" exec "$program" "$@"`, the program being the shim's own name;
- libexec/pyenv-version-name: PYENV_VERSION, else the version file; empty or `system` is the system one; a
  list is colon-separated; each name is an installed version, the name without `python-`, or the newest
  installed version the name is a prefix of (pyenv-latest: `3.11` is 3.11.7, not 3.11.0rc1 nor 3.11t);
- libexec/pyenv-version-file: `.python-version` in PYENV_DIR (default: the working directory) or a parent,
  then in the working directory or a parent, else `<root>/version`;
- libexec/pyenv-version-file-read: the first word of each line, empty lines and `#` comments skipped;
- libexec/pyenv-which: each version's `<root>/versions/<version>/bin/PROGRAM` in turn, then the system's
  (PATH without `<root>/shims`): the first that is executable;
- libexec/pyenv-exec: PATH gets that version's bin/ first (not for the system's), PYENV_VERSION is set.
"""

from __future__ import annotations

import os
import re
from typing import Any, NamedTuple, Optional

from .command_words import DEFAULT_PATH, Judged, find, up_to

ROOT_LINE = re.compile(r'^export PYENV_ROOT="([^"]*)"$', re.MULTILINE)
EXEC_LINE = re.compile(r'^exec "([^"]+)" exec "\$program" "\$@"$', re.MULTILINE)
RELEASE = re.compile(r"\d+(\.\d+)*")
PRERELEASE = re.compile(r"(-dev|-src|-latest|(a|b|rc)\d+|\dt)$")


class Exec(NamedTuple):
    """What `pyenv exec` runs: `program` with `env`; `what` says which version and why."""

    program: str
    env: dict
    what: str


def shim_root(head: Optional[bytes]) -> Optional[str]:
    """PYENV_ROOT of a pyenv shim (the first bytes of the file); None for any other file."""
    if not head or not head.startswith(b"#!"):
        return None
    text = head.decode("utf-8", "replace")
    root = ROOT_LINE.search(text)
    return root.group(1) if root and EXEC_LINE.search(text) else None


def pyenv_exec(shim: str, root: str, env: dict, cwd: str, files: Any) -> Any:
    """The program the shim at `shim` runs (Exec), or Judged(None, why) when pyenv would find none."""
    program = os.path.basename(shim)
    versions, origin = _versions(root, env, cwd, files)
    missing = []
    for version in versions + ["system"]:
        if version == "system":
            shims = {os.path.join(root, "shims"), os.path.dirname(shim)}
            path = env.get("PATH", DEFAULT_PATH).split(os.pathsep)
            search = [d for d in path if os.path.normpath(os.path.join(cwd, d or ".")) not in shims]
            found = find(program, dict(env, PATH=os.pathsep.join(search)), cwd, files)
            if found is not None:
                skipped = f"; {', '.join(missing)} not installed" if missing else ""
                return Exec(found, env, f"pyenv's {program} shim: the system's {program} ({origin}{skipped})")
            continue
        name = _installed(root, version, files)
        if name is None:
            missing.append(version)
            continue
        bin_dir = os.path.join(root, "versions", name, "bin")
        if files.executable(os.path.join(bin_dir, program)):
            inner = dict(
                env,
                PATH=bin_dir + os.pathsep + env.get("PATH", DEFAULT_PATH),
                PYENV_VERSION=":".join(versions),
            )
            return Exec(
                os.path.join(bin_dir, program), inner, f"pyenv's {program} shim: version {name} ({origin})"
            )
    skipped = f"; {', '.join(missing)} not installed" if missing else ""
    return Judged(
        None,
        f"pyenv's {program} shim: no {program} in {':'.join(versions)} nor the system ({origin}{skipped})",
    )


def _versions(root: str, env: dict, cwd: str, files: Any) -> tuple[list, str]:
    """The selected versions, and what set them."""
    if env.get("PYENV_VERSION"):
        return env["PYENV_VERSION"].split(":"), "set by PYENV_VERSION"
    start = env.get("PYENV_DIR") or cwd
    path = _version_file(os.path.join(cwd, start), files)
    if path is None and os.path.normpath(start) != os.path.normpath(cwd):
        path = _version_file(cwd, files)
    path = path or os.path.join(root, "version")
    words = []
    for line in (files.text(path) or "").splitlines():
        parts = line.split()
        # pyenv-version-file-read refuses a name that leaves <root>/versions (CVE-2022-35861)
        if parts and not parts[0].startswith("#") and ".." not in parts[0].split("/"):
            words.append(parts[0])
    return (words or ["system"]), (f"set by {path}" if words else f"{path} names none: the system's")


def _version_file(start: str, files: Any) -> Optional[str]:
    found = up_to(start, ".python-version", files)
    return None if found is None else os.path.join(found, ".python-version")


def _installed(root: str, version: str, files: Any) -> Optional[str]:
    """The installed version a name selects: itself, itself without `python-`, or the newest release
    it is a prefix of; None when none is installed."""
    versions = os.path.join(root, "versions")
    for name in (version, version[len("python-") :] if version.startswith("python-") else None):
        if name and files.is_dir(os.path.join(versions, name)):
            return name
    candidates = [
        name
        for name in files.listdir(versions)
        if name.startswith(version + ".") and RELEASE.fullmatch(name) and not PRERELEASE.search(name)
    ]
    return max(candidates, key=lambda n: [int(p) for p in n.split(".")]) if candidates else None
