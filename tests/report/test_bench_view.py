"""What the bench reports show of a row (report/bench_view.py): its value, its share of the expectation, its
bar, its baseline and why it has no value; on the H200's real measurements
(shared/fixtures/h200-driver580/reference/bench.json) against its catalogue figures."""

from __future__ import annotations

from gpudoctor.bench.model import Row
from gpudoctor.report.bench_view import (
    CAP,
    bar_ratio,
    baseline_text,
    has_expectation,
    no_expectation_text,
    percent,
    sig3,
    status_text,
    value_text,
)


def row(test: str, unit: str, value, status: str = "ok", **kw) -> Row:
    return Row(0, test, test, 0, "NVIDIA H200", status, unit, value, **kw)


BF16 = row("matmul_bf16", "TFLOP/s", 732.9451921557109, expected=989.0, baseline=740.0)
D2D = row("d2d", "GB/s", 4165.6652417177, expected=4800.0)
PAGEABLE = row(
    "h2d_pageable", "GB/s", 7.030723940463282,
    no_expectation="pageable copies go through the host's memory and CPU: see the pinned ones",
)  # fmt: skip


def test_a_measured_row_reads_as_people_read_numbers():
    assert (value_text(BF16), percent(BF16)) == ("733 TFLOP/s", "74%")
    assert (value_text(D2D), percent(D2D)) == ("4166 GB/s", "87%")  # whole numbers from 100 up
    assert value_text(PAGEABLE) == "7.03 GB/s"
    assert (sig3(55.127100161656436), sig3(0.0123)) == ("55.1", "0.0123")


def test_a_row_without_an_expectation_says_why_and_draws_no_bar():
    assert (has_expectation(PAGEABLE), percent(PAGEABLE), bar_ratio(PAGEABLE)) == (False, "", 0.0)
    assert no_expectation_text(PAGEABLE) == (
        "no expectation: pageable copies go through the host's memory and CPU: see the pinned ones"
    )
    assert no_expectation_text(row("p2p", "GB/s", 40.0)) == "no expectation"


def test_a_bar_is_the_share_of_the_expectation_capped():
    assert bar_ratio(BF16) == BF16.ratio
    assert bar_ratio(row("d2d", "GB/s", 6000.0, expected=4800.0)) == CAP


def test_the_baseline_and_the_change_from_it():
    assert baseline_text(BF16) == "baseline 740, -1%"
    assert baseline_text(D2D) == ""
    stopped = row("d2d", "GB/s", None, "timed out", expected=4800.0, baseline=4100.0,
                  detail="still running after 60 s, the worker was stopped")  # fmt: skip
    assert baseline_text(stopped) == "baseline 4100"
    assert (value_text(stopped), has_expectation(stopped)) == ("no value", False)
    assert status_text(stopped) == "timed out: still running after 60 s, the worker was stopped"
