"""report/plan_report.py: the plan of the recorded H200 (tests/fixtures/h200-driver580-snapshot: onnxruntime's
CPU package on a GPU host, GD-FW-004) as text and JSON, built in process; `gpudoctor plan` prints the same
text (golden tests/fixtures/golden/h200-plan.txt, checked as a process in tests/test_plan_cli.py)."""

from __future__ import annotations

import dataclasses

import pytest

from gpudoctor import __version__
from gpudoctor.host.base import Deadline
from gpudoctor.host.snapshot import SnapshotHost, load
from gpudoctor.pipeline.check import run_check
from gpudoctor.plan import FixPlan, PlanStep, build_plan
from gpudoctor.profiles import PROFILES
from gpudoctor.report import plan_report

from conftest import FIXTURES, H200

WHERE = "snapshot tests/fixtures/h200-driver580-snapshot of redacted-host"


@pytest.fixture(scope="module")
def plan():
    result = run_check(
        SnapshotHost(load(str(H200)), "h200"), "h200", Deadline(10), [], profile=PROFILES["workstation"]
    )
    return build_plan(result.findings, result.facts)


def test_the_text_is_what_gpudoctor_plan_prints(plan):
    golden = (FIXTURES / "golden" / "h200-plan.txt").read_text()
    assert plan_report.render_text(plan, WHERE) == golden.replace(
        "gpudoctor 0.1.0", f"gpudoctor {__version__}"
    )


def test_a_step_is_its_header_its_whole_command_and_wrapped_reasons(plan):
    # The command stays on one line whatever the width (it must paste whole); the explanations wrap.
    assert plan_report.step_lines(2, plan.steps[1], width=60) == [
        "2. pip · python-env · GD-FW-004 · resolver onnxruntime",
        "   /opt/torch/.venv/bin/python3 -m pip install 'onnxruntime-gpu[cuda,cudnn]==1.30.0'",
        "   why: GD-FW-004 (warning): onnxruntime 1.30.0 is the",
        "        CPU-only package; the CUDA execution provider is not",
        "        available on this host's 1 GPU(s).",
        "   how: onnxruntime-gpu 1.30.0 is the newest release of the",
        "        installed onnxruntime 1.30.0's major.minor that this",
        "        host runs",
        "   how: older releases (down to 1.19.0) are not considered:",
        "        a warning's fix never downgrades",
        "   how: driver 580.159.04 meets CUDA 13.0's minimum",
        "        580.65.06",
        "   note: its `cuda` and `cudnn` extras install the CUDA and",
        "         cuDNN libraries it loads; call",
        "         onnxruntime.preload_dlls() before the first session",
        "         when torch is not imported first",
        "   note: onnxruntime is removed first: both install the",
        "         onnxruntime module",
    ]


def test_a_narrow_terminal_still_wraps_at_60_columns(plan):
    assert plan_report.step_lines(1, plan.steps[1], width=20) == plan_report.step_lines(
        1, plan.steps[1], width=60
    )


def test_a_step_a_person_carries_out_says_do_and_a_minor_compat_one_cautions(plan):
    manual = PlanStep("manual", (), "Reseat the GPU.", "system", ("GD-X-001",), ())
    assert plan_report.step_lines(1, manual) == ["1. manual · system · GD-X-001", "   do: Reseat the GPU."]
    compat = dataclasses.replace(plan.steps[1], minor_compat=True, why=(), reasons=(), notes=())
    assert plan_report.step_lines(1, compat, width=200)[2] == f"   caution: {plan_report.MINOR_COMPAT}"


def test_an_empty_plan_says_so():
    text = plan_report.render_text(FixPlan((), (), None, None), "live check")
    assert text == (
        f"Fix plan · gpudoctor {__version__} · live check\n"
        "\n"
        "Nothing to do: no finding has a fix step.\n"
        "\n"
        "0 step(s): 0 system, 0 python-env, 0 reboot. Nothing has been run.\n"
    )


def test_the_json_plan(plan):
    host = {"kind": "snapshot", "hostname": "redacted-host"}
    data = plan_report.plan_data(plan, host)
    assert [k for k in data] == [
        "schema",
        "schema_version",
        "gpudoctor",
        "host",
        "python",
        "steps",
        "notes",
        "summary",
    ]
    assert (data["schema"], data["schema_version"], data["gpudoctor"], data["host"]) == (
        "gpudoctor.plan",
        1,
        __version__,
        host,
    )
    first = data["steps"][0]
    assert first == {
        "number": 1,
        "kind": "pip",
        "risk": "python-env",
        "argv": ["/opt/torch/.venv/bin/python3", "-m", "pip", "uninstall", "-y", "onnxruntime"],
        "command": "/opt/torch/.venv/bin/python3 -m pip uninstall -y onnxruntime",
        "text": "",
        "rules": ["GD-FW-004"],
        "why": [plan.steps[0].why[0]],
        "resolver": "onnxruntime",
        "minor_compat": False,
        "reasons": [],
        "notes": [],
    }
    assert data["summary"] == {"system": 0, "python-env": 2, "reboot": 0, "steps": 2}


def test_a_step_without_a_resolver_has_null_not_an_empty_string():
    step = PlanStep("command", ("nvidia-smi", "-L"), "", "system", ("GD-X-001",), ())
    assert plan_report.step_data(1, step)["resolver"] is None
