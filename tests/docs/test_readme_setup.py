"""The README's two set-up commands work on a fresh machine whose system Python is externally managed.

Debian 12, Ubuntu 23.04 and later, Fedora and the python.org images mark their system interpreter as
externally managed (PEP 668): `python3 -m pip install .` there fails with "externally-managed-environment".
The README's commands make a virtual environment of their own and use its pip. The first one is run here
as written, in a copy of this tree, with a `python3` on PATH that refuses `pip install` as such an
interpreter does; the second (which would run this suite again) is checked to have the same form, and CI
(.ci/run) to run it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

from conftest import ROOT
from pyenvs import copy_source_tree

# A python3 that behaves as an externally managed system interpreter: pip refuses to install into it.
EXTERNALLY_MANAGED = """#!/bin/sh
if [ "$1" = "-m" ] && [ "$2" = "pip" ] && [ "$3" = "install" ]; then
    echo "error: externally-managed-environment" >&2
    echo "This environment is externally managed (PEP 668)" >&2
    exit 1
fi
exec {python} "$@"
"""


def setup_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Set up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```\n(.*?)\n```", section, re.DOTALL)


def base_python() -> str:
    """The interpreter venvs are made from (not this test run's own venv)."""
    return getattr(sys, "_base_executable", None) or sys.executable


def test_readme_has_two_setup_commands_each_in_a_venv_of_its_own():
    install, tests = setup_commands()
    for command in (install, tests):
        assert "\n" not in command
        assert command.startswith("python3 -m venv .venv && .venv/bin/pip install ")
        # No pip into the system interpreter (PEP 668 refuses it), and no bare `gpudoctor`/`pytest`, which
        # a venv not on PATH does not provide.
        assert "python3 -m pip" not in command and " pip install" not in command
    assert install.endswith(" && .venv/bin/gpudoctor check")
    assert tests == 'python3 -m venv .venv && .venv/bin/pip install ".[test]" && .venv/bin/python -m pytest'


def test_ci_runs_the_readme_test_command_as_written():
    _install, tests = setup_commands()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    steps = [line.strip() for line in ci.splitlines() if line.strip() and not line.startswith("#")]
    assert steps[-1] == tests


def test_readme_install_command_works_where_the_system_python_is_externally_managed(tmp_path):
    install, _tests = setup_commands()
    source = tmp_path / "source"
    copy_source_tree(ROOT, source)
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "python3").write_text(EXTERNALLY_MANAGED.format(python=base_python()))
    (shim / "python3").chmod(0o755)
    drop = ("VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONPATH", "PYTHONHOME")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(PATH=f"{shim}{os.pathsep}/usr/bin:/bin", NO_COLOR="1")
    # The old command fails on such a machine ...
    old = subprocess.run(
        ["bash", "-c", "python3 -m pip install ."], cwd=source, env=env, capture_output=True, text=True
    )
    assert old.returncode != 0 and "externally-managed-environment" in old.stderr
    # ... the README's works: installs, then checks (exit 0, or 1 for findings on this machine).
    r = subprocess.run(
        ["bash", "-c", install], cwd=source, env=env, capture_output=True, text=True, timeout=600
    )
    assert r.returncode in (0, 1), r.stdout[-2000:] + r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    # It judged the python3 on PATH (the system's), not gpudoctor's own .venv, and the report says so.
    line = next(x for x in r.stdout.splitlines() if x.startswith("Python "))
    assert "python3 on PATH" in line and ".venv" not in line, line
