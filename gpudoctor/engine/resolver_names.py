"""The resolvers a fix step may name, as data: each name with the arguments it accepts.

The engine validates rule files against this table (engine/loader.py) without importing the resolvers,
which sit above it (gpudoctor/resolvers/ implements each name; its registry takes the arguments from here,
and tests/resolvers/test_registry.py checks that the two name the same resolvers).
"""

from __future__ import annotations

from collections.abc import Mapping

# minor_compat=avoid: refuse answers that run only through CUDA minor-version compatibility; downgrade=no:
# never answer with an older release than the installed one (the planner sets it for every finding below
# error severity, docs/plans.md).
_MINOR = {"minor_compat": ("allow", "avoid"), "downgrade": ("yes", "no")}

# name -> accepted args -> accepted values (() = any non-empty string)
RESOLVER_ARGS: Mapping[str, Mapping[str, tuple[str, ...]]] = {
    "torch": _MINOR,
    "tensorflow": _MINOR,
    "jax": _MINOR,
    "onnxruntime": _MINOR,
    "framework": _MINOR,
    "driver": {"cuda": (), "cuda_fact": ()},  # cuda_fact: the fact holding the CUDA version wanted
    "base_image": {},  # the host's driver and GPUs decide; no args
}
RESOLVER_NAMES: tuple[str, ...] = tuple(RESOLVER_ARGS)
