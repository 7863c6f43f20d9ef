"""The runtime probe (check --deep): its pure parse functions, and the probe over recorded answers.

Then the probe end to end: its snapshot replay and its rules over the real child programs, run by LiveHost
against the fake libcuda and fake frameworks (the fixtures libcuda, venvs and scenario of tests/conftest.py).
The children alone are tested in tests/host/test_cuda_smoke.py and tests/host/test_framework_runtime.py.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from fake_cuda import fakes

from gpudoctor.derive import derive
from gpudoctor.engine.evaluate import evaluate
from gpudoctor.engine.loader import load_rules
from gpudoctor.facts import SCHEMA, Fact, Facts, spec_for
from gpudoctor.host.base import NOT_RECORDED, TIMED_OUT, Deadline, HostError
from gpudoctor.host.live import LiveHost
from gpudoctor.host.snapshot import RecordingHost, SnapshotHost, load, save
from gpudoctor.probes import python_env, runtime
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

from conftest import HANG_S, SLACK_S, fake_host, run_cli

SRC = "test"


def out(data: dict, rc: int = 0, stderr: str = "") -> dict:
    """A child's answer as the host gives it."""
    return {"rc": rc, "stdout": json.dumps(data) + "\n", "stderr": stderr}


def values(facts: dict[str, Fact], prefix: str = "") -> dict:
    """The facts named `prefix...`, by the rest of their name: a value, or ("?", reason) when unknown."""
    return {
        k[len(prefix) :]: (f.value if f.known else ("?", f.unknown))
        for k, f in facts.items()
        if k.startswith(prefix)
    }


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


# --- the probe end to end, over the real children -----------------------------------------------------------


def test_probe_on_a_host_where_everything_answers(scenario, venvs):
    facts = runtime.probe(LiveHost(python=venvs["ok"]))
    assert values(facts, "runtime.cuda.") == {
        "status": "ok", "library": str(Path(os.environ["LD_LIBRARY_PATH"]) / fakes.LIBRARY),
        "driver_version": "13.0", "device_count": 2, "failed_devices": [], "failed_device_count": 0,
        "failed_call": ("?", "no error"), "result": "CUDA_SUCCESS", "code": 0, "error": ("?", "no error"),
    }  # fmt: skip
    torch = values(facts, "runtime.torch.")
    assert torch["status"] == "ok" and torch["capabilities"] == ["9.0", "12.0"]
    assert (torch["cudnn"], Path(torch["cudnn_path"]).name) == ("9.10.2", "libcudnn.so.9")
    assert values(facts, "runtime.tensorflow.")["error"] == fakes.TF_LOG.split("] ", 1)[1]
    assert values(facts, "runtime.jax.")["fell_back"] is True
    assert values(facts, "runtime.cupy.")["error"] == f"CUDARuntimeError: {fakes.CUPY_ERROR}"
    assert values(facts, "runtime.onnxruntime.")["providers"] == [
        "AzureExecutionProvider",
        "CPUExecutionProvider",
    ]
    assert (facts["runtime.import_failures"].value, facts["runtime.python"].value) == ([], venvs["ok"])


def test_probe_ends_at_the_deadline_and_says_what_hung(scenario, venvs):
    scenario("hang")
    host = LiveHost(deadline=Deadline(HANG_S), python=venvs["hang"])
    start = time.monotonic()
    facts = runtime.probe(host)
    assert time.monotonic() - start < HANG_S + SLACK_S
    assert sorted(host.timed_out) == sorted(["libcuda smoke test", f"torch import in {venvs['hang']}"])
    assert facts["runtime.cuda.status"].unknown == TIMED_OUT
    assert facts["runtime.torch.status"].unknown == TIMED_OUT
    assert facts["runtime.import_failure_count"].unknown == "torch: timed out"  # not "none failed"
    assert facts["runtime.tensorflow.status"].unknown == "not installed"


class ShortLimits:
    """A LiveHost whose runtime children get `limit` seconds each (their defaults are 10 and 20 s)."""

    def __init__(self, inner: LiveHost, limit: float) -> None:
        self.inner, self.limit = inner, limit

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def cuda_smoke(self) -> dict:
        return self.inner.cuda_smoke(self.limit)

    def framework_runtime(self, interpreter: str, framework: str) -> dict:
        return self.inner.framework_runtime(interpreter, framework, self.limit)


def test_probe_runs_the_children_in_parallel(scenario, venvs):
    scenario("hang")  # the smoke test and the torch import both hang, each until its own limit
    host = ShortLimits(LiveHost(deadline=Deadline(30), python=venvs["hang"]), limit=0.5)
    start = time.monotonic()
    facts = runtime.probe(host)
    assert time.monotonic() - start < 0.9  # one after the other: 1 s at least
    assert facts["runtime.cuda.status"].unknown == facts["runtime.torch.status"].unknown == TIMED_OUT


def test_probe_replays_from_a_snapshot(scenario, venvs, tmp_path):
    scenario("802")
    recorder = RecordingHost(LiveHost(python=venvs["import-error"]))
    live = runtime.probe(recorder)
    assert live["runtime.cuda.result"].value == "CUDA_ERROR_SYSTEM_NOT_READY"
    assert live["runtime.torch.status"].value == "import failed"
    path = tmp_path / "host.tar.gz"
    save(recorder.recording, str(path), "test")
    rec = load(str(path))
    assert set(rec.runtime) == {"cuda_smoke", "frameworks", "cuda_binaries"}  # torch is installed: a scan
    assert runtime.probe(SnapshotHost(rec)) == live
    # A snapshot from before --deep (no runtime.json) replays, with these facts unknown as not recorded.
    rec.runtime = {}
    old = runtime.probe(SnapshotHost(rec))
    assert old["runtime.cuda.status"].unknown == NOT_RECORDED
    assert old["runtime.torch.status"].unknown == NOT_RECORDED
    assert old["extensions.count"].unknown == NOT_RECORDED


def test_a_timed_out_child_replays_as_timed_out(scenario, venvs, tmp_path):
    scenario("hang")
    recorder = RecordingHost(LiveHost(deadline=Deadline(HANG_S), python=venvs["ok"]))
    runtime.probe(recorder)
    assert recorder.recording.runtime["cuda_smoke"]["error"] == TIMED_OUT
    path = tmp_path / "host.tar.gz"
    save(recorder.recording, str(path), "test")
    host = SnapshotHost(load(str(path)))
    assert runtime.probe(host)["runtime.cuda.status"].unknown == TIMED_OUT
    # The framework imports share the 0.3 s deadline: on a loaded machine one of them can run out of time
    # as well, and then replays as timed out too.
    assert "libcuda smoke test" in host.timed_out
    assert all(t == "libcuda smoke test" or " import in " in t for t in host.timed_out), host.timed_out


def test_runtime_rules_over_what_the_children_found(scenario, venvs):
    """The probes of the Python environment and the runtime, derive, and the shipped runtime rules: on the
    "ok" environment torch has no code for its second GPU (12.0), TensorFlow lists no GPU, JAX fell back to
    the CPU and onnxruntime-gpu lacks its CUDA provider; CUDA itself works."""
    host = LiveHost(python=venvs["ok"])
    facts = derive(Facts({**python_env.probe(host), **runtime.probe(host)}))
    results = {r.rule.id: r for r in evaluate(load_rules([]), facts) if r.rule.id.startswith("GD-RUNTIME-")}
    fired = {
        rule_id: [f.message for f in r.findings] for rule_id, r in results.items() if r.status == "fired"
    }
    assert sorted(fired) == ["GD-RUNTIME-007", "GD-RUNTIME-009", "GD-RUNTIME-010", "GD-RUNTIME-011"]
    assert fired["GD-RUNTIME-007"] == [
        f"torch {fakes.TORCH_VERSION} has no kernels for compute capability 12.0 of CUDA device(s) 1: "
        "torch.cuda.get_arch_list() is sm_50, sm_80, sm_86, sm_90."
    ]
    assert {r.status for i, r in results.items() if i not in fired} == {"passed"}
    # The arch list GD-ARCH-001 judges is the imported torch's, not the knowledge table's.
    assert facts.get("frameworks[0].arch_list").value == ["5.0", "8.0", "8.6", "9.0"]


# --- through the command line -----------------------------------------------------------------------------


def test_check_deep_on_the_command_line(scenario, venvs, libcuda):
    """`gpudoctor check --deep` as users run it: a real process, the fake libcuda on the loader path. The
    Runtime line says what the children saw; the 802 rule names the Fabric Manager."""
    env = {"LD_LIBRARY_PATH": str(libcuda)}
    scenario("ok")
    r = run_cli("check", "--deep", "--python", venvs["ok"], env=env)
    runtime_line = next(x for x in r.stdout.splitlines() if x.startswith("Runtime "))
    assert runtime_line.startswith("Runtime     CUDA ok (2 device(s)) · torch CUDA available"), runtime_line
    scenario("802")
    r = run_cli("check", "--deep", "--format", "json", "--python", venvs["ok"], env=env)
    data = json.loads(r.stdout)
    assert data["facts"]["runtime"]["cuda"]["result"] == "CUDA_ERROR_SYSTEM_NOT_READY"
    assert "GD-RUNTIME-001" in [f["rule"] for f in data["findings"]]
    r = run_cli("check", "--python", venvs["ok"], env=env)  # without --deep the runtime rules wait for it
    assert "not evaluated (runtime checks need --deep)" in r.stdout
