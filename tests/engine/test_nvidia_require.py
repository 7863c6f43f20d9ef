"""The NVIDIA_REQUIRE_* evaluator's own behaviour beyond NVIDIA's verdicts (those are in
nvidia_require_cases.yaml): its comparisons, and how what gpudoctor could not read is followed both ways so
that an unknown fact gives an unknown verdict only where it decides."""

from __future__ import annotations

import pytest

from gpudoctor.engine.nvidia_require import (
    INVALID,
    MET,
    UNMET,
    Driver,
    Gpu,
    compare_version,
    container_brand,
    evaluate,
    judge,
    judge_on_host,
    satisfied,
    split_constraint,
)
from gpudoctor.facts import Facts, known, unknown

D550 = Driver("550.163.01", "12.4")
TESLA = Gpu("tesla", "7.0")


@pytest.mark.parametrize(
    ("actual", "op", "wanted", "result"),
    [
        ("12.4", ">=", "12.4", True),
        ("12.4", ">", "12.4", False),
        ("12.4", "<", "12.10", True),  # by number, not text
        ("12.4", "=", "12.4.0", True),
        ("12.4", "!=", "12.4.0", False),
        ("12.4", "<=", "12.4.1", True),
        ("12.4.1", ">", "12.4", True),
        ("12.4", "=", "12..4", True),
        ("12.4", ">=", "12.x", INVALID),
        ("12.4", ">=", ".4", INVALID),
        ("12.4", ">=", "18446744073709551615", INVALID),  # UINTMAX_MAX itself is strtoumax's error
        ("12.4", ">=", "18446744073709551614", False),
        ("12.4", ">=", "1" * 5000, INVALID),  # far past strtoumax, and past what int() reads
        ("12.4", ">=", "0" * 5000 + "12.4", True),  # leading zeros are no overflow
    ],
)
def test_compare_version(actual, op, wanted, result):
    assert compare_version(actual, op, wanted) == result


def test_split_constraint():
    assert split_constraint("cuda>=12.4") == ("cuda", ">=", "12.4")
    assert split_constraint("Brand!tesla") == ("Brand", "!=", "tesla")
    assert split_constraint("arch<9.0<10") == ("arch", "<", "9.0<10")  # the value keeps what follows
    for bad in ("cuda=>1", "cuda<>1", "=1", "cuda", "cuda>="):
        assert split_constraint(bad) is None, bad


def test_container_brands():
    assert [container_brand(b) for b in ("tesla", "geforce", "TITAN", "nvidia", "quadrortx", "grid")] == [
        "Tesla",
        "GeForce",
        "TITAN",
        "Unknown",
        "Unknown",
        "GRID",
    ]


def test_an_unknown_cuda_version_decides_only_where_it_is_read():
    nocuda = Driver("550.163.01", None)
    assert judge(["driver>=550 cuda>=99"], [TESLA], nocuda).status == MET  # cuda never read
    verdict = judge(["cuda>=12.0"], [TESLA], nocuda)
    assert verdict.status is None and verdict.unknown == ("cuda",)
    assert judge(["driver>=999,cuda>=12.0"], [TESLA], nocuda).status == UNMET  # fails before it
    assert judge(["cuda>=12.x"], [TESLA], nocuda).status == INVALID  # no version compares with 12.x


def test_an_unknown_constraint_before_garbage_can_end_either_way():
    # cuda false: the group stops and garbage is never read (unmet); cuda true: garbage is read (invalid).
    outcome = evaluate("cuda>=12.0,garbage", TESLA, Driver("550", None), 0)
    assert outcome.possible == {UNMET, INVALID}
    assert judge(["cuda>=12.0,garbage"], [TESLA], Driver("550", None)).status == INVALID  # refused either way


def test_unknown_brand_and_arch_name_their_gpu():
    verdict = judge(["brand=tesla", "arch>=7.0"], [TESLA, Gpu(None, None)], D550)
    assert verdict.status is None and verdict.unknown == (("brand", 1), ("arch", 1))
    assert judge(["brand>tesla"], [Gpu(None, None)], D550).status == INVALID


def host(**items) -> Facts:
    return Facts({k.replace("__", "."): v for k, v in items.items()})


def test_judged_on_the_host_s_facts():
    facts = host(
        driver__version=known("550.163.01", "t"),
        driver__max_cuda=known("12.4", "t"),
        **{"gpus.count": known(2, "t")},
        **{"gpus[0].brand": known("tesla", "t"), "gpus[0].compute_capability": known("7.0", "t")},
        **{"gpus[1].brand": known("geforce", "t"), "gpus[1].compute_capability": known("8.6", "t")},
    )
    assert judge_on_host(["brand=tesla"], facts).gpu == 1
    assert judge_on_host(["brand=tesla"], facts, [0]).status == MET
    assert satisfied("brand=tesla brand=geforce", facts) == (True, {})
    assert satisfied("brand=tesla", facts) == (False, {})


def test_unknown_gpu_count_decides_only_arch_and_brand():
    facts = host(
        driver__version=known("550.163.01", "t"),
        driver__max_cuda=known("12.4", "t"),
        **{"gpus.count": unknown("NVMLError_LibraryNotFound", "nvml")},
    )
    assert judge_on_host(["cuda>=99"], facts).status == UNMET  # with a GPU or without, the same
    assert judge_on_host(["cuda>=12.0"], facts).status == MET
    assert satisfied("brand=tesla", facts) == (None, {"gpus.count": "NVMLError_LibraryNotFound"})
