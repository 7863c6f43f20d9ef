"""The framework child (host/framework_runtime.py), run by LiveHost in the interpreter of real virtual
environments holding fake frameworks (tests/conftest.py): what it reports of torch, tensorflow, jax,
cupy and onnxruntime, and how a hung or crashing import ends."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from fake_cuda import fakes

from gpudoctor.host.base import TIMED_OUT, Deadline, HostError
from gpudoctor.host.live import LiveHost

from conftest import HANG_S, SLACK_S


def child(python: str, framework: str = "torch") -> dict:
    answer = LiveHost().framework_runtime(python, framework)
    assert answer["rc"] == 0, answer
    return json.loads(answer["stdout"])  # stdout holds the answer alone, whatever the framework printed


def test_torch_with_cuda(venvs):
    out = child(venvs["ok"])
    assert (out["format"], out["framework"], out["warnings"], out["log"]) == (1, "torch", [], [])
    r = out["result"]
    assert (r["version"], r["cuda"], r["hip"], r["cuda_available"], r["device_count"]) == (
        fakes.TORCH_VERSION, "12.8", None, True, 2,
    )  # fmt: skip
    assert (r["arch_list"], r["capabilities"]) == (["sm_50", "sm_80", "sm_86", "sm_90"], ["9.0", "12.0"])
    assert r["device_names"] == ["NVIDIA H100 80GB HBM3", "NVIDIA GeForce RTX 5090"]
    assert (r["cudnn"], r["nccl"], r["init_error"]) == (91002, "2.27.3", None)
    # The cuDNN files really mapped into the process, read from /proc/self/maps.
    assert sorted(Path(p).name for p in r["cudnn_files"]) == ["libcudnn.so.9", "libcudnn_graph.so.9"]
    site = Path(venvs["ok"]).parents[1] / "lib"
    assert all(Path(p).is_relative_to(site) for p in r["cudnn_files"])


def test_torch_whose_cuda_initialisation_fails(venvs):
    r = child(venvs["cuda-error"])
    assert r["warnings"] == [f"CUDA initialization: {fakes.CUDA_INIT_ERROR} {fakes.CUDA_INIT_WHERE}"]
    result = r["result"]
    assert (result["cuda_available"], result["capabilities"]) == (False, [])
    assert result["init_error"] == f"RuntimeError: {fakes.CUDA_INIT_ERROR}"
    assert result["arch_list"] == ["sm_80", "sm_90", "compute_90"]  # from torch._C, without a GPU


def test_torch_that_fails_to_import(venvs):
    out = child(venvs["import-error"])
    assert out["import_error"] == f"ImportError: {fakes.IMPORT_ERROR}"
    assert "result" not in out


def test_a_hung_import_ends_at_the_limit_and_is_reported(venvs):
    host = LiveHost(deadline=Deadline(HANG_S))
    start = time.monotonic()
    with pytest.raises(HostError) as e:
        host.framework_runtime(venvs["hang"], "torch")
    assert e.value.reason == TIMED_OUT
    assert time.monotonic() - start < HANG_S + SLACK_S
    assert host.timed_out == [f"torch import in {venvs['hang']}"]


def test_an_import_that_kills_the_process(venvs):
    answer = LiveHost().framework_runtime(venvs["crash"], "torch")
    assert (answer["rc"], answer["stdout"], answer["stderr"]) == (-6, "", "Illegal instruction\n")


def test_the_other_frameworks(venvs):
    tf = child(venvs["ok"], "tensorflow")["result"]
    assert (tf["gpus"], tf["build_info"]["is_cuda_build"]) == ([], True)
    jax = child(venvs["ok"], "jax")
    assert (jax["result"]["platform"], jax["result"]["cuda_plugins"]) == ("cpu", ["jax_cuda12_plugin"])
    assert jax["result"]["gpu_error"] == f"RuntimeError: {fakes.JAX_GPU_ERROR}"
    assert jax["log"] == [fakes.JAX_GPU_ERROR]
    cupy = child(venvs["ok"], "cupy")["result"]
    assert (cupy["runtime_version"], cupy["device_count"]) == (12080, None)
    assert cupy["device_count_error"] == f"CUDARuntimeError: {fakes.CUPY_ERROR}"
    ort = child(venvs["ok"], "onnxruntime")["result"]
    assert (ort["providers"], ort["device"]) == (["AzureExecutionProvider", "CPUExecutionProvider"], "CPU")


def test_only_known_frameworks_are_imported(venvs):
    with pytest.raises(HostError) as e:
        LiveHost().framework_runtime(venvs["ok"], "os")
    assert e.value.reason == "not supported"
