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
    torch_index_pins,
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


# Why one variant of a release (or, with variant "", the release itself) was passed over: (release, variant,
# why), the why without the release's name, so that releases passed over for one reason share a line.
Rejection = tuple[str, str, str]


def _runnable(
    release: TorchRelease, host: Host, kb: Knowledge, avoid: bool, rejected: list[Rejection]
) -> list[Choice]:
    """The variants of `release` this host runs, highest CUDA first; each one passed over goes to
    `rejected`."""
    out = []
    for variant in sorted(release.variants, key=lambda v: _vt(v.cuda), reverse=True):
        dv = driver_verdict(variant.cuda, host.driver, kb, avoid)
        if not dv.runs:
            rejected.append((release.version, variant.name, dv.reason))
            continue
        ok, gpu_reasons = gpu_verdict(variant, host, full_driver=not dv.minor_compat)
        if not ok:
            rejected.append((release.version, variant.name, gpu_reasons[0]))
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


@dataclass(frozen=True)
class Outcome:
    """What _choose found: the choice (None: nothing runs), the Python reason, the releases a warning left
    out, the releases ranked above the choice (all tried, when there is none) and, of those, the ones that
    run here only through minor-version compatibility, with their variants that do."""

    choice: Optional[Choice]
    python_why: str
    older: list[str]
    ahead: list[str]
    minor_only: list[tuple[str, list[str]]]


def _choose(
    kb: Knowledge,
    host: Host,
    have: Optional[Installed],
    keep: Optional[TorchRelease],
    avoid: bool,
    downgrade: bool,
    rejected: list[Rejection],
) -> Outcome:
    """The release and variant to install. The installed release first (natively, else through
    minor-version compatibility); then the newest release with a variant that runs natively; then the newest
    that runs through minor-version compatibility."""
    order, older = release_order(list(kb.torch_releases), keep, have, downgrade)
    fits: list[tuple[TorchRelease, list[Choice], str]] = []
    best: Optional[Choice] = None
    python_why = ""
    for release in order:
        ok, why = _python_fit(release, host)
        if not ok:
            rejected.append((release.version, "", why))
            continue
        glibc = _glibc_fit(release, _target_patch(release, have, keep, kb), host, kb)
        if glibc:
            rejected.append((release.version, "", glibc))
            continue
        choices = _runnable(release, host, kb, avoid, rejected)
        if release is keep and choices:
            best, python_why = _best(choices, native_only=False), why
            break
        fits.append((release, choices, why))
    for native_only in (True, False):
        for _release, choices, why in fits:
            if best is None:
                found = _best(choices, native_only)
                best, python_why = (found, why) if found is not None else (None, "")
    tried = [r.version for r in order]
    ahead = tried[: tried.index(best.release.version)] if best is not None else tried
    minor_only = [
        (r.version, [c.variant.name for c in choices])
        for r, choices, _ in fits
        if r.version in ahead and choices and all(c.minor_compat for c in choices)
    ]
    return Outcome(best, python_why, older, ahead, minor_only)


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
    """(packages, uninstall first), pins the variant's index carries (docs/plans.md).

    torch is pinned exactly, with the variant's local tag where the index's wheel for this machine carries
    one (a plain ==2.5.1 is satisfied by an installed 2.5.1+cpu, so pip would change nothing). Its companions
    are the releases whose published metadata requires that torch (the companions table), or the versions
    PyTorch's own install command for that torch names on its CUDA indexes (torch.yaml index_pins), tagged
    too where they require exactly that torch and the index tags them. A package whose wheel there carries
    no tag (or where the table does not say) is pinned without one, which matches either, and removed first,
    so that an installed build of the same version (a CPU build) is not kept. A companion with no release for
    that torch, or no wheel for this machine, is removed: the one installed would require the old torch.
    Without a patch release (the table lists none) every package is pinned to its series."""
    release, tag = choice.release, choice.variant.name
    machine = host.machine or "x86_64"
    aarch64 = machine == "aarch64"
    if patch is None:
        pins, uninstall = [f"torch=={release.version}.*"], []
        for name in TORCH_COMPANIONS:
            series = getattr(release, name)
            if series is None:
                uninstall.append(name)
                notes.append(
                    f"{name} removed: the torch table has no {name} version for torch {release.version}"
                )
            else:
                pins.append(f"{name}=={series}.*")
        notes.append(
            f"the companions table lists no patch release of torch {release.version}: pinned by series"
        )
        return tuple(pins), tuple(uninstall)
    torch_tag = release.aarch64_torch_tag if aarch64 else True
    companion_tag = release.aarch64_companion_tag if aarch64 else True
    pins = [f"torch=={patch}+{tag}" if torch_tag else f"torch=={patch}"]
    untagged = [] if torch_tag else ["torch"]
    removed: list[str] = []
    row = torch_companions(patch, kb)
    index = torch_index_pins(patch, kb)
    unconfirmed: list[str] = []  # companions pinned from the default index's metadata alone
    for name in TORCH_COMPANIONS:
        version, requires = _companion(name, patch, release, row, index, notes)
        machines = row[f"{name}_platforms"] if row else None  # type: ignore[literal-required]
        if version is not None and machines is not None and machine not in machines:
            notes.append(f"{name} removed: {name} {version} has no Linux {machine} wheel")
            version = None
        if version is None:
            removed.append(name)
            continue
        if index is None and row is not None:
            unconfirmed.append(f"{name} {version}")
        exact = requires == f"torch=={patch}"
        if exact and companion_tag:
            pins.append(f"{name}=={version}+{tag}")
            continue
        pins.append(f"{name}=={version}")
        if not exact:
            notes.append(
                f"{name} {version} requires {requires or 'no particular torch'}, not torch {patch} "
                "alone: pinned without a local tag"
            )
        if aarch64:
            untagged.append(name)
    if unconfirmed:
        notes.append(
            f"{' and '.join(unconfirmed)}: the releases the default index pairs with torch {patch}; the "
            f"torch table records no install command of PyTorch's for torch {patch}, so that the {tag} index "
            "carries them is not confirmed"
        )
    if aarch64 and untagged:
        names = " and ".join([", ".join(untagged[:-1]), untagged[-1]] if len(untagged) > 1 else untagged)
        why = (
            f"PyTorch's build scripts for torch {release.version} give their aarch64 wheels none"
            if all(_tag_known(release, n) is False for n in untagged)
            else "the torch table does not record whether they carry one"
        )
        notes.append(
            f"aarch64: {names} on the {tag} index: no +{tag} tag ({why}), so they are pinned without one, "
            "which matches the index's wheel either way, and removed first (pip would keep an installed CPU "
            "build of the same version)"
        )
    if host.machine is None:
        notes.append("the CPU architecture is unknown: these are the x86_64 wheels")
    return tuple(pins), tuple(untagged + removed)


def _tag_known(release: TorchRelease, name: str) -> Optional[bool]:
    """Whether the table says the aarch64 wheel of `name` on the release's cuXXX indexes carries the tag."""
    return release.aarch64_torch_tag if name == "torch" else release.aarch64_companion_tag


def _companion(
    name: str,
    patch: str,
    release: TorchRelease,
    row: Optional[dict],
    index: Optional[dict],
    notes: list[str],
) -> tuple[Optional[str], Optional[str]]:
    """(version, its requirement on torch) of companion `name` for torch `patch`: the version PyTorch's own
    install command names on its CUDA indexes when the table records one (index_pins), else the companions
    table's (the default index's metadata), said so in a note; else its torch-table series with torch's
    patch number. (None, None), with a note, when none names one: the caller removes it."""
    listed = row[name] if row is not None else None
    requires = row["requires"][name] if row is not None else None
    if index is not None:
        version = index[name]
        if version is None:
            notes.append(f"{name} removed: PyTorch's install command for torch {patch} names no {name}")
            return None, None
        if version != listed:
            # the page's version; it pins exactly this torch (the page installs the two together)
            return version, f"torch=={patch}"
        return version, requires
    if row is not None:
        if listed is None:
            notes.append(
                f"{name} removed: no {name} release requires torch {patch} (an installed one requires "
                "another torch)"
            )
            return None, None
        return listed, requires
    series = getattr(release, name)
    if series is None:
        notes.append(f"{name} removed: the torch table has no {name} version for torch {release.version}")
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
    rejected: list[Rejection] = []
    outcome = _choose(kb, host, have, keep, req.avoid, req.downgrade, rejected)
    chosen, python_why, older = outcome.choice, outcome.python_why, outcome.older
    needs = _torch_needs(have, keep, host)
    skipped = not_downgraded("torch", older)
    if chosen is None:
        shown = _passed_over(rejected, keep.version if keep else None, None, outcome)
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
    head = _torch_head(have, keep, chosen, natively=bool(outcome.minor_only) and not chosen.minor_compat)
    above = _passed_over(rejected, keep.version if keep else None, chosen.release.version, outcome)
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


def _passed_over(
    rejected: list[Rejection], keep: Optional[str], chosen: Optional[str], outcome: Outcome
) -> list[str]:
    """Why each release ranked above the chosen one (every release tried, when none was chosen) was passed
    over, saying exactly what was rejected: the installed and the chosen release one line per variant; the
    others one line per reason, naming each variant that reason rejected ("torch 2.14 cu130, cu132; 2.13
    cu130: CUDA 13.x needs driver 580 ..."); and the releases whose variants run here only through
    minor-version compatibility, which a release that runs natively outranks."""

    def label(version: str, variant: str) -> str:
        return f"torch {version} {variant}".rstrip()

    full = [f"{label(v, var)}: {why}" for v, var, why in rejected if v in (keep, chosen)]
    by_why: dict[str, dict[str, list[str]]] = {}
    for version, variant, why in rejected:
        if version in (keep, chosen) or version not in outcome.ahead:
            continue
        by_why.setdefault(why, {}).setdefault(version, []).append(variant)
    for why, releases in by_why.items():
        named = "; ".join(f"{v} {', '.join(x for x in vs if x)}".rstrip() for v, vs in releases.items())
        full.append(f"torch {named}: {why}")
    minor = [(v, names) for v, names in outcome.minor_only if v not in (keep, chosen)]
    if minor and chosen is not None:
        named = "; ".join(f"{v} {', '.join(names)}" for v, names in minor)
        full.append(
            f"torch {named} run here only through minor-version compatibility: a release that runs "
            "natively comes first"
        )
    return full


def _torch_head(
    have: Optional[Installed], keep: Optional[TorchRelease], chosen: Choice, natively: bool = False
) -> str:
    """The first reason line. `natively`: newer releases run here only through minor-version compatibility,
    so the chosen one is the newest that runs natively, and the line says so."""
    rel, var = chosen.release.version, chosen.variant.name
    runs = "runs natively" if natively else "runs"
    if have is None:
        return f"torch is not installed: torch {rel} is the newest release this host {runs} ({var})"
    build = {
        "cpu": "a CPU-only build",
        "cuda": f"a CUDA {have.cuda} build" if have.cuda else "a CUDA build",
    }.get(str(have.build), f"a {have.build} build")
    if keep is chosen.release:
        return f"keeps torch {rel} (installed {have.version}, {build}); {var}: its best variant for this host"
    if keep is None:
        return (
            f"torch {have.version} is not in the torch table; torch {rel} ({var}): the newest this host "
            f"{runs}"
        )
    does = "runs natively" if natively else "does"
    return f"torch {keep.version} has no wheel this host runs; torch {rel} ({var}) is the newest that {does}"


def _torch_needs(have: Optional[Installed], keep: Optional[TorchRelease], host: Host) -> Optional[str]:
    """The CUDA a driver upgrade should support to run the installed release: the installed build's own,
    else the highest variant of the release, of those with kernels for every GPU; None when none has."""
    if keep is None:
        return None
    fits = [v for v in keep.variants if gpu_verdict(v, host, full_driver=True)[0]]
    own = [v for v in fits if have is not None and have.build == "cuda" and v.cuda == have.cuda]
    best = own or sorted(fits, key=lambda v: _vt(v.cuda), reverse=True)
    return best[0].cuda if best else None
