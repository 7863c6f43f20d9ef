"""Which interpreter a command runs (host/command_python.py), on real files: console scripts written by real
pip and real uv into virtual environments made here, and uv's own choice of environment compared with what
uv itself runs."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from gpudoctor.host.command_python import LiveFiles, interpreter_of, shebang
from gpudoctor.host.command_uv import UV_RUN_VALUES
from gpudoctor.host.command_words import NOT_PYTHON

from pyenvs import build_wheel, make_venv, pip_install, uv

FILES = LiveFiles()
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"

# Entry points as the projects declare them: torch's setup.py (pytorch/pytorch, setup.py, entry_points
# "console_scripts": "torchrun = torch.distributed.run:main"), accelerate's (huggingface/accelerate, setup.py,
# "accelerate=accelerate.commands.accelerate_cli:main"). DeepSpeed's launcher is a plain script
# (microsoft/DeepSpeed@3354cff3:bin/ds, `#!/usr/bin/env python`), which a wheel carries in .data/scripts/ with
# its first line rewritten to `#!python`, the line an installer replaces with the interpreter (PEP 427,
# "Recommended installer features").
DEEPSPEED_SCRIPT = (
    "#!python\n\nfrom deepspeed.pt.deepspeed_run import main\n\nif __name__ == '__main__':\n    main()\n"
)


def _wheels(out: Path) -> Path:
    build_wheel(
        out,
        "torch",
        "2.5.1",
        {
            "torch/__init__.py": "",
            "torch/distributed/run.py": "def main():\n    pass\n",
            "torch-2.5.1.dist-info/entry_points.txt": (
                "[console_scripts]\ntorchrun = torch.distributed.run:main\n"
            ),
        },
    )
    build_wheel(
        out,
        "accelerate",
        "1.2.1",
        {
            "accelerate/commands/accelerate_cli.py": "def main():\n    pass\n",
            "accelerate-1.2.1.dist-info/entry_points.txt": (
                "[console_scripts]\naccelerate = accelerate.commands.accelerate_cli:main\n"
            ),
        },
    )
    wheel = build_wheel(
        out,
        "deepspeed",
        "0.16.2",
        {"deepspeed/__init__.py": "", "deepspeed-0.16.2.data/scripts/deepspeed": DEEPSPEED_SCRIPT},
    )
    _executable_members(wheel, ".data/scripts/")
    return out


def _executable_members(wheel: Path, marker: str) -> None:
    """Mark the wheel's scripts 0755 in the zip, as bdist_wheel stores them (installers keep that mode)."""
    with zipfile.ZipFile(wheel) as z:
        members = [(info, z.read(info)) for info in z.infolist()]
    with zipfile.ZipFile(wheel, "w") as z:
        for info, data in members:
            if marker in info.filename:
                info.external_attr = (stat.S_IFREG | 0o755) << 16
            z.writestr(info, data)


@pytest.fixture(scope="module")
def envs(tmp_path_factory):
    """proj: a uv-style project whose .venv real pip filled (torch, accelerate, deepspeed); long: a venv at a
    path too long for a #! line, filled by pip; uvenv and relocatable: venvs uv made and filled."""
    root = tmp_path_factory.mktemp("cmdpy")
    wheels = _wheels(root / "wheels")
    proj = root / "proj"
    (proj / "sub").mkdir(parents=True)
    (proj / "pyproject.toml").write_text(
        '[project]\nname = "proj"\nversion = "0.1.0"\nrequires-python = ">=3.9"\ndependencies = []\n'
    )
    venv = make_venv(sys.executable, proj / ".venv")
    pip_install(venv, wheels, "torch", "accelerate", "deepspeed")
    long = make_venv(sys.executable, root / ("l" * 130) / "venv")
    pip_install(long, wheels, "torch")
    made = {}
    for name, extra in (("uvenv", []), ("relocatable", ["--relocatable"])):
        where = root / name
        subprocess.run([uv(), "venv", "--quiet", *extra, "--python", sys.executable, str(where)], check=True)
        subprocess.run(
            [uv(), "pip", "install", "--quiet", "--python", str(where / "bin" / "python"), "--no-index"]
            + ["--find-links", str(wheels), "torch"],
            check=True,
        )
        made[name] = where
    return {"root": root, "proj": proj, "venv": venv, "long": long, **made}


def judge(argv, env=None, cwd="/"):
    return interpreter_of(argv, {"PATH": SYSTEM_PATH} if env is None else env, str(cwd), FILES)


def first_line(path: Path) -> bytes:
    return path.read_bytes().split(b"\n", 1)[0]


# --- an interpreter -------------------------------------------------------------------------------------


def test_an_interpreter_path_is_that_interpreter(envs):
    python = str(envs["venv"])
    assert judge([python, "-c", "import torch"]) == (python, "argv[0] of the command")
    # relative to the command's working directory, as execve resolves it
    assert judge([".venv/bin/python", "train.py"], cwd=envs["proj"]) == (python, "argv[0] of the command")


def test_a_bare_name_is_looked_up_on_the_commands_path_as_execvp_does(envs):
    bin_dir = str(envs["venv"].parent)
    env = {"PATH": f"/nonexistent:{bin_dir}:{SYSTEM_PATH}"}
    assert judge(["python", "train.py"], env) == (
        f"{bin_dir}/python",
        "python on the command's PATH, argv[0] of the command",
    )
    # an empty PATH entry is the working directory
    assert judge(["python3"], {"PATH": "/nonexistent:"}, cwd=bin_dir).interpreter == f"{bin_dir}/python3"
    missing = judge(["python3.99"], {"PATH": bin_dir})
    assert missing.interpreter is None and "python3.99" in missing.reason


def test_python_dash_m_is_that_python(envs):
    python = str(envs["venv"])
    assert (
        judge([python, "-m", "torch.distributed.run", "--nproc-per-node", "8", "train.py"]).interpreter
        == python
    )


# --- console scripts and shebangs -------------------------------------------------------------------------


@pytest.mark.parametrize("script", ["torchrun", "accelerate", "deepspeed"])
def test_a_console_script_pip_wrote_names_the_venvs_python(envs, script):
    path = envs["venv"].parent / script
    line = first_line(path)  # as pip wrote it: #!/.../proj/.venv/bin/python (or python3)
    assert line.startswith(b"#!" + str(envs["venv"].parent).encode() + b"/python")
    expected = line[2:].decode()
    assert judge([str(path), "launch", "train.py"]) == (expected, f"named by the #! line of {path}")
    # found on PATH, the same
    env = {"PATH": f"{envs['venv'].parent}:{SYSTEM_PATH}"}
    assert judge([script, "train.py"], env).interpreter == expected


def test_a_console_script_at_a_long_path_is_read_through_pips_sh_trampoline(envs):
    path = envs["long"].parent / "torchrun"
    head = path.read_bytes().split(b"\n")
    assert head[0] == b"#!/bin/sh" and head[1].startswith(b"'''exec' ")  # what pip writes past 127 bytes
    found = judge([str(path), "train.py"])
    assert found.interpreter is not None
    assert Path(found.interpreter).parent == envs["long"].parent
    assert found.reason == f"named by the #!/bin/sh lines of {path}"


@pytest.mark.parametrize("name", ["uvenv", "relocatable"])
def test_a_console_script_uv_wrote_names_the_venvs_python(envs, name):
    path = envs[name] / "bin" / "torchrun"
    found = judge([str(path), "train.py"])
    assert found.interpreter is not None and Path(found.interpreter).parent == envs[name] / "bin"
    if name == "relocatable":  # uv names the interpreter relative to the script
        assert path.read_bytes().split(b"\n")[1].startswith(b"'''exec' \"$(dirname -- ")


def test_env_in_a_shebang_looks_the_interpreter_up_on_the_commands_path(envs, tmp_path):
    # microsoft/DeepSpeed@3354cff3:bin/ds starts with this line
    script = tmp_path / "ds"
    script.write_text("#!/usr/bin/env python\n\nfrom deepspeed.pt.deepspeed_run import main\n")
    script.chmod(0o755)
    bin_dir = envs["venv"].parent
    found = judge([str(script)], {"PATH": f"{bin_dir}:{SYSTEM_PATH}"})
    assert found == (f"{bin_dir}/python", f"python on the command's PATH, named by the #! line of {script}")


def test_env_dash_s_in_a_shebang_is_split(envs, tmp_path):
    # a first line common in public scripts (e.g. MonitoraPA's feed builder, 2022): env -S for an option
    script = tmp_path / "train.py"
    script.write_text("#!/usr/bin/env -S python3 -u\nimport torch\n")
    script.chmod(0o755)
    bin_dir = envs["venv"].parent
    assert judge([str(script)], {"PATH": f"{bin_dir}:{SYSTEM_PATH}"}).interpreter == f"{bin_dir}/python3"
    assert shebang(script.read_bytes()) == ("/usr/bin/env", "-S python3 -u", "import torch")
    # pip's own first two lines (the second differs between pip releases: a coding line, or the import)
    head = (envs["venv"].parent / "torchrun").read_bytes()
    assert shebang(head) == (
        first_line(envs["venv"].parent / "torchrun")[2:].decode(),
        "",
        head.decode().splitlines()[1],
    )


def test_env_as_the_command_sets_variables_and_runs_the_rest(envs):
    bin_dir = envs["venv"].parent
    found = judge(["env", "CUDA_VISIBLE_DEVICES=0", f"PATH={bin_dir}", "python", "x.py"], {})
    assert found.interpreter == f"{bin_dir}/python"


def test_coreutils_wrappers_run_the_rest(envs):
    python = str(envs["venv"])
    for argv, name in (
        (["nohup", python, "train.py"], "nohup"),
        (["nice", "-n", "10", python, "train.py"], "nice"),
        (["timeout", "-k", "30", "--signal=INT", "3600", python, "train.py"], "timeout"),
        (["stdbuf", "-oL", "-e", "0", python, "train.py"], "stdbuf"),
    ):
        assert judge(argv) == (python, f"the command {name} runs"), argv
    assert judge(["timeout", "10"]).interpreter is None


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


def test_a_script_that_names_itself_as_its_interpreter_ends(tmp_path):
    loop = tmp_path / "loop"
    loop.write_text(f"#!{loop}\n")
    loop.chmod(0o755)
    found = judge([str(loop)])
    assert found.interpreter is None and found.reason.startswith(
        "more than 8 wrappers or interpreters in a row"
    )


def test_a_fifo_in_place_of_a_script_is_not_waited_on(tmp_path):
    fifo = tmp_path / "train"
    os.mkfifo(fifo)
    fifo.chmod(0o755)
    assert FILES.head(str(fifo)) is None  # returns at once: opened non-blocking, refused as no regular file


def test_a_program_that_is_not_python_names_no_interpreter():
    found = judge(["sh", "-c", "exit 3"])
    sh = shutil.which("sh", path=SYSTEM_PATH)
    assert found == (None, f"{NOT_PYTHON} ({sh} is not a script)")
    # a shell script of this machine: glibc's ldd (#!/bin/bash)
    ldd = shutil.which("ldd", path=SYSTEM_PATH)
    interpreter = first_line(Path(ldd))[2:].decode().split()[0]
    found = judge(["ldd", "/bin/sh"])
    assert found == (None, f"{NOT_PYTHON} ({interpreter}, named by the #! line of {ldd}, is not a script)")


# --- uv run: what uv itself runs ---------------------------------------------------------------------------


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
    assert found.reason == f"uv run: the project environment of {proj}"
    # --directory names the project from elsewhere; a console script of the env runs with its python
    other = ["uv", "--directory", str(proj), "run", "--offline", "--no-sync", "torchrun", "x.py"]
    torchrun = envs["venv"].parent / "torchrun"
    assert judge(other, env, cwd=envs["root"]) == (
        first_line(torchrun)[2:].decode(),
        f"uv run: the project environment of {proj}; named by the #! line of {torchrun}",
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
    assert "(UV_PROJECT_ENVIRONMENT)" in found.reason


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


# --- conda run, mamba run, micromamba run ------------------------------------------------------------------


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
        f"conda run -n train: the environment {root}/envs/train"
    )
    assert judge(["conda", "run", "-p", str(root / "envs" / "train"), "python"], env).interpreter == python
    # a name conda's envs directories do not hold, but its list of environments does
    listed = judge(["conda", "run", "-n", "listed", "python"], env)
    assert listed.interpreter == f"{conda['home']}/elsewhere/envs/listed/bin/python"
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
