"""The shipped knowledge tables load cleanly and agree with each other."""

from __future__ import annotations

import datetime
import re
from pathlib import Path

import pytest
from packaging.version import Version

from gpudoctor import knowledge as kn
from gpudoctor.engine.loader import rule_files, shipped_rules_dir


@pytest.fixture(scope="module")
def kb() -> kn.Knowledge:
    return kn.load_knowledge(kn.knowledge_dir())


def test_shipped_tables_validate_without_problems():
    kb, problems = kn.parse_directory(kn.knowledge_dir())
    assert problems == []
    assert set(kb.tables) == set(kn.TABLES)


def test_knowledge_dir_is_not_loaded_as_rules():
    assert all(p.parent == shipped_rules_dir() for p in rule_files(shipped_rules_dir()))
    assert kn.knowledge_dir().parent == shipped_rules_dir()


def test_each_table_states_the_date_it_was_checked(kb):
    for name, table in kb.tables.items():
        assert table.file == f"{name}.yaml"
        assert type(table.checked) is datetime.date
        assert table.checked <= datetime.date.today()


def test_every_row_names_defined_sources(kb):
    for attr in kn.ROW_ATTRS:
        for row in getattr(kb, attr):
            sources = kb.tables[_table_of(attr)].sources
            assert row.source in sources, row.label
            assert all(s in sources for s in row.also), row.label
            for variant in getattr(row, "variants", ()):
                assert variant.source in sources, variant.label


def test_unverified_rows_say_why(kb):
    for row in kn.unverified_rows(kb):
        assert row.note, row.label


def test_every_torch_variants_cuda_has_a_driver_row(kb):
    toolkits = {t.cuda for t in kb.cuda_toolkits}
    for release in kb.torch_releases:
        for variant in release.variants:
            assert variant.cuda in toolkits, variant.label
            assert kn.min_driver_for_cuda(variant.cuda, kb)


def test_every_torch_release_names_its_companions(kb):
    versions = [Version(r.version) for r in kb.torch_releases]
    assert versions == sorted(versions)
    assert {"1.13", "2.0", "2.13", "2.14", "2.15"} <= {r.version for r in kb.torch_releases}
    for release in kb.torch_releases:
        assert release.torchvision is None or re.fullmatch(r"0\.\d+", release.torchvision), release.label
        assert release.torchvision is not None or "torchvision" in release.note, release.label
        assert release.torchaudio is not None or "torchaudio" in release.note, release.label
        assert release.pypi_default is None or release.variant(release.pypi_default), release.label


def test_torchvision_minor_tracks_torch_minor(kb):
    # torchvision 0.(N+15) ships with torch 2.N, 0.14 with 1.13: a typo in one row breaks the pattern.
    for release in kb.torch_releases:
        if release.torchvision is None:
            continue
        major, minor = (int(x) for x in release.version.split("."))
        expected = minor + 15 if major == 2 else minor + 1
        assert release.torchvision == f"0.{expected}", release.label


def test_compute_capabilities_share_one_format(kb):
    # The catalogue's "X.Y" must compare directly with torch's TORCH_CUDA_ARCH_LIST entries and cuDNN's lists.
    cc = re.compile(r"\d+\.\d")
    catalogue = {gpu.compute_capability for gpu in kb.gpus}
    assert all(cc.fullmatch(c) for c in catalogue)
    compiled = set()
    for release in kb.torch_releases:
        for variant in release.variants:
            assert all(cc.fullmatch(c) for c in variant.compiled_ccs), variant.label
            compiled.update(variant.compiled_ccs)
    cudnn = {c for row in kb.cudnn_support for c in row.ccs}
    assert catalogue & compiled and catalogue & cudnn
    assert {"7.0", "8.0", "9.0", "10.0", "12.0"} <= catalogue


def _arch_lists(kb):
    for release in kb.torch_releases:
        for variant in release.variants:
            for arch in (variant.arch, variant.arch_aarch64):
                if arch:
                    yield variant.label, arch


def test_at_most_one_ptx_entry_and_it_is_the_last(kb):
    for label, arch in _arch_lists(kb):
        ptx = [a for a in arch if a.endswith("+PTX")]
        assert len(ptx) <= 1 and (not ptx or arch[-1] == ptx[0]), label


def test_arch_lists_are_in_ascending_order(kb):
    for label, arch in _arch_lists(kb):
        ccs = [Version(a.removesuffix("+PTX")) for a in arch]
        assert ccs == sorted(ccs) and len(set(ccs)) == len(ccs), label


def test_driver_rows_increase_with_the_toolkit(kb):
    ordered = sorted(kb.cuda_toolkits, key=lambda t: (Version(t.cuda), t.update))
    drivers = [Version(t.driver) for t in ordered]
    assert drivers == sorted(drivers)


def test_minor_compat_floors_sit_below_every_toolkit_of_their_major(kb):
    # Except CUDA 11.0: NVIDIA notes it "was released with an earlier driver version" than the 11.x floor.
    for toolkit in kb.cuda_toolkits:
        if toolkit.cuda == "11.0":
            continue
        major = int(toolkit.cuda.split(".")[0])
        assert Version(kn.minor_compat_floor(major, kb)) <= Version(toolkit.driver), toolkit.label


def test_required_catalogue_entries_are_present(kb):
    keys = {gpu.key for gpu in kb.gpus}
    required = {"v100-sxm2", "t4", "a10", "a100-sxm4-40gb", "a100-sxm4-80gb", "a100-pcie-40gb",
                "a100-pcie-80gb", "a30", "a40", "l4", "l40s", "h100-pcie", "h100-sxm", "h100-nvl", "h200",
                "b200", "rtx-3090", "rtx-4090", "rtx-5090", "rtx-a6000", "rtx-6000-ada", "gh200",
                "gh200-144gb", "gb200", "b300", "h20", "rtx-pro-6000-ws", "rtx-pro-6000-maxq",
                "rtx-pro-6000-server", "l40", "gb300", "gb10", "rtx-pro-5000",
                "rtx-pro-5000-72gb"}  # fmt: skip
    assert required <= keys


NVML_NAMES = {
    "Tesla V100-SXM2-32GB": "v100-sxm2",
    "Tesla V100-PCIE-16GB": "v100-pcie",
    "Tesla T4": "t4",
    "NVIDIA A10": "a10",
    "NVIDIA A100-SXM4-80GB": "a100-sxm4-80gb",
    "NVIDIA A100-PCIE-40GB": "a100-pcie-40gb",
    "NVIDIA A100 80GB PCIe": "a100-pcie-80gb",
    "NVIDIA A30": "a30",
    "NVIDIA L4": "l4",
    "NVIDIA L40S": "l40s",
    "NVIDIA H100 PCIe": "h100-pcie",
    "NVIDIA H100 80GB HBM3": "h100-sxm",
    "NVIDIA H100 NVL": "h100-nvl",
    "NVIDIA H200": "h200",
    "NVIDIA H200 NVL": "h200-nvl",
    "NVIDIA B200": "b200",
    "NVIDIA GeForce RTX 3090": "rtx-3090",
    "NVIDIA GeForce RTX 4090": "rtx-4090",
    "NVIDIA GeForce RTX 5090": "rtx-5090",
    "NVIDIA RTX A6000": "rtx-a6000",
    "NVIDIA RTX 6000 Ada Generation": "rtx-6000-ada",
    # The names below are the driver's product names in NVIDIA/open-gpu-kernel-modules' README (source
    # nvidia-open-readme), which nvmlDeviceGetName returns; each was also seen in public nvidia-smi output.
    "NVIDIA GH200 480GB": "gh200",  # row gh200 (device 2342)
    "NVIDIA GH200 120GB": "gh200",  # row gh200 (device 2342, the smaller LPDDR5X part)
    "NVIDIA GH200 144G HBM3e": "gh200-144gb",  # row gh200-144gb (device 2348)
    "NVIDIA GB200": "gb200",  # row gb200
    "NVIDIA B300 SXM6 AC": "b300",  # row b300
    "NVIDIA H20": "h20",  # row h20
    "NVIDIA RTX PRO 6000 Blackwell Workstation Edition": "rtx-pro-6000-ws",  # row rtx-pro-6000-ws
    "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition": "rtx-pro-6000-maxq",  # row rtx-pro-6000-maxq
    "NVIDIA RTX PRO 6000 Blackwell Server Edition": "rtx-pro-6000-server",  # row rtx-pro-6000-server
    "NVIDIA L40": "l40",  # row l40 (device 26B5)
    "NVIDIA GB300": "gb300",  # row gb300 (device 31C2)
    "NVIDIA GB10": "gb10",  # row gb10 (device 2E12)
    "NVIDIA RTX PRO 5000 Blackwell": "rtx-pro-5000",  # row rtx-pro-5000 (device 2BB3, subsystem 204D)
    "NVIDIA RTX PRO 5000 72GB Blackwell": "rtx-pro-5000-72gb",  # row rtx-pro-5000-72gb (2BB3, 227A)
}


@pytest.mark.parametrize("name", sorted(NVML_NAMES))
def test_each_nvml_name_matches_exactly_one_entry(kb, name):
    matches = [gpu.key for gpu in kb.gpus if re.fullmatch(gpu.match, name)]
    assert matches == [NVML_NAMES[name]]


@pytest.mark.parametrize(
    "name",
    [
        "NVIDIA A10G",
        "NVIDIA GeForce RTX 3090 Ti",
        "NVIDIA A100-SXM4-40GB MIG 1g.5gb",
        # Other products of the README's table, with names close to catalogued ones:
        "NVIDIA H20-3e",
        "NVIDIA H20 NVL16",
        "NVIDIA RTX PRO 6000 Blackwell",
        "NVIDIA L20",
        "NVIDIA RTX PRO 4500 Blackwell",
        "NVIDIA RTX PRO 5000 Blackwell Generation Laptop GPU",
    ],
)
def test_near_miss_names_match_nothing(kb, name):
    assert kn.gpu_by_name(name, kb) is None


def test_mig_fields_agree(kb):
    for gpu in kb.gpus:
        if gpu.mig_max_instances:
            assert gpu.mig_min_driver, gpu.label
            assert Version(gpu.compute_capability) >= Version("8.0"), gpu.label


def test_nvlink_wiring_agrees_with_the_rest_of_the_row(kb):
    for gpu in kb.gpus:
        if gpu.nvlink_links is None:
            assert not gpu.nvlink_unwired, gpu.label
            continue
        assert gpu.nvlink_links > 0 and len(gpu.wired_links) == gpu.nvlink_links, gpu.label
        per_link = {3: 50, 4: 50, 5: 100}.get(gpu.nvlink_gen)  # GB/s a link, both directions
        if gpu.nvlink_gbs is not None and per_link:
            assert gpu.nvlink_gbs == per_link * gpu.nvlink_links, gpu.label


def test_pcie_rows_cover_gen1_to_gen6_in_order(kb):
    assert [g.gen for g in kb.pcie] == [1, 2, 3, 4, 5, 6]
    rates = [float(g.gts) for g in kb.pcie]
    assert rates == sorted(rates) and len(set(rates)) == len(rates)
    for gen in kb.pcie:
        assert gen.sysfs == f"{gen.gts} GT/s PCIe"


def test_docs_list_every_unverified_row(kb):
    docs = (Path(__file__).parents[2] / "docs" / "knowledge.md").read_text(encoding="utf-8")
    missing = [row.label for row in kn.unverified_rows(kb) if f"`{row.label}`" not in docs]
    assert missing == []


def test_docs_list_every_variant_without_an_arch_list(kb):
    docs = (Path(__file__).parents[2] / "docs" / "knowledge.md").read_text(encoding="utf-8")
    section = docs[docs.index("## Variants without an arch list") :]
    missing = [
        v.label for r in kb.torch_releases for v in r.variants if not v.arch and f"`{v.label}`" not in section
    ]
    assert missing == []


def _table_of(attr: str) -> str:
    return next(s.table for s in kn.SECTIONS if s.attr == attr)
