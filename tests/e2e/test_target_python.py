"""gpudoctor judges the environment the user runs, from outside it: real interpreters, real venvs.

gpudoctor runs here from the test's own interpreter; the environments it judges are virtual environments
made by these tests (of this Python, and of other versions where the machine has them), holding torch-like
wheels built by tests/pyenvs.py and installed with real pip. Nothing of gpudoctor is installed in them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import H200, ROOT, run_cli
from pyenvs import (
    copy_source_tree,
    file_list,
    make_venv,
    other_pythons,
    pip_install,
    site_packages,
    torch_wheel,
    unpack_wheel,
    uv_venv,
    wheelhouse,
)

# The variables that name a target: removed so that each test says which ones it sets.
TARGET_VARS = ("VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONPATH", "PYTHONNOUSERSITE", "PYTHONUSERBASE")


@pytest.fixture(scope="module")
def envs(tmp_path_factory):
    """cuda: a venv with torch 2.5.1+cu124 installed by pip; cpu: one with 2.5.1+cpu; conda: a conda-like
    prefix (conda-meta/) with the CUDA build; wheels: the wheel directory."""
    root = tmp_path_factory.mktemp("envs")
    wheels = wheelhouse(root / "wheels")
    cuda = make_venv(sys.executable, root / "cuda")
    pip_install(cuda, wheels, "torch==2.5.1+cu124")
    cpu = make_venv(sys.executable, root / "cpu")
    pip_install(cpu, wheels, "torch==2.5.1+cpu")
    conda = make_venv(sys.executable, root / "conda")
    (root / "conda" / "conda-meta").mkdir()
    unpack_wheel(next(wheels.glob("torch-2.5.1+cu124-*.whl")), site_packages(conda), installer="conda")
    return {"cuda": cuda, "cpu": cpu, "conda": conda, "wheels": wheels, "root": root}


def gd(*args: str, env: dict | None = None, path: str | None = None):
    """gpudoctor in its own interpreter (this one), PATH and the target variables as the test says."""
    extra = dict(env or {})
    if path is not None:
        extra["PATH"] = path
    return run_cli(*args, env=extra, drop=TARGET_VARS, cwd=ROOT)


def report(*args: str, **kw) -> dict:
    r = gd("check", "--format", "json", "--fail-on", "never", *args, **kw)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def torch_of(data: dict) -> dict:
    (torch,) = [f for f in data["facts"]["frameworks"] if f["name"] == "torch"]
    return torch


SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


def test_python_option_reads_a_venv_that_pip_filled(envs):
    data = report("--python", str(envs["cuda"]))
    py = data["facts"]["python"]
    assert (py["executable"], py["selected_by"], py["venv"]) == (str(envs["cuda"]), "--python", True)
    torch = torch_of(data)
    assert (torch["version"], torch["build"], torch["cuda"], torch["cudnn"]) == (
        "2.5.1",
        "cuda",
        "12.4",
        "9.1.0.70",
    )


def test_an_activated_venv_is_the_target(envs):
    venv = envs["cpu"].parent.parent
    data = report(env={"VIRTUAL_ENV": str(venv)}, path=f"{venv / 'bin'}:{SYSTEM_PATH}")
    assert data["facts"]["python"]["selected_by"] == "VIRTUAL_ENV"
    assert data["facts"]["python"]["executable"] == str(venv / "bin" / "python")
    assert (torch_of(data)["build"], torch_of(data)["version"]) == ("cpu", "2.5.1")


def test_an_active_conda_env_is_the_target(envs):
    prefix = envs["conda"].parent.parent
    data = report(env={"CONDA_PREFIX": str(prefix)}, path=SYSTEM_PATH)
    py = data["facts"]["python"]
    assert (py["selected_by"], py["installer"]) == ("CONDA_PREFIX", "conda")
    assert torch_of(data)["build"] == "cuda"


def test_python3_on_path_is_the_target(envs):
    # A container image whose venv is on PATH, nothing activated.
    data = report(path=f"{envs['cuda'].parent}:{SYSTEM_PATH}")
    py = data["facts"]["python"]
    assert (py["selected_by"], py["prefix"]) == ("PATH", str(envs["cuda"].parent.parent))
    assert torch_of(data)["build"] == "cuda"


def test_the_text_report_says_which_interpreter_and_why(envs):
    r = gd("check", "--python", str(envs["cpu"]))
    line = next(x for x in r.stdout.splitlines() if x.startswith("Python "))
    assert line.endswith(f"at {envs['cpu']} (venv, pip; --python)"), line
    assert "torch 2.5.1 cpu" in next(x for x in r.stdout.splitlines() if x.startswith("Frameworks"))


def test_run_judges_the_venv_the_command_names_without_activation(envs):
    """`gpudoctor run -- <venv>/bin/python ...` with no venv active (issue 23): the venv the command runs is
    judged, not python3 on PATH; a command that is not a Python program says so and judges the default."""
    torch_error = (
        "import sys; sys.stderr.write('RuntimeError: Torch not compiled with CUDA enabled\\n'); sys.exit(1)"
    )
    cpu = str(envs["cpu"])
    r = gd("run", "--", cpu, "-c", torch_error, path=SYSTEM_PATH)
    assert r.returncode == 1
    block = r.stderr.split("gpudoctor: the command failed;", 1)[1].splitlines()
    assert block[1] == f"  judged {cpu}: argv[0] of the command"
    assert "frameworks[0].build = cpu" in r.stderr  # the venv's CPU-only torch, which python3 on PATH lacks
    assert f"explain --log FILE --python {cpu} reads a whole log" in block[-1]
    # explain --log, which has no command line to read, is given it and names it
    log = envs["root"] / "job.log"
    log.write_text("RuntimeError: Torch not compiled with CUDA enabled\n")
    r = gd("explain", "--log", str(log), "--python", cpu, path=SYSTEM_PATH)
    version = ".".join(map(str, sys.version_info[:3]))
    assert r.stdout.endswith(f"\n\nPython judged: {version} at {cpu} (venv, pip; --python)\n"), r.stdout
    r = gd("explain", "--python", cpu, "Torch not compiled with CUDA enabled", path=SYSTEM_PATH)
    assert r.stdout.endswith(f"\n\nPython judged: {version} at {cpu} (venv, pip; --python)\n"), r.stdout
    r = gd("run", "--", "sh", "-c", "echo 'RuntimeError: Torch not compiled with CUDA enabled' >&2; exit 1")
    block = r.stderr.split("gpudoctor: the command failed;", 1)[1].splitlines()
    python3 = shutil.which("python3", path=os.environ["PATH"])
    assert block[1].startswith("  the command is not a Python program (")
    assert block[1].endswith(f"is not a script); judging {python3} (python3 on PATH)")


def test_several_environments_in_one_run(envs):
    r = gd(
        "check",
        "--format",
        "json",
        "--fail-on",
        "never",
        "--python",
        str(envs["cuda"]),
        "--python",
        str(envs["cpu"]),
    )
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["schema"] == "gpudoctor.report.environments"
    assert [e["facts"]["python"]["executable"] for e in data["environments"]] == [
        str(envs["cuda"]),
        str(envs["cpu"]),
    ]
    assert [torch_of(e)["build"] for e in data["environments"]] == ["cuda", "cpu"]
    text = gd("check", "--python", str(envs["cuda"]), "--python", str(envs["cpu"])).stdout
    assert text.startswith(f"Environment 1 of 2: {envs['cuda']}\n")
    assert f"\nEnvironment 2 of 2: {envs['cpu']}\n" in text


@pytest.mark.parametrize("python", other_pythons() or [sys.executable])
def test_other_python_versions(tmp_path, envs, python):
    """3.8 and the newest CPython the machine has (this one when it has no other)."""
    venv = make_venv(python, tmp_path / "v")
    unpack_wheel(next(envs["wheels"].glob("torch-2.5.1+cu124-*.whl")), site_packages(venv))
    before = file_list(tmp_path / "v")
    data = report("--python", str(venv))
    assert torch_of(data)["cuda"] == "12.4"
    assert file_list(tmp_path / "v") == before  # isolated, no bytecode: nothing written there


def test_a_uv_venv_is_read_and_its_installer_named(tmp_path, envs):
    python = (other_pythons() or [sys.executable])[-1]
    venv = uv_venv(python, tmp_path / "uv", envs["wheels"], "torch==2.5.1+cu124")
    data = report("--python", str(venv))
    assert (data["facts"]["python"]["installer"], torch_of(data)["cuda"]) == ("uv", "12.4")


def test_inspection_writes_nothing_into_the_environment(envs):
    root = envs["cuda"].parent.parent
    before = file_list(root)
    report("--python", str(envs["cuda"]))
    assert file_list(root) == before


def test_pythonpath_and_user_site_are_seen_as_the_users_programs_see_them(tmp_path, envs):
    """Isolation hides PYTHONPATH and the user site from the inspection; gpudoctor scans them itself."""
    extra = tmp_path / "extra"
    unpack_wheel(torch_wheel(tmp_path / "w", "2.5.1+cpu", None), extra)
    base = os.path.realpath(sys.base_prefix)
    system_python = os.path.join(base, "bin", "python3")
    data = report("--python", system_python, env={"PYTHONPATH": f"{ROOT}{os.pathsep}{extra}"})
    assert torch_of(data)["build"] == "cpu"
    userbase = tmp_path / "userbase"
    minor = f"{sys.version_info[0]}.{sys.version_info[1]}"
    user_site = userbase / "lib" / f"python{minor}" / "site-packages"
    unpack_wheel(torch_wheel(tmp_path / "w2", "2.5.1+cu124", "12.4"), user_site)
    data = report("--python", system_python, env={"PYTHONUSERBASE": str(userbase)})
    assert torch_of(data)["build"] == "cuda"
    # A venv without system packages never reads the user site.
    data = report("--python", str(envs["cpu"]), env={"PYTHONUSERBASE": str(userbase)})
    assert torch_of(data)["build"] == "cpu"


def test_the_system_python_under_pep_668_is_read_without_touching_it():
    system = "/usr/bin/python3"
    if not os.path.exists(system):
        system = os.path.join(os.path.realpath(sys.base_prefix), "bin", "python3")
    data = report("--python", system)
    assert data["facts"]["python"]["venv"] is False
    assert data["facts"]["python"]["executable"].startswith("/usr/") or data["facts"]["python"]["version"]


# --- never a silent pass --------------------------------------------------------------------------------


def _script(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def test_a_bad_python_option_is_exit_2_with_one_line(tmp_path):
    junk = _script(tmp_path, "junk", "echo 'Welcome to the shell'\n")
    failing = _script(tmp_path, "failing", "echo 'error while loading shared libraries' >&2\nexit 127\n")
    hangs = _script(tmp_path, "hangs", "sleep 30\n")
    cases = {
        str(tmp_path / "missing"): "no such file",
        str(junk): "printed 'Welcome to the shell', not an inspection result: is it a Python interpreter?",
        str(failing): "exited with status 127: error while loading shared libraries",
        str(hangs): "",  # did not finish within the deadline: how much is said depends on which ends first
    }
    for python, why in cases.items():
        r = gd("check", "--python", python, "--timeout", "2")
        assert r.returncode == 2, (python, r.stdout, r.stderr)
        assert r.stdout == ""
        assert r.stderr.startswith(f"gpudoctor: --python: inspecting {python} failed: {why}"), r.stderr
        if python == str(hangs):
            assert "did not finish within" in r.stderr or "timed out" in r.stderr
        assert r.stderr.count("\n") == 1


def test_an_old_python_is_named(tmp_path):
    old = next(iter(sorted(glob_old_pythons())), None)
    fake = _script(tmp_path, "python2", "echo 'Unknown option: -I' >&2\nexit 2\n")
    for python in [str(fake)] + ([old] if old else []):
        r = gd("check", "--python", python)
        assert r.returncode == 2
        assert "gpudoctor inspects Python 3.8 and newer" in r.stderr, r.stderr


def glob_old_pythons() -> list[str]:
    import glob

    return glob.glob(os.path.expanduser("~/.pyenv/versions/3.[67].*/bin/python3"))


def test_a_default_target_that_cannot_be_read_is_unknown_never_none(tmp_path):
    broken = tmp_path / "venv"
    (broken / "bin").mkdir(parents=True)
    _script(broken / "bin", "python", "exit 1\n")
    r = gd("check", "--profile", "ci", env={"VIRTUAL_ENV": str(broken)})
    why = f"inspecting {broken}/bin/python failed: exited with status 1"
    lines = r.stdout.splitlines()
    assert f"Frameworks  unknown: {why}" in lines
    assert any(
        x.startswith(f"Python      unknown: {why} (chosen by the active virtual environment)") for x in lines
    )
    # The ci profile cannot vouch for the frameworks: exit 2, and the result line says which rules.
    assert r.returncode == 2, r.stdout
    assert (
        "exit 2 (could not check: error-level rule(s) GD-CONTAINER-004, GD-CUDA-001, GD-CUDA-009, GD-FW-001,"
        in r.stdout
    )
    data = json.loads(gd("check", "--format", "json", env={"VIRTUAL_ENV": str(broken)}).stdout)
    assert data["facts"]["frameworks"] == {"unknown": why}
    # The workstation profile reports it the same way; --fail-on-unknown makes it fail there too.
    assert gd("check", env={"VIRTUAL_ENV": str(broken)}).returncode == 0
    assert gd("check", "--fail-on-unknown", env={"VIRTUAL_ENV": str(broken)}).returncode == 2


# --- preflight and the examples -----------------------------------------------------------------------


def test_preflight_stops_a_cpu_only_torch(tmp_path):
    snap = tmp_path / "snap"
    shutil.copytree(H200, snap)
    pyjson = snap / "python.json"
    data = json.loads(pyjson.read_text())
    dump = data[data["default"]]
    torch = next(d for d in dump["distributions"] if d["name"] == "torch")
    torch["version"] = "2.11.0+cpu"
    torch["requires"] = ["filelock"]
    torch["texts"]["torch/version.py"] = "__version__ = '2.11.0+cpu'\ncuda = None\nhip = None\n"
    pyjson.write_text(json.dumps(data))
    r = gd("check", "--snapshot", str(snap), "--profile", "preflight")
    assert r.returncode == 1
    assert r.stderr.startswith(
        "gpudoctor: ERROR GD-FW-001: torch 2.11.0 in /opt/torch/.venv is a CPU-only build"
    )


def test_the_container_entrypoint_judges_the_jobs_interpreter(tmp_path, envs):
    """As the Dockerfile lays it out: only the gpudoctor command on PATH, the image's python3 the job's."""
    dockerfile = (ROOT / "examples" / "container" / "Dockerfile").read_text()
    assert "ln -s /opt/gpudoctor/bin/gpudoctor /usr/local/bin/gpudoctor" in dockerfile
    assert "ENV PATH=/opt/gpudoctor/bin" not in dockerfile
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    launcher = bin_dir / "gpudoctor"
    launcher.write_text(f'#!/bin/sh\nPYTHONPATH="{ROOT}" exec "{sys.executable}" -m gpudoctor "$@"\n')
    launcher.chmod(0o755)
    env = {"GPUDOCTOR_ARGS": "--format json --fail-on never"}
    import subprocess

    full = {k: v for k, v in os.environ.items() if k not in TARGET_VARS and not k.startswith("GPUDOCTOR")}
    full.update(env, PATH=f"{bin_dir}:{envs['cpu'].parent}:{SYSTEM_PATH}", NO_COLOR="1")
    entry = ROOT / "examples" / "container" / "entrypoint.sh"
    r = subprocess.run([str(entry), "true"], capture_output=True, text=True, env=full, timeout=60)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["facts"]["python"]["executable"] == str(envs["cpu"].parent / "python3")
    assert (data["facts"]["python"]["selected_by"], torch_of(data)["build"]) == ("PATH", "cpu")


def _install_step(workflow: Path) -> str:
    import yaml

    jobs = yaml.safe_load(workflow.read_text())["jobs"]
    steps = [s for job in jobs.values() for s in job.get("steps", [])]
    return next(s["run"] for s in steps if s.get("name") == "Install gpudoctor")


def test_the_github_actions_gate_installs_gpudoctor_apart_and_judges_the_jobs_python(tmp_path, envs):
    """The workflow's install step, run as written (real venv, real pip install of this source tree), then
    gpudoctor from that install, with the PATH the step leaves, judging the job's python3 on PATH."""
    import subprocess

    source = tmp_path / "source"
    copy_source_tree(ROOT, source)
    github_path = tmp_path / "github_path"
    env = {k: v for k, v in os.environ.items() if k not in TARGET_VARS}
    env.update(
        RUNNER_TEMP=str(tmp_path / "runner"), GPUDOCTOR_SOURCE=str(source), GITHUB_PATH=str(github_path)
    )
    (tmp_path / "runner").mkdir()
    script = _install_step(ROOT / "examples" / "github-actions" / "gpu-gate.yml")
    subprocess.run(["bash", "-e", "-c", script], env=env, check=True, timeout=600, cwd=tmp_path)
    added = github_path.read_text().split()
    assert added == [str(tmp_path / "runner" / "gpudoctor-bin")]
    assert os.listdir(added[0]) == ["gpudoctor"]  # the command alone, not the venv's python3
    env["PATH"] = os.pathsep.join(added + [str(envs["cuda"].parent), SYSTEM_PATH])
    env["NO_COLOR"] = "1"
    r = subprocess.run(
        ["gpudoctor", "check", "--profile", "ci", "--format", "json", "--fail-on", "never"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        cwd=tmp_path,
    )
    data = json.loads(r.stdout)
    py = data["facts"]["python"]
    assert (py["executable"], py["selected_by"]) == (str(envs["cuda"].parent / "python3"), "PATH")
    assert (torch_of(data)["build"], torch_of(data)["cuda"]) == ("cuda", "12.4")


HEAVY = (
    "typer",
    "click",
    "rich",
    "yaml",
    "tarfile",
    "gpudoctor.host.snapshot",
    "packaging.requirements",
    "packaging.specifiers",
    "gpudoctor.knowledge",
    "gpudoctor.resolvers",
)


def _heavy_imports(tmp_path, python) -> tuple[dict, list, list]:
    """Two live checks of `python` in fresh processes sharing one cache: the second's report, and the
    modules of HEAVY each imported."""
    code = (
        "import json, sys\nfrom gpudoctor import entry\n"
        f"sys.argv = ['gpudoctor', 'check', '--python', {str(python)!r}, '--format', 'json']\n"
        "try:\n    entry.main()\nexcept SystemExit:\n    pass\n"
        f"sys.stderr.write(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in TARGET_VARS}
    env.update(PYTHONPATH=str(ROOT), NO_COLOR="1", XDG_CACHE_HOME=str(tmp_path))
    env.pop("GPUDOCTOR_NO_CACHE", None)
    runs = [
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
        for _ in range(2)
    ]
    first, second = (json.loads(r.stderr.splitlines()[-1]) for r in runs)
    return json.loads(runs[1].stdout), first, second


def test_a_check_imports_only_what_it_needs(tmp_path, envs):
    """A live check of a CPU torch environment: no typer (check_argv), no YAML once the rule cache is
    filled, no snapshot machinery, no requirement parser (torch pins no CUDA library), no knowledge tables,
    no policy specifiers, no rich off a terminal."""
    report, first, second = _heavy_imports(tmp_path, envs["cpu"])
    assert torch_of(report)["build"] == "cpu"
    # The first run fills the rule cache and the table digests (gpudoctor/table_digest.py: the newest torch
    # release, and on a host with a CUDA toolkit and a compiler the host compiler limits), which load the
    # knowledge tables once.
    assert first in (["yaml"], ["yaml", "gpudoctor.knowledge"])
    assert second == []


def test_a_check_of_a_cuda_torch_reads_its_pins_without_packaging(tmp_path, envs):
    """A CUDA build of torch requires nvidia-* wheels pinned with ==: read by the quick requirement reader
    (python_env.simple_requirement), not packaging; its table answers come from the table cache (knowledge/
    cache.py), without YAML."""
    report, _first, second = _heavy_imports(tmp_path, envs["cuda"])
    assert torch_of(report)["build"] == "cuda"
    assert second == ["gpudoctor.knowledge"]
