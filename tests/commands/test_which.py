"""`gpudoctor which -- CMD` (issue 27): the interpreter a command will run, and why, end to end.

A home directory is built once with real tools: a virtual environment made by `python -m venv`, filled by
real pip from local wheels (a torch-like CUDA build, and a small package whose console script real pip
writes), a project made by `uv init` whose environment `uv run` makes, scripts with a `#!/usr/bin/env
python3` and an absolute `#!` line, a tool `uv tool install` put in ~/.local/bin, and a conda-style
environment listed in `~/.conda/environments.txt`.
gpudoctor runs as users run it (`python -m gpudoctor which --format json -- CMD`), with the command's PATH,
HOME and working directory; where the command can really run here, it does, printing its sys.executable,
and gpudoctor must have named that one (the boundary: what the command really runs). conda itself is not
installed here: its case is checked against conda's layout, not run.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gpudoctor.commands import which as which_module

from conftest import ROOT
from pyenvs import build_wheel, make_venv, pip_install, uv, wheelhouse

SHOW = "import sys\nprint(sys.executable)\n"

# conda's list of the environments it made: one prefix a line, as conda/conda#2704 shows it
# (https://github.com/conda/conda/issues/2704, `cat .conda/environments.txt`, read 2026-12-05).
# The first entry of a new environment's conda-meta/history, as conda 4.4 writes it
# (https://github.com/ContinuumIO/anaconda-issues/issues/1731#issuecomment, kalefranz 2017-05-16, read
# 2026-12-05), with the prefix of this home; its packages are left out.
CONDA_HISTORY = "==> 2017-05-16 14:07:24 <==\n# cmd: {root}/bin/conda create -n e python=3.11\n"


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    top = tmp_path_factory.mktemp("which")
    home = top / "home"
    wheels = wheelhouse(top / "wheels")
    build_wheel(
        wheels,
        "hello-gpu",
        "1.0",
        {
            "hello_gpu/__init__.py": "import sys\n\n\ndef main():\n    print(sys.executable)\n",
            "hello_gpu-1.0.dist-info/entry_points.txt": "[console_scripts]\nhello-gpu = hello_gpu:main\n",
        },
    )
    venv = make_venv(sys.executable, home / "venvs" / "train")
    pip_install(venv, wheels, "torch==2.5.1+cu124", "hello-gpu")
    scripts = home / "bin"
    scripts.mkdir()
    for name, line in (("by-env", "#!/usr/bin/env python3"), ("by-path", f"#!{venv}")):
        (scripts / name).write_text(f"{line}\n{SHOW}")
        (scripts / name).chmod(0o755)
    (home / "show.py").write_text(SHOW)
    # conda: <root>/envs/e, conda not on the command's PATH (its shell function is not seen from here)
    conda_root = home / "miniconda3"
    env_prefix = conda_root / "envs" / "e"
    (env_prefix / "conda-meta").mkdir(parents=True)
    (env_prefix / "conda-meta" / "history").write_text(CONDA_HISTORY.format(root=conda_root))
    (env_prefix / "bin").mkdir()
    (env_prefix / "bin" / "python").symlink_to(sys.executable)  # conda's own interpreter, linked here
    (home / ".conda").mkdir()
    (home / ".conda" / "environments.txt").write_text(f"{conda_root}\n{env_prefix}\n")
    env = {
        "PATH": f"{venv.parent}:{scripts}:/usr/bin:/bin",
        "HOME": str(home),
        "UV_OFFLINE": "1",
        "UV_PYTHON_DOWNLOADS": "never",
        "UV_PYTHON": sys.executable,
        "UV_CACHE_DIR": str(top / "uv-cache"),
        "UV_NO_CONFIG": "1",
    }
    proj = home / "proj"
    subprocess.run(
        [uv(), "init", "--quiet", "--bare", "--no-workspace", "--vcs", "none", str(proj)],
        env=env,
        check=True,
        timeout=120,
    )
    (proj / "x.py").write_text(SHOW)
    # a tool installed by `uv tool install`: its console script linked into ~/.local/bin
    tools = dict(env, UV_TOOL_DIR=str(home / ".local" / "share" / "uv" / "tools"))
    tools["UV_TOOL_BIN_DIR"] = str(home / ".local" / "bin")
    subprocess.run(
        [uv(), "tool", "install", "--quiet", "--no-index", "--find-links", str(wheels), "hello-gpu"],
        env=tools,
        check=True,
        timeout=120,
    )
    return {"home": home, "venv": venv, "proj": proj, "conda": env_prefix, "env": env}


def which(home, *command: str, cwd=None) -> tuple[int, dict]:
    env = dict(home["env"], PYTHONPATH=str(ROOT), NO_COLOR="1")
    done = subprocess.run(
        [sys.executable, "-m", "gpudoctor", "which", "--format", "json", "--", *command],
        env=env,
        cwd=str(cwd or home["home"]),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stderr == ""
    return done.returncode, json.loads(done.stdout)


def really(home, *command: str, cwd=None) -> str:
    """The sys.executable the command really runs with."""
    done = subprocess.run(
        list(command),
        env=home["env"],
        cwd=str(cwd or home["home"]),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_python_on_the_path_the_command_has(home):
    bin_dir = home["venv"].parent
    code, answer = which(home, "python", "show.py")
    assert code == 0
    assert answer["interpreter"] == f"{bin_dir}/python"
    assert answer["reason"] == "python on the command's PATH, argv[0] of the command"
    assert really(home, "python", "show.py") == answer["interpreter"]
    # the environment, from its metadata: the torch wheel's version.py says CUDA 12.4
    environment = answer["environment"]
    assert environment["prefix"] == str(home["venv"].parents[1])
    assert environment["venv"] is True and environment["installer"] == "pip"
    assert environment["version"] == ".".join(map(str, sys.version_info[:3]))
    assert [(f["distribution"], f["version"], f["build"], f["cuda"]) for f in environment["frameworks"]] == [
        ("torch", "2.5.1", "cuda", "12.4")
    ]


def test_an_interpreter_named_by_its_path(home):
    code, answer = which(home, "venvs/train/bin/python", "show.py")
    assert (code, answer["interpreter"]) == (0, str(home["venv"]))
    assert answer["reason"] == "argv[0] of the command"
    assert really(home, "venvs/train/bin/python", "show.py") == answer["interpreter"]


@pytest.mark.parametrize(
    "script, interpreter, reason",
    [
        (
            "by-env",
            "{bin}/python3",
            "python3 on the command's PATH, named by the #! line of {scripts}/by-env",
        ),
        ("by-path", "{bin}/python", "named by the #! line of {scripts}/by-path"),
        ("hello-gpu", "{bin}/python", "named by the #! line of {bin}/hello-gpu"),  # written by real pip
    ],
)
def test_a_script_runs_the_interpreter_its_shebang_names(home, script, interpreter, reason):
    where = {"bin": home["venv"].parent, "scripts": home["home"] / "bin"}
    code, answer = which(home, script, "--flag")
    assert code == 0
    assert answer["interpreter"] == interpreter.format(**where)
    assert answer["reason"] == reason.format(**where)
    assert [step["command"] for step in answer["followed"]][0] == script
    assert really(home, script) == answer["interpreter"]


def test_a_tool_uv_installed_runs_its_own_environment(home):
    local_bin, tool = home["home"] / ".local" / "bin", home["home"] / ".local" / "share" / "uv" / "tools"
    home = dict(home, env=dict(home["env"], PATH=f"{local_bin}:{home['env']['PATH']}"))
    code, answer = which(home, "hello-gpu")
    assert (code, answer["interpreter"]) == (0, f"{tool}/hello-gpu/bin/python")
    assert answer["reason"] == f"named by the #! line of {local_bin}/hello-gpu"  # a link to the tool's script
    assert answer["environment"]["installer"] == "uv" and answer["environment"]["frameworks"] == []
    assert really(home, "hello-gpu") == answer["interpreter"]


def test_uv_run_names_the_project_environment_before_uv_makes_it(home):
    proj = home["proj"]
    code, answer = which(home, "uv", "run", "x.py", cwd=proj)
    assert (code, answer["interpreter"]) == (0, f"{proj}/.venv/bin/python")
    assert answer["reason"] == (
        f"uv run: the project environment of {proj} (.venv; pyproject.toml found at {proj}/pyproject.toml)"
    )
    assert answer["environment"] == {"unknown": f"{proj}/.venv/bin/python does not exist (yet)"}
    assert really(home, uv(), "run", "x.py", cwd=proj) == answer["interpreter"]
    # now that uv made it: from a subdirectory, `uv run python`, and the environment read
    (proj / "sub").mkdir(exist_ok=True)
    code, answer = which(home, "uv", "run", "python", "../x.py", cwd=proj / "sub")
    assert answer["interpreter"] == f"{proj}/.venv/bin/python"
    assert really(home, uv(), "run", "python", "../x.py", cwd=proj / "sub") == answer["interpreter"]
    assert answer["environment"]["prefix"] == f"{proj}/.venv"
    assert answer["environment"]["installer"] == "uv"
    # the environment uv made, named by its path from the project
    code, answer = which(home, ".venv/bin/python", "x.py", cwd=proj)
    assert (code, answer["interpreter"], answer["reason"]) == (
        0,
        f"{proj}/.venv/bin/python",
        "argv[0] of the command",
    )
    assert really(home, ".venv/bin/python", "x.py", cwd=proj) == answer["interpreter"]


def test_conda_run_dash_n_finds_the_environment_conda_listed(home):
    prefix = home["conda"]
    code, answer = which(home, "conda", "run", "-n", "e", "python", "train.py")
    assert (code, answer["interpreter"]) == (0, f"{prefix}/bin/python")
    assert answer["reason"] == (
        f"conda run -n e: the environment {prefix} (listed in {home['home']}/.conda/environments.txt; "
        "conda's installation is not known from the command)"
    )


def test_none_known_is_exit_1_with_the_reason_and_no_command_is_exit_2(home, capsys):
    code, answer = which(home, "bash", "-c", "true")
    assert code == 1
    assert answer["interpreter"] is None and answer["environment"] is None
    assert answer["reason"].startswith("the command is not a Python program (")
    with pytest.raises(which_module.CommandError) as e:
        which_module.run(())
    assert e.value.code == 2


def test_a_working_directory_since_removed_is_exit_2_with_why(monkeypatch):
    def gone():
        raise FileNotFoundError(2, "No such file or directory")

    monkeypatch.setattr(which_module.os, "getcwd", gone)
    with pytest.raises(which_module.CommandError) as e:
        which_module.run(("python3", "x.py"))
    assert e.value.code == 2
    assert (
        str(e.value) == "which: the working directory is gone (No such file or directory); cd into one first"
    )


def test_the_text_answer(home, monkeypatch, capsys):
    monkeypatch.chdir(home["home"])
    for name, value in home["env"].items():
        monkeypatch.setenv(name, value)
    assert which_module.run(("by-env",)) == 0
    bin_dir, scripts = home["venv"].parent, home["home"] / "bin"
    assert capsys.readouterr().out == (
        f"{bin_dir}/python3\n"
        f"  why: python3 on the command's PATH, named by the #! line of {scripts}/by-env\n"
        f"  followed: by-env (argv[0] of the command)\n"
        f"            /usr/bin/env (named by the #! line of {scripts}/by-env)\n"
        f"            python3 (named by the #! line of {scripts}/by-env)\n"
        f"  environment: {home['venv'].parents[1]} (a virtual environment, pip), "
        f"Python {'.'.join(map(str, sys.version_info[:3]))}\n"
        "  frameworks: torch 2.5.1 (CUDA 12.4 build)\n"
    )


def test_run_judges_the_interpreter_which_names(home, monkeypatch, capfd):
    """One reading for both: after a failure, `gpudoctor run` judges exactly what `which` names."""
    from gpudoctor.commands import run as run_module
    from gpudoctor.explain import failure

    judged = []
    monkeypatch.setattr(
        failure, "explain_failure", lambda tail, timeout=10.0, target=None: judged.append(target) or ""
    )
    (home["home"] / "bin" / "fails").write_text(
        "#!/usr/bin/env python3\nimport sys\nsys.stderr.write('RuntimeError: boom\\n')\nsys.exit(4)\n"
    )
    (home["home"] / "bin" / "fails").chmod(0o755)
    (home["proj"] / "fails.py").write_text(
        "import sys\nsys.stderr.write('RuntimeError: boom\\n')\nsys.exit(4)\n"
    )
    for name, value in home["env"].items():
        monkeypatch.setenv(name, value)
    for cwd, command in ((home["home"], ("fails", "--x")), (home["proj"], (uv(), "run", "fails.py"))):
        monkeypatch.chdir(cwd)
        assert run_module.run(command) == 4
        assert which_module.run(command, fmt="json") == 0
        named = json.loads(capfd.readouterr().out)
        assert judged.pop() == (named["interpreter"], named["reason"])
