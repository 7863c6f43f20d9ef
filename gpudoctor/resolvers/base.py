"""What every resolver shares: the Resolution it answers with, the host facts it reads, the installed
framework, and the skeleton a framework resolver starts from (begin: the arguments, the host, what is
installed and its knowledge row; kept_first: the installed release before the newest).

Resolvers are pure functions: they read nothing but their arguments and run nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Optional, Union

from ..compat import version_tuple as _vt
from ..knowledge import Knowledge, gpu_by_name

if TYPE_CHECKING:
    from ..facts import Facts

# uname machine names -> the names wheel platform tags use
MACHINES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}

# A version that may be placed into a pin as is: 2.5.1, 0.7.2, 2.6.0rc1, 2.4.0.post1.
EXACT_VERSION = re.compile(r"^\d+(\.\d+){1,3}((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?$")


@dataclass(frozen=True)
class DriverNeed:
    """A driver that supports `cuda`: at least `minimum`, from branch `branch`."""

    cuda: str
    minimum: str
    branch: Optional[int]
    designation: str = ""  # LTSB | PB | NFB
    eol: str = ""  # YYYY-MM
    minor_compat: bool = False  # `minimum` is the major's minor-version floor, not the toolkit's own


@dataclass(frozen=True)
class Resolution:
    """A resolver's answer. `ok` with `packages` empty means nothing needs installing."""

    resolver: str
    subject: str  # what it resolves: torch, tensorflow, jax, the NVIDIA driver, the image's CUDA base
    ok: bool
    packages: tuple[str, ...] = ()  # requirement strings, pinned: "torch==2.5.1+cu124"
    index_url: Optional[str] = None  # the index that replaces PyPI for them (--index-url)
    uninstall: tuple[str, ...] = ()  # distributions to remove first (tensorflow-cpu)
    minor_compat: bool = False  # the answer runs only through CUDA minor-version compatibility
    reasons: tuple[str, ...] = ()  # why this answer, or why there is none
    notes: tuple[str, ...] = ()  # what the answer leaves out or assumes
    needs_cuda: Optional[str] = None  # a driver supporting this CUDA would run (or keep) the framework
    driver: Optional[DriverNeed] = None  # the driver resolver's answer
    base_cuda: Optional[str] = None  # the CUDA release of an nvidia/cuda base image to rebuild on ("13.0.2")


@dataclass(frozen=True)
class ResolverSpec:
    name: str
    func: Callable[..., Resolution]
    args: Mapping[str, tuple[str, ...]]  # accepted args -> accepted values (() = any non-empty string)
    doc: str


def _ccs_text(ccs: tuple[str, ...]) -> str:
    return ", ".join(ccs) if ccs else "none"


def _fail(resolver: str, subject: str, why: str, **more: Any) -> Resolution:
    return Resolution(resolver, subject, False, reasons=(why,), **more)


@dataclass(frozen=True)
class Host:
    """The facts every framework resolver needs, read once."""

    driver: str
    python: str  # major.minor
    gpus: tuple[tuple[str, str], ...]  # (compute capability, GPU name), one per distinct capability
    machine: Optional[str] = None  # the interpreter's CPU architecture (x86_64, aarch64); None: unknown
    glibc: Optional[str] = None  # the interpreter's glibc (major.minor); None: unknown


def read_host(facts: Facts, kb: Knowledge, need_python: bool = True) -> tuple[Optional[Host], str]:
    """The driver version, Python major.minor and GPU compute capabilities; or why they are unknown.

    A GPU whose compute capability is unknown takes its catalogue entry's (gpus.yaml, by NVML name)."""
    driver = facts.get("driver.version")
    if not driver.known or not _vt(driver.value):
        return None, f"the driver version is unknown ({driver.unknown or driver.value})"
    python = facts.get("python.version")
    py = ""
    if need_python:
        if not python.known or len(_vt(python.value)) < 2:
            return None, f"the Python version is unknown ({python.unknown or python.value})"
        py = ".".join(str(p) for p in _vt(python.value)[:2])
    count = facts.get("gpus.count")
    if not count.known:
        return None, f"the GPUs are unknown ({count.unknown})"
    gpus: dict[str, str] = {}
    for i in range(count.value if isinstance(count.value, int) else 0):
        cc, name = facts.get(f"gpus[{i}].compute_capability"), facts.value(f"gpus[{i}].name")
        value = str(cc.value) if cc.known else None
        if value is None and isinstance(name, str):
            model = gpu_by_name(name, kb)
            value = model.compute_capability if model else None
        if value is None or len(_vt(value)) < 2:
            return None, f"the compute capability of GPU {i} is unknown ({cc.unknown or cc.value})"
        gpus.setdefault(value, name if isinstance(name, str) else f"GPU {i}")
    ordered = tuple(sorted(gpus.items(), key=lambda kv: _vt(kv[0])))
    machine = facts.value("python.machine") or facts.value("system.machine")
    glibc = facts.value("system.glibc")
    return Host(
        driver=str(driver.value),
        python=py,
        gpus=ordered,
        machine=MACHINES.get(str(machine)) if machine else None,
        glibc=".".join(str(p) for p in _vt(glibc)[:2]) if glibc and len(_vt(glibc)) >= 2 else None,
    ), ""


@dataclass(frozen=True)
class Installed:
    """One installed framework, as the facts describe it."""

    item: Optional[int]
    name: str
    version: Optional[str]
    build: Optional[str]
    cuda: Optional[str]
    distribution: Optional[str]


def _known_row(have: Optional[Installed], lookup: Any, kb: Knowledge) -> Any:
    """The knowledge row of the installed release (to keep its major.minor), or None when the table
    does not know it."""
    if have is None or not have.version:
        return None
    try:
        return lookup(have.version, kb)
    except LookupError:
        return None


def installed(facts: Facts, name: str, item: Optional[int]) -> Optional[Installed]:
    """The framework at `item` when it is `name`; else the first framework called `name`; else None."""
    indexes = [item] if item is not None else list(range(facts.count("frameworks")))
    for i in indexes:
        if facts.value(f"frameworks[{i}].name") == name:
            return Installed(
                item=i,
                name=name,
                version=facts.value(f"frameworks[{i}].version"),
                build=facts.value(f"frameworks[{i}].build"),
                cuda=facts.value(f"frameworks[{i}].cuda"),
                distribution=facts.value(f"frameworks[{i}].distribution"),
            )
    return None


def _python_ok(py: str, low: str, high: str) -> bool:
    return _vt(low) <= _vt(py) <= _vt(high)


# --- the skeleton of a framework resolver ---------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    """What a framework resolver starts from: the host, the installed framework and its table row."""

    host: Host
    have: Optional[Installed]
    keep: Any  # the installed release's knowledge row, or None
    avoid: bool  # args minor_compat=avoid: refuse answers that run only through minor-version compatibility
    downgrade: bool = True  # args downgrade=no: never answer with a release older than the installed one


def begin(
    name: str,
    what: str,
    facts: Facts,
    kb: Knowledge,
    item: Optional[int],
    args: Optional[Mapping[str, str]],
    lookup: Optional[Callable[..., Any]] = None,
    need_python: bool = True,
) -> Union[Request, Resolution]:
    """The Request of resolver `name`, or the failed Resolution when the host facts are unknown ("cannot
    choose <what>: <why>"). `lookup` finds the installed release's row in the knowledge tables."""
    host, why = read_host(facts, kb, need_python=need_python)
    if host is None:
        return _fail(name, name, f"cannot choose {what}: {why}")
    have = installed(facts, name, item)
    keep = _known_row(have, lookup, kb) if lookup is not None else None
    args = args or {}
    return Request(host, have, keep, args.get("minor_compat") == "avoid", args.get("downgrade") != "no")


def kept_first(rows: list[Any], keep: Any) -> list[Any]:
    """The installed release's row (when among `rows`) first, then the others in their order."""
    return ([keep] if keep is not None and any(r is keep for r in rows) else []) + [
        r for r in rows if r is not keep
    ]


def beyond_tables(name: str, have: Optional[Installed], versions: list[str]) -> Optional[str]:
    """Why `name` cannot be planned when the installed release is newer than every release the table lists
    (versions: the table's major.minor releases): the table cannot speak for it, and anything it could
    answer would be a downgrade. None when the installed version is unknown or within the table."""
    if have is None or not have.version or not versions or len(_vt(have.version)) < 2:
        return None
    newest = max(versions, key=_vt)
    if _vt(have.version)[:2] <= _vt(newest)[:2]:
        return None
    return (
        f"{name} {have.version} is newer than gpudoctor's {name} table, which ends at {newest}: gpudoctor is "
        f"older than your {name}, so it plans no other {name} (upgrade gpudoctor for newer tables)"
    )


def release_order(
    rows: list[Any], keep: Any, have: Optional[Installed], downgrade: bool
) -> tuple[list[Any], list[str]]:
    """The releases to try: the installed one first, then the others newest first; without `downgrade`
    (a warning's fix) none older than the installed version. And the versions left out for that."""
    ordered = kept_first(sorted(rows, key=lambda r: _vt(r.version), reverse=True), keep)
    if downgrade or have is None or not have.version or len(_vt(have.version)) < 2:
        return ordered, []
    floor = _vt(have.version)[:2]
    older = [r.version for r in ordered if r is not keep and _vt(r.version)[:2] < floor]
    return [r for r in ordered if r is keep or _vt(r.version)[:2] >= floor], older


def not_downgraded(name: str, older: list[str]) -> list[str]:
    """The reason line for the releases release_order left out, if any."""
    if not older:
        return []
    return [
        f"older releases ({', '.join(older)}) are not considered: a warning's fix never downgrades {name}"
    ]
