"""The typed rows of the knowledge tables (knowledge/rows.py): what their properties answer, on the shipped
rows (rules/knowledge/*.yaml, each row citing its source)."""

from __future__ import annotations

import pytest

from gpudoctor import knowledge as kn
from gpudoctor.knowledge.rows import wheel_glibc, wheel_machine


@pytest.fixture(scope="module")
def kb():
    return kn.knowledge()


def gpu(kb, name):
    return next(g for g in kb.gpus if g.name == name)


def test_a_wheel_platform_tag_names_its_machine_and_glibc_floor(kb):
    # torch 2.15.0's wheels on the default index (torch_companions.yaml, source torch-2.15.0)
    row = next(r for r in kb.torch_companions if r.torch == "2.15.0")
    assert row.platforms == ("manylinux_2_28_x86_64", "manylinux_2_28_aarch64")
    assert [(wheel_machine(t), wheel_glibc(t)) for t in row.platforms] == [
        ("x86_64", "2.28"),
        ("aarch64", "2.28"),
    ]
    assert row.machines == ("x86_64", "aarch64")
    assert (row.glibc("aarch64"), row.glibc("ppc64le")) == ("2.28", None)
    assert (row.cuda("x86_64"), row.cuda("ppc64le")) == ("13.2", None)


def test_a_variant_splits_its_arch_list_into_native_code_and_ptx(kb):
    # torch 2.8 cu129 (torch.yaml): TORCH_CUDA_ARCH_LIST ends with 12.0+PTX
    variant = kn.torch_release("2.8").variant("cu129")
    assert variant.arch == ("7.0", "7.5", "8.0", "8.6", "9.0", "10.0", "12.0+PTX")
    assert variant.compiled_ccs == ("7.0", "7.5", "8.0", "8.6", "9.0", "10.0", "12.0")
    assert variant.ptx_cc == "12.0"
    # torch 2.11 cu130 embeds no PTX
    assert kn.torch_release("2.11").variant("cu130").ptx_cc is None
    assert kn.torch_release("2.11").variant("cu999") is None


def test_the_links_a_gpu_model_wires(kb):
    # gpus.yaml: the H100 PCIe numbers 18 links and wires 12 (4, 5, 10, 11, 16, 17 unwired); the SXM5 wires
    # all 18; the NVL's wiring is not in the catalogue
    assert gpu(kb, "NVIDIA H100 PCIe").wired_links == (0, 1, 2, 3, 6, 7, 8, 9, 12, 13, 14, 15)
    assert gpu(kb, "NVIDIA H100 SXM5 80GB").wired_links == tuple(range(18))
    assert gpu(kb, "NVIDIA H100 NVL").wired_links is None


def test_peaks_by_data_type(kb):
    h100 = gpu(kb, "NVIDIA H100 PCIe")
    assert h100.peak_tflops("fp8") == h100.fp8_tflops == 1513  # dense: half the sheet's "3,026 TFLOPS*"
    assert gpu(kb, "NVIDIA H100 NVL").peak_tflops("fp8") is None
    with pytest.raises(ValueError, match=r"not a data type the catalogue has peaks for: 'int8' \(expected: "):
        h100.peak_tflops("int8")


def test_the_newest_host_compiler_a_toolkit_accepts(kb):
    row = next(r for r in kb.host_compilers if r.label == "CUDA 11.8 host compilers")
    assert (row.newest("gcc"), row.newest("clang"), row.newest("icc")) == (11, 14, None)


def test_every_row_includes_the_torch_variants(kb):
    rows = kb.rows()
    variants = [v for release in kb.torch_releases for v in release.variants]
    assert all(any(v is r for r in rows) for v in variants)
    assert len(rows) == len(variants) + sum(len(getattr(kb, attr)) for attr in kn.ROW_ATTRS)
