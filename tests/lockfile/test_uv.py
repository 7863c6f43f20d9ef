"""lockfile/uv.py on a uv.lock written by the real `uv lock` (conftest.generated): a universal lock with
torch +cu124 for Linux and an untagged CPU torch for macOS."""

from __future__ import annotations

import pytest

from gpudoctor.lockfile.model import LockError
from gpudoctor.lockfile.target import target
from gpudoctor.lockfile.uv import parse

from .conftest import DATA

CUDA_REQUIRES = [
    "filelock==3.16.1",
    "nvidia-cuda-runtime-cu12==12.4.127",
    "nvidia-cudnn-cu12==9.1.0.70",
    "nvidia-nccl-cu12==2.21.5",
]


def read(generated, *t):
    path = generated["uv.lock"]
    return parse(path.read_text(), str(path), target(*t))


def test_linux_x86_64_gets_the_cuda_torch_and_its_nvidia_wheels(generated):
    lock = read(generated, "linux", "x86_64", "3.11")
    assert lock.format == "uv.lock" and lock.requires_python == ">=3.10"
    torch = [p for p in lock.pins if p.name == "torch"]
    assert len(torch) == 1
    assert torch[0].version == "2.5.1+cu124"
    assert torch[0].index == generated["cu124"]
    assert torch[0].requires == CUDA_REQUIRES
    assert [p.name for p in lock.pins] == [r.split("==")[0] for r in CUDA_REQUIRES] + ["torch"]
    assert "app 0.1.0: the locked project itself (virtual source), not a dependency" in lock.skipped
    assert (
        "torch 2.5.1: its resolution markers (sys_platform == 'darwin') do not hold on "
        "linux x86_64 Python 3.11" in lock.skipped
    )


def test_aarch64_linux_gets_no_nvidia_wheels(generated):
    lock = read(generated, "linux", "aarch64", "")
    torch = next(p for p in lock.pins if p.name == "torch")
    assert torch.version == "2.5.1+cu124" and torch.requires == ["filelock==3.16.1"]
    assert not any(p.name.startswith("nvidia-") for p in lock.pins)
    assert (
        "nvidia-cudnn-cu12 9.1.0.70: not installed on linux aarch64: "
        "nothing that is required there requires it" in lock.skipped
    )


def test_macos_gets_the_cpu_index_torch_tagged_with_its_variant(generated):
    lock = read(generated, "darwin", "arm64", "3.12")
    torch = next(p for p in lock.pins if p.name == "torch")
    assert torch.version == "2.5.1+cpu"  # the lock says 2.5.1; the index is /whl/cpu
    assert torch.index == generated["cpu"]


def test_another_toml_lock_is_refused(generated):
    with pytest.raises(LockError, match="not a uv.lock"):
        parse(generated["pylock.toml"].read_text(), "uv.lock", target("linux", "x86_64", ""))


def test_a_dependency_with_an_unreadable_marker_is_skipped_with_why(generated):
    text = (
        generated["uv.lock"]
        .read_text()
        .replace("marker = \"platform_machine == 'x86_64'\"", 'marker = "platform_machine =="', 1)
    )
    lock = parse(text, "uv.lock", target("linux", "x86_64", "3.11"))
    assert any("marker not understood" in line for line in lock.skipped)
    assert len([p for p in lock.pins if p.name.startswith("nvidia-")]) == 2


def test_conflicting_extras_are_judged_only_when_named(generated):
    path = generated["extras"]
    text, t = path.read_text(), target("linux", "x86_64", "3.11")
    lock = parse(text, str(path), t)
    assert lock.pins == []  # cpu and cu124 conflict: which one installs is the deployment's choice
    assert (
        "torch 2.5.1+cu124: installed only with the project's extra cu124, which conflicts with another: "
        "name the extra" in lock.skipped
    )
    cu124 = parse(text, str(path), t, extras=("cu124",))
    assert [(p.name, p.version) for p in cu124.pins] == [
        ("filelock", "3.16.1"),
        ("nvidia-cuda-runtime-cu12", "12.4.127"),
        ("nvidia-cudnn-cu12", "9.1.0.70"),
        ("nvidia-nccl-cu12", "2.21.5"),
        ("torch", "2.5.1+cu124"),
    ]
    cpu = parse(text, str(path), t, extras=("cpu",))
    assert [(p.name, p.version) for p in cpu.pins] == [("filelock", "3.16.1"), ("torch", "2.5.1+cpu")]


def test_no_extras_asked_for(generated):
    path = generated["extras"]
    lock = parse(path.read_text(), str(path), target("linux", "x86_64", "3.11"), extras=())
    assert lock.pins == []


def test_a_real_universal_lock():
    path = DATA / "tgi-2025-09-uv.lock"
    text = path.read_text()
    linux = parse(text, str(path), target("linux", "x86_64", "3.11"))
    torch = next(p for p in linux.pins if p.name == "torch")
    assert (torch.version, torch.index) == ("2.7.0+cu128", "https://download.pytorch.org/whl/cu128")
    assert (
        "nvidia-cuda-runtime-cu12==12.8.57" in torch.requires
        and "nvidia-cudnn-cu12==9.7.1.26" in torch.requires
    )
    assert "networkx==3.4.2" in torch.requires and "networkx==3.2.1" not in torch.requires  # Python 3.11
    assert any(
        line.startswith("text-generation-server 2.0.5.dev0: the locked project itself")
        for line in linux.skipped
    )
    assert any(line.startswith("torch 2.7.0: its resolution markers (") for line in linux.skipped)
    arm = parse(text, str(path), target("linux", "aarch64", "3.12"))
    torch = next(p for p in arm.pins if p.name == "torch")
    assert torch.version == "2.7.0+cu128" and not [r for r in torch.requires if r.startswith("nvidia-")]
    mac = parse(text, str(path), target("darwin", "arm64", "3.11"))
    assert [(p.version, p.index) for p in mac.pins if p.name == "torch"] == [
        ("2.7.0", "https://pypi.org/simple")
    ]
    # torch is in the project's `torch` extra, and its `kernels` dependency requires it anyway.
    assert "torch" in [
        p.name for p in parse(text, str(path), target("linux", "x86_64", "3.11"), extras=()).pins
    ]
