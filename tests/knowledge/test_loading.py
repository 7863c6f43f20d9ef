"""Loading the knowledge tables (knowledge/loading.py) against their schema: broken tables fail validation,
every problem at once, each with file, line, row and what was expected."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gpudoctor import knowledge as kn


@pytest.fixture
def tables(tmp_path: Path) -> Path:
    out = tmp_path / "knowledge"
    shutil.copytree(kn.knowledge_dir(), out)
    return out


def edit(directory: Path, name: str, old: str, new: str) -> None:
    path = directory / f"{name}.yaml"
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{old!r} must occur once in {name}.yaml"
    path.write_text(text.replace(old, new), encoding="utf-8")


def line_of(directory: Path, name: str, needle: str) -> int:
    lines = (directory / f"{name}.yaml").read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if needle in line)


def problems(directory: Path) -> list[str]:
    kb, found = kn.parse_directory(directory)
    assert kb is None if found else kb is not None
    return [str(p) for p in found]


def test_a_copy_of_the_shipped_tables_is_valid(tables):
    assert problems(tables) == []


def test_dropping_a_source_fails_every_row_that_cites_it(tables):
    text = (tables / "cuda_drivers.yaml").read_text(encoding="utf-8")
    start = text.index("  nv-redist:\n")
    end = text.index("  nv-redist-legacy:\n")
    (tables / "cuda_drivers.yaml").write_text(text[:start] + text[end:], encoding="utf-8")
    found = problems(tables)
    line = line_of(tables, "cuda_drivers", '{cuda: "12.6", update: 3,')
    index = _row_index(tables, "cuda_drivers", '{cuda: "12.6", update: 3,')
    assert (
        f"cuda_drivers.yaml:{line}: CUDA 12.6 update 3: at rows[{index}].source: "
        "source 'nv-redist' is not defined under sources"
    ) in found
    cited = (tables / "cuda_drivers.yaml").read_text(encoding="utf-8").count("source: nv-redist,")
    assert len(found) == cited > 1
    with pytest.raises(kn.KnowledgeError) as err:
        kn.load_knowledge(tables)
    assert len(err.value.problems) == cited


def test_an_unquoted_version_is_reported_at_its_line(tables):
    edit(tables, "torch", 'torchvision: "0.14"', "torchvision: 0.14")
    line = line_of(tables, "torch", "torchvision: 0.14")
    assert problems(tables) == [
        f"torch.yaml:{line}: torch 1.13: at rows[0].torchvision: "
        'expected a quoted "X.Y" like "2.10", got 0.14'
    ]


def test_an_unverified_row_without_a_note_fails(tables):
    note = '\n     note: "not in the stored source.md (it ends at 2.18.0)"}\n  - {version: "2.20"'
    edit(tables, "tensorflow", "verified: false," + note, 'verified: false}\n  - {version: "2.20"')
    line = line_of(tables, "tensorflow", '{version: "2.19"')
    assert problems(tables) == [
        f"tensorflow.yaml:{line}: tensorflow 2.19: at rows[9].note: "
        "a row with verified: false needs a note saying why"
    ]


def test_every_problem_is_reported_at_once_across_files(tables):
    edit(tables, "jax", 'min_cc: "7.5"', 'min_cc: "sm_75"')
    edit(tables, "pcie", "gen: 6,", "gen: 6, lanes: 16,")
    ada = '    also: [gpumap]\n    confirmed: [compute_capability, segment]\n    verified: false\n    note: "'
    ada += "architecture inferred"
    edit(
        tables,
        "gpus",
        "segment: workstation\n    source: cuda-gpus\n" + ada,
        "segment: desktop\n    source: cuda-gpus\n" + ada,
    )
    found = problems(tables)
    assert len(found) == 3
    expected = [
        ("jax.yaml:", "jax[cuda13]: at rows[1].min_cc: expected a quoted compute capability"),
        ("pcie.yaml:", "PCIe Gen6: at rows[5].lanes: unknown key"),
        ("gpus.yaml:", "NVIDIA RTX 6000 Ada Generation: at rows[22].segment: expected one of"),
    ]
    for file, text in expected:
        assert any(p.startswith(file) and text in p for p in found), text


def test_checked_must_be_a_date(tables):
    edit(tables, "jax", "checked: 2026-11-30", 'checked: "last week"')
    line = line_of(tables, "jax", "checked:")
    assert problems(tables) == [
        f"jax.yaml:{line}: at checked: expected the date it was checked (YYYY-MM-DD), got 'last week'"
    ]


def test_a_missing_or_unknown_table_file_is_reported(tables):
    (tables / "pcie.yaml").unlink()
    (tables / "rocm.yaml").write_text("table: rocm\n", encoding="utf-8")
    found = problems(tables)
    assert (
        "rocm.yaml:0: unknown table (expected: cuda_drivers, torch, torch_companions, tensorflow, jax, "
        "onnxruntime, cudnn, gpus, pcie, host_compilers, xid)" in found
    )
    assert f"pcie.yaml:0: missing table file in {tables}" in found


def test_table_name_must_match_the_file(tables):
    edit(tables, "cudnn", "table: cudnn", "table: cuDNN")
    line = line_of(tables, "cudnn", "table: cuDNN")
    assert problems(tables) == [f"cudnn.yaml:{line}: at table: expected 'cudnn' (the file name), got 'cuDNN'"]


def test_a_source_must_say_what_was_read(tables):
    edit(tables, "jax", "    read: >-\n", "    seen: >-\n")
    found = problems(tables)
    assert any("at sources.jax-install.seen: unknown key (expected: title, url, read)" in p for p in found)
    assert any("at sources.jax-install.read: expected a non-empty string" in p for p in found)


def test_pypi_default_must_be_one_of_the_variants(tables):
    edit(
        tables,
        "torch",
        'pypi_default: cu117\n    torchvision: "0.15"',
        'pypi_default: cu118x\n    torchvision: "0.15"',
    )
    found = problems(tables)
    line = line_of(tables, "torch", "cu118x")
    assert found == [
        f"torch.yaml:{line}: torch 2.0: at rows[1].pypi_default: "
        "expected a CUDA wheel variant like cu128, got 'cu118x'"
    ]
    edit(tables, "torch", "pypi_default: cu118x", "pypi_default: cu121")
    assert problems(tables) == [
        f"torch.yaml:{line}: torch 2.0: at rows[1].pypi_default: 'cu121' is not one of the variants"
    ]


def test_a_variant_name_must_match_its_cuda(tables):
    edit(tables, "torch", '{name: cu116, cuda: "11.6"', '{name: cu116, cuda: "11.7"')
    line = line_of(tables, "torch", "{name: cu116")
    assert problems(tables) == [
        f"torch.yaml:{line}: torch 1.13: at rows[0].variants[0].name: variant cu116 does not match cuda 11.7"
    ]


def test_a_duplicate_row_is_reported(tables):
    edit(tables, "pcie", "gen: 2, gts", "gen: 1, gts")
    line = line_of(tables, "pcie", 'gen: 1, gts: "5.0"')
    assert problems(tables) == [
        f"pcie.yaml:{line}: PCIe Gen1: at rows[1]: duplicate row (same gen as rows[0])"
    ]


def test_confirmed_may_only_name_fields_the_row_sets(tables):
    edit(
        tables,
        "gpus",
        '    confirmed: [compute_capability, segment]\n    verified: false\n    note: "16 or 32 GB; no',
        '    confirmed: [compute_capability, bf16_tflops]\n    verified: false\n    note: "16 or 32 GB; no',
    )
    line = line_of(tables, "gpus", "confirmed: [compute_capability, bf16_tflops]")
    assert problems(tables) == [
        f"gpus.yaml:{line}: Tesla V100 SXM2: at rows[0].confirmed: 'bf16_tflops' is not a field this row sets"
    ]


def test_a_bad_regex_is_rejected(tables):
    edit(tables, "gpus", "match: 'NVIDIA L40S'", "match: 'NVIDIA L40S('")
    found = problems(tables)
    assert (
        len(found) == 1 and "NVIDIA L40S: at rows[11].match: expected a valid regular expression" in found[0]
    )


def test_yaml_syntax_errors_carry_a_line(tables):
    (tables / "pcie.yaml").write_text("table: pcie\nrows: [\n", encoding="utf-8")
    found = problems(tables)
    assert len(found) == 1 and found[0].startswith("pcie.yaml:") and "not valid YAML" in found[0]
    assert found[0].split(":")[1] != "0"


def _row_index(directory: Path, name: str, needle: str) -> int:
    text = (directory / f"{name}.yaml").read_text(encoding="utf-8")
    rows = text[text.index("\nrows:\n") :].split("\n  - ")
    return next(i - 1 for i, chunk in enumerate(rows) if needle.removeprefix("  - ") in chunk)


def test_row_relations_are_table_data_not_special_cases(tables):
    # Each relation between fields of a row is declared on its Section (ranges, in_major, variants).
    by_table = {s.table: s for s in kn.SECTIONS if s.name == "rows"}
    assert by_table["cudnn"].ranges == (("cuda_min", "cuda_max"),)
    assert by_table["cudnn"].in_major == (("cuda_min", "cuda_major"),)
    assert by_table["torch"].variants and not by_table["tensorflow"].variants
    edit(tables, "cudnn", '{cudnn: "8.9.6", cuda_major: 12, cuda_min: "12.0", cuda_max: "12.2"',
         '{cudnn: "8.9.6", cuda_major: 11, cuda_min: "12.4", cuda_max: "12.2"')  # fmt: skip
    edit(tables, "tensorflow", '{version: "2.10", python_min: "3.7", python_max: "3.10"',
         '{version: "2.10", python_min: "3.11", python_max: "3.10"')  # fmt: skip
    edit(tables, "torch", 'index_url: "https://download.pytorch.org/whl/{variant}"',
         'index_url: "https://download.pytorch.org/whl/cu128"')  # fmt: skip
    found = problems(tables)
    cudnn = line_of(tables, "cudnn", 'cuda_major: 11, cuda_min: "12.4"')
    tf = line_of(tables, "tensorflow", '{version: "2.10"')
    row = _row_index(tables, "cudnn", 'cuda_major: 11, cuda_min: "12.4"')
    tf_row = _row_index(tables, "tensorflow", '{version: "2.10"')
    label = "cuDNN 8.9.6 for CUDA 12.4-12.2"
    assert sorted(found) == [
        f"cudnn.yaml:{cudnn}: {label}: at rows[{row}].cuda_min: cuda_min 12.4 is above cuda_max 12.2",
        f"cudnn.yaml:{cudnn}: {label}: at rows[{row}].cuda_min: cuda_min is not in cuda_major",
        f"tensorflow.yaml:{tf}: tensorflow 2.10: at rows[{tf_row}].python_min: "
        "python_min 3.11 is above python_max 3.10",
        "torch.yaml:7: at index_url: expected a URL pattern containing {variant}",
    ]


def test_variant_aarch64_lists_and_own_sources_are_checked(tables):
    # arch_aarch64 is an arch list like arch; a variant's `also` names defined sources, and only next to the
    # variant's own `source` (otherwise it inherits the row's provenance, also included).
    old = 'arch_aarch64: ["8.0", "9.0", "10.0", "11.0", "12.0"], source: pt-wheel-2.11, also: [pt-pr-175567],'
    edit(tables, "torch", old, 'arch_aarch64: ["sm_80"], source: pt-wheel-2.11, also: [no-such-source],')
    edit(tables, "torch", '{name: cu116, cuda: "11.6",', '{name: cu116, cuda: "11.6", also: [pt-wheel-1.13],')
    found = problems(tables)
    line = line_of(tables, "torch", 'arch_aarch64: ["sm_80"]')
    row = _row_index(tables, "torch", 'version: "2.11"')
    at = f"torch.yaml:{line}: torch 2.11: at rows[{row}].variants[2]"
    line0 = line_of(tables, "torch", "also: [pt-wheel-1.13]")
    assert sorted(found) == sorted(
        [
            f'{at}.arch_aarch64: expected a list of arch entries like ["9.0", "12.0+PTX"], got [\'sm_80\']',
            f"{at}.also: source 'no-such-source' is not defined under sources",
            f"torch.yaml:{line0}: torch 1.13: at rows[0].variants[0].also: "
            "a variant's also needs the variant's own source",
        ]
    )


def test_torchvision_may_be_left_out(tables):
    edit(tables, "torch", '    torchvision: "0.14"\n', "")
    assert problems(tables) == []
    assert kn.load_knowledge(tables).torch_releases[0].torchvision is None


def test_python_experimental_loads_as_a_tuple_and_defaults_to_none(tables):
    torch = next(s for s in kn.SECTIONS if s.table == "torch")
    assert torch.above == (("python_experimental", "python_max"),)
    kb = kn.load_knowledge(tables)
    by_version = {r.version: r for r in kb.torch_releases}
    assert by_version["2.2"].python_experimental == ("3.12",)
    assert by_version["2.5"].python_experimental == ("3.13",)
    assert by_version["2.1"].python_experimental == ()  # absent: the dataclass default
    assert by_version["2.13"].python_experimental == ()  # 3.15 had no cp315 wheel
    edit(tables, "torch", 'python_experimental: ["3.13"]', 'python_experimental: ["3.13", "3.14"]')
    assert problems(tables) == []
    assert kn.load_knowledge(tables).torch_releases[6].python_experimental == ("3.13", "3.14")


def test_a_torch_release_built_by_hand_need_not_name_python_experimental():
    release = kn.torch_release("2.2")
    fields = {f: getattr(release, f) for f in release.__dataclass_fields__ if f != "python_experimental"}
    assert kn.TorchRelease(**fields).python_experimental == ()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('["3.12t"]', 'expected a list of quoted "X.Y" versions like ["3.13"], got [\'3.12t\']'),
        ("[3.12]", 'expected a list of quoted "X.Y" versions like ["3.13"], got [3.12]'),
        ('"3.12"', 'expected a list of quoted "X.Y" versions like ["3.13"], got \'3.12\''),
        ("[]", 'expected a list of quoted "X.Y" versions like ["3.13"], got []'),
        ('["3.11"]', "3.11 not above python_max 3.11"),
        ('["3.10", "3.12"]', "3.10 not above python_max 3.11"),
        ('["3.12", "3.12"]', "a version is listed twice"),
    ],
)
def test_python_experimental_must_name_pythons_above_python_max(tables, value, expected):
    # torch 2.2's line (2.3's is the same but for the torchvision that follows it)
    old = 'python_experimental: ["3.12"]  # RELEASE.md: "(3.12 experimental)"; the cp312 wheels exist\n'
    edit(tables, "torch", old + '    pypi_default: cu121\n    torchvision: "0.17"',
         old.replace('["3.12"]', value) + '    pypi_default: cu121\n    torchvision: "0.17"')  # fmt: skip
    line = line_of(tables, "torch", f"python_experimental: {value}")
    row = _row_index(tables, "torch", 'version: "2.2"')
    assert problems(tables) == [
        f"torch.yaml:{line}: torch 2.2: at rows[{row}].python_experimental: {expected}"
    ]


# --- NVLink wiring of the GPU catalogue ----------------------------------------------------------------

PCIE_WIRING = "    nvlink_links: 12\n    nvlink_unwired: [4, 5, 10, 11, 16, 17]\n"


def test_unwired_links_need_the_count_of_wired_ones(tables):
    edit(tables, "gpus", PCIE_WIRING, "    nvlink_unwired: [4, 5, 10, 11, 16, 17]\n")
    line = line_of(tables, "gpus", "nvlink_unwired: [4, 5")
    index = _row_index(tables, "gpus", "key: h100-pcie")
    assert problems(tables) == [
        f"gpus.yaml:{line}: NVIDIA H100 PCIe: at rows[{index}].nvlink_unwired: "
        "nvlink_unwired needs nvlink_links (above 0)"
    ]


def test_unwired_links_lie_among_the_numbered_ones(tables):
    edit(tables, "gpus", PCIE_WIRING, "    nvlink_links: 6\n    nvlink_unwired: [4, 5, 10, 11, 16, 17]\n")
    line = line_of(tables, "gpus", "nvlink_unwired: [4, 5")
    index = _row_index(tables, "gpus", "key: h100-pcie")
    assert problems(tables) == [
        f"gpus.yaml:{line}: NVIDIA H100 PCIe: at rows[{index}].nvlink_unwired: links [16, 17] lie beyond the "
        "12 links NVML numbers (nvlink_links 6 plus these)"
    ]


@pytest.mark.parametrize(
    ("wiring", "expected"),
    [
        ("    nvlink_links: 19\n", "nvlink_links: expected a number of NVLink links from 0 to 18, got 19"),
        (
            "    nvlink_links: 12\n    nvlink_unwired: [4, 4]\n",
            "nvlink_unwired: expected a list of distinct NVLink link numbers from 0 to 17, got [4, 4]",
        ),
        (
            "    nvlink_links: 12\n    nvlink_unwired: [18]\n",
            "nvlink_unwired: expected a list of distinct NVLink link numbers from 0 to 17, got [18]",
        ),
    ],
)
def test_nvlink_wiring_kinds(tables, wiring, expected):
    edit(tables, "gpus", PCIE_WIRING, wiring)
    found = problems(tables)
    assert len(found) == 1 and found[0].endswith(expected), found


def test_a_peak_of_the_wrong_kind_is_rejected(tables):
    tail = '    fp8: true\n    mig_max_instances: 7\n    mig_min_driver: "550.90.07"'
    edit(tables, "gpus", "    fp8_tflops: 1979\n" + tail, '    fp8_tflops: "1979"\n' + tail)
    found = problems(tables)
    assert len(found) == 1 and "NVIDIA H200 SXM5: at rows[" in found[0], found
    assert "].fp8_tflops: expected a number, got '1979'" in found[0]


def test_an_fp8_peak_needs_fp8(tables):
    index = _row_index(tables, "gpus", "key: l4\n")
    edit(tables, "gpus", "    fp8_tflops: 242\n    fp8: true\n", "    fp8_tflops: 242\n    fp8: false\n")
    line = line_of(tables, "gpus", "fp8_tflops: 242")
    assert problems(tables) == [
        f"gpus.yaml:{line}: NVIDIA L4: at rows[{index}].fp8_tflops: fp8_tflops is set only where fp8 is true"
    ]
