"""The toolkit's side of NVIDIA_REQUIRE_*: which variables it passes, the legacy CUDA_VERSION requirement
(golang.org/x/mod/semver), and which containers ask for GPUs (nvidia-container-toolkit v1.20)."""

from __future__ import annotations

import pytest

from gpudoctor.container.toolkit import is_legacy, requested_devices, requirements, semver_major_minor


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("13.0.2", ("13.0", "")),
        ("v12.4", ("12.4", "")),
        ("12", ("12.0", "")),
        ("12.4.1-rc.1+build.5", ("12.4", "")),
        ("12.4-rc1", (None, "invalid version string")),  # a pre-release needs all three numbers
        ("12.4.1-01", (None, "invalid version string")),  # a numeric pre-release has no leading zero
        ("12.4.1+", (None, "invalid version string")),
        ("vv12", (None, "invalid version string")),  # one v is trimmed, not two
        ("12.04", (None, "invalid version string")),
        ("4294967296.0", (None, "invalid major version")),  # strconv.ParseUint(_, 10, 32)
        ("1.4294967296", (None, "invalid minor version")),
        ("١٢.٠", (None, "invalid version string")),  # ASCII digits only
    ],
)
def test_semver_major_minor(version, expected):
    assert semver_major_minor(version) == expected


def test_requirements_sorted_legacy_last_jetpack_skipped():
    env = {"NVIDIA_REQUIRE_Z": "driver>=1", "NVIDIA_REQUIRE_A": "arch>=8.0", "NVIDIA_REQUIRE_JETPACK": "x"}
    assert requirements(env, disabled=False) == (
        [("NVIDIA_REQUIRE_A", "arch>=8.0"), ("NVIDIA_REQUIRE_Z", "driver>=1")],
        None,
    )
    assert requirements({"CUDA_VERSION": "12.9.1"}, disabled=False) == (
        [("CUDA_VERSION", "cuda>=12.9")],
        None,
    )
    assert requirements({"CUDA_VERSION": "12.9.1"}, disabled=True) == ([], None)
    assert is_legacy({"CUDA_VERSION": "12.9.1", "NVIDIA_REQUIRE_CUDA": ""})
    assert not is_legacy({"CUDA_VERSION": "", "NVIDIA_REQUIRE_CUDA": ""})


@pytest.mark.parametrize(
    ("visible", "legacy", "expected"),
    [
        (None, False, None),
        (None, True, ["all"]),
        ("", True, None),  # set but empty: not the legacy default
        ("void", False, None),
        ("none", False, []),
        ("0, 1", False, ["0", "1"]),
        ("0,all", False, ["all"]),
        ("none,all", False, []),  # the first special word wins
        ("GPU-1234,void", False, None),
    ],
)
def test_requested_devices(visible, legacy, expected):
    env = {} if visible is None else {"NVIDIA_VISIBLE_DEVICES": visible}
    if legacy:
        env["CUDA_VERSION"] = "12.4.1"
    assert requested_devices(env) == expected
