"""The onnxruntime resolver (resolvers/onnxruntime.py) against the shipped knowledge tables: each expected
answer is traced, in a comment, to the rows it comes from (file and row; `rules/knowledge/` is left out of the
file names)."""

from __future__ import annotations

from typing import Any

from gpudoctor.knowledge import knowledge
from gpudoctor.resolvers import resolve

from .hosts import H100, V100, host


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
