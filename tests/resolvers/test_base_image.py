"""The base_image resolver (resolvers/base_image.py) against the shipped knowledge tables: each expected
answer is traced, in a comment, to the rows it comes from (cuda_drivers.yaml rows and gpu_floors).

The hosts: the H200 of /work/shared/fixtures/h200-driver580 (driver 580.159.04, CUDA 13.0; README.md of the
capture); the RTX 5090 D of tests/fake_nvml/scenarios/rtx5090-driver570.scn (driver 570.195.03, CUDA 12.8,
from https://github.com/PapenfussLab/proteindj/issues/12); a Pascal Tesla P100-PCIE-16GB (compute
capability 6.0, as tests/rules/cases/GD-PREC-001.yaml names it) beside the H200.
"""

from __future__ import annotations

from typing import Optional

from gpudoctor.facts import Facts, known, unknown
from gpudoctor.knowledge import knowledge
from gpudoctor.resolvers import resolve
from gpudoctor.resolvers.base_image import FIRST_CUDA_NOTE, release

from .hosts import RTX5090, V100, host

H200 = ("NVIDIA H200", "9.0")
P100 = ("Tesla P100-PCIE-16GB", "6.0")
RTX5090_D = ("NVIDIA GeForce RTX 5090 D", RTX5090[1])


def with_cuda(driver: Optional[str], max_cuda: Optional[str], gpus: list) -> Facts:
    """hosts.host's facts plus driver.max_cuda (left unknown when None)."""
    items = dict(host(driver, gpus).items())
    if max_cuda:
        items["driver.max_cuda"] = known(max_cuda, "t")
    return Facts(items)


def base(facts: Facts):
    return resolve("base_image", facts, knowledge())


def test_h200_on_580_rebuilds_on_the_newest_cuda_13_0():
    # 13.0 update 2 (13.0.2): 580.95.05 <= 580.159.04; 13.1 is above the driver's CUDA 13.0.
    res = base(with_cuda("580.159.04", "13.0", [H200]))
    assert (res.ok, res.resolver, res.subject, res.base_cuda, res.packages) == (
        True,
        "base_image",
        "the image's CUDA base",
        "13.0.2",
        (),
    )
    assert res.reasons == (
        "driver 580.159.04 runs CUDA 13.0; the newest toolkit release within it is 13.0.2 (needs driver "
        "580.95.05)",
    )
    assert res.notes == (FIRST_CUDA_NOTE,)


def test_rtx_5090_on_570_rebuilds_on_cuda_12_8_1():
    # 12.8 update 1 (12.8.1): 570.124.06 <= 570.195.03; 12.9 is above the driver's CUDA 12.8.
    res = base(with_cuda("570.195.03", "12.8", [RTX5090_D]))
    assert (res.ok, res.base_cuda) == (True, "12.8.1")
    assert res.reasons == (
        "driver 570.195.03 runs CUDA 12.8; the newest toolkit release within it is 12.8.1 (needs driver "
        "570.124.06)",
    )


def test_a_driver_between_updates_takes_the_update_it_meets():
    # 580.82.07 meets 13.0 update 1 (580.82.07) but not update 2 (580.95.05).
    assert base(with_cuda("580.82.07", "13.0", [H200])).base_cuda == "13.0.1"


def test_a_pascal_gpu_keeps_the_base_on_cuda_12():
    # gpu_floors: CUDA 13 builds for 7.5 and newer, CUDA 12 for 5.0; the newest 12.x within 580.159.04 is
    # 12.9 update 1 (12.9.1): 575.57.08. The oldest GPU decides, whatever order NVML lists them in.
    res = base(with_cuda("580.159.04", "13.0", [H200, P100]))
    assert (res.ok, res.base_cuda) == (True, "12.9.1")
    assert res.reasons == (
        "driver 580.159.04 runs CUDA 13.0; the newest toolkit release within it is 13.0.2 (needs driver "
        "580.95.05)",
        "CUDA 13 builds for compute capability 7.5 and newer, and Tesla P100-PCIE-16GB is 6.0: the newest "
        "release for it is 12.9.1 (needs driver 575.57.08)",
    )
    # Volta (7.0) is below CUDA 13's floor too.
    assert base(with_cuda("580.159.04", "13.0", [V100])).base_cuda == "12.9.1"


def test_a_major_without_a_gpu_floor_excludes_nothing_and_says_so():
    # CUDA 11.x has no gpu_floors row; 11.8 update 0 needs 520.61.05, which the driver is; 12.0 is above 11.8.
    res = base(with_cuda("520.61.05", "11.8", [P100]))
    assert (res.ok, res.base_cuda) == (True, "11.8.0")
    assert res.notes == (
        FIRST_CUDA_NOTE,
        "the knowledge tables give CUDA 11 no oldest GPU, so Tesla P100-PCIE-16GB (6.0) was not checked "
        "against it",
    )


def test_unknown_facts_give_no_answer_and_say_why():
    res = base(with_cuda(None, None, [H200]))
    assert (res.ok, res.base_cuda, res.reasons) == (
        False,
        None,
        ("cannot choose its CUDA release: the driver version is unknown (NVMLError_LibraryNotFound)",),
    )
    res = base(with_cuda("580.159.04", None, [H200]))
    assert (res.ok, res.reasons) == (
        False,
        ("cannot choose its CUDA release: the driver's CUDA is unknown (not collected)",),
    )
    items = dict(with_cuda("580.159.04", "13.0", [H200]).items())
    items["gpus.count"] = unknown("NVMLError_LibraryNotFound")
    res = base(Facts(items))
    assert (res.ok, res.reasons) == (
        False,
        ("cannot choose its CUDA release: the GPUs are unknown (NVMLError_LibraryNotFound)",),
    )


def test_a_driver_older_than_every_row_gives_no_answer():
    # cuda_drivers.yaml starts at 11.0 update 0 (450.51.05); 440.33.01 reports CUDA 10.2.
    res = base(with_cuda("440.33.01", "10.2", [V100]))
    assert (res.ok, res.reasons) == (
        False,
        ("no CUDA release in gpudoctor's table runs on driver 440.33.01 (CUDA 10.2)",),
    )


def test_release_names_follow_the_image_tags():
    rows = {(t.cuda, t.update): t for t in knowledge().cuda_toolkits}
    # 12.8 update 1 is tagged 12.8.1; CUDA 11.0 GA was release 11.0.2 (the row's `release`).
    assert (release(rows[("12.8", 1)]), release(rows[("11.0", 0)])) == ("12.8.1", "11.0.2")
