"""The lookups resolvers build on: typed answers from the shipped tables, LookupError when not there; the
torch_companions table (its lookups, its agreement with torch.yaml, its bad rows) last."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from packaging.version import Version

from gpudoctor import knowledge as kn
from gpudoctor.knowledge.schema import cuda_variant

H200_NVML = Path(__file__).parents[1] / "fixtures" / "h200-driver580-snapshot" / "nvml.json"


@pytest.mark.parametrize(
    ("cuda", "driver"),
    [
        ("12.6", "560.28.03"),  # GA
        ("12.6.3", "560.35.05"),  # update 3
        ("13.0.2", "580.95.05"),
        ("11.8", "520.61.05"),
        ("11.0.2", "450.51.05"),  # CUDA 11.0 GA was release 11.0.2
        ("11.0.3", "450.51.06"),
        (" 12.4 ", "550.54.14"),
    ],
)
def test_min_driver_for_cuda(cuda, driver):
    assert kn.min_driver_for_cuda(cuda) == driver


@pytest.mark.parametrize("cuda", ["12.7", "12.6.9", "10.2", "twelve", "12"])
def test_unknown_cuda_releases_raise(cuda):
    with pytest.raises(LookupError):
        kn.min_driver_for_cuda(cuda)


def test_cuda_toolkit_keeps_the_bundled_driver_where_it_differs():
    row = kn.cuda_toolkit("12.8")
    assert (row.driver, row.bundled_driver, row.verified) == ("570.26", "570.86.10", False)
    assert kn.cuda_toolkit("12.8.1").bundled_driver is None


def test_minor_compat_floor():
    assert [kn.minor_compat_floor(m) for m in (11, 12, 13)] == ["450.80.02", "525.60.13", "580"]
    with pytest.raises(LookupError):
        kn.minor_compat_floor(10)


def test_driver_branch():
    assert kn.driver_branch(580).designation == "LTSB"
    assert kn.driver_branch(580).max_cuda_major == 13
    assert kn.driver_branch(999) is None


@pytest.mark.parametrize("version", ["2.11", "2.11.0", "2.11.0+cu128", "2.11.1+cpu", "2.11.0rc1"])
def test_torch_release_accepts_installed_version_strings(version):
    assert kn.torch_release(version).version == "2.11"


@pytest.mark.parametrize("version", ["3.0", "1.12", "torch"])
def test_unknown_torch_releases_raise(version):
    with pytest.raises(LookupError):
        kn.torch_release(version)


def test_torch_variants_and_their_arch_lists():
    variants = kn.torch_variants("2.11")
    assert [v.name for v in variants] == ["cu126", "cu128", "cu130"]
    cu128, cu130 = variants[1], variants[2]
    # pt-pr-175253, pt-issue-182250: 2.11's cu128 dropped Volta, no PTX
    assert "7.0" not in cu128.compiled_ccs and "12.0" in cu128.compiled_ccs
    assert cu128.ptx_cc is None
    # pt-wheel-2.11: the release wheel's NVCC flags end at sm_120, with no PTX (release builds strip it)
    assert cu130.compiled_ccs[-1] == "12.0" and cu130.ptx_cc is None
    assert cu130.arch_aarch64 == ("8.0", "9.0", "10.0", "11.0", "12.0")
    assert kn.torch_release("2.11").variant("cu118") is None


def test_a_variant_without_its_own_provenance_inherits_the_releases():
    release = kn.torch_release("2.14")
    assert all(v.source == release.source and v.verified == release.verified for v in release.variants)
    assert all(v.also == () for v in release.variants)
    own = kn.torch_release("2.9").variant("cu130")
    assert own.source == "pt-pr-164471" and "build_cuda.sh" in own.note
    aarch64 = ("pt-test-infra-2.9-aarch64", "pt-pr-161257", "pt-aarch64-ci-build-sh-cycle")
    assert own.also == ("pt-build-cuda-sh", *aarch64)
    wheel = kn.torch_release("2.11").variant("cu130")
    assert (wheel.source, wheel.verified, wheel.note) == ("pt-wheel-2.11", True, "")


def test_torch_index_url():
    assert kn.torch_index_url("cu128") == "https://download.pytorch.org/whl/cu128"
    assert kn.torch_index_url("cpu") == "https://download.pytorch.org/whl/cpu"
    with pytest.raises(ValueError):
        kn.torch_index_url("cu12.8")


def test_the_pypi_default_of_a_release_is_one_of_its_variants():
    release = kn.torch_release("2.0")
    assert release.variant(release.pypi_default).cuda == "11.7"


def test_tensorflow_jax_cudnn_lookups():
    assert kn.tensorflow_build("2.16.1").cuda == "12.3"
    with pytest.raises(LookupError):
        kn.tensorflow_build("1.15")
    assert kn.jax_plugin(13).min_cc == "7.5"
    assert kn.jax_plugin(11) is None
    assert {(r.cuda_min, r.cuda_max) for r in kn.cudnn_builds("9.10.2")} == {
        ("11.8", "11.8"),
        ("12.0", "12.9"),
        ("12.8", "12.9"),
    }
    assert kn.cudnn_builds("7.6.5") == ()


def test_gpu_by_name_finds_the_gpu_of_the_h200_capture():
    name = json.loads(H200_NVML.read_text(encoding="utf-8"))["devices"]["0"]["nvmlDeviceGetName"]
    gpu = kn.gpu_by_name(name)
    assert (gpu.key, gpu.compute_capability, gpu.mig_max_instances) == ("h200", "9.0", 7)
    assert kn.gpu_by_name("  NVIDIA B200\n").compute_capability == "10.0"
    assert kn.gpu_by_name("NVIDIA Tesla K80") is None


@pytest.mark.parametrize(
    ("name", "key", "cc", "memory_gb", "wired"),
    [
        # row gh200: 9.0 (cuda-gpus), 96 GB (mig-supported "H100 on GH200"), wiring not known
        ("NVIDIA GH200 480GB", "gh200", "9.0", 96, None),
        # row gh200-144gb: 144 GB HBM3e (mlperf-gh200-144gb)
        ("NVIDIA GH200 144G HBM3e", "gh200-144gb", "9.0", 144, None),
        # row gb200: 10.0, 186 GB (mig-supported), 18 NVLink 5 links (nvidia-health-nvlink)
        ("NVIDIA GB200", "gb200", "10.0", 186, tuple(range(18))),
        # row b200: 10.0, 180 GB (mig-supported), 18 links (nvlink-page-copy)
        ("NVIDIA B200", "b200", "10.0", 180, tuple(range(18))),
        # row b300: 10.3 (cuda-gpus), 288 GB (nim-b300), 18 links (flashinfer-3990)
        ("NVIDIA B300 SXM6 AC", "b300", "10.3", 288, tuple(range(18))),
        # row h20: 9.0, 96 GB (mig-supported), wiring not known
        ("NVIDIA H20", "h20", "9.0", 96, None),
        # rows rtx-pro-6000-*: 12.0 (cuda-gpus), 96 GB (mig-supported), no NVLink wiring recorded
        ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "rtx-pro-6000-ws", "12.0", 96, None),
        ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "rtx-pro-6000-maxq", "12.0", 96, None),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "rtx-pro-6000-server", "12.0", 96, None),
        # row h100-pcie: 12 wired links, 4, 5, 10, 11, 16, 17 unwired (azure-nhc-162)
        ("NVIDIA H100 PCIe", "h100-pcie", "9.0", 80, (0, 1, 2, 3, 6, 7, 8, 9, 12, 13, 14, 15)),
        # row h100-sxm: 18 links (mlperf-dgx-h100)
        ("NVIDIA H100 80GB HBM3", "h100-sxm", "9.0", 80, tuple(range(18))),
        # row a100-sxm4-40gb: 12 links (dcgm-149)
        ("NVIDIA A100-SXM4-40GB", "a100-sxm4-40gb", "8.0", 40, tuple(range(12))),
    ],
)
def test_new_models_by_their_nvml_names(name, key, cc, memory_gb, wired):
    gpu = kn.gpu_by_name(name)
    assert (gpu.key, gpu.compute_capability, gpu.memory_gb) == (key, cc, memory_gb)
    assert kn.wired_nvlinks(name) == wired


def test_wired_nvlinks_of_an_unknown_gpu():
    assert kn.wired_nvlinks("NVIDIA H800") is None


def test_rtx_pro_6000_editions_share_their_mig_fields():
    editions = [kn.gpu_by_name(f"NVIDIA RTX PRO 6000 Blackwell {e}") for e in
                ("Workstation Edition", "Max-Q Workstation Edition", "Server Edition")]  # fmt: skip
    assert [g.segment for g in editions] == ["workstation", "workstation", "data-center"]
    assert {(g.mig_max_instances, g.mig_min_driver) for g in editions} == {(4, "575.51.03")}
    # Only the 600 W Workstation Edition has peaks, from a secondary source (hmc-rtx-pro-6000), which makes
    # its row unverified; the Max-Q and Server Editions' figures were not read.
    peaks = [(g.verified, g.peak_tflops("bf16")) for g in editions]
    assert peaks == [(False, 503.8), (True, None), (True, None)]


@pytest.mark.parametrize(
    ("speed", "gen"),
    [
        ("2.5 GT/s PCIe", 1),
        ("8.0 GT/s PCIe", 3),
        ("32.0 GT/s PCIe\n", 5),
        ("16 GT/s", 4),
        ("64.0 GT/s PCIe", 6),
    ],
)
def test_pcie_generation(speed, gen):
    assert kn.pcie_generation(speed).gen == gen


def test_pcie_generation_unknown_and_bandwidth():
    assert kn.pcie_generation("Unknown") is None
    assert kn.pcie_generation("16.0 GT/s") is None  # not a form any kernel wrote
    assert kn.pcie_generation("16.0 GT/s PCIe").x16_gbs == 31.51


def test_the_shipped_tables_load_once():
    assert kn.knowledge() is kn.knowledge()


def test_tables_are_read_only():
    kb = kn.knowledge()
    with pytest.raises(TypeError):
        kb.tables["torch"] = None  # type: ignore[index]
    with pytest.raises(AttributeError):
        kb.gpus[0].compute_capability = "1.0"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("cuda", "gcc", "clang"),
    [
        ("11.8", 11, 14),
        ("12.0.140", 12, 14),
        ("12.4", 13, 17),
        ("12.4.131", 13, 17),  # an nvcc version: only major.minor counts
        ("12.6.3", 13, 18),  # a version.json release
        ("12.8", 14, 19),
        ("13.0.88", 15, 20),
        ("13.1", 15, 21),
        ("13.4", 16, 22),
    ],
)
def test_newest_host_compiler(cuda, gcc, clang):
    assert kn.newest_host_compiler(cuda, "gcc") == gcc
    assert kn.newest_host_compiler(cuda, "clang") == clang


def test_newest_host_compiler_unknown():
    assert kn.host_compilers("12.2.140").gcc_max == 12
    with pytest.raises(LookupError, match="no clang limit for CUDA 12.2"):
        kn.newest_host_compiler("12.2", "clang")
    with pytest.raises(LookupError, match="CUDA 11.4 is not in the host_compilers table"):
        kn.newest_host_compiler("11.4", "gcc")
    with pytest.raises(LookupError, match="no icc limit"):
        kn.newest_host_compiler("13.0", "icc")
    with pytest.raises(LookupError, match="not a CUDA version"):
        kn.host_compilers("thirteen")


def test_host_compiler_limits_never_go_down_with_the_toolkit():
    rows = sorted(kn.knowledge().host_compilers, key=lambda r: tuple(map(int, r.cuda.split("."))))
    for older, newer in zip(rows, rows[1:]):
        assert newer.gcc_max >= older.gcc_max, (older.label, newer.label)
        if older.clang_max is not None and newer.clang_max is not None:
            assert newer.clang_max >= older.clang_max, (older.label, newer.label)


def test_index_pins_are_the_commands_pytorch_publishes_and_agree_with_the_default_index():
    # torch.yaml index_pins (pt-previous-versions-page): each entry belongs to its own release, and where the
    # companions table (the default index's metadata) lists that torch, PyTorch's command names the same
    # companions: torch 2.0.0 -> torchvision 0.15.1, torchaudio 2.0.1; 2.9.1 -> 0.24.1, 2.9.1.
    assert kn.torch_index_pins("2.0.0") == {"torchvision": "0.15.1", "torchaudio": "2.0.1"}
    assert kn.torch_index_pins("2.9.1+cu128") == {"torchvision": "0.24.1", "torchaudio": "2.9.1"}
    assert kn.torch_index_pins("2.5.1") is None  # no copy of the page read lists 2.5.x
    assert kn.torch_index_pins("3.0.0") is None  # not in the torch table
    checked = 0
    for release in kn.knowledge().torch_releases:
        for line in release.index_pins:
            pins = dict(p.split("==") for p in line.split())
            assert pins["torch"].rsplit(".", 1)[0] == release.version, line
            row = kn.torch_companions(pins["torch"])
            if row is not None:
                assert (row["torchvision"], row["torchaudio"]) == (pins["torchvision"], pins["torchaudio"])
                checked += 1
    assert checked == 13  # 2.0.0 to 2.3.1, 2.6.0, 2.9.0, 2.9.1 (the companions table starts at 2.0.0)


# --- companions ---------------------------------------------------------------------------------------------
# The torch_companions table: lookups on the shipped table, its agreement with torch.yaml, and bad rows. Every
# expected answer names the row of rules/knowledge/torch_companions.yaml it traces to; those rows are what
# tools/check_torch_companions.py read from the published metadata on 2026-12-01.

TABLE = "torch_companions"


@pytest.fixture(scope="module")
def kb() -> kn.Knowledge:
    return kn.load_knowledge(kn.knowledge_dir())


# (torch, torchvision, torchaudio): the pins as the companions' Requires-Dist state them.
PINS = [
    # row torch "2.0.0": torchvision 0.15.1 and torchaudio 2.0.1 require torch==2.0.0
    ("2.0.0", "0.15.1", "2.0.1"),
    # row torch "2.0.1": torchvision 0.15.2 and torchaudio 2.0.2 require torch==2.0.1 (the per-minor pins
    # 0.15.1 / 2.0.1 require 2.0.0, so pip refuses them with torch 2.0.1)
    ("2.0.1", "0.15.2", "2.0.2"),
    # row torch "2.4.0": torchvision 0.19.0 writes "torch ==2.4.0", read as torch==2.4.0
    ("2.4.0", "0.19.0", "2.4.0"),
    # row torch "2.7.1": torchvision 0.22.1, torchaudio 2.7.1 (torch.yaml had no torchaudio for 2.7-2.11)
    ("2.7.1", "0.22.1", "2.7.1"),
    # row torch "2.10.0": torchvision 0.25.0, torchaudio 2.10.0, the last torchaudio pinning exactly
    ("2.10.0", "0.25.0", "2.10.0"),
    # row torch "2.11.0": torchaudio 2.11.1 requires torch>=2.11 (2.11.0 states no requirement at all)
    ("2.11.0", "0.26.0", "2.11.1"),
    # row torch "2.12.0": no torchaudio release requires torch 2.12
    ("2.12.0", "0.27.0", None),
    # row torch "2.14.1": torchvision 0.29.2 requires torch>=2.14.0; nothing pins 2.14.1 exactly
    ("2.14.1", "0.29.2", None),
    # row torch "2.15.0": no companion on the index requires 2.15 yet
    ("2.15.0", None, None),
]


@pytest.mark.parametrize(("torch", "torchvision", "torchaudio"), PINS)
def test_companions_are_the_releases_whose_metadata_requires_that_torch(torch, torchvision, torchaudio):
    found = kn.torch_companions(torch)
    assert (found["torch"], found["torchvision"], found["torchaudio"]) == (torch, torchvision, torchaudio)


@pytest.mark.parametrize(
    ("torch", "requires"),
    [
        # row torch "2.0.1": both exact pins
        ("2.0.1", {"torchvision": "torch==2.0.1", "torchaudio": "torch==2.0.1"}),
        # row torch "2.11.0": torchvision exact, torchaudio only a lower bound in the same minor
        ("2.11.0", {"torchvision": "torch==2.11.0", "torchaudio": "torch>=2.11"}),
        # row torch "2.14.1": torchvision a lower bound; no torchaudio
        ("2.14.1", {"torchvision": "torch>=2.14.0", "torchaudio": None}),
    ],
)
def test_the_requirement_says_whether_the_pin_is_exact(torch, requires):
    assert kn.torch_companions(torch)["requires"] == requires


X86, ARM = "x86_64", "aarch64"


@pytest.mark.parametrize(
    ("torch", "glibc", "cuda"),
    [
        # row torch "2.0.1": manylinux1 x86_64 (CUDA 11.7 runtime wheel), manylinux2014 aarch64 (none)
        ("2.0.1", {X86: "2.5", ARM: "2.17"}, {X86: "11.7", ARM: None}),
        # row torch "2.6.0": the aarch64 wheel moves to manylinux_2_28
        ("2.6.0", {X86: "2.5", ARM: "2.28"}, {X86: "12.4", ARM: None}),
        # row torch "2.10.0": aarch64 still requires no CUDA runtime wheel
        ("2.10.0", {X86: "2.28", ARM: "2.28"}, {X86: "12.8", ARM: None}),
        # row torch "2.11.0": both machines require cuda-toolkit[cudart]==13.0.2
        ("2.11.0", {X86: "2.28", ARM: "2.28"}, {X86: "13.0", ARM: "13.0"}),
        # row torch "2.15.0": cuda-toolkit 13.2.2
        ("2.15.0", {X86: "2.28", ARM: "2.28"}, {X86: "13.2", ARM: "13.2"}),
    ],
)
def test_wheels_per_machine(torch, glibc, cuda):
    found = kn.torch_companions(torch)
    assert (found["platforms"], found["glibc"], found["cuda"]) == ([X86, ARM], glibc, cuda)


@pytest.mark.parametrize(
    ("torch", "torchvision_platforms", "torchaudio_platforms"),
    [
        # row torch "2.0.1": torchvision 0.15.2 and torchaudio 2.0.2 have aarch64 wheels
        ("2.0.1", ["x86_64", "aarch64"], ["x86_64", "aarch64"]),
        # row torch "2.13.0": torchvision 0.28.0 on both machines, no torchaudio at all
        ("2.13.0", ["x86_64", "aarch64"], []),
        # row torch "2.15.0": no companion, so no companion wheel
        ("2.15.0", [], []),
    ],
)
def test_companion_wheels_per_machine(torch, torchvision_platforms, torchaudio_platforms):
    found = kn.torch_companions(torch)
    assert found["torchvision_platforms"] == torchvision_platforms
    assert found["torchaudio_platforms"] == torchaudio_platforms


def test_aarch64_wheels_are_cpu_builds_until_2_11(kb):
    # rows torch "2.0.0" to "2.10.0" have aarch64 wheels requiring no CUDA runtime; from row "2.11.0" on they
    # require CUDA 13. A GPU host on aarch64 gets a CUDA torch from the default index only from 2.11.
    for row in kb.torch_companions:
        assert "aarch64" in row.machines, row.label
        cuda = row.cuda("aarch64")
        assert (cuda is None) == (Version(row.torch) < Version("2.11")), row.label


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("2.0.1+cu118", "2.0.1"),  # the local tag is dropped: row torch "2.0.1"
        (" 2.11.0 ", "2.11.0"),  # row torch "2.11.0"
    ],
)
def test_installed_version_strings_find_their_row(version, expected):
    assert kn.torch_companions(version)["torch"] == expected


@pytest.mark.parametrize("version", ["2.0", "1.13.1", "2.0.2", "2.11.0rc1", "2.16.0"])
def test_what_the_table_does_not_list_is_none(version):
    assert kn.torch_companions(version) is None


@pytest.mark.parametrize("version", ["torch", "", "two"])
def test_what_is_not_a_version_raises(version):
    with pytest.raises(LookupError):
        kn.torch_companions(version)
    with pytest.raises(LookupError):
        kn.torch_patches(version)


@pytest.mark.parametrize(
    ("minor", "patches"),
    [
        ("2.0", ("2.0.0", "2.0.1")),  # rows "2.0.0", "2.0.1"
        ("2.1", ("2.1.0", "2.1.1", "2.1.2")),  # rows "2.1.0" to "2.1.2"
        ("2.2.1", ("2.2.0", "2.2.1", "2.2.2")),  # a release stands for its minor: rows "2.2.0" to "2.2.2"
        ("2.14.1+cu130", ("2.14.0", "2.14.1")),  # rows "2.14.0", "2.14.1"
        ("2.10", ("2.10.0",)),  # row "2.10.0" (2.10 sorts after 2.9, not after 2.1)
        ("1.13", ()),  # the table starts at 2.0.0
    ],
)
def test_torch_patches_newest_last(minor, patches):
    assert kn.torch_patches(minor) == patches


def test_rows_cover_every_patch_from_2_0_0_in_order(kb):
    versions = [Version(r.torch) for r in kb.torch_companions]
    assert versions == sorted(versions) and versions[0] == Version("2.0.0")
    assert len(versions) == 28


def test_companion_minors_track_torch(kb):
    # torchvision 0.(N+15) and torchaudio 2.N go with torch 2.N: a wrong pick breaks the pattern.
    for row in kb.torch_companions:
        minor = Version(row.torch).minor
        if row.torchvision:
            assert Version(row.torchvision).release[:2] == (0, minor + 15), row.label
        if row.torchaudio:
            assert Version(row.torchaudio).release[:2] == (2, minor), row.label


def test_the_default_index_cuda_matches_torch_yaml(kb):
    # torch.yaml's pypi_default (the variant a plain install gets) rests on the notes for most releases;
    # the metadata states the CUDA runtime the x86_64 wheel requires: both must agree on every patch.
    checked = 0
    for row in kb.torch_companions:
        try:
            release = kn.torch_release(row.torch, kb)
        except LookupError:
            continue  # torch.yaml ends before this minor
        if release.pypi_default and row.cuda_x86_64:
            assert cuda_variant(row.cuda_x86_64) == release.pypi_default, row.label
            checked += 1
    assert checked >= 20


def test_every_row_cites_its_companions_sources(kb):
    sources = kb.tables[TABLE].sources
    for row in kb.torch_companions:
        assert row.source == f"torch-{row.torch}" and row.verified, row.label
        for name in ("torchvision", "torchaudio"):
            version = getattr(row, name)
            if version:
                assert f"{name}-{version}" in row.also, row.label
                source = sources[f"{name}-{version}"]
                assert source.url.startswith("https://github.com/pytorch/"), row.label
                assert getattr(row, f"{name}_requires") in source.read, row.label


# --- validation of bad rows ----------------------------------------------------------------------------


@pytest.fixture
def tables(tmp_path: Path) -> Path:
    out = tmp_path / "knowledge"
    shutil.copytree(kn.knowledge_dir(), out)
    return out


def edit(directory: Path, old: str, new: str) -> int:
    """Replace the one occurrence of `old` in the table; returns the line it starts on."""
    path = directory / f"{TABLE}.yaml"
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{old!r} must occur once"
    path.write_text(text.replace(old, new), encoding="utf-8")
    return text[: text.index(old)].count("\n") + 1


def problems(directory: Path) -> list[str]:
    _kb, found = kn.parse_directory(directory)
    return [str(p) for p in found]


ROW_2_0_1 = """\
  - torch: "2.0.1"
    torchvision: "0.15.2"
    torchvision_requires: "torch==2.0.1"
    torchaudio: "2.0.2"
    torchaudio_requires: "torch==2.0.1"
    platforms: [manylinux_2_5_x86_64, manylinux_2_17_aarch64]
"""


def _row(directory: Path, torch: str) -> tuple[int, int]:
    """(line, index) of a row."""
    text = (directory / f"{TABLE}.yaml").read_text(encoding="utf-8")
    rows = text[text.index("\nrows:\n") :]
    index = rows.count("\n  - torch: ", 0, rows.index(f'\n  - torch: "{torch}"'))
    return text[: text.index(f'  - torch: "{torch}"')].count("\n") + 1, index


def test_a_requirement_that_does_not_admit_the_torch_is_rejected(tables):
    line, index = _row(tables, "2.0.1")
    edit(
        tables,
        ROW_2_0_1,
        ROW_2_0_1.replace('vision_requires: "torch==2.0.1"', 'vision_requires: "torch==2.0.0"'),
    )
    assert problems(tables) == [
        f"torch_companions.yaml:{line + 2}: torch 2.0.1 companions: at rows[{index}].torchvision_requires: "
        "torch==2.0.0 does not admit torch 2.0.1"
    ]


def test_a_companion_without_its_requirement_is_rejected(tables):
    line, index = _row(tables, "2.0.1")
    edit(tables, ROW_2_0_1, ROW_2_0_1.replace('    torchvision_requires: "torch==2.0.1"\n', ""))
    assert problems(tables) == [
        f"torch_companions.yaml:{line + 1}: torch 2.0.1 companions: at rows[{index}].torchvision: "
        "torchvision, torchvision_requires, torchvision_platforms are set together: "
        "torchvision_requires missing"
    ]


@pytest.mark.parametrize(
    ("new", "field", "expected"),
    [
        ('torchvision_requires: "torchvision==2.0.1"', "torchvision_requires", "a requirement on torch"),
        ('torchvision_requires: "torch==2.0.*"', "torchvision_requires", "a requirement on torch"),
        ("torchvision: 0.15", "torchvision", 'a quoted version like "525.60.13"'),
    ],
)
def test_malformed_values_are_rejected(tables, new, field, expected):
    _line, index = _row(tables, "2.0.1")
    old = {
        "torchvision_requires": 'torchvision_requires: "torch==2.0.1"',
        "torchvision": 'torchvision: "0.15.2"',
    }
    edit(tables, ROW_2_0_1, ROW_2_0_1.replace(old[field], new))
    found = problems(tables)
    assert len(found) == 1 and f"at rows[{index}].{field}: expected {expected}" in found[0], found


def test_a_platform_must_be_a_pep600_tag(tables):
    line, index = _row(tables, "2.0.1")
    edit(tables, ROW_2_0_1, ROW_2_0_1.replace("[manylinux_2_5_x86_64,", "[manylinux1_x86_64,"))
    assert problems(tables) == [
        f"torch_companions.yaml:{line + 5}: torch 2.0.1 companions: at rows[{index}].platforms: "
        "expected a list of wheel platform tags: manylinux_2_28_x86_64, "
        "got ['manylinux1_x86_64', 'manylinux_2_17_aarch64']"
    ]


def test_a_duplicate_torch_release_is_rejected(tables):
    edit(tables, '  - torch: "2.0.1"\n', '  - torch: "2.0.0"\n')
    found = problems(tables)
    assert any("at rows[1]: duplicate row (same torch as rows[0])" in p for p in found), found
