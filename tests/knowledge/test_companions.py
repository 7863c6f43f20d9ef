"""The torch_companions table: lookups on the shipped table, its agreement with torch.yaml, and bad rows.

Every expected answer names the row of rules/knowledge/torch_companions.yaml it traces to; those rows are
what tools/check_torch_companions.py read from the published metadata on 2026-12-01.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from packaging.version import Version

from gpudoctor import knowledge as kn
from gpudoctor.knowledge.schema import cuda_variant

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
