"""The tensorflow resolver (resolvers/tensorflow.py) against the shipped knowledge tables: each expected
answer is traced, in a comment, to the rows it comes from (file and row; `rules/knowledge/` is left out of the
file names)."""

from __future__ import annotations

import pytest

from gpudoctor.knowledge import knowledge
from gpudoctor.resolvers import resolve

from .hosts import H100, host

TF = {"name": "tensorflow", "build": "cpu"}


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        (
            # tensorflow.yaml 2.20: CUDA 12.5, Python 3.9-3.13; 12.5 update 0 needs 555.42.02, 535 meets the
            # 12.x floor 525.60.13. tensorflow-cpu is another distribution of the same module: removed first.
            host("535.183.01", [H100], **dict(TF, distribution="tensorflow-cpu", version="2.20.0")),
            {
                "ok": True,
                "packages": ("tensorflow[and-cuda]==2.20.0",),
                "uninstall": ("tensorflow-cpu",),
                "minor_compat": True,
            },
        ),
        (
            # tensorflow.yaml 2.18: Python 3.9-3.12, not 3.13; 2.21 (3.10-3.13) is the newest; 580 meets
            # 555.42.02 (12.5 update 0).
            host(
                "580.95.05", [H100], python="3.13.0", **dict(TF, distribution="tensorflow", version="2.18.0")
            ),
            {
                "ok": True,
                "packages": ("tensorflow[and-cuda]==2.21.*",),
                "uninstall": (),
                "minor_compat": False,
            },
        ),
        (
            # Every CUDA 12 row needs the 12.x floor 525.60.13; 470 is below it.
            host("470.256.02", [H100], **dict(TF, distribution="tensorflow", version="2.20.0")),
            {"ok": False, "packages": (), "needs_cuda": "12.5"},
        ),
    ],
)
def test_tensorflow_resolver(facts, expected):
    res = resolve("tensorflow", facts, knowledge(), 0)
    assert {k: getattr(res, k) for k in expected} == expected, res.reasons


def test_tensorflow_never_planned_past_its_table_nor_down_for_a_warning():
    # tensorflow.yaml ends at 2.21: a 2.22 gets no plan.
    tf = dict(TF, distribution="tensorflow", version="2.22.0")
    res = resolve("tensorflow", host("580.95.05", [H100], **tf), knowledge(), 0)
    assert (res.ok, res.packages) == (False, ())
    assert res.reasons[0].startswith(
        "tensorflow 2.22.0 is newer than gpudoctor's tensorflow table, which ends at 2.21"
    )
    # Without a downgrade only 2.19 (3.9-3.12) to 2.21 remain; 2.20 and 2.21 take Python 3.13: the answer is
    # the newest, and the older releases are named as not considered.
    facts = host(
        "580.95.05", [H100], python="3.13.0", **dict(TF, distribution="tensorflow", version="2.19.0")
    )
    res = resolve("tensorflow", facts, knowledge(), 0, (("downgrade", "no"),))
    assert res.packages == ("tensorflow[and-cuda]==2.21.*",)
    assert res.reasons[1].startswith("older releases (2.18, 2.17, ") and res.reasons[1].endswith(
        "are not considered: a warning's fix never downgrades tensorflow"
    )
