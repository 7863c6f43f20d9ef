"""The onnxruntime resolver (resolvers/onnxruntime.py) against the shipped knowledge tables: each expected
answer is traced, in a comment, to the rows it comes from (file and row; `rules/knowledge/` is left out of the
file names)."""

from __future__ import annotations

from typing import Any

import pytest

from gpudoctor.facts import Facts, known, unknown
from gpudoctor.host.base import Deadline
from gpudoctor.host.snapshot import SnapshotHost, load
from gpudoctor.knowledge import knowledge
from gpudoctor.pipeline.check import run_check
from gpudoctor.resolvers import resolve
from gpudoctor.resolvers.onnxruntime import onnxruntime_gpu

from .hosts import H100, V100, host
from conftest import H200


def ort(version: str) -> dict[str, Any]:
    return {"name": "onnxruntime", "distribution": "onnxruntime", "version": version, "build": "cpu"}


def test_onnxruntime_pins_a_release_that_exists_and_fits_the_driver():
    """Issue 24: `onnxruntime-gpu==<installed version>` was planned, a CUDA 13 build on a 570 driver or a
    release that does not exist (there is no onnxruntime-gpu 1.20.1)."""
    kb = knowledge()
    res = resolve("onnxruntime", host("570.172.08", [H100], **ort("1.30.0")), kb, 0)
    assert (res.ok, res.packages, res.uninstall) == (
        True,
        ("onnxruntime-gpu[cuda,cudnn]==1.26.0",),
        ("onnxruntime",),
    )
    assert res.reasons[0] == "onnxruntime-gpu 1.26.0 is the newest release this host runs"
    assert (
        "onnxruntime-gpu 1.30.0 (CUDA 13.x, cuDNN 9.x): CUDA 13.x needs driver 580 or newer; driver "
        "570.172.08 is older" in res.reasons
    )
    same_line = resolve("onnxruntime", host("570.172.08", [H100], **ort("1.20.1")), kb, 0)
    assert same_line.packages == ("onnxruntime-gpu==1.20.2",)
    assert same_line.notes[0].startswith("it has no extras: the CUDA 12 and cuDNN 9 libraries must be")
    new_driver = resolve("onnxruntime", host("580.95.05", [H100], **ort("1.30.0")), kb, 0)
    assert new_driver.packages == ("onnxruntime-gpu[cuda,cudnn]==1.30.0",)


def test_onnxruntime_a_warnings_fix_never_downgrades_and_says_which_driver_would_do():
    res = resolve(
        "onnxruntime", host("570.172.08", [H100], **ort("1.30.0")), knowledge(), 0, (("downgrade", "no"),)
    )
    assert (res.ok, res.needs_cuda) == (False, "13.0")
    assert (
        res.reasons[0]
        == "no onnxruntime-gpu release runs on driver 570.172.08 with these GPUs and Python 3.11"
    )


def test_onnxruntime_on_an_old_python_takes_a_release_that_supports_it():
    kb = knowledge()
    res = resolve("onnxruntime", host("570.172.08", [H100], python="3.9.18", **ort("1.19.0")), kb, 0)
    assert res.packages == ("onnxruntime-gpu==1.19.2",)  # the newest of the installed 1.19 line
    newest = resolve("onnxruntime", host("580.95.05", [H100], python="3.9.18", **ort("1.18.1")), kb, 0)
    assert newest.packages == ("onnxruntime-gpu==1.20.2",)
    too_new = "onnxruntime-gpu 1.21.0 (CUDA 12.x, cuDNN 9.x): needs Python 3.10 or newer; this is 3.9"
    assert too_new in newest.reasons


def test_onnxruntime_cuda_13_builds_have_no_code_for_a_volta_gpu():
    res = resolve("onnxruntime", host("580.95.05", [V100], **ort("1.30.0")), knowledge(), 0)
    assert res.packages == ("onnxruntime-gpu[cuda,cudnn]==1.26.0",)
    volta = "onnxruntime-gpu 1.31.1 (CUDA 13.x, cuDNN 9.x): CUDA 13.x has no code for Tesla V100-SXM2-32GB"
    assert any(r.startswith(volta) for r in res.reasons), res.reasons


# --- On the recorded H200 (tests/fixtures/h200-driver580-snapshot: onnxruntime 1.30.0, the CPU package,
# Python 3.12, driver 580.159.04, one H200), as recorded and with one fact changed at a time.

ORT = 3  # frameworks[3] is onnxruntime in the recording (golden h200-check.json: GD-FW-004's item)
WARNING = {"downgrade": "no"}  # what the planner passes for GD-FW-004, a warning (plan.resolver_args)
LIBS = (
    "its `cuda` and `cudnn` extras install the CUDA and cuDNN libraries it loads; call "
    "onnxruntime.preload_dlls() before the first session when torch is not imported first"
)


@pytest.fixture(scope="module")
def h200():
    return run_check(SnapshotHost(load(str(H200)), "h200"), "h200", Deadline(10), []).facts


def changed(facts: Facts, values: dict) -> Facts:
    """The facts with some replaced ({name: value}; a Fact as it is, e.g. unknown(...))."""
    items = dict(facts.items())
    items.update({name: v if hasattr(v, "known") else known(v, "test") for name, v in values.items()})
    return Facts(items)


def test_the_h200_as_recorded(h200):
    assert h200.value(f"frameworks[{ORT}].name") == "onnxruntime"
    res = onnxruntime_gpu(h200, knowledge(), ORT, WARNING)
    assert (res.ok, res.packages, res.uninstall, res.minor_compat) == (
        True,
        ("onnxruntime-gpu[cuda,cudnn]==1.30.0",),
        ("onnxruntime",),
        False,
    )
    assert res.reasons == (
        "onnxruntime-gpu 1.30.0 is the newest release of the installed onnxruntime 1.30.0's major.minor that "
        "this host runs",
        "older releases (down to 1.19.0) are not considered: a warning's fix never downgrades",
        "driver 580.159.04 meets CUDA 13.0's minimum 580.65.06",
    )
    assert res.notes == (LIBS, "onnxruntime is removed first: both install the onnxruntime module")
    assert resolve("onnxruntime", h200, knowledge(), ORT, tuple(WARNING.items())) == res  # the registry's way


def test_a_release_newer_than_the_table_is_left_alone(h200):
    res = onnxruntime_gpu(changed(h200, {f"frameworks[{ORT}].version": "1.32.0"}), knowledge(), ORT)
    assert (res.ok, res.packages) == (False, ())
    assert res.reasons == (
        "onnxruntime 1.32.0 is newer than gpudoctor's onnxruntime table, which ends at 1.31.1: gpudoctor is "
        "older than your onnxruntime, so it plans no other onnxruntime (upgrade gpudoctor for newer tables)",
    )


def test_with_no_onnxruntime_installed_the_newest_release_is_chosen(h200):
    facts = changed(h200, {f"frameworks[{ORT}].name": "onnxruntime_web"})  # no framework called onnxruntime
    res = onnxruntime_gpu(facts, knowledge(), None)
    assert (res.ok, res.packages, res.uninstall) == (True, ("onnxruntime-gpu[cuda,cudnn]==1.31.1",), ())
    assert res.reasons[0] == "onnxruntime-gpu 1.31.1 is the newest release this host runs"
    assert res.notes == (LIBS,)


def test_a_newer_patch_release_of_the_same_line_is_taken(h200):
    res = onnxruntime_gpu(changed(h200, {f"frameworks[{ORT}].version": "1.31.0"}), knowledge(), ORT, WARNING)
    assert res.packages == ("onnxruntime-gpu[cuda,cudnn]==1.31.1",)
    assert (
        res.reasons[1]
        == "older releases (down to 1.19.0) are not considered: a warning's fix never downgrades"
    )


def test_an_errors_fix_may_downgrade_and_still_prefers_the_installed_line(h200):
    res = onnxruntime_gpu(h200, knowledge(), ORT)
    assert res.packages == ("onnxruntime-gpu[cuda,cudnn]==1.30.0",)
    assert not any("not considered" in r for r in res.reasons)


@pytest.mark.parametrize(
    ("fact", "reason", "why"),
    [
        ("driver.version", "NVML not loaded", "the driver version is unknown (NVML not loaded)"),
        (
            "python.version",
            "not recorded in snapshot",
            "the Python version is unknown (not recorded in snapshot)",
        ),
        ("gpus.count", "NVML not loaded", "the GPUs are unknown (NVML not loaded)"),
    ],
)
def test_what_it_cannot_know_it_says(h200, fact, reason, why):
    res = onnxruntime_gpu(changed(h200, {fact: unknown(reason, "test")}), knowledge(), ORT)
    assert (res.ok, res.packages, res.reasons) == (
        False,
        (),
        (f"cannot choose an onnxruntime-gpu build: {why}",),
    )
