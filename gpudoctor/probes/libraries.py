"""The libraries probe: every copy of cuDNN and NCCL a process on this host could load, and which CUDA
sonames the loader finds by name.

Produces `cudnn.*`, `nccl.*` and `cuda_libs.*`. Copies come from four places, because each is loaded in a
different situation: the loader cache (`ldconfig -p`), directories on LD_LIBRARY_PATH (searched first by the
loader), pip wheels in the inspected Python environment (loaded by frameworks through their RPATH), and the
active conda environment. The shared discovery helpers here are also used by the CUDA probe for libcudart.
"""

from __future__ import annotations

import os
import re
from typing import Any, NamedTuple, Optional

from packaging.version import Version

from ..facts import Fact, Facts, FactSpec, collected, known, list_facts, unknown
from ..host.base import NOT_FOUND, HostError, env_or_none
from . import ProbeSpec, net_plugin
from .ldcache import parse_ldconfig, versioned_name

FACT_SPECS: tuple[FactSpec, ...] = (
    FactSpec("cudnn.installs.count", "int", "", "copies of cuDNN found"),
    FactSpec("cudnn.installs[].version", "version", "", "cuDNN version"),
    FactSpec("cudnn.installs[].path", "str", "", "where it lives"),
    FactSpec("cudnn.installs[].origin", "str", "", "`system`, `pip` or `conda`"),
    FactSpec("cudnn.versions", "list[str]", "", "the distinct cuDNN versions found, newest first"),
    FactSpec("cudnn.distinct_versions", "int", "", "how many distinct cuDNN versions are installed"),
    FactSpec(
        "cudnn.ld_library_path_version", "version", "", "version of the first cuDNN in an LD_LIBRARY_PATH dir"
    ),
    FactSpec("nccl.installs.count", "int", "", "copies of NCCL found"),
    FactSpec("nccl.installs[].version", "version", "", "NCCL version"),
    FactSpec("nccl.installs[].path", "str", "", "where it lives"),
    FactSpec("nccl.installs[].origin", "str", "", "`system`, `pip` or `conda`"),
    FactSpec("nccl.versions", "list[str]", "", "the distinct NCCL versions found, newest first"),
    FactSpec(
        "nccl.net_plugin.found",
        "bool",
        "",
        "a network plugin NCCL would load is there: libnccl-net.so (with NCCL_NET_PLUGIN=X: X or "
        "libnccl-net-X.so) in an LD_LIBRARY_PATH directory, the loader cache or /lib, /usr/lib; NCCL "
        "uses it before its own IB and sockets",
    ),
    FactSpec("nccl.net_plugin.path", "str", "", "where that plugin is (unknown when none was found)"),
    FactSpec(
        "cuda_libs.loader_sonames",
        "list[str]",
        "",
        "CUDA sonames dlopen finds by name: libcublas, libcublasLt, libcudnn, libcufft, libcurand and "
        "libcudart files in LD_LIBRARY_PATH directories, the loader cache (ldconfig -p) and a conda "
        "environment's lib directory (its packages' RPATH)",
    ),
    FactSpec(
        "cuda_libs.wheel_sonames",
        "list[str]",
        "",
        "those sonames shipped by the nvidia-* wheels of the inspected environment (found by dlopen only "
        "once something loads them by path, e.g. import torch, or LD_LIBRARY_PATH names the wheel directory)",
    ),
    FactSpec(
        "cuda_libs.consumers.count",
        "int",
        "",
        "derived: runtimes installed that dlopen CUDA libraries by soname (onnxruntime-gpu, ctranslate2)",
    ),
    FactSpec("cuda_libs.consumers[].name", "str", "", "derived: onnxruntime-gpu or ctranslate2"),
    FactSpec("cuda_libs.consumers[].version", "version", "", "derived: its installed version"),
    FactSpec(
        "cuda_libs.consumers[].cuda_major", "int", "", "derived: the CUDA major its build loads libraries of"
    ),
    FactSpec(
        "cuda_libs.consumers[].needs",
        "list[str]",
        "",
        "derived: the sonames it loads (gpudoctor/cuda_consumers.py, from each runtime's own sources)",
    ),
    FactSpec("cuda_libs.consumers[].missing", "list[str]", "", "derived: needed sonames found nowhere here"),
    FactSpec("cuda_libs.consumers[].missing_count", "int", "", "derived: how many sonames are in missing"),
    FactSpec(
        "cuda_libs.consumers[].wheel_only",
        "list[str]",
        "",
        "derived: needed sonames only nvidia-* wheels hold (dlopen by name does not find them)",
    ),
    FactSpec(
        "cuda_libs.consumers[].wheel_only_count", "int", "", "derived: how many sonames are in wheel_only"
    ),
    FactSpec("nccl.newest", "version", "", "derived: the newest NCCL installed (first of nccl.versions)"),
)
PROBE = ProbeSpec("libraries", per_env=True)

LDCONFIG_ARGVS = (("ldconfig", "-p"), ("/sbin/ldconfig", "-p"))
CUDNN_HEADERS = ("/usr/include/cudnn_version.h", "/usr/include/x86_64-linux-gnu/cudnn_version.h")
# Held as text, compiled by re's own cache when first used: a host without what it reads never uses it
# (compiled at import, it cost every check 0.05-0.15 ms).
# Where distribution packages (deb, rpm) put libraries: /usr/lib/x86_64-linux-gnu, /lib64, ...
SYSTEM_LIB_DIR = r"(/usr)?/lib(64)?(/[^/]+-linux-gnu)?"
# (fact prefix, file-name stem, pip distribution names)
CUDNN = ("cudnn", "libcudnn.so.", re.compile(r"nvidia-cudnn(-cu\d+)?"))
NCCL = ("nccl", "libnccl.so.", re.compile(r"nvidia-nccl(-cu\d+)?"))
# The sonames runtimes other than torch dlopen (gpudoctor/cuda_consumers.py): libcublas.so.12,
# libcublasLt.so.12, libcudnn.so.9, libcufft.so.11, libcurand.so.10, libcudart.so.12, libcudart.so.11.0.
CUDA_SONAME = re.compile(r"lib(cublas|cublasLt|cudnn|cufft|curand|cudart)\.so\.[0-9]{1,4}(\.0)?")
NVIDIA_WHEEL = re.compile(r"nvidia-.+")


class Copy(NamedTuple):  # not a dataclass: defining one costs every check a third of a millisecond
    version: str
    path: str
    origin: str  # system | pip | conda


# --- pure parsing ---------------------------------------------------------------------------------------


def versions_in_dir(names: list[str], stem: str) -> list[tuple[str, str]]:
    """(version, file name) per major version of `stem` in a directory listing, highest major first.

    The version is the real file's ("libcudnn.so.9.14.0" -> "9.14.0"); where only the soname link is
    there ("libcudnn.so.9") it is the major alone. The file name is the soname link when present, since
    that is the name the loader opens."""
    majors: dict[str, list[str]] = {}
    for name in names:
        suffix = name[len(stem) :] if name.startswith(stem) else ""
        if re.fullmatch(r"[0-9]{1,9}(\.[0-9]{1,9})*", suffix):  # parts int() can read
            majors.setdefault(suffix.split(".")[0], []).append(name)
    out = []
    for major in sorted(majors, key=int, reverse=True):
        group = majors[major]
        full = versioned_name(group, stem)
        soname = stem + major
        out.append((full or major, soname if soname in group else stem + (full or major)))
    return out


def parse_cudnn_header(text: str) -> Optional[str]:
    """ "9.14.0" from the CUDNN_MAJOR/MINOR/PATCHLEVEL defines of cudnn_version.h, or None."""
    parts = {}
    for key in ("MAJOR", "MINOR", "PATCHLEVEL"):
        m = re.search(rf"^\s*#\s*define\s+CUDNN_{key}\s+(\d+)\b", text, re.M)
        if not m:
            return None
        parts[key] = m.group(1)
    return f"{parts['MAJOR']}.{parts['MINOR']}.{parts['PATCHLEVEL']}"


def _key(version: str) -> tuple[int, Any]:
    try:
        return (1, Version(version))
    except ValueError:  # InvalidVersion, or a number too long for int() (Python 3.11+)
        return (0, version)  # unparseable versions sort below every real one


def newest_first(versions: list[str]) -> list[str]:
    """Distinct version strings, newest first; equal versions keep the order found ("9.19.0" vs "9.19")."""
    distinct = list(dict.fromkeys(versions))
    return sorted(distinct, key=_key, reverse=True)


def count_distinct(versions: list[str]) -> int:
    """How many different major.minor.patch releases: "9.19.0.56" and "9.19.0" are one."""
    releases = set()
    for v in versions:
        try:
            rel = Version(v).release
            releases.add(tuple((rel + (0, 0, 0))[:3]))
        except ValueError:  # InvalidVersion, or a number too long for int()
            releases.add((v,))
    return len(releases)


def dedupe(copies: list[Copy]) -> list[Copy]:
    """One copy per (origin, version): /lib/x86_64-linux-gnu and /usr/lib/x86_64-linux-gnu are usually
    the same directory seen twice, and the probe cannot resolve symlinks through the Host."""
    seen: dict[tuple[str, str], Copy] = {}
    for c in copies:
        seen.setdefault((c.origin, c.version), c)
    return list(seen.values())


def pip_copies(dump: Optional[dict], dist_name: re.Pattern, lib: str) -> list[Copy]:
    """Copies shipped in nvidia-* wheels; the wheel's version is the library's (9.19.0.56)."""
    out = []
    dists = (dump or {}).get("distributions")
    for dist in dists if isinstance(dists, list) else []:  # a snapshot's python.json may hold anything
        if not isinstance(dist, dict) or not dist_name.fullmatch(str(dist.get("name", ""))):
            continue
        libs = dist.get("libs")
        for rel in libs if isinstance(libs, list) else []:
            if isinstance(rel, str) and os.path.basename(rel).startswith(lib):
                out.append(Copy(str(dist.get("version", "")), f"{dist.get('location', '')}/{rel}", "pip"))
                break
    return out


def split_path_list(value: Optional[str]) -> list[str]:
    """Directories of a colon-separated list, in order, without empties or repeats."""
    return list(dict.fromkeys(os.path.normpath(d) for d in (value or "").split(":") if d))


def wheel_sonames(dump: Optional[dict]) -> list[str]:
    """The CUDA_SONAME files the nvidia-* wheels of the environment ship (their RECORD's library paths)."""
    found: set[str] = set()
    dists = (dump or {}).get("distributions")
    for dist in dists if isinstance(dists, list) else []:
        if not isinstance(dist, dict) or not NVIDIA_WHEEL.fullmatch(str(dist.get("name", ""))):
            continue
        libs = dist.get("libs")
        for rel in libs if isinstance(libs, list) else []:
            name = os.path.basename(rel) if isinstance(rel, str) else ""
            if CUDA_SONAME.fullmatch(name):
                found.add(name)
    return sorted(found)


# --- host reads shared with the CUDA probe -------------------------------------------------------------


def ldconfig_entries(host: Any) -> tuple[list[tuple[str, str]], Optional[str]]:
    """The loader cache's (soname, path) entries, and the reason it could not be read (else None)."""
    for argv in LDCONFIG_ARGVS:
        try:
            result = host.run(argv)
        except HostError as e:
            if e.reason == NOT_FOUND:
                continue
            return [], e.reason
        if result.rc != 0:
            return [], f"ldconfig failed (rc={result.rc})"
        return parse_ldconfig(result.stdout), None
    return [], "ldconfig not found"


def python_dump(host: Any) -> Optional[dict]:
    """The inspected interpreter's installed distributions; None when unavailable (no pip copies then)."""
    try:
        data = host.python()
    except HostError:
        return None
    return data if isinstance(data, dict) else None


class Disk:
    """Directory listings through the Host, each read once per probe run; None when unreadable."""

    def __init__(self, host: Any) -> None:
        self.host = host
        self._names: dict[str, Optional[list[str]]] = {}

    def names(self, directory: str) -> Optional[list[str]]:
        if directory not in self._names:
            try:
                self._names[directory] = list(self.host.listdir(directory))
            except HostError:
                self._names[directory] = None
        return self._names[directory]


def find_copies(
    disk: Disk, stem: str, entries: list[tuple[str, str]], ld_dirs: list[str], pip: list[Copy]
) -> tuple[list[Copy], Optional[Copy]]:
    """Every copy of `stem`, in the order the loader would consider them (LD_LIBRARY_PATH, the loader
    cache, then the conda environment and pip wheels), and the first one on LD_LIBRARY_PATH.

    A directory that belongs to a pip wheel or to CONDA_PREFIX counts as that origin wherever it was
    found, so that a wheel's lib directory on LD_LIBRARY_PATH is not mistaken for a system copy."""
    conda = env_or_none(disk.host, "CONDA_PREFIX")
    conda_lib = os.path.normpath(f"{conda}/lib") if conda else None
    wheels = {os.path.dirname(c.path): c for c in pip}

    def at(d: str) -> list[Copy]:
        if d in wheels:
            return [wheels[d]]
        origin = "conda" if d == conda_lib else "system"
        return [Copy(v, f"{d}/{n}", origin) for v, n in versions_in_dir(disk.names(d) or [], stem)]

    on_path = [c for d in ld_dirs for c in at(d)]
    out = list(on_path)
    for soname, path in entries:
        major = soname[len(stem) :] if soname.startswith(stem) else ""
        if not major.isdigit():
            continue
        d = os.path.dirname(path)
        if disk.names(d) is None and d not in wheels:
            # An unreadable directory: the cached soname still proves a copy of that major version.
            out.append(Copy(major, path, "conda" if d == conda_lib else "system"))
        else:
            out += [c for c in at(d) if c.version.split(".")[0] == major]
    if conda_lib:
        out += at(conda_lib)
    return out + pip, (on_path[0] if on_path else None)


def copies_facts(prefix: str, copies: list[Copy], ldconfig_error: Optional[str]) -> dict[str, Fact]:
    src = f"{prefix} search"
    if not copies and ldconfig_error:
        # Nothing found, but the loader cache was not read: "none" would be a guess.
        return {f"{prefix}.count": unknown(ldconfig_error, "ldconfig")}
    members = [
        {
            "version": known(c.version, c.path),
            "path": known(c.path, c.path),
            "origin": known(c.origin, c.path),
        }
        for c in copies
    ]
    return list_facts(prefix, members, src)


# --- probe ----------------------------------------------------------------------------------------------


def probe(host: Any) -> dict[str, Fact]:
    entries, ldconfig_error = ldconfig_entries(host)
    ld_dirs = split_path_list(env_or_none(host, "LD_LIBRARY_PATH"))
    dump = python_dump(host)
    disk = Disk(host)
    facts: dict[str, Fact] = {}
    for prefix, stem, dist_name in (CUDNN, NCCL):
        pip = pip_copies(dump, dist_name, stem.rstrip("."))
        found, first = find_copies(disk, stem, entries, ld_dirs, pip)
        if prefix == "cudnn":
            found = [_refine_from_header(host, c) for c in found]
        copies = dedupe(found)
        facts.update(copies_facts(f"{prefix}.installs", copies, ldconfig_error))
        if copies or not ldconfig_error:
            facts[f"{prefix}.versions"] = known(
                newest_first([c.version for c in copies]), f"{prefix}.installs"
            )
        else:
            facts[f"{prefix}.versions"] = unknown(ldconfig_error, "ldconfig")
        if prefix == "cudnn":
            versions = facts["cudnn.versions"]
            distinct = known(count_distinct(versions.value), versions.source) if versions.known else versions
            facts["cudnn.distinct_versions"] = distinct
            facts["cudnn.ld_library_path_version"] = (
                known(first.version, first.path) if first else unknown("not installed", "LD_LIBRARY_PATH")
            )
    facts.update(_cuda_libs(disk, entries, ldconfig_error, ld_dirs, dump))
    facts.update(_net_plugin(host, entries, ldconfig_error, ld_dirs))
    return facts


def _net_plugin(
    host: Any, entries: list[tuple[str, str]], ldconfig_error: Optional[str], ld_dirs: list[str]
) -> dict[str, Fact]:
    """nccl.net_plugin.*: the network plugin NCCL would dlopen (gpudoctor/probes/net_plugin.py)."""
    setting = env_or_none(host, "NCCL_NET_PLUGIN")
    names = " or ".join(net_plugin.plugin_names(setting))
    src = f"{names} in LD_LIBRARY_PATH, ldconfig -p, {', '.join(net_plugin.DEFAULT_DIRS)}"
    path, why = net_plugin.find(host, setting, entries, ldconfig_error, ld_dirs)
    if path:
        return {"nccl.net_plugin.found": known(True, path), "nccl.net_plugin.path": known(path, path)}
    if why:
        return {"nccl.net_plugin.found": unknown(why, src), "nccl.net_plugin.path": unknown(why, src)}
    return {"nccl.net_plugin.found": known(False, src), "nccl.net_plugin.path": unknown("none found", src)}


def _cuda_libs(
    disk: Disk, entries: list[tuple[str, str]], ldconfig_error: Optional[str], ld_dirs: list[str], dump: Any
) -> dict[str, Fact]:
    """What dlopen("libcublas.so.12") finds by name (LD_LIBRARY_PATH directories, the loader cache), and
    what the environment's nvidia-* wheels hold, which a process has only once something loads it by path
    (`import torch`, onnxruntime.preload_dlls()) or LD_LIBRARY_PATH names the wheel's directory."""
    # A conda environment's runtimes find its lib directory through their RPATH ($ORIGIN/..): it counts.
    dirs = list(ld_dirs) + conda_lib_dirs(env_or_none(disk.host, "CONDA_PREFIX"), dump)
    loader = {name for d in dirs for name in (disk.names(d) or []) if CUDA_SONAME.fullmatch(name)}
    loader |= {soname for soname, _ in entries if CUDA_SONAME.fullmatch(soname)}
    src = "LD_LIBRARY_PATH, ldconfig -p, the conda environment's lib"
    facts = {
        "cuda_libs.loader_sonames": unknown(ldconfig_error, src)
        if ldconfig_error
        else known(sorted(loader), src)
    }
    if dump is None:
        facts["cuda_libs.wheel_sonames"] = unknown("python environment not inspected", "python")
    else:
        facts["cuda_libs.wheel_sonames"] = known(wheel_sonames(dump), f"python:{dump.get('executable', '')}")
    return facts


def conda_lib_dirs(conda_prefix: Optional[str], dump: Any) -> list[str]:
    """The lib directories of the active conda environment and of the inspected one if it is conda's."""
    out = [os.path.normpath(f"{conda_prefix}/lib")] if conda_prefix else []
    if isinstance(dump, dict) and dump.get("conda_meta") and isinstance(dump.get("prefix"), str):
        out.append(os.path.normpath(f"{dump['prefix']}/lib"))
    return list(dict.fromkeys(out))


def _refine_from_header(host: Any, copy: Copy) -> Copy:
    """A copy in a system library directory known only by its major (no versioned file name) takes the
    version of the distribution package's header; headers say nothing about copies elsewhere."""
    if "." in copy.version or not re.fullmatch(SYSTEM_LIB_DIR, os.path.dirname(copy.path)):
        return copy
    for header in CUDNN_HEADERS:
        try:
            version = parse_cudnn_header(host.read(header))
        except HostError:
            continue
        if version and version.split(".")[0] == copy.version:
            return Copy(version, copy.path, copy.origin)
    return copy


def derive(facts: Facts) -> dict[str, Fact]:
    """nccl.newest (gpudoctor/derive.py runs it)."""
    if not collected(facts, "nccl.versions"):
        return {}
    versions = facts.get("nccl.versions")
    src = "derived:nccl.versions"
    if not versions.known:
        return {"nccl.newest": unknown(versions.unknown or "", src)}
    return {"nccl.newest": known(versions.value[0], src) if versions.value else unknown("not installed", src)}
