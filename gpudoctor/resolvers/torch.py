"""The torch resolver: the newest torch wheel (and its companions) this host runs.

A variant runs when the driver runs its CUDA (compat.driver_verdict) and it has kernels for every GPU
(gpu_verdict, over compat's SASS and PTX rules); the installed major.minor is kept when it can be.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from ..compat import (
    assumed_arch,
    cuda_variant,
    driver_verdict,
    kernel,
    ptx_for,
    sm,
    split_arch,
)
from ..compat import (
    version_tuple as _vt,
)
from ..knowledge import Knowledge, TorchRelease, TorchVariant, torch_index_url, torch_release
from .base import (
    EXACT_VERSION,
    Host,
    Installed,
    Resolution,
    _ccs_text,
    _python_ok,
    begin,
    kept_first,
)

if TYPE_CHECKING:
    from ..facts import Facts

TORCH_COMPANIONS = ("torchvision", "torchaudio")


def gpu_verdict(
    variant: TorchVariant, host: Host, kb: Knowledge, full_driver: bool
) -> tuple[bool, list[str]]:
    """Does the wheel carry kernels every GPU can run? (ok, reasons or the reason why not)

    Native code (SASS) counts by binary compatibility. Embedded PTX counts for a GPU newer than the PTX's
    compute capability only when the driver meets the variant's full CUDA minimum: under minor-version
    compatibility the driver cannot JIT-compile PTX from the newer toolkit."""
    native, ptxs = split_arch(variant.arch)
    source = "built for"
    if not variant.arch:
        native, ptxs = assumed_arch(variant.cuda, kb), ()
        source = (
            f"no arch list in the torch table; assumed from the cuDNN support matrix for CUDA {variant.cuda}:"
        )
        if not native:
            return False, [
                f"the torch table has no arch list for it and the cuDNN table no row for CUDA {variant.cuda}"
            ]
    reasons = []
    for cc, name in host.gpus:
        ptx = ptx_for(cc, ptxs)
        code = kernel(cc, variant.arch or native, ptx_jit=full_driver)
        if code == "native":
            reasons.append(f"{sm(cc)} ({name}): native kernels ({source} {_ccs_text(native)})")
        elif code == "ptx" and ptx is not None:
            reasons.append(
                f"{sm(cc)} ({name}): runs the embedded compute_{sm(ptx)[3:]} PTX, JIT-compiled on "
                f"first use (built for {_ccs_text(variant.arch)})"
            )
        elif ptx is not None:
            return False, [
                f"no native kernels for {sm(cc)} ({name}), and its compute_{sm(ptx)[3:]} PTX needs "
                f"the full CUDA {variant.cuda} driver to JIT-compile"
            ]
        else:
            return False, [f"no kernels for {sm(cc)} ({name}) ({source} {_ccs_text(native)})"]
    return True, reasons


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
    return kept_first(sorted(kb.torch_releases, key=lambda r: _vt(r.version), reverse=True), keep)


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
    req = begin("torch", "a torch wheel", facts, kb, item, args, torch_release)
    if isinstance(req, Resolution):
        return req
    host, have, keep, avoid = req.host, req.have, req.keep, req.avoid
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
        index_url=torch_index_url(chosen.variant.name, kb),
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
