"""`gpudoctor envs` and `check --all-envs` end to end: the CLI as users run it, on a workstation's home built
once with the real tools (tests/workstation.py), from inside a project."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys

import pytest
from workstation import build

from gpudoctor.envs.places import VARIABLES

from conftest import run_cli

# Every variable that moves a place environments are looked for in (gpudoctor/envs/places.py), dropped so
# that only the test's home is searched.
MOVERS = (*(v for v in VARIABLES if v not in ("HOME", "PATH")), "PYTHONPATH")
OURS = ("ml", "newest", "broken", "proj/.venv", "cv", "removed", "black")
# A team's own rule: it fires on every CUDA build, so environments differ in their findings.
CUDA_RULE = """\
rules:
  - id: LOCAL-CUDA-001
    title: "A CUDA build of a framework"
    severity: warning
    category: frameworks
    for_each: frameworks
    when:
      all:
        - {fact: .build, eq: cuda}
    message: "{.name} {.version} is a CUDA {.cuda} build"
    why: "A team rule: this workstation runs CPU builds only."
    silent: "a team's own policy: nothing fails, the rule only says which environments hold CUDA builds"
"""


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    root = tmp_path_factory.mktemp("workstation")
    made = build(root)
    (root / "rules").mkdir()
    (root / "rules" / "local.yaml").write_text(CUDA_RULE)
    made["rules"] = root / "rules" / "local.yaml"
    return made


def gd(home, *args: str):
    return run_cli(
        *args, cwd=home["cwd"], env={"HOME": str(home["home"]), "PATH": "/usr/bin:/bin"}, drop=MOVERS
    )


@pytest.fixture(scope="module")
def listed(home):
    r = gd(home, "envs", "--format", "json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def judged(home):
    r = gd(
        home, "check", "--all-envs", "--format", "json", "--fail-on", "warning", "--rules", str(home["rules"])
    )
    return r.returncode, json.loads(r.stdout)


def test_envs_finds_each_environment_with_its_frameworks(listed):
    assert (listed["schema"], listed["schema_version"]) == ("gpudoctor.envs", 1)
    rows = {e["name"]: e for e in listed["environments"] if e["name"] in OURS}
    assert sorted(rows) == sorted(OURS)
    frameworks = {
        n: [(f["name"], f["version"], f["build"], f["cuda"]) for f in r["frameworks"]]
        for n, r in rows.items()
    }
    assert frameworks == {
        "ml": [("torch", "2.5.1+cu124", "cuda", "12.4")],
        "cv": [("torch", "2.5.1+cu124", "cuda", "12.4")],
        "proj/.venv": [("torch", "2.5.1+cpu", "cpu", None)],
        "newest": [("torch", "2.5.1+cpu", "cpu", None)],
        "broken": [],
        "removed": [],
        "black": [],
    }
    assert rows["ml"]["found_by"] == ["~/.virtualenvs", "jupyter kernel 'ml'"]
    assert [rows[n]["kind"] for n in ("cv", "black", "proj/.venv")] == ["conda", "pipx", "venv"]
    assert rows["removed"]["problem"] == "no such directory (named by ~/.conda/environments.txt)"
    assert "dangling link" in rows["broken"]["problem"]
    # the system's interpreters are listed too, as they are (PATH is /usr/bin:/bin here)
    assert all(e["kind"] == "system" for e in listed["environments"] if e["name"] not in OURS)


def test_envs_through_typer_reads_the_same(home, listed):
    # `--format=json` is left to typer (entry._quick reads only the usual forms): the same listing
    r = gd(home, "envs", "--format=json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == listed


def test_envs_text_is_one_line_per_environment(home, listed):
    r = gd(home, "envs")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["NAME", "KIND", "PYTHON", "FRAMEWORKS", "FOUND", "BY"]
    ml = next(line for line in lines if line.startswith("ml ")).split()
    python = next(e["python"] for e in listed["environments"] if e["name"] == "ml")
    assert ml[1:3] == ["venv", python]
    assert " ".join(ml[3:]) == "torch 2.5.1+cu124 cuda 12.4 ~/.virtualenvs, jupyter kernel 'ml'"
    assert "  ! no such directory (named by ~/.conda/environments.txt)" in lines
    n = len(listed["environments"])
    assert lines[-1] == f"{n} environments, 2 broken. Judge each: gpudoctor check --all-envs"


def test_check_all_envs_judges_each_environment(judged, listed):
    code, data = judged
    assert data["schema"] == "gpudoctor.report.environments"
    names = [e["environment"]["name"] for e in data["environments"]]
    assert names == [e["name"] for e in listed["environments"]]  # every one, in the listing's order
    by_name = {e["environment"]["name"]: e for e in data["environments"]}
    for name in ("ml", "cv", "proj/.venv", "newest", "black", "broken"):
        assert by_name[name]["facts"]["python"]["selected_by"] == "--all-envs"
    fired = {
        n: sorted({f["rule"] for f in e["findings"] if f["rule"] == "LOCAL-CUDA-001"})
        for n, e in by_name.items()
    }
    assert [n for n in OURS if fired[n]] == ["ml", "cv"]
    assert by_name["cv"]["facts"]["python"]["installer"] == "conda"
    assert by_name["proj/.venv"]["facts"]["frameworks"][0]["build"] == "cpu"
    # an environment with nothing left to read is judged with its facts unknown, and says why
    assert by_name["removed"]["facts"]["python"]["version"]["unknown"].endswith(
        "no such directory (named by ~/.conda/environments.txt)"
    )
    # the run's exit code is the worst of the environments'
    codes = {n: e["summary"]["exit_code"] for n, e in by_name.items()}
    assert (codes["ml"], codes["cv"]) == (1, 1)
    assert code == data["exit_code"] == max(codes.values()) == 1


def test_check_all_envs_text_shows_the_machine_once_and_each_environment_with_its_own(home, listed):
    r = gd(home, "check", "--all-envs", "--fail-on", "never", "--rules", str(home["rules"]))
    assert r.returncode == 0, r.stderr
    n = len(listed["environments"])
    lines = r.stdout.splitlines()
    assert lines[0].endswith(f" · {n} Python environments")
    assert lines.count("Machine findings (the same for every environment)") == 1
    assert sum(1 for line in lines if line.startswith(("Driver ", "GPUs "))) == 2  # the machine's, once
    sections: dict[str, list[str]] = {}
    name = None
    for line in lines[lines.index("Environments") + 1 :]:
        head = re.match(r"^\d+\. (\S+) \(", line)
        if head:
            name = head.group(1)
            sections[name] = []
        elif name and line:
            sections[name].append(line)
        elif not line:
            name = None
    assert len(sections) == n
    heading = next(line for line in lines if re.match(r"^\d+\. ml \(", line))
    assert heading.endswith(" ml (venv; found by ~/.virtualenvs, jupyter kernel 'ml')")
    # the team rule reads the environment's frameworks: under the two CUDA environments only
    cuda = {k for k, v in sections.items() if any("WARNING LOCAL-CUDA-001" in line for line in v)}
    assert cuda == {"ml", "cv"}
    assert "   Broken: no such directory (named by ~/.conda/environments.txt)" in sections["removed"]
    assert any(line.startswith("   Frameworks  torch 2.5.1 cpu") for line in sections["newest"])
    assert lines[-1].startswith("Result ") and f"0 of {n} environment(s) fail" in lines[-1]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("--python", "/usr/bin/python3"),
            "--all-envs judges every environment; --python judges the ones named",
        ),
        (("--format", "junit"), "--format junit judges one environment"),
        (("--no-python",), "it does not go with --no-python"),
        (("--snapshot", "x.tar.gz"), "--all-envs reads this machine's files: a snapshot holds none"),
    ],
)
def test_check_all_envs_refuses_what_judges_one_or_none(home, args, message):
    r = gd(home, "check", "--all-envs", *args)
    assert r.returncode == 2
    assert message in r.stderr


def test_check_all_envs_one_line_profile_names_each_line(home, listed):
    r = gd(home, "check", "--all-envs", "--profile", "preflight")
    lines = r.stderr.splitlines()
    assert [line.split(": gpudoctor: ")[0] for line in lines] == [e["name"] for e in listed["environments"]]
    # the environment whose directory is gone could not be checked: the preflight profile's exit 2
    removed = next(line for line in lines if line.startswith("removed: "))
    assert removed.startswith("removed: gpudoctor: could not check")
    assert r.returncode == 2


def test_envs_marks_what_check_judges_without_python(home, listed):
    # PATH=/usr/bin:/bin: check's default is /usr/bin/python3, the system's
    (system,) = [e for e in listed["environments"] if e["check_default"]]
    assert (system["kind"], system["check_default"]) == ("system", "PATH")
    assert listed["check_default"]["name"] == system["name"]
    # an activated venv is check's default
    env = {"HOME": str(home["home"]), "PATH": "/usr/bin:/bin", "VIRTUAL_ENV": str(home["ml"])}
    r = run_cli("envs", "--format", "json", cwd=home["cwd"], drop=MOVERS, env=env)
    data = json.loads(r.stdout)
    assert [e["name"] for e in data["environments"] if e["check_default"]] == ["ml"]
    assert data["check_default"] == {
        "interpreter": f"{home['ml']}/bin/python",
        "chosen_by": "VIRTUAL_ENV",
        "name": "ml",
    }
    ml = next(e for e in data["environments"] if e["name"] == "ml")
    assert ml["found_by"] == ["VIRTUAL_ENV", "~/.virtualenvs", "jupyter kernel 'ml'"]


def test_behind_a_pyenv_shim_the_default_is_the_version_pyenv_selects(tmp_path, monkeypatch):
    """python3 on PATH a pyenv shim (laid out as pyenv 2.6.30 lays it out, tests/host/test_command_pyenv.py):
    `check` runs the shim, which runs the version pyenv selects; envs marks that one, as `which` names it."""
    from gpudoctor.commands.envs import check_default
    from gpudoctor.envs import find
    from gpudoctor.envs.places import Places
    from gpudoctor.host.env_files import EnvFiles
    from tests.host.test_command_pyenv import prototype_shim

    root = tmp_path / ".pyenv"
    (root / "shims").mkdir(parents=True)
    (root / "shims" / "python3").write_text(prototype_shim(str(root)))
    (root / "shims" / "python3").chmod(0o755)
    xy = f"{sys.version_info[0]}.{sys.version_info[1]}"
    for version in (f"{xy}.1", f"{xy}.2"):  # each its own build: bin/python3 -> python3.X, lib/python3.X
        (root / "versions" / version / "bin").mkdir(parents=True)
        shutil.copy(os.path.realpath(sys.executable), root / "versions" / version / "bin" / f"python{xy}")
        (root / "versions" / version / "bin" / "python3").symlink_to(f"python{xy}")
        (root / "versions" / version / "lib" / f"python{xy}" / "site-packages").mkdir(parents=True)
    (root / "version").write_text(f"{xy}.2\n")
    for name in ("VIRTUAL_ENV", "CONDA_PREFIX", "PYENV_VERSION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PATH", f"{root}/shims")
    monkeypatch.setenv("PYENV_ROOT", str(root))
    monkeypatch.chdir(tmp_path)
    envs = find.discover(
        EnvFiles(), Places(str(tmp_path), str(tmp_path), {"PATH": "/nonexistent"}, (), (), ())
    )
    found, target, chosen_by = check_default(envs)
    assert target == f"{root}/shims/python3"
    assert (found.kind, found.name) == ("pyenv", f"{xy}.2")
    assert chosen_by == f"PATH; pyenv's python3 shim: version {xy}.2 (set by {root}/version)"

    def gone():
        raise FileNotFoundError(2, "No such file or directory")

    monkeypatch.setattr(os, "getcwd", gone)  # run from a directory since removed: the shim stays unresolved
    assert check_default(envs) == (None, f"{root}/shims/python3", "PATH")
