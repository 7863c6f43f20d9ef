"""lockfile/requirements.py on what `uv pip compile` and `uv export` write (conftest.generated)."""

from __future__ import annotations

import pytest

from gpudoctor.lockfile.model import LockError, Pin
from gpudoctor.lockfile.requirements import logical_lines, parse
from gpudoctor.lockfile.target import target

from .conftest import DATA

LINUX = target("linux", "x86_64", "3.11")


def read(path, t=LINUX):
    return parse(path.read_text(), str(path), t)


def test_compiled_against_the_cu124_index(generated):
    lock = read(generated["requirements-cu124.txt"])
    torch = next(p for p in lock.pins if p.name == "torch")
    assert torch == Pin(
        "torch",
        "2.5.1+cu124",
        generated["cu124"],  # its "# from" annotation
        [
            "filelock==3.16.1",
            "nvidia-cuda-runtime-cu12==12.4.127",
            "nvidia-cudnn-cu12==9.1.0.70",
            "nvidia-nccl-cu12==2.21.5",
        ],  # the "# via torch" notes
    )
    assert lock.skipped == []


def test_an_untagged_pin_gets_the_variant_of_its_index(generated):
    lock = read(generated["requirements-cpu.txt"])
    torch = next(p for p in lock.pins if p.name == "torch")
    assert torch.version == "2.5.1+cpu" and torch.index == generated["cpu"]
    assert torch.requires == ["filelock==3.16.1"]  # "filelock==3.16.1  # via torch" (--annotation-style line)


def test_uv_export_markers_choose_one_torch(generated):
    lock = read(generated["requirements-export.txt"])
    assert [p.version for p in lock.pins if p.name == "torch"] == ["2.5.1+cu124"]
    mac = read(generated["requirements-export.txt"], target("darwin", "arm64", "3.12"))
    assert [(p.name, p.version) for p in mac.pins] == [("filelock", "3.16.1"), ("torch", "2.5.1")]
    assert any(line.startswith("line ") and "nvidia-cudnn-cu12: its marker" in line for line in mac.skipped)


def test_an_extra_index_names_the_variant_of_an_untagged_torch():
    # Lines 10, 11 and 13 of Clay-foundation/model@bc68f61149d95a099b133bf1b8d6c21d3063a983:environment.yml's
    # pip: list, where the tag was commented out.
    text = "--extra-index-url https://download.pytorch.org/whl/cu121\ntorch==2.4.0 #+cu121\neinops~=0.7.0\n"
    lock = parse(text, "requirements.txt", LINUX)
    assert lock.pins == [
        Pin("torch", "2.4.0+cu121", "https://download.pytorch.org/whl/cu121", []),
    ]
    assert lock.skipped == ["line 3: einops~=0.7.0: not pinned to one version"]


def test_options_and_references_that_pin_nothing_are_listed():
    # Lines of facebookresearch/dinov2@0a6c16f8:conda.yaml's pip: list.
    text = "git+https://github.com/facebookincubator/submitit\n-r base.txt\ncuml-cu11\n"
    lock = parse(text, "requirements.txt", LINUX)
    assert lock.pins == []
    assert lock.skipped[1] == "line 2: -r base.txt: not followed (only pins in this file are judged)"
    assert lock.skipped[2] == "line 3: cuml-cu11: not pinned to one version"
    assert lock.skipped[0].startswith(
        "line 1: git+https://github.com/facebookincubator/submitit: not a requirement"
    )


def test_continuations_are_joined():
    assert logical_lines("a==1 \\\n    --hash=sha256:00\nb==2\n") == [
        (1, "a==1 --hash=sha256:00"),
        (3, "b==2"),
    ]


def test_text_that_is_no_requirement_at_all_is_refused():
    text = (DATA / "SOURCES.md").read_text()  # prose and a table
    with pytest.raises(LockError) as e:
        parse(text, "notes.txt", LINUX)
    assert e.value.reason.startswith("notes.txt: not a requirements file (line 3: The uv.lock, ")
