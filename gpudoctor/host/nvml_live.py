"""NVML through pynvml, isolated in one worker thread so that a hung call cannot hold the run.

Every call is handed to a daemon thread and waited for with a timeout. When a call does not come back in
time, the session is marked hung: that call and every later one fail with NVMLError_Timeout at once, and the
stuck thread is abandoned (it is a daemon thread, so it never holds the process at exit).
Readings are converted to plain data exactly as snapshots store them.
"""

from __future__ import annotations

import os
import queue
import threading
from typing import Any, Callable, Optional

from .base import NvmlError

TIMED_OUT_NAME = "NVMLError_Timeout"

_CLOCKS = {"GRAPHICS": 0, "SM": 1, "MEM": 2, "VIDEO": 3}
# Symbolic arguments, as snapshot keys spell them, and the integers pynvml takes.
SYMBOLIC_ARGS: dict[str, dict[str, tuple[int, ...]]] = {
    "nvmlDeviceGetClockInfo": {k: (v,) for k, v in _CLOCKS.items()},
    "nvmlDeviceGetMaxClockInfo": {k: (v,) for k, v in _CLOCKS.items()},
    "nvmlDeviceGetApplicationsClock": {k: (v,) for k, v in _CLOCKS.items()},
    "nvmlDeviceGetTemperature": {"GPU": (0,)},
    "nvmlDeviceGetTemperatureThreshold": {
        "SHUTDOWN": (0,),
        "SLOWDOWN": (1,),
        "MEM_MAX": (2,),
        "GPU_MAX": (3,),
    },
    "nvmlDeviceGetTotalEccErrors": {
        "CORRECTED,VOLATILE": (0, 0),
        "CORRECTED,AGGREGATE": (0, 1),
        "UNCORRECTED,VOLATILE": (1, 0),
        "UNCORRECTED,AGGREGATE": (1, 1),
    },
    "nvmlDeviceGetPcieThroughput": {"TX": (0,), "RX": (1,)},
    # nvmlPageRetirementCause_t
    "nvmlDeviceGetRetiredPages": {"MULTIPLE_SINGLE_BIT_ECC_ERRORS": (0,), "DOUBLE_BIT_ECC_ERROR": (1,)},
    # "LINK,COUNTER": nvmlNvLinkErrorCounter_t DL_REPLAY 0, DL_RECOVERY 1, DL_CRC_FLIT 2, DL_CRC_DATA 3
    "nvmlDeviceGetNvLinkErrorCounter": {
        f"{link},{name}": (link, code)
        for link in range(18)  # NVML_NVLINK_MAX_LINKS
        for name, code in (("REPLAY", 0), ("RECOVERY", 1), ("CRC_FLIT", 2), ("CRC_DATA", 3))
    },
    # nvmlDeviceGetFieldValues(handle, [field ids]), by the name of the field asked (nvml.h NVML_FI_DEV_*).
    "nvmlDeviceGetFieldValues": {"GPU_RECOVERY_ACTION": ([230],)},  # NVML_FI_DEV_GET_GPU_RECOVERY_ACTION
}
# nvmlValueType_t -> the member of nvmlValue_t that holds a field value of that type.
VALUE_MEMBERS = ("dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal")

# Calls that fill a structure the caller passes, where pynvml's function only hands NVML the pointer it is
# given: the structure is built here with nvml.h's layout (structure(): pynvml's own classes have had it
# wrong, as nvidia-ml-py 12.535's 80-byte clusterUuid, and read the one-byte state as a 4-byte int), its
# version word set as nvml.h's NVML_STRUCT_VERSION sets it (sizeof | version << 24), passed by reference, and
# the reading is the filled structure. The symbolic argument names the structure's version:
# `nvmlDeviceGetGpuFabricInfoV(v3)` (with healthSummary), `nvmlDeviceGetGpuFabricInfoV(v2)` (healthMask),
# and the unversioned `nvmlDeviceGetGpuFabricInfo`.
OUT_STRUCTS: dict[str, dict[Optional[str], str]] = {
    "nvmlDeviceGetGpuFabricInfo": {None: "nvmlGpuFabricInfo_t"},
    "nvmlDeviceGetGpuFabricInfoV": {"v2": "nvmlGpuFabricInfo_v2_t", "v3": "nvmlGpuFabricInfo_v3_t"},
}
# Calls that answer a handle (a pointer, meaningless once recorded): the reading is whether one came back.
HANDLE_RESULTS = frozenset(("nvmlDeviceGetMigDeviceHandleByIndex",))
# Calls that take a second device: the key names the peer GPU's index first, then any symbolic argument,
# e.g. `nvmlDeviceGetP2PStatus(1,READ)` asks GPU `device` about reading from GPU 1 (nvmlGpuP2PCapsIndex_t).
PEER_ARGS: dict[str, dict[str, tuple[int, ...]]] = {
    "nvmlDeviceGetP2PStatus": {"READ": (0,), "WRITE": (1,), "NVLINK": (2,), "ATOMICS": (3,), "PROP": (4,)},
    "nvmlDeviceGetTopologyCommonAncestor": {},
}


def to_plain(value: Any) -> Any:
    """pynvml results as JSON-ready data: bytes decoded, ctypes structures as dicts of their fields."""
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    if hasattr(type(value), "_length_") and hasattr(type(value), "_type_"):  # a ctypes array (uint8[16])
        return [to_plain(v) for v in value]
    fields = getattr(value, "_fields_", None)
    if fields:
        return {f[0]: to_plain(getattr(value, f[0])) for f in fields}
    if type(value).__name__ == "nvmlFriendlyObject":  # pynvml's process lists: plain attributes
        return {k: to_plain(v) for k, v in sorted(vars(value).items())}
    return repr(value)


def field_values(values: Any) -> list[dict]:
    """nvmlDeviceGetFieldValues' array as plain data: each field's id, NVML return code and value (only the
    member its valueType names: the union's other members are the same bits read as other types)."""
    out = []
    for v in values:
        member = VALUE_MEMBERS[v.valueType] if 0 <= v.valueType < len(VALUE_MEMBERS) else None
        out.append({
            "fieldId": v.fieldId,
            "nvmlReturn": v.nvmlReturn,
            "value": getattr(v.value, member) if member and v.nvmlReturn == 0 else None,
        })  # fmt: skip
    return out


def structure(name: str) -> Any:
    """An instance of one of OUT_STRUCTS' structures, as nvml.h lays it out, its version word set:
        nvmlGpuFabricInfo_t     unsigned char clusterUuid[16]; nvmlReturn_t status; unsigned int cliqueId;
                                nvmlGpuFabricState_t state (an unsigned char)                    28 bytes
        nvmlGpuFabricInfo_v2_t  unsigned int version; the same four; unsigned int healthMask     36 bytes
        nvmlGpuFabricInfo_v3_t  the same, then unsigned char healthSummary                      40 bytes
    (pynvml's nvmlGpuFabricInfo_v2 and _v3 constants, 0x02000024 and 0x03000028, say the same sizes.)"""
    import ctypes  # only once NVML is asked: pynvml has imported it already

    u8, u32 = ctypes.c_uint8, ctypes.c_uint
    base = [("clusterUuid", u8 * 16), ("status", u32), ("cliqueId", u32), ("state", u8)]
    fields, version = {
        "nvmlGpuFabricInfo_t": (base, 0),
        "nvmlGpuFabricInfo_v2_t": ([("version", u32), *base, ("healthMask", u32)], 2),
        "nvmlGpuFabricInfo_v3_t": ([("version", u32), *base, ("healthMask", u32), ("healthSummary", u8)], 3),
    }[name]
    cls = type(name, (ctypes.Structure,), {"_fields_": fields})
    struct = cls()
    if version:
        struct.version = ctypes.sizeof(cls) | version << 24
    return struct


def peer_args(function: str, arg: Optional[str]) -> tuple[int, tuple[int, ...]]:
    """(peer GPU index, other integer arguments) of a call taking a second device: "1,READ" -> (1, (0,))."""
    peer, _, rest = (arg or "").partition(",")
    table = PEER_ARGS[function]
    if not peer.isdigit() or bool(rest) != bool(table) or (rest and rest not in table):
        raise NvmlError("NVMLError_InvalidArgument", f"unknown argument {arg!r} for {function}")
    return int(peer), table.get(rest, ())


def call_args(function: str, arg: Optional[str]) -> tuple:
    if arg is None:
        return ()
    table = SYMBOLIC_ARGS.get(function)
    if table is not None and arg in table:
        return table[arg]
    if arg.isdigit():
        return (int(arg),)
    raise NvmlError("NVMLError_InvalidArgument", f"unknown argument {arg!r} for {function}")


class NvmlSession:
    """One NVML session for one check. Not shared between checks."""

    def __init__(self, loader: Optional[Callable[[], Any]] = None) -> None:
        self._loader = loader or _import_pynvml
        self._jobs: queue.Queue = queue.Queue()
        self._thread: Optional[threading.Thread] = None
        self._hung_in: Optional[str] = None
        self._running: Optional[str] = None  # what the worker is inside now, e.g. "nvmlInit"
        self._init_error: Optional[NvmlError] = None
        self._initialised = False
        self._handles: dict[int, Any] = {}
        self._lock = threading.Lock()

    @property
    def hung_in(self) -> Optional[str]:
        """The call that did not return, if one did not."""
        return self._hung_in

    @property
    def running(self) -> Optional[str]:
        """The call the worker is inside now (a stuck one stays here), if any."""
        return self._running

    def call(self, function: str, device: Optional[int], arg: Optional[str], timeout: float) -> Any:
        with self._lock:
            if self._hung_in is not None:
                raise NvmlError(TIMED_OUT_NAME, f"NVML stopped answering in {self._hung_in}")
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="gpudoctor-nvml", daemon=True)
                self._thread.start()
        if timeout <= 0:
            # Past the deadline: nothing is asked, and nothing is marked hung that was never called.
            raise NvmlError(TIMED_OUT_NAME, f"{_label(function, device)}: no time left")
        done = threading.Event()
        box: dict = {}
        self._jobs.put((function, device, arg, box, done))
        if not done.wait(timeout):
            label = _label(function, device)
            # Name what the worker is stuck in (nvmlInit, or an earlier caller's call), not just our call.
            with self._lock:
                self._hung_in = self._hung_in or self._running or label
            raise NvmlError(TIMED_OUT_NAME, f"{label} did not return within {timeout:.1f} s")
        if "error" in box:
            raise box["error"]
        return box["value"]

    # Everything below runs in the worker thread.
    def _serve(self) -> None:
        while True:
            function, device, arg, box, done = self._jobs.get()
            self._running = _label(function, device)
            try:
                box["value"] = self._do(function, device, arg)
            except NvmlError as e:
                box["error"] = e
            except Exception as e:  # noqa: BLE001 - any pynvml failure becomes a named NVML error
                box["error"] = NvmlError(type(e).__name__, str(e))
            self._running = None
            done.set()

    def _do(self, function: str, device: Optional[int], arg: Optional[str]) -> Any:
        pynvml = self._init()
        self._running = _label(function, device)
        if function == "nvmlInit":
            return None
        fn = getattr(pynvml, function, None)
        if fn is None:
            raise NvmlError("NVMLError_FunctionNotFound", f"pynvml has no {function}")
        if function in OUT_STRUCTS:
            return self._fill(pynvml, fn, function, device, arg)
        if function in PEER_ARGS:
            peer, rest = peer_args(function, arg)
            args = (self._handle(pynvml, peer), *rest)
        else:
            args = call_args(function, arg)
        if device is not None:
            args = (self._handle(pynvml, device), *args)
        result = fn(*args)
        if function == "nvmlDeviceGetFieldValues":
            return field_values(result)
        return True if function in HANDLE_RESULTS else to_plain(result)

    def _fill(self, pynvml: Any, fn: Any, function: str, device: Optional[int], arg: Optional[str]) -> Any:
        """An OUT_STRUCTS call: the structure built, filled by NVML through pynvml, returned as plain data."""
        table = OUT_STRUCTS[function]
        if arg not in table or device is None:
            raise NvmlError("NVMLError_InvalidArgument", f"unknown argument {arg!r} for {function}")
        import ctypes  # pynvml has imported it already

        struct = structure(table[arg])
        fn(self._handle(pynvml, device), ctypes.byref(struct))
        return to_plain(struct)

    def _init(self) -> Any:
        if self._init_error is not None:
            raise self._init_error
        if not self._initialised:
            self._running = "nvmlInit"  # importing pynvml and initialising NVML can hang too
        try:
            pynvml = self._loader()
        except ImportError as e:
            self._init_error = NvmlError("NVMLError_LibraryNotFound", f"pynvml is not importable: {e}")
            raise self._init_error from e
        except NvmlError as e:  # the library is not there: pynvml was never imported
            self._init_error = e
            raise
        if not self._initialised:
            try:
                pynvml.nvmlInit()
            except Exception as e:  # noqa: BLE001 - recorded by name (NVMLError_DriverNotLoaded, ...)
                self._init_error = NvmlError(type(e).__name__, str(e))
                raise self._init_error from e
            self._initialised = True
        return pynvml

    def _handle(self, pynvml: Any, index: int) -> Any:
        if index not in self._handles:
            self._handles[index] = pynvml.nvmlDeviceGetHandleByIndex(index)
        return self._handles[index]


def _label(function: str, device: Optional[int]) -> str:
    return function if device is None else f"{function} on GPU {device}"


NVML_LIBRARY = "libnvidia-ml.so.1"
# Where dlopen looks besides LD_LIBRARY_PATH and its cache (the trusted directories, ld.so(8)).
TRUSTED_DIRS = ("/lib", "/usr/lib", "/lib64", "/usr/lib64")


def _import_pynvml() -> Any:
    """pynvml, imported only when a check asks NVML something and only when the loader can find the
    library: on a machine without the driver, importing pynvml (and ctypes) would cost 20 ms to learn
    what a directory listing says."""
    if not nvml_library_findable(os.environ.get("LD_LIBRARY_PATH", "")):
        raise NvmlError(
            "NVMLError_LibraryNotFound",
            f"{NVML_LIBRARY} is not on the loader's path (LD_LIBRARY_PATH, /etc/ld.so.cache, /usr/lib)",
        )
    import pynvml  # from nvidia-ml-py

    return pynvml


def nvml_library_findable(ld_library_path: str, cache: str = "/etc/ld.so.cache") -> bool:
    """Whether dlopen("libnvidia-ml.so.1") can find the library: in an LD_LIBRARY_PATH directory, in the
    loader's cache, or in a trusted directory. When unsure (an unreadable cache), say yes."""
    for directory in [d for d in ld_library_path.split(":") if d] + list(TRUSTED_DIRS):
        if os.path.exists(os.path.join(directory, NVML_LIBRARY)):
            return True
    try:
        with open(cache, "rb") as f:
            return NVML_LIBRARY.encode() in f.read(64 * 1024 * 1024)
    except FileNotFoundError:
        return False
    except OSError:
        return True
