"""Resolvers: what to install, computed from the facts and the knowledge tables (docs/plans.md).

A rule's fix step may name a resolver instead of giving a literal command (`resolver: torch`). The planner
calls it with the check's Facts, the Knowledge tables, the finding's list item and the step's `args`, and
gets a Resolution: the pinned requirements, the wheel index, whether the answer relies on CUDA minor-version
compatibility and why; or, when nothing this host can run exists, `ok=False` and the reason. Resolvers are
pure functions: they read nothing but their arguments and run nothing.

One module per resolver (torch, tensorflow, jax, onnxruntime, driver, base_image) over one skeleton (base)
and the compatibility model (gpudoctor/compat.py); the registry (RESOLVERS) implements the names the engine
validates rule files against (engine/resolver_names.py), and tests/resolvers/test_registry.py checks the two
agree.
"""

from __future__ import annotations

from .base import EXACT_VERSION, DriverNeed, Host, Installed, Resolution, ResolverSpec, installed, read_host
from .base_image import base_image
from .driver import driver_branch, driver_for_cuda
from .jax import jax_plugin
from .onnxruntime import onnxruntime_gpu
from .registry import FRAMEWORK_RESOLVERS, RESOLVERS, framework_build, resolve
from .tensorflow import tensorflow_build
from .torch import TORCH_COMPANIONS, gpu_verdict, torch_wheel

__all__ = [
    "EXACT_VERSION", "FRAMEWORK_RESOLVERS", "RESOLVERS", "TORCH_COMPANIONS", "DriverNeed", "Host",
    "Installed", "Resolution", "ResolverSpec", "base_image", "driver_branch", "driver_for_cuda",
    "framework_build", "gpu_verdict", "installed", "jax_plugin", "onnxruntime_gpu", "read_host", "resolve",
    "tensorflow_build", "torch_wheel",
]  # fmt: skip
