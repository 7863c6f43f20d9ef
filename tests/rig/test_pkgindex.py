"""The end-to-end fix tests stand on this: a loopback index real pip and uv install from, wheels built here
that look like the real torch builds, and pip-enabled venvs cheap enough to make one a test. Each is proved
here through the real installers, so a fix test that fails is about gpudoctor, not about its rig."""

from __future__ import annotations

import hashlib
import re
import subprocess
import threading
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

import pytest

from pkgindex import LocalIndex, offline_env
from pyenvs import broken_wheel, clone_venv, dist_info_only, site_packages, uv, wheels_for

CU124 = ["torch==2.5.1+cu124", "torchvision==0.20.1+cu124", "torchaudio==2.5.1+cu124"]


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheels")
    wheels_for(out, CU124)
    wheels_for(out, ["torch==2.5.1+cpu"])
    return out


@pytest.fixture(scope="module")
def index(wheels):
    with LocalIndex(wheels) as served:
        yield served


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict:
    return offline_env(tmp_path_factory.mktemp("offline"))


def pip(python: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    """`python -m pip install ...`, as gpudoctor runs it."""
    cmd = [str(python), "-m", "pip", "install", *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)


def uv_pip(python: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    cmd = [uv(), "pip", "install", "--python", str(python), *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)


def installed(python: Path) -> dict[str, str]:
    """name -> version of the distributions in the environment, read from their dist-info directories."""
    found = {}
    for info in site_packages(python).glob("*.dist-info"):
        name, version = info.name[: -len(".dist-info")].split("-", 1)
        found[name.replace("_", "-").lower()] = version
    return found


def torch_cuda(python: Path, env: dict) -> str:
    out = subprocess.run(
        [str(python), "-c", "import torch.version as v; print(v.cuda)"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return out.stdout.strip()


def record(python: Path, dist: str) -> list[str]:
    return [line.split(",")[0] for line in (site_packages(python) / dist / "RECORD").read_text().splitlines()]


def metadata(wheel: Path) -> tuple[str, list[str]]:
    """(version, Requires-Dist) of a built wheel."""
    with zipfile.ZipFile(wheel) as z:
        text = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    version = re.search(r"^Version: (.+)$", text, re.M).group(1)
    return version, re.findall(r"^Requires-Dist: (.+)$", text, re.M)


def test_pip_in_a_clone_installs_a_cuda_plan_from_the_index_under_the_plans_prefix(
    index, env, pip_template, tmp_path
):
    root = tmp_path / "venv"
    python = clone_venv(pip_template, root)
    seen = len(index.requests)
    r = pip(python, env, *CU124, "--index-url", index.url("whl/cu124"))
    assert r.returncode == 0, r.stderr
    prefix = subprocess.run(
        [str(python), "-c", "import sys; print(sys.prefix)"], capture_output=True, text=True, timeout=30
    )
    assert prefix.stdout.strip() == str(root)
    assert (root / "bin" / "pip").read_text().startswith(f"#!{root}/bin/python")
    assert torch_cuda(python, env) == "12.4"
    assert "torch/lib/libtorch_cuda.so" in record(python, "torch-2.5.1+cu124.dist-info")
    have = installed(python)
    assert {k: have.get(k) for k in ("torch", "torchvision", "torchaudio", "nvidia-cuda-runtime-cu12")} == {
        "torch": "2.5.1+cu124",
        "torchvision": "0.20.1+cu124",
        "torchaudio": "2.5.1+cu124",
        "nvidia-cuda-runtime-cu12": "12.4.127",
    }
    assert "torch" not in installed(pip_template / "bin" / "python")
    asked = index.requests[seen:]
    assert "/whl/cu124/torch/" in asked and "/files/torch-2.5.1+cu124-py3-none-any.whl" in asked


def test_pip_installs_the_cpu_build(index, env, pip_template, tmp_path):
    python = clone_venv(pip_template, tmp_path / "venv")
    r = pip(python, env, "torch==2.5.1+cpu", "--index-url", index.url("whl/cpu"))
    assert r.returncode == 0, r.stderr
    assert torch_cuda(python, env) == "None"
    assert not any("libtorch_cuda" in f for f in record(python, "torch-2.5.1+cpu.dist-info"))
    assert not [name for name in installed(python) if name.startswith("nvidia")]


def test_uv_installs_from_the_index(index, env, pip_template, tmp_path):
    python = clone_venv(pip_template, tmp_path / "venv")
    r = uv_pip(python, env, *CU124, "--index-url", index.url("whl/cu124"))
    assert r.returncode == 0, r.stderr
    assert torch_cuda(python, env) == "12.4"
    assert installed(python)["torchvision"] == "0.20.1+cu124"


def test_pip_without_an_index_url_reaches_no_registry(env, pip_template, tmp_path):
    """offline_env leaves out this machine's pip configuration (other indexes, find-links) and the user's:
    the only index is one that refuses, at once."""
    python = clone_venv(pip_template, tmp_path / "venv")
    started = time.monotonic()
    r = pip(python, env, "filelock")
    assert r.returncode != 0
    assert r.stdout.splitlines()[0] == "Looking in indexes: http://127.0.0.1:9/simple"
    assert "Looking in links" not in r.stdout
    assert time.monotonic() - started < 30


def test_pages_normalise_names_link_hashes_and_see_wheels_added_later(index, wheels):
    page = urllib.request.urlopen(index.url("any/prefix") + "/NVIDIA_cuda.Runtime-CU12/", timeout=10)
    (href,) = re.findall(r'href="([^"]+)"', page.read().decode())
    path, digest = href.split("#sha256=")
    assert path == "/files/nvidia_cuda_runtime_cu12-12.4.127-py3-none-any.whl"
    data = urllib.request.urlopen(index.url("") + path, timeout=10).read()
    assert hashlib.sha256(data).hexdigest() == digest
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(index.url("whl/cu124") + "/no-such-project/", timeout=10)
    assert missing.value.code == 404
    dist_info_only(wheels, "late-comer", "1.0")
    late = urllib.request.urlopen(index.url("simple") + "/late_comer/", timeout=10).read().decode()
    assert "late_comer-1.0-py3-none-any.whl" in late


def test_wheels_for_follows_the_pins_it_is_given(tmp_path):
    built = {p.name: p for p in wheels_for(tmp_path, ["torch==2.7.1+cu128", "torchvision==0.22.1+cu128"])}
    version, requires = metadata(built["torch-2.7.1+cu128-py3-none-any.whl"])
    assert any(r.startswith("nvidia-cuda-runtime-cu12==12.8.90;") for r in requires)
    assert metadata(built["torchvision-0.22.1+cu128-py3-none-any.whl"])[1] == ["torch==2.7.1+cu128"]
    with zipfile.ZipFile(built["torch-2.7.1+cu128-py3-none-any.whl"]) as z:
        assert "cuda: Optional[str] = '12.8'" in z.read("torch/version.py").decode()
    # A companion alone brings the torch of its release; CUDA 13 wheels name the runtime without a suffix.
    alone = {p.name for p in wheels_for(tmp_path / "alone", ["torchaudio==2.9.0+cu130", "numpy<2"])}
    assert {"torch-2.9.0+cu130-py3-none-any.whl", "numpy-1.0-py3-none-any.whl"} <= alone
    requires = metadata(tmp_path / "alone" / "torch-2.9.0+cu130-py3-none-any.whl")[1]
    names = sorted(r.split("==")[0] for r in requires if r.startswith("nvidia"))
    assert names == ["nvidia-cuda-runtime", "nvidia-cudnn-cu13", "nvidia-nccl-cu13"]


@pytest.fixture(scope="module")
def broken_index(tmp_path_factory):
    """torch 2.5.1+cu124 and a torchaudio for it that fails to install."""
    out = tmp_path_factory.mktemp("broken")
    wheels_for(out, ["torch==2.5.1+cu124"])
    broken_wheel(out, "torchaudio", "2.5.1+cu124", requires=("torch==2.5.1+cu124",))
    with LocalIndex(out) as served:
        yield served


def test_pip_stops_half_way_on_the_broken_wheel(broken_index, env, pip_template, tmp_path):
    root = tmp_path / "venv"
    python = clone_venv(pip_template, root)
    r = pip(
        python, env, "torch==2.5.1+cu124", "torchaudio==2.5.1+cu124", "--index-url", broken_index.url("x")
    )
    assert r.returncode == 1
    assert "trying to install outside the target directory" in r.stderr
    have = installed(python)
    assert have["torch"] == "2.5.1+cu124" and have["nvidia-cudnn-cu12"] == "9.1.0.70"
    assert "torchaudio" not in have and not (site_packages(python) / "torchaudio").exists()
    assert not list(tmp_path.rglob("outside.txt"))


def test_uv_fails_on_the_broken_wheel_having_changed_the_environment(
    broken_index, env, pip_template, tmp_path
):
    python = clone_venv(pip_template, tmp_path / "venv")
    before = installed(python)
    r = uv_pip(
        python, env, "torch==2.5.1+cu124", "torchaudio==2.5.1+cu124", "--index-url", broken_index.url("x")
    )
    assert r.returncode != 0
    assert "Unknown wheel data type" in r.stderr
    assert set(installed(python)) > set(before)
    assert not list(tmp_path.rglob("outside.txt"))


def test_a_held_download_blocks_pip_until_released(wheels, env, pip_template, tmp_path):
    python = clone_venv(pip_template, tmp_path / "venv")
    with LocalIndex(wheels) as index:
        index.hold("torch-2.5.1+cpu")
        cmd = [str(python), "-m", "pip", "install", "torch==2.5.1+cpu", "--index-url", index.url("whl/cpu")]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert index.held.wait(30)
            time.sleep(0.3)
            assert proc.poll() is None and "torch" not in installed(python)
            index.release()
            out, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
        assert proc.returncode == 0, err
        assert installed(python)["torch"] == "2.5.1+cpu"


def test_close_lets_a_held_download_go(wheels):
    index = LocalIndex(wheels)
    index.hold("torch-")
    got: list[int] = []
    url = index.url("files") + "/torch-2.5.1+cpu-py3-none-any.whl"
    reader = threading.Thread(target=lambda: got.append(len(urllib.request.urlopen(url, timeout=10).read())))
    reader.start()
    assert index.held.wait(10)
    started = time.monotonic()
    index.close()
    assert time.monotonic() - started < 2
    reader.join(10)
    assert got == [(wheels / "torch-2.5.1+cpu-py3-none-any.whl").stat().st_size]
