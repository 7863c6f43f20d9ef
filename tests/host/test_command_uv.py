"""`uv run` (host/command_uv.py): the environment uv runs a command in, compared with what real uv runs, and
the options of uv that take a value, compared with real uv's help."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from gpudoctor.host.command_uv import UV_RUN_VALUES
from gpudoctor.host.command_words import NOT_PYTHON

from .conftest import SYSTEM_PATH, first_line, judge
from pyenvs import make_venv, uv


def uv_runs(argv: list, cwd: Path, **env: str) -> str:
    """The interpreter real uv runs for `uv run ... python -c` (offline, nothing to install)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("UV_", "VIRTUAL_ENV", "CONDA"))}
    environ.update(env)
    out = subprocess.run(
        [uv(), *argv, "-c", "import sys; print(sys.executable)"],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_uv_run_judges_the_project_environment_that_uv_runs(envs):
    proj, sub = envs["proj"], envs["proj"] / "sub"
    argv = ["uv", "run", "--offline", "--no-sync", "python"]
    env = {"PATH": f"{Path(uv()).parent}:{SYSTEM_PATH}", "HOME": str(envs["root"])}
    found = judge(argv, env, cwd=sub)
    assert found.interpreter == uv_runs(argv[1:], sub) == str(proj / ".venv" / "bin" / "python")
    assert found.reason == (
        f"uv run: the project environment of {proj} (.venv; pyproject.toml found at {proj}/pyproject.toml)"
    )
    # --directory names the project from elsewhere; a console script of the env runs with its python
    other = ["uv", "--directory", str(proj), "run", "--offline", "--no-sync", "torchrun", "x.py"]
    torchrun = envs["venv"].parent / "torchrun"
    assert judge(other, env, cwd=envs["root"]) == (
        first_line(torchrun)[2:].decode(),
        f"uv run: the project environment of {proj} (.venv; pyproject.toml found at {proj}/pyproject.toml); "
        f"named by the #! line of {torchrun}",
    )
    # `uv run train.py` and `uv run -m`: the environment's python
    for command in (["train.py"], ["-m", "torch.distributed.run"], ["--with", "rich", "python"]):
        assert judge(["uv", "run", *command], env, cwd=sub).interpreter == str(
            proj / ".venv" / "bin" / "python"
        )
    # a command that is not a Python program runs with the environment's bin first on PATH
    bash = judge(["uv", "run", "bash", "job.sh"], env, cwd=sub)
    assert bash.interpreter == str(proj / ".venv" / "bin" / "python") and NOT_PYTHON in bash.reason


def test_uv_run_follows_uv_project_environment_and_workspaces(envs, tmp_path):
    ws = tmp_path / "ws"
    member = ws / "packages" / "a"
    member.mkdir(parents=True)
    (ws / "pyproject.toml").write_text(
        '[project]\nname = "ws"\nversion = "0.1.0"\nrequires-python = ">=3.9"\ndependencies = []\n\n'
        '[tool.uv.workspace]\nmembers = ["packages/*"]\n'
    )
    (member / "pyproject.toml").write_text(
        '[project]\nname = "a"\nversion = "0.1.0"\nrequires-python = ">=3.9"\ndependencies = []\n'
    )
    make_venv(sys.executable, ws / ".venv")
    argv = ["uv", "run", "--offline", "python"]
    env = {"PATH": SYSTEM_PATH}
    found = judge(argv, env, cwd=member)
    assert found.interpreter == uv_runs(argv[1:], member) == str(ws / ".venv" / "bin" / "python")
    make_venv(sys.executable, ws / "elsewhere")
    env = {"PATH": SYSTEM_PATH, "UV_PROJECT_ENVIRONMENT": "elsewhere"}
    found = judge(argv, env, cwd=member)
    assert found.interpreter == uv_runs(argv[1:], member, UV_PROJECT_ENVIRONMENT="elsewhere")
    assert found.interpreter == str(ws / "elsewhere" / "bin" / "python")
    assert found.reason == (
        f"uv run: the project environment of {ws} (elsewhere, from UV_PROJECT_ENVIRONMENT; pyproject.toml "
        f"found at {member}/pyproject.toml, a member of the workspace at {ws})"
    )


def test_uv_run_outside_a_project_and_in_environments_of_its_own(envs, tmp_path):
    python = str(envs["venv"])
    found = judge(["uv", "run", "--no-project", "--python", python, "x.py"], cwd=tmp_path)
    assert found.interpreter == python
    # outside a project: the nearest .venv, as uv finds it
    make_venv(sys.executable, tmp_path / ".venv")
    (tmp_path / "deep").mkdir()
    argv = ["uv", "run", "--offline", "python"]
    found = judge(argv, {"PATH": SYSTEM_PATH}, cwd=tmp_path / "deep")
    assert (
        found.interpreter
        == uv_runs(argv[1:], tmp_path / "deep")
        == str(tmp_path / ".venv" / "bin" / "python")
    )
    assert judge(["uv", "run", "--isolated", "python"], cwd=tmp_path) == (
        None,
        "uv run --isolated runs in an environment uv makes for this run alone",
    )
    for argv in (["uvx", "torchrun"], ["uv", "tool", "run", "ruff"]):
        assert judge(argv, cwd=tmp_path) == (None, f"{argv[0]} runs a tool in an environment uv makes for it")


def test_the_uv_options_that_take_a_value_are_those_uv_says():
    """Every option `uv run --help` shows with a <VALUE> is known to take one (else its value would be read as
    the command)."""
    text = subprocess.run([uv(), "run", "--help"], capture_output=True, text=True, timeout=60).stdout
    shown = set()
    for match in re.finditer(r"^\s+(-\w, )?(--[\w-]+)[ =]<", text, re.MULTILINE):
        shown.add(match.group(2))
        if match.group(1):
            shown.add(match.group(1)[:2])
    assert shown and shown <= UV_RUN_VALUES, sorted(shown - UV_RUN_VALUES)


def test_a_uv_script_with_inline_metadata_runs_in_an_environment_of_its_own(tmp_path):
    # uv's docs (docs.astral.sh/uv/guides/scripts/, "Using a shebang to create an executable file") give this
    # first line; the metadata block is the PEP 723 one they show.
    script = tmp_path / "example"
    script.write_text(
        '#!/usr/bin/env -S uv run --script\n# /// script\n# dependencies = ["httpx"]\n# ///\nimport httpx\n'
    )
    script.chmod(0o755)
    found = judge([str(script)], {"PATH": f"{Path(uv()).parent}:{SYSTEM_PATH}"})
    assert found.interpreter is None and "inline metadata" in found.reason


def test_uv_run_outside_a_project_without_a_venv_runs_the_first_python_on_path(tmp_path):
    """uv's discovery (docs.astral.sh/uv/concepts/python-versions/#discovery-of-python-versions): its managed
    Pythons first (none in this home), then `python`, `python3` on PATH. A pyproject.toml with `[tool.uv]
    managed = false` is no project to uv run (docs.astral.sh/uv/reference/settings/#managed)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    work = tmp_path / "unmanaged"
    work.mkdir()
    (work / "pyproject.toml").write_text(
        '[project]\nname = "unmanaged"\nversion = "0.1"\nrequires-python = ">=3.9"\ndependencies = []\n\n'
        "[tool.uv]\nmanaged = false\n"
    )
    (work / "x.py").write_text("import sys\nprint(sys.executable)\n")
    env = {"PATH": f"{bin_dir}:/nonexistent", "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")}
    real = dict(env, UV_PYTHON_DOWNLOADS="never", PATH=f"{bin_dir}:{os.environ['PATH']}")
    python = str(bin_dir / "python3")
    reason = "uv run outside a project, no virtual environment: the first python3 on the command's PATH"
    for argv in (["uv", "run", "--offline", "python"], ["uv", "run", "--offline", "x.py"]):
        assert judge(argv, env, cwd=work) == (python, reason)
    assert uv_runs(["run", "--offline", "python"], work, **real) == python
    ran = subprocess.run(
        [uv(), "run", "--offline", "x.py"], cwd=work, env=real, capture_output=True, text=True, timeout=120
    )
    assert ran.stdout.strip() == python, ran.stderr
    assert not (work / ".venv").exists()  # the project was ignored: no environment made for it
    # a .python-version is a request for that version: which interpreter answers it is not read here
    (work / ".python-version").write_text("3.12\n")
    found = judge(["uv", "run", "x.py"], env, cwd=work)
    assert found == (
        None,
        "uv run outside a project, no virtual environment: uv picks a Python matching "
        f"{work}/.python-version, not read here",
    )
    (work / ".python-version").unlink()
    # uv's own Pythons come first: which one is not read here
    (tmp_path / "data" / "uv" / "python" / "cpython-3.12.6-linux-x86_64-gnu").mkdir(parents=True)
    found = judge(["uv", "run", "x.py"], env, cwd=work)
    assert found.interpreter is None
    assert found.reason.startswith(
        "uv run outside a project, no virtual environment: uv picks among its own Pythons in "
        f"{tmp_path}/data/uv/python"
    )
