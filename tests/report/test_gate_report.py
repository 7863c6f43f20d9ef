"""The gate's report: one line a group, its outcome, the verdict of the whole run."""

from __future__ import annotations

import json
from types import SimpleNamespace

from gpudoctor.pipeline.gate import Everywhere, Gate
from gpudoctor.pipeline.result import Target, Verdict
from gpudoctor.plan import PlanStep
from gpudoctor.report.gate_report import exit_code, fixing_steps, render_json, render_text, subject_steps


def _group(gpu: str, nodes: list, code: int) -> SimpleNamespace:
    result = SimpleNamespace(
        target=Target("train.tar", "--image"), findings=[], results=[], ignored_findings=[]
    )
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
    text = render_text(Gate(groups, []), "image train.tar", [None, None], [])
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
    data = json.loads(render_json(Gate(groups, []), "image", "train.tar", [None, None], []))
    assert data["summary"] == {
        "groups": 2,
        "nodes": 9,
        "failing_groups": 0,
        "failing_nodes": 0,
        "exit_code": 2,
    }
    assert [g["runs"] for g in data["groups"]] == [True, False] and data["every_group"] == []


def _finding(rule: str, fact: str) -> SimpleNamespace:
    return SimpleNamespace(rule=SimpleNamespace(id=rule), evidence=[(fact, None)])


def _step(kind: str, rule: str, text: str) -> PlanStep:
    return PlanStep(kind, (), text, "system", (rule,), ())


def test_every_group_gets_the_steps_that_change_the_image_for_what_fails():
    """Of the plan for every group at once: the steps for findings at or above --fail-on, less the node's
    own (driver upgrade, reboot, a host finding's step)."""
    arch = _finding("GD-ARCH-001", "frameworks[0].unsupported_gpus")  # both sides: subject.MISMATCH
    old = _finding("GD-DRIVER-004", "driver.version")  # the host's
    plan = SimpleNamespace(
        steps=(
            _step("manual", "GD-ARCH-001", "Install a torch build with sm_120 kernels."),
            _step("driver", "GD-ARCH-001", "Upgrade the NVIDIA driver."),
            _step("manual", "GD-DRIVER-004", "Install a newer driver branch."),
            _step("manual", "GD-CPU-001", "Give the job more CPU cores."),
        )
    )
    every = Everywhere(
        "x86_64",
        "570.195.03",
        ["NVIDIA H200", "NVIDIA GeForce RTX 5090 D"],
        2,
        SimpleNamespace(target=Target("train.tar", "--image"), findings=[arch, old], results=[]),
        Verdict(1, "error", (arch, old)),
    )
    assert fixing_steps(every.verdict, plan) == [1, 2, 3]
    assert subject_steps(every, plan) == [1]
    group = _group("NVIDIA H200", ["n1"], 0)
    text = render_text(Gate([group], [every]), "image train.tar", [None], [plan])
    assert text.splitlines()[4:] == [
        "",
        "Every group of x86_64 nodes at once (2 groups)",
        "  judged on the lowest driver among them, 570.195.03, with every GPU model: NVIDIA H200, NVIDIA "
        "GeForce RTX 5090 D",
        "  does not run: 2 findings at or above error",
        "  What in the image would make it run on every group:",
        "  1. manual · system · GD-ARCH-001",
        "     do: Install a torch build with sm_120 kernels.",
        "",
        "Verdict: every group runs it (exit 0)",
    ]
