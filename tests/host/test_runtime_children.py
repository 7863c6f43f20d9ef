"""Runtime truth (check --deep) end to end: the runtime probe (probes/runtime.py), its snapshot replay and
its rules over the real child programs, run by LiveHost against the fake libcuda and fake frameworks of
tests/host/conftest.py. The children alone are tested in test_cuda_smoke.py and test_framework_runtime.py.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from fake_cuda import fakes

from gpudoctor.derive import derive
from gpudoctor.engine.evaluate import evaluate
from gpudoctor.engine.loader import load_rules
from gpudoctor.facts import Fact, Facts
from gpudoctor.host.base import NOT_RECORDED, TIMED_OUT, Deadline
from gpudoctor.host.live import LiveHost
from gpudoctor.host.snapshot import RecordingHost, SnapshotHost, load, save
from gpudoctor.probes import python_env, runtime

from .conftest import HANG_S, SLACK_S
from conftest import run_cli


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
