"""lockfile/model.py: names, the size cap, the variant an index URL names, the Lock's final shape."""

from __future__ import annotations

import shutil
import sys

import pytest

from gpudoctor.lockfile.model import (
    MAX_BYTES,
    LockError,
    Pin,
    finish,
    index_variant,
    load_toml,
    normalise,
    nvidia_requires,
    read_text,
    with_variant,
)


def test_normalise_is_pep_503():
    assert normalise("Typing_Extensions") == "typing-extensions"
    assert normalise("backports.tarfile") == "backports-tarfile"
    assert normalise("nvidia-cuda-runtime-cu12") == "nvidia-cuda-runtime-cu12"


@pytest.mark.parametrize(
    "url, variant",
    [
        ("http://127.0.0.1:8000/whl/cu124", "cu124"),
        ("http://127.0.0.1:8000/whl/cu124/", "cu124"),
        ("http://127.0.0.1:8000/whl/cpu", "cpu"),
        ("http://127.0.0.1:8000/whl/rocm6.2", "rocm6.2"),
        ("http://127.0.0.1:8000/whl/nightly/cu128", "cu128"),
        ("http://127.0.0.1:8000/simple", ""),
        ("http://127.0.0.1:8000/cu124", ""),  # not under /whl/
        ("http://127.0.0.1:8000/whl/torch_stable.html", ""),
        ("", ""),
    ],
)
def test_index_variant(url, variant):
    assert index_variant(url) == variant


def test_with_variant_tags_only_untagged_variant_built_pins():
    cu = "http://127.0.0.1:8000/whl/cu124"
    assert with_variant("torch", "2.5.1", cu) == "2.5.1+cu124"
    assert with_variant("torchvision", "0.20.1", cu) == "0.20.1+cu124"
    assert with_variant("torch", "2.5.1+cu121", cu) == "2.5.1+cu121"  # the pin's own tag wins
    assert with_variant("filelock", "3.16.1", cu) == "3.16.1"  # the same wheel on every index
    assert with_variant("torch", "2.5.1", "http://127.0.0.1:8000/simple") == "2.5.1"


def test_read_text_refuses_a_huge_file(tmp_path):
    big = tmp_path / "uv.lock"
    with open(big, "wb") as f:
        f.truncate(MAX_BYTES + 1)  # sparse: nothing is written
    with pytest.raises(LockError) as e:
        read_text(str(big))
    assert e.value.reason == f"{big}: larger than 32 MiB; a lockfile is not"


def test_read_text_refuses_binary_and_missing_files(tmp_path):
    binary = tmp_path / "poetry.lock"
    shutil.copy(sys.executable, binary)  # an executable: not text
    with pytest.raises(LockError, match="not UTF-8 text"):
        read_text(str(binary))
    with pytest.raises(LockError, match="cannot be read"):
        read_text(str(tmp_path / "absent.lock"))
    with pytest.raises(LockError, match="not a regular file|cannot be read"):
        read_text(str(tmp_path))


def test_load_toml_error_is_one_line(generated):
    text = generated["uv.lock"].read_text().replace("[[package]]", "[[package]", 1)
    with pytest.raises(LockError) as e:
        load_toml(text, "uv.lock")
    assert e.value.reason.startswith("uv.lock is not valid TOML: ")
    assert "\n" not in e.value.reason


def test_finish_keeps_one_pin_per_name_and_gives_untagged_torch_the_nvidia_pins():
    # The versions of torch 2.5.1's CUDA 12.4 requirements (tgi-2025-01-poetry.lock).
    pins = [
        Pin("torch", "2.5.1", "", []),
        Pin("nvidia-cudnn-cu12", "9.1.0.70", "", []),
        Pin("nvidia-cuda-runtime-cu12", "12.4.127", "", []),
        Pin("torch", "2.5.1+cpu", "", []),
    ]
    lock = finish("pylock.toml", "pylock.toml", "", pins, [])
    assert [p.name for p in lock.pins] == ["nvidia-cuda-runtime-cu12", "nvidia-cudnn-cu12", "torch"]
    assert lock.pins[2] == Pin(
        "torch", "2.5.1", "", ["nvidia-cuda-runtime-cu12==12.4.127", "nvidia-cudnn-cu12==9.1.0.70"]
    )
    assert lock.skipped == [
        "torch 2.5.1+cpu: another entry for torch (2.5.1) applies too; the first is judged "
        "(name the Python to tell them apart)"
    ]


def test_a_cpu_torch_is_not_given_nvidia_pins():
    pins = [Pin("torch", "2.5.1+cpu", "", []), Pin("nvidia-nccl-cu12", "2.21.5", "", [])]
    assert finish("p", "pylock.toml", "", pins, []).pins[1].requires == []
    assert nvidia_requires(pins) == ["nvidia-nccl-cu12==2.21.5"]
