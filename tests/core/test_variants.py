"""The one spelling of a CUDA version as a wheel variant."""

from __future__ import annotations

from gpudoctor.variants import cuda_variant


def test_a_cuda_version_names_its_wheel_variant():
    # the PyTorch index's variant directories: /whl/cu128 for CUDA 12.8, /whl/cu130 for 13.0
    assert [cuda_variant(c) for c in ("12.8", "13.0.2", "12.10", " 11.8 ", "13", "x")] == [
        "cu128", "cu130", "cu1210", "cu118", None, None,
    ]  # fmt: skip
