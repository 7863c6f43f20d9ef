"""Every environment of a workstation's home found, merged and described from its files (tests/workstation.py
builds the home with the real tools, once for this module)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from workstation import VERSION, build, kernel_json

from gpudoctor.envs import find
from gpudoctor.envs.places import Places
from gpudoctor.host.env_files import EnvFiles
from gpudoctor.probes import python_env

from pyenvs import make_venv, uv


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return build(tmp_path_factory.mktemp("workstation"))


def places(home, **env) -> Places:
    base = {"HOME": str(home["home"]), "PATH": "/nonexistent"}
    return Places(str(home["home"]), str(home["cwd"]), {**base, **env}, (), (), ())


@pytest.fixture(scope="module")
def found(home):
    return {e.name: e for e in find.discover(EnvFiles(), places(home))}


def builds(env) -> list[tuple]:
    return [(f["name"], f["version"], f.get("build"), f.get("cuda")) for f in python_env.frameworks(env.dump)]


def test_each_environment_is_found_once_with_its_kind_and_what_found_it(found, home):
    summary = {name: (e.kind, e.found_by) for name, e in found.items()}
    assert summary == {
        "ml": ("venv", ("~/.virtualenvs", "jupyter kernel 'ml'")),
        "newest": ("venv", ("~/.virtualenvs",)),
        "broken": ("venv", ("~/.virtualenvs",)),
        "proj/.venv": ("venv", ("project .venv (~/code/proj)",)),
        "cv": ("conda", ("~/.conda/environments.txt", "~/miniconda3/envs")),
        "removed": ("conda", ("~/.conda/environments.txt",)),
        "black": ("pipx", ("pipx",)),
    }
    assert [e.kind for e in find.discover(EnvFiles(), places(home))] == sorted(
        (e.kind for e in found.values()), key=find.KINDS.index
    )


def test_the_frameworks_and_builds_come_from_each_environments_metadata(found):
    assert builds(found["ml"]) == [("torch", "2.5.1", "cuda", "12.4")]
    assert builds(found["cv"]) == [("torch", "2.5.1", "cuda", "12.4")]
    assert builds(found["proj/.venv"]) == [("torch", "2.5.1", "cpu", None)]
    assert builds(found["newest"]) == [("torch", "2.5.1", "cpu", None)]
    assert builds(found["black"]) == []
    assert python_env.installer(found["proj/.venv"].dump) == "uv"
    assert python_env.installer(found["cv"].dump) == "conda"


def test_each_python_version_is_read_from_the_layout(found, home):
    assert found["ml"].python == VERSION  # pyvenv.cfg `version`
    assert found["cv"].python == VERSION  # conda-meta's python record
    assert found["proj/.venv"].python.startswith(home["other_xy"] + ".")  # uv's `version_info`
    assert found["newest"].python.startswith(home["newest_xy"] + ".")
    assert found["ml"].dump["machine"] == os.uname().machine


def test_broken_environments_are_listed_with_the_reason(found, home):
    broken = found["broken"]
    assert broken.problem.startswith(f"{home['broken']}/bin/python is a dangling link to ")
    assert "the Python it was made from is gone" in broken.problem
    assert broken.dump is not None  # its metadata is still read
    removed = found["removed"]
    assert removed.problem == "no such directory (named by ~/.conda/environments.txt)"
    assert removed.dump is None
    assert all(not found[n].problem for n in ("ml", "cv", "proj/.venv", "newest", "black"))


def test_the_active_venv_and_a_kernel_without_python_are_named(home, tmp_path):
    wrapper = tmp_path / "kernels" / "wrapped"
    wrapper.mkdir(parents=True)
    # A kernelspec that starts a shell script (seen in the wild: "/bin/bash", "-lc", "source ... && exec
    # $PY -m ipykernel -f {connection_file}"): which environment it runs cannot be read.
    (wrapper / "kernel.json").write_text(
        '{"argv": ["/bin/bash", "-lc", "exec python -m ipykernel -f {connection_file}"],'
        ' "display_name": "wrapped", "language": "python"}'
    )
    where = places(home, VIRTUAL_ENV=str(home["ml"]), JUPYTER_PATH=str(tmp_path))
    envs = {e.name: e for e in find.discover(EnvFiles(), where)}
    assert envs["ml"].found_by == ("VIRTUAL_ENV", "~/.virtualenvs", "jupyter kernel 'ml'")
    assert envs["wrapped"].kind == "kernel"
    assert envs["wrapped"].problem.startswith("the kernel starts /bin/bash, not a Python interpreter")


def test_system_interpreters_and_path_are_read_and_merged(home, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(os.path.realpath(sys.executable))
    (bin_dir / "python3-config").write_text("#!/bin/sh\n")
    where = places(home, PATH=f"{bin_dir}:{home['ml']}/bin")._replace(system_bins=(str(bin_dir),))
    envs = find.discover(EnvFiles(), where)
    system = [e for e in envs if e.kind in ("system", "pyenv")]
    assert [(e.name, e.found_by) for e in system] == [
        (os.path.realpath(sys.executable), (str(bin_dir), "PATH"))
    ]
    ml = next(e for e in envs if e.prefix == str(home["ml"]))
    assert ml.found_by == ("~/.virtualenvs", "PATH", "jupyter kernel 'ml'")


def test_kernels_in_an_environment_and_kernels_naming_no_interpreter(home, tmp_path):
    # ipykernel's wheel installs share/jupyter/kernels/python3/kernel.json with argv[0] `python` into the
    # environment (ipython/ipykernel@08d9d18be1e0133777936954dc69424f44ae138b:hatch_build.py); Jupyter runs
    # it with its own interpreter (jupyter/jupyter_client@23a116b72a15623228c5d448dfa0a4cda13bc1f8:
    # jupyter_client/manager.py, format_kernel_cmd).
    venv = make_venv(sys.executable, tmp_path / "home" / ".virtualenvs" / "nb").parent.parent
    spec = json.loads(kernel_json("python"))
    for where, name, argv0 in (
        (venv / "share" / "jupyter" / "kernels", "python3", "python"),
        (tmp_path / "home" / ".local" / "share" / "jupyter" / "kernels", "bare", "python3"),
        (
            tmp_path / "home" / ".local" / "share" / "jupyter" / "kernels",
            "gone",
            str(tmp_path / "old" / "bin" / "python"),
        ),
    ):
        (where / name).mkdir(parents=True)
        (where / name / "kernel.json").write_text(json.dumps(dict(spec, argv=[argv0, *spec["argv"][1:]])))
    where = Places(str(tmp_path / "home"), str(tmp_path), {"PATH": "/nonexistent"}, (), (), ())
    envs = {e.name: e for e in find.discover(EnvFiles(), where)}
    assert envs["nb"].found_by == ("~/.virtualenvs", "jupyter kernel 'python3'")
    assert not envs["nb"].problem
    assert envs["bare"].kind == "kernel"
    assert envs["bare"].problem == (
        "the kernel starts `python3`, which Jupyter replaces with its own interpreter: the environment it "
        "runs is the one Jupyter runs from"
    )
    assert envs["gone"].problem == f"{tmp_path}/old/bin/python: no such file (named by jupyter kernel 'gone')"
    assert (envs["gone"].kind, envs["gone"].prefix, envs["gone"].dump) == (
        "kernel",
        str(tmp_path / "old"),
        None,
    )


def test_pyenv_uv_pythons_and_uv_tools(tmp_path):
    """pyenv's and uv's Python installs, laid out as they lay them (uv's: bin/python3.14 in
    ~/.local/share/uv/python/cpython-3.14.0-linux-x86_64-gnu, Fkinds/python_template@
    7ab8d2b285c87b15508d768434999dd9c833acd9:dir_tree.md), and a uv tool's venv made by the real uv."""
    home = tmp_path / "home"
    real = os.path.realpath(sys.executable)
    xy = f"{sys.version_info[0]}.{sys.version_info[1]}"
    for prefix in (
        home / ".pyenv" / "versions" / VERSION,
        home / ".local" / "share" / "uv" / "python" / f"cpython-{VERSION}-linux-x86_64-gnu",
    ):
        (prefix / "bin").mkdir(parents=True)
        (prefix / "bin" / f"python{xy}").symlink_to(real)
        (prefix / "bin" / "python3").symlink_to(f"python{xy}")
        (prefix / "lib" / f"python{xy}" / "site-packages").mkdir(parents=True)
    (home / ".local" / "share" / "uv" / "python" / ".lock").write_text("")
    (home / ".pyenv" / "versions" / xy).symlink_to(VERSION)  # an alias pyenv users make: one environment
    tool = home / ".local" / "share" / "uv" / "tools" / "httpie"
    subprocess.run([uv(), "venv", "--quiet", "--python", sys.executable, str(tool)], check=True, timeout=120)
    where = Places(str(home), str(tmp_path), {"PATH": "/nonexistent"}, (), (), ())
    found = [(e.kind, e.name, e.python, e.found_by) for e in find.discover(EnvFiles(), where)]
    assert found == [
        ("pyenv", VERSION, VERSION, ("pyenv",)),
        ("uv-python", f"cpython-{VERSION}-linux-x86_64-gnu", VERSION, ("uv python",)),
        ("uv-tool", "httpie", VERSION, ("uv tools",)),
    ]


def test_names_are_sorted_as_a_person_reads_them():
    assert sorted(["3.10.13", "3.9.18", "v10", "v2"], key=find._natural) == ["3.9.18", "3.10.13", "v2", "v10"]


def test_a_conda_installation_is_base_and_its_envs_are_named_as_conda_names_them(tmp_path):
    """A conda installation and an environment in it, laid out as conda lays them (conda-meta/, bin/python,
    lib/pythonX.Y: akirachuangjp/envoracle@f929dcf147acc79ff557f8bc7cd11e3f05e622da), both in
    environments.txt, the environment active (CONDA_PREFIX)."""
    home = tmp_path / "home"
    root = home / "miniforge3"
    xy = f"{sys.version_info[0]}.{sys.version_info[1]}"
    for prefix in (root, root / "envs" / "train"):
        (prefix / "conda-meta").mkdir(parents=True)
        (prefix / "bin").mkdir()
        (prefix / "bin" / "python").symlink_to(os.path.realpath(sys.executable))
        (prefix / "lib" / f"python{xy}" / "site-packages").mkdir(parents=True)
    (home / ".conda").mkdir()
    (home / ".conda" / "environments.txt").write_text(f"{root}\n{root}/envs/train\n")
    env = {"PATH": "/nonexistent", "CONDA_PREFIX": str(root / "envs" / "train")}
    where = Places(str(home), str(tmp_path), env, (), (), ())
    found = [(e.name, e.kind, e.found_by) for e in find.discover(EnvFiles(), where)]
    assert found == [
        ("base", "conda", ("~/.conda/environments.txt", "conda base ~/miniforge3")),
        ("train", "conda", ("~/.conda/environments.txt", "~/miniforge3/envs", "CONDA_PREFIX")),
    ]


def test_the_environment_an_interpreter_runs_in(found, home):
    envs = list(found.values())
    assert find.holding(EnvFiles(), envs, str(home["ml"] / "bin" / "python")) is found["ml"]
    assert find.holding(EnvFiles(), envs, str(home["cv"] / "bin" / "python")) is found["cv"]
    assert find.holding(EnvFiles(), envs, str(home["home"] / "nowhere" / "python3")) is None
