"""The runtime probe (`check --deep`): what CUDA and the frameworks really do, from child processes.

Metadata says what a framework was built for; only running it says whether it works here. This probe runs,
in parallel and each under its own time limit within the check's deadline:

- the CUDA driver smoke test (host.cuda_smoke(), gpudoctor/host/cuda_smoke.py): libcuda loaded, cuInit, a
  context on every GPU, the exact CUresult of the first call that failed;
- one child per framework installed in the inspected interpreter (host.framework_runtime(), see
  gpudoctor/host/framework_runtime.py): the framework imported, asked what it sees;
- when torch is installed, one child that reads the GPU architectures of the CUDA extensions of the
  distributions that depend on torch (host.cuda_binaries(), gpudoctor/host/cuda_binaries.py): the SASS and
  PTX in each shared library's `.nv_fatbin` section.

It produces `runtime.*` facts and the `extensions[]` list. Each child's raw output ({"rc", "stdout",
"stderr"}) is parsed by the pure functions below; a child that timed out, crashed or was not recorded
leaves its facts unknown with that reason, and a framework that is not installed leaves its facts unknown
as "not installed".
"""

from __future__ import annotations

import json
import re
import signal
import threading
from typing import Any, Callable, Optional, Union

from ..facts import FRAMEWORKS, Fact, FactSpec, known, list_facts, unknown
from ..host.base import HostError
from . import ProbeSpec, python_env

FACT_SPECS: tuple[FactSpec, ...] = (
    FactSpec(
        "runtime.cuda.status",
        "str",
        "",
        "the CUDA driver smoke test: `ok` (cuInit and a context on every GPU), `failed` (a call returned an "
        "error: see runtime.cuda.result), `no library` (libcuda.so.1 not found or not loadable) or `crashed`",
    ),
    FactSpec(
        "runtime.cuda.library",
        "str",
        "",
        "the libcuda file the loader chose, e.g. /usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05",
    ),
    FactSpec(
        "runtime.cuda.driver_version",
        "version",
        "",
        "newest CUDA the loaded libcuda supports (cuDriverGetVersion), e.g. 13.0",
    ),
    FactSpec(
        "runtime.cuda.device_count",
        "int",
        "",
        "GPUs CUDA sees (cuDeviceGetCount, after CUDA_VISIBLE_DEVICES)",
    ),
    FactSpec(
        "runtime.cuda.failed_devices", "list[int]", "", "CUDA devices on which no context could be opened"
    ),
    FactSpec(
        "runtime.cuda.failed_device_count", "int", "", "how many devices are in runtime.cuda.failed_devices"
    ),
    FactSpec(
        "runtime.cuda.failed_call",
        "str",
        "",
        "the first driver call that failed, e.g. cuInit, cuDevicePrimaryCtxRetain",
    ),
    FactSpec(
        "runtime.cuda.result",
        "str",
        "",
        "the CUresult of that call by name, e.g. CUDA_ERROR_SYSTEM_NOT_READY; CUDA_SUCCESS when none failed",
    ),
    FactSpec("runtime.cuda.code", "int", "", "its number, e.g. 802; 0 when none failed"),
    FactSpec(
        "runtime.cuda.error",
        "str",
        "",
        "what failed, in one line: the call, the device, the CUresult and the driver's message",
    ),
    FactSpec(
        "runtime.python",
        "str",
        "",
        "the interpreter the frameworks were imported in (the one python.* describes)",
    ),
    FactSpec(
        "runtime.import_failures",
        "list[str]",
        "",
        "the installed frameworks whose import failed or crashed, each as `name: Type: message`",
    ),
    FactSpec("runtime.import_failure_count", "int", "", "how many are in runtime.import_failures"),
    FactSpec(
        "runtime.torch.status",
        "str",
        "",
        "`ok` (imported), `import failed` or `crashed`; the same field exists for tensorflow, jax, cupy and "
        "onnxruntime",
    ),
    FactSpec(
        "runtime.torch.error",
        "str",
        "",
        "the import error, or, when torch imported but CUDA is not available, the exact CUDA initialisation "
        "error (torch.cuda.init(), else its warning)",
    ),
    FactSpec("runtime.torch.version", "str", "", "torch.__version__ as imported, e.g. 2.9.0+cu128"),
    FactSpec(
        "runtime.torch.build",
        "str",
        "",
        "`cuda`, `rocm` or `cpu`: what the imported torch says it was built for",
    ),
    FactSpec("runtime.torch.cuda", "version", "", "torch.version.cuda: the CUDA it was built with"),
    FactSpec("runtime.torch.cuda_available", "bool", "", "torch.cuda.is_available()"),
    FactSpec("runtime.torch.device_count", "int", "", "torch.cuda.device_count()"),
    FactSpec(
        "runtime.torch.capabilities",
        "list[str]",
        "",
        'each CUDA device\'s compute capability as torch sees it, e.g. ["9.0"]',
    ),
    FactSpec(
        "runtime.torch.arch_list",
        "list[str]",
        "",
        "torch.cuda.get_arch_list(): the architectures compiled in, e.g. sm_90, compute_90 (PTX)",
    ),
    FactSpec(
        "runtime.torch.cudnn", "version", "", "the cuDNN torch really loaded (torch.backends.cudnn.version())"
    ),
    FactSpec("runtime.torch.cudnn_path", "str", "", "the libcudnn file it was loaded from (/proc/self/maps)"),
    FactSpec("runtime.torch.nccl", "version", "", "the NCCL version torch uses (torch.cuda.nccl.version())"),
    FactSpec(
        "runtime.torch.unsupported_devices",
        "list[int]",
        "",
        "derived: CUDA devices whose compute capability runtime.torch.arch_list has no code for",
    ),
    FactSpec(
        "runtime.torch.unsupported_device_count",
        "int",
        "",
        "derived: how many devices are in runtime.torch.unsupported_devices",
    ),
    FactSpec(
        "runtime.torch.unsupported_ccs",
        "list[str]",
        "",
        "derived: the distinct compute capabilities of the devices in runtime.torch.unsupported_devices",
    ),
    FactSpec(
        "runtime.torch.cudnn_pinned",
        "version",
        "",
        "derived: the cuDNN the installed torch wheel pins (frameworks[].cudnn), to the three parts torch "
        "reports, e.g. 9.10.2",
    ),
    FactSpec("runtime.tensorflow.status", "str", "", "`ok`, `import failed` or `crashed`"),
    FactSpec(
        "runtime.tensorflow.error",
        "str",
        "",
        "the import error, or, when it lists no GPU, the reason TensorFlow logged (e.g. Cannot dlopen some "
        "GPU libraries)",
    ),
    FactSpec("runtime.tensorflow.version", "str", "", "tf.__version__ as imported"),
    FactSpec("runtime.tensorflow.cuda_build", "bool", "", "tf.sysconfig.get_build_info()['is_cuda_build']"),
    FactSpec("runtime.tensorflow.cuda", "version", "", "the CUDA version in its build info"),
    FactSpec("runtime.tensorflow.cudnn", "version", "", "the cuDNN version in its build info"),
    FactSpec("runtime.tensorflow.gpu_count", "int", "", "GPUs tf.config.list_physical_devices('GPU') lists"),
    FactSpec("runtime.jax.status", "str", "", "`ok`, `import failed` or `crashed`"),
    FactSpec(
        "runtime.jax.error",
        "str",
        "",
        "the import error, or, when JAX runs on the CPU, why (its fall-back message or the GPU backend's "
        "error)",
    ),
    FactSpec("runtime.jax.version", "str", "", "jax.__version__ as imported"),
    FactSpec(
        "runtime.jax.platform", "str", "", "jax.default_backend(): `gpu`, `cuda`, `rocm`, `tpu` or `cpu`"
    ),
    FactSpec("runtime.jax.device_count", "int", "", "devices jax.devices() lists"),
    FactSpec(
        "runtime.jax.cuda_plugin",
        "bool",
        "",
        "a JAX CUDA plugin (jax-cuda12-plugin, jax-cuda13-plugin) is importable",
    ),
    FactSpec("runtime.jax.fell_back", "bool", "", "JAX runs on the CPU although a CUDA plugin is installed"),
    FactSpec("runtime.cupy.status", "str", "", "`ok`, `import failed` or `crashed`"),
    FactSpec(
        "runtime.cupy.error",
        "str",
        "",
        "the import error, or the CUDA error CuPy raised (e.g. getDeviceCount)",
    ),
    FactSpec("runtime.cupy.version", "str", "", "cupy.__version__ as imported"),
    FactSpec(
        "runtime.cupy.runtime_version",
        "version",
        "",
        "the CUDA runtime CuPy loaded (runtimeGetVersion), e.g. 12.8",
    ),
    FactSpec(
        "runtime.cupy.driver_version",
        "version",
        "",
        "the driver's CUDA version as CuPy sees it (driverGetVersion)",
    ),
    FactSpec("runtime.cupy.device_count", "int", "", "cupy.cuda.runtime.getDeviceCount()"),
    FactSpec("runtime.onnxruntime.status", "str", "", "`ok`, `import failed` or `crashed`"),
    FactSpec(
        "runtime.onnxruntime.error",
        "str",
        "",
        "the import error, or the error get_available_providers() raised",
    ),
    FactSpec("runtime.onnxruntime.version", "str", "", "onnxruntime.__version__ as imported"),
    FactSpec(
        "runtime.onnxruntime.device",
        "str",
        "",
        "onnxruntime.get_device(): `GPU` for a CUDA build, else `CPU`",
    ),
    FactSpec(
        "runtime.onnxruntime.providers",
        "list[str]",
        "",
        "onnxruntime.get_available_providers(), e.g. CUDAExecutionProvider, CPUExecutionProvider",
    ),
    FactSpec(
        "extensions.count",
        "int",
        "",
        "CUDA extensions (check --deep): shared libraries of the distributions that depend on torch "
        "(flash-attn, xformers, torchvision's _C, ...) that carry GPU code of their own (an .nv_fatbin "
        "section); 0 without torch; editable installs, whose RECORD lists no library, are not seen",
    ),
    FactSpec("extensions[].distribution", "str", "", "the distribution that installed it, e.g. flash-attn"),
    FactSpec("extensions[].version", "str", "", "that distribution's version, e.g. 2.8.3"),
    FactSpec(
        "extensions[].file", "str", "", "the shared library, e.g. .../site-packages/flash_attn_2_cuda.so"
    ),
    FactSpec(
        "extensions[].arch",
        "list[str]",
        "",
        "the GPU code it carries, in torch.cuda.get_arch_list()'s form: sm_XY machine code (SASS) for "
        "compute capability X.Y (sm_90a: for 9.0 alone; sm_100f: for the 10.x family), compute_XY PTX the "
        "driver can compile for X.Y and newer",
    ),
    FactSpec(
        "extensions[].unsupported_gpus",
        "list[int]",
        "",
        "derived: GPUs (NVML index) it has neither machine code nor PTX the driver can compile for (the "
        "PTX judged as made by the CUDA of the installed torch: torch.utils.cpp_extension builds with that "
        "major)",
    ),
    FactSpec(
        "extensions[].unsupported_gpu_count", "int", "", "derived: how many GPUs are in unsupported_gpus"
    ),
    FactSpec(
        "extensions[].unsupported_ccs",
        "list[str]",
        "",
        "derived: the distinct compute capabilities of the GPUs in unsupported_gpus",
    ),
    FactSpec(
        "extensions[].torch_covers",
        "bool",
        "",
        "derived: the installed torch build has code for every GPU in unsupported_gpus "
        "(frameworks[].unsupported_gpus)",
    ),
    FactSpec(
        "extensions[].rebuild_arch",
        "str",
        "",
        "derived: TORCH_CUDA_ARCH_LIST for a rebuild that runs on every GPU here: their distinct compute "
        "capabilities, e.g. 8.0;9.0",
    ),
)
PROBE = ProbeSpec("runtime", profiles=(), per_env=True, deep=True)

CUDA_FIELDS = (
    "status",
    "library",
    "driver_version",
    "device_count",
    "failed_devices",
    "failed_device_count",
    "failed_call",
    "result",
    "code",
    "error",
)
FIELDS = {
    "torch": (
        "status",
        "error",
        "version",
        "build",
        "cuda",
        "cuda_available",
        "device_count",
        "capabilities",
        "arch_list",
        "cudnn",
        "cudnn_path",
        "nccl",
    ),
    "tensorflow": ("status", "error", "version", "cuda_build", "cuda", "cudnn", "gpu_count"),
    "jax": ("status", "error", "version", "platform", "device_count", "cuda_plugin", "fell_back"),
    "cupy": ("status", "error", "version", "runtime_version", "driver_version", "device_count"),
    "onnxruntime": ("status", "error", "version", "device", "providers"),
}
NOT_INSTALLED = "not installed"
NO_ERROR = "no error"
Answer = Union[dict, HostError]  # what a host method gave: the child's output, or why there is none

# --- pure parsing ---------------------------------------------------------------------------------------


def child_json(stdout: str) -> Optional[dict]:
    """The JSON object a runtime child printed (its last non-empty line), or None."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    if not lines:
        return None
    try:
        data = json.loads(lines[-1])
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def exit_text(rc: Optional[int], stderr: str) -> str:
    """How a child that printed no answer ended: "was killed by signal 11 (SIGSEGV): <last stderr line>"."""
    if rc is not None and rc < 0:
        try:
            name = f" ({signal.Signals(-rc).name})"
        except ValueError:
            name = ""
        how = f"was killed by signal {-rc}{name}"
    else:
        how = f"exited with status {rc}" if rc else "printed no answer"
    lines = [" ".join(line.split()) for line in stderr.splitlines() if line.strip()]
    return f"{how}: {lines[-1][:300]}" if lines else how


def cuda_version(number: Any) -> Optional[str]:
    """A CUDA version integer as CUDA's APIs give it: 13000 -> "13.0", 12080 -> "12.8"."""
    if not isinstance(number, int) or isinstance(number, bool) or number <= 0:
        return None
    return f"{number // 1000}.{number % 1000 // 10}"


def cudnn_version(number: Any) -> Optional[str]:
    """torch.backends.cudnn.version(): 91002 -> "9.10.2" (cuDNN 9 and later), 8902 -> "8.9.2" (before)."""
    if not isinstance(number, int) or isinstance(number, bool) or number <= 0:
        return None
    if number >= 90000:
        return f"{number // 10000}.{number % 10000 // 100}.{number % 100}"
    return f"{number // 1000}.{number % 1000 // 100}.{number % 100}"


def cudnn_file(paths: Any) -> Optional[str]:
    """The cuDNN library a process loaded, from the libcudnn* files mapped into it: libcudnn.so.N itself
    (cuDNN 9 loads its sub-libraries, libcudnn_graph.so.9 and others, from beside it), else the first."""
    files = [p for p in paths if isinstance(p, str)] if isinstance(paths, list) else []
    main = [p for p in files if re.match(r"libcudnn\.so", p.rsplit("/", 1)[-1])]
    return (main or files or [None])[0]


# TensorFlow says why it sees no GPU in its C++ log (stderr), lines such as
# "2025-01-01 10:00:00.000000: W tensorflow/.../gpu_device.cc:2344] Cannot dlopen some GPU libraries. ...".
_TF_LOG_PREFIX = re.compile(r"^\S+ \S+: [IWEF] \S+\] ")
_TF_GPU_REASON = re.compile(
    r"Cannot dlopen|Could not find cuda drivers|failed call to cuInit|CUDA_ERROR|Could not load dynamic"
    r"|GPU will not be used|Skipping registering GPU devices|cuda driver"
)


def tensorflow_gpu_reason(stderr: str) -> Optional[str]:
    """The first line of TensorFlow's log that says why it registered no GPU, without its log prefix."""
    for line in stderr.splitlines():
        text = _TF_LOG_PREFIX.sub("", line.strip())
        if _TF_GPU_REASON.search(text):
            return text[:500]
    return None


def _s(value: Any) -> Optional[str]:
    return value if isinstance(value, str) and value else None


def _int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _strs(value: Any) -> Optional[list[str]]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else None


def _fact(value: Any, why: str, source: str) -> Fact:
    """Known when value is not None, else unknown for `why`."""
    return known(value, source) if value is not None else unknown(why, source)


def cuda_facts(answer: Answer, source: str) -> dict[str, Fact]:
    """`runtime.cuda.*` from the smoke test's answer (gpudoctor/host/cuda_smoke.py's output)."""
    if isinstance(answer, HostError):
        return {f: unknown(answer.reason, source) for f in CUDA_FIELDS}
    data = child_json(answer.get("stdout", ""))
    if data is None:
        why = f"the smoke test {exit_text(answer.get('rc'), answer.get('stderr', ''))}"
        out = {f: unknown(why, source) for f in CUDA_FIELDS}
        out["status"] = known("crashed", source)
        out["error"] = known(why, source)
        return out
    out: dict[str, Fact] = {}
    if _s(data.get("load_error")):
        why = str(data["load_error"])
        out = {f: unknown(why, source) for f in CUDA_FIELDS}
        out["status"] = known("no library", source)
        out["error"] = known(why, source)
        return out
    error = data.get("error") if isinstance(data.get("error"), dict) else None
    out["status"] = known("failed" if error else "ok", source)
    out["library"] = _fact(_s(data.get("library")), "not reported", source)
    out["driver_version"] = _fact(
        cuda_version(data.get("driver_version")), "cuDriverGetVersion failed", source
    )
    init_failed = error is not None and error.get("call") in ("cuInit", "cuDeviceGetCount")
    why_no_devices = f"{error.get('call')} failed" if error and init_failed else "not reported"
    count = _int(data.get("device_count"))
    out["device_count"] = _fact(count, why_no_devices, source)
    listed = data.get("devices")
    devices = [d for d in listed if isinstance(d, dict)] if isinstance(listed, list) else []
    failed = [d.get("index") for d in devices if d.get("ok") is not True and _int(d.get("index")) is not None]
    if count is None:
        out["failed_devices"] = unknown(why_no_devices, source)
        out["failed_device_count"] = unknown(why_no_devices, source)
    else:
        out["failed_devices"] = known(failed, source)
        out["failed_device_count"] = known(len(failed), source)
    if error is None:
        out["failed_call"] = unknown(NO_ERROR, source)
        out["result"] = known("CUDA_SUCCESS", source)
        out["code"] = known(0, source)
        out["error"] = unknown(NO_ERROR, source)
        return out
    code = _int(error.get("code"))
    name = _s(error.get("name")) or (f"CUresult {code}" if code is not None else "unknown CUresult")
    call = _s(error.get("call")) or "a call"
    where = f" on device {error['index']}" if _int(error.get("index")) is not None else ""
    message = f": {error['message']}" if _s(error.get("message")) else ""
    out["failed_call"] = known(call, source)
    out["result"] = known(name, source)
    out["code"] = _fact(code, "not reported", source)
    out["error"] = known(f"{call}{where} failed with {name} ({code}){message}", source)
    return out


def _child(answer: Answer, framework: str) -> tuple[Optional[dict], dict[str, Any]]:
    """(the framework's result data, {"status", "error"}) from a framework child's answer; the result is
    None when the framework could not be asked anything, and then "why" says why."""
    if isinstance(answer, HostError):
        return None, {"why": answer.reason}
    data = child_json(answer.get("stdout", ""))
    if data is None:
        how = f"the {framework} import {exit_text(answer.get('rc'), answer.get('stderr', ''))}"
        return None, {"status": "crashed", "error": how, "why": how}
    if _s(data.get("import_error")):
        text = str(data["import_error"])
        return None, {"status": "import failed", "error": text, "why": f"import failed: {text}"}
    result = data.get("result")
    if not isinstance(result, dict):
        return None, {"why": "malformed answer"}
    notes = [m for key in ("warnings", "log") for m in _strs(data.get(key)) or []]
    return result, {"status": "ok", "notes": notes}


def framework_facts(framework: str, answer: Answer, source: str) -> dict[str, Fact]:
    """`runtime.<framework>.*` from one framework child's answer."""
    result, state = _child(answer, framework)
    fields = FIELDS[framework]
    if result is None:
        out = {f: unknown(state["why"], source) for f in fields}
        if "status" in state:
            out["status"] = known(state["status"], source)
            out["error"] = known(state["error"], source)
        return out
    stderr = answer.get("stderr", "") if isinstance(answer, dict) else ""
    values = READERS[framework](result, state["notes"], stderr)
    out = {"status": known("ok", source)}
    for field in fields[1:]:
        value = values.get(field)
        if isinstance(value, Fact):
            out[field] = value if value.source else Fact(value.value, source, value.unknown)
        else:
            out[field] = _fact(value, "not reported", source)
    return out


def _why(reason: str) -> Fact:
    """An unknown value for framework_facts to fill in the source of."""
    return unknown(reason)


def _known_or(value: Any, error: Any) -> Any:
    """The value, else unknown for the error the child reported getting it (or "not reported")."""
    return value if value is not None else _why(_s(error) or "not reported")


def _torch(r: dict, notes: list[str], stderr: str) -> dict[str, Any]:
    cuda, hip = _s(r.get("cuda")), _s(r.get("hip"))
    build = "cuda" if cuda else "rocm" if hip else "cpu"
    gpu_build = build != "cpu"
    not_cuda = _why("not a CUDA build")
    available = r.get("cuda_available") is True
    error: Any = _why(NO_ERROR)
    if not available and gpu_build:
        cuda_notes = [n for n in notes if re.search(r"CUDA|cuda|driver|GPU", n)]
        error = (
            _s(r.get("init_error"))
            or _s(r.get("cuda_available_error"))
            or (cuda_notes[0] if cuda_notes else None)
            or "torch.cuda.is_available() is False, without an error message"
        )
    arch = _strs(r.get("arch_list")) or []
    caps = r.get("capabilities")
    if isinstance(caps, list) and not all(isinstance(c, str) for c in caps):
        failures = _strs(r.get("device_errors")) or []
        caps = _why("a GPU's compute capability could not be read" + (f": {failures[0]}" if failures else ""))
    elif not available or not isinstance(caps, list):
        caps = _why("CUDA is not available" if not available else "not reported")
    cudnn = cudnn_version(r.get("cudnn"))
    cudnn_why = _s(r.get("cudnn_error")) or "torch loaded no cuDNN"
    cudnn_path = cudnn_file(r.get("cudnn_files"))
    return {
        "version": _s(r.get("version")) or _why("not reported"),
        "build": build,
        "cuda": cuda or not_cuda,
        "cuda_available": available,
        "device_count": _known_or(_int(r.get("device_count")), r.get("device_count_error")),
        "capabilities": caps,
        "arch_list": arch or (_why("torch lists no compiled architectures") if gpu_build else not_cuda),
        "cudnn": (cudnn or _why(cudnn_why)) if gpu_build else not_cuda,
        "cudnn_path": (cudnn_path or _why("no libcudnn file is mapped")) if gpu_build else not_cuda,
        "nccl": (_s(r.get("nccl")) or _why(_s(r.get("nccl_error")) or "not reported")) if cuda else not_cuda,
        "error": error,
    }


def _tensorflow(r: dict, notes: list[str], stderr: str) -> dict[str, Any]:
    info = r.get("build_info") if isinstance(r.get("build_info"), dict) else {}
    flag = info.get("is_cuda_build")
    cuda_build = flag if isinstance(flag, bool) else (str(flag) == "True" if flag is not None else None)
    gpus = _strs(r.get("gpus"))
    error: Any = _why(NO_ERROR)
    if not gpus:
        error = (
            _s(r.get("gpus_error"))
            or tensorflow_gpu_reason(stderr)
            or "TensorFlow lists no GPU, without an error message"
        )
    not_cuda = _why("not a CUDA build" if cuda_build is False else "not reported")
    return {
        "version": _s(r.get("version")) or _why("not reported"),
        "cuda_build": _known_or(cuda_build, r.get("build_info_error")),
        "cuda": python_env.tf_version(info.get("cuda_version")) or not_cuda,
        "cudnn": python_env.tf_version(info.get("cudnn_version")) or not_cuda,
        "gpu_count": _known_or(len(gpus) if gpus is not None else None, r.get("gpus_error")),
        "error": error,
    }


def _jax(r: dict, notes: list[str], stderr: str) -> dict[str, Any]:
    platform = _s(r.get("platform"))
    devices = _strs(r.get("devices"))
    plugin = bool(_strs(r.get("cuda_plugins")))
    error: Any = _why(NO_ERROR)
    if platform == "cpu":
        told = [n for n in notes if re.search(r"Unable to initialize backend|[Ff]alling back|CUDA|cuda", n)]
        error = (
            (told[0] if told else None) or _s(r.get("gpu_error")) or "JAX runs on the CPU, without a message"
        )
    return {
        "version": _s(r.get("version")) or _why("not reported"),
        "platform": _known_or(platform, r.get("platform_error")),
        "device_count": _known_or(len(devices) if devices is not None else None, r.get("devices_error")),
        "cuda_plugin": plugin,
        "fell_back": (platform == "cpu" and plugin) if platform else _why("platform not reported"),
        "error": error,
    }


def _cupy(r: dict, notes: list[str], stderr: str) -> dict[str, Any]:
    count = _int(r.get("device_count"))
    failure = _s(r.get("device_count_error")) or _s(r.get("runtime_version_error"))
    return {
        "version": _s(r.get("version")) or _why("not reported"),
        "runtime_version": _known_or(cuda_version(r.get("runtime_version")), r.get("runtime_version_error")),
        "driver_version": _known_or(cuda_version(r.get("driver_version")), r.get("driver_version_error")),
        "device_count": _known_or(count, failure),
        "error": failure or _why(NO_ERROR),
    }


def _onnxruntime(r: dict, notes: list[str], stderr: str) -> dict[str, Any]:
    providers = _strs(r.get("providers"))
    return {
        "version": _s(r.get("version")) or _why("not reported"),
        "device": _known_or(_s(r.get("device")), r.get("device_error")),
        "providers": _known_or(providers, r.get("providers_error")),
        "error": _s(r.get("providers_error")) or _why(NO_ERROR),
    }


READERS: dict[str, Callable[[dict, list[str], str], dict[str, Any]]] = {
    "torch": _torch,
    "tensorflow": _tensorflow,
    "jax": _jax,
    "cupy": _cupy,
    "onnxruntime": _onnxruntime,
}


def import_failures(facts: dict[str, Fact], installed: set[str]) -> tuple[list[str], Optional[str]]:
    """(["torch: ImportError: ...", ...] for each installed framework whose import failed or crashed, None),
    or (those, why the list is incomplete) when a framework did not answer (timed out, ...)."""
    failed, why = [], None
    for name in FRAMEWORKS:
        status = facts.get(f"runtime.{name}.status")
        if name not in installed or status is None:
            continue
        if not status.known:
            why = why or f"{name}: {status.unknown}"
        elif status.value in ("import failed", "crashed"):
            failed.append(f"{name}: {facts[f'runtime.{name}.error'].value}")
    return failed, why


EXTENSION_FIELDS = ("distribution", "version", "file", "arch")


def extension_arch(sass: Any, ptx: Any) -> Optional[list[str]]:
    """An extension's architectures in torch.cuda.get_arch_list()'s form, SASS then PTX: ["sm_80", "sm_90",
    "compute_90"]; None when the child's lists are not lists of such names."""
    names = (_strs(sass) or []) + (_strs(ptx) or [])
    if not isinstance(sass, list) or not isinstance(ptx, list) or len(names) != len(sass) + len(ptx):
        return None
    if not all(re.fullmatch(r"(sm|compute)_\d{2,3}[af]?", n) for n in names):
        return None
    return names


def extension_facts(answer: Answer, source: str) -> tuple[list[dict[str, Fact]], Optional[str]]:
    """(one {field: Fact} per CUDA extension the scan found, None), or ([], why the list is unknown). A
    shared library that could not be read is listed with its arch unknown, for that reason: it may be one."""
    if isinstance(answer, HostError):
        return [], answer.reason
    data = child_json(answer.get("stdout", ""))
    if data is None:
        return [], f"the extension scan {exit_text(answer.get('rc'), answer.get('stderr', ''))}"
    if _s(data.get("not_read")):
        return [], f"not every extension was read: {data['not_read']}"
    found, unreadable = data.get("extensions"), data.get("unreadable")
    if not isinstance(found, list) or not isinstance(unreadable, list):
        return [], "malformed answer"
    items = []
    for entry in [e for e in found + unreadable if isinstance(e, dict)]:
        item = {f: _fact(_s(entry.get(f)), "not reported", source) for f in EXTENSION_FIELDS[:3]}
        if "reason" in entry:
            item["arch"] = unknown(f"unreadable: {_s(entry.get('reason')) or 'no reason given'}", source)
        else:
            arch = extension_arch(entry.get("sass"), entry.get("ptx"))
            item["arch"] = _fact(arch, "malformed answer", source)
        items.append(item)
    return items, None


# --- probe ----------------------------------------------------------------------------------------------


def _parallel(tasks: dict[str, Callable[[], Any]]) -> dict[str, Answer]:
    """Each task in a thread of its own, all at once; each answer, or the HostError it raised. Every task is
    a host call under its own time limit within the deadline, so the joins end."""
    answers: dict[str, Answer] = {}

    crashed: list[Exception] = []

    def work(name: str, task: Callable[[], Any]) -> None:
        try:
            answers[name] = task()
        except HostError as e:
            answers[name] = e
        except Exception as e:  # noqa: BLE001 - raised again below, in the probe's own thread
            crashed.append(e)

    threads = [
        threading.Thread(target=work, args=(name, task), name=f"runtime-{name}", daemon=True)
        for name, task in tasks.items()
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if crashed:
        raise crashed[0]
    return answers


def probe(host: Any) -> dict[str, Fact]:
    tasks: dict[str, Callable[[], Any]] = {"cuda": host.cuda_smoke}
    interpreter, installed, why_not, path = "", set(), NOT_INSTALLED, []
    try:
        dump = host.python()
    except HostError as e:
        why_not = f"the interpreter could not be inspected: {e.reason}"
    else:
        interpreter = str(dump.get("executable") or host.target_python())
        installed = {str(fw.get("name")) for fw in python_env.frameworks(dump)}
        path = [p for p in dump.get("path") or [] if isinstance(p, str)]
    for name in FRAMEWORKS:
        if name in installed:
            tasks[name] = _framework_task(host, interpreter, name)
    if "torch" in installed:
        tasks["extensions"] = lambda: host.cuda_binaries(interpreter, path)
    answers = _parallel(tasks)
    smoke = cuda_facts(answers["cuda"], "runtime:libcuda smoke test")
    facts = {f"runtime.cuda.{k}": v for k, v in smoke.items()}
    facts["runtime.python"] = _fact(interpreter or None, why_not, "runtime")
    for name in FRAMEWORKS:
        source = f"runtime:{interpreter} import {name}"
        if name in answers:
            found = framework_facts(name, answers[name], source)
        else:
            found = {f: unknown(why_not, source) for f in FIELDS[name]}
        facts.update({f"runtime.{name}.{k}": v for k, v in found.items()})
    facts.update(_extensions(answers, interpreter, why_not))
    failures, incomplete = import_failures(facts, installed)
    if why_not != NOT_INSTALLED:  # the interpreter could not be inspected: nothing is known of its imports
        incomplete = why_not
    if incomplete and not failures:
        facts["runtime.import_failures"] = unknown(incomplete, "runtime")
        facts["runtime.import_failure_count"] = unknown(incomplete, "runtime")
    else:
        facts["runtime.import_failures"] = known(failures, "runtime")
        facts["runtime.import_failure_count"] = known(len(failures), "runtime")
    return facts


def _framework_task(host: Any, interpreter: str, name: str) -> Callable[[], Any]:
    return lambda: host.framework_runtime(interpreter, name)


def _extensions(answers: dict[str, Answer], interpreter: str, why_not: str) -> dict[str, Fact]:
    """`extensions[]`: none without torch (nothing can be built against it), unknown when the interpreter
    could not be inspected or the scan gave no answer."""
    source = f"runtime:{interpreter} CUDA extension scan"
    if "extensions" not in answers:
        if why_not != NOT_INSTALLED:
            return {"extensions.count": unknown(why_not, source)}
        return {"extensions.count": known(0, source)}
    items, why = extension_facts(answers["extensions"], source)
    if why is not None:
        return {"extensions.count": unknown(why, source)}
    return list_facts("extensions", items, source)
