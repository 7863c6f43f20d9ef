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
    import importlib.metadata as md
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
        "pyvenv_cfg": None,
        "all": {},
        "distributions": [],
    }
    cfg = os.path.join(sys.prefix, "pyvenv.cfg")
    if os.path.isfile(cfg):
        with open(cfg, encoding="utf-8", errors="replace") as f:
            out["pyvenv_cfg"] = f.read(16 * 1024)
    # Names and versions come from the metadata folders' names (a directory listing per sys.path entry),
    # which is much faster than parsing every METADATA file; only interesting ones are opened.
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
                dist = md.PathDistribution(__import__("pathlib").Path(entry_dir or ".", folder))
                out["distributions"].append(_describe(dist, key))
    out["distributions"].sort(key=lambda d: d["name"])
    return out


def _describe(dist, key: str) -> dict:
    entry = {
        "name": key,
        "version": dist.version,
        "requires": dist.requires or [],
        "installer": (dist.read_text("INSTALLER") or "").strip(),
        "location": str(dist.locate_file("")),
        "libs": [],
        "texts": {},
    }
    for f in dist.files or []:
        s = str(f)
        low = s.lower()
        if ".so" in low and any(m in low for m in LIB_MARKERS):
            entry["libs"].append(s)
            if len(entry["libs"]) >= MAX_FILES_PER_DIST:
                break
    for rel in BUILD_FILES.get(key, []):
        try:
            with open(str(dist.locate_file(rel)), encoding="utf-8", errors="replace") as fh:
                entry["texts"][rel] = fh.read(MAX_BUILD_FILE)
        except OSError:
            pass
    return entry


def source() -> str:
    """This module as a program that prints inspect()'s result as JSON, for `python -c`."""
    import inspect as _inspect

    return _inspect.getsource(sys.modules[__name__]) + "\nprint(json.dumps(inspect()))\n"


if __name__ == "__main__":
    print(json.dumps(inspect()))
