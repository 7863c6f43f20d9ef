"""Saved plans (`plan -o FILE`): the plan's JSON with its basis and digest, read back exactly, refused when
edited; `--index-mirror` plans index URLs on a mirror."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpudoctor.plan_file import PlanFileError, changed, digest, load

from conftest import run_cli

SNAPSHOT = "tests/fixtures/h200-driver580-snapshot"


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("plan") / "plan.json"
    r = run_cli("plan", "--snapshot", SNAPSHOT, "-o", str(path))
    assert (r.returncode, r.stderr) == (0, ""), r.stderr
    assert r.stdout.endswith(
        f"Saved to {path}: apply exactly this plan with `gpudoctor fix --plan {path}`.\n"
    )
    return path


def test_the_saved_plan_is_the_plan_json_with_its_basis(saved):
    data = json.loads(saved.read_text())
    printed = json.loads(run_cli("plan", "--snapshot", SNAPSHOT, "--format", "json").stdout)
    assert data == printed  # `plan --format json > FILE` saves the same plan
    assert data["basis"] == {
        "python": {
            "executable": "/opt/torch/.venv/bin/python3",
            "version": "3.12.3",
            "installer": "pip",
            "machine": None,  # not recorded in this capture
        },
        "frameworks": [
            "cupy 14.2.0 cuda 13",
            "jax 0.11.2 cuda 13",
            "onnxruntime 1.30.0 cpu ?",
            "torch 2.11.0 cuda 13.0",
        ],
        "driver": {"version": "580.159.04", "max_cuda": "13.0"},
        "gpus": ["NVIDIA H200 9.0"],
        "findings": ["GD-FW-004[3]"],
    }
    assert data["digest"] == digest(data) and len(data["digest"]) == 64


def test_a_saved_plan_reads_back_as_the_same_steps(saved):
    plan = load(str(saved))
    assert plan.plan.python == "/opt/torch/.venv/bin/python3"
    assert [s.command for s in plan.plan.steps] == [
        "/opt/torch/.venv/bin/python3 -m pip uninstall -y onnxruntime",
        "/opt/torch/.venv/bin/python3 -m pip install 'onnxruntime-gpu[cuda,cudnn]==1.30.0'",
    ]
    assert [s.rules for s in plan.plan.steps] == [("GD-FW-004",), ("GD-FW-004",)]


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d["steps"][1]["argv"].append("evil==1"), "was changed after gpudoctor wrote it"),
        (lambda d: d["basis"]["driver"].update(version="999.0"), "was changed after gpudoctor wrote it"),
        (lambda d: d["python"].update(executable="/usr/bin/python3"), "was changed after gpudoctor wrote it"),
        (lambda d: d.pop("digest"), "has no 'digest'"),
        (lambda d: d.update(schema="other"), "is not a gpudoctor plan"),
        (lambda d: d.update(schema_version=2), "has plan schema version 2"),
    ],
)
def test_an_edited_plan_is_refused(saved, tmp_path, edit, message):
    data = json.loads(saved.read_text())
    edit(data)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))
    with pytest.raises(PlanFileError, match=message):
        load(str(path))


def test_a_plan_whose_steps_are_not_gpudoctors_is_refused_even_with_a_matching_digest(saved, tmp_path):
    data = json.loads(saved.read_text())
    data["steps"][0]["kind"] = "shell"
    data["digest"] = digest(data)
    path = tmp_path / "kind.json"
    path.write_text(json.dumps(data))
    with pytest.raises(PlanFileError, match="kind 'shell' with risk 'python-env' is not a step kind"):
        load(str(path))


def test_what_is_not_a_plan_is_refused(tmp_path):
    (tmp_path / "x").write_text("not json")
    with pytest.raises(PlanFileError, match="is not JSON"):
        load(str(tmp_path / "x"))
    with pytest.raises(PlanFileError, match="cannot read"):
        load(str(tmp_path / "missing"))


def test_changed_names_each_fact_that_moved():
    a = {"driver": {"version": "580.95.05"}, "findings": ["GD-FW-001"], "gpus": ["H200 9.0"]}
    b = {"driver": {"version": "590.1"}, "findings": [], "gpus": ["H200 9.0"]}
    assert changed(a, b) == [
        "driver.version: was '580.95.05', now '590.1'",
        "findings: was ['GD-FW-001'], now []",
    ]
    assert changed(a, a) == []


def test_a_bad_index_mirror_is_refused():
    r = run_cli("plan", "--snapshot", SNAPSHOT, "--index-mirror", "https://a.org/;rm=http://b.org/")
    assert r.returncode == 2
    assert "--index-mirror 'https://a.org/;rm=http://b.org/': expected ORIGINAL=MIRROR" in r.stderr
