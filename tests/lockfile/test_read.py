"""lockfile/read.py: the format from the name or the content, and what is refused."""

from __future__ import annotations

import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpudoctor.lockfile import LockError, read_lock
from gpudoctor.lockfile.read import format_of

from .conftest import DATA
from conftest import ROOT


@pytest.mark.parametrize(
    "name, fmt",
    [
        ("uv.lock", "uv.lock"),
        ("pylock.toml", "pylock.toml"),
        ("requirements-cu124.txt", "requirements.txt"),
        ("requirements-export.txt", "requirements.txt"),
    ],
)
def test_generated_files_by_name_and_by_content(generated, tmp_path, name, fmt):
    assert read_lock(str(generated[name]), machine="x86_64").format == fmt
    renamed = tmp_path / "lockfile"  # a name that says nothing: the content decides
    shutil.copy(generated[name], renamed)
    assert format_of(str(renamed), renamed.read_text()) == fmt


@pytest.mark.parametrize(
    "name, fmt",
    [
        ("tgi-2023-11-poetry.lock", "poetry.lock"),
        ("clay-environment.yml", "environment.yml"),
        ("dinov2-conda.yaml", "environment.yml"),
        ("clay-conda-lock.yml", "conda-lock.yml"),
    ],
)
def test_real_files_by_content(name, fmt):
    path = DATA / name
    assert format_of(str(path), path.read_text()) == fmt
    assert read_lock(str(path), machine="x86_64", python="3.11").format == fmt


def test_an_unknown_file_is_refused_with_the_formats_named(tmp_path):
    path = tmp_path / "project.toml"  # gpudoctor's own pyproject.toml: TOML, but no lockfile
    shutil.copy(ROOT / "pyproject.toml", path)
    with pytest.raises(LockError) as e:
        read_lock(str(path), machine="x86_64")
    assert e.value.reason == (
        f"{path}: not a lockfile gpudoctor reads (uv.lock, poetry.lock, pylock.toml, requirements.txt, "
        "environment.yml, conda-lock.yml)"
    )


def test_malformed_and_empty_files_are_refused(generated, tmp_path):
    broken = tmp_path / "uv.lock"
    broken.write_text(generated["uv.lock"].read_text().replace("[[package]]", "[[package]", 1))
    with pytest.raises(LockError, match="is not valid TOML"):
        read_lock(str(broken), machine="x86_64")
    empty = tmp_path / "poetry.lock"
    empty.write_text("\n")
    with pytest.raises(LockError, match="empty"):
        read_lock(str(empty), machine="x86_64")


def test_a_huge_file_is_refused_before_it_is_parsed(tmp_path):
    path = tmp_path / "requirements.txt"
    with open(path, "wb") as f:
        f.truncate(33 * 1024 * 1024)
    with pytest.raises(LockError, match="larger than 32 MiB"):
        read_lock(str(path), machine="x86_64")


REAL = ["tgi-2023-11-poetry.lock", "clay-environment.yml", "dinov2-conda.yaml", "clay-conda-lock.yml"]
GENERATED = ["uv.lock", "pylock.toml", "requirements-cu124.txt"]


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.sampled_from(REAL + GENERATED),
    cut=st.integers(0, 400),
    drop=st.integers(0, 400),
    junk=st.text(max_size=12),
)
def test_any_damage_to_a_real_file_gives_a_lock_or_a_reason(generated, tmp_path, name, cut, drop, junk):
    """A real lockfile with one line dropped and junk put in another place is read or refused with a
    reason; it never raises anything else."""
    lines = (generated[name] if name in GENERATED else DATA / name).read_text().splitlines(keepends=True)
    if lines:
        lines.pop(drop % len(lines))
        at = cut % (len(lines) + 1)
        lines.insert(at, junk + "\n")
    path = tmp_path / name
    path.write_text("".join(lines))
    try:
        lock = read_lock(str(path), machine="x86_64", python="3.11")
    except LockError as e:
        assert e.reason and "\n" not in e.reason
    else:
        assert all(p.name and isinstance(p.requires, list) for p in lock.pins)
