"""`gpudoctor envs` as a table and as JSON."""

from __future__ import annotations

import json

from gpudoctor.report import envs_report

ROWS = [
    {
        "name": "ml",
        "kind": "venv",
        "python": "3.12.3",
        "prefix": "/h/.virtualenvs/ml",
        "interpreter": "/h/.virtualenvs/ml/bin/python",
        "installer": "pip",
        "found_by": ["~/.virtualenvs", "jupyter kernel 'ml'"],
        "problem": None,
        "frameworks": [
            {"name": "torch", "distribution": "torch", "version": "2.5.1+cu124", "build": "cuda",
             "cuda": "12.4", "rocm": None},
            {"name": "cupy", "distribution": "cupy-cuda12x", "version": "13.3.0", "build": "cuda",
             "cuda": "12", "rocm": None},
        ],
    },
    {
        "name": "old",
        "kind": "conda",
        "python": None,
        "prefix": "/h/miniconda3/envs/old",
        "interpreter": None,
        "installer": None,
        "found_by": ["~/.conda/environments.txt"],
        "problem": "no such directory (named by ~/.conda/environments.txt)",
        "frameworks": [],
    },
]  # fmt: skip


def test_the_table_has_one_line_per_environment_and_says_what_is_broken():
    assert envs_report.render_text(ROWS) == (
        "NAME  KIND   PYTHON  FRAMEWORKS                                                FOUND BY\n"
        "ml    venv   3.12.3  torch 2.5.1+cu124 cuda 12.4, cupy-cuda12x 13.3.0 cuda 12  ~/.virtualenvs, "
        "jupyter kernel 'ml'\n"
        "old   conda  ?       -                                                         "
        "~/.conda/environments.txt\n"
        "  ! no such directory (named by ~/.conda/environments.txt)\n"
        "\n"
        "2 environments, 1 broken. Judge each: gpudoctor check --all-envs\n"
    )
    assert envs_report.render_text([]) == "No Python environment found.\n"


def test_a_framework_whose_build_is_unknown_says_so():
    fw = {"name": "onnxruntime", "distribution": "onnxruntime-gpu", "version": "1.18.0", "build": "cuda",
          "cuda": None, "rocm": None}  # fmt: skip
    assert envs_report.framework_text(fw) == "onnxruntime 1.18.0 cuda"
    assert envs_report.framework_text(dict(fw, build=None)) == "onnxruntime 1.18.0 build unknown"


def test_json_has_its_schema_and_every_row():
    data = json.loads(envs_report.render_json(ROWS))
    assert (data["schema"], data["schema_version"]) == ("gpudoctor.envs", 1)
    assert data["environments"] == ROWS


def test_the_environment_check_judges_by_default_is_marked():
    rows = [dict(ROWS[0], check_default="VIRTUAL_ENV"), ROWS[1]]
    default = {"interpreter": ROWS[0]["interpreter"], "chosen_by": "VIRTUAL_ENV", "name": "ml"}
    lines = envs_report.render_text(rows, default).splitlines()
    assert lines[1].startswith("ml *  venv   3.12.3  torch 2.5.1+cu124")
    assert lines[-2] == "* what `gpudoctor check` judges without --python (chosen by VIRTUAL_ENV)"
    assert json.loads(envs_report.render_json(rows, default))["check_default"] == default


def test_a_default_that_is_none_of_them_is_said():
    default = {"interpreter": "/home/u/.pyenv/shims/python3", "chosen_by": "PATH", "name": None}
    lines = envs_report.render_text(ROWS, default).splitlines()
    assert lines[-2] == (
        "`gpudoctor check` without --python judges /home/u/.pyenv/shims/python3 (chosen by PATH): none of "
        "these (a launcher, such as a pyenv shim, picks one as it runs)"
    )
