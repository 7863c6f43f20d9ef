"""The gate's report: one line a group, its outcome, the verdict of the whole run."""

from __future__ import annotations

import json
from types import SimpleNamespace

from gpudoctor.pipeline.result import Target, Verdict
from gpudoctor.report.gate_report import exit_code, render_json, render_text


def _group(gpu: str, nodes: list, code: int) -> SimpleNamespace:
    result = SimpleNamespace(target=Target("train.tar", "--image"), findings=[], results=[])
    return SimpleNamespace(
        gpu=gpu,
        driver="580.159.04",
        machine="x86_64",
        nodes=nodes,
        result=result,
        verdict=Verdict(code, "error", (), ("GD-DRIVER-001",) if code == 2 else ()),
    )


def test_the_run_fails_when_any_group_would_not_run_it():
    assert exit_code([_group("A", ["n1"], 0), _group("B", ["n2"], 1)]) == 1
    assert exit_code([_group("A", ["n1"], 0), _group("B", ["n2"], 2)]) == 2
    assert exit_code([_group("A", ["n1"], 0)]) == 0


def test_each_group_has_a_line_and_an_outcome():
    groups = [_group("NVIDIA H200", [f"n{i}" for i in range(8)], 0), _group("NVIDIA A100", ["a1"], 2)]
    text = render_text(groups, "image train.tar", [None, None])
    assert text.splitlines() == [
        "gpudoctor 0.1.0 · image train.tar on 9 nodes in 2 groups",
        "",
        "NVIDIA H200 · driver 580.159.04 · x86_64 · n0, n1, n2, n3, n4, n5, and 2 more",
        "  runs",
        "",
        "NVIDIA A100 · driver 580.159.04 · x86_64 · a1",
        "  could not be judged: GD-DRIVER-001",
        "",
        "Verdict: some groups could not be judged (exit 2)",
    ]
    data = json.loads(render_json(groups, "image", "train.tar", [None, None]))
    assert data["summary"] == {
        "groups": 2,
        "nodes": 9,
        "failing_groups": 0,
        "failing_nodes": 0,
        "exit_code": 2,
    }
    assert [g["runs"] for g in data["groups"]] == [True, False]
