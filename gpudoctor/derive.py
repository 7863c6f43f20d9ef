"""Derived facts: facts computed from other facts (and the knowledge tables), never from the host.

Runs after the probes, on the collected Facts, and returns them with the derived facts added, each with the
source `derived:<what it was computed from>`. A derived fact is unknown, with the first reason, when a fact
it needs is unknown; it is left out altogether when an input was never collected (a probe the profile
does not run), so that a preflight report does not fill up with facts nobody asked for.

First come the derivations that need nothing but facts: each sits beside its probe, as that module's
`derive(facts)` (system.cpus_per_gpu, pci.missing_from_nvml, python.rocm_frameworks, cuda.extension_nvcc.*,
nccl.newest, env.cuda_visible_devices_unmatched, interconnect.nccl_auto_* and .gdr_path, ...). Then those
this module computes with the knowledge tables and compat:

    frameworks[i].arch_list         a torch CUDA build's TORCH_CUDA_ARCH_LIST: as the imported torch reports
                                    it (runtime.torch.arch_list, check --deep), else from the knowledge
                                    table, by version and CUDA variant
    frameworks[i].unsupported_*     the GPUs whose compute capability that list has no code for
    runtime.torch.unsupported_*     the CUDA devices torch sees whose compute capability its own arch list
                                    has no code for
    runtime.torch.cudnn_pinned      the cuDNN the torch wheel pins, to the precision torch reports its own
    extensions[i].unsupported_*     the GPUs whose compute capability a CUDA extension's own code (its SASS,
                                    or PTX the driver can compile) leaves out; .torch_covers whether the
                                    torch build runs on them; .rebuild_arch the TORCH_CUDA_ARCH_LIST of
                                    every GPU here
    gpus[i].nvlink.*_wired          a GPU's NVLink links that its model wires, as the knowledge tables' GPU
                                    catalogue knows them (an H100 PCIe card leaves 6 of the 18 links NVML
                                    numbers unwired); every link NVML reports, for a model it does not know
    cuda.toolkit.min_cc, .unsupported_*  the oldest compute capability the toolkit's CUDA major builds for
                                    (cuda_drivers gpu_floors, through compat.toolkit_supports_gpu), and
                                    the GPUs below it, for which nothing this toolkit builds has code
    frameworks[i].cuda_min_cc, .cuda_unsupported_*  the same for a framework's CUDA build (a cu130 wheel)
    cuda.toolkit.driver_support     whether the driver runs what the CUDA toolkit builds: in full when the
                                    toolkit's major.minor is no newer than driver.max_cuda, else
                                    compat.driver_verdict of it on driver.version
    cuda.host_compilers[i].max_major  the newest gcc/clang major the toolkit's nvcc accepts (the
                                    host_compilers table, through table_digest)
    container.require_*             the NVIDIA container runtime's verdict on NVIDIA_REQUIRE_* and where it
                                    is enforced (container/require_verdict.py)
    nccl_paths.*                    the transports NCCL will use between the GPUs and to the network, and
                                    where they are slower than the hardware allows (gpudoctor/nccl/)
    knowledge.newer, .newer_count   what on this host is newer than the knowledge tables: a torch or
                                    tensorflow release (major.minor) past the newest row of its table, a
                                    driver branch past the newest of cuda_drivers (through table_digest)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Optional

from . import cuda_consumers
from .facts import SCHEMA, Fact, Facts, FactSpec, Inputs, collected, known, list_facts, unknown
from .probes import derivations
from .table_digest import TableError, digest, gpu_floors, host_compiler_limits, newest_row

FACT_SPECS: tuple[FactSpec, ...] = (
    FactSpec(
        "knowledge.newer",
        "list[str]",
        "",
        "derived: what on this host is newer than gpudoctor's knowledge tables, e.g. `torch 2.16.0 (the "
        "torch table ends at 2.15)`, `driver 630.10 (the driver table ends at R620)`: an installed torch or "
        "tensorflow whose major.minor is past its table's newest release, a driver whose branch is past the "
        "newest in cuda_drivers; listed when known even if another version is unknown, unknown when nothing "
        "is known to be newer and a version is unknown",
    ),
    FactSpec("knowledge.newer_count", "int", "", "derived: how many entries knowledge.newer has"),
)

# Every fact this stage adds: those whose declaration (FACT_SPECS beside the probe that reads their inputs)
# says "derived:".
DERIVED = tuple(s.name for s in SCHEMA if s.doc.startswith("derived:"))

# --- pure decisions -------------------------------------------------------------------------------------


def _cc(text: str) -> tuple[int, int]:
    major, minor = text.split(".")
    return int(major), int(minor)


def arch_from_torch(entries: list[str]) -> list[str]:
    """torch.cuda.get_arch_list() in the knowledge table's form: ["sm_80", "sm_90", "compute_90"] ->
    ["8.0", "9.0+PTX"] (sm_XY: native code for X.Y; compute_XY: PTX). An arch-specific entry (sm_90a,
    sm_100f) counts as its base compute capability. ValueError for an entry of another form (gfx90a)."""
    native: set[str] = set()
    ptx: set[str] = set()
    for entry in entries:
        m = re.fullmatch(r"(sm|compute)_(\d+)(\d)[a-z]?", str(entry))
        if m is None:
            raise ValueError(f"not a CUDA architecture: {entry}")
        (native if m.group(1) == "sm" else ptx).add(f"{int(m.group(2))}.{m.group(3)}")
    return [f"{cc}+PTX" if cc in ptx else cc for cc in sorted(native | ptx, key=_cc)]


def binary_arch(entries: Sequence[str]) -> tuple[list[str], list[str]]:
    """An extension's code in torch.cuda.get_arch_list()'s form as (capabilities with machine code,
    capabilities with PTX), keeping the arch-specific and family suffixes: ["sm_80", "sm_90a", "sm_100f",
    "compute_120"] -> (["8.0", "9.0a", "10.0f"], ["12.0"]). ValueError for an entry of another form."""
    native: list[str] = []
    ptx: list[str] = []
    for entry in entries:
        m = re.fullmatch(r"(sm|compute)_(\d+)(\d)([af]?)", str(entry))
        if m is None:
            raise ValueError(f"not a CUDA architecture: {entry}")
        (native if m.group(1) == "sm" else ptx).append(f"{int(m.group(2))}.{m.group(3)}{m.group(4)}")
    return native, ptx


def binary_gaps(
    ccs: Sequence[str], entries: Sequence[str], ptx_jit: Optional[bool]
) -> tuple[list[int], list[int]]:
    """(the GPUs, by index in `ccs`, a binary with code `entries` has nothing for; those it runs only through
    PTX the driver compiles). `ptx_jit` False: the driver cannot compile the PTX, so those GPUs have nothing
    either (None: not known, judged as True here; the caller asks only when some GPU relies on the PTX)."""
    from .compat import covers, ptx_for  # lazy for speed, as in compiled_arch

    native, ptx = binary_arch(entries)
    relies = [g for g, cc in enumerate(ccs) if not covers(str(cc), native) and ptx_for(str(cc), ptx)]
    missing = [
        g for g, cc in enumerate(ccs) if not covers(str(cc), native) and (g not in relies or ptx_jit is False)
    ]
    return missing, relies


def compiled_arch(
    version: str, cuda: str, machine: Optional[str] = "x86_64"
) -> tuple[Optional[list[str]], Optional[str]]:
    """(TORCH_CUDA_ARCH_LIST of torch `version` built for CUDA `cuda`, for the wheel of `machine`, None) from
    the knowledge table, or (None, why not). With the machine unknown (None), the x86_64 list, unless the
    table lists a different one for aarch64: then which applies is unknown."""
    # Lazy for speed: the knowledge tables (and compat, over them) load only when a torch build is judged.
    from .compat import cuda_variant
    from .knowledge import KnowledgeError, torch_release

    variant = cuda_variant(cuda)
    if variant is None:
        return None, f"CUDA {cuda} names no wheel variant"
    try:
        found = torch_release(version).variant(variant)
    except (LookupError, KnowledgeError) as e:
        return None, str(e).splitlines()[0][:120]
    if found is None:
        return None, f"torch {version} has no {variant} variant in the knowledge table"
    if machine == "aarch64":
        if not found.arch_aarch64:
            return (
                None,
                f"the knowledge table does not list the aarch64 architectures of torch {version} {variant}",
            )
        return list(found.arch_aarch64), None
    if not found.arch:
        return None, f"the knowledge table does not list the architectures of torch {version} {variant}"
    if machine is None and found.arch_aarch64 and found.arch_aarch64 != found.arch:
        return None, (
            f"the CPU architecture is unknown, and torch {version} {variant}'s x86_64 and aarch64 wheels are "
            "built for different GPUs"
        )
    return list(found.arch), None


def _machine(uname: object) -> Optional[str]:
    """The wheel machine of a uname machine (x86_64, aarch64), or None when unknown or another."""
    return {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}.get(str(uname))


def nvlink_wired(
    links: int, up: int, down: list[int], wired: Optional[Sequence[int]]
) -> tuple[int, int, list[int]]:
    """(links wired, wired links down, the inactive links that are wired) of a GPU whose NVML reports `links`
    link states, `up` of them active and the links numbered in `down` inactive, when its model wires the
    links numbered in `wired` (None: the catalogue does not know, and every reported link counts).

    The count judged is the wired links (no more than NVML reports) less the active ones, so a card whose
    active set differs from the catalogue's numbering but has all its links up is not called down; the
    inactive links listed are those the catalogue does not name as unwired, links beyond the model's
    numbering (NVML answering for links a GPU does not have) among them."""
    if wired is None:
        return links, len(down), list(down)
    numbers = set(wired)
    expected = min(len(numbers), links)
    return expected, max(0, expected - up), [n for n in down if n in numbers]


# --- the stage ------------------------------------------------------------------------------------------


def derive(facts: Facts) -> Facts:
    """The facts, plus those derived from them."""
    out: dict[str, Fact] = dict(facts.items())
    # First the derivations that need only facts, each beside its probe (its module's derive()), in registry
    # order: a probe's derivation may read an earlier one's (interconnect.gdr_path reads nccl.newest).
    for derive_beside_probe in derivations():
        out.update(derive_beside_probe(Facts(out, facts.missing)))
    for i in range(facts.count("frameworks")):
        out.update(_arch(facts, i))
        if collected(facts, "gpus.count"):
            out.update(_framework_floor(facts, i))
    if collected(facts, "runtime.torch.arch_list", "runtime.torch.capabilities"):
        out.update(_runtime_unsupported(facts))
    if collected(facts, "runtime.torch.cudnn", "frameworks.count"):
        out["runtime.torch.cudnn_pinned"] = _cudnn_pinned(facts)
    torch_facts = Facts(out, facts.missing)  # with frameworks[].unsupported_gpus, derived above
    for i in range(facts.count("extensions")):
        out.update(_extension(torch_facts, i))
    for i in range(facts.count("gpus")):
        if collected(facts, f"gpus[{i}].nvlink.links"):
            out.update(_nvlink(facts, i))
    if collected(facts, "cuda.toolkit.version", "driver.version"):
        out["cuda.toolkit.driver_support"] = _toolkit_driver_support(facts)
    if collected(facts, "cuda.toolkit.version", "gpus.count"):
        out.update(_floor(facts, "cuda.toolkit.version", [f"cuda.toolkit.{f}" for f in FLOOR_FIELDS]))
    for i in range(facts.count("cuda.host_compilers")):
        out[f"cuda.host_compilers[{i}].max_major"] = _newest_host_compiler(facts, i)
    if collected(facts, "frameworks.count") or collected(facts, "driver.version"):
        out.update(_newer_than_tables(facts))
    if facts.count("xid"):
        out.update(_xid(facts))
    if collected(facts, "frameworks.count", "python.ctranslate2", "cuda_libs.loader_sonames"):
        out.update(_cuda_consumers(facts))
    gpus = facts.value("gpus.count")
    if isinstance(gpus, int) and gpus > 0 and collected(facts, "interconnect.rdma.device_count"):
        from .nccl.path_facts import path_facts

        out.update(path_facts(Facts(out, facts.missing)))  # reads interconnect.gdr_path, derived above
    if collected(facts, "container.nvidia_requires"):
        from .container.require_verdict import derive as container_requirements

        out.update(container_requirements(facts))
    return Facts(out, facts.missing)


ARCH_FIELDS = ("arch_list", "unsupported_gpus", "unsupported_gpu_count", "unsupported_ccs")


def _arch(facts: Facts, i: int) -> dict[str, Fact]:
    """What frameworks[i], when a torch CUDA build, is compiled for, and which GPUs that leaves out."""
    prefix = f"frameworks[{i}]"
    name, build = facts.value(f"{prefix}.name"), facts.value(f"{prefix}.build")
    if name != "torch" or build not in ("cuda", None):
        why = "only known for torch CUDA builds"
        return {f"{prefix}.{f}": unknown(why, f"derived:{prefix}.name, {prefix}.build") for f in ARCH_FIELDS}
    get = Inputs(facts)
    if facts.get("runtime.torch.arch_list").known and facts.value("runtime.torch.build") == "cuda":
        # check --deep imported this torch: what it says it was compiled for beats the table.
        entries = get("runtime.torch.arch_list")
        arch = get.result(lambda: (arch_from_torch(entries), None))
    else:
        get(f"{prefix}.build")  # unknown build: unknown arch, for that reason
        version, cuda = get(f"{prefix}.version"), get(f"{prefix}.cuda")
        machine = facts.value("python.machine") or facts.value("system.machine")
        arch = get.result(lambda: compiled_arch(str(version), str(cuda), _machine(machine)))
    out = {f"{prefix}.arch_list": arch}
    gpus = Inputs(facts)
    count = gpus("gpus.count")
    ccs = [gpus(f"gpus[{g}].compute_capability") for g in range(count if isinstance(count, int) else 0)]
    if not arch.known:
        gpus.why = arch.unknown
    jit = _ptx_jit(gpus, ccs, arch.value if arch.known else [], f"{prefix}.cuda")
    missing = gpus.result(
        lambda: ([g for g, cc in enumerate(ccs) if not _runs_on(str(cc), arch.value, jit)], None)
    )
    src = missing.source + f", {prefix}.arch_list"
    if missing.known:
        out[f"{prefix}.unsupported_gpus"] = known(missing.value, src)
        out[f"{prefix}.unsupported_gpu_count"] = known(len(missing.value), src)
        distinct = list(dict.fromkeys(str(ccs[g]) for g in missing.value))
        out[f"{prefix}.unsupported_ccs"] = known(distinct, src)
    else:
        for field in ARCH_FIELDS[1:]:
            out[f"{prefix}.{field}"] = unknown(missing.unknown or "unknown", src)
    return out


def _runtime_unsupported(facts: Facts) -> dict[str, Fact]:
    """The CUDA devices the imported torch sees whose compute capability its arch list has no code for."""
    get = Inputs(facts)
    caps, entries = get("runtime.torch.capabilities"), get("runtime.torch.arch_list")
    try:
        arch = arch_from_torch(entries) if get.why is None else []
    except (TypeError, ValueError):
        arch = []  # result() below says why
    jit = _ptx_jit(get, caps if isinstance(caps, list) else [], arch, "runtime.torch.cuda")
    devices = get.result(
        lambda: (
            [d for d, cc in enumerate(caps) if not _runs_on(str(cc), arch_from_torch(entries), jit)],
            None,
        )
    )
    if not devices.known:
        return {f"runtime.torch.{f}": devices for f in RUNTIME_ARCH_FIELDS}
    distinct = list(dict.fromkeys(str(caps[d]) for d in devices.value))
    return {
        "runtime.torch.unsupported_devices": devices,
        "runtime.torch.unsupported_device_count": known(len(devices.value), devices.source),
        "runtime.torch.unsupported_ccs": known(distinct, devices.source),
    }


def _runs_on(cc: str, arch: list[str], ptx_jit: bool) -> bool:
    """compat.runs_on: whether a build for `arch` has code a GPU of capability `cc` runs."""
    from .compat import runs_on as compat_runs_on  # lazy for speed, as in compiled_arch

    return compat_runs_on(cc, arch, ptx_jit)


def _ptx_jit(get: Inputs, ccs: list, arch: list[str], cuda_fact: str) -> bool:
    """Whether the driver can JIT-compile the build's PTX (compat.jits_ptx), asked only when some GPU has
    no native code and would rely on the PTX: then the driver version and the build's CUDA become inputs,
    and unknown when either is (or the table does not know that CUDA)."""
    from .compat import jits_ptx, kernel  # lazy for speed, as in compiled_arch
    from .knowledge import KnowledgeError, knowledge

    if get.why is not None or not arch:
        return True
    try:
        relies = any(kernel(str(cc), arch, None) == "ptx?" for cc in ccs)
    except (TypeError, ValueError, IndexError):
        return True  # the caller's computation reports the bad value
    if not relies:
        return True
    driver, cuda = get("driver.version"), get(cuda_fact)
    if get.why is not None:
        return True
    try:
        jit = jits_ptx(str(cuda), str(driver), knowledge())
    except KnowledgeError as e:
        jit, get.why = None, str(e).splitlines()[0][:120]
    if jit is None and get.why is None:
        get.why = f"whether driver {driver} can JIT-compile CUDA {cuda} PTX: CUDA {cuda} is not in the table"
    return bool(jit)


FLOOR_FIELDS = ("min_cc", "unsupported_gpus", "unsupported_gpu_count", "unsupported_ccs")


FloorAnswer = tuple[Optional[tuple[str, list[int]]], Optional[str]]


def gpus_below_cuda_floor(cuda: str, ccs: Sequence[str]) -> FloorAnswer:
    """((the oldest compute capability CUDA `cuda`'s major builds for, the indexes of the GPUs of capability
    `ccs` below it), None), or (None, why not): the table gives that major no floor, or cannot be read.
    Through the table digest (no knowledge tables loaded on a check); compat.toolkit_supports_gpu gives the
    same answer from the loaded tables (tests/core/test_compat.py holds the two together)."""
    major = re.match(r"(\d+)", cuda.strip())
    if not major:
        return None, f"not a CUDA version: {cuda}"
    try:
        floor = gpu_floors().get(major.group(1))
    except TableError as e:
        return None, str(e)
    if floor is None:
        return None, f"the cuda_drivers table gives no oldest GPU for CUDA {major.group(1)}.x"
    return (floor, [g for g, cc in enumerate(ccs) if _cc(cc) < _cc(floor)]), None


def _floor(facts: Facts, cuda_fact: str, names: list[str]) -> dict[str, Fact]:
    """The oldest GPU the CUDA in `cuda_fact` builds for and the GPUs below it, as the four facts `names`
    (FLOOR_FIELDS order)."""
    get = Inputs(facts)
    cuda, count = get(cuda_fact), get("gpus.count")
    ccs = [get(f"gpus[{g}].compute_capability") for g in range(count if isinstance(count, int) else 0)]
    result = get.result(lambda: gpus_below_cuda_floor(str(cuda), [str(cc) for cc in ccs]))
    if not result.known:
        return {name: result for name in names}
    floor, below = result.value
    distinct = list(dict.fromkeys(str(ccs[g]) for g in below))
    values = (floor, below, len(below), distinct)
    return {name: known(value, result.source) for name, value in zip(names, values)}


def _framework_floor(facts: Facts, i: int) -> dict[str, Fact]:
    """frameworks[i]'s CUDA build against the oldest GPU its CUDA major builds for."""
    prefix = f"frameworks[{i}]"
    names = [f"{prefix}.cuda_{f}" for f in FLOOR_FIELDS]
    build = facts.get(f"{prefix}.build")
    if build.known and build.value != "cuda":
        why = unknown("only known for CUDA builds", f"derived:{prefix}.build")
        return {name: why for name in names}
    get = Inputs(facts)
    get(f"{prefix}.build")
    if get.why is not None:
        return {name: get.result(lambda: (None, None)) for name in names}
    return _floor(facts, f"{prefix}.cuda", names)


RUNTIME_ARCH_FIELDS = ("unsupported_devices", "unsupported_device_count", "unsupported_ccs")
EXTENSION_FIELDS = (
    "unsupported_gpus",
    "unsupported_gpu_count",
    "unsupported_ccs",
    "torch_covers",
    "rebuild_arch",
)


def _torch_index(facts: Facts) -> Optional[int]:
    return next(
        (i for i in range(facts.count("frameworks")) if facts.value(f"frameworks[{i}].name") == "torch"), None
    )


def _extension(facts: Facts, i: int) -> dict[str, Fact]:
    """Which GPUs extensions[i]'s own code leaves out, whether torch runs on them, and the arch list a
    rebuild for this machine names. Its PTX is judged as made by the CUDA of the installed torch (the
    extension was built against it: torch.utils.cpp_extension refuses another CUDA major)."""
    from .compat import jits_ptx  # lazy for speed, as in compiled_arch
    from .knowledge import KnowledgeError, knowledge

    prefix = f"extensions[{i}]"
    get = Inputs(facts)
    entries, count = get(f"{prefix}.arch"), get("gpus.count")
    ccs = [get(f"gpus[{g}].compute_capability") for g in range(count if isinstance(count, int) else 0)]
    jit: Optional[bool] = True
    if get.why is None:
        try:
            _missing, relies = binary_gaps([str(c) for c in ccs], entries, True)
        except (TypeError, ValueError):
            relies = []  # result() below says why
        torch = _torch_index(facts)
        if relies and torch is None:
            get.why = (
                "its PTX would be compiled by the driver, and torch (whose CUDA built it) is not installed"
            )
        elif relies:
            driver, cuda = get("driver.version"), get(f"frameworks[{torch}].cuda")
            if get.why is None:
                try:
                    jit = jits_ptx(str(cuda), str(driver), knowledge())
                except KnowledgeError as e:
                    get.why = str(e).splitlines()[0][:120]
                if jit is None and get.why is None:
                    get.why = (
                        f"whether driver {driver} can JIT-compile CUDA {cuda} PTX: CUDA {cuda} is not known"
                    )
    missing = get.result(lambda: (binary_gaps([str(c) for c in ccs], entries, jit)[0], None))
    if not missing.known:
        return {f"{prefix}.{f}": missing for f in EXTENSION_FIELDS}
    distinct = list(dict.fromkeys(str(ccs[g]) for g in missing.value))
    every = sorted(dict.fromkeys(str(c) for c in ccs), key=_cc)
    out = {
        f"{prefix}.unsupported_gpus": missing,
        f"{prefix}.unsupported_gpu_count": known(len(missing.value), missing.source),
        f"{prefix}.unsupported_ccs": known(distinct, missing.source),
        f"{prefix}.rebuild_arch": known(";".join(every), missing.source),
    }
    torch = _torch_index(facts)
    torch_gaps = facts.get(f"frameworks[{torch}].unsupported_gpus") if torch is not None else None
    source = f"derived:{prefix}.unsupported_gpus, frameworks[{torch}].unsupported_gpus"
    if torch_gaps is None:
        out[f"{prefix}.torch_covers"] = unknown("torch is not installed", source)
    elif not torch_gaps.known:
        out[f"{prefix}.torch_covers"] = unknown(torch_gaps.unknown or "unknown", source)
    else:
        out[f"{prefix}.torch_covers"] = known(not set(missing.value) & set(torch_gaps.value), source)
    return out


NVLINK_FIELDS = ("links_wired", "links_down_wired", "down_wired")


def _nvlink(facts: Facts, i: int) -> dict[str, Fact]:
    """GPU i's NVLink links as its model wires them. The catalogue is asked only when a link is inactive (a
    GPU with every reported link up, or none, has nothing to leave out), so a healthy host never loads it."""
    prefix = f"gpus[{i}].nvlink"
    get = Inputs(facts)
    links, up, down = get(f"{prefix}.links"), get(f"{prefix}.links_up"), get(f"{prefix}.down")
    wired: Optional[tuple[int, ...]] = None
    if get.why is None and down:
        name = facts.value(f"gpus[{i}].name")
        get.names.append(f"gpus[{i}].name")  # an unknown name leaves the model unknown, not the facts
        wired, get.why = _wired_links(name)
    result = get.result(lambda: (nvlink_wired(links, up, list(down), wired), None))
    if not result.known:
        return {f"{prefix}.{field}": result for field in NVLINK_FIELDS}
    return {
        f"{prefix}.{field}": known(value, result.source) for field, value in zip(NVLINK_FIELDS, result.value)
    }


def _wired_links(name: Any) -> tuple[Optional[tuple[int, ...]], Optional[str]]:
    """(the link numbers the GPU catalogue says the model named `name` wires, or None, None), or (None, why)
    when the catalogue cannot be read."""
    from .knowledge import KnowledgeError, wired_nvlinks  # lazy for speed, as in compiled_arch

    if not isinstance(name, str):
        return None, None
    try:
        return wired_nvlinks(name), None
    except KnowledgeError as e:
        return None, str(e).splitlines()[0][:120]


def toolkit_release(version: str) -> str:
    """A toolkit version as the major.minor the knowledge tables key on: "12.6.85" (nvcc) and "12.6.3"
    (version.json) -> "12.6". Within one minor release the driver reports the same CUDA version, so the
    GA's minimum (the lowest of its updates) is the one that decides whether minor-version compatibility
    is needed. ValueError for a version without a minor part."""
    parts = str(version).split(".")
    if len(parts) < 2 or not (parts[0].isdigit() and parts[1].isdigit()):
        raise ValueError(f"not a CUDA toolkit version: {version}")
    return f"{int(parts[0])}.{int(parts[1])}"


def driver_support(
    toolkit: str, driver: str, driver_cuda: Optional[str] = None
) -> tuple[Optional[str], Optional[str]]:
    """("full" | "minor_compat" | "none", None), or (None, why not), for what toolkit `toolkit` builds on
    `driver`. A release no newer than the CUDA the driver reports (`driver_cuda`, cuDriverGetVersion) runs
    in full: that is what the driver says it supports, and it needs no table. Any other case is
    compat.driver_verdict's answer; unknown when the cuda_drivers table does not know that release (a
    verdict then would be a guess)."""
    release = toolkit_release(toolkit)
    if driver_cuda is not None and _major_minor(release) <= _major_minor(driver_cuda):
        return "full", None
    from .compat import driver_verdict, meets_toolkit_minimum  # lazy: the tables cost a check 40 ms
    from .knowledge import KnowledgeError, knowledge

    try:
        kb = knowledge()
    except KnowledgeError as e:
        return None, str(e).splitlines()[0][:120]
    if meets_toolkit_minimum(release, driver, kb) is None:
        return None, f"CUDA {release} is not in the cuda_drivers table"
    verdict = driver_verdict(release, driver, kb)
    if not verdict.runs:
        return "none", None
    return ("minor_compat" if verdict.minor_compat else "full"), None


def _major_minor(version: str) -> tuple[int, int]:
    major, minor = toolkit_release(version).split(".")
    return int(major), int(minor)


def _toolkit_driver_support(facts: Facts) -> Fact:
    get = Inputs(facts)
    toolkit, driver = get("cuda.toolkit.version"), get("driver.version")
    reported = facts.get("driver.max_cuda")  # a shortcut when known, not an input the answer waits for
    driver_cuda = str(reported.value) if reported.known else None
    return get.result(lambda: driver_support(str(toolkit), str(driver), driver_cuda))


def newest_host_compiler(toolkit: str, kind: str) -> tuple[Optional[int], Optional[str]]:
    """(the newest major of `kind` that toolkit `toolkit`'s nvcc accepts, None), or (None, why not): the
    knowledge lookup newest_host_compiler, read through table_digest so that a check need not load every
    table for it."""
    if kind not in ("gcc", "clang"):
        return None, "only gcc and clang are judged"
    release = toolkit_release(toolkit)
    try:
        limits = host_compiler_limits()
    except TableError as e:
        return None, str(e)
    row = limits.get(release)
    if row is None:
        return None, f"CUDA {release} is not in the host_compilers table"
    if row.get(kind) is None:
        return None, f"the host_compilers table records no {kind} limit for CUDA {release}"
    return row[kind], None


def _newest_host_compiler(facts: Facts, i: int) -> Fact:
    """The newest major of cuda.host_compilers[i]'s kind that the toolkit's nvcc accepts."""
    get = Inputs(facts)
    kind = get(f"cuda.host_compilers[{i}].kind")
    toolkit = get("cuda.toolkit.version")
    return get.result(lambda: newest_host_compiler(str(toolkit), str(kind)))


def _cudnn_pinned(facts: Facts) -> Fact:
    """The installed torch's cuDNN pin (nvidia-cudnn-cu12==9.10.2.21) cut to the three parts
    torch.backends.cudnn.version() reports (9.10.2), so that the two compare."""
    get = Inputs(facts)
    count = get("frameworks.count")
    names = [facts.value(f"frameworks[{i}].name") for i in range(count if isinstance(count, int) else 0)]
    if "torch" not in names:
        return get.result(lambda: (None, "torch is not installed"))
    pin = get(f"frameworks[{names.index('torch')}].cudnn")
    return get.result(lambda: (".".join(str(pin).split(".")[:3]), None))


# The frameworks whose releases have a table of their own rows (jax.yaml has none: a row per CUDA plugin).
RELEASE_TABLES = ("torch", "tensorflow")


def newer_than_table(
    what: str, version: str, table: str, newest: Optional[str]
) -> tuple[bool, Optional[str]]:
    """(whether `version` of `what` (torch, tensorflow: major.minor; driver: the branch) is newer than
    `newest`, the newest row of `table`, None), or (False, why it cannot be told)."""
    if newest is None:
        return False, f"the {table} table has no rows"
    m = re.match(r"(\d+)(?:\.(\d+))?", str(version))
    if m is None or (what != "driver" and m.group(2) is None):
        return False, f"{what} version {version} cannot be compared with the {table} table"
    if what == "driver":
        return int(m.group(1)) > int(newest), None
    mine = (int(m.group(1)), int(m.group(2)))
    theirs = tuple(int(p) for p in newest.split(".")[:2])
    return mine > theirs, None


def _newest(table: str) -> tuple[Optional[str], Optional[str]]:
    try:
        return newest_row(table), None
    except TableError as e:
        return None, str(e)


def _newer_than_tables(facts: Facts) -> dict[str, Fact]:
    """knowledge.newer and .newer_count. Known when every version it needs is known, or when something is
    known to be newer (listed whatever else stays unknown); unknown, with the first reason, when nothing is
    known to be newer and a version is unknown: an unknown version is never taken for an old one. A host
    with no driver loaded has no driver to be newer; a table is read (its digest) only when asked about."""
    names: list[str] = []
    newer: list[str] = []
    why: Optional[str] = None
    if collected(facts, "frameworks.count"):
        count = facts.get("frameworks.count")
        names.append("frameworks.count")
        if not count.known:
            why = why or count.unknown or "unknown"
        for i in range(count.value if count.known and isinstance(count.value, int) else 0):
            name = facts.value(f"frameworks[{i}].name")
            if name not in RELEASE_TABLES:
                continue
            version = facts.get(f"frameworks[{i}].version")
            names.append(f"frameworks[{i}].version")
            if not version.known:
                why = why or version.unknown or "unknown"
                continue
            newest, failed = _newest(name)
            is_newer, failed = (
                (False, failed) if failed else newer_than_table(name, version.value, name, newest)
            )
            if failed:
                why = why or failed
            elif is_newer:
                newer.append(f"{name} {version.value} (the {name} table ends at {newest})")
    if collected(facts, "driver.version"):
        driver = facts.get("driver.version")
        names.append("driver.version")
        if driver.known:
            newest, failed = _newest("cuda_drivers")
            is_newer, failed = (
                (False, failed)
                if failed
                else newer_than_table("driver", driver.value, "cuda_drivers", newest)
            )
            if failed:
                why = why or failed
            elif is_newer:
                newer.append(f"driver {driver.value} (the driver table ends at R{newest})")
        elif facts.value("driver.loaded") is not False:  # no driver loaded: none to be newer
            why = why or driver.unknown or "unknown"
    source = "derived:" + ", ".join(names)
    if not newer and why is not None:
        return {"knowledge.newer": unknown(why, source), "knowledge.newer_count": unknown(why, source)}
    return {"knowledge.newer": known(newer, source), "knowledge.newer_count": known(len(newer), source)}


# --- Xid events (issue 11, part B "kernel-log") ---------------------------------------------------------

ACTION_TEXT = {
    "none": "no action is needed for this event alone",
    "restart_app": "restart the application that was running on it",
    "reset_gpu": "stop the processes on it and reset it (nvidia-smi -r -i {gpu}); reboot if the reset fails",
    "reboot": "reboot the node: a GPU that fell off the bus does not come back without one",
    "drain_inspect": (
        "drain the node and inspect the NVLink fabric (nvidia-smi nvlink -s, the fabric manager log)"
    ),
    "contact_support": "drain the node and report it (nvidia-bug-report.sh) to NVIDIA or the system vendor",
    "follow_other": "follow the action of the Xid it accompanies",
}


def xid_catalogue() -> dict[str, list]:
    """The Xid catalogue as {code: [mnemonic, bucket, category, action]}, through table_digest."""

    def compute(kb: Any) -> dict[str, list]:
        return {str(r.code): [r.mnemonic, r.bucket, r.category, r.action] for r in kb.xid_codes}

    return digest("xid", compute, "codes")


def _bus_ids(facts: Facts) -> dict[str, int]:
    from .probes.kernel_log import normalise_pci

    out: dict[str, int] = {}
    for i in range(facts.count("gpus")):
        bus = facts.value(f"gpus[{i}].bus_id")
        index = facts.value(f"gpus[{i}].index", i)
        pci = normalise_pci(bus) if isinstance(bus, str) else None
        if pci is not None:
            out[pci] = index
    return out


def _xid(facts: Facts) -> dict[str, Fact]:
    src = "derived:xid[].code,xid[].pci,gpus[].bus_id,rules/knowledge/xid.yaml"
    out: dict[str, Fact] = {}
    try:
        catalogue: Optional[dict[str, list]] = xid_catalogue()
        why = ""
    except TableError as e:
        catalogue, why = None, f"the Xid catalogue does not load: {e}"
    buses = _bus_ids(facts)
    for i in range(facts.count("xid")):
        code, pci = facts.value(f"xid[{i}].code"), facts.value(f"xid[{i}].pci")
        p = f"xid[{i}]."
        gpu = buses.get(pci) if isinstance(pci, str) else None
        if gpu is not None:
            out[p + "gpu"] = known(gpu, src)
            out[p + "where"] = known(f"GPU {gpu} (PCI {pci})", src)
        else:
            listed = "gpus.count" in facts and facts.get("gpus.count").known
            out[p + "gpu"] = unknown(
                f"no GPU NVML lists is at PCI {pci}" if listed else "the GPUs were not read", src
            )
            out[p + "where"] = known(
                f"the GPU at PCI {pci}" + (", which NVML does not list" if listed else ""), src
            )
        row = catalogue.get(str(code)) if catalogue is not None else None
        if catalogue is None:
            for field in ("catalogued", "mnemonic", "bucket", "category", "action", "action_text"):
                out[p + field] = unknown(why, src)
            continue
        out[p + "catalogued"] = known(row is not None, src)
        if row is None:
            reason = f"Xid {code} is not in gpudoctor's Xid catalogue (rules/knowledge/xid.yaml)"
            for field in ("mnemonic", "bucket", "category", "action", "action_text"):
                out[p + field] = unknown(reason, src)
            continue
        mnemonic, bucket, category, action = row
        out[p + "mnemonic"] = known(mnemonic, src)
        out[p + "bucket"] = known(bucket, src)
        out[p + "category"] = known(category, src)
        out[p + "action"] = known(action, src)
        text = ACTION_TEXT[action].replace("{gpu}", str(gpu) if gpu is not None else str(pci))
        out[p + "action_text"] = known(text, src)
    return out


# --- issue 11, part C "interconnect": environment variables judged against the GPUs and interfaces -------


def _consumers(facts: Facts) -> list[tuple[str, str, Optional[cuda_consumers.Needs]]]:
    """(name, version, what it needs or None: a release not judged) of each installed consumer."""
    out = []
    for i in range(facts.count("frameworks")):
        if facts.value(f"frameworks[{i}].distribution") == cuda_consumers.ONNXRUNTIME:
            version = str(facts.value(f"frameworks[{i}].version", ""))
            major = facts.value(f"frameworks[{i}].cuda_major")
            needs = cuda_consumers.onnxruntime_needs(version, major if isinstance(major, int) else None)
            out.append((cuda_consumers.ONNXRUNTIME, version, needs))
    ct2 = facts.get("python.ctranslate2")
    if ct2.known:
        speech = facts.get("python.faster_whisper").known
        out.append(
            (
                cuda_consumers.CTRANSLATE2,
                str(ct2.value),
                cuda_consumers.ctranslate2_needs(str(ct2.value), speech),
            )
        )
    return out


def _cuda_consumers(facts: Facts) -> dict[str, Fact]:
    """cuda_libs.consumers[]: each runtime that dlopens CUDA libraries, what it needs, and what of that the
    loader does not find (missing: nowhere; wheel_only: only in nvidia-* wheels)."""
    source = (
        "derived:frameworks[].version,python.ctranslate2,cuda_libs.loader_sonames,cuda_libs.wheel_sonames"
    )
    count = facts.get("frameworks.count")
    if not count.known:
        return {"cuda_libs.consumers.count": unknown(count.unknown or "", source)}
    loader, wheels = facts.get("cuda_libs.loader_sonames"), facts.get("cuda_libs.wheel_sonames")
    members = []
    for name, version, needs in _consumers(facts):
        member = {"name": known(name, source), "version": known(version, source)}
        if needs is None:
            why = unknown(f"{name} {version}: which CUDA libraries it loads is not known", source)
            member.update(dict.fromkeys(("cuda_major", "needs", "missing", "missing_count"), why))
            member.update(dict.fromkeys(("wheel_only", "wheel_only_count"), why))
            members.append(member)
            continue
        member["cuda_major"] = known(needs.cuda_major, source)
        member["needs"] = known(list(needs.sonames), source)
        if not loader.known:
            why = unknown(loader.unknown or "", source)
            member.update(dict.fromkeys(("missing", "missing_count", "wheel_only", "wheel_only_count"), why))
        else:
            in_wheels = wheels.value if wheels.known else []
            missing, wheel_only = cuda_consumers.split(needs.sonames, loader.value, in_wheels)
            if not wheels.known and any(s not in loader.value for s in needs.sonames):
                why = unknown(wheels.unknown or "", source)  # the wheels may hold what the loader lacks
                member.update(
                    dict.fromkeys(("missing", "missing_count", "wheel_only", "wheel_only_count"), why)
                )
            else:
                member["missing"] = known(missing, source)
                member["missing_count"] = known(len(missing), source)
                member["wheel_only"] = known(wheel_only, source)
                member["wheel_only_count"] = known(len(wheel_only), source)
        members.append(member)
    return list_facts("cuda_libs.consumers", members, source)
