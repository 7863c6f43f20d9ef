"""The torch resolver: the torch wheel (and its companions) this host should run.

A variant runs when the driver runs its CUDA (compat.driver_verdict) and it has kernels for every GPU
(gpu_verdict, over compat's SASS and PTX rules) on this machine's CPU architecture; the installed major.minor
is kept when it can be. The order and the pins are docs/plans.md's policy.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from ..compat import cuda_variant, driver_verdict, kernel, ptx_for, sm, split_arch
from ..compat import version_tuple as _vt
from ..knowledge import (
    Knowledge,
    TorchRelease,
    TorchVariant,
    torch_companions,
    torch_index_url,
    torch_patches,
    torch_release,
)
from .base import (
    Host,
    Installed,
    Resolution,
    _ccs_text,
    _python_ok,
    begin,
    beyond_tables,
    not_downgraded,
    release_order,
)

if TYPE_CHECKING:
    from ..facts import Facts

TORCH_COMPANIONS = ("torchvision", "torchaudio")
_PATCH = re.compile(r"^(\d+\.\d+\.\d+)(?:\+[\w.]+)?$")


def variant_arch(variant: TorchVariant, machine: Optional[str]) -> tuple[str, ...]:
    """The variant's TORCH_CUDA_ARCH_LIST for the wheel of `machine` (x86_64 when unknown); () when the
    table does not know it (for aarch64: no aarch64 wheel of it is known)."""
    return variant.arch_aarch64 if machine == "aarch64" else variant.arch


def gpu_verdict(variant: TorchVariant, host: Host, full_driver: bool) -> tuple[bool, list[str]]:
    """Does the wheel carry kernels every GPU can run? (ok, reasons or the reason why not)

    Native code (SASS) counts by binary compatibility. Embedded PTX counts for a GPU newer than the PTX's
    compute capability only when the driver meets the variant's full CUDA minimum: under minor-version
    compatibility the driver cannot JIT-compile PTX from the newer toolkit. A variant whose arch list the
    table lacks has unknown kernels and is never chosen."""
    arch = variant_arch(variant, host.machine)
    if not arch:
        if host.machine == "aarch64":
            return False, ["the torch table lists no aarch64 wheel of it (or not its architectures)"]
        return False, ["the torch table has no arch list for it: which GPUs it has kernels for is unknown"]
    native, ptxs = split_arch(arch)
    reasons = []
    for cc, name in host.gpus:
        ptx = ptx_for(cc, ptxs)
        code = kernel(cc, arch, ptx_jit=full_driver)
        if code == "native":
            reasons.append(f"{sm(cc)} ({name}): native kernels (built for {_ccs_text(native)})")
        elif code == "ptx" and ptx is not None:
            reasons.append(
                f"{sm(cc)} ({name}): runs the embedded compute_{sm(ptx)[3:]} PTX, JIT-compiled on "
                f"first use (built for {_ccs_text(arch)})"
            )
        elif ptx is not None:
            return False, [
                f"no native kernels for {sm(cc)} ({name}), and its compute_{sm(ptx)[3:]} PTX needs "
                f"the full CUDA {variant.cuda} driver to JIT-compile"
            ]
        else:
            return False, [f"no kernels for {sm(cc)} ({name}) (built for {_ccs_text(native)})"]
    return True, reasons


@dataclass(frozen=True)
class Choice:
    release: TorchRelease
    variant: TorchVariant
    minor_compat: bool
    reasons: tuple[str, ...]


def _runnable(
    release: TorchRelease, host: Host, kb: Knowledge, avoid: bool, rejected: list[tuple[str, str]]
) -> list[Choice]:
    """The variants of `release` this host runs, highest CUDA first; each one passed over goes to
    `rejected`."""
    out = []
    for variant in sorted(release.variants, key=lambda v: _vt(v.cuda), reverse=True):
        label = f"torch {release.version} {variant.name}"
        dv = driver_verdict(variant.cuda, host.driver, kb, avoid)
        if not dv.runs:
            rejected.append((release.version, f"{label}: {dv.reason}"))
            continue
        ok, gpu_reasons = gpu_verdict(variant, host, full_driver=not dv.minor_compat)
        if not ok:
            rejected.append((release.version, f"{label}: {gpu_reasons[0]}"))
            continue
        extra = (
            [f"{variant.name} is marked experimental in torch {release.version}"]
            if variant.experimental
            else []
        )
        out.append(Choice(release, variant, dv.minor_compat, (dv.reason, *gpu_reasons, *extra)))
    return out


def _best(choices: list[Choice], native_only: bool) -> Optional[Choice]:
    """A variant that runs natively (the highest CUDA of those), else, unless `native_only`, the highest
    CUDA that runs through minor-version compatibility."""
    native = [c for c in choices if not c.minor_compat]
    if native:
        return native[0]
    return None if native_only or not choices else choices[0]


def _python_fit(release: TorchRelease, host: Host) -> tuple[bool, str]:
    """(fits, why): the interpreter's Python within the release's range, or one its release notes call
    experimental (wheels exist; the note says so)."""
    if _python_ok(host.python, release.python_min, release.python_max):
        span = f"{release.python_min}-{release.python_max}"
        return True, f"Python {host.python} is within torch {release.version}'s {span}"
    if host.python in release.python_experimental:
        return True, f"Python {host.python} is experimental in torch {release.version} (its wheels exist)"
    return False, f"Python {host.python} is outside its {release.python_min}-{release.python_max}"


def _glibc_fit(release: TorchRelease, patch: Optional[str], host: Host, kb: Knowledge) -> Optional[str]:
    """Why the release's wheels do not install on this interpreter's glibc, or None (fits, or unknown)."""
    if patch is None or host.glibc is None:
        return None
    row = torch_companions(patch, kb)
    floor = row["glibc"].get(host.machine or "x86_64") if row else None
    if floor and _vt(host.glibc) < _vt(floor):
        return f"its wheels need glibc {floor}; this interpreter's is {host.glibc}"
    return None


def _choose(
    kb: Knowledge,
    host: Host,
    have: Optional[Installed],
    keep: Optional[TorchRelease],
    avoid: bool,
    downgrade: bool,
    rejected: list[tuple[str, str]],
) -> tuple[Optional[Choice], str, list[str]]:
    """The release and variant to install, the Python reason, and the releases a warning left out. The
    installed release first (natively, else through minor-version compatibility); then the newest release
    with a variant that runs natively; then the newest that runs through minor-version compatibility."""
    order, older = release_order(list(kb.torch_releases), keep, have, downgrade)
    fits: list[tuple[TorchRelease, list[Choice], str]] = []
    for release in order:
        ok, why = _python_fit(release, host)
        if not ok:
            rejected.append((release.version, f"torch {release.version}: {why}"))
            continue
        glibc = _glibc_fit(release, _target_patch(release, have, keep, kb), host, kb)
        if glibc:
            rejected.append((release.version, f"torch {release.version}: {glibc}"))
            continue
        choices = _runnable(release, host, kb, avoid, rejected)
        if release is keep and choices:
            return _best(choices, native_only=False), why, older
        fits.append((release, choices, why))
    for native_only in (True, False):
        for _release, choices, why in fits:
            best = _best(choices, native_only)
            if best is not None:
                return best, why, older
    return None, "", older


def _target_patch(
    release: TorchRelease, have: Optional[Installed], keep: Optional[TorchRelease], kb: Knowledge
) -> Optional[str]:
    """The patch release to pin: the installed one when its release is kept, else the newest the
    companions table lists; None when neither is known."""
    if keep is release and have is not None and have.version:
        m = _PATCH.match(have.version)
        if m:
            return m.group(1)
    patches = torch_patches(release.version, kb)
    return patches[-1] if patches else None


def _torch_pins(
    choice: Choice, patch: Optional[str], host: Host, kb: Knowledge, notes: list[str]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(packages, uninstall first). torch is pinned exactly with the variant's local tag (a plain ==2.5.1 is
    satisfied by an installed 2.5.1+cpu, so pip would change nothing); its companions to the releases whose
    published metadata requires that torch (the companions table), tagged too where they require exactly it.
    On aarch64 the companions' wheels on the cuXXX indexes carry no local tag: they are pinned without one,
    and removed first so that a CPU build of the same version is not kept. Without a patch release (the
    table lists none) every package is pinned to its series."""
    release, tag = choice.release, choice.variant.name
    aarch64 = host.machine == "aarch64"
    if patch is None:
        pins = [f"torch=={release.version}.*"]
        for name in TORCH_COMPANIONS:
            series = getattr(release, name)
            if series is None:
                notes.append(
                    f"{name} left out: the torch table has no {name} version for torch {release.version}"
                )
            else:
                pins.append(f"{name}=={series}.*")
        notes.append(
            f"the companions table lists no patch release of torch {release.version}: pinned by series"
        )
        return tuple(pins), ()
    pins = [f"torch=={patch}+{tag}"]
    row = torch_companions(patch, kb)
    placed: list[str] = []
    for name in TORCH_COMPANIONS:
        version, requires = _companion(name, patch, release, row, notes)
        if version is None:
            continue
        machines = row[f"{name}_platforms"] if row else None  # type: ignore[literal-required]
        if machines is not None and (host.machine or "x86_64") not in machines:
            notes.append(f"{name} left out: {name} {version} has no Linux {host.machine} wheel")
            continue
        exact = requires == f"torch=={patch}"
        if exact and not aarch64:
            pins.append(f"{name}=={version}+{tag}")
        else:
            pins.append(f"{name}=={version}")
            if not aarch64:
                notes.append(
                    f"{name} {version} requires {requires or 'no particular torch'}, not torch {patch} "
                    "alone: pinned without a local tag"
                )
        placed.append(name)
    uninstall: tuple[str, ...] = ()
    if aarch64 and placed:
        uninstall = tuple(placed)
        notes.append(
            f"aarch64: {' and '.join(placed)} on the {tag} index carry no +{tag} tag, so they are pinned "
            "without one and removed first (pip would keep an installed CPU build of the same version)"
        )
    if host.machine is None:
        notes.append("the CPU architecture is unknown: these are the x86_64 wheels")
    return tuple(pins), uninstall


def _companion(
    name: str, patch: str, release: TorchRelease, row: Optional[dict], notes: list[str]
) -> tuple[Optional[str], Optional[str]]:
    """(version, its requirement on torch) of companion `name` for torch `patch`, from the companions table;
    else its torch-table series with torch's patch number. (None, None) when neither knows one."""
    if row is not None:
        version = row[name]
        if version is None:
            notes.append(f"{name} left out: no {name} release requires torch {patch}")
        return version, row["requires"][name]
    series = getattr(release, name)
    if series is None:
        notes.append(f"{name} left out: the torch table has no {name} version for torch {release.version}")
        return None, None
    notes.append(
        f"the companions table lists no torch {patch}: {name}'s version follows torch's patch number"
    )
    return f"{series}.{patch.split('.')[2]}", f"torch=={patch}"


def torch_wheel(
    facts: Facts, kb: Knowledge, item: Optional[int] = None, args: Optional[Mapping[str, str]] = None
) -> Resolution:
    """The torch wheel this host should run (docs/plans.md): kernels for every GPU on this CPU architecture,
    a CUDA the driver runs, the interpreter's Python in the release's range (or experimental there); the
    installed major.minor first, then the newest release that runs natively, then through minor-version
    compatibility. args: minor_compat=avoid refuses variants that would run only through minor-version
    compatibility; downgrade=no (every fix of a warning) never answers with an older release."""
    req = begin("torch", "a torch wheel", facts, kb, item, args, torch_release)
    if isinstance(req, Resolution):
        return req
    host, have, keep = req.host, req.have, req.keep
    beyond = beyond_tables("torch", have, [r.version for r in kb.torch_releases])
    if beyond:
        return Resolution("torch", "torch", False, reasons=(beyond,))
    rejected: list[tuple[str, str]] = []  # (release, why one of its variants or itself was passed over)
    chosen, python_why, older = _choose(kb, host, have, keep, req.avoid, req.downgrade, rejected)
    needs = _torch_needs(have, keep, host)
    skipped = not_downgraded("torch", older)
    if chosen is None:
        shown = _passed_over(rejected, keep.version if keep else None, None)
        return Resolution(
            "torch",
            "torch",
            False,
            reasons=(
                f"no torch wheel in the table runs on driver {host.driver} with these GPUs and "
                f"Python {host.python}" + (" without a downgrade" if older else ""),
                *shown,
                *skipped,
            ),
            needs_cuda=needs,
        )
    notes: list[str] = []
    if chosen.minor_compat:
        notes.append(
            f"no variant of torch {chosen.release.version} runs natively on driver {host.driver}: "
            f"{chosen.variant.name} runs through minor-version compatibility"
        )
    if (
        have is not None
        and have.build == "cuda"
        and keep is chosen.release
        and have.cuda
        and cuda_variant(have.cuda) == chosen.variant.name
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
            notes=tuple(notes),
        )
    patch = _target_patch(chosen.release, have, keep, kb)
    pins, uninstall = _torch_pins(chosen, patch, host, kb, notes)
    head = _torch_head(have, keep, chosen)
    above = _passed_over(rejected, keep.version if keep else None, chosen.release.version)
    if keep is not None and keep is not chosen.release and needs:
        notes.append(f"a driver that supports CUDA {needs} would keep torch {keep.version}")
    return Resolution(
        "torch",
        "torch",
        True,
        packages=pins,
        index_url=torch_index_url(chosen.variant.name, kb),
        uninstall=uninstall,
        minor_compat=chosen.minor_compat,
        reasons=(head, *above, *skipped, *chosen.reasons, python_why),
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


def _torch_needs(have: Optional[Installed], keep: Optional[TorchRelease], host: Host) -> Optional[str]:
    """The CUDA a driver upgrade should support to run the installed release: the installed build's own,
    else the highest variant of the release, of those with kernels for every GPU; None when none has."""
    if keep is None:
        return None
    fits = [v for v in keep.variants if gpu_verdict(v, host, full_driver=True)[0]]
    own = [v for v in fits if have is not None and have.build == "cuda" and v.cuda == have.cuda]
    best = own or sorted(fits, key=lambda v: _vt(v.cuda), reverse=True)
    return best[0].cuda if best else None
