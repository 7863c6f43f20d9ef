"""The CUDA probe: the toolkit, every copy of the CUDA runtime (libcudart), and forward compatibility.

Produces `cuda.*`. The toolkit (nvcc, headers) and the runtime a program loads are different things and
often different versions: frameworks bring their own libcudart in pip wheels, so all copies are listed.

It also reads what building a CUDA extension (flash-attn and friends) depends on: where CUDA_HOME points and
whether that directory exists, the nvcc that PATH finds against the one in CUDA_HOME, and the host
compilers nvcc may be given (nvcc's default, NVCC_CCBIN or gcc on PATH, and CUDAHOSTCXX, CC, CXX), each
with the version its `--version` prints.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Mapping
from typing import Any, Callable, Optional

from ..facts import Fact, Facts, FactSpec, Inputs, collected, known, list_facts, unknown
from ..host.base import NOT_FOUND, HostError, env_or_none
from . import ProbeSpec
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

FACT_SPECS: tuple[FactSpec, ...] = (
    FactSpec("cuda.home", "str", "", "CUDA_HOME (or CUDA_PATH), else /usr/local/cuda when it exists"),
    FactSpec(
        "cuda.toolkit.version", "version", "", "CUDA toolkit version (version.json, else nvcc --version)"
    ),
    FactSpec("cuda.runtimes.count", "int", "", "copies of libcudart found"),
    FactSpec("cuda.runtimes[].version", "version", "", "libcudart version"),
    FactSpec("cuda.runtimes[].path", "str", "", "where it lives"),
    FactSpec(
        "cuda.runtimes[].origin",
        "str",
        "",
        "`system` (loader path), `toolkit`, `pip` (nvidia-* wheel) or `conda`",
    ),
    FactSpec(
        "cuda.compat.version", "version", "", "forward-compatibility libcuda version ($CUDA_HOME/compat)"
    ),
    FactSpec("cuda.compat.active", "bool", "", "the compat libcuda's directory is on LD_LIBRARY_PATH"),
    FactSpec(
        "cuda.home_source",
        "str",
        "",
        "what chose cuda.home: `CUDA_HOME`, `CUDA_PATH`, or `default` (neither is set: /usr/local/cuda)",
    ),
    FactSpec(
        "cuda.home_exists",
        "bool",
        "",
        "the directory cuda.home names exists (false: CUDA_HOME or CUDA_PATH names a missing directory, or, "
        "with neither set, there is no /usr/local/cuda)",
    ),
    FactSpec(
        "cuda.toolkit.found",
        "bool",
        "",
        "a CUDA toolkit was found (version.json or nvcc in cuda.home, else nvcc on PATH); false only when "
        "none of those places has one",
    ),
    FactSpec(
        "cuda.toolkit.driver_support",
        "str",
        "",
        "derived: how the driver runs what this toolkit builds (by its major.minor): `full` (no newer than "
        "driver.max_cuda, or the driver meets the toolkit's own minimum), `minor_compat` (below that "
        "minimum but at or above the CUDA major's "
        "minor-version-compatibility floor: SASS runs, PTX the toolkit made cannot be JIT-compiled) or "
        "`none` (below that floor, or a newer CUDA major than the driver supports)",
    ),
    FactSpec(
        "cuda.toolkit.min_cc",
        "version",
        "",
        "derived: the oldest compute capability the toolkit's CUDA major builds for (the cuda_drivers "
        "table's gpu_floors: 7.5 for CUDA 13)",
    ),
    FactSpec(
        "cuda.toolkit.unsupported_gpus",
        "list[int]",
        "",
        "derived: GPUs (NVML index) below cuda.toolkit.min_cc, for which nothing the toolkit builds has code",
    ),
    FactSpec(
        "cuda.toolkit.unsupported_gpu_count", "int", "", "derived: how many GPUs are in unsupported_gpus"
    ),
    FactSpec(
        "cuda.toolkit.unsupported_ccs",
        "list[str]",
        "",
        "derived: the distinct compute capabilities of the GPUs in cuda.toolkit.unsupported_gpus",
    ),
    FactSpec(
        "cuda.nvcc.on_path", "bool", "", "a PATH directory holds an nvcc (searched as the shell searches)"
    ),
    FactSpec("cuda.nvcc.path", "str", "", "the nvcc PATH finds, e.g. /usr/local/cuda-12.4/bin/nvcc"),
    FactSpec(
        "cuda.nvcc.version", "version", "", "that nvcc's version (nvcc --version, the V part), e.g. 12.4.131"
    ),
    FactSpec(
        "cuda.nvcc.home_version",
        "version",
        "",
        "the version of the nvcc in cuda.home (<cuda.home>/bin/nvcc --version), the one CUDA extensions "
        "built by torch.utils.cpp_extension use",
    ),
    FactSpec(
        "cuda.extension_nvcc.version",
        "version",
        "",
        "derived: the version of the nvcc torch.utils.cpp_extension builds CUDA extensions with, found as it "
        "finds it (cuda.extension_nvcc.found_by)",
    ),
    FactSpec("cuda.extension_nvcc.major", "int", "", "derived: that nvcc's CUDA major"),
    FactSpec(
        "cuda.extension_nvcc.found_by",
        "str",
        "",
        "derived: what names that nvcc: `CUDA_HOME`, `CUDA_PATH`, `PATH` (the nvcc a PATH search finds), or "
        "`/usr/local/cuda` (neither variable set, no nvcc on PATH)",
    ),
    FactSpec(
        "cuda.host_compilers.count",
        "int",
        "",
        "host compilers a CUDA build may hand nvcc: nvcc's default (NVCC_CCBIN, else gcc on PATH) and those "
        "CUDAHOSTCXX, CC and CXX name",
    ),
    FactSpec(
        "cuda.host_compilers[].variable",
        "str",
        "",
        "what names it: `NVCC_CCBIN`, `CUDAHOSTCXX` (CMake's CUDA host compiler), `CC` (passed to nvcc as "
        "-ccbin by torch.utils.cpp_extension), `CXX`, or `PATH` (gcc on PATH, nvcc's default)",
    ),
    FactSpec("cuda.host_compilers[].command", "str", "", "the command as the variable gives it, e.g. gcc-13"),
    FactSpec(
        "cuda.host_compilers[].kind", "str", "", "`gcc`, `clang` or `other`, from what --version prints"
    ),
    FactSpec("cuda.host_compilers[].version", "version", "", "its version (--version), e.g. 13.2.0"),
    FactSpec("cuda.host_compilers[].major", "int", "", "major part of cuda.host_compilers[].version"),
    FactSpec(
        "cuda.host_compilers[].max_major",
        "int",
        "",
        "derived: the newest major of its kind that the nvcc of cuda.toolkit.version accepts (its "
        "crt/host_config.h check), from the host_compilers knowledge table",
    ),
)
PROBE = ProbeSpec("cuda")

DEFAULT_HOME = "/usr/local/cuda"
CUDART_STEM = "libcudart.so."
# nvidia-cuda-runtime (CUDA 13 wheels) and nvidia-cuda-runtime-cu12 / -cu11.
CUDART_DISTS = re.compile(r"nvidia-cuda-runtime(-cu\d+)?")
NOT_INSTALLED = "not installed"

_NVCC = re.compile(r"release\s+(\d+\.\d+)(?:,\s*V(\d+(?:\.\d+)+))?")
# Where a CUDA build takes its host compiler from, besides nvcc's default (NVCC_CCBIN, else gcc on PATH):
# CMake's CUDA host compiler, the C compiler torch.utils.cpp_extension passes to nvcc as -ccbin, and the C++
# compiler the rest of an extension is built with.
HOST_COMPILER_VARIABLES = ("CUDAHOSTCXX", "CC", "CXX")
HOST_COMPILER_FIELDS = ("variable", "command", "kind", "version", "major")
# `gcc (Ubuntu 13.2.0-23ubuntu4) 13.2.0`, `g++ (GCC) 11.4.1 20231218 (Red Hat 11.4.1-3)`: GCC's --version
# is `<program> (<package version>) <version>`.
_GCC = re.compile(r"^\S+ \(.*?\) (\d+\.\d+(?:\.\d+)?)")
_CLANG = re.compile(r"\bclang version (\d+\.\d+(?:\.\d+)?)")
# Compiler launchers a CC may start with: the compiler is the word after them.
LAUNCHERS = ("ccache", "sccache", "distcc", "icecc")


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


def parse_compiler_version(text: str) -> tuple[str, Optional[str]]:
    """(kind, version) from what a C/C++ compiler's `--version` printed: ("gcc", "13.2.0"),
    ("clang", "18.1.3"), or ("other", None) for anything else (Intel icx, nvc++, unreadable output).
    GCC is told by its Free Software Foundation copyright line, so that a compiler that imitates its first
    line (icc: `icc (ICC) 2021.10.0`) is not taken for it."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    first = lines[0] if lines else ""
    if "Intel" in first or "oneAPI" in first:  # icx/icpx are clang inside, but nvcc refuses them as such
        return "other", None
    m = _CLANG.search(first)
    if m:
        return "clang", m.group(1)
    m = _GCC.match(first)
    if m and "Free Software Foundation" in text:
        return "gcc", m.group(1)
    return "other", None


def compiler_program(command: str) -> Optional[str]:
    """The program a compiler variable runs: its first word, or the word after a launcher (CC="ccache gcc"
    runs gcc); None when there is none. Only the program is run, with --version: never the arguments a
    variable carries."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    while words and os.path.basename(words[0]) in LAUNCHERS:
        words = words[1:]
    return words[0] if words and not words[0].startswith("-") else None


def host_compiler_commands(env: Mapping[str, Optional[str]]) -> list[tuple[str, str]]:
    """(the variable that names it, the command) for each host compiler a CUDA build may hand nvcc, first
    nvcc's own default: NVCC_CCBIN when set, else `gcc` found on PATH ("PATH"). A command named twice is
    listed once, under the first variable that names it."""
    default = (env.get("NVCC_CCBIN") or "").strip()
    found = [("NVCC_CCBIN", default) if default else ("PATH", "gcc")]
    for name in HOST_COMPILER_VARIABLES:
        value = (env.get(name) or "").strip()
        if value and value not in {command for _, command in found}:
            found.append((name, value))
    return found


def find_on_path(
    name: str, path_value: Optional[str], listdir: Callable[[str], list[str]]
) -> tuple[Optional[str], Optional[str]]:
    """Where a search of PATH finds `name`: (path, None); (None, None) when no PATH directory holds it;
    (None, why) when a directory before the first that holds it could not be listed (it might hold it).
    `listdir` raises HostError; a directory that does not exist is skipped, as the shell skips it."""
    for directory in split_path_list(path_value):
        try:
            names = listdir(directory)
        except HostError as e:
            if e.reason == NOT_FOUND:
                continue
            return None, f"{directory}: {e.reason}"
        if name in names:
            return os.path.join(directory, name), None
    return None, None


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
    facts.update(_home_facts(host, home_fact))
    toolkit = _toolkit_version(host, home, home_fact)
    facts["cuda.toolkit.version"] = toolkit
    # False only when every place a toolkit could be was looked at and none was there.
    found = toolkit.known or toolkit.unknown == NOT_INSTALLED
    facts["cuda.toolkit.found"] = known(toolkit.known, toolkit.source) if found else toolkit
    facts.update(_nvcc_facts(host, home, home_fact))
    facts.update(_host_compilers(host))
    facts.update(_runtimes(host))
    compat_dir = f"{home}/compat" if home else None
    facts["cuda.compat.version"] = _compat_version(host, compat_dir, home_fact)
    facts["cuda.compat.active"] = known(
        compat_active(compat_dir, env_or_none(host, "LD_LIBRARY_PATH")), "LD_LIBRARY_PATH"
    )
    return facts


def _home(host: Any) -> tuple[Optional[str], Fact]:
    for name in ("CUDA_HOME", "CUDA_PATH"):
        value = env_or_none(host, name)
        if value:
            return value.rstrip("/") or value, known(value.rstrip("/") or value, name)
    try:
        host.listdir(DEFAULT_HOME)
    except HostError as e:
        return None, unknown(NOT_INSTALLED if e.reason == NOT_FOUND else e.reason, DEFAULT_HOME)
    return DEFAULT_HOME, known(DEFAULT_HOME, DEFAULT_HOME)


def _env(host: Any, name: str) -> tuple[Optional[str], Optional[str]]:
    """(value, None), or (None, why it could not be read)."""
    try:
        return host.env(name), None
    except HostError as e:
        return None, e.reason


def _home_facts(host: Any, home_fact: Fact) -> dict[str, Fact]:
    """Which variable chose cuda.home (CUDA_HOME, CUDA_PATH, or none: `default`), and whether it exists."""
    chosen = home_fact.source if home_fact.source in ("CUDA_HOME", "CUDA_PATH") else "default"
    out = {"cuda.home_source": known(chosen, chosen if chosen != "default" else DEFAULT_HOME)}
    if chosen == "default":  # _home listed /usr/local/cuda to choose it
        exists = (
            known(home_fact.known, DEFAULT_HOME)
            if home_fact.known or home_fact.unknown == NOT_INSTALLED
            else unknown(home_fact.unknown or "unknown", DEFAULT_HOME)
        )
        return {**out, "cuda.home_exists": exists}
    path = str(home_fact.value)
    try:
        host.listdir(path)
    except HostError as e:
        # A file in its place (not a directory) reads as not found too: either way nothing is there.
        exists = known(False, path) if e.reason == NOT_FOUND else unknown(e.reason, path)
    else:
        exists = known(True, path)
    return {**out, "cuda.home_exists": exists}


def _nvcc_version(host: Any, path: str) -> Fact:
    """What `<path> --version` says, or why not."""
    src = f"{path} --version"
    try:
        result = host.run((path, "--version"))
    except HostError as e:
        return unknown(e.reason, src)
    version = parse_nvcc_version(result.stdout) if result.rc == 0 else None
    if version:
        return known(version, src)
    return unknown(f"nvcc failed (rc={result.rc})" if result.rc != 0 else "unrecognised nvcc output", src)


def _nvcc_facts(host: Any, home: Optional[str], home_fact: Fact) -> dict[str, Fact]:
    """The nvcc a PATH search finds (as a shell would, directory by directory) and its version, and the
    version of the nvcc in cuda.home."""
    out: dict[str, Fact] = {}
    if home:
        out["cuda.nvcc.home_version"] = _nvcc_version(host, f"{home}/bin/nvcc")
    else:
        out["cuda.nvcc.home_version"] = unknown(home_fact.unknown or NOT_INSTALLED, "cuda.home")
    path_value, why = _env(host, "PATH")
    if path_value is None:
        # A live host always has PATH; a snapshot taken before PATH was recorded does not know it.
        why = why or "PATH not set (or not recorded)"
        return {**out, **{f"cuda.nvcc.{f}": unknown(why, "env:PATH") for f in ("on_path", "path", "version")}}
    found, why = find_on_path("nvcc", path_value, host.listdir)
    if why is not None:
        return {**out, **{f"cuda.nvcc.{f}": unknown(why, "PATH") for f in ("on_path", "path", "version")}}
    if found is None:
        out["cuda.nvcc.on_path"] = known(False, "PATH")
        out["cuda.nvcc.path"] = unknown("not on PATH", "PATH")
        out["cuda.nvcc.version"] = unknown("not on PATH", "PATH")
        return out
    out["cuda.nvcc.on_path"] = known(True, "PATH")
    out["cuda.nvcc.path"] = known(found, "PATH")
    out["cuda.nvcc.version"] = _nvcc_version(host, found)
    return out


def _host_compilers(host: Any) -> dict[str, Fact]:
    """cuda.host_compilers: each compiler host_compiler_commands names, with what its --version says. gcc
    that PATH does not find is left out (nvcc then has no host compiler, a different problem); a compiler a
    variable names that cannot be run stays in the list, unknown, with the reason."""
    names = ("NVCC_CCBIN", *HOST_COMPILER_VARIABLES)
    env = {}
    for name in names:
        env[name], why = _env(host, name)
        if why is not None:
            return {"cuda.host_compilers.count": unknown(why, f"env:{name}")}
    members = []
    for variable, command in host_compiler_commands(env):
        if variable == "NVCC_CCBIN":
            command = _ccbin_command(host, command)
        member = _compiler(host, variable, command)
        if member is not None:
            members.append(member)
    return list_facts("cuda.host_compilers", members, "env:" + ",".join(names))


def _ccbin_command(host: Any, value: str) -> str:
    """NVCC_CCBIN, like nvcc's -ccbin, names the compiler or the directory that holds it (then its gcc)."""
    directory = os.path.normpath(value)
    try:
        host.listdir(directory)
    except HostError:
        return value
    return os.path.join(directory, "gcc")


def _compiler(host: Any, variable: str, command: str) -> Optional[dict[str, Fact]]:
    src = f"{command} --version"
    member = {"variable": known(variable, f"env:{variable}" if variable != "PATH" else "PATH")}
    member["command"] = known(command, member["variable"].source)

    def unread(why: str) -> dict[str, Fact]:
        return {**member, **{f: unknown(why, src) for f in HOST_COMPILER_FIELDS[2:]}}

    program = compiler_program(command)
    if program is None:
        return unread("could not parse the command")
    src = f"{program} --version"
    try:
        result = host.run((program, "--version"))
    except HostError as e:
        return None if variable == "PATH" and e.reason == NOT_FOUND else unread(e.reason)
    if result.rc != 0:
        return unread(f"{program} --version failed (rc={result.rc})")
    kind, version = parse_compiler_version(result.stdout)
    member["kind"] = known(kind, src)
    if version is None:
        member["version"] = member["major"] = unknown("not gcc or clang", src)
    else:
        member["version"] = known(version, src)
        member["major"] = known(int(version.split(".")[0]), src)
    return member


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
    ld_dirs = split_path_list(env_or_none(host, "LD_LIBRARY_PATH"))
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


def extension_nvcc(home_source: Any, on_path: Any) -> tuple[str, str]:
    """Which nvcc torch.utils.cpp_extension builds with, as its _find_cuda_home() looks: CUDA_HOME, else
    CUDA_PATH; else the nvcc on PATH (its directory's parent); else /usr/local/cuda. (what found it, the fact
    holding that nvcc's version)."""
    if home_source in ("CUDA_HOME", "CUDA_PATH"):
        return str(home_source), "cuda.nvcc.home_version"
    if on_path:
        return "PATH", "cuda.nvcc.version"
    return "/usr/local/cuda", "cuda.nvcc.home_version"


def _extension_nvcc(facts: Facts) -> dict[str, Fact]:
    get = Inputs(facts)
    found_by, version_fact = extension_nvcc(get("cuda.home_source"), get("cuda.nvcc.on_path"))
    names = ("version", "major", "found_by")
    if get.why is not None:
        return {f"cuda.extension_nvcc.{n}": get.result(lambda: (None, None)) for n in names}
    version = facts.get(version_fact)
    source = f"derived:cuda.home_source, cuda.nvcc.on_path, {version_fact}"
    out = {"cuda.extension_nvcc.found_by": known(found_by, source)}
    if not version.known:
        out["cuda.extension_nvcc.version"] = unknown(version.unknown or "unknown", source)
        out["cuda.extension_nvcc.major"] = unknown(version.unknown or "unknown", source)
        return out
    out["cuda.extension_nvcc.version"] = known(version.value, source)
    out["cuda.extension_nvcc.major"] = known(int(str(version.value).split(".")[0]), source)
    return out


def derive(facts: Facts) -> dict[str, Fact]:
    """cuda.extension_nvcc.* (gpudoctor/derive.py runs it)."""
    return _extension_nvcc(facts) if collected(facts, "cuda.home_source", "cuda.nvcc.on_path") else {}
