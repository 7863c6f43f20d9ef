"""The compiled-architecture lists of the torch table, answer by answer, each traced to its source id.

`has` must be in compiled_ccs, `lacks` must not; `ptx` is the variant's ptx_cc. A wrong list here means a
wrong "has kernels for this GPU" verdict, so each case names the torch.yaml source that states it."""

from __future__ import annotations

import pytest
from packaging.version import Version

from gpudoctor import knowledge as kn

ALL_PRE_BLACKWELL = ("5.0", "6.0", "7.0", "7.5", "8.0", "8.6", "9.0")
BLACKWELL = ("7.5", "8.0", "8.6", "9.0", "10.0", "12.0")

CASES = [
    # (release, variant, has, lacks, ptx)
    ("1.13", "cu117", ("3.7", "8.6"), ("9.0",), None),  # pt-builder-1.13, pt-wheel-1.13
    ("2.0", "cu118", ("3.7", "9.0"), (), None),  # pt-builder-2.0 (11.8 adds 7.5;8.0;8.6;9.0)
    ("2.0", "cu117", ("3.7", "8.6"), ("9.0",), None),  # pt-builder-2.0, pt-wheel-2.0
    ("2.1", "cu118", ("3.7", "9.0"), (), None),  # pt-builder-2.1 (11.8 adds 3.7;9.0)
    ("2.1", "cu121", ("5.0", "9.0"), ("3.7",), None),  # pt-builder-2.1, pt-wheel-2.1
    ("2.4", "cu124", ("7.0", "9.0"), ("3.7",), None),  # pt-builder-2.4
    ("2.5", "cu121", ("7.0",), (), None),  # pt-builder-2.5: cu12x builds ship Volta
    ("2.5", "cu124", ("7.0", "9.0"), (), None),  # pt-builder-2.5 (+PTX reverted 2024-10-04), pt-wheel-2.5
    ("2.6", "cu124", ("7.0", "9.0"), ("10.0",), None),  # pt-wheel-2.6
    ("2.7", "cu126", ALL_PRE_BLACKWELL, ("10.0", "12.0"), None),  # pt-wheel-2.7
    # pt-pr-157558, pt-pr-147607 (unverified): the first release with sm_100/sm_120, without Volta
    ("2.7", "cu128", ("10.0", "12.0"), ("5.0", "6.0", "7.0"), None),
    ("2.8", "cu128", ("7.0", "10.0", "12.0"), ("5.0", "6.0"), None),  # pt-wheel-2.8: Volta kept for 2.8
    ("2.8", "cu129", ("7.0", "12.0"), ("6.0",), "12.0"),  # pt-build-cuda-sh-2.8 (unverified)
    ("2.9", "cu128", ("7.0", "12.0"), ("6.0",), None),  # pt-wheel-2.9
    ("2.9", "cu130", BLACKWELL, ("7.0",), "12.0"),  # pt-pr-164471 "12.0+PTX" (unverified)
    ("2.10", "cu128", ("7.0", "10.0", "12.0"), (), None),  # pt-wheel-2.10, pt-issue-182250
    ("2.11", "cu126", ALL_PRE_BLACKWELL, ("10.0",), None),  # pt-pr-175253, pt-issue-182250
    ("2.11", "cu128", BLACKWELL, ("7.0",), None),  # pt-pr-175253, pt-issue-182250: Volta dropped
    ("2.11", "cu130", BLACKWELL, ("7.0",), None),  # pt-wheel-2.11: no PTX in the release wheel
    ("2.12", "cu130", BLACKWELL, ("7.0",), None),  # pt-wheel-2.12
    ("2.13", "cu126", ALL_PRE_BLACKWELL, ("10.0",), None),  # pt-wheel-2.13 (PYTORCH_RELEASES_CODE_CC)
    ("2.13", "cu132", BLACKWELL, ("7.0",), None),  # pt-wheel-2.13, pt-pr-188914 (release: no +PTX)
    ("2.14", "cu130", BLACKWELL, ("7.0",), None),  # pt-wheel-2.14
    ("2.14", "cu126", ALL_PRE_BLACKWELL, ("12.0",), None),  # pt-wheel-2.14 (PYTORCH_RELEASES_CODE_CC)
    ("2.15", "cu132", BLACKWELL, ("7.0",), None),  # pt-wheel-2.15
]


@pytest.mark.parametrize(("release", "variant", "has", "lacks", "ptx"), CASES)
def test_compiled_ccs(release, variant, has, lacks, ptx):
    found = kn.torch_release(release).variant(variant)
    assert found is not None and found.arch, f"torch {release} {variant} has no arch list"
    assert set(has) <= set(found.compiled_ccs), found.compiled_ccs
    assert not set(lacks) & set(found.compiled_ccs), found.compiled_ccs
    assert found.ptx_cc == ptx


@pytest.mark.parametrize(
    ("release", "variant", "arch"),
    [
        ("2.1", "cu118", ("3.7", "5.0", "6.0", "7.0", "7.5", "8.0", "8.6", "9.0")),  # pt-builder-2.1
        ("2.5", "cu124", ALL_PRE_BLACKWELL),  # pt-builder-2.5, pt-wheel-2.5
        ("2.8", "cu128", ("7.0", *BLACKWELL)),  # pt-wheel-2.8
        ("2.11", "cu130", BLACKWELL),  # pt-wheel-2.11
        ("2.15", "cu132", BLACKWELL),  # pt-wheel-2.15
    ],
)
def test_whole_arch_lists(release, variant, arch):
    assert kn.torch_release(release).variant(variant).arch == arch


@pytest.mark.parametrize(
    ("release", "variant", "arch"),
    [
        # pt-builder-2.5-aarch64-version (no TORCH_CUDA_ARCH_LIST), pt-select-compute-arch (CUDA 12 "common"),
        # pt-pr-140844 (a nightly built that way: sm_50, sm_80, sm_86, sm_89, sm_90, sm_90a)
        ("2.5", "cu124", ("5.0", "8.0", "8.6", "8.9", "9.0")),
        ("2.7", "cu128", ("9.0", "10.0", "12.0")),  # pt-pr-146378, pt-issue-148169 (GH200 gets sm_90)
        ("2.9", "cu126", ("8.0", "9.0")),  # pt-pr-163764 (release/2.9 cherry-pick)
        ("2.9", "cu128", ("8.0", "9.0", "10.0", "12.0")),  # pt-aarch64-ci-build-sh-cycle, openral-pr-167
        ("2.10", "cu130", ("8.0", "9.0", "10.0", "11.0", "12.0+PTX")),  # pt-aarch64-ci-build-sh-cycle
        ("2.11", "cu130", ("8.0", "9.0", "10.0", "11.0", "12.0")),  # pt-wheel-2.11 (aarch64 wheel)
        ("2.13", "cu126", ("8.0", "9.0")),  # pt-wheel-2.13 (PYTORCH_RELEASES_CODE_CC aarch64)
        ("2.15", "cu132", ("8.0", "9.0", "10.0", "11.0", "12.0")),  # pt-wheel-2.15 (aarch64 wheel)
    ],
)
def test_aarch64_arch_lists(release, variant, arch):
    assert kn.torch_release(release).variant(variant).arch_aarch64 == arch


def test_aarch64_lists_only_where_a_source_states_one_up_to_2_10():
    # An empty arch_aarch64 reads "no aarch64 wheel known". 2.4 had none (pt-test-infra-2.4-aarch64);
    # 2.6 cu126 and 2.8 cu129 had one whose list no source states (pt-pr-144436, pt-pr-157843); 2.5 cu124's
    # was built without TORCH_CUDA_ARCH_LIST (pt-builder-2.5-aarch64-version), so CMake's common CUDA 12 list
    # (pt-select-compute-arch), as a nightly built the same way shows (pt-pr-140844); 2.7 shipped cu128 only
    # (pt-test-infra-pr-6492); 2.9 and 2.10 cu126/cu128/cu130 (pt-test-infra-2.9-aarch64).
    with_list = {
        (release.version, variant.name)
        for release in kn.knowledge().torch_releases
        if Version(release.version) < Version("2.11")
        for variant in release.variants
        if variant.arch_aarch64
    }
    assert with_list == {
        ("2.5", "cu124"),
        ("2.7", "cu128"),
        ("2.9", "cu126"), ("2.9", "cu128"), ("2.9", "cu130"),
        ("2.10", "cu126"), ("2.10", "cu128"), ("2.10", "cu130"),
    }  # fmt: skip


def test_every_aarch64_list_rests_on_its_variants_own_provenance():
    # A variant whose aarch64 list comes from somewhere other than its release's sources names them itself.
    for release in kn.knowledge().torch_releases:
        for variant in release.variants:
            if variant.arch_aarch64 and Version(release.version) < Version("2.13"):
                assert variant.source != release.source, variant.label


def test_blackwell_first_ships_in_2_7_cu128():
    # The first release whose table lists sm_100/sm_120 is 2.7, in cu128 only (pt-pr-157558, pt-pr-145792);
    # CUDA 12.6 and older cannot build them.
    first = {}
    for release in kn.knowledge().torch_releases:
        for variant in release.variants:
            for cc in ("10.0", "12.0"):
                if cc in variant.compiled_ccs:
                    first.setdefault(cc, (release.version, variant.name))
    assert first == {"10.0": ("2.7", "cu128"), "12.0": ("2.7", "cu128")}
    for release in kn.knowledge().torch_releases:
        for variant in release.variants:
            if "10.0" in variant.compiled_ccs:
                assert Version(variant.cuda) >= Version("12.8"), variant.label


def test_release_wheels_carry_no_ptx_from_2_11_on():
    # Every variant confirmed by its release wheel or release table from 2.11 on has no +PTX
    # (pt-wheel-2.11 .. pt-wheel-2.15, pt-pr-175567, pt-pr-188914).
    for release in kn.knowledge().torch_releases:
        if Version(release.version) >= Version("2.11"):
            for variant in release.variants:
                assert variant.ptx_cc is None, variant.label
                assert not any(a.endswith("+PTX") for a in variant.arch_aarch64), variant.label
