"""Runtime truth (check --deep), live: the real child programs against a fake libcuda and fake frameworks.

tests/fake_cuda/fake_cuda.c is a libcuda.so.1 that the smoke test (gpudoctor/host/cuda_smoke.py) loads by
name through LD_LIBRARY_PATH, scripted by the file `scenario` beside it; the fake frameworks
(tests/fake_cuda/fakes.py) are packages in the site-packages of real virtual environments, imported by the
real framework child (gpudoctor/host/framework_runtime.py) running in that environment's interpreter. Both
are built once per module. Each test goes through LiveHost (its own session, the time limit, the
deadline) and, for the probe, through gpudoctor/probes/runtime.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_cuda import fakes

from gpudoctor.derive import derive
from gpudoctor.engine.evaluate import evaluate
from gpudoctor.engine.loader import load_rules
from gpudoctor.facts import Fact, Facts
from gpudoctor.host import cuda_smoke
from gpudoctor.host.base import NOT_RECORDED, TIMED_OUT, Deadline, HostError
from gpudoctor.host.live import LiveHost
from gpudoctor.host.snapshot import RecordingHost, SnapshotHost, load, save
from gpudoctor.probes import python_env, runtime

from conftest import run_cli

HANG_S = 0.3  # the deadline or time limit of the tests where something hangs
SLACK_S = 0.6  # starting Python and killing the group, beyond a time limit


@pytest.fixture(scope="module")
def libcuda(tmp_path_factory) -> Path:
    """A directory holding the fake libcuda.so.1."""
    return fakes.compile_libcuda(tmp_path_factory.mktemp("fake-cuda"))


@pytest.fixture(scope="module")
def venvs(tmp_path_factory, libcuda) -> dict[str, str]:
    """{torch mode: the python of a venv holding that fake torch}; the "ok" one also holds the others."""
    out = {}
    for mode in fakes.TORCH_MODES:
        python, site = fakes.make_venv(tmp_path_factory.mktemp(f"venv-{mode}"))
        fakes.write_torch(site, mode, libcuda / fakes.LIBRARY)
        if mode == "ok":
            fakes.write_others(site)
        out[mode] = str(python)
    return out


@pytest.fixture
def scenario(monkeypatch, libcuda):
    """Scripts the fake libcuda (the file beside it) and puts it first on the loader path for the children
    to come."""
    monkeypatch.setenv("LD_LIBRARY_PATH", str(libcuda))
    monkeypatch.delenv("FAKE_CUDA_SCENARIO", raising=False)

    def use(value: str) -> None:
        fakes.use_scenario(libcuda, value)

    use("ok")
    return use


def smoke(host: LiveHost) -> dict:
    answer = host.cuda_smoke()
    assert answer["rc"] == 0 and answer["stderr"] == "", answer
    return json.loads(answer["stdout"])


def failure(call: str, code: int, name: str, message: str, **more) -> dict:
    return {"call": call, "code": code, "name": name, "message": message, **more}


# --- the CUDA driver smoke test -----------------------------------------------------------------------------


def test_smoke_test_opens_a_context_on_every_gpu(scenario, libcuda):
    scenario("devices=4,version=12080")
    out = smoke(LiveHost())
    assert out == {
        "format": 1,
        "library": str(libcuda / fakes.LIBRARY),
        "load_error": None,
        "driver_version": 12080,
        "init": 0,
        "device_count": 4,
        "devices": [{"index": i, "ok": True} for i in range(4)],
        "error": None,
    }


@pytest.mark.parametrize(
    ("code", "name", "message"),
    [
        (802, "CUDA_ERROR_SYSTEM_NOT_READY", "system not yet initialized"),
        (999, "CUDA_ERROR_UNKNOWN", "unknown error"),
        (100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"),
        (304, "CUDA_ERROR_OPERATING_SYSTEM", "OS call failed or operation not supported on this OS"),
    ],
)
def test_smoke_test_names_the_cuinit_failure(scenario, code, name, message):
    scenario(str(code))
    out = smoke(LiveHost())
    assert (out["init"], out["device_count"], out["devices"]) == (code, None, [])
    assert out["driver_version"] == 13000  # cuDriverGetVersion needs no cuInit
    assert out["error"] == failure("cuInit", code, name, message)


def test_smoke_test_names_the_device_whose_context_fails(scenario):
    scenario("devices=3,ctx=1:214")
    out = smoke(LiveHost())
    bad = {"index": 1, "ok": False, **failure("cuDevicePrimaryCtxRetain", 214, "CUDA_ERROR_ECC_UNCORRECTABLE",
                                               "uncorrectable ECC error encountered")}  # fmt: skip
    assert out["devices"] == [{"index": 0, "ok": True}, bad, {"index": 2, "ok": True}]
    assert out["error"] == bad


def test_smoke_test_names_codes_the_driver_does_not(scenario):
    scenario("802,nonames")  # cuGetErrorName fails: the program's own table names the code
    out = smoke(LiveHost())
    assert out["error"] == failure("cuInit", 802, "CUDA_ERROR_SYSTEM_NOT_READY", None)


def test_a_hung_cuinit_ends_at_the_limit_and_is_reported(scenario):
    scenario("hang")
    host = LiveHost(deadline=Deadline(HANG_S))
    start = time.monotonic()
    with pytest.raises(HostError) as e:
        host.cuda_smoke()
    assert e.value.reason == TIMED_OUT
    assert time.monotonic() - start < HANG_S + SLACK_S
    # The framework imports share the 0.3 s deadline: on a loaded machine one of them can run out of time
    # as well, and then replays as timed out too.
    assert "libcuda smoke test" in host.timed_out
    assert all(t == "libcuda smoke test" or " import in " in t for t in host.timed_out), host.timed_out
    with pytest.raises(HostError):  # once per check: the answer is remembered, the child not run again
        host.cuda_smoke()


def test_smoke_test_has_its_own_limit_within_the_deadline(scenario):
    scenario("ctx=0:hang")
    host = LiveHost(deadline=Deadline(30))
    start = time.monotonic()
    with pytest.raises(HostError) as e:
        host.cuda_smoke(timeout=HANG_S)
    assert e.value.reason == TIMED_OUT and time.monotonic() - start < HANG_S + SLACK_S


def test_an_unloadable_libcuda_is_said_so(monkeypatch, tmp_path):
    # A truncated libcuda.so.1 (a half-finished driver install): the loader stops at the first file of that
    # name, so this holds on any machine, one with a real driver too.
    (tmp_path / fakes.LIBRARY).write_bytes(b"\x7fELF\x02\x01\x01")
    monkeypatch.setenv("LD_LIBRARY_PATH", str(tmp_path))
    out = smoke(LiveHost())
    assert out["library"] is None and out["init"] is None
    assert out["load_error"].startswith("libcuda.so.1 not found or not loadable: ")


def test_an_absent_libcuda_is_said_so():
    # The program takes the library's name as an argument, so absence can be staged on any machine.
    argv = [sys.executable, "-I", "-B", "-c", cuda_smoke.source(), "libcuda-that-does-not-exist.so.1"]
    out = json.loads(subprocess.run(argv, capture_output=True, text=True, timeout=30, check=True).stdout)
    assert out["load_error"] == (
        "libcuda-that-does-not-exist.so.1 not found or not loadable: libcuda-that-does-not-exist.so.1: "
        "cannot open shared object file: No such file or directory"
    )


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("sideways", "sideways: unknown item"),
        ("devices=99", "devices=99: expected devices=N with N from 0 to 16"),
        ("ctx=1", "ctx=1: expected ctx=D:CODE or ctx=D:hang"),
    ],
)
def test_a_scenario_mistake_fails_loudly(scenario, value, problem):
    scenario(value)
    answer = LiveHost().cuda_smoke()
    assert answer["stderr"] == f"fake_cuda: scenario: {problem}\n"
    assert json.loads(answer["stdout"])["error"]["name"] == "CUDA_ERROR_INVALID_VALUE"


def test_runtime_children_get_only_the_variables_they_need(monkeypatch):
    monkeypatch.setenv("GPUDOCTOR_TEST_SECRET", "do not pass me on")
    monkeypatch.setenv("FAKE_CUDA_SCENARIO", "802")
    monkeypatch.setenv("CUDA_HOME", "/usr/local/cuda-13.0")
    monkeypatch.setenv("PYTHONPATH", "/somewhere")
    argv = (sys.executable, "-c", "import json, os; print(json.dumps(dict(os.environ)))")
    env = json.loads(LiveHost()._child(argv, 5.0, "environment")["stdout"])
    assert not {"GPUDOCTOR_TEST_SECRET", "PYTHONPATH", "FAKE_CUDA_SCENARIO"} & set(env)
    assert (env["CUDA_HOME"], env["XLA_PYTHON_CLIENT_PREALLOCATE"], env["LC_ALL"]) == (
        "/usr/local/cuda-13.0",
        "false",
        "C",
    )


# --- the framework children ---------------------------------------------------------------------------------


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


# --- the probe, end to end --------------------------------------------------------------------------------


def values(facts: dict[str, Fact], prefix: str) -> dict:
    return {
        k[len(prefix) :]: (f.value if f.known else ("?", f.unknown))
        for k, f in facts.items()
        if k.startswith(prefix)
    }


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
