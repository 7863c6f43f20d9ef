"""Imports one ML framework in the target interpreter and reports what it really does with CUDA.

Runs as source text in a child process of the target interpreter (`python -I -B -c PROGRAM FRAMEWORK`), so
it uses the standard library alone and works on Python 3.8+. It imports the framework named on its command
line (torch, tensorflow, jax, cupy or onnxruntime), asks it what it sees, and prints one JSON object on
stdout: for torch, whether CUDA is available, the device count and each device's compute capability, the
CUDA version it was built with, the compiled arch list, the cuDNN it really loaded and the file that came
from, the NCCL version, and the exact text of a CUDA initialisation error; for TensorFlow the GPUs it lists
and its build info; for JAX the devices, the platform, and the message of a fall-back to the CPU; for CuPy
the runtime and driver versions and the device count; for ONNX Runtime the execution providers. An import
that fails gives the exception's type and last line. Warnings and the frameworks' Python log records are
captured. Nothing is written anywhere: whatever the framework prints goes to stderr, so stdout holds only
the JSON, and the process leaves with os._exit so that no framework's exit handlers run (they can hang or
crash after the answer is out).

    python -I -B gpudoctor/host/framework_runtime.py torch
"""

from __future__ import annotations

import json
import os
import sys

FORMAT = 1
FRAMEWORKS = ("torch", "tensorflow", "jax", "cupy", "onnxruntime")  # facts.FRAMEWORKS: this runs alone
MAX_TEXT = 1000  # characters kept of one message
MAX_MESSAGES = 20


def _text(value) -> str:
    """One message on one line, cut to MAX_TEXT characters."""
    return " ".join(str(value).split())[:MAX_TEXT]


def _error(error: BaseException, last_line: bool = False) -> str:
    """An exception as `Type: message` (only the message's last line when `last_line`)."""
    lines = [line for line in str(error).strip().splitlines() if line.strip()]
    message = (lines[-1] if lines else "") if last_line else " ".join(lines)
    return _text(f"{type(error).__name__}: {message}" if message else type(error).__name__)


def _try(function, *args):
    """(function(*args), None), or (None, the error's text): whatever a framework raises is an answer."""
    try:
        return function(*args), None
    except Exception as e:  # noqa: BLE001
        return None, _error(e)


def _mapped(prefix: str) -> list:
    """Files mapped into this process whose names start with `prefix` (e.g. libcudnn), by address."""
    found: list = []
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                parts = line.split(None, 5)
                if len(parts) == 6:
                    path = parts[5].strip()
                    if path.rsplit("/", 1)[-1].startswith(prefix) and path not in found:
                        found.append(path)
    except OSError:
        pass
    return found


# --- one function per framework: each returns plain data ------------------------------------------------


def torch_runtime() -> dict:
    import torch

    out: dict = {"version": str(getattr(torch, "__version__", "")), "file": getattr(torch, "__file__", None)}
    version = getattr(torch, "version", None)
    out["cuda"] = getattr(version, "cuda", None)
    out["hip"] = getattr(version, "hip", None)
    cuda = torch.cuda
    available, out["cuda_available_error"] = _try(cuda.is_available)
    out["cuda_available"] = bool(available)
    out["device_count"], out["device_count_error"] = _try(cuda.device_count)
    out["init_error"] = None
    if not out["cuda_available"] and (out["cuda"] or out["hip"]) and hasattr(cuda, "init"):
        # is_available() only warns; init() raises the error the user meets on first use.
        _, out["init_error"] = _try(cuda.init)
    arch, out["arch_list_error"] = _try(cuda.get_arch_list)
    if not arch:
        flags = getattr(getattr(torch, "_C", None), "_cuda_getArchFlags", None)  # known without a GPU
        if flags is not None:
            text, _ = _try(flags)
            arch = str(text or "").split()
    out["arch_list"] = [str(a) for a in arch or []]
    count = out["device_count"] if out["cuda_available"] and isinstance(out["device_count"], int) else 0
    out["capabilities"], out["device_names"], out["device_errors"] = [], [], []
    for index in range(count):
        cc, error = _try(cuda.get_device_capability, index)
        out["capabilities"].append(f"{cc[0]}.{cc[1]}" if cc else None)
        name, _ = _try(cuda.get_device_name, index)
        out["device_names"].append(name)
        if error:
            out["device_errors"].append(error)
    cudnn = getattr(getattr(torch, "backends", None), "cudnn", None)
    if cudnn is not None and (out["cuda"] or out["hip"]):
        out["cudnn"], out["cudnn_error"] = _try(cudnn.version)
        out["cudnn_files"] = _mapped("libcudnn")
    nccl = getattr(cuda, "nccl", None)
    if nccl is not None and out["cuda"]:
        value, out["nccl_error"] = _try(nccl.version)
        out["nccl"] = ".".join(str(p) for p in value) if isinstance(value, (tuple, list)) else value
        out["nccl_files"] = _mapped("libnccl")
    return out


BUILD_KEYS = ("is_cuda_build", "is_rocm_build", "cuda_version", "cudnn_version", "cuda_compute_capabilities")


def tensorflow_runtime() -> dict:
    import tensorflow as tf

    out: dict = {"version": str(getattr(tf, "__version__", ""))}
    info, out["build_info_error"] = _try(tf.sysconfig.get_build_info)
    out["build_info"] = {k: v for k, v in dict(info or {}).items() if k in BUILD_KEYS}
    gpus, out["gpus_error"] = _try(tf.config.list_physical_devices, "GPU")
    out["gpus"] = [str(getattr(g, "name", g)) for g in gpus] if gpus is not None else None
    return out


# JAX's CUDA plugins, by module: the wheels' own (jax-cuda13-plugin) and the PJRT ones (jax-cuda13-pjrt).
JAX_CUDA_PLUGINS = (
    "jax_cuda13_plugin",
    "jax_cuda12_plugin",
    "jax_plugins.xla_cuda13",
    "jax_plugins.xla_cuda12",
)


def jax_runtime() -> dict:
    import importlib.util

    import jax

    out: dict = {"version": str(getattr(jax, "__version__", ""))}
    plugins = []
    for name in JAX_CUDA_PLUGINS:
        spec, _ = _try(importlib.util.find_spec, name)
        if spec is not None:
            plugins.append(name)
    out["cuda_plugins"] = plugins
    out["platform"], out["platform_error"] = _try(jax.default_backend)
    devices, out["devices_error"] = _try(jax.devices)
    out["devices"] = [str(d) for d in devices] if devices is not None else None
    out["gpu_error"] = None
    if out["platform"] == "cpu":
        # The error that made it fall back: asking for the GPU backend by name raises it.
        _, out["gpu_error"] = _try(jax.devices, "gpu")
    return out


def cupy_runtime() -> dict:
    import cupy

    out: dict = {"version": str(getattr(cupy, "__version__", ""))}
    runtime = cupy.cuda.runtime
    out["runtime_version"], out["runtime_version_error"] = _try(runtime.runtimeGetVersion)
    out["driver_version"], out["driver_version_error"] = _try(runtime.driverGetVersion)
    out["device_count"], out["device_count_error"] = _try(runtime.getDeviceCount)
    return out


def onnxruntime_runtime() -> dict:
    import onnxruntime

    out: dict = {"version": str(getattr(onnxruntime, "__version__", ""))}
    providers, out["providers_error"] = _try(onnxruntime.get_available_providers)
    out["providers"] = [str(p) for p in providers] if providers is not None else None
    out["device"], out["device_error"] = _try(onnxruntime.get_device)
    return out


RUNTIMES = {
    "torch": torch_runtime,
    "tensorflow": tensorflow_runtime,
    "jax": jax_runtime,
    "cupy": cupy_runtime,
    "onnxruntime": onnxruntime_runtime,
}


def _keep_log_records(messages: list) -> None:
    """Keep the messages of warnings and errors logged through Python's logging (JAX's fall-back is)."""
    import logging

    class Keep(logging.Handler):
        def emit(self, record) -> None:
            if len(messages) < MAX_MESSAGES:
                messages.append(_text(record.getMessage()))

    logging.getLogger().addHandler(Keep(logging.WARNING))


def run(framework: str) -> dict:
    import warnings

    out: dict = {"format": FORMAT, "framework": framework, "python": sys.version.split()[0]}
    if framework not in RUNTIMES:
        out["import_error"] = f"ValueError: not a framework gpudoctor knows: {framework}"
        return out
    out["log"] = []
    _keep_log_records(out["log"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out["result"] = RUNTIMES[framework]()
        except Exception as e:  # noqa: BLE001 - an import that fails is the answer
            out["import_error"] = _error(e, last_line=True)
    out["warnings"] = [_text(w.message) for w in caught[:MAX_MESSAGES]]
    return out


def main(argv: list) -> None:
    real_stdout = os.dup(1)
    os.dup2(2, 1)  # whatever the framework prints, at the Python or the C level, goes to stderr
    data = json.dumps(run(argv[1] if len(argv) > 1 else ""), default=str).encode("utf-8")
    sys.stderr.flush()
    sys.stdout.flush()
    while data:
        data = data[os.write(real_stdout, data) :]
    os._exit(0)


def source() -> str:
    """This module as a program for `python -c`, given the framework's name as its argument."""
    with open(__file__, encoding="utf-8") as f:
        return f.read()


if __name__ == "__main__":
    main(sys.argv)
