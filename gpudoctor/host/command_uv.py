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
from .command_words import DEFAULT_PATH, TRUE, Inside, Judged, last, read_options, said, tail, up_to

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
    project = None if no_project else up_to(base, "pyproject.toml", files)
    if project is not None and not _managed(project, files):
        project = None  # `[tool.uv] managed = false`: uv run ignores the project
    if project is not None:
        active = "--active" in seen or env.get("UV_ACTIVE", "").lower() in TRUE
        if active and env.get("VIRTUAL_ENV"):
            prefix, what = env["VIRTUAL_ENV"], "the active virtual environment (uv run --active)"
        else:
            root = _workspace_root(project, files)
            chosen = env.get("UV_PROJECT_ENVIRONMENT")
            prefix = os.path.join(root, chosen) if chosen else os.path.join(root, ".venv")
            found = f"pyproject.toml found at {os.path.join(project, 'pyproject.toml')}"
            if root != project:
                found += f", a member of the workspace at {root}"
            named = f"{chosen}, from UV_PROJECT_ENVIRONMENT" if chosen else ".venv"
            what = f"the project environment of {root} ({named}; {found})"
    elif python and os.sep in python:
        return Judged(python, said(f"uv run --python {python} outside a project", how))
    elif env.get("VIRTUAL_ENV"):
        prefix, what = env["VIRTUAL_ENV"], "the active virtual environment (uv run outside a project)"
    else:
        nearest = _venv_up_from(base, files)
        if nearest is None:
            if not command:
                return Judged(None, f"uv run without a command{tail(how)}")
            if script or "-m" in seen or "--module" in seen or command[0] == "python":
                return _discovered(python, env, cwd, files, how)
            return Inside(None, command, False, said("uv run outside a project", how))
        prefix, what = nearest, "the nearest .venv (uv run outside a project)"
    added = " (packages added with --with are not judged)" if seen & set(WITH) else ""
    python_itself = script or "-m" in seen or "--module" in seen
    return Inside(prefix, command, python_itself, said(f"uv run: {what}{added}", how))


def _managed(project: str, files: Any) -> bool:
    """False where the project's pyproject.toml says `[tool.uv] managed = false`: "uv will ignore the
    project when `uv run` is invoked" (docs.astral.sh/uv/reference/settings/#managed, read 2026-12-05)."""
    text = files.text(os.path.join(project, "pyproject.toml")) or ""
    if "managed" not in text:
        return True
    try:
        return toml().loads(text).get("tool", {}).get("uv", {}).get("managed", True) is not False
    except ValueError:
        return True


def _discovered(request: Optional[str], env: dict, cwd: str, files: Any, how: str) -> Judged:
    """The Python uv finds for a run outside a project with no virtual environment: its own managed
    installations first (python-preference "managed", the default), then the first `python`, `python3` on
    PATH (docs.astral.sh/uv/concepts/python-versions/#discovery-of-python-versions, read 2026-12-05;
    astral-sh/uv@006cca65:docs/concepts/python-versions.md). Seen with uv 0.13.9: `uv run python` runs that
    interpreter even where no `python` is on PATH; in a directory holding both it takes `python`; a
    `.python-version` in the working directory or a parent is a request for that version, which an
    interpreter's name does not tell (not read here)."""
    outside = "uv run outside a project, no virtual environment"
    pinned = up_to(cwd, ".python-version", files)
    if not request and pinned is not None:
        request = f"{os.path.join(pinned, '.python-version')}"
    if request:
        return Judged(None, f"{outside}: uv picks a Python matching {request}, not read here{tail(how)}")
    managed = _managed_pythons(env)
    if managed and files.listdir(managed) and env.get("UV_PYTHON_PREFERENCE", "managed") != "only-system":
        return Judged(
            None, f"{outside}: uv picks among its own Pythons in {managed} first, not read here{tail(how)}"
        )
    for directory in env.get("PATH", DEFAULT_PATH).split(os.pathsep):
        for name in ("python", "python3"):
            candidate = os.path.normpath(os.path.join(cwd, directory or ".", name))
            if files.executable(candidate):
                return Judged(candidate, said(f"{outside}: the first {name} on the command's PATH", how))
    return Judged(None, f"{outside}: no python or python3 on the command's PATH{tail(how)}")


def _managed_pythons(env: dict) -> Optional[str]:
    """Where uv installs its Pythons: UV_PYTHON_INSTALL_DIR, else $XDG_DATA_HOME/uv/python, else
    ~/.local/share/uv/python (docs.astral.sh/uv/reference/cli/#uv-python-dir, read 2026-12-05; what `uv python
    dir` of uv 0.13.9 prints)."""
    if env.get("UV_PYTHON_INSTALL_DIR"):
        return env["UV_PYTHON_INSTALL_DIR"]
    if env.get("XDG_DATA_HOME"):
        return os.path.join(env["XDG_DATA_HOME"], "uv", "python")
    return os.path.join(env["HOME"], ".local", "share", "uv", "python") if env.get("HOME") else None


def _venv_up_from(start: str, files: Any) -> Optional[str]:
    """Outside a project, uv finds a `.venv` (with its pyvenv.cfg) in the directory or a parent
    (astral-sh/uv@ef92c384 crates/uv-interpreter/src/virtualenv.rs, virtualenv_from_working_dir)."""
    found = up_to(start, os.path.join(".venv", "pyvenv.cfg"), files)
    return None if found is None else os.path.join(found, ".venv")


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
