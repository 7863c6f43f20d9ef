"""gpudoctor/compat.py: the one answer to "does this CUDA build run on this driver and these GPUs"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpudoctor import compat
from gpudoctor.knowledge import knowledge

PACKAGE = Path(compat.__file__).resolve().parent


def test_cuda_variant_is_spelled_once():
    assert [compat.cuda_variant(c) for c in ("12.8", "13.0.2", "12.10", "13", "x")] == [
        "cu128",
        "cu130",
        "cu1210",
        None,
        None,
    ]
    # No other spelling of "12.8 -> cu128" in the package: the one function lives in variants.py.
    spelled = re.compile(r"""["']cu["']\s*\+|f["']cu\{|replace\(["']\.["'],\s*["']["']\)""")
    found = [
        str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if spelled.search(p.read_text("utf-8"))
    ]
    assert found == ["variants.py"]


@pytest.mark.parametrize(
    ("cuda", "driver", "runs", "minor"),
    [
        ("12.6", "560.28.03", True, False),  # the toolkit's own minimum
        ("12.6", "535.183.01", True, True),  # the CUDA 12.x floor 525.60.13: minor-version compatibility
        ("12.6", "520.61.05", False, False),  # below the floor
        ("13.0", "575.57.08", False, False),  # CUDA 13.x needs a 580 driver
        ("12.7", "580.65.06", False, False),  # there was no CUDA 12.7
    ],
)
def test_driver_verdict(cuda, driver, runs, minor):
    verdict = compat.driver_verdict(cuda, driver, knowledge())
    assert (verdict.runs, verdict.minor_compat) == (runs, minor), verdict.reason
    avoided = compat.driver_verdict(cuda, driver, knowledge(), avoid_minor_compat=True)
    assert avoided.runs is (runs and not minor)


def test_ptx_is_jit_compiled_only_by_a_driver_that_meets_the_toolkits_minimum():
    kb = knowledge()
    assert compat.jits_ptx("12.6", "560.28.03", kb) is True
    assert compat.jits_ptx("12.6", "535.183.01", kb) is False  # minor-version compatibility
    assert compat.jits_ptx("12.7", "580.65.06", kb) is None  # not in the table
    arch = ["8.0+PTX"]
    assert compat.kernel("8.6", arch) == "native"  # sm_80 SASS runs on 8.6
    assert compat.kernel("9.0", arch, ptx_jit=True) == "ptx"
    assert compat.kernel("9.0", arch, ptx_jit=False) is None
    assert compat.kernel("9.0", arch, ptx_jit=None) == "ptx?"
    assert compat.kernel("7.5", arch) is None  # PTX for 8.0 cannot run on an older GPU
    assert compat.split_arch(["7.5", "9.0+PTX"]) == (("7.5", "9.0"), ("9.0",))
    assert compat.ptx_for("12.0", ["8.0", "9.0"]) == "9.0" and compat.ptx_for("7.0", ["8.0"]) is None


@pytest.mark.parametrize(
    ("cuda", "cc", "supported"),
    [
        ("13.0", "6.1", False),  # Pascal (GTX 1080 Ti): CUDA 13.0 dropped it
        ("13.2.51", "7.0", False),  # Volta (V100)
        ("13", "5.2", False),  # Maxwell, a framework that reports its CUDA major only
        ("13.0", "7.5", True),  # Turing (T4): the oldest CUDA 13 keeps
        ("13.0", "12.1", True),  # GB10
        ("12.9", "6.1", True),  # CUDA 12 still builds for Pascal
        ("12.8", "3.7", False),  # Kepler: CUDA 12.0 dropped it
        ("11.8", "6.1", None),  # the table gives CUDA 11 no floor
    ],
)
def test_toolkit_supports_gpu(cuda, cc, supported):
    assert compat.toolkit_supports_gpu(cuda, cc, knowledge()) is supported


def test_no_cuda_13_torch_build_lists_a_gpu_the_cuda_13_floor_drops():
    # One answer to "does this CUDA build run on this GPU": the torch table's arch lists and the CUDA
    # floors must agree, so GD-ARCH-001 (arch lists) and GD-CUDA-009 (floors) never contradict each other.
    kb = knowledge()
    checked = 0
    for release in kb.torch_releases:
        for variant in release.variants:
            for arch in (variant.arch, variant.arch_aarch64):
                if not arch:
                    continue
                native, ptx = compat.split_arch(arch)
                for cc in (*native, *ptx):
                    supported = compat.toolkit_supports_gpu(variant.cuda, cc, kb)
                    assert supported is not False, (release.version, variant.name, cc)
                checked += 1
    assert checked > 0


def test_arch_specific_and_family_code():
    # NVIDIA, "Family-Specific Architecture Features" (CUDA 12.9): sm_90a runs on 9.0 alone, sm_100f on the
    # 10.x GPUs; neither across majors. tests/fixtures/cuda_ext/build.sh builds such code.
    assert compat.covers("9.0", ["9.0a"]) is True
    assert compat.covers("10.3", ["10.0a"]) is False
    assert compat.covers("10.3", ["10.0f"]) is True
    assert compat.covers("12.0", ["10.0f"]) is False
    assert compat.ptx_for("10.3", ["10.0a"]) is None
    assert compat.ptx_for("12.0", ["10.0a", "9.0"]) == "9.0"


@pytest.mark.parametrize(
    "cc", ["3.7", "5.0", "5.2", "6.1", "7.0", "7.2", "7.5", "8.0", "9.0", "10.3", "12.1"]
)
@pytest.mark.parametrize("cuda", ["12.9", "13.0", "13.5"])
def test_the_derived_floor_and_compat_give_one_answer(cuda, cc):
    # derive.gpus_below_cuda_floor reads the table through its digest (a check loads no tables); it must
    # say what compat.toolkit_supports_gpu says from the loaded tables.
    from gpudoctor.derive import gpus_below_cuda_floor

    (floor, below), why = gpus_below_cuda_floor(cuda, [cc])
    assert why is None
    assert (below == []) is compat.toolkit_supports_gpu(cuda, cc, knowledge())


def test_binary_compatibility():
    assert compat.covers("8.9", ("8.0", "8.6", "9.0")) and compat.covers("12.1", ("12.0",))
    assert not compat.covers("12.0", ("9.0", "10.0")) and not compat.covers("7.0", ("7.5", "8.0"))
