"""Reads a Python environment's installed distributions without importing any framework.

`inspect()` runs either in gpudoctor's own interpreter or, as source text, in the target interpreter
(`python -c`), so it uses the standard library alone and works on Python 3.8+. It returns raw sources only:
distribution names, versions, `Requires-Dist` lines, INSTALLER, the framework libraries in each wheel's
file list, and the text of a few small build-description files (torch/version.py, ...). The probes parse them.
"""

from __future__ import annotations

import json
import sys

FORMAT = 1

# Distributions whose metadata the probes use, by name prefix (normalised: lower case, '-' for '_').
INTERESTING = (
    "torch",
    "tensorflow",
    "tf-nightly",
    "jax",
    "jaxlib",
    "cupy",
    "onnxruntime",
    "nvidia-",
    "cuda-toolkit",
    "cuda-bindings",
    "pytorch-triton",
    "triton",
)
# Small files that describe how a framework was built, read verbatim.
BUILD_FILES = {
    "torch": ["torch/version.py"],
    "tensorflow": ["tensorflow/python/platform/build_info.py"],
    "onnxruntime": ["onnxruntime/capi/version_info.py"],
    "onnxruntime-gpu": ["onnxruntime/capi/version_info.py"],
}
# A wheel's file list is kept only for the shared libraries that tell a GPU build from a CPU one.
LIB_MARKERS = ("cuda", "cudnn", "nccl", "cudart", "cublas", "rocm", "hip", "miopen", "rccl", "providers")
MAX_FILES_PER_DIST = 200
MAX_BUILD_FILE = 64 * 1024


def _norm(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def inspect() -> dict:
    import os
    import platform

    out: dict = {
        "format": FORMAT,
        "executable": sys.executable,
        "version": platform.python_version(),
        "implementation": platform.python_implementation(),
        "prefix": sys.prefix,
        "base_prefix": getattr(sys, "base_prefix", sys.prefix),
        "platform": sys.platform,
        "libc": list(platform.libc_ver()),
        "conda_meta": os.path.isdir(os.path.join(sys.prefix, "conda-meta")),
        "pyvenv_cfg": _read(os.path.join(sys.prefix, "pyvenv.cfg"), 16 * 1024),
        "all": {},
        "distributions": [],
    }
    # Names and versions come from the metadata folders' names (one directory listing per sys.path
    # entry); only the interesting ones are opened. importlib.metadata is not used: importing it and
    # parsing every METADATA file with the email parser costs more than the rest of a check.
    for entry_dir in sys.path:
        try:
            names = sorted(os.listdir(entry_dir or "."))
        except OSError:
            continue
        for folder in names:
            if not folder.endswith((".dist-info", ".egg-info")):
                continue
            stem = folder.rsplit(".", 1)[0]
            if "-" not in stem:
                continue
            raw_name, version = stem.split("-", 1)
            key = _norm(raw_name)
            if key in out["all"]:
                continue  # the first on sys.path wins, as it does for imports
            out["all"][key] = version
            if key.startswith(INTERESTING):
                out["distributions"].append(_describe(entry_dir or ".", folder, key, version))
    out["distributions"].sort(key=lambda d: d["name"])
    return out


def _read(path: str, limit: int):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(limit)
    except OSError:
        return None


def _describe(location: str, folder: str, key: str, version: str) -> dict:
    import os

    meta = os.path.join(location, folder)
    requires = []
    headers = _read(os.path.join(meta, "METADATA"), 1024 * 1024) or _read(
        os.path.join(meta, "PKG-INFO"), 1024 * 1024
    )
    for line in (headers or "").splitlines():
        if not line:
            break  # the headers end at the first blank line; the long description follows
        if line.startswith("Version:"):
            version = line.split(":", 1)[1].strip()
        elif line.startswith("Requires-Dist:"):
            requires.append(line.split(":", 1)[1].strip())
    entry = {
        "name": key,
        "version": version,
        "requires": requires,
        "installer": (_read(os.path.join(meta, "INSTALLER"), 256) or "").strip(),
        "location": location,
        "libs": [],
        "texts": {},
    }
    # RECORD is scanned as text: a parsed file list costs 60 ms for torch's 15,000 files.
    for line in (_read(os.path.join(meta, "RECORD"), 16 * 1024 * 1024) or "").splitlines():
        path = line.rsplit(",", 2)[0].strip('"')
        low = path.lower()
        if ".so" in low and any(m in low for m in LIB_MARKERS):
            entry["libs"].append(path)
            if len(entry["libs"]) >= MAX_FILES_PER_DIST:
                break
    for rel in BUILD_FILES.get(key, []):
        text = _read(os.path.join(location, rel), MAX_BUILD_FILE)
        if text is not None:
            entry["texts"][rel] = text
    return entry


def source() -> str:
    """This module as a program that prints inspect()'s result as JSON, for `python -c`."""
    import inspect as _inspect

    return _inspect.getsource(sys.modules[__name__]) + "\nprint(json.dumps(inspect()))\n"


if __name__ == "__main__":
    print(json.dumps(inspect()))
