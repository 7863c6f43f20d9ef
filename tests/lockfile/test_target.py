"""lockfile/target.py: markers and wheel tags judged for the target machine."""

from __future__ import annotations

import pytest

from gpudoctor.lockfile.model import LockError
from gpudoctor.lockfile.target import marker_holds, target, wheel_misfit

LINUX_X86 = target("linux", "x86_64", "3.11")
LINUX_ARM = target("linux", "aarch64", "3.11")
MAC_ARM = target("darwin", "arm64", "3.12")
ANY_PYTHON = target("linux", "x86_64", "")
# The marker torch 2.5.1 puts on its nvidia-* requirements (tgi-2025-01-poetry.lock).
NVIDIA_MARKER = 'platform_system == "Linux" and platform_machine == "x86_64"'


def test_markers_hold_by_platform_and_machine():
    assert marker_holds(NVIDIA_MARKER, LINUX_X86)
    assert not marker_holds(NVIDIA_MARKER, LINUX_ARM)
    assert not marker_holds(NVIDIA_MARKER, MAC_ARM)
    assert marker_holds("sys_platform == 'darwin'", MAC_ARM)  # as uv.lock writes it
    assert not marker_holds("sys_platform != 'darwin' and sys_platform != 'linux'", LINUX_X86)
    assert marker_holds("", LINUX_X86)


def test_python_markers_with_a_known_and_an_unknown_python():
    marker = 'python_version >= "3.12"'  # torch 2.5.1's setuptools requirement (tgi-2025-01-poetry.lock)
    assert not marker_holds(marker, LINUX_X86)
    assert marker_holds(marker, MAC_ARM)
    assert marker_holds(marker, ANY_PYTHON)  # some Python would install it
    assert marker_holds('python_version < "3.13"', ANY_PYTHON)


def test_an_unreadable_marker_is_a_lock_error():
    with pytest.raises(LockError, match="marker not understood"):
        marker_holds("platform_machine ==", LINUX_X86)


def test_an_unknown_platform_or_python_is_refused():
    with pytest.raises(LockError, match="unknown platform"):
        target("solaris", "x86_64", "")
    with pytest.raises(LockError, match="not a Python version"):
        target("linux", "x86_64", "three")


# Wheel names from tgi-2025-01-poetry.lock (torch 2.5.0's files and attention-kernels' URLs).
@pytest.mark.parametrize(
    "wheel, t, fits",
    [
        ("torch-2.5.0-cp311-cp311-manylinux1_x86_64.whl", LINUX_X86, True),
        ("torch-2.5.0-cp311-cp311-manylinux1_x86_64.whl", LINUX_ARM, False),
        ("torch-2.5.0-cp311-cp311-manylinux2014_aarch64.whl", LINUX_ARM, True),
        ("torch-2.5.0-cp312-none-macosx_11_0_arm64.whl", MAC_ARM, True),
        ("torch-2.5.0-cp311-cp311-win_amd64.whl", LINUX_X86, False),
        ("torch-2.5.0-cp310-cp310-manylinux1_x86_64.whl", LINUX_X86, False),
        ("torch-2.5.0-cp310-cp310-manylinux1_x86_64.whl", ANY_PYTHON, True),
        ("attention_kernels-0.1.1+cu123torch2.4-cp311-cp311-linux_x86_64.whl", LINUX_X86, True),
        ("filelock-3.16.1-py3-none-any.whl", MAC_ARM, True),
        ("torch-2.5.1.tar.gz", LINUX_X86, True),  # not a wheel: nothing to rule out
    ],
)
def test_wheel_misfit(wheel, t, fits):
    assert (wheel_misfit(wheel, t) is None) == fits


def test_wheel_misfit_says_why():
    assert wheel_misfit("torch-2.5.0-cp311-cp311-manylinux1_x86_64.whl", LINUX_ARM) == (
        "wheel torch-2.5.0-cp311-cp311-manylinux1_x86_64.whl is for manylinux1_x86_64, not linux aarch64"
    )
    assert wheel_misfit("torch-2.5.0-cp310-cp310-manylinux1_x86_64.whl", LINUX_X86) == (
        "wheel torch-2.5.0-cp310-cp310-manylinux1_x86_64.whl is for Python cp310, not 3.11"
    )
