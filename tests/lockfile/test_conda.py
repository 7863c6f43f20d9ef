"""lockfile/conda.py on real environment.yml and conda-lock.yml files (data/SOURCES.md)."""

from __future__ import annotations

import pytest

from gpudoctor.lockfile.conda import match_spec, parse_conda_lock, parse_environment, torch_variant
from gpudoctor.lockfile.model import LockError, Pin
from gpudoctor.lockfile.target import target

from .conftest import DATA

LINUX = target("linux", "x86_64", "")


def test_pytorch_with_pytorch_cuda_is_a_cuda_torch():
    path = DATA / "dinov2-conda.yaml"
    lock = parse_environment(path.read_text(), str(path), LINUX)
    assert lock.format == "environment.yml" and lock.requires_python == "==3.9"
    assert Pin("torch", "2.0.0+cu117", "pytorch", []) in lock.pins
    assert Pin("pytorch-cuda", "11.7.0", "pytorch", []) in lock.pins
    assert "omegaconf: not pinned to one version" in lock.skipped
    assert "pip: line 3: cuml-cu11: not pinned to one version" in lock.skipped


def test_an_exported_environment_with_the_pytorch_channels_cuda_build():
    path = DATA / "streamer-sales-environment.yml"
    lock = parse_environment(path.read_text(), str(path), LINUX)
    assert lock.requires_python == "==3.10.14"
    torch = next(p for p in lock.pins if p.name == "torch")
    # py3.10_cuda12.1_cudnn8.9.2_0; the nvidia-* wheels of its pip: list are not what conda's torch uses.
    assert torch == Pin("torch", "2.1.2+cu121", "pytorch", [])
    assert Pin("nvidia-cuda-runtime-cu12", "12.5.39", "", []) in lock.pins
    assert lock.skipped == []


def test_the_pip_list_with_its_extra_index():
    path = DATA / "clay-environment.yml"
    lock = parse_environment(path.read_text(), str(path), LINUX)
    torch = next(p for p in lock.pins if p.name == "torch")
    assert torch == Pin("torch", "2.4.0+cu121", "https://download.pytorch.org/whl/cu121", [])
    assert lock.requires_python == "==3.11"


def test_conda_lock_keeps_the_target_platform():
    path = DATA / "clay-conda-lock.yml"
    lock = parse_conda_lock(path.read_text(), str(path), LINUX)
    assert lock.format == "conda-lock.yml" and lock.requires_python.startswith("==3.11")
    torch = next(p for p in lock.pins if p.name == "torch")
    assert torch.version == "2.1.2+cu120"  # conda-forge's build cuda120_py311h2667f23_304
    assert torch.index == "https://conda.anaconda.org/conda-forge"
    assert "cuda-version==12.5" in torch.requires and "cudnn==8.9.7.29" in torch.requires
    assert {p.name for p in lock.pins} == {
        "cuda-cudart", "cuda-version", "cudnn", "filelock", "libtorch", "nccl", "torch", "typing-extensions",
    }  # fmt: skip
    assert any(line.startswith("pytorch 2.1.2: for osx-arm64, not linux-64") for line in lock.skipped)
    mac = parse_conda_lock(path.read_text(), str(path), target("darwin", "arm64", ""))
    # conda-forge builds for macOS: cpu_generic_py311hc35e6e7_4
    assert next(p for p in mac.pins if p.name == "torch").version == "2.1.2+cpu"


def test_a_platform_conda_does_not_lock_for_is_refused():
    path = DATA / "clay-conda-lock.yml"
    with pytest.raises(LockError, match="no conda platform for linux riscv64"):
        parse_conda_lock(path.read_text(), str(path), target("linux", "riscv64", ""))


@pytest.mark.parametrize(
    "build, pins, tag",
    [
        ("cuda120_py311h2667f23_304", {}, "cu120"),  # clay-conda-lock.yml
        ("py3.10_cuda12.1_cudnn8.9.2_0", {}, "cu121"),  # streamer-sales-environment.yml
        ("py3.8_cpu_0", {"pytorch-cuda": "12.1"}, "cpu"),  # the build wins over pytorch-cuda
        ("", {"pytorch-cuda": "11.7.0"}, "cu117"),  # dinov2-conda.yaml
        ("", {"cpuonly": "2.0"}, "cpu"),
        ("", {}, ""),
    ],
)
def test_torch_variant(build, pins, tag):
    assert torch_variant(build, pins) == tag


def test_match_spec():
    assert match_spec("pytorch::pytorch=2.0.0") == ("pytorch", "pytorch", "2.0.0", "")
    assert match_spec("pytorch==2.1.2=py3.10_cuda12.1_cudnn8.9.2_0") == (
        "", "pytorch", "2.1.2", "py3.10_cuda12.1_cudnn8.9.2_0",
    )  # fmt: skip
    assert match_spec("pytorch~=2.3.1 *cuda12*") is None  # Clay-foundation/model@436d304c:environment.yml:16
    assert match_spec("omegaconf") is None


def test_not_a_conda_file():
    lock_text, env_text = (DATA / "clay-conda-lock.yml").read_text(), (DATA / "dinov2-conda.yaml").read_text()
    with pytest.raises(LockError, match="not a conda environment file"):
        parse_environment(lock_text, "environment.yml", LINUX)
    with pytest.raises(LockError, match="not a conda-lock file"):
        parse_conda_lock(env_text, "conda-lock.yml", LINUX)
    with pytest.raises(LockError, match="not valid YAML"):
        parse_environment(env_text.replace("  - pip:", "  - pip: ["), "environment.yml", LINUX)
