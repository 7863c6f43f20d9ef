"""The explain-only entries (rules/explain/program_errors.yaml) and their strict loader."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from gpudoctor.engine.model import ErrorText
from gpudoctor.explain.entries import ID_PATTERN, Entry, EntryError, load_entries, shipped_path

GOOD = """\
entries:
  - id: GD-EXPLAIN-001
    title: Illegal memory access
    errors:
      - "CUDA error: an illegal memory access was encountered"
      - cudaErrorIllegalAddress
    meaning: "A kernel read or wrote
      memory it does not own."
    do:
      - Run again with CUDA_LAUNCH_BLOCKING=1.
      - "Find the faulty access: compute-sanitizer --tool memcheck python your_script.py"
    hardware_when: the kernel log shows an Xid 13 at the same time
    references:
      - https://docs.nvidia.com/compute-sanitizer/ComputeSanitizer/index.html
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "program_errors.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def problems(path: Path) -> list[str]:
    with pytest.raises(EntryError) as info:
        load_entries(path)
    return [str(p) for p in info.value.problems]


def test_the_shipped_entries_load() -> None:
    entries = load_entries()
    assert entries, "rules/explain/program_errors.yaml has no entry"
    assert shipped_path().name == "program_errors.yaml" and shipped_path().parent.name == "explain"
    ids = [e.id for e in entries]
    assert len(ids) == len(set(ids))
    for e in entries:
        assert ID_PATTERN.match(e.id)
        assert e.title and e.meaning and e.hardware_when
        assert e.errors and e.do and e.references
        assert all(r.startswith("https://") for r in e.references), e.id


def test_an_entry_is_read_into_a_frozen_dataclass(tmp_path) -> None:
    [entry] = load_entries(write(tmp_path, GOOD))
    assert entry == Entry(
        id="GD-EXPLAIN-001",
        title="Illegal memory access",
        errors=(
            ErrorText("CUDA error: an illegal memory access was encountered"),
            ErrorText("cudaErrorIllegalAddress"),
        ),
        meaning="A kernel read or wrote memory it does not own.",
        do=(
            "Run again with CUDA_LAUNCH_BLOCKING=1.",
            "Find the faulty access: compute-sanitizer --tool memcheck python your_script.py",
        ),
        hardware_when="the kernel log shows an Xid 13 at the same time",
        references=("https://docs.nvidia.com/compute-sanitizer/ComputeSanitizer/index.html",),
    )
    with pytest.raises(AttributeError):
        entry.id = "GD-EXPLAIN-002"  # type: ignore[misc]


def test_every_problem_is_listed_with_its_file_and_line(tmp_path) -> None:
    bad = GOOD.replace("    hardware_when: the kernel log shows an Xid 13 at the same time\n", "")
    bad = bad.replace(
        "    title: Illegal memory access\n", "    title: Illegal memory access\n    severity: error\n"
    )
    bad = bad.replace("      - cudaErrorIllegalAddress\n", "      - 42\n")
    path = write(tmp_path, bad)
    found = problems(path)
    assert len(found) == 3, found
    assert f"{path}:2: GD-EXPLAIN-001: missing required key 'hardware_when'" in found
    assert any(
        p.startswith(f"{path}:4: GD-EXPLAIN-001: at severity: unknown key (expected: id,") for p in found
    )
    assert (
        f"{path}:7: GD-EXPLAIN-001: at errors[1]: "
        "expected an error text, or a mapping with 'text' and 'source'" in found
    )


def test_ids_are_gd_explain_nnn_and_unique(tmp_path) -> None:
    second = GOOD.split("\n", 1)[1].replace("Illegal memory access", "Another")
    path = write(tmp_path, GOOD + second + second.replace("GD-EXPLAIN-001", "GD-EXPLAIN-1"))
    found = problems(path)
    assert any(":15: GD-EXPLAIN-001: at id: duplicate id (first used at line 2)" in p for p in found), found
    assert any("GD-EXPLAIN-1: at id: an explain entry's id looks like GD-EXPLAIN-001" in p for p in found)
    assert len(found) == 2, found


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("rules: []\n", "an explain file is a mapping with an 'entries' list"),
        ("entries: {}\n", "expected a list of entries"),
        ("entries: []\nextra: 1\n", "unknown top-level key (expected only 'entries')"),
        ("entries:\n  - just a string\n", "an entry must be a mapping"),
        ("entries: [\n", "not valid YAML"),
    ],
)
def test_the_file_shape_is_checked(tmp_path, text: str, message: str) -> None:
    assert any(message in p for p in problems(write(tmp_path, text)))


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("    title: Illegal memory access\n", "    title: ''\n", "at title: expected a non-empty string"),
        ("    title: Illegal memory access\n", "    title: [a]\n", "at title: expected a non-empty string"),
        (
            "    references:\n      - https://docs.nvidia.com/compute-sanitizer/ComputeSanitizer/index.html\n",
            "    references: []\n",
            "at references: expected a non-empty list of strings",
        ),
        ("    do:\n", "    do: Run it again\n    old_do:\n", "at do: expected a non-empty list of strings"),
    ],
)
def test_fields_are_checked(tmp_path, old: str, new: str, message: str) -> None:
    assert old in GOOD
    assert any(message in p for p in problems(write(tmp_path, GOOD.replace(old, new))))


def test_a_missing_file_is_an_entry_error(tmp_path) -> None:
    [problem] = problems(tmp_path / "nope.yaml")
    assert problem.startswith(f"{tmp_path / 'nope.yaml'}:0: cannot read:")
