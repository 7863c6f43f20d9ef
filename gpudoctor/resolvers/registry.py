"""The registry: every resolver a fix step may name (the names and args are the engine's,
engine/resolver_names.py), and `framework`, which hands frameworks[i] to its own resolver."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Callable, Optional

from ..engine.resolver_names import RESOLVER_ARGS
from ..knowledge import Knowledge
from .base import Resolution, ResolverSpec, _fail
from .base_image import base_image
from .driver import driver_branch
from .jax import jax_plugin
from .onnxruntime import onnxruntime_gpu
from .tensorflow import tensorflow_build
from .torch import torch_wheel

if TYPE_CHECKING:
    from ..facts import Facts

FRAMEWORK_RESOLVERS: Mapping[str, Callable[..., Resolution]] = {
    "torch": torch_wheel,
    "tensorflow": tensorflow_build,
    "jax": jax_plugin,
    "onnxruntime": onnxruntime_gpu,
}


def framework_build(
    facts: Facts, kb: Knowledge, item: Optional[int] = None, args: Optional[Mapping[str, str]] = None
) -> Resolution:
    """The framework at `item` (frameworks[i].name) resolved by its own resolver: torch, tensorflow, jax,
    onnxruntime."""
    name = facts.value(f"frameworks[{item}].name") if item is not None else None
    func = FRAMEWORK_RESOLVERS.get(name) if isinstance(name, str) else None
    if func is None:
        shown = name if isinstance(name, str) else "this framework"
        return _fail(
            "framework", shown, f"no resolver knows {shown}'s builds (only {', '.join(FRAMEWORK_RESOLVERS)})"
        )
    return func(facts, kb, item, args)


RESOLVERS: Mapping[str, ResolverSpec] = {
    spec.name: spec
    for spec in (
        ResolverSpec(name, func, RESOLVER_ARGS[name], doc)
        for name, func, doc in (
            ("torch", torch_wheel, "the newest torch wheel (and companions) this host runs"),
            ("tensorflow", tensorflow_build, "a tested TensorFlow CUDA build the driver runs"),
            ("jax", jax_plugin, "the JAX CUDA plugin extra for the driver and GPUs"),
            ("onnxruntime", onnxruntime_gpu, "an onnxruntime-gpu release that exists and fits the driver"),
            ("framework", framework_build, "the resolver of frameworks[i].name"),
            ("driver", driver_branch, "the driver branch a CUDA version needs"),
            ("base_image", base_image, "the CUDA base image release the host's driver and GPUs run"),
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
