"""The CUDA driver smoke test (host/cuda_smoke.py), run by LiveHost as a child against the fake libcuda
(tests/conftest.py): what it says for every answer cuInit and the context calls can give."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from fake_cuda import fakes

from gpudoctor.host import cuda_smoke
from gpudoctor.host.base import TIMED_OUT, Deadline, HostError
from gpudoctor.host.live import LiveHost

from conftest import HANG_S, SLACK_S


def smoke(host: LiveHost) -> dict:
    answer = host.cuda_smoke()
    assert answer["rc"] == 0 and answer["stderr"] == "", answer
    return json.loads(answer["stdout"])


def failure(call: str, code: int, name: str, message: str, **more) -> dict:
    return {"call": call, "code": code, "name": name, "message": message, **more}


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
