"""lockfile/pylock.py on the pylock.toml `uv export --format pylock.toml` writes (conftest.generated)."""

from __future__ import annotations

import pytest

from gpudoctor.lockfile.model import LockError
from gpudoctor.lockfile.pylock import parse
from gpudoctor.lockfile.target import target


def read(generated, *t):
    path = generated["pylock.toml"]
    return parse(path.read_text(), str(path), target(*t))


def test_markers_choose_the_linux_torch_and_it_gets_the_nvidia_pins(generated):
    lock = read(generated, "linux", "x86_64", "3.11")
    assert lock.format == "pylock.toml" and lock.requires_python == ">=3.10"
    torch = next(p for p in lock.pins if p.name == "torch")
    assert torch.version == "2.5.1+cu124" and torch.index == generated["cu124"]
    # uv writes no dependency edges: the lock's nvidia-* pins stand in for torch's requirements.
    assert torch.requires == [
        "nvidia-cuda-runtime-cu12==12.4.127",
        "nvidia-cudnn-cu12==9.1.0.70",
        "nvidia-nccl-cu12==2.21.5",
    ]
    assert "torch 2.5.1: its marker (sys_platform == 'darwin') does not hold on linux x86_64" in lock.skipped


def test_macos_torch_from_the_cpu_index_is_a_cpu_build(generated):
    lock = read(generated, "darwin", "arm64", "")
    assert [(p.name, p.version) for p in lock.pins] == [("filelock", "3.16.1"), ("torch", "2.5.1+cpu")]
    assert lock.pins[1].requires == []


def test_another_lock_version_or_format_is_refused(generated):
    text = generated["pylock.toml"].read_text()
    assert 'lock-version = "1.0"' in text
    with pytest.raises(LockError, match="lock-version 2.0"):
        parse(
            text.replace('lock-version = "1.0"', 'lock-version = "2.0"'),
            "pylock.toml",
            target("linux", "x86_64", ""),
        )
    with pytest.raises(LockError, match="no lock-version"):
        parse(generated["uv.lock"].read_text(), "pylock.toml", target("linux", "x86_64", ""))
