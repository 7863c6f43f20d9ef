"""Resolvers: what to install, computed from the facts and the knowledge tables (docs/plans.md).

A rule's fix step may name a resolver instead of giving a literal command (`resolver: torch`). The planner
calls it with the check's Facts, the Knowledge tables, the finding's list item and the step's `args`, and
gets a Resolution: the pinned requirements, the wheel index, whether the answer relies on CUDA minor-version
compatibility and why; or, when nothing this host can run exists, `ok=False` and the reason. Resolvers are
pure functions: they read nothing but their arguments and run nothing.

The rule loader validates resolver names against the engine's own table (engine/resolver_names.py); the
registry here (RESOLVERS) implements each of those names.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Optional

from . import knowledge as kn
from .engine.resolver_names import RESOLVER_ARGS

if TYPE_CHECKING:
    from .facts import Facts
    from .knowledge import Knowledge, TorchRelease, TorchVariant

# A version that may be placed into a pin as is: 2.5.1, 0.7.2, 2.6.0rc1, 2.4.0.post1.
EXACT_VERSION = re.compile(r"^\d+(\.\d+){1,3}((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?$")
TORCH_COMPANIONS = ("torchvision", "torchaudio")


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
    subject: str  # what it resolves: torch, tensorflow, jax, the NVIDIA driver
    ok: bool
    packages: tuple[str, ...] = ()  # requirement strings, pinned: "torch==2.5.1+cu124"
    index_url: Optional[str] = None  # the index that replaces PyPI for them (--index-url)
    uninstall: tuple[str, ...] = ()  # distributions to remove first (tensorflow-cpu)
    minor_compat: bool = False  # the answer runs only through CUDA minor-version compatibility
    reasons: tuple[str, ...] = ()  # why this answer, or why there is none
    notes: tuple[str, ...] = ()  # what the answer leaves out or assumes
    needs_cuda: Optional[str] = None  # a driver supporting this CUDA would run (or keep) the framework
    driver: Optional[DriverNeed] = None  # the driver resolver's answer


@dataclass(frozen=True)
class ResolverSpec:
    name: str
    func: Callable[..., Resolution]
    args: Mapping[str, tuple[str, ...]]  # accepted args -> accepted values (() = any non-empty string)
    doc: str


# --- small helpers --------------------------------------------------------------------------------------


def _vt(version: str) -> tuple[int, ...]:
    """'535.183.01' -> (535, 183, 1); the numeric release part only."""
    parts = []
    for piece in str(version).split("."):
        digits = re.match(r"\d+", piece)
        if not digits:
            break
        parts.append(int(digits.group()))
    return tuple(parts)


def _sm(cc: str) -> str:
    major, minor = _vt(cc)[:2]
    return f"sm_{major}{minor}"


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
            model = kn.gpu_by_name(name, kb)
            value = model.compute_capability if model else None
        if value is None or len(_vt(value)) < 2:
            return None, f"the compute capability of GPU {i} is unknown ({cc.unknown or cc.value})"
        gpus.setdefault(value, name if isinstance(name, str) else f"GPU {i}")
    ordered = tuple(sorted(gpus.items(), key=lambda kv: _vt(kv[0])))
    return Host(driver=str(driver.value), python=py, gpus=ordered), ""


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


# --- the CUDA policy ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DriverVerdict:
    runs: bool
    minor_compat: bool
    reason: str


def driver_verdict(cuda: str, driver: str, kb: Knowledge, avoid_minor_compat: bool = False) -> DriverVerdict:
    """Can `driver` run an application built with CUDA `cuda` ("12.4")?

    Yes without conditions at or above the toolkit's own minimum driver (cuda_drivers.yaml rows); yes through
    minor-version compatibility at or above the major's floor (minor_compat); otherwise no."""
    major = _vt(cuda)[0]
    try:
        floor = kn.minor_compat_floor(major, kb)
        full = kn.min_driver_for_cuda(cuda, kb)
    except LookupError as e:
        return DriverVerdict(False, False, f"CUDA {cuda}: {e}")
    if _vt(driver) >= _vt(full):
        return DriverVerdict(True, False, f"driver {driver} meets CUDA {cuda}'s minimum {full}")
    if _vt(driver) < _vt(floor):
        return DriverVerdict(
            False, False, f"CUDA {major}.x needs driver {floor} or newer; driver {driver} is older"
        )
    if avoid_minor_compat:
        return DriverVerdict(
            False,
            True,
            f"CUDA {cuda} needs driver {full} to run without minor-version compatibility; "
            f"driver {driver} is older",
        )
    return DriverVerdict(
        True,
        True,
        f"driver {driver} is below CUDA {cuda}'s minimum {full} but meets the CUDA {major}.x floor {floor}: "
        "it runs through minor-version compatibility (kernels built into the wheel run; PTX from the newer "
        "toolkit cannot be JIT-compiled by this driver: Triton and torch.compile kernels, for one)",
    )


def assumed_arch(cuda: str, kb: Knowledge) -> tuple[str, ...]:
    """For a wheel whose arch list the table lacks: the compute capabilities every cuDNN build the cuDNN
    table lists for CUDA `cuda` supports (empty when it lists none). Conservative: never newer than the
    toolkit can target, and it may leave out an older GPU the wheel does support."""
    rows = [r for r in kb.cudnn_support if _vt(r.cuda_min) <= _vt(cuda)[:2] <= _vt(r.cuda_max)]
    if not rows:
        return ()
    common = set(rows[0].ccs)
    for row in rows[1:]:
        common &= set(row.ccs)
    return tuple(sorted(common, key=_vt))


def covers(cc: str, native: tuple[str, ...]) -> bool:
    """NVIDIA's binary compatibility: code for X.y runs on a GPU of capability X.z when z >= y."""
    major, minor = _vt(cc)[:2]
    return any(_vt(a)[0] == major and _vt(a)[1] <= minor for a in native)


def gpu_verdict(
    variant: TorchVariant, host: Host, kb: Knowledge, full_driver: bool
) -> tuple[bool, list[str]]:
    """Does the wheel carry kernels every GPU can run? (ok, reasons or the reason why not)

    Native code (SASS) counts by binary compatibility. Embedded PTX counts for a GPU newer than the PTX's
    compute capability only when the driver meets the variant's full CUDA minimum: under minor-version
    compatibility the driver cannot JIT-compile PTX from the newer toolkit."""
    native, ptx, source = variant.compiled_ccs, variant.ptx_cc, "built for"
    if not variant.arch:
        native, ptx = assumed_arch(variant.cuda, kb), None
        source = (
            f"no arch list in the torch table; assumed from the cuDNN support matrix for CUDA {variant.cuda}:"
        )
        if not native:
            return False, [
                f"the torch table has no arch list for it and the cuDNN table no row for CUDA {variant.cuda}"
            ]
    reasons = []
    for cc, name in host.gpus:
        if covers(cc, native):
            reasons.append(f"{_sm(cc)} ({name}): native kernels ({source} {_ccs_text(native)})")
        elif ptx is not None and _vt(cc)[:2] > _vt(ptx)[:2] and full_driver:
            reasons.append(
                f"{_sm(cc)} ({name}): runs the embedded compute_{_sm(ptx)[3:]} PTX, JIT-compiled on "
                f"first use (built for {_ccs_text(variant.arch)})"
            )
        elif ptx is not None and _vt(cc)[:2] > _vt(ptx)[:2]:
            return False, [
                f"no native kernels for {_sm(cc)} ({name}), and its compute_{_sm(ptx)[3:]} PTX needs "
                f"the full CUDA {variant.cuda} driver to JIT-compile"
            ]
        else:
            return False, [f"no kernels for {_sm(cc)} ({name}) ({source} {_ccs_text(native)})"]
    return True, reasons


# --- torch ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Choice:
    release: TorchRelease
    variant: TorchVariant
    minor_compat: bool
    reasons: tuple[str, ...]


def _torch_choice(
    release: TorchRelease, host: Host, kb: Knowledge, avoid: bool, rejected: list[tuple[str, str]]
) -> Optional[Choice]:
    """The highest-CUDA variant of `release` this host runs; each variant passed over goes to `rejected`."""
    for variant in sorted(release.variants, key=lambda v: _vt(v.cuda), reverse=True):
        label = f"torch {release.version} {variant.name}"
        dv = driver_verdict(variant.cuda, host.driver, kb, avoid)
        if not dv.runs:
            rejected.append((release.version, f"{label}: {dv.reason}"))
            continue
        ok, gpu_reasons = gpu_verdict(variant, host, kb, full_driver=not dv.minor_compat)
        if not ok:
            rejected.append((release.version, f"{label}: {gpu_reasons[0]}"))
            continue
        extra = (
            [f"{variant.name} is marked experimental in torch {release.version}"]
            if variant.experimental
            else []
        )
        return Choice(release, variant, dv.minor_compat, (dv.reason, *gpu_reasons, *extra))
    return None


def _torch_order(kb: Knowledge, keep: Optional[TorchRelease]) -> list[TorchRelease]:
    newest_first = sorted(kb.torch_releases, key=lambda r: _vt(r.version), reverse=True)
    return ([keep] if keep else []) + [r for r in newest_first if r is not keep]


def _torch_pins(choice: Choice, exact: Optional[str], notes: list[str]) -> tuple[str, ...]:
    """torch and its companions. The installed version is kept exactly, with the variant's local tag (a
    plain ==2.5.1 is satisfied by the installed 2.5.1+cpu, so pip would change nothing); another release
    is pinned to its series (==2.11.*), since the table has no patch versions. A companion's patch follows
    torch's (torch 2.5.1: torchvision 0.20.1)."""
    release, tag = choice.release, choice.variant.name
    patch = exact.split(".")[2] if exact and re.fullmatch(r"\d+\.\d+\.\d+", exact) else None
    pins = [f"torch=={exact}+{tag}" if patch is not None else f"torch=={release.version}.*"]
    for name in TORCH_COMPANIONS:
        series = getattr(release, name)
        if series is None:
            notes.append(
                f"{name} left out: the torch table has no {name} version for torch {release.version}"
            )
            continue
        pins.append(f"{name}=={series}.{patch}+{tag}" if patch is not None else f"{name}=={series}.*")
    return tuple(pins)


def torch_wheel(
    facts: Facts, kb: Knowledge, item: Optional[int] = None, args: Optional[Mapping[str, str]] = None
) -> Resolution:
    """The newest torch wheel this host runs: the driver meets its CUDA's minor-version floor, it has
    kernels for every GPU, the interpreter's Python is in the release's range; the installed major.minor
    first, then newer releases first; within a release the highest CUDA. args: minor_compat=avoid refuses
    variants that would run only through minor-version compatibility."""
    avoid = (args or {}).get("minor_compat") == "avoid"
    host, why = read_host(facts, kb)
    if host is None:
        return _fail("torch", "torch", f"cannot choose a torch wheel: {why}")
    have = installed(facts, "torch", item)
    keep = _known_row(have, kn.torch_release, kb)
    rejected: list[tuple[str, str]] = []  # (release, why one of its variants or itself was passed over)
    chosen: Optional[Choice] = None
    for release in _torch_order(kb, keep):
        if not _python_ok(host.python, release.python_min, release.python_max):
            why = f"Python {host.python} is outside its {release.python_min}-{release.python_max}"
            rejected.append((release.version, f"torch {release.version}: {why}"))
            continue
        chosen = _torch_choice(release, host, kb, avoid, rejected)
        if chosen is not None:
            break
    needs = _torch_needs(have, keep, kb, host)
    if chosen is None:
        shown = _passed_over(rejected, keep.version if keep else None, None)
        return Resolution(
            "torch",
            "torch",
            False,
            reasons=(
                f"no torch wheel in the table runs on driver {host.driver} with these GPUs and "
                f"Python {host.python}",
                *shown,
            ),
            needs_cuda=needs,
        )
    notes: list[str] = []
    exact = have.version if have and keep is chosen.release and have.version else None
    exact = exact if exact and EXACT_VERSION.match(exact) else None
    if (
        have is not None
        and have.build == "cuda"
        and keep is chosen.release
        and have.cuda
        and f"cu{have.cuda.replace('.', '')}" == chosen.variant.name
    ):
        return Resolution(
            "torch",
            "torch",
            True,
            minor_compat=chosen.minor_compat,
            reasons=(
                f"the installed torch {have.version} ({chosen.variant.name}) is already the best "
                "wheel this host runs",
                *chosen.reasons,
            ),
        )
    pins = _torch_pins(chosen, exact, notes)
    head = _torch_head(have, keep, chosen)
    above = _passed_over(rejected, keep.version if keep else None, chosen.release.version)
    if keep is not None and keep is not chosen.release and needs:
        notes.append(f"a driver that supports CUDA {needs} would keep torch {keep.version}")
    return Resolution(
        "torch",
        "torch",
        True,
        packages=pins,
        index_url=kn.torch_index_url(chosen.variant.name, kb),
        minor_compat=chosen.minor_compat,
        reasons=(
            head,
            *above,
            *chosen.reasons,
            f"Python {host.python} is within torch {chosen.release.version}'s "
            f"{chosen.release.python_min}-{chosen.release.python_max}",
        ),
        notes=tuple(notes),
    )


def _passed_over(rejected: list[tuple[str, str]], keep: Optional[str], chosen: Optional[str]) -> list[str]:
    """Why the installed release and the chosen one's better variants were passed over, in full; other
    releases tried before the chosen one (or all of them, when none was chosen) in one line."""
    full = [text for version, text in rejected if version in (keep, chosen)]
    others = list(dict.fromkeys(version for version, _ in rejected if version not in (keep, chosen)))
    if others:
        full.append(f"no wheel of torch {', '.join(others)} runs on this host")
    return full


def _torch_head(have: Optional[Installed], keep: Optional[TorchRelease], chosen: Choice) -> str:
    rel, var = chosen.release.version, chosen.variant.name
    if have is None:
        return f"torch is not installed: torch {rel} is the newest release this host runs ({var})"
    build = {
        "cpu": "a CPU-only build",
        "cuda": f"a CUDA {have.cuda} build" if have.cuda else "a CUDA build",
    }.get(str(have.build), f"a {have.build} build")
    if keep is chosen.release:
        return f"keeps torch {rel} (installed {have.version}, {build}); {var}: its best variant for this host"
    if keep is None:
        return (
            f"torch {have.version} is not in the torch table; torch {rel} ({var}): the newest this host runs"
        )
    return f"torch {keep.version} has no wheel this host runs; torch {rel} ({var}) is the newest that does"


def _torch_needs(
    have: Optional[Installed], keep: Optional[TorchRelease], kb: Knowledge, host: Host
) -> Optional[str]:
    """The CUDA a driver upgrade should support to run the installed release: the installed build's own,
    else the highest variant of the release, of those with kernels for every GPU; None when none has."""
    if keep is None:
        return None
    fits = [v for v in keep.variants if gpu_verdict(v, host, kb, full_driver=True)[0]]
    own = [v for v in fits if have is not None and have.build == "cuda" and v.cuda == have.cuda]
    best = own or sorted(fits, key=lambda v: _vt(v.cuda), reverse=True)
    return best[0].cuda if best else None


# --- TensorFlow -----------------------------------------------------------------------------------------


def tensorflow_build(
    facts: Facts, kb: Knowledge, item: Optional[int] = None, args: Optional[Mapping[str, str]] = None
) -> Resolution:
    """A TensorFlow release with a tested CUDA 12 build (installed with the `and-cuda` extra, which brings
    the CUDA libraries as nvidia-*-cu12 wheels) that the driver runs, for the interpreter's Python; the
    installed major.minor first, then the newest."""
    avoid = (args or {}).get("minor_compat") == "avoid"
    host, why = read_host(facts, kb)
    if host is None:
        return _fail("tensorflow", "tensorflow", f"cannot choose a TensorFlow build: {why}")
    have = installed(facts, "tensorflow", item)
    keep = _known_row(have, kn.tensorflow_build, kb)
    rows = sorted(
        (r for r in kb.tensorflow_builds if _vt(r.cuda)[0] >= 12), key=lambda r: _vt(r.version), reverse=True
    )
    order = ([keep] if keep in rows else []) + [r for r in rows if r is not keep]
    rejected: list[str] = []
    for row in order:
        label = f"tensorflow {row.version} (CUDA {row.cuda})"
        if not _python_ok(host.python, row.python_min, row.python_max):
            rejected.append(f"{label}: Python {host.python} is outside its {row.python_min}-{row.python_max}")
            continue
        dv = driver_verdict(row.cuda, host.driver, kb, avoid)
        if not dv.runs:
            rejected.append(f"{label}: {dv.reason}")
            continue
        exact = (
            have.version
            if have and row is keep and have.version and EXACT_VERSION.match(have.version)
            else None
        )
        pin = f"tensorflow[and-cuda]=={exact}" if exact else f"tensorflow[and-cuda]=={row.version}.*"
        uninstall = ()
        if have is not None and have.distribution and have.distribution != "tensorflow":
            uninstall = (have.distribution,)
        head = (
            f"keeps tensorflow {row.version} (installed {have.version})"
            if row is keep
            else f"tensorflow {row.version} is the newest tested CUDA 12 build this host runs"
        )
        return Resolution(
            "tensorflow",
            "tensorflow",
            True,
            packages=(pin,),
            uninstall=uninstall,
            minor_compat=dv.minor_compat,
            reasons=(
                head,
                *rejected,
                f"tested with CUDA {row.cuda} and cuDNN {row.cudnn}",
                dv.reason,
                f"Python {host.python} is within {row.python_min}-{row.python_max}",
            ),
            notes=(
                "the tensorflow table lists no compute capabilities: GPU kernels were not checked",
                *(
                    (f"{have.distribution} is removed first: it installs the same tensorflow module",)
                    if uninstall
                    else ()
                ),
            ),
        )
    return Resolution(
        "tensorflow",
        "tensorflow",
        False,
        reasons=(
            f"no tested CUDA 12 TensorFlow build runs on driver {host.driver} with Python {host.python}",
            *rejected[:6],
        ),
        needs_cuda=keep.cuda if keep is not None else None,
    )


# --- JAX ------------------------------------------------------------------------------------------------


def _newest_toolkit(major: int, kb: Knowledge) -> Optional[Any]:
    rows = [t for t in kb.cuda_toolkits if _vt(t.cuda)[0] == major and t.update == 0]
    return max(rows, key=lambda t: _vt(t.cuda)) if rows else None


def jax_plugin(
    facts: Facts, kb: Knowledge, item: Optional[int] = None, args: Optional[Mapping[str, str]] = None
) -> Resolution:
    """The JAX CUDA plugin extra (jax[cuda13], jax[cuda12]) for the highest CUDA major whose driver floor
    the driver meets and whose oldest supported GPU every GPU is at or above; the installed jax version.
    A plugin of another CUDA major that is installed is removed first (both would load)."""
    avoid = (args or {}).get("minor_compat") == "avoid"
    host, why = read_host(facts, kb, need_python=False)
    if host is None:
        return _fail("jax", "jax", f"cannot choose a JAX CUDA plugin: {why}")
    have = installed(facts, "jax", item)
    have_major = _vt(have.cuda)[0] if have and have.build == "cuda" and have.cuda and _vt(have.cuda) else None
    rejected: list[str] = []
    fitting: list[int] = []  # CUDA majors whose plugin supports every GPU
    for plugin in sorted(kb.jax_plugins, key=lambda p: p.cuda_major, reverse=True):
        label = f"jax[{plugin.extra}]"
        old = [(cc, name) for cc, name in host.gpus if _vt(cc) < _vt(plugin.min_cc)]
        if old:
            cc, name = old[0]
            rejected.append(f"{label}: supports GPUs from {_sm(plugin.min_cc)}; {name} is {_sm(cc)}")
            continue
        fitting.append(plugin.cuda_major)
        if _vt(host.driver) < _vt(plugin.min_driver):
            rejected.append(
                f"{label}: needs driver {plugin.min_driver} or newer; driver {host.driver} is older"
            )
            continue
        newest = _newest_toolkit(plugin.cuda_major, kb)
        minor = newest is not None and _vt(host.driver) < _vt(newest.driver)
        if minor and avoid:
            rejected.append(
                f"{label}: its CUDA {plugin.cuda_major}.x wheels (up to {newest.cuda}) need driver "
                f"{newest.driver} to run without minor-version compatibility"
            )
            continue
        if have_major == plugin.cuda_major and have is not None and have.build == "cuda":
            return Resolution(
                "jax",
                "jax",
                True,
                minor_compat=minor,
                reasons=(f"the installed jax[{plugin.extra}] is already the best plugin this host runs",),
            )
        version = have.version if have and have.version and EXACT_VERSION.match(have.version) else None
        pin = f"jax[{plugin.extra}]=={version}" if version else f"jax[{plugin.extra}]"
        drv = f"driver {host.driver} meets jax[{plugin.extra}]'s floor {plugin.min_driver}"
        if minor:
            drv += (
                f"; below CUDA {newest.cuda}'s {newest.driver}, the newest CUDA {plugin.cuda_major}.x wheels "
                "run through minor-version compatibility"
            )
        stale = (f"jax-cuda{have_major}-plugin", f"jax-cuda{have_major}-pjrt") if have_major else ()
        notes = [
            f"the plugin's version follows jax's: jax-cuda{plugin.cuda_major}-plugin=={version} must exist"
        ]
        return Resolution(
            "jax",
            "jax",
            True,
            packages=(pin,),
            uninstall=stale,
            minor_compat=minor,
            reasons=(
                f"jax[{plugin.extra}] is the highest CUDA plugin this host runs",
                *rejected,
                drv,
                f"every GPU is {_sm(plugin.min_cc)} or newer",
            ),
            notes=tuple(notes[:1] if version else ()),
        )
    target = have_major if have_major in fitting else (fitting[0] if fitting else None)
    newest = _newest_toolkit(target, kb) if target is not None else None
    return Resolution(
        "jax",
        "jax",
        False,
        reasons=(f"no JAX CUDA plugin runs on driver {host.driver} with these GPUs", *rejected),
        needs_cuda=newest.cuda if newest is not None else None,
    )


# --- any framework --------------------------------------------------------------------------------------

FRAMEWORK_RESOLVERS: Mapping[str, Callable[..., Resolution]] = {
    "torch": torch_wheel,
    "tensorflow": tensorflow_build,
    "jax": jax_plugin,
}


def framework_build(
    facts: Facts, kb: Knowledge, item: Optional[int] = None, args: Optional[Mapping[str, str]] = None
) -> Resolution:
    """The framework at `item` (frameworks[i].name) resolved by its own resolver: torch, tensorflow, jax."""
    name = facts.value(f"frameworks[{item}].name") if item is not None else None
    func = FRAMEWORK_RESOLVERS.get(name) if isinstance(name, str) else None
    if func is None:
        shown = name if isinstance(name, str) else "this framework"
        return _fail(
            "framework", shown, f"no resolver knows {shown}'s builds (only {', '.join(FRAMEWORK_RESOLVERS)})"
        )
    return func(facts, kb, item, args)


# --- the driver -----------------------------------------------------------------------------------------


def driver_for_cuda(cuda: str, kb: Knowledge) -> tuple[Optional[DriverNeed], str]:
    """The minimum driver and the branch to install for CUDA `cuda` ("13.0", "12.6.3"; a bare major such as
    "13" takes that major's minor-version floor). The branch: the first long-term support branch (LTSB)
    from the minimum's branch on that supports the CUDA major, else the first branch that does."""
    parts = _vt(cuda)
    if not parts:
        return None, f"not a CUDA version: {cuda!r}"
    try:
        if len(parts) == 1:
            minimum, minor = kn.minor_compat_floor(parts[0], kb), True
        else:
            minimum, minor = kn.min_driver_for_cuda(cuda, kb), False
    except LookupError as e:
        return None, str(e)
    first = _vt(minimum)[0]
    branches = sorted(
        (
            b
            for b in kb.driver_branches
            if b.branch >= first and (b.max_cuda_major is None or b.max_cuda_major >= parts[0])
        ),
        key=lambda b: b.branch,
    )
    pick = next((b for b in branches if b.designation == "LTSB"), branches[0] if branches else None)
    return DriverNeed(
        cuda=cuda,
        minimum=minimum,
        branch=pick.branch if pick else None,
        designation=pick.designation if pick else "",
        eol=pick.eol if pick else "",
        minor_compat=minor,
    ), ""


def driver_branch(
    facts: Facts, kb: Knowledge, item: Optional[int] = None, args: Optional[Mapping[str, str]] = None
) -> Resolution:
    """The driver a wanted CUDA needs: args cuda="13.0", else the CUDA of the framework at `item`."""
    cuda = (args or {}).get("cuda") or (facts.value(f"frameworks[{item}].cuda") if item is not None else None)
    if not cuda:
        return _fail("driver", "the NVIDIA driver", "no CUDA version to find a driver for")
    need, why = driver_for_cuda(str(cuda), kb)
    if need is None:
        return _fail("driver", "the NVIDIA driver", f"cannot find a driver for CUDA {cuda}: {why}")
    current = facts.value("driver.version")
    if isinstance(current, str) and _vt(current) and _vt(current) >= _vt(need.minimum):
        return Resolution(
            "driver",
            "the NVIDIA driver",
            True,
            reasons=(f"driver {current} already meets CUDA {cuda}'s minimum {need.minimum}",),
        )
    branch = (
        f"R{need.branch} ({need.designation}, supported until {need.eol})"
        if need.branch
        else "no branch in the table"
    )
    return Resolution(
        "driver",
        "the NVIDIA driver",
        True,
        driver=need,
        minor_compat=need.minor_compat,
        reasons=(
            f"CUDA {cuda} needs driver {need.minimum} or newer"
            + (" (the CUDA major's minor-version floor)" if need.minor_compat else ""),
            f"branch: {branch}",
        ),
    )


# --- the registry ---------------------------------------------------------------------------------------

RESOLVERS: Mapping[str, ResolverSpec] = {
    spec.name: spec
    for spec in (
        ResolverSpec(name, func, RESOLVER_ARGS[name], doc)
        for name, func, doc in (
            ("torch", torch_wheel, "the newest torch wheel (and companions) this host runs"),
            ("tensorflow", tensorflow_build, "a tested TensorFlow CUDA build the driver runs"),
            ("jax", jax_plugin, "the JAX CUDA plugin extra for the driver and GPUs"),
            ("framework", framework_build, "the resolver of frameworks[i].name"),
            ("driver", driver_branch, "the driver branch a CUDA version needs"),
        )
    )
}


def resolve(
    name: str,
    facts: Facts,
    kb: Knowledge,
    item: Optional[int] = None,
    args: tuple[tuple[str, str], ...] = (),
) -> Resolution:
    """Run the resolver `name`. KeyError for a name not in RESOLVERS (the loader refuses such rules)."""
    return RESOLVERS[name].func(facts, kb, item, dict(args))
