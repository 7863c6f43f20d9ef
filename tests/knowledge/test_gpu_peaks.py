"""The catalogue's dense peaks per data type (what `gpudoctor bench` compares its matmuls with): complete for
the H200, typed, and consistent with each other on every row."""

from __future__ import annotations

import pytest

from gpudoctor import knowledge as kn


@pytest.fixture(scope="module")
def kb() -> kn.Knowledge:
    return kn.load_knowledge(kn.knowledge_dir())


def _peaks(gpu: kn.GpuModel) -> dict[str, float]:
    return {d: p for d in kn.PEAK_DTYPES if (p := gpu.peak_tflops(d)) is not None}


def test_the_h200_is_complete(kb):
    # NVIDIA's "with sparsity" datasheet figures halved (TF32 989 -> 494, BF16/FP16 1,979 -> 989, FP8
    # 3,958 -> 1979); FP32 runs on the CUDA cores and is not halved. Sources: the row's note (zive-h200,
    # itkb-h200-b300, gpumap, hpctech-h100, klockwood-h100, torchtitan-peaks).
    h200 = kn.gpu_by_name("NVIDIA H200", kb)
    assert h200.key == "h200"
    assert _peaks(h200) == {"fp32": 67, "tf32": 494, "bf16": 989, "fp16": 989, "fp8": 1979}
    assert h200.memory_bandwidth_gbs == 4800 and h200.fp8 is True
    assert all(isinstance(p, (int, float)) and not isinstance(p, bool) for p in _peaks(h200).values())


def test_the_h200_nvl_is_another_row_without_the_sxm_peaks(kb):
    # gpumap repeats the SXM figures for the NVL cards; no source read gives the NVL's own: they are absent.
    nvl = kn.gpu_by_name("NVIDIA H200 NVL", kb)
    assert nvl.key == "h200-nvl" and _peaks(nvl) == {} and nvl.memory_bandwidth_gbs == 4800


def test_a_missing_peak_is_none_and_an_unknown_data_type_an_error(kb):
    nvl = kn.gpu_by_name("NVIDIA H100 NVL", kb)
    assert nvl.peak_tflops("bf16") == 835  # torchtitan-peaks
    assert nvl.peak_tflops("fp32") is None and nvl.peak_tflops("fp8") is None
    with pytest.raises(ValueError, match="fp64"):
        nvl.peak_tflops("fp64")
    assert kn.gpu_by_name("NVIDIA GH200 480GB", kb).peak_tflops("bf16") is None


def test_the_data_types_are_the_bench_matmuls():
    from gpudoctor.bench.model import MATMUL_TESTS

    assert tuple(f"matmul_{d}" for d in kn.PEAK_DTYPES) == MATMUL_TESTS


def test_an_fp8_peak_only_on_an_fp8_model(kb):
    with_fp8 = [g for g in kb.gpus if g.fp8_tflops is not None]
    assert {g.key for g in with_fp8} >= {"h100-sxm", "h100-pcie", "h200", "l4", "l40s", "b200", "b300"}
    for gpu in with_fp8:
        assert gpu.fp8 is True, gpu.label
        assert gpu.architecture in ("Ada Lovelace", "Hopper", "Blackwell"), gpu.label


def test_lower_precision_is_not_slower(kb):
    for gpu in kb.gpus:
        p = _peaks(gpu)
        if "tf32" in p and "bf16" in p:
            assert p["tf32"] <= p["bf16"], gpu.label
        if "bf16" in p and "fp8" in p:
            assert p["bf16"] <= p["fp8"], gpu.label
        if "bf16" in p and "fp16" in p:
            assert p["bf16"] == p["fp16"], gpu.label  # FP32 accumulate: the same rate on every row


# Data-center models whose dense TF32 NVIDIA prints at the FP32 rate: the L40 ("FP32 TFLOPS 90.5", "TF32
# Tensor Core TFLOPS 90.5 | 181*" in NVIDIA's L40 / L40S table, source mullet-l40 of gpus.yaml).
TF32_AT_FP32_RATE = {"l40"}


def test_fp32_is_below_tf32(kb):
    # On a GeForce card TF32 runs at the CUDA cores' FP32 rate (gpumap: RTX 4090 83 and 83, RTX 5090 105 and
    # 105), and on the L40 (above); everywhere else the tensor cores are faster.
    for gpu in kb.gpus:
        p = _peaks(gpu)
        if "fp32" in p and "tf32" in p:
            if gpu.segment == "consumer" or gpu.key in TF32_AT_FP32_RATE:
                assert p["fp32"] <= p["tf32"], gpu.label
            else:
                assert p["fp32"] < p["tf32"], gpu.label


def test_peaks_are_dense_and_plausible(kb):
    # A with-sparsity figure left unhalved would show as twice the dense one: no GPU of the catalogue reaches
    # 5000 dense BF16 TFLOP/s (the GB200's is 2500), nor 10000 FP8.
    for gpu in kb.gpus:
        p = _peaks(gpu)
        assert all(v > 0 for v in p.values()), gpu.label
        assert p.get("bf16", 0) <= 5000 and p.get("fp16", 0) <= 5000, gpu.label
        assert p.get("fp8", 0) <= 10000 and p.get("tf32", 0) <= 2500 and p.get("fp32", 0) <= 200, gpu.label


def test_rows_with_peaks_name_their_sources(kb):
    # The peaks rest on secondary sources: a row that has any is unverified and its note names where they
    # came from.
    sources = kb.tables["gpus"].sources
    for gpu in kb.gpus:
        if not _peaks(gpu):
            continue
        assert not gpu.verified and gpu.note, gpu.label
        named = [s for s in (gpu.source, *gpu.also) if s in gpu.note]
        assert named and all(s in sources for s in named), gpu.label


def test_the_peaks_survive_the_table_cache(kb, tmp_path, monkeypatch):
    from gpudoctor.knowledge import cache, loading

    monkeypatch.delenv("GPUDOCTOR_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    files = loading.read_tables(kn.knowledge_dir())
    first = cache.load(files, lambda f: loading.build_knowledge(f, kn.knowledge_dir()))
    again = cache.load(files, lambda f: pytest.fail("parsed the tables again"))
    assert again == first == kb
    assert again.gpus[[g.key for g in again.gpus].index("h200")].peak_tflops("tf32") == 494
