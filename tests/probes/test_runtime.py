"""The runtime probe (check --deep): its pure parse functions, and the probe over recorded answers.

The child programs themselves run against a fake libcuda and fake frameworks in
tests/host/test_runtime_children.py; here their output is given as text.
"""

from __future__ import annotations

import json

import pytest

from gpudoctor.facts import SCHEMA, spec_for
from gpudoctor.host.base import TIMED_OUT, HostError
from gpudoctor.probes import runtime
from gpudoctor.probes.runtime import (
    child_json,
    cuda_facts,
    cuda_version,
    cudnn_file,
    cudnn_version,
    exit_text,
    framework_facts,
    tensorflow_gpu_reason,
)

from conftest import fake_host

SRC = "test"


def out(data: dict, rc: int = 0, stderr: str = "") -> dict:
    """A child's answer as the host gives it."""
    return {"rc": rc, "stdout": json.dumps(data) + "\n", "stderr": stderr}


def values(facts: dict) -> dict:
    return {k: (f.value if f.known else ("?", f.unknown)) for k, f in facts.items()}


# --- small parsers --------------------------------------------------------------------------------------


def test_child_json_takes_the_last_line_that_is_an_object():
    assert child_json('noise\n{"a": 1}\n\n') == {"a": 1}
    assert child_json("") is None
    assert child_json("[1, 2]") is None
    assert child_json('{"a": 1}\nnot json') is None


def test_exit_text():
    assert exit_text(-11, "loading...\nSegmentation fault\n") == (
        "was killed by signal 11 (SIGSEGV): Segmentation fault"
    )
    assert exit_text(1, "") == "exited with status 1"
    assert exit_text(0, "") == "printed no answer"
    assert exit_text(-99, "") == "was killed by signal 99"


@pytest.mark.parametrize(
    ("number", "expected"), [(13000, "13.0"), (12080, "12.8"), (11020, "11.2"), (0, None), (True, None)]
)
def test_cuda_version(number, expected):
    assert cuda_version(number) == expected


@pytest.mark.parametrize(
    ("number", "expected"),
    [(91002, "9.10.2"), (90100, "9.1.0"), (8902, "8.9.2"), (8600, "8.6.0"), (None, None)],
)
def test_cudnn_version(number, expected):
    assert cudnn_version(number) == expected


def test_cudnn_file_prefers_the_main_library():
    site = "/venv/lib/python3.12/site-packages/nvidia/cudnn/lib"
    assert cudnn_file([f"{site}/libcudnn_graph.so.9", f"{site}/libcudnn.so.9"]) == f"{site}/libcudnn.so.9"
    assert cudnn_file(["/opt/libcudnn_ops.so.9"]) == "/opt/libcudnn_ops.so.9"
    assert cudnn_file([]) is None and cudnn_file("junk") is None


def test_tensorflow_gpu_reason_strips_the_log_prefix():
    log = (
        "2025-06-01 10:00:00.123456: I tensorflow/core/util/port.cc:153] oneDNN custom operations are on.\n"
        "2025-06-01 10:00:01.000000: E external/local_xla/xla/stream_executor/cuda/cuda_driver.cc:152] "
        "failed call to cuInit: INTERNAL: CUDA error: Failed call to cuInit: CUDA_ERROR_NO_DEVICE: no "
        "CUDA-capable device is detected\n"
    )
    assert tensorflow_gpu_reason(log) == (
        "failed call to cuInit: INTERNAL: CUDA error: Failed call to cuInit: CUDA_ERROR_NO_DEVICE: no "
        "CUDA-capable device is detected"
    )
    assert tensorflow_gpu_reason("2025-06-01 10:00:00.1: I x.cc:1] all fine\n") is None


# --- the smoke test's answer --------------------------------------------------------------------------------

OK = {
    "format": 1, "library": "/usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05", "load_error": None,
    "driver_version": 13000, "init": 0, "device_count": 2,
    "devices": [{"index": 0, "ok": True}, {"index": 1, "ok": True}], "error": None,
}  # fmt: skip


def test_cuda_facts_when_every_context_opens():
    assert values(cuda_facts(out(OK), SRC)) == {
        "status": "ok", "library": OK["library"], "driver_version": "13.0", "device_count": 2,
        "failed_devices": [], "failed_device_count": 0, "failed_call": ("?", "no error"),
        "result": "CUDA_SUCCESS", "code": 0, "error": ("?", "no error"),
    }  # fmt: skip


def test_cuda_facts_when_cuinit_fails():
    error = {"call": "cuInit", "code": 802, "name": "CUDA_ERROR_SYSTEM_NOT_READY",
             "message": "system not yet initialized"}  # fmt: skip
    data = dict(OK, init=802, device_count=None, devices=[], error=error)
    assert values(cuda_facts(out(data), SRC)) == {
        "status": "failed", "library": OK["library"], "driver_version": "13.0",
        "device_count": ("?", "cuInit failed"), "failed_devices": ("?", "cuInit failed"),
        "failed_device_count": ("?", "cuInit failed"), "failed_call": "cuInit",
        "result": "CUDA_ERROR_SYSTEM_NOT_READY", "code": 802,
        "error": "cuInit failed with CUDA_ERROR_SYSTEM_NOT_READY (802): system not yet initialized",
    }  # fmt: skip


def test_cuda_facts_when_one_device_fails():
    bad = {"index": 1, "ok": False, "call": "cuDevicePrimaryCtxRetain", "code": 999,
           "name": "CUDA_ERROR_UNKNOWN", "message": None}  # fmt: skip
    data = dict(OK, devices=[{"index": 0, "ok": True}, bad], error=bad)
    facts = values(cuda_facts(out(data), SRC))
    assert (facts["status"], facts["device_count"], facts["failed_devices"]) == ("failed", 2, [1])
    assert facts["error"] == "cuDevicePrimaryCtxRetain on device 1 failed with CUDA_ERROR_UNKNOWN (999)"


def test_cuda_facts_without_a_library_crash_or_answer():
    facts = values(cuda_facts(out(dict(OK, load_error="libcuda.so.1 not found or not loadable: ...")), SRC))
    assert (facts["status"], facts["error"]) == ("no library", "libcuda.so.1 not found or not loadable: ...")
    assert facts["code"] == ("?", "libcuda.so.1 not found or not loadable: ...")
    crashed = values(cuda_facts({"rc": -11, "stdout": "", "stderr": "Segmentation fault\n"}, SRC))
    why = "the smoke test was killed by signal 11 (SIGSEGV): Segmentation fault"
    assert (crashed["status"], crashed["error"], crashed["code"]) == ("crashed", why, ("?", why))
    timed_out = values(cuda_facts(HostError(TIMED_OUT, "libcuda smoke test"), SRC))
    assert set(timed_out.values()) == {("?", TIMED_OUT)}


# --- the framework children's answers ---------------------------------------------------------------------

TORCH = {
    "version": "2.9.0+cu128", "cuda": "12.8", "hip": None, "cuda_available": True, "device_count": 1,
    "init_error": None, "arch_list": ["sm_80", "sm_90", "sm_100", "sm_120", "compute_120"],
    "capabilities": ["9.0"], "device_names": ["NVIDIA H200"], "device_errors": [], "cudnn": 91002,
    "cudnn_files": ["/v/site-packages/nvidia/cudnn/lib/libcudnn.so.9"], "nccl": "2.27.3",
}  # fmt: skip


def torch_answer(**changes) -> dict:
    return out(
        {"format": 1, "framework": "torch", "result": dict(TORCH, **changes), "warnings": [], "log": []}
    )


def test_torch_facts():
    assert values(framework_facts("torch", torch_answer(), SRC)) == {
        "status": "ok", "error": ("?", "no error"), "version": "2.9.0+cu128", "build": "cuda",
        "cuda": "12.8", "cuda_available": True, "device_count": 1, "capabilities": ["9.0"],
        "arch_list": TORCH["arch_list"], "cudnn": "9.10.2",
        "cudnn_path": "/v/site-packages/nvidia/cudnn/lib/libcudnn.so.9", "nccl": "2.27.3",
    }  # fmt: skip


def test_torch_error_is_the_exact_cuda_initialisation_error():
    init = "RuntimeError: Found no NVIDIA driver on your system."
    facts = values(
        framework_facts("torch", torch_answer(cuda_available=False, device_count=0, init_error=init), SRC)
    )
    assert (facts["error"], facts["cuda_available"]) == (init, False)
    assert facts["capabilities"] == ("?", "CUDA is not available")
    too_old = "CUDA initialization: The NVIDIA driver on your system is too old (found version 12040)."
    result = dict(TORCH, cuda_available=False, capabilities=[])
    warned = {"format": 1, "result": result, "log": [], "warnings": ["some other warning", too_old]}
    assert framework_facts("torch", out(warned), SRC)["error"].value == too_old


def test_torch_cpu_build():
    facts = values(framework_facts("torch", torch_answer(cuda=None, cuda_available=False, arch_list=[]), SRC))
    assert (facts["build"], facts["error"]) == ("cpu", ("?", "no error"))
    for field in ("cuda", "arch_list", "cudnn", "cudnn_path", "nccl"):
        assert facts[field] == ("?", "not a CUDA build"), field


def test_torch_cudnn_that_fails_to_load():
    error = (
        "RuntimeError: cuDNN version incompatibility: PyTorch was compiled against (9, 10, 2) but found "
        "runtime version (8, 9, 7)."
    )
    facts = framework_facts("torch", torch_answer(cudnn=None, cudnn_error=error, cudnn_files=[]), SRC)
    assert facts["cudnn"].unknown == error


def test_torch_import_failures_and_crashes():
    failed = framework_facts(
        "torch", out({"format": 1, "import_error": "ImportError: libcudnn.so.9: x"}), SRC
    )
    assert (failed["status"].value, failed["error"].value) == (
        "import failed",
        "ImportError: libcudnn.so.9: x",
    )
    assert failed["cuda_available"].unknown == "import failed: ImportError: libcudnn.so.9: x"
    crashed = framework_facts("torch", {"rc": -4, "stdout": "", "stderr": "Illegal instruction\n"}, SRC)
    assert crashed["status"].value == "crashed"
    assert crashed["error"].value == "the torch import was killed by signal 4 (SIGILL): Illegal instruction"


def test_tensorflow_jax_cupy_onnxruntime_facts():
    tf = {"version": "2.20.0", "build_info": {"is_cuda_build": True, "cuda_version": "12.5.1",
          "cudnn_version": "9"}, "gpus": ["/physical_device:GPU:0"]}  # fmt: skip
    assert values(framework_facts("tensorflow", out({"result": tf}), SRC)) == {
        "status": "ok", "error": ("?", "no error"), "version": "2.20.0", "cuda_build": True, "cuda": "12.5",
        "cudnn": "9", "gpu_count": 1,
    }  # fmt: skip
    jax = {
        "version": "0.7.2",
        "platform": "gpu",
        "devices": ["CudaDevice(id=0)"],
        "cuda_plugins": ["jax_cuda12_plugin"],
    }
    assert values(framework_facts("jax", out({"result": jax}), SRC)) == {
        "status": "ok", "error": ("?", "no error"), "version": "0.7.2", "platform": "gpu", "device_count": 1,
        "cuda_plugin": True, "fell_back": False,
    }  # fmt: skip
    cpu_only = dict(
        jax, platform="cpu", devices=["CpuDevice(id=0)"], cuda_plugins=[], gpu_error="RuntimeError: x"
    )
    facts = values(framework_facts("jax", out({"result": cpu_only}), SRC))
    assert (facts["fell_back"], facts["error"]) == (False, "RuntimeError: x")  # no plugin: GD-FW-003's case
    cupy = {"version": "13.6.0", "runtime_version": 12080, "driver_version": 13000, "device_count": 8}
    assert values(framework_facts("cupy", out({"result": cupy}), SRC))["runtime_version"] == "12.8"
    ort = {
        "version": "1.23.2",
        "providers": ["CUDAExecutionProvider", "CPUExecutionProvider"],
        "device": "GPU",
    }
    assert values(framework_facts("onnxruntime", out({"result": ort}), SRC))["device"] == "GPU"


def test_answers_of_the_wrong_shape_are_unknown_not_a_crash():
    for framework in runtime.FRAMEWORKS:
        for data in ({"result": "x"}, {"result": {"version": 5, "devices": 3, "arch_list": "sm_90"}}, {}):
            facts = framework_facts(framework, out(data), SRC)
            assert set(facts) == set(runtime.FIELDS[framework])
    weird = dict(OK, devices=5, error={"code": "x"}, device_count="2")
    assert cuda_facts(out(weird), SRC)["status"].value == "failed"


def test_every_fact_is_documented():
    facts = {f"runtime.cuda.{f}" for f in runtime.CUDA_FIELDS}
    facts |= {f"runtime.{fw}.{f}" for fw, fields in runtime.FIELDS.items() for f in fields}
    facts |= {"runtime.python", "runtime.import_failures", "runtime.import_failure_count"}
    assert [f for f in sorted(facts) if spec_for(f) is None] == []
    produced = {s.name for s in SCHEMA if s.name.startswith("runtime.") and not s.doc.startswith("derived:")}
    assert produced == facts


# --- the probe, over recorded answers ----------------------------------------------------------------------

DUMP = {
    "format": 1, "executable": "/venv/bin/python", "version": "3.12.3", "prefix": "/venv",
    "base_prefix": "/usr",
    "distributions": [{"name": "torch", "version": "2.9.0+cu128", "requires": [], "texts": {}},
                      {"name": "jax", "version": "0.7.2", "requires": [], "texts": {}}],
}  # fmt: skip


PYTHON = {"default": "/venv/bin/python", "/venv/bin/python": DUMP}


def recorded(frameworks: dict, smoke=None) -> dict:
    return {"cuda_smoke": smoke or out(OK), "frameworks": {"/venv/bin/python": frameworks}}


def test_probe_asks_only_about_installed_frameworks():
    answers = {"torch": torch_answer(), "jax": {"error": TIMED_OUT, "detail": ""}}
    host = fake_host(python=PYTHON, runtime=recorded(answers))
    facts = runtime.probe(host)
    assert facts["runtime.python"].value == "/venv/bin/python"
    assert facts["runtime.torch.cuda_available"].value is True
    assert facts["runtime.jax.platform"].unknown == TIMED_OUT
    assert host.timed_out == ["jax import in /venv/bin/python"]
    assert facts["runtime.cupy.status"].unknown == "not installed"
    assert facts["runtime.import_failure_count"].unknown == "jax: timed out"
    assert facts["runtime.cuda.status"].value == "ok"
    assert all(k.startswith("runtime.") for k in facts if k != "extensions.count")
    assert facts["runtime.torch.status"].source == "runtime:/venv/bin/python import torch"
    # A snapshot taken before extensions were scanned: their list is unknown, never empty.
    assert facts["extensions.count"].unknown == "not recorded in snapshot"


def test_probe_counts_import_failures():
    failed = out({"format": 1, "import_error": "ImportError: libcudnn.so.9: cannot open shared object file"})
    host = fake_host(python=PYTHON, runtime=recorded({"torch": failed, "jax": {"error": TIMED_OUT}}))
    facts = runtime.probe(host)
    assert facts["runtime.import_failures"].value == [
        "torch: ImportError: libcudnn.so.9: cannot open shared object file"
    ]
    assert facts["runtime.import_failure_count"].value == 1


def test_probe_when_the_interpreter_cannot_be_inspected():
    host = fake_host(python={"default": "/venv/bin/python"}, runtime=recorded({}))
    facts = runtime.probe(host)
    why = "the interpreter could not be inspected: not recorded in snapshot"
    assert facts["runtime.torch.status"].unknown == why
    assert facts["runtime.import_failure_count"].unknown == why
    assert facts["runtime.cuda.status"].value == "ok"  # the driver smoke test needs no interpreter
    assert facts["extensions.count"].unknown == why


# --- CUDA extensions ---------------------------------------------------------------------------------------


def test_extension_facts():
    # The scan's answer shape (gpudoctor/host/cuda_binaries.py; tests/host/test_cuda_binaries.py runs it).
    data = {
        "format": 1,
        "extensions": [{"distribution": "flash-attn", "version": "2.8.3", "file": "/s/f.so",
                        "sass": ["sm_80"], "ptx": ["compute_90"]}],
        "unreadable": [{"distribution": "mmcv", "version": "2.2.0", "file": "/s/m.so",
                        "reason": "cut short"}],
        "distributions": 2, "files": 2, "not_read": None,
    }  # fmt: skip
    items, why = runtime.extension_facts(out(data), SRC)
    assert why is None
    assert [{k: f.value for k, f in i.items()} for i in items] == [
        {
            "distribution": "flash-attn",
            "version": "2.8.3",
            "file": "/s/f.so",
            "arch": ["sm_80", "compute_90"],
        },
        {"distribution": "mmcv", "version": "2.2.0", "file": "/s/m.so", "arch": None},
    ]
    assert items[1]["arch"].unknown == "unreadable: cut short"  # it may be a CUDA extension: not left out
    assert runtime.extension_facts(out(dict(data, not_read="reading took more than 8 s")), SRC) == (
        [],
        "not every extension was read: reading took more than 8 s",
    )
    assert (
        runtime.extension_facts({"rc": -9, "stdout": "", "stderr": ""}, SRC)[1]
        == "the extension scan was killed by signal 9 (SIGKILL)"
    )
    assert runtime.extension_facts(HostError(TIMED_OUT), SRC) == ([], TIMED_OUT)
    odd = dict(data, extensions=[dict(data["extensions"][0], sass=["sm_80", "--x"])])
    assert runtime.extension_facts(out(odd), SRC)[0][0]["arch"].unknown == "malformed answer"


def test_probe_scans_extensions_only_where_torch_is_installed():
    scan = out({"format": 1, "extensions": [], "unreadable": [], "not_read": None})
    host = fake_host(python=PYTHON, runtime=dict(recorded({}), cuda_binaries={"/venv/bin/python": scan}))
    assert runtime.probe(host)["extensions.count"].value == 0
    no_torch = dict(DUMP, distributions=[d for d in DUMP["distributions"] if d["name"] != "torch"])
    host = fake_host(
        python={"default": "/venv/bin/python", "/venv/bin/python": no_torch}, runtime=recorded({})
    )
    facts = runtime.probe(host)
    assert (facts["extensions.count"].value, facts["extensions.count"].unknown) == (0, None)  # none to build
