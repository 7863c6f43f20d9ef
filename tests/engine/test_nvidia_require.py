"""NVIDIA_REQUIRE_CUDA, judged as libnvidia-container does: groups ORed, constraints in a group ANDed."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudoctor.engine.nvidia_require import RequireSyntaxError, parse, satisfied
from gpudoctor.facts import Facts, known

RAW = Path(__file__).parents[1] / "fixtures" / "raw" / "h200-env_nv.txt"


def host(driver: str, max_cuda: str, brand: str = "tesla", cc: str = "9.0", gpus: int = 1) -> Facts:
    items = {
        "driver.version": known(driver, "t"),
        "driver.max_cuda": known(max_cuda, "t"),
        "gpus.count": known(gpus, "t"),
    }
    for i in range(gpus):
        items[f"gpus[{i}].brand"] = known(brand, "t")
        items[f"gpus[{i}].compute_capability"] = known(cc, "t")
    return Facts(items)


def h200_require() -> str:
    for line in RAW.read_text().splitlines():
        if line.startswith("NVIDIA_REQUIRE_CUDA="):
            return line.split("=", 1)[1]
    raise AssertionError("capture has no NVIDIA_REQUIRE_CUDA")


def test_parse():
    assert parse("cuda>=12.4 brand=tesla,driver>=470,driver<471") == [
        [("cuda", ">=", "12.4")],
        [("brand", "=", "tesla"), ("driver", ">=", "470"), ("driver", "<", "471")],
    ]
    with pytest.raises(RequireSyntaxError):
        parse("cuda=>12")


def test_the_h200_image_requirement_is_met_by_its_driver():
    # The real CUDA 13.0 image variable: cuda>=13.0, or a 535/550/565/570/575 data-center driver.
    assert satisfied(h200_require(), host("580.159.04", "13.0", brand="nvidia")) is True


def test_older_driver_meets_it_only_through_a_branch_group():
    expr = h200_require()
    assert satisfied(expr, host("535.104.05", "12.2", brand="tesla")) is True  # forward-compat branch
    assert satisfied(expr, host("545.23.08", "12.3", brand="tesla")) is False  # no group for 545
    assert satisfied(expr, host("535.104.05", "12.2", brand="geforce")) is False  # brand not listed


def test_versions_compare_by_number_not_text():
    assert satisfied("driver>=535", host("1000.1", "13.0")) is True
    assert satisfied("cuda>=12.10", host("580.1", "12.9")) is False


def test_arch_must_hold_for_every_gpu():
    assert satisfied("arch>=8.0", host("580.1", "13.0", cc="9.0", gpus=2)) is True
    assert satisfied("arch>=8.0", host("580.1", "13.0", cc="7.0")) is False


def test_unknown_facts_leave_it_open():
    assert satisfied("cuda>=12.0", Facts({})) is None
    assert satisfied("brand=tesla", Facts({"gpus.count": known(0, "t")})) is None
