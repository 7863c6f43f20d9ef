"""The engine's judgements: when a step's findings are judged, and what counts as a step that worked."""

from __future__ import annotations

import pytest

from gpudoctor.plan import FixPlan, PlanStep
from gpudoctor.remedy.apply import _checkpoints, apply, refusals, verdict
from gpudoctor.remedy.model import CannotRun, Recheck, Seen

PY = "/v/bin/python"


def step(kind, argv, rules, risk="python-env"):
    return PlanStep(kind, tuple(argv), "", risk, tuple(rules), ())


def seen(*items) -> Recheck:
    return Recheck(frozenset(Seen(r, i, s) for r, i, s in items), frozenset())


def test_an_uninstall_is_judged_with_the_install_that_follows_it():
    plan = FixPlan(
        (
            step("pip", [PY, "-m", "pip", "uninstall", "-y", "onnxruntime"], ["GD-FW-004"]),
            step("pip", [PY, "-m", "pip", "install", "onnxruntime-gpu==1.23.2"], ["GD-FW-004"]),
            step("pip", [PY, "-m", "pip", "install", "torch==2.5.1+cu124"], ["GD-FW-001"]),
        ),
        (),
        PY,
        "pip",
    )
    assert _checkpoints(plan, [0, 1, 2]) == {1, 2}
    assert _checkpoints(plan, [0, 2]) == {0, 2}  # the install declined: the uninstall is judged alone


def test_verdicts():
    before = seen(("GD-FW-001", 0, "error"), ("GD-CUDA-003", None, "error"))
    assert verdict({"GD-FW-001"}, before, seen(("GD-CUDA-003", None, "error"))) == ""
    assert verdict({"GD-FW-001"}, before, before) == "its finding is still there: GD-FW-001"
    new = seen(("GD-CUDA-003", None, "error"), ("GD-FW-002", 0, "error"), ("GD-X-1", None, "warning"))
    assert verdict({"GD-FW-001"}, before, new) == "it brought a new error-level finding: GD-FW-002"
    unknown = Recheck(frozenset(), frozenset({"GD-FW-001"}))
    assert verdict({"GD-FW-001"}, before, unknown) == (
        "could not verify: GD-FW-001 could not be evaluated afterwards"
    )


def test_a_plan_with_a_refused_step_is_not_applied_at_all():
    plan = FixPlan(
        (
            step("pip", [PY, "-m", "pip", "install", "onnxruntime-gpu==1.23.2"], ["GD-FW-004"]),
            step("pip", [PY, "-m", "pip", "install", "torch==2.5.1;reboot"], ["GD-FW-001"]),
        ),
        (),
        PY,
        "pip",
    )
    assert refusals(plan, False) == [
        f"step 2 ({PY} -m pip install 'torch==2.5.1;reboot'): 'torch==2.5.1;reboot' is not a plain "
        "requirement (name[extras]==version)"
    ]

    class NoUI:
        def __getattr__(self, name):
            raise AssertionError(f"nothing may be asked or run: {name}")

    with pytest.raises(CannotRun, match="steps fix refuses to run"):
        apply(plan, seen(), lambda: seen(), NoUI())
