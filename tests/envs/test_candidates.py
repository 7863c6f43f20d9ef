"""Where environments are named: each place listed, each entry with its words and kind."""

from __future__ import annotations

import json

from gpudoctor.envs import candidates
from gpudoctor.envs.candidates import Candidate
from gpudoctor.envs.places import Places
from gpudoctor.host.env_files import EnvFiles

# IRkernel's kernelspec, a kernel of another language, not a Python environment
# (IRkernel/IRkernel@04ca360f136d1a7f79a91b5c91ed65696162886a:inst/kernelspec/kernel.json).
R_KERNEL_JSON = """{"argv": ["R", "--slave", "-e", "IRkernel::main()", "--args", "{connection_file}"],
 "display_name":"R",
 "language":"R"
}
"""


def places(tmp_path, **env) -> Places:
    return Places(str(tmp_path / "home"), str(tmp_path / "home" / "code" / "a" / "b"), env, (), (), ())


def test_scanned_directories_keep_directories_only(tmp_path):
    workon = tmp_path / "home" / ".virtualenvs"
    (workon / "ml").mkdir(parents=True)
    (workon / ".hidden").mkdir()
    (workon / "postactivate").write_text("#!/bin/bash\n")  # virtualenvwrapper's hook scripts live here
    assert candidates.entries(EnvFiles(), str(workon), "~/.virtualenvs", "venv") == [
        Candidate(str(workon / "ml"), "~/.virtualenvs", "venv", "ml")
    ]


def test_the_nearest_project_venv_from_the_working_directory_up(tmp_path):
    (tmp_path / "home" / "code" / "a" / "b").mkdir(parents=True)
    (tmp_path / "home" / "code" / ".venv").mkdir()
    (tmp_path / "home" / ".venv").mkdir()
    found = [c for c in candidates.candidates(EnvFiles(), places(tmp_path)) if c.kind == "venv"]
    assert found == [
        Candidate(str(tmp_path / "home" / "code" / ".venv"), "project .venv (~/code)", "venv", "code/.venv")
    ]


def test_kernels_of_other_languages_are_not_environments(tmp_path):
    kernels = tmp_path / "kernels"
    (kernels / "ir").mkdir(parents=True)
    (kernels / "ir" / "kernel.json").write_text(R_KERNEL_JSON)
    (kernels / "broken").mkdir()
    (kernels / "broken" / "kernel.json").write_text("{")
    (kernels / "empty").mkdir()
    found = candidates.kernels(EnvFiles(), str(kernels), places(tmp_path))
    # the R kernel is skipped, the directory without kernel.json too; the unreadable one says why
    assert [(c.name, c.kind) for c in found] == [("broken", "kernel")]
    assert found[0].problem.startswith(f"{kernels}/broken/kernel.json: not JSON")


def test_an_environments_own_kernel_without_an_interpreter_says_so(tmp_path):
    env = tmp_path / "env"
    kernels = env / "share" / "jupyter" / "kernels" / "python3"
    kernels.mkdir(parents=True)
    spec = {"argv": ["python", "-m", "ipykernel_launcher", "-f", "{connection_file}"], "language": "python"}
    (kernels / "kernel.json").write_text(json.dumps(spec))
    (found,) = candidates.kernels(
        EnvFiles(), str(env / "share" / "jupyter" / "kernels"), places(tmp_path), str(env)
    )
    assert found.problem == f"the kernel starts `python`, and {env}/bin holds none"


def test_names_and_home_relative_words():
    assert candidates.venv_name("/h/code/proj/.venv") == "proj/.venv"
    assert candidates.venv_name("/h/.virtualenvs/ml/") == "ml"
    assert candidates.conda_name("/opt/conda/envs/train") == "train"
    assert candidates.tilde("/home/u/.virtualenvs", "/home/u") == "~/.virtualenvs"
    assert candidates.tilde("/home/user2/x", "/home/u") == "/home/user2/x"
