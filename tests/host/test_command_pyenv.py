"""pyenv's shims (host/command_pyenv.py): `python3`, `pip`, `torchrun` on PATH in ~/.pyenv/shims run the
program of the version pyenv selects. The installation is laid out as pyenv 2.6.30 lays it out
(pyenv/pyenv@f6a5b409e9fd1ad78aa4350ddc1fc5fc3d0fa666): <root>/shims/<program> is the prototype shim of
libexec/pyenv-rehash:82-95 with its root written in, <root>/versions/<version>/bin/ the interpreters
(links to this one here), <root>/version the global version. Each answer was compared, on a machine with
that pyenv installed, with what `python3 -c 'import sys; print(sys.executable)'` printed through the shim
for the same PYENV_VERSION and .python-version."""

from __future__ import annotations

import sys

import pytest

from gpudoctor.host.command_pyenv import shim_root

from .conftest import judge


def prototype_shim(root: str) -> str:
    """libexec/pyenv-rehash:83-95 (create_prototype_shim) with `$PYENV_ROOT` and `$(command -v pyenv)`
    expanded, as pyenv writes every shim."""
    return (
        "#!/usr/bin/env bash\n"
        "set -e\n"
        '[ -n "$PYENV_DEBUG" ] && set -x\n'
        "\n"
        'program="${0##*/}"\n'
        "\n"
        f'export PYENV_ROOT="{root}"\n'
        "SHIM_PATH=${0%/*}\n"
        f'if [[ $SHIM_PATH != "{root}/shims" ]]; then\n'
        '  export _PYENV_SHIM_PATH="$SHIM_PATH"\n'
        "fi\n"
        f'exec "{root}/libexec/pyenv" exec "$program" "$@"\n'
    )


@pytest.fixture
def pyenv(tmp_path):
    root = tmp_path / ".pyenv"
    (root / "shims").mkdir(parents=True)
    for name in ("python", "python3", "torchrun"):
        (root / "shims" / name).write_text(prototype_shim(str(root)))
        (root / "shims" / name).chmod(0o755)
    for version in ("3.11.7", "3.12.1", "3.12.0rc1", "3.13.0t"):
        (root / "versions" / version / "bin").mkdir(parents=True)
        (root / "versions" / version / "bin" / "python3").symlink_to(sys.executable)
    (root / "versions" / "3.12.1" / "bin" / "torchrun").write_text(
        f"#!{root}/versions/3.12.1/bin/python3\nimport sys\n"
    )
    (root / "versions" / "3.12.1" / "bin" / "torchrun").chmod(0o755)
    (root / "version").write_text("3.11.7\n")
    system = tmp_path / "usr-bin"
    system.mkdir()
    (system / "python3").symlink_to(sys.executable)
    env = {"PATH": f"{root}/shims:{root}/bin:{system}", "HOME": str(tmp_path)}
    return {"root": root, "system": system, "env": env, "project": tmp_path / "proj"}


def test_a_shim_is_told_from_any_other_script(pyenv):
    root = pyenv["root"]
    assert shim_root((root / "shims" / "python3").read_bytes()) == str(root)
    assert shim_root((root / "versions" / "3.12.1" / "bin" / "torchrun").read_bytes()) is None
    assert shim_root(b"\x7fELF\x02\x01\x01") is None


def test_the_global_version_file_picks_the_version(pyenv):
    root = pyenv["root"]
    assert judge(["python3", "x.py"], pyenv["env"]) == (
        f"{root}/versions/3.11.7/bin/python3",
        f"pyenv's python3 shim: version 3.11.7 (set by {root}/version)",
    )


def test_python_version_in_the_project_or_a_parent_wins_over_the_global_one(pyenv):
    # `uv init` writes a .python-version naming a minor release ("3.12"): pyenv takes the newest 3.12.x
    # installed that is a release (pyenv-latest drops rc and free-threaded builds)
    project = pyenv["project"]
    (project / "src").mkdir(parents=True)
    (project / ".python-version").write_text("# pinned\n\n3.12\n")
    found = judge(["python3", "x.py"], pyenv["env"], cwd=project / "src")
    assert found.interpreter == f"{pyenv['root']}/versions/3.12.1/bin/python3"
    assert found.reason.startswith(f"pyenv's python3 shim: version 3.12.1 (set by {project}/.python-version)")


def test_pyenv_version_wins_and_a_missing_version_falls_to_the_system(pyenv):
    root, system = pyenv["root"], pyenv["system"]
    env = dict(pyenv["env"], PYENV_VERSION="3.12.1")
    assert judge(["python3"], env).interpreter == f"{root}/versions/3.12.1/bin/python3"
    # pyenv-which tries each version, then the system's python3 on PATH without the shims
    env = dict(pyenv["env"], PYENV_VERSION="3.99")
    found = judge(["python3"], env)
    assert found.interpreter == f"{system}/python3"
    assert "the system's python3 (set by PYENV_VERSION; 3.99 not installed)" in found.reason


def test_a_console_script_shim_runs_the_version_that_has_it(pyenv):
    # 3.11.7 (global) has no torchrun: pyenv-which goes on to the next version named, then the system
    root = pyenv["root"]
    env = dict(pyenv["env"], PYENV_VERSION="3.11.7:3.12.1")
    found = judge(["torchrun", "train.py"], env)
    assert found == (
        f"{root}/versions/3.12.1/bin/python3",
        f"named by the #! line of {root}/versions/3.12.1/bin/torchrun",
    )
    none = judge(["torchrun"], pyenv["env"])
    assert none.interpreter is None
    assert (
        none.reason == f"pyenv's torchrun shim: no torchrun in 3.11.7 nor the system (set by {root}/version)"
    )
