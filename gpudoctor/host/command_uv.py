"""`uv run [OPTIONS] CMD...`: the environment uv runs the command in (host/command_python.py reads the
rest). uv's docs, read 2026-12-05: docs.astral.sh/uv/concepts/projects/config/#project-environment-path
(UV_PROJECT_ENVIRONMENT, relative to the workspace root; VIRTUAL_ENV only with --active),
docs.astral.sh/uv/concepts/projects/run/ and docs.astral.sh/uv/guides/scripts/ (a script with inline metadata
runs in an environment of its own)."""

from __future__ import annotations

import fnmatch
import os
import re
from typing import Any, Optional, Union

from ..toml_reader import toml
from .command_words import TRUE, Inside, Judged, last, read_options, said, tail

# Options of `uv` and `uv run` that take a value (uv 0.13.9, `uv run --help`); a test checks this list
# against the help of the uv the tests install.
UV_GLOBAL_VALUES = frozenset(
    (
        "--cache-dir",
        "--python-preference",
        "--color",
        "--allow-insecure-host",
        "--directory",
        "--project",
        "--config-file",
        "--python",
        "-p",
    )
)
UV_RUN_VALUES = UV_GLOBAL_VALUES | frozenset(
    (
        "--extra",
        "--no-extra",
        "--group",
        "--no-group",
        "--only-group",
        "--no-editable-package",
        "--env-file",
        "--with",
        "-w",
        "--with-editable",
        "--with-requirements",
        "--package",
        "--python-platform",
        "--index",
        "--default-index",
        "--index-url",
        "-i",
        "--extra-index-url",
        "--find-links",
        "-f",
        "--index-strategy",
        "--keyring-provider",
        "--upgrade-package",
        "-P",
        "--upgrade-group",
        "--resolution",
        "--prerelease",
        "--prerelease-package",
        "--fork-strategy",
        "--exclude-newer",
        "--exclude-newer-package",
        "--no-sources-package",
        "--reinstall-package",
        "--link-mode",
        "--refresh-package",
        "--config-setting",
        "-C",
        "--config-settings-package",
        "--no-build-isolation-package",
        "--no-build-package",
        "--no-binary-package",
        "--torch-backend",
        "--only-binary",
        "--no-binary",
        "--python-install-mirror",
        "--pypy-install-mirror",
        "--python-downloads-json-url",
        "--exclude-newer-package",
    )
)
ISOLATING = ("--isolated",)
WITH = ("--with", "-w", "--with-editable", "--with-requirements")


def uv_run(args: list, env: dict, cwd: str, files: Any, how: str) -> Union[Judged, Inside]:
    """`uv run`: uv's project environment, or none where uv makes one for this run alone. uv's docs, read
    2026-12-05: docs.astral.sh/uv/concepts/projects/config/#project-environment-path (UV_PROJECT_ENVIRONMENT,
    relative to the workspace root; VIRTUAL_ENV only with --active), /concepts/projects/run/ and
    /guides/scripts/ (a script with inline metadata runs in an environment of its own)."""
    run_at = read_options(args, UV_GLOBAL_VALUES)[1]
    options = args[:run_at] + args[run_at + 1 :]
    found, start = read_options(options, UV_RUN_VALUES)
    seen = {name for name, _value in found}
    command = options[start:]
    if seen & set(ISOLATING) or env.get("UV_ISOLATED", "").lower() in TRUE:
        return Judged(
            None, f"uv run --isolated runs in an environment uv makes for this run alone{tail(how)}"
        )
    script = "-s" in seen or "--script" in seen or (bool(command) and command[0].endswith(".py"))
    if script and command:
        text = files.text(os.path.join(cwd, command[0])) or ""
        if re.search(r"^# /// script\s*$", text, re.MULTILINE):
            return Judged(
                None,
                f"uv run {command[0]}: a script with inline metadata runs in an environment "
                f"uv makes for it{tail(how)}",
            )
    python = last(found, "--python", "-p") or env.get("UV_PYTHON")
    no_project = "--no-project" in seen or env.get("UV_NO_PROJECT", "").lower() in TRUE
    where = last(found, "--project") or last(found, "--directory")
    base = os.path.join(cwd, where) if where else cwd
    project = None if no_project else _up_to(base, "pyproject.toml", files)
    if project is not None:
        active = "--active" in seen or env.get("UV_ACTIVE", "").lower() in TRUE
        if active and env.get("VIRTUAL_ENV"):
            prefix, what = env["VIRTUAL_ENV"], "the active virtual environment (uv run --active)"
        else:
            root = _workspace_root(project, files)
            chosen = env.get("UV_PROJECT_ENVIRONMENT")
            prefix = os.path.join(root, chosen) if chosen else os.path.join(root, ".venv")
            what = f"the project environment of {root}" + (" (UV_PROJECT_ENVIRONMENT)" if chosen else "")
    elif python and os.sep in python:
        return Judged(python, said(f"uv run --python {python} outside a project", how))
    elif env.get("VIRTUAL_ENV"):
        prefix, what = env["VIRTUAL_ENV"], "the active virtual environment (uv run outside a project)"
    else:
        nearest = _venv_up_from(base, files)
        if nearest is None:
            if not command:
                return Judged(None, f"uv run without a command{tail(how)}")
            return Inside(None, command, False, said("uv run outside a project", how))
        prefix, what = nearest, "the nearest .venv (uv run outside a project)"
    added = " (packages added with --with are not judged)" if seen & set(WITH) else ""
    python_itself = script or "-m" in seen or "--module" in seen
    return Inside(prefix, command, python_itself, said(f"uv run: {what}{added}", how))


def _up_to(start: str, name: str, files: Any) -> Optional[str]:
    """The nearest directory from `start` upwards that holds the file `name`."""
    here = os.path.normpath(start)
    while True:
        if files.text(os.path.join(here, name)) is not None:
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def _venv_up_from(start: str, files: Any) -> Optional[str]:
    """Outside a project, uv finds a `.venv` (with its pyvenv.cfg) in the directory or a parent
    (astral-sh/uv@ef92c384 crates/uv-interpreter/src/virtualenv.rs, virtualenv_from_working_dir)."""
    here = os.path.normpath(start)
    while True:
        if files.text(os.path.join(here, ".venv", "pyvenv.cfg")) is not None:
            return os.path.join(here, ".venv")
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def _workspace_root(project: str, files: Any) -> str:
    """The root of the uv workspace `project` is a member of (a pyproject.toml above it, or its own, with a
    [tool.uv.workspace] whose members match and whose exclude does not), else the project itself."""
    here = project
    while True:
        text = files.text(os.path.join(here, "pyproject.toml"))
        if text is not None and "[tool.uv.workspace]" in text:
            try:
                table = toml().loads(text).get("tool", {}).get("uv", {}).get("workspace", {})
            except ValueError:
                table = {}
            relative = os.path.relpath(project, here)
            members = table.get("members", []) or []
            excluded = any(fnmatch.fnmatch(relative, p) for p in table.get("exclude", []) or [])
            if here == project or (any(fnmatch.fnmatch(relative, p) for p in members) and not excluded):
                return here
        parent = os.path.dirname(here)
        if parent == here:
            return project
        here = parent
