"""lockfile/inspection.py: a Lock as the Python probe's dump, judged by the probe's own framework readers."""

from __future__ import annotations

from gpudoctor.host.pyinspect import inspect
from gpudoctor.lockfile import as_inspection, read_lock
from gpudoctor.probes.python_env import frameworks, installer

from .conftest import DATA


def test_the_dump_has_the_keys_of_a_real_inspection(generated):
    lock = read_lock(str(generated["uv.lock"]), machine="x86_64", python="3.11")
    dump = as_inspection(lock, machine="x86_64", python="3.11")
    assert set(dump) == set(inspect())
    assert dump["executable"] == f"lockfile {generated['uv.lock']}"
    assert (dump["version"], dump["platform"], dump["machine"], dump["conda_meta"]) == (
        "3.11",
        "linux",
        "x86_64",
        False,
    )
    assert dump["all"] == {
        "filelock": "3.16.1",
        "nvidia-cuda-runtime-cu12": "12.4.127",
        "nvidia-cudnn-cu12": "9.1.0.70",
        "nvidia-nccl-cu12": "2.21.5",
        "torch": "2.5.1+cu124",
    }
    assert [d["name"] for d in dump["distributions"]] == [
        "nvidia-cuda-runtime-cu12", "nvidia-cudnn-cu12", "nvidia-nccl-cu12", "torch",
    ]  # fmt: skip
    assert {d["installer"] for d in dump["distributions"]} == {"uv"} and installer(dump) == "uv"


def test_a_cu124_lock_is_a_cuda_12_4_torch(generated):
    for name in ("uv.lock", "pylock.toml", "requirements-cu124.txt", "requirements-export.txt"):
        lock = read_lock(str(generated[name]), machine="x86_64", python="3.11")
        assert frameworks(as_inspection(lock, machine="x86_64")) == [
            {"build": "cuda", "cuda": "12.4", "cudnn": "9.1.0.70", "name": "torch", "distribution": "torch",
             "version": "2.5.1"},
        ], name  # fmt: skip


def test_a_cpu_lock_is_a_cpu_torch(generated):
    lock = read_lock(str(generated["requirements-cpu.txt"]), machine="x86_64", python="3.11")
    assert frameworks(as_inspection(lock, machine="x86_64")) == [
        {"build": "cpu", "name": "torch", "distribution": "torch", "version": "2.5.1"}
    ]
    mac = read_lock(str(generated["uv.lock"]), platform="darwin", machine="arm64")
    assert frameworks(as_inspection(mac, machine="arm64"))[0]["build"] == "cpu"


def test_real_locks_judged():
    def judge(name, **kw):
        lock = read_lock(str(DATA / name), machine="x86_64", **kw)
        return frameworks(as_inspection(lock, machine="x86_64"))[0]

    assert judge("tgi-2023-11-poetry.lock") == {
        "build": "cuda", "cuda": "11.8", "cudnn": None, "name": "torch", "distribution": "torch",
        "version": "2.0.1",
    }  # fmt: skip
    # torch 2.5.1 from the default index: its CUDA is read from the nvidia-cuda-runtime-cu12 it requires.
    assert judge("tgi-2025-01-poetry.lock", python="3.11") == {
        "build": "cuda", "cuda": "12.4", "cudnn": "9.1.0.70", "name": "torch", "distribution": "torch",
        "version": "2.5.1",
    }  # fmt: skip
    assert judge("tgi-2025-09-uv.lock", python="3.11") == {
        "build": "cuda", "cuda": "12.8", "cudnn": "9.7.1.26", "name": "torch", "distribution": "torch",
        "version": "2.7.0",
    }  # fmt: skip
    assert judge("dinov2-conda.yaml")["cuda"] == "11.7"
    assert judge("clay-environment.yml")["cuda"] == "12.1"
    assert judge("streamer-sales-environment.yml") == {
        "build": "cuda", "cuda": "12.1", "cudnn": None, "name": "torch", "distribution": "torch",
        "version": "2.1.2",
    }  # fmt: skip
    conda = read_lock(str(DATA / "clay-conda-lock.yml"), machine="x86_64")
    dump = as_inspection(conda, machine="x86_64")
    assert dump["conda_meta"] is True and installer(dump) == "conda"
    assert frameworks(dump)[0]["cuda"] == "12.0"
