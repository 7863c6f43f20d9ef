"""NVML isolation: pynvml stand-ins that fail or hang, driven through the real NvmlSession."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import pytest

from gpudoctor.host.base import TIMED_OUT, NvmlError
from gpudoctor.host.nvml_live import NVML_LIBRARY, NvmlSession, call_args, nvml_library_findable, to_plain

from conftest import ROOT


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


def test_a_hang_inside_nvml_init_is_named_nvmlinit_whoever_waited():
    """Two probes ask at once and the worker hangs in nvmlInit: what timed out is nvmlInit, not a call."""
    release = threading.Event()
    s = NvmlSession(loader=lambda: fake_pynvml(nvmlInit=lambda: release.wait(30)))
    errors = []

    def ask():
        try:
            s.call("nvmlDeviceGetCount", None, None, 0.3)
        except NvmlError as e:
            errors.append(e)

    t = threading.Thread(target=ask)
    t.start()
    with pytest.raises(NvmlError):
        s.call("nvmlSystemGetDriverVersion", None, None, 0.3)
    t.join(2)
    assert [e.reason for e in errors] == [TIMED_OUT]
    assert s.hung_in == "nvmlInit"
    release.set()


def test_calls_taking_a_peer_device_get_its_handle_then_the_symbolic_argument():
    """Keys as the H200 capture writes them: nvmlDeviceGetP2PStatus(1,READ), TopologyCommonAncestor(1)."""
    seen = []

    def p2p(h1, h2, index):
        seen.append((h1, h2, index))
        return 0 if (h1, h2) == ("handle0", "handle1") else 2

    s = NvmlSession(
        loader=lambda: fake_pynvml(
            nvmlDeviceGetP2PStatus=p2p,
            nvmlDeviceGetTopologyCommonAncestor=lambda h1, h2: {"handle2": 50}.get(h2, 40),
        )
    )
    assert s.call("nvmlDeviceGetP2PStatus", 0, "1,READ", 1) == 0
    assert s.call("nvmlDeviceGetP2PStatus", 1, "0,ATOMICS", 1) == 2
    assert seen == [("handle0", "handle1", 0), ("handle1", "handle0", 3)]
    assert s.call("nvmlDeviceGetTopologyCommonAncestor", 0, "2", 1) == 50
    assert s.call("nvmlDeviceGetTopologyCommonAncestor", 0, "1", 1) == 40


@pytest.mark.parametrize(
    ("function", "arg"),
    [
        ("nvmlDeviceGetP2PStatus", "1"),  # no capability
        ("nvmlDeviceGetP2PStatus", "1,BOGUS"),
        ("nvmlDeviceGetP2PStatus", "x,READ"),
        ("nvmlDeviceGetP2PStatus", None),
        ("nvmlDeviceGetTopologyCommonAncestor", "1,READ"),  # takes no second argument
        ("nvmlDeviceGetTopologyCommonAncestor", "-1"),
    ],
)
def test_a_malformed_peer_argument_is_invalid_and_calls_nothing(function, arg):
    called = []
    s = NvmlSession(loader=lambda: fake_pynvml(**{function: lambda *a: called.append(a)}))
    with pytest.raises(NvmlError) as e:
        s.call(function, 0, arg, 1)
    assert e.value.name == "NVMLError_InvalidArgument"
    assert called == []


# --- calls that fill a structure the caller passes (OUT_STRUCTS) --------------------------------------


def _fabric_pynvml(answer: int = 0):
    """A pynvml whose nvmlDeviceGetGpuFabricInfoV fills the structure it is passed by reference, as
    libnvidia-ml does, and records what it was given: the handle, the kind of argument, the version word."""
    import ctypes

    seen = []

    def fill(handle, ref):
        struct = ref._obj  # what ctypes.byref() points at
        seen.append((handle, type(ref).__name__, struct.version, ctypes.sizeof(struct)))
        struct.clusterUuid[0], struct.state, struct.healthMask, struct.healthSummary = 0xC0, 3, 0x1AA, 1
        return answer

    return fake_pynvml(nvmlDeviceGetGpuFabricInfoV=fill), seen


def test_an_out_structure_is_built_versioned_passed_by_reference_and_returned_plain():
    mod, seen = _fabric_pynvml()
    s = NvmlSession(loader=lambda: mod)
    assert s.call("nvmlDeviceGetGpuFabricInfoV", 0, "v3", 1) == {
        "version": 0x3000028, "clusterUuid": [0xC0] + [0] * 15, "status": 0, "cliqueId": 0, "state": 3,
        "healthMask": 0x1AA, "healthSummary": 1,
    }  # fmt: skip
    assert seen == [("handle0", "CArgObject", 0x3000028, 40)]


def test_the_structures_have_nvml_h_layouts_and_pynvml_version_words():
    import ctypes

    import pynvml

    from gpudoctor.host.nvml_live import structure

    v2, v3, v1 = (structure(f"nvmlGpuFabricInfo{n}_t") for n in ("_v2", "_v3", ""))
    assert (v2.version, v3.version) == (pynvml.nvmlGpuFabricInfo_v2, pynvml.nvmlGpuFabricInfo_v3)
    assert [ctypes.sizeof(s) for s in (v1, v2, v3)] == [28, 36, 40]
    # The state is nvml.h's one-byte nvmlGpuFabricState_t; healthMask follows its padding, as in pynvml.
    assert (type(v1).state.size, type(v2).healthMask.offset) == (
        1,
        pynvml.c_nvmlGpuFabricInfo_v2_t.healthMask.offset,
    )


@pytest.mark.parametrize(
    ("function", "device", "arg"),
    [
        ("nvmlDeviceGetGpuFabricInfoV", 0, None),  # which structure?
        ("nvmlDeviceGetGpuFabricInfoV", 0, "v9"),
        ("nvmlDeviceGetGpuFabricInfoV", None, "v3"),  # no device
        ("nvmlDeviceGetGpuFabricInfo", 0, "v3"),  # the unversioned call takes no version
    ],
)
def test_an_out_structure_call_that_cannot_be_built_calls_nothing(function, device, arg):
    mod, seen = _fabric_pynvml()
    mod.nvmlDeviceGetGpuFabricInfo = lambda *a: seen.append(a)
    with pytest.raises(NvmlError) as e:
        NvmlSession(loader=lambda: mod).call(function, device, arg, 1)
    assert (e.value.name, seen) == ("NVMLError_InvalidArgument", [])


def test_to_plain_turns_ctypes_arrays_into_lists():
    import ctypes

    assert to_plain((ctypes.c_uint8 * 4)(1, 2, 3, 255)) == [1, 2, 3, 255]


# --- finding libnvidia-ml.so.1 ------------------------------------------------------------------------------
# pynvml is imported only when the loader can find libnvidia-ml.so.1 (host/nvml_live.py).


def test_found_in_ld_library_path(tmp_path):
    (tmp_path / NVML_LIBRARY).write_bytes(b"")
    assert nvml_library_findable(f"/nowhere:{tmp_path}", cache=str(tmp_path / "no-cache"))


def test_found_in_the_loader_cache(tmp_path):
    cache = tmp_path / "ld.so.cache"
    cache.write_bytes(
        b"glibc-ld.so.cache1.1\x00libnvidia-ml.so.1\x00/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"
    )
    assert nvml_library_findable("", cache=str(cache))


def test_absent_everywhere(tmp_path):
    cache = tmp_path / "ld.so.cache"
    cache.write_bytes(b"glibc-ld.so.cache1.1\x00libc.so.6\x00/lib/x86_64-linux-gnu/libc.so.6")
    trusted = ("/lib", "/usr/lib", "/lib64", "/usr/lib64")
    found_in_trusted = any((Path(d) / NVML_LIBRARY).exists() for d in trusted)
    assert nvml_library_findable(str(tmp_path), cache=str(cache)) is found_in_trusted


def test_a_check_without_the_library_never_imports_pynvml(tmp_path):
    """On this machine (no NVIDIA driver) the NVML status is the same as pynvml would say, without it."""
    if nvml_library_findable("", "/etc/ld.so.cache"):
        # A machine with the driver: the library is found, and pynvml is imported as it must be.
        return
    prog = (
        "import sys, json; from gpudoctor.host.live import LiveHost\n"
        "from gpudoctor.host.base import NvmlError\n"
        "try:\n    LiveHost().nvml('nvmlSystemGetDriverVersion')\n"
        "except NvmlError as e:\n    print(json.dumps([e.name, 'pynvml' in sys.modules]))\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "LD_LIBRARY_PATH": str(tmp_path)}
    r = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, env=env, timeout=60)
    assert r.stdout.strip() == '["NVMLError_LibraryNotFound", false]', r.stderr
