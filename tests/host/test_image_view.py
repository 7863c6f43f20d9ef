"""An image as this host would run it: the image's environment, files, Python and loader cache; the host's
kernel, NVML and driver libraries; nothing of the image run."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from gpudoctor.host import ldconfig_text
from gpudoctor.host.base import NOT_FOUND, HostError
from gpudoctor.host.image_view import NOT_STARTED, ImageHost

from conftest import H200


def _view(**fields):
    """An image as gpudoctor.image reads one: a CUDA 12.4 runtime image with cuDNN 9 in its loader cache."""
    python = json.loads((H200 / "python.json").read_text())["/opt/torch/.venv/bin/python3"]
    base = dict(
        ref="train.tar",
        digest="sha256:" + "ab" * 32,
        os="linux",
        arch="amd64",
        variant="",
        env={
            "PATH": "/opt/torch/.venv/bin:/usr/bin",
            "NVIDIA_REQUIRE_CUDA": "cuda>=12.4",
            "CUDA_VERSION": "12.4.1",
        },
        entrypoint=["python"],
        cmd=["train.py"],
        files={
            "/etc/os-release": 'NAME="Ubuntu"\nVERSION_ID="22.04"\n',
            "/usr/local/cuda-12.4/version.json": "{}",
        },
        links={"/usr/local/cuda": "cuda-12.4"},
        libraries=["/usr/lib/x86_64-linux-gnu/libcudnn.so.9.1.0"],
        ld_cache=[("libcudnn.so.9", "libc6,x86-64", "/usr/lib/x86_64-linux-gnu/libcudnn.so.9")],
        pythons=[python],
        layers=3,
    )
    base.update(fields)
    return SimpleNamespace(**base)


def test_the_image_answers_for_its_environment_files_and_python(h200_host):
    host = ImageHost(h200_host, _view())
    assert host.env("NVIDIA_REQUIRE_CUDA") == "cuda>=12.4"
    assert host.env("HOME") is None  # the user's shell is not the container's
    assert host.env_names("NVIDIA_") == ["NVIDIA_REQUIRE_CUDA"]
    assert host.read("/etc/os-release").startswith('NAME="Ubuntu"')
    with pytest.raises(HostError) as e:
        host.read("/usr/include/cudnn_version.h")
    assert e.value.reason == NOT_FOUND
    assert host.python_targets() == [("/opt/torch/.venv/bin/python3", "--image")]
    assert host.python()["executable"] == "/opt/torch/.venv/bin/python3"
    assert host.listdir("/usr/local") == ["cuda", "cuda-12.4"]


def test_the_host_answers_for_its_kernel_and_nvml(h200_host):
    host = ImageHost(h200_host, _view())
    assert host.read("/proc/driver/nvidia/version") == h200_host.read("/proc/driver/nvidia/version")
    assert host.nvml("nvmlSystemGetDriverVersion") == h200_host.nvml("nvmlSystemGetDriverVersion")


def test_the_loader_cache_is_the_images_with_the_hosts_driver_libraries(h200_host):
    """What the toolkit's ldconfig in a started container lists: the image's libraries, then the driver's
    (libcuda, libnvidia-*) mounted from the host; not the host's cuDNN or CUDA runtime."""
    result = ImageHost(h200_host, _view()).run(("ldconfig", "-p"))
    entries = ldconfig_text.entries(result.stdout)
    assert result.rc == 0
    assert entries[0] == ("libcudnn.so.9", "libc6,x86-64", "/usr/lib/x86_64-linux-gnu/libcudnn.so.9")
    names = {soname for soname, _f, _p in entries}
    assert {"libcuda.so.1", "libnvidia-ml.so.1"} <= names
    assert not [p for _s, _f, p in entries[1:] if "cudnn" in p or "libcudart" in p]


def test_nothing_of_the_image_runs(h200_host):
    host = ImageHost(h200_host, _view())
    for argv in (("nvcc", "--version"), ("/usr/local/cuda/bin/nvcc", "--version"), ("gcc", "--version")):
        with pytest.raises(HostError) as e:
            host.run(argv)
        assert e.value.reason == NOT_STARTED
    with pytest.raises(HostError):
        host.framework_runtime("/opt/torch/.venv/bin/python3", "torch")


def test_an_image_without_python_says_so(h200_host):
    host = ImageHost(h200_host, _view(pythons=[]))
    assert host.python_targets() == []
    with pytest.raises(HostError) as e:
        host.python()
    assert e.value.reason == "no Python environment in the image"
