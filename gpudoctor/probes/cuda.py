"""The CUDA probe: the toolkit, every copy of the CUDA runtime (libcudart), and forward compatibility.

Produces `cuda.*`. The toolkit (nvcc, headers) and the runtime a program loads are different things and
often different versions: frameworks bring their own libcudart in pip wheels, so all copies are listed.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Optional

from ..facts import Fact, known, unknown
from ..host.base import NOT_FOUND, HostError
from .ldcache import versioned_name
from .libraries import (
    Disk,
    copies_facts,
    dedupe,
    find_copies,
    ldconfig_entries,
    pip_copies,
    python_dump,
    split_path_list,
)

DEFAULT_HOME = "/usr/local/cuda"
CUDART_STEM = "libcudart.so."
# nvidia-cuda-runtime (CUDA 13 wheels) and nvidia-cuda-runtime-cu12 / -cu11.
CUDART_DISTS = re.compile(r"nvidia-cuda-runtime(-cu\d+)?")
NOT_INSTALLED = "not installed"

_NVCC = re.compile(r"release\s+(\d+\.\d+)(?:,\s*V(\d+(?:\.\d+)+))?")


# --- pure parsing ---------------------------------------------------------------------------------------


def parse_version_json(text: str) -> Optional[str]:
    """ "13.0.2" from the toolkit's version.json ({"cuda": {"version": ...}}), or None."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser's stack
        return None
    entry = data.get("cuda") if isinstance(data, dict) else None
    version = entry.get("version") if isinstance(entry, dict) else None
    return version if isinstance(version, str) and version else None


def parse_nvcc_version(text: str) -> Optional[str]:
    """ "13.0.88" from "Cuda compilation tools, release 13.0, V13.0.88"; the release alone if no V part."""
    m = _NVCC.search(text)
    if not m:
        return None
    return m.group(2) or m.group(1)


def compat_active(compat_dir: Optional[str], ld_library_path: Optional[str]) -> bool:
    """Whether an LD_LIBRARY_PATH entry is the compat directory. The Host cannot resolve symlinks, so
    any `<...>/cuda*/compat` entry also counts (/usr/local/cuda-13.0/compat for /usr/local/cuda)."""
    target = os.path.normpath(compat_dir) if compat_dir else None
    for entry in split_path_list(ld_library_path):
        if entry == target:
            return True
        parent, leaf = os.path.split(entry)
        if leaf == "compat" and os.path.basename(parent).startswith("cuda"):
            return True
    return False


# --- probe ----------------------------------------------------------------------------------------------


def probe(host: Any) -> dict[str, Fact]:
    home, home_fact = _home(host)
    facts: dict[str, Fact] = {"cuda.home": home_fact}
    facts["cuda.toolkit.version"] = _toolkit_version(host, home, home_fact)
    facts.update(_runtimes(host))
    compat_dir = f"{home}/compat" if home else None
    facts["cuda.compat.version"] = _compat_version(host, compat_dir, home_fact)
    facts["cuda.compat.active"] = known(
        compat_active(compat_dir, host.env("LD_LIBRARY_PATH")), "LD_LIBRARY_PATH"
    )
    return facts


def _home(host: Any) -> tuple[Optional[str], Fact]:
    for name in ("CUDA_HOME", "CUDA_PATH"):
        value = host.env(name)
        if value:
            return value.rstrip("/") or value, known(value.rstrip("/") or value, name)
    try:
        host.listdir(DEFAULT_HOME)
    except HostError as e:
        return None, unknown(NOT_INSTALLED if e.reason == NOT_FOUND else e.reason, DEFAULT_HOME)
    return DEFAULT_HOME, known(DEFAULT_HOME, DEFAULT_HOME)


def _toolkit_version(host: Any, home: Optional[str], home_fact: Fact) -> Fact:
    if home:
        path = f"{home}/version.json"
        try:
            version = parse_version_json(host.read(path))
        except HostError:
            version = None  # CUDA 11.0 and older, and some images, have no version.json: ask nvcc
        if version:
            return known(version, path)
    argvs = [(f"{home}/bin/nvcc", "--version")] if home else []
    argvs.append(("nvcc", "--version"))
    reasons = []  # the first failure other than "no nvcc there" says most
    for argv in argvs:
        src = " ".join(argv)
        try:
            result = host.run(argv)
        except HostError as e:
            reasons += [] if e.reason == NOT_FOUND else [e.reason]
            continue
        version = parse_nvcc_version(result.stdout) if result.rc == 0 else None
        if version:
            return known(version, src)
        reasons.append(f"nvcc failed (rc={result.rc})" if result.rc != 0 else "unrecognised nvcc output")
    return unknown(reasons[0] if reasons else home_fact.unknown or NOT_INSTALLED, "nvcc")


def _runtimes(host: Any) -> dict[str, Fact]:
    entries, ldconfig_error = ldconfig_entries(host)
    ld_dirs = split_path_list(host.env("LD_LIBRARY_PATH"))
    pip = pip_copies(python_dump(host), CUDART_DISTS, "libcudart.so")
    copies, _ = find_copies(Disk(host), CUDART_STEM, entries, ld_dirs, pip)
    return copies_facts("cuda.runtimes", dedupe(copies), ldconfig_error)


def _compat_version(host: Any, compat_dir: Optional[str], home_fact: Fact) -> Fact:
    if not compat_dir:
        return unknown(home_fact.unknown or NOT_INSTALLED, "cuda.home")
    try:
        names = host.listdir(compat_dir)
    except HostError as e:
        return unknown(NOT_INSTALLED if e.reason == NOT_FOUND else e.reason, compat_dir)
    version = versioned_name(names, "libcuda.so.")
    if version is None:
        return unknown(NOT_INSTALLED, compat_dir)
    return known(version, f"{compat_dir}/libcuda.so.{version}")
