"""The CUDA driver smoke test: can a process on this host initialise CUDA and open a context on every GPU?

Runs as source text in a child process (`python -I -B -c`), so it uses the standard library alone and works
on Python 3.8+. It loads the driver's `libcuda.so.1` with ctypes, as every CUDA program does, and calls
`cuDriverGetVersion`, `cuInit(0)`, `cuDeviceGetCount`, then for each device `cuDeviceGet`,
`cuDevicePrimaryCtxRetain` (the context CUDA runtimes and frameworks use) and `cuDevicePrimaryCtxRelease`.
It prints one JSON object: the library file loaded, the driver's CUDA version, the device count, each
device's outcome, and for the first call that failed, the call, its CUresult number and name (from
`cuGetErrorName`, else the table below) and the driver's message (`cuGetErrorString`). When the library
cannot be loaded it says so (`load_error`) and calls nothing. It writes nothing and reads only
/proc/self/maps (to name the library file the loader chose).

    python -I -B gpudoctor/host/cuda_smoke.py [LIBRARY]     # LIBRARY defaults to libcuda.so.1
"""

from __future__ import annotations

import json
import sys

FORMAT = 1
LIBRARY = "libcuda.so.1"

# CUresult names (cuda.h), for a driver without cuGetErrorName (it exists since CUDA 6.0) or a code it
# does not name. The probes read the name the driver gives first.
NAMES = {
    0: "CUDA_SUCCESS",
    1: "CUDA_ERROR_INVALID_VALUE",
    2: "CUDA_ERROR_OUT_OF_MEMORY",
    3: "CUDA_ERROR_NOT_INITIALIZED",
    4: "CUDA_ERROR_DEINITIALIZED",
    34: "CUDA_ERROR_STUB_LIBRARY",
    36: "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER",
    46: "CUDA_ERROR_DEVICE_UNAVAILABLE",
    100: "CUDA_ERROR_NO_DEVICE",
    101: "CUDA_ERROR_INVALID_DEVICE",
    102: "CUDA_ERROR_DEVICE_NOT_LICENSED",
    201: "CUDA_ERROR_INVALID_CONTEXT",
    214: "CUDA_ERROR_ECC_UNCORRECTABLE",
    216: "CUDA_ERROR_CONTEXT_ALREADY_IN_USE",
    220: "CUDA_ERROR_NVLINK_UNCORRECTABLE",
    304: "CUDA_ERROR_OPERATING_SYSTEM",
    500: "CUDA_ERROR_NOT_FOUND",
    800: "CUDA_ERROR_NOT_PERMITTED",
    801: "CUDA_ERROR_NOT_SUPPORTED",
    802: "CUDA_ERROR_SYSTEM_NOT_READY",
    803: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
    804: "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
    805: "CUDA_ERROR_MPS_CONNECTION_FAILED",
    999: "CUDA_ERROR_UNKNOWN",
}


def _loaded_file(fragment: str):
    """The path of the first mapped file whose name holds `fragment`, from /proc/self/maps."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                parts = line.split(None, 5)
                if len(parts) == 6 and fragment in parts[5].rsplit("/", 1)[-1]:
                    return parts[5].strip()
    except OSError:
        pass
    return None


def smoke(library: str = LIBRARY) -> dict:
    import ctypes

    out: dict = {"format": FORMAT, "library": None, "load_error": None, "driver_version": None}
    out.update({"init": None, "device_count": None, "devices": [], "error": None})
    try:
        lib = ctypes.CDLL(library)
    except OSError as e:
        out["load_error"] = f"{library} not found or not loadable: {e}"
        return out
    out["library"] = _loaded_file(library.split(".so")[0] + ".so") or library

    def text_of(function_name: str, code: int):
        function = getattr(lib, function_name, None)
        if function is None:
            return None
        text = ctypes.c_char_p()
        if function(ctypes.c_int(code), ctypes.byref(text)) != 0 or not text.value:
            return None
        return text.value.decode("utf-8", "replace")

    def failure(call: str, code: int) -> dict:
        return {
            "call": call,
            "code": code,
            "name": text_of("cuGetErrorName", code) or NAMES.get(code, f"CUresult {code}"),
            "message": text_of("cuGetErrorString", code),
        }

    version = ctypes.c_int(0)
    if lib.cuDriverGetVersion(ctypes.byref(version)) == 0:  # needs no cuInit: known even when that fails
        out["driver_version"] = version.value
    code = lib.cuInit(ctypes.c_uint(0))
    out["init"] = code
    if code != 0:
        out["error"] = failure("cuInit", code)
        return out
    count = ctypes.c_int(0)
    code = lib.cuDeviceGetCount(ctypes.byref(count))
    if code != 0:
        out["error"] = failure("cuDeviceGetCount", code)
        return out
    out["device_count"] = count.value
    release = getattr(lib, "cuDevicePrimaryCtxRelease_v2", None) or lib.cuDevicePrimaryCtxRelease
    for index in range(count.value):
        device, context = ctypes.c_int(0), ctypes.c_void_p()
        code = lib.cuDeviceGet(ctypes.byref(device), ctypes.c_int(index))
        call = "cuDeviceGet"
        if code == 0:
            code = lib.cuDevicePrimaryCtxRetain(ctypes.byref(context), device)
            call = "cuDevicePrimaryCtxRetain"
        if code == 0:
            code = release(device)
            call = "cuDevicePrimaryCtxRelease"
        entry = {"index": index, "ok": code == 0}
        if code != 0:
            entry.update(failure(call, code))
            out["error"] = out["error"] or entry
        out["devices"].append(entry)
    return out


def source() -> str:
    """This module as a program that prints smoke()'s result as JSON, for `python -c`."""
    with open(__file__, encoding="utf-8") as f:
        return f.read()


if __name__ == "__main__":
    print(json.dumps(smoke(sys.argv[1] if len(sys.argv) > 1 else LIBRARY)))
