"""The JAX resolver: the CUDA plugin extra (jax[cuda13], jax[cuda12]) for the driver and the GPUs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Optional

from ..compat import meets_toolkit_minimum, sm
from ..compat import version_tuple as _vt
from ..knowledge import Knowledge
from .base import EXACT_VERSION, Resolution, begin

if TYPE_CHECKING:
    from ..facts import Facts


def _newest_toolkit(major: int, kb: Knowledge) -> Optional[Any]:
    rows = [t for t in kb.cuda_toolkits if _vt(t.cuda)[0] == major and t.update == 0]
    return max(rows, key=lambda t: _vt(t.cuda)) if rows else None


def jax_plugin(
    facts: Facts, kb: Knowledge, item: Optional[int] = None, args: Optional[Mapping[str, str]] = None
) -> Resolution:
    """The JAX CUDA plugin extra (jax[cuda13], jax[cuda12]) for the highest CUDA major whose driver floor
    the driver meets and whose oldest supported GPU every GPU is at or above; the installed jax version.
    A plugin of another CUDA major that is installed is removed first (both would load)."""
    req = begin("jax", "a JAX CUDA plugin", facts, kb, item, args, need_python=False)
    if isinstance(req, Resolution):
        return req
    host, have, avoid = req.host, req.have, req.avoid
    have_major = _vt(have.cuda)[0] if have and have.build == "cuda" and have.cuda and _vt(have.cuda) else None
    rejected: list[str] = []
    fitting: list[int] = []  # CUDA majors whose plugin supports every GPU
    for plugin in sorted(kb.jax_plugins, key=lambda p: p.cuda_major, reverse=True):
        label = f"jax[{plugin.extra}]"
        old = [(cc, name) for cc, name in host.gpus if _vt(cc) < _vt(plugin.min_cc)]
        if old:
            cc, name = old[0]
            rejected.append(f"{label}: supports GPUs from {sm(plugin.min_cc)}; {name} is {sm(cc)}")
            continue
        fitting.append(plugin.cuda_major)
        if _vt(host.driver) < _vt(plugin.min_driver):
            rejected.append(
                f"{label}: needs driver {plugin.min_driver} or newer; driver {host.driver} is older"
            )
            continue
        newest = _newest_toolkit(plugin.cuda_major, kb)
        minor = newest is not None and meets_toolkit_minimum(newest.cuda, host.driver, kb) is False
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
                f"every GPU is {sm(plugin.min_cc)} or newer",
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
