"""lockfile/poetry.py on real poetry.lock files (data/SOURCES.md)."""

from __future__ import annotations

import pytest

from gpudoctor.lockfile.model import LockError
from gpudoctor.lockfile.poetry import _python_allows, parse
from gpudoctor.lockfile.target import target

from .conftest import DATA


def read(name, *t, extras=None):
    path = DATA / name
    return parse(path.read_text(), str(path), target(*t), extras)


def test_torch_from_a_cu118_source():
    lock = read("tgi-2023-11-poetry.lock", "linux", "x86_64", "3.10")
    assert lock.format == "poetry.lock" and lock.requires_python == ">=3.9,<3.13"
    torch = next(p for p in lock.pins if p.name == "torch")
    assert torch.version == "2.0.1+cu118"
    assert torch.index == "https://download.pytorch.org/whl/cu118"
    assert torch.requires == [
        "filelock==3.12.4",
        "jinja2==3.1.2",
        "networkx==3.1",
        "sympy==1.12",
        "triton==2.0.0",
        "typing-extensions==4.8.0",
    ]


def test_triton_requirement_follows_its_marker():
    lock = read("tgi-2023-11-poetry.lock", "linux", "aarch64", "3.10")
    torch = next(p for p in lock.pins if p.name == "torch")
    assert "triton==2.0.0" not in torch.requires


def test_torch_from_the_default_index_requires_the_nvidia_wheels_on_linux_x86_64():
    lock = read("tgi-2025-01-poetry.lock", "linux", "x86_64", "3.11")
    torch = next(p for p in lock.pins if p.name == "torch")
    assert torch.version == "2.5.1" and torch.index == ""
    assert "nvidia-cuda-runtime-cu12==12.4.127" in torch.requires
    assert "nvidia-cudnn-cu12==9.1.0.70" in torch.requires
    assert "setuptools==75.2.0" not in torch.requires  # python_version >= "3.12"
    arm = next(
        p for p in read("tgi-2025-01-poetry.lock", "linux", "aarch64", "3.11").pins if p.name == "torch"
    )
    assert not [r for r in arm.requires if r.startswith("nvidia-")]


def test_one_wheel_url_per_python_picks_the_target_python():
    lock = read("tgi-2025-01-poetry.lock", "linux", "x86_64", "3.11")
    kernels = [p for p in lock.pins if p.name == "attention-kernels"]
    assert len(kernels) == 1 and "cp311-cp311-linux_x86_64" in kernels[0].index
    assert (
        "attention-kernels 0.1.1: wheel attention_kernels-0.1.1+cu123torch2.4-cp310-cp310-linux_x86_64.whl "
        "is for Python cp310, not 3.11" in lock.skipped
    )
    unknown = read("tgi-2025-01-poetry.lock", "linux", "x86_64", "")
    assert any("another entry for attention-kernels" in line for line in unknown.skipped)


def test_optional_packages_follow_the_extras_asked_for():
    # torch is optional in text-generation-inference's server lock: the `torch` extra installs it.
    none = read("tgi-2025-01-poetry.lock", "linux", "x86_64", "3.11", extras=())
    assert [p.name for p in none.pins] == ["filelock", "fsspec", "setuptools", "typing-extensions"]
    assert (
        "torch 2.5.1: optional, and no extra asked for requires it (poetry install -E torch)" in none.skipped
    )
    torch = read("tgi-2025-01-poetry.lock", "linux", "x86_64", "3.11", extras=("torch",))
    assert "torch" in [p.name for p in torch.pins] and "nvidia-cudnn-cu12" in [p.name for p in torch.pins]
    assert "attention-kernels" not in [p.name for p in torch.pins]
    # attention-kernels requires torch: asking for the `attention` extra installs both.
    attention = read("tgi-2025-01-poetry.lock", "linux", "x86_64", "3.11", extras=("attention",))
    assert {"attention-kernels", "torch", "nvidia-cuda-runtime-cu12"} <= {p.name for p in attention.pins}


def test_not_a_poetry_lock(generated):
    with pytest.raises(LockError, match="not a poetry.lock"):
        parse(generated["uv.lock"].read_text(), "poetry.lock", target("linux", "x86_64", ""))


@pytest.mark.parametrize(
    "constraint, python, allowed",
    [
        (">=3.9,<3.13", "3.11", True),
        (">=3.9,<3.13", "3.13", False),
        ("^3.8", "3.12", True),
        ("3.10", "3.11", False),
    ],
)
def test_python_constraints(constraint, python, allowed):
    assert _python_allows(constraint, python) == allowed
