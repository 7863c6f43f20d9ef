"""`conda run`, `mamba run`, `micromamba run` (host/command_conda.py): the environment they run a command in,
on a conda installation laid out as conda lays it out."""

from __future__ import annotations

import sys

import pytest

from .conftest import SYSTEM_PATH, judge


@pytest.fixture
def conda(tmp_path):
    """A conda installation as conda lays it out (<root>/bin/conda, <root>/envs/NAME), and a home."""
    root = tmp_path / "miniconda3"
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "conda").write_text("#!/bin/sh\n")
    (root / "bin" / "conda").chmod(0o755)
    for prefix in (root / "envs" / "train", tmp_path / "home" / "elsewhere" / "envs" / "listed"):
        (prefix / "bin").mkdir(parents=True)
        (prefix / "bin" / "python").symlink_to(sys.executable)
    home = tmp_path / "home"
    (home / ".conda").mkdir()
    (home / ".conda" / "environments.txt").write_text(f"{root}\n{home}/elsewhere/envs/listed\n")
    return {"root": root, "home": home, "env": {"PATH": f"{root}/bin:{SYSTEM_PATH}", "HOME": str(home)}}


def test_conda_run_dash_n_judges_that_environment(conda):
    root, env = conda["root"], conda["env"]
    python = str(root / "envs" / "train" / "bin" / "python")
    for argv in (
        ["conda", "run", "-n", "train", "python", "train.py"],
        ["conda", "run", "--no-capture-output", "--name=train", "--", "python", "-u", "train.py"],
        ["conda", "run", "-n", "train", "torchrun", "train.py"],  # not in the env: its python
    ):
        found = judge(argv, env)
        assert found.interpreter == python, argv
        assert found.reason.startswith(f"conda run -n train: the environment {root}/envs/train")
    assert judge(["conda", "run", "-n", "train", "python"], env).reason == (
        f"conda run -n train: the environment {root}/envs/train (in the envs directory {root}/envs)"
    )
    assert judge(["conda", "run", "-p", str(root / "envs" / "train"), "python"], env).interpreter == python
    # a name conda's envs directories do not hold, but its list of environments does: conda does not find it
    # by name (conda/conda#6449; locate_prefix_by_name reads the envs directories only) ...
    listed = conda["home"] / "elsewhere" / "envs" / "listed"
    found = judge(["conda", "run", "-n", "listed", "python"], env)
    assert found.interpreter is None
    assert found.reason.endswith(
        f"{conda['home']}/.conda/environments.txt lists {listed}, which conda runs by its path only (-p)"
    )
    # ... unless where conda is cannot be known from the command (a shell function, no CONDA_EXE): the list
    # is the best evidence left
    found = judge(["conda", "run", "-n", "listed", "python"], dict(env, PATH=SYSTEM_PATH))
    assert found.interpreter == f"{listed}/bin/python"
    assert found.reason == (
        f"conda run -n listed: the environment {listed} (listed in {conda['home']}/.conda/environments.txt; "
        "conda's installation is not known from the command)"
    )
    unknown = judge(["conda", "run", "-n", "nope", "python"], env)
    assert unknown.interpreter is None and f"{root}/envs" in unknown.reason


def test_conda_reached_through_a_link_has_its_root_where_the_link_points(conda, tmp_path):
    links = tmp_path / "usr-local-bin"
    links.mkdir()
    (links / "conda").symlink_to(conda["root"] / "bin" / "conda")
    env = dict(conda["env"], PATH=f"{links}:{SYSTEM_PATH}")
    found = judge(["conda", "run", "-n", "train", "python"], env)
    assert found.interpreter == str(conda["root"] / "envs" / "train" / "bin" / "python")


def test_micromamba_run_finds_the_environment_under_its_root_prefix(conda):
    env = dict(conda["env"], MAMBA_ROOT_PREFIX=str(conda["root"]))
    python = str(conda["root"] / "envs" / "train" / "bin" / "python")
    assert judge(["micromamba", "run", "-n", "train", "python", "x.py"], env).interpreter == python
    assert judge(["mamba", "run", "-n", "train", "python", "x.py"], env).interpreter == python
    base = judge(["conda", "run", "python"], conda["env"])
    assert base.interpreter == str(conda["root"] / "bin" / "python") and "base environment" in base.reason
