"""Runtimes other than torch that load CUDA libraries by soname, and which sonames each release needs.

onnxruntime-gpu's CUDA execution provider and CTranslate2 (behind faster-whisper) do not ship cuBLAS or
cuDNN: they dlopen them by soname at run time, from wherever the dynamic loader finds them (the loader
cache, LD_LIBRARY_PATH) or from what the process loaded before (`import torch` first loads the nvidia-*
wheels torch depends on; onnxruntime.preload_dlls() loads them from the same wheels). Pure data and
functions: derive.py applies them to the facts. Each entry names where it was read (2026-12-05).
"""

from __future__ import annotations

import re
from typing import NamedTuple, Optional

ONNXRUNTIME = "onnxruntime-gpu"
CTRANSLATE2 = "ctranslate2"
# Held as text, compiled by re's own cache when first used: a host without what it reads never uses it
# (compiled at import, it cost every check 0.05-0.15 ms).
_RELEASE = r"(\d{1,6})(?:\.(\d{1,6}))?(?:\.(\d{1,6}))?"


class Needs(NamedTuple):
    cuda_major: int
    sonames: tuple[str, ...]


def _release(version: str) -> Optional[tuple[int, ...]]:
    """(major, minor, patch) of "4.6.3", "1.19.2", "1.20.0.dev1"; None when it does not start so."""
    m = re.match(_RELEASE, version)
    return tuple(int(p or 0) for p in m.groups()) if m else None


# cuFFT's soname major per CUDA major: microsoft/onnxruntime onnxruntime/__init__.py _get_cufft_version()
# ("cufft versions: CUDA 12.x -> 11, CUDA 13.x -> 12"); CUDA 11: the ORT requirements table's
# "libcufft 10.5.2.100" (https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html).
CUFFT_MAJOR = {11: 10, 12: 11, 13: 12}


def onnxruntime_needs(version: str, cuda_major: Optional[int]) -> Optional[Needs]:
    """The sonames the CUDA execution provider of onnxruntime-gpu `version` loads on Linux.

    CUDA 12 and later: the Linux list of microsoft/onnxruntime onnxruntime/__init__.py
    _get_nvidia_dll_paths() (libcublasLt.so.M, libcublas.so.M, libcurand.so.10, libcufft.so.N,
    libcudart.so.M, libcudnn.so.9; libnvrtc is left out: the requirements table does not list it).
    The CUDA major is what the wheel records (capi/build_and_package_info.py, 1.21 and later); an older
    wheel is the PyPI default of its release in the requirements table: "starting ORT 1.19, CUDA 12.x
    becomes default version when distributing ONNX Runtime GPU packages in pypi" (12.x with cuDNN 9.x),
    1.15 to 1.18 CUDA 11.8 with cuDNN 8 (CUDA 11: libcublasLt 11, libcublas 11, libcufft 10, libcurand 10,
    libcudnn 8, the table's notes). Older releases: None (not judged)."""
    release = _release(version)
    if release is None:
        return None
    major = cuda_major
    if major is None:
        if release >= (1, 19, 0):
            major = 12
        elif (1, 15, 0) <= release < (1, 19, 0):
            major = 11
        else:
            return None
    if major >= 12 and major in CUFFT_MAJOR:
        m = str(major)
        return Needs(
            major,
            (
                f"libcublasLt.so.{m}",
                f"libcublas.so.{m}",
                "libcurand.so.10",
                f"libcufft.so.{CUFFT_MAJOR[major]}",
                f"libcudart.so.{m}",
                "libcudnn.so.9",
            ),
        )
    if major == 11:
        return Needs(
            11, ("libcublasLt.so.11", "libcublas.so.11", "libcurand.so.10", "libcufft.so.10", "libcudnn.so.8")
        )
    return None


def ctranslate2_needs(version: str, speech: bool) -> Optional[Needs]:
    """The sonames the Linux wheel of CTranslate2 `version` loads: cuBLAS always (src/cuda/cublas_stub.cc
    dlopens "libcublas.so." CUBLAS_VER_MAJOR, and libcublas depends on libcublasLt), cuDNN for models with
    convolutions (`speech`: faster-whisper's Whisper) while the wheel is built WITH_CUDNN=ON.

    Read in OpenNMT/CTranslate2 python/tools/prepare_build_environment_linux.sh at each tag: v3.24.0
    (c95fd4e) libcublas-devel-11-2, libcudnn8, WITH_CUDNN=ON; v4.0.0 (61492e0) to v4.4.0 (8f4d134)
    libcublas-devel-12-2, libcudnn8; v4.5.0 (383d063) to v4.6.2 (1251f7c) libcudnn9; v4.6.3 (91d46ec) and
    later WITH_CUDNN=OFF ("Conv1d pure CUDA implementation (#1949), makes cuDNN an optional dependency",
    CHANGELOG v4.6.3). CHANGELOG v2.0.0: the Linux wheels "now require CUDA 11.x to be installed on the
    system"; before 2.0 the CUDA libraries were inside the wheel (v1.15.0): None."""
    release = _release(version)
    if release is None or release < (2, 0, 0):
        return None
    if release < (4, 0, 0):
        return Needs(11, ("libcublas.so.11", "libcublasLt.so.11") + (("libcudnn.so.8",) if speech else ()))
    cudnn: tuple[str, ...] = ()
    if speech and release < (4, 5, 0):
        cudnn = ("libcudnn.so.8",)
    elif speech and release < (4, 6, 3):
        cudnn = ("libcudnn.so.9",)
    return Needs(12, ("libcublas.so.12", "libcublasLt.so.12") + cudnn)


def split(needs: tuple[str, ...], loader: list[str], wheels: list[str]) -> tuple[list[str], list[str]]:
    """(the sonames found nowhere, those found only in the environment's nvidia-* wheels)."""
    missing = [s for s in needs if s not in loader and s not in wheels]
    wheel_only = [s for s in needs if s not in loader and s in wheels]
    return missing, wheel_only
