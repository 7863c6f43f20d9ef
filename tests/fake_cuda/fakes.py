"""Builders for the runtime (check --deep) tests: the fake libcuda compiled from C, and virtual environments
holding fake frameworks.

The fake frameworks are plain packages (torch, tensorflow, jax, cupy, onnxruntime) with the attributes the
runtime child (gpudoctor/host/framework_runtime.py) reads and the metadata folders gpudoctor's inspection
(gpudoctor/host/pyinspect.py) lists, written into the site-packages of a `python -m venv --without-pip`
environment, so the real child runs in a real target interpreter. A torch's behaviour is fixed when it is
written (TORCH_MODES): one environment per behaviour.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import pyenvs

HERE = Path(__file__).parent
LIBRARY = "libcuda.so.1"


def compile_libcuda(out_dir: Path) -> Path:
    """tests/fake_cuda/fake_cuda.c compiled into out_dir/libcuda.so.1; the directory."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.fail("no C compiler (cc or gcc) on PATH: the fake libcuda is built from C")
    out_dir.mkdir(parents=True, exist_ok=True)
    argv = [
        cc,
        "-shared",
        "-fPIC",
        "-O1",
        "-Wall",
        "-o",
        str(out_dir / LIBRARY),
        str(HERE / "fake_cuda.c"),
        "-ldl",
    ]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"{' '.join(argv)} failed:\n{proc.stderr}"
    return out_dir


def use_scenario(lib_dir: Path, value: str) -> None:
    """Scripts the fake libcuda in lib_dir: the file `scenario` beside it, read at every cuInit."""
    (lib_dir / "scenario").write_text(value + "\n", encoding="utf-8")


def make_venv(root: Path) -> tuple[Path, Path]:
    """A venv of this interpreter without pip at root: (its python, its site-packages)."""
    python = pyenvs.make_venv(sys.executable, root)
    return python, pyenvs.site_packages(python)


def write_package(site: Path, files: dict[str, str], dist: str, version: str, requires: tuple = ()) -> None:
    """Package files (relative path -> text) and a dist-info folder naming `dist` `version`."""
    for rel, text in files.items():
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    meta = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    meta.mkdir(parents=True, exist_ok=True)
    lines = ["Metadata-Version: 2.1", f"Name: {dist}", f"Version: {version}"]
    lines += [f"Requires-Dist: {r}" for r in requires]
    (meta / "METADATA").write_text("\n".join(lines) + "\n\n", encoding="utf-8")
    (meta / "INSTALLER").write_text("pip\n", encoding="utf-8")


# --- torch ------------------------------------------------------------------------------------------------

TORCH_VERSION = "2.9.0+cu128"
CUDNN_PIN = "9.10.2.21"
# What torch.cuda says when the driver misbehaves (the warning is_available() gives, the error init() raises).
CUDA_INIT_ERROR = (
    "CUDA unknown error - this may be due to an incorrectly set up environment, e.g. changing env variable "
    "CUDA_VISIBLE_DEVICES after program start. Setting the available devices to be zero."
)
CUDA_INIT_WHERE = "(Triggered internally at /pytorch/c10/cuda/CUDAFunctions.cpp:109.)"
IMPORT_ERROR = "libcudnn.so.9: cannot open shared object file: No such file or directory"

TORCH_CUDA_OK = """
import os, sys
from . import nccl
print("torch.cuda prints on stdout at import")  # the child must keep stdout for its answer
os.write(1, b"and so does its C code\\n")
def is_available():
    return True
def device_count():
    return 2
def get_arch_list():
    return ["sm_50", "sm_80", "sm_86", "sm_90"]
def get_device_capability(index):
    return [(9, 0), (12, 0)][index]
def get_device_name(index):
    return ["NVIDIA H100 80GB HBM3", "NVIDIA GeForce RTX 5090"][index]
def init():
    pass
"""

TORCH_CUDA_BROKEN = f'''
import warnings
from . import nccl
def is_available():
    warnings.warn("CUDA initialization: {CUDA_INIT_ERROR} {CUDA_INIT_WHERE}")
    return False
def device_count():
    return 0
def get_arch_list():
    return []  # as the real one does when CUDA is not available
def get_device_capability(index):
    raise RuntimeError("{CUDA_INIT_ERROR}")
def get_device_name(index):
    raise RuntimeError("{CUDA_INIT_ERROR}")
def init():
    raise RuntimeError("{CUDA_INIT_ERROR}")
'''

CUDNN = """
import ctypes, os
def version():
    here = os.path.dirname(__file__)
    ctypes.CDLL(os.path.join(here, "lib", "libcudnn_graph.so.9"))  # cuDNN 9 loads its parts beside it
    ctypes.CDLL(os.path.join(here, "lib", "libcudnn.so.9"))
    return 91002
"""

TORCH_MODES = {
    # CUDA works: two devices (an H100 and an RTX 5090, whose 12.0 the arch list has no code for).
    "ok": {"torch/cuda/__init__.py": TORCH_CUDA_OK},
    # A CUDA build whose CUDA initialisation fails; the arch list is still known from torch._C.
    "cuda-error": {
        "torch/__init__.py": f"__version__ = {TORCH_VERSION!r}\nfrom . import _C, version, cuda, backends\n",
        "torch/cuda/__init__.py": TORCH_CUDA_BROKEN,
        "torch/_C.py": "def _cuda_getArchFlags():\n    return 'sm_80 sm_90 compute_90'\n",
    },
    "import-error": {"torch/__init__.py": f"raise ImportError({IMPORT_ERROR!r})\n"},
    "hang": {"torch/__init__.py": "import time\nwhile True:\n    time.sleep(1)\n"},
    "crash": {
        "torch/__init__.py": "import os, sys\nsys.stderr.write('Illegal instruction\\n')\nos.abort()\n"
    },
}


def torch_files(mode: str) -> dict[str, str]:
    files = {
        "torch/__init__.py": f"__version__ = {TORCH_VERSION!r}\nfrom . import version, cuda, backends\n",
        "torch/version.py": f"__version__ = {TORCH_VERSION!r}\ncuda = '12.8'\nhip = None\n",
        "torch/cuda/nccl.py": "def version():\n    return (2, 27, 3)\n",
        "torch/backends/__init__.py": "from . import cudnn\n",
        "torch/backends/cudnn/__init__.py": CUDNN,
    }
    files.update(TORCH_MODES[mode])
    return files


def write_torch(site: Path, mode: str, shared_library: Path) -> None:
    write_package(site, torch_files(mode), "torch", TORCH_VERSION, (f"nvidia-cudnn-cu12=={CUDNN_PIN}",))
    lib = site / "torch" / "backends" / "cudnn" / "lib"
    lib.mkdir(parents=True, exist_ok=True)
    for name in ("libcudnn.so.9", "libcudnn_graph.so.9"):  # any shared library: only the names matter
        shutil.copy(shared_library, lib / name)


# --- the other frameworks, each as it fails most often ------------------------------------------------------

TF_LOG = (
    "2025-06-01 10:00:00.000000: W tensorflow/core/common_runtime/gpu/gpu_device.cc:2344] Cannot dlopen some "
    "GPU libraries. Please make sure the missing libraries mentioned above are installed properly if you "
    "would like to use GPU."
)
JAX_GPU_ERROR = (
    "Unable to initialize backend 'cuda': FAILED_PRECONDITION: No visible GPU devices. (you may need to "
    "uninstall the failing plugin package, or set JAX_PLATFORMS=cpu to skip this backend.)"
)
CUPY_ERROR = "cudaErrorNoDevice: no CUDA-capable device is detected"

OTHERS = {
    # A CUDA build that registers no GPU, and says why in its C++ log.
    ("tensorflow", "2.20.0"): {
        "tensorflow/__init__.py": (
            f"import sys\nsys.stderr.write({TF_LOG!r} + '\\n')\n__version__ = '2.20.0'\n"
            "from . import sysconfig, config\n"
        ),
        "tensorflow/sysconfig.py": (
            "def get_build_info():\n"
            "    return {'is_cuda_build': True, 'cuda_version': '12.5.1', 'cudnn_version': '9'}\n"
        ),
        "tensorflow/config.py": "def list_physical_devices(kind=None):\n    return []\n",
    },
    # A CUDA plugin is installed, but the backend fails and JAX falls back to the CPU.
    ("jax", "0.7.2"): {
        "jax/__init__.py": (
            "import logging\n__version__ = '0.7.2'\n"
            "def default_backend():\n"
            f"    logging.getLogger('jax._src.xla_bridge').warning({JAX_GPU_ERROR!r})\n"
            "    return 'cpu'\n"
            "def devices(backend=None):\n"
            "    if backend == 'gpu':\n"
            f"        raise RuntimeError({JAX_GPU_ERROR!r})\n"
            "    return ['CpuDevice(id=0)']\n"
        ),
    },
    ("jax-cuda12-plugin", "0.7.2"): {"jax_cuda12_plugin/__init__.py": ""},
    ("cupy-cuda12x", "13.6.0"): {
        "cupy/__init__.py": "__version__ = '13.6.0'\nfrom . import cuda\n",
        "cupy/cuda/__init__.py": "from . import runtime\n",
        "cupy/cuda/runtime.py": (
            "class CUDARuntimeError(RuntimeError):\n    pass\n"
            "def runtimeGetVersion():\n    return 12080\n"
            "def driverGetVersion():\n    return 13000\n"
            f"def getDeviceCount():\n    raise CUDARuntimeError({CUPY_ERROR!r})\n"
        ),
    },
    # onnxruntime-gpu's metadata, but the CPU package's module (installed over it).
    ("onnxruntime-gpu", "1.23.2"): {
        "onnxruntime/__init__.py": (
            "__version__ = '1.23.2'\n"
            "def get_available_providers():\n    return ['AzureExecutionProvider', 'CPUExecutionProvider']\n"
            "def get_device():\n    return 'CPU'\n"
        ),
    },
}


def write_others(site: Path) -> None:
    for (dist, version), files in OTHERS.items():
        write_package(site, files, dist, version)
