"""report/fix_report.py: what `gpudoctor fix` prints, for the plan of the recorded H200 (its two onnxruntime
steps, tests/fixtures/golden/h200-plan.txt) and for the results, rollbacks, runs and prunes a fix run yields
(their shapes as gpudoctor/remedy/ makes them; tests/test_fix_e2e.py prints them from real runs)."""

from __future__ import annotations

import sys

import pytest

from gpudoctor.host.base import Deadline
from gpudoctor.host.snapshot import SnapshotHost, load
from gpudoctor.pipeline.check import run_check
from gpudoctor.plan import build_plan
from gpudoctor.profiles import PROFILES
from gpudoctor.remedy import runner
from gpudoctor.remedy.journal import RunSummary
from gpudoctor.remedy.model import RunResult, StepResult
from gpudoctor.remedy.restore import Rollback
from gpudoctor.remedy.retention import Pruned
from gpudoctor.remedy.undo import UndoResult
from gpudoctor.report import fix_report

from conftest import H200

PY = "/opt/torch/.venv/bin/python3"
SITE = "/opt/torch/.venv/lib/python3.12/site-packages"
RUN = "20261205T101500Z-3f9a"


@pytest.fixture(scope="module")
def steps():
    result = run_check(
        SnapshotHost(load(str(H200)), "h200"), "h200", Deadline(10), [], profile=PROFILES["workstation"]
    )
    return build_plan(result.findings, result.facts).steps


def test_header():
    assert fix_report.header("live check", PY, "pip", dry_run=False) == (
        f"gpudoctor fix · live check\nPython environment: {PY} (installer: pip)\n\n"
    )
    assert fix_report.header("live check", None, None, dry_run=True) == (
        "gpudoctor fix · live check · dry run: nothing will run\n\n"
    )


def test_a_step_is_numbered_of_the_total(steps):
    block = fix_report.step_block(1, 2, steps[0]).splitlines()
    assert block[:2] == [
        "[1/2] pip · python-env · GD-FW-004 · resolver onnxruntime",
        f"   {PY} -m pip uninstall -y onnxruntime",
    ]


def test_a_commands_output_is_indented_under_a_bar_and_made_safe():
    assert fix_report.output_line("Successfully installed onnxruntime-gpu-1.30.0") == (
        "   | Successfully installed onnxruntime-gpu-1.30.0\n"
    )
    assert "\x1b" not in fix_report.output_line("\x1b[31mERROR\x1b[0m: no matching distribution")


def test_result_lines(steps, tmp_path):
    applied = StepResult(2, steps[1], "applied", "verified: its findings are gone", 0, 41.26)
    applied.changes = {"onnxruntime-gpu": (None, "1.30.0"), "onnxruntime": ("1.30.0", None)}
    assert fix_report.result_line(applied) == (
        "   -> done in 41.3 s: verified: its findings are gone\n"
        "      onnxruntime: 1.30.0 -> (removed)\n"
        "      onnxruntime-gpu: (none) -> 1.30.0\n\n"
    )
    # A step that fails as fix runs it (remedy/runner.py): real pip, asked for a release its links lack.
    argv = [sys.executable, "-m", "pip", "install", "-vvv", "--disable-pip-version-check", "--no-index"]
    ran = runner.run([*argv, "--find-links", str(tmp_path), "onnxruntime-gpu==1.30.0"], 120)
    assert ran.exit == 1 and len(ran.tail) > 8
    failed = StepResult(2, steps[1], "failed", f"it exited {ran.exit}", ran.exit, ran.duration, tail=ran.tail)
    lines = fix_report.result_line(failed).splitlines()
    assert lines[:2] == [f"   -> FAILED in {ran.duration:.1f} s: it exited 1", "      its last lines:"]
    assert lines[2:] == [f"      | {t}" for t in ran.tail[-8:]] + [""]  # the last 8, then a blank line
    declined = StepResult(1, steps[0], "declined")
    assert fix_report.result_line(declined) == "   -> skipped\n\n"


def test_the_summary_of_a_fixed_run_says_how_to_undo_it(steps):
    result = RunResult(
        [StepResult(1, steps[0], "applied"), StepResult(2, steps[1], "applied")],
        "fixed",
        run_id=RUN,
        run_dir=f"/root/.local/state/gpudoctor/runs/{RUN}",
    )
    assert fix_report.summary(result, dry_run=False) == (
        "Outcome: fixed (2 done)\n"
        f"Run {RUN}: journal and restore point in /root/.local/state/gpudoctor/runs/{RUN}\n"
        f"Undo it with: gpudoctor fix --undo {RUN}\n"
    )


def test_the_summary_of_a_rolled_back_run_says_what_the_rollback_did(steps):
    rb = Rollback(
        ok=True,
        removed=["onnxruntime-gpu 1.30.0"],
        restored=["onnxruntime 1.30.0"],
        # As roll_back names them: absolute paths (tests/remedy/test_restore.py, pip stopped mid-install).
        leftovers=[f"{SITE}/~nnxruntime", f"{SITE}/onnxruntime/capi/libonnxruntime_providers_cuda.so"],
    )
    result = RunResult(
        [StepResult(1, steps[0], "applied"), StepResult(2, steps[1], "failed")],
        "rolled back",
        run_id=RUN,
        run_dir="/runs/" + RUN,
        rollback=rb,
        failure="step 2 failed: it exited 1",
    )
    assert fix_report.summary(result, dry_run=False).splitlines() == [
        "Outcome: rolled back (1 done, 1 FAILED)",
        "Why: step 2 failed: it exited 1",
        "Rolled back: the environment is as it was before the run (same distributions, same files).",
        "  removed onnxruntime-gpu 1.30.0",
        "  put back onnxruntime 1.30.0",
        f"  removed 2 file(s) a stopped installer left, e.g. {SITE}/~nnxruntime",
        f"Run {RUN}: journal and restore point in /runs/{RUN}",
    ]


def test_an_incomplete_rollback_is_loud():
    # What roll_back says of a corrupted backup (tests/remedy/test_restore.py, one flipped byte).
    kept = "kept torch 2.5.1+cu124: no backup of 2.5.1+cpu to put in its place"
    rb = Rollback(ok=False, missing=["torch==2.5.1+cpu"], problems=[kept])
    assert fix_report.rollback_lines(rb) == [
        "ROLLBACK INCOMPLETE: the environment is not as it was before the run.",
        "  no copy to put back: torch==2.5.1+cpu",
        f"  problem: {kept}",
    ]
    assert fix_report.rollback_lines(None) == []


def test_nothing_to_do_and_a_dry_run(steps):
    nothing = RunResult([], "nothing to do")
    assert fix_report.summary(nothing, dry_run=False) == (
        "Outcome: nothing to do\nNothing to do: no step of the plan is one fix runs, and the plan is empty.\n"
    )
    left = RunResult([StepResult(1, steps[0], "instruction")], "nothing to do")
    assert fix_report.summary(left, dry_run=False).splitlines()[1:] == [
        "1 step(s) are yours to carry out (see the plan): 1.",
        "Nothing to do: no step of the plan is one fix runs.",
    ]
    dry = RunResult([StepResult(1, steps[0], "would-run"), StepResult(2, steps[1], "would-run")], "dry run")
    assert (
        fix_report.summary(dry, dry_run=True)
        == "Outcome: dry run (2 would run)\nDry run: nothing was changed.\n"
    )


def test_the_runs_table():
    assert fix_report.runs_table([]) == "No fix runs yet.\n"
    fix = RunSummary(RUN, None, kind="fix", python=PY, outcome="fixed", steps=[{}, {}])
    undo = RunSummary("20261205T102000Z-0b1c", None, kind="undo", python=PY, outcome="undone", undoes=RUN)
    assert fix_report.runs_table([fix, undo]).splitlines() == [
        "RUN                    KIND  OUTCOME  WHAT                           PYTHON",
        f"{RUN}  fix   fixed    2 step(s) run                  {PY}",
        f"20261205T102000Z-0b1c  undo  undone   undo of {RUN}  {PY}",
    ]


def test_undo_summaries():
    changes = {"onnxruntime-gpu": ("1.30.0", None), "onnxruntime": (None, "1.30.0")}
    assert fix_report.undo_summary(UndoResult(RUN, PY, "dry run", changes)).splitlines() == [
        f"Undo of run {RUN} in {PY}: dry run",
        "  onnxruntime: (none) -> 1.30.0",
        "  onnxruntime-gpu: 1.30.0 -> (removed)",
    ]
    assert fix_report.undo_summary(UndoResult(RUN, PY, "nothing to do", {})).splitlines()[1] == (
        "The environment is already as that run's restore point recorded it."
    )
    done = UndoResult(RUN, PY, "undone", changes, run_id="20261205T102000Z-0b1c", rollback=Rollback(ok=True))
    assert fix_report.undo_summary(done).splitlines()[-1] == (
        "Run 20261205T102000Z-0b1c; undo this undo with: gpudoctor fix --undo 20261205T102000Z-0b1c"
    )


@pytest.mark.parametrize(
    ("n", "text"),
    [(0, "0 B"), (999, "999 B"), (1000, "1.0 kB"), (412_000_000, "412.0 MB"), (4_200_000_000, "4.2 GB")],
)
def test_sizes_in_decimal_units(n, text):
    assert fix_report.size_text(n) == text


def test_prune_reports():
    old = RunSummary(RUN, None, kind="fix", outcome="fixed", started="2026-12-05T10:15:00Z")
    pruned = [Pruned(old, 412_000_000)]
    kept = [(RunSummary("b", None), 1_500_000)]
    assert fix_report.prune_report(
        pruned, kept, [], dry_run=True, quiet=False, keep=(10, 30)
    ).splitlines() == [
        "Restore points: fix keeps the newest 10 runs and every run of the last 30 days.",
        "Would remove 1 run(s), 412.0 MB:",
        f"  {RUN}  fix  fixed  412.0 MB  2026-12-05T10:15:00Z",
        "Kept 1 run(s), 1.5 MB.",
    ]
    assert fix_report.prune_report(
        pruned, kept, ["cannot remove x"], dry_run=False, quiet=True, keep=(10, 30)
    ) == (
        "Removed 1 old run(s), 412.0 MB (fix keeps the newest 10 runs and every run of the last 30 days;"
        " gpudoctor fix --prune).\n  problem: cannot remove x\n"
    )
    assert (
        fix_report.prune_report([], kept, [], False, False, (10, 30)).splitlines()[1] == "Nothing to remove."
    )
