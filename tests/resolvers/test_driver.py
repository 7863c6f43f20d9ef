"""The driver resolver (resolvers/driver.py) against the shipped knowledge tables: each expected answer is
traced, in a comment, to the rows it comes from (file and row; `rules/knowledge/` is left out of the file
names)."""

from __future__ import annotations

import pytest

from gpudoctor.knowledge import knowledge
from gpudoctor.resolvers import driver_for_cuda, resolve

from .hosts import H100, host


@pytest.mark.parametrize(
    ("cuda", "expected"),
    [
        # cuda_drivers.yaml 13.0 update 0: 580.65.06; branches: R580 LTSB, EOL 2028-06, CUDA 13.
        ("13.0", ("580.65.06", 580, "LTSB", "2028-06", False)),
        # 12.8 update 0: 570.26; R570 is PB, so the first LTSB from 570 on: R580.
        ("12.8", ("570.26", 580, "LTSB", "2028-06", False)),
        # 12.2 update 2 (12.2.2): 535.104.05; R535 is LTSB with CUDA 12.
        ("12.2.2", ("535.104.05", 535, "LTSB", "2026-06", False)),
        # A bare major takes minor_compat 13: 580.
        ("13", ("580", 580, "LTSB", "2028-06", True)),
    ],
)
def test_driver_for_cuda(cuda, expected):
    need, why = driver_for_cuda(cuda, knowledge())
    assert why == ""
    assert (need.minimum, need.branch, need.designation, need.eol, need.minor_compat) == expected


def test_driver_resolver():
    kb = knowledge()
    res = resolve("driver", host("535.183.01", [H100]), kb, None, (("cuda", "13.0"),))
    assert (res.ok, res.driver.minimum, res.driver.branch) == (True, "580.65.06", 580)
    assert res.reasons == (
        "CUDA 13.0 needs driver 580.65.06 or newer",
        "branch: R580 (LTSB, supported until 2028-06)",
    )
    met = resolve("driver", host("580.95.05", [H100]), kb, None, (("cuda", "13.0"),))
    assert (met.ok, met.driver, met.reasons) == (
        True,
        None,
        ("driver 580.95.05 already meets CUDA 13.0's minimum 580.65.06",),
    )
    # cuda_drivers.yaml has no CUDA 12.7 (there was none).
    bad = resolve("driver", host("535.183.01", [H100]), kb, None, (("cuda", "12.7"),))
    assert (bad.ok, bad.reasons) == (
        False,
        ("cannot find a driver for CUDA 12.7: CUDA 12.7 is not in the cuda_drivers table",),
    )
