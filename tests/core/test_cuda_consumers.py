"""The runtimes that load CUDA libraries by soname (cuda_consumers.py): which sonames each release of
onnxruntime-gpu and CTranslate2 loads, and which of them a host lacks. Each expected answer comes from the
source the module cites, quoted at its case."""

from __future__ import annotations

import pytest

from gpudoctor.cuda_consumers import Needs, ctranslate2_needs, onnxruntime_needs, split

# microsoft/onnxruntime onnxruntime/__init__.py _get_nvidia_dll_paths(), the Linux list for CUDA 12 and 13;
# cuFFT's soname major from _get_cufft_version() ("CUDA 12.x -> 11, CUDA 13.x -> 12").
ORT_CUDA12 = (
    "libcublasLt.so.12", "libcublas.so.12", "libcurand.so.10", "libcufft.so.11", "libcudart.so.12",
    "libcudnn.so.9",
)  # fmt: skip
ORT_CUDA13 = (
    "libcublasLt.so.13", "libcublas.so.13", "libcurand.so.10", "libcufft.so.12", "libcudart.so.13",
    "libcudnn.so.9",
)  # fmt: skip
# the CUDA 11 requirements of the CUDA execution provider's page (onnxruntime.ai, "Requirements" notes)
ORT_CUDA11 = ("libcublasLt.so.11", "libcublas.so.11", "libcurand.so.10", "libcufft.so.10", "libcudnn.so.8")


@pytest.mark.parametrize(
    ("version", "cuda_major", "expected"),
    [
        # "starting ORT 1.19, CUDA 12.x becomes default version when distributing ONNX Runtime GPU packages"
        ("1.19.2", None, Needs(12, ORT_CUDA12)),
        ("1.20.0.dev20241001", None, Needs(12, ORT_CUDA12)),
        # 1.15 to 1.18: CUDA 11.8 with cuDNN 8 by default
        ("1.18.1", None, Needs(11, ORT_CUDA11)),
        ("1.15.0", None, Needs(11, ORT_CUDA11)),
        # older releases are not judged
        ("1.14.1", None, None),
        # 1.21 and later record their CUDA major in capi/build_and_package_info.py: it wins
        ("1.23.0", 13, Needs(13, ORT_CUDA13)),
        ("1.23.0", 12, Needs(12, ORT_CUDA12)),
        ("1.18.1", 12, Needs(12, ORT_CUDA12)),
        # a CUDA major the module has no cuFFT soname for, and a version it cannot read
        ("1.23.0", 14, None),
        ("nightly", None, None),
    ],
)
def test_the_sonames_onnxruntime_gpu_loads(version, cuda_major, expected):
    assert onnxruntime_needs(version, cuda_major) == expected


CUBLAS11 = ("libcublas.so.11", "libcublasLt.so.11")
CUBLAS12 = ("libcublas.so.12", "libcublasLt.so.12")


# OpenNMT/CTranslate2 python/tools/prepare_build_environment_linux.sh at each tag: v3.24.0 CUDA 11 with
# libcudnn8; v4.0.0 to v4.4.0 CUDA 12 with libcudnn8; v4.5.0 to v4.6.2 libcudnn9; v4.6.3 WITH_CUDNN=OFF.
# CHANGELOG v2.0.0: Linux wheels "now require CUDA 11.x to be installed"; before it the libraries shipped
# inside the wheel.
@pytest.mark.parametrize(
    ("version", "speech", "expected"),
    [
        ("3.24.0", True, Needs(11, CUBLAS11 + ("libcudnn.so.8",))),
        ("3.24.0", False, Needs(11, CUBLAS11)),
        ("2.0.0", False, Needs(11, CUBLAS11)),
        ("4.0.0", True, Needs(12, CUBLAS12 + ("libcudnn.so.8",))),
        ("4.4.0", True, Needs(12, CUBLAS12 + ("libcudnn.so.8",))),
        ("4.5.0", True, Needs(12, CUBLAS12 + ("libcudnn.so.9",))),
        ("4.6.2", True, Needs(12, CUBLAS12 + ("libcudnn.so.9",))),
        ("4.6.3", True, Needs(12, CUBLAS12)),  # "makes cuDNN an optional dependency"
        ("4.5.0", False, Needs(12, CUBLAS12)),  # a model without convolutions never loads cuDNN
        ("1.15.0", True, None),
        ("", True, None),
    ],
)
def test_the_sonames_ctranslate2_loads(version, speech, expected):
    assert ctranslate2_needs(version, speech) == expected


def test_split_names_what_is_found_nowhere_and_what_only_the_wheels_hold():
    needs = ORT_CUDA12
    loader = ["libcudart.so.12", "libcurand.so.10"]  # found by the dynamic loader (ldconfig, LD_LIBRARY_PATH)
    wheels = ["libcublas.so.12", "libcublasLt.so.12", "libcudnn.so.9", "libcudart.so.12"]  # nvidia-* wheels
    missing, wheel_only = split(needs, loader, wheels)
    assert missing == ["libcufft.so.11"]
    assert wheel_only == ["libcublasLt.so.12", "libcublas.so.12", "libcudnn.so.9"]
    assert split(needs, list(needs), []) == ([], [])
