"""The bench text report (report/bench_text.py): golden files of a healthy, an unhealthy, an incomplete and a
not-run bench, and what must hold whatever the data. Regenerate the golden files after an intended change
with:

GPUDOCTOR_UPDATE_GOLDEN=1 python -m pytest tests/report/test_bench_text.py
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys

import pytest

from gpudoctor.report import bench_text
from gpudoctor.report.bench_view import sig3

from .reportkit import BENCH_CASES, bench_finding, bench_row, compare, hostile_bench, unhealthy_bench
from conftest import FIXTURES, ROOT

GOLDEN = FIXTURES / "golden"
SGR = re.compile(r"\x1b\[[0-9;]*m")  # colour and weight: the only escape codes color=True may write
BAR = ("█", "░", "│")


def line_of(text: str, label: str, group: str = "GPU 0") -> str:
    """The row line of `label` in the group whose heading starts with `group`."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(group))
    return next(line for line in lines[start + 1 :] if line[4:].startswith(label + " "))


@pytest.mark.parametrize("name", sorted(BENCH_CASES))
def test_golden(name):
    compare(bench_text.render(BENCH_CASES[name](), width=100), GOLDEN / f"bench-{name}.txt")


@pytest.mark.parametrize("name", sorted(BENCH_CASES))
def test_plain_text_has_no_escape_codes_and_colour_only_adds_them(name):
    report = BENCH_CASES[name]()
    plain = bench_text.render(report)
    assert "\x1b" not in plain
    coloured = bench_text.render(report, color=True)
    assert "\x1b[" in coloured
    assert SGR.sub("", coloured) == plain


def test_machine_text_cannot_reach_the_terminal():
    report = hostile_bench()
    for out in (bench_text.render(report), SGR.sub("", bench_text.render(report, color=True))):
        assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]", out)
        assert "gpudoctor bench · evil<script>alert(1)</script>?]0;owned??[2J?" in out
        assert "timed out: evil<script>" in out
        assert "ERROR   GD-BENCH-001  evil<script>" in out


def test_a_test_that_did_not_run_shows_its_status_and_never_a_bar():
    text = bench_text.render(unhealthy_bench())
    timed_out = line_of(text, "fp8 matmul")
    assert "timed out: no answer within 30 s" in timed_out
    assert not any(c in timed_out for c in BAR) and "TFLOP/s" not in timed_out
    assert timed_out.startswith("  ? ")
    failed = line_of(text, "D2H pinned")
    assert "failed: RuntimeError" in failed and not any(c in failed for c in BAR)
    skipped = line_of(text, "fp8 matmul", "GPU 1")
    assert skipped.startswith("  - ") and "skipped: " in skipped


def test_rows_a_finding_names_carry_its_severity_without_colour():
    text = bench_text.render(unhealthy_bench())
    assert line_of(text, "bf16 matmul").startswith("  x ")  # the error
    assert line_of(text, "H2D pinned").startswith("  ! ")  # a warning
    assert line_of(text, "GPU 1 -> 0", "Peer-to-peer").startswith("  ! ")
    assert line_of(text, "fp16 matmul").startswith("    ")  # no finding
    coloured = bench_text.render(unhealthy_bench(), color=True)
    bf16 = next(line for line in coloured.splitlines() if "bf16 matmul" in line)
    assert "\x1b[31m█" in bf16  # the bar of a row with an error is red


def test_the_worst_finding_on_a_row_wins():
    report = unhealthy_bench()
    info = bench_finding("GD-BENCH-009", "info", "Note", "a note on the same row", item=0)
    report = dataclasses.replace(report, findings=(info, *report.findings))
    assert line_of(bench_text.render(report), "bf16 matmul").startswith("  x ")


def test_a_row_shows_value_expectation_percent_and_baseline():
    text = bench_text.render(unhealthy_bench())
    bf16 = line_of(text, "bf16 matmul")
    assert "413 TFLOP/s of 989" in bf16 and bf16.rstrip().endswith("42%  (baseline 740, -44%)")
    assert "4520 GB/s of 4800   94%  (baseline 4480, +1%)" in line_of(text, "device-to-device")
    healthy = bench_text.render(BENCH_CASES["healthy"]())
    assert "733 TFLOP/s of 989    74%" in line_of(healthy, "bf16 matmul")
    assert "55.1 GB/s of 63     87%" in line_of(healthy, "H2D pinned")
    assert "4168 GB/s of 4800   87%" in line_of(healthy, "device-to-device")


def test_the_bar_is_the_expectation_and_an_over_performer_runs_past_it():
    cells = bench_text.bar_cells(100)
    text = bench_text.render(unhealthy_bench())
    normal = line_of(text, "fp16 matmul")
    assert normal.index("│") == 4 + bench_text.TEST_WIDTH + cells  # the same place on every row
    over = line_of(text, "device-to-device", "GPU 1")
    assert over[over.index("│") + 1] == "█" and "░" not in over and "109%" in over
    # capped a little over full, however far over
    report = dataclasses.replace(unhealthy_bench(), rows=(bench_row(0, "d2d", 48000.0, 4800.0),))
    far = line_of(bench_text.render(report), "device-to-device")
    assert "1000%" in far and len(far.split("│")[1].split()[0]) <= cells // 10 + 1


def test_a_row_without_expectation_shows_its_value_and_why_not():
    text = bench_text.render(BENCH_CASES["healthy"]())
    row = line_of(text, "H2D pageable")
    assert "7 GB/s" in row and not any(c in row for c in BAR)
    assert "no expectation: pageable copies go through a staging buffer" in text


def test_findings_most_severe_first_then_unknown_rules_then_the_verdict():
    lines = bench_text.render(unhealthy_bench()).splitlines()
    heads = [line.split()[0] for line in lines if re.match(r"  (ERROR|WARNING|INFO) ", line)]
    assert heads == ["ERROR", "WARNING", "WARNING", "INFO"]
    assert "GD-BENCH-001  Matmul far below what the GPU should reach · GPU 0 bf16 matmul" in "\n".join(lines)
    assert "         Check the GPU's cooling and the power supply of its slot." in lines
    unknown = lines.index("Could not judge")
    assert lines[unknown + 1] == "  GD-BENCH-007  bench[].power_limit_w is unknown: NVML gave no samples"
    assert lines[-1].startswith("Result      1 error(s), 2 warning(s), 1 info; 9 measured, 1 failed")
    assert lines[-1].endswith("1 rule(s) could not judge · exit 1 (--fail-on error)")


def test_not_run_is_the_reason_and_nothing_else():
    assert bench_text.render(BENCH_CASES["notrun"]()) == (
        "gpudoctor bench · ci-runner\n\nNo NVIDIA GPU here: nothing to benchmark.\n"
    )


def test_incomplete_says_so_before_what_it_measured():
    lines = bench_text.render(BENCH_CASES["incomplete"]()).splitlines()
    assert lines[2].startswith("Incomplete  the run was cut short (the deadline of 120 s passed")
    assert lines.index("GPU 0 · NVIDIA H200") > 2
    assert lines[-1].endswith("exit 2 (could not judge: the run was cut short)")


@pytest.mark.parametrize("width", [80, 100, 140])
def test_rows_and_findings_fit_the_width(width):
    for make in BENCH_CASES.values():
        lines = bench_text.render(make(), width=width).splitlines()
        assert all(len(line) <= width for line in lines if not line.startswith(("Result", "gpudoctor")))


@pytest.mark.parametrize(
    "x, text",
    [
        (733.4, "733"),
        (55.07, "55.1"),
        (4168.4, "4168"),
        (51.0, "51"),
        (9.996, "10"),
        (999.7, "1000"),
        (0.01234, "0.0123"),
        (0.0, "0"),
    ],
)
def test_three_significant_figures(x, text):
    assert sig3(x) == text


def test_importing_the_renderers_is_light():
    code = (
        "import sys, gpudoctor.report.bench_text, gpudoctor.report.bench_html; "
        "heavy = ('rich', 'gpudoctor.pipeline.check', 'gpudoctor.report.text'); "
        "heavy = [m for m in heavy if m in sys.modules]; "
        "print(heavy)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT, timeout=60
    )
    assert out.stdout.strip() == "[]"
