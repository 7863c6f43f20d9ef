"""Which interpreter a command runs (host/command_python.py), on real files: interpreters, console scripts
written by real pip and real uv into virtual environments made here (tests/host/conftest.py), shebangs and
the wrappers that run the rest of the line. `uv run` and `conda run` are in test_command_uv.py and
test_command_conda.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gpudoctor.host.command_python import LiveFiles, interpreter_of, shebang
from gpudoctor.host.command_words import NOT_PYTHON

from .conftest import SYSTEM_PATH, first_line, judge

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


def test_a_script_that_names_itself_as_its_interpreter_ends(tmp_path):
    loop = tmp_path / "loop"
    loop.write_text(f"#!{loop}\n")
    loop.chmod(0o755)
    found = judge([str(loop)])
    assert found.interpreter is None and found.reason.startswith(
        "more than 8 wrappers or interpreters in a row"
    )


def test_a_program_that_is_not_python_names_no_interpreter():
    found = judge(["sh", "-c", "exit 3"])
    sh = shutil.which("sh", path=SYSTEM_PATH)
    assert found == (None, f"{NOT_PYTHON} ({sh} is not a script)")
    # a shell script of this machine: glibc's ldd (#!/bin/bash)
    ldd = shutil.which("ldd", path=SYSTEM_PATH)
    interpreter = first_line(Path(ldd))[2:].decode().split()[0]
    found = judge(["ldd", "/bin/sh"])
    assert found == (None, f"{NOT_PYTHON} ({interpreter}, named by the #! line of {ldd}, is not a script)")


def test_the_trail_lists_each_command_followed(envs):
    # what `gpudoctor which` shows: the wrapper, the console script found on PATH, its #! interpreter
    bin_dir = envs["venv"].parent
    trail: list = []
    found = interpreter_of(
        ["nohup", "torchrun", "train.py"], {"PATH": f"{bin_dir}:{SYSTEM_PATH}"}, "/", LiveFiles(), trail
    )
    assert found.interpreter == first_line(bin_dir / "torchrun")[2:].decode()
    assert trail == [
        ("nohup", "argv[0] of the command"),
        ("torchrun", "the command nohup runs"),
        (found.interpreter, f"named by the #! line of {bin_dir}/torchrun"),
    ]


def test_a_launcher_that_picks_its_own_environment_names_none(envs, tmp_path):
    # `poetry` installed by pip: its #! line names poetry's own interpreter, not the project's environment
    # that `poetry run` runs the command in
    poetry = tmp_path / "poetry"
    poetry.write_text(f"#!{envs['venv']}\nimport sys\n")
    poetry.chmod(0o755)
    env = {"PATH": f"{tmp_path}:{SYSTEM_PATH}"}
    for argv in (["poetry", "run", "python", "x.py"], ["poetry", "--directory", "proj", "run", "torchrun"]):
        assert judge(argv, env) == (
            None,
            "poetry run runs the command in an environment poetry picks, not read here",
        )
    assert judge(["poetry", "install"], env).interpreter == str(envs["venv"])  # poetry itself runs
