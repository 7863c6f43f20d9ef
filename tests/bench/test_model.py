"""What a bench run produces (bench/model.py): every test has a kind, a label and a unit, and a row's ratio
is unknown rather than zero when it has nothing to compare with."""

from __future__ import annotations

import pytest

from gpudoctor.bench.model import (
    COPY_TESTS,
    FAILED,
    KINDS,
    LABELS,
    MATMUL_TESTS,
    OK,
    TESTS,
    UNITS,
    Measurement,
    Row,
)


def test_every_test_has_a_kind_a_label_and_a_unit():
    assert set(KINDS) == set(LABELS) == set(TESTS)
    assert len(TESTS) == len(set(TESTS)) == len(MATMUL_TESTS) + len(COPY_TESTS) + 3
    assert {UNITS[KINDS[t]] for t in MATMUL_TESTS} == {"TFLOP/s"}
    assert {UNITS[KINDS[t]] for t in TESTS if t not in MATMUL_TESTS} == {"GB/s"}


@pytest.mark.parametrize(
    ("test", "kind"),
    [("matmul_fp8", "matmul"), ("h2d_pageable", "host_copy"), ("d2d", "device_copy"), ("p2p", "p2p")],
)
def test_a_measurement_knows_its_kind(test, kind):
    assert Measurement(test, 0, OK, 1.0).kind == kind


def row(status: str = OK, **kw) -> Row:
    return Row(index=0, test="matmul_bf16", label="bf16 matmul", gpu=0, gpu_name="NVIDIA H200", status=status,
               unit="TFLOP/s", **kw)  # fmt: skip


def test_a_ratio_needs_a_value_and_an_expectation():
    # the H200's measured bf16 (shared/fixtures/h200-driver580/reference/bench.json) against its dense peak
    assert row(value=732.945, expected=989.0).ratio == pytest.approx(732.945 / 989.0)
    assert row(value=None, expected=989.0, status=FAILED).ratio is None
    assert row(value=732.945, expected=None).ratio is None
    assert row(value=732.945, expected=0.0).ratio is None
