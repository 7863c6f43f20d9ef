"""NVML isolation: pynvml stand-ins that fail or hang, driven through the real NvmlSession."""

from __future__ import annotations

import threading
import time
import types

import pytest

from gpudoctor.host.base import TIMED_OUT, NvmlError
from gpudoctor.host.nvml_live import NvmlSession, call_args, to_plain


def fake_pynvml(**overrides):
    class NVMLError_NotSupported(Exception):
        pass

    def not_supported(*_a):
        raise NVMLError_NotSupported("Not Supported")

    mod = types.SimpleNamespace(
        nvmlInit=lambda: None,
        nvmlSystemGetDriverVersion=lambda: b"580.159.04",
        nvmlDeviceGetHandleByIndex=lambda i: f"handle{i}",
        nvmlDeviceGetClockInfo=lambda h, clock: {"handle0": 345}[h] + clock,
        nvmlDeviceGetFanSpeed=not_supported,
    )
    for k, v in overrides.items():
        setattr(mod, k, v)
    return mod


def test_values_and_symbolic_arguments():
    s = NvmlSession(loader=fake_pynvml)
    assert s.call("nvmlSystemGetDriverVersion", None, None, 1) == "580.159.04"
    assert s.call("nvmlDeviceGetClockInfo", 0, "SM", 1) == 346  # SM is 1
    with pytest.raises(NvmlError) as e:
        s.call("nvmlDeviceGetFanSpeed", 0, None, 1)
    assert (e.value.name, e.value.reason) == ("NVMLError_NotSupported", "not supported")
    with pytest.raises(NvmlError) as e:
        s.call("nvmlNoSuchFunction", None, None, 1)
    assert e.value.name == "NVMLError_FunctionNotFound"


def test_init_failure_is_named_and_sticky():
    class NVMLError_LibRmVersionMismatch(Exception):
        pass

    calls = []

    def init():
        calls.append(1)
        raise NVMLError_LibRmVersionMismatch("RM has detected an NVML/RM version mismatch.")

    s = NvmlSession(loader=lambda: fake_pynvml(nvmlInit=init))
    for _ in range(2):
        with pytest.raises(NvmlError) as e:
            s.call("nvmlInit", None, None, 1)
        assert e.value.reason == "driver/library version mismatch"
    assert len(calls) == 1


def test_missing_pynvml_is_library_not_found():
    def loader():
        raise ImportError("No module named 'pynvml'")

    with pytest.raises(NvmlError) as e:
        NvmlSession(loader=loader).call("nvmlInit", None, None, 1)
    assert e.value.name == "NVMLError_LibraryNotFound"


def test_a_hung_call_ends_the_session_not_the_check():
    release = threading.Event()
    s = NvmlSession(loader=lambda: fake_pynvml(nvmlSystemGetDriverVersion=lambda: release.wait(30)))
    start = time.monotonic()
    with pytest.raises(NvmlError) as e:
        s.call("nvmlSystemGetDriverVersion", None, None, 0.3)
    assert e.value.reason == TIMED_OUT
    with pytest.raises(NvmlError) as e:
        s.call("nvmlDeviceGetClockInfo", 0, "SM", 5)  # fails at once: the worker is stuck
    assert e.value.reason == TIMED_OUT
    assert time.monotonic() - start < 1.0
    assert s.hung_in == "nvmlSystemGetDriverVersion"
    release.set()


def test_to_plain_and_call_args():
    import ctypes

    class Mem(ctypes.Structure):
        _fields_ = [("total", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]

    assert to_plain(Mem(10, 2)) == {"total": 10, "used": 2}
    assert to_plain((b"x", [1, 2])) == ["x", [1, 2]]
    assert call_args("nvmlDeviceGetTotalEccErrors", "UNCORRECTED,VOLATILE") == (1, 0)
    assert call_args("nvmlDeviceGetNvLinkState", "3") == (3,)
    with pytest.raises(NvmlError):
        call_args("nvmlDeviceGetClockInfo", "BOGUS")
