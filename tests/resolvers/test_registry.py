"""The resolver registry (resolvers/registry.py): `framework` dispatches by name, and the registry and the
engine's list of resolver names (engine/resolver_names.py) agree."""

from __future__ import annotations

from gpudoctor.engine.resolver_names import RESOLVER_ARGS, RESOLVER_NAMES
from gpudoctor.knowledge import knowledge
from gpudoctor.resolvers import RESOLVERS, resolve

from .hosts import H100, host, torch


def test_framework_resolver_dispatches_by_name():
    kb = knowledge()
    facts = host("550.127.05", [H100], **torch("2.9.0", "cuda", "13.0"))
    assert resolve("framework", facts, kb, 0) == resolve("torch", facts, kb, 0)
    cupy = host(
        "570.172.08",
        [H100],
        name="cupy",
        distribution="cupy-cuda13x",
        version="13.6.0",
        build="cuda",
        cuda="13",
    )
    res = resolve("framework", cupy, kb, 0)
    assert (res.ok, res.subject, res.reasons) == (
        False,
        "cupy",
        ("no resolver knows cupy's builds (only torch, tensorflow, jax, onnxruntime)",),
    )


def test_registry_names_every_resolver_with_its_args():
    assert {name: dict(spec.args) for name, spec in RESOLVERS.items()} == {
        "torch": {"minor_compat": ("allow", "avoid"), "downgrade": ("yes", "no")},
        "tensorflow": {"minor_compat": ("allow", "avoid"), "downgrade": ("yes", "no")},
        "jax": {"minor_compat": ("allow", "avoid"), "downgrade": ("yes", "no")},
        "onnxruntime": {"minor_compat": ("allow", "avoid"), "downgrade": ("yes", "no")},
        "framework": {"minor_compat": ("allow", "avoid"), "downgrade": ("yes", "no")},
        "driver": {"cuda": (), "cuda_fact": ()},
        "base_image": {},
    }


def test_the_engine_names_exactly_the_resolvers_the_registry_implements():
    # The loader validates rules against the engine's own table, without importing the resolvers.
    assert RESOLVER_NAMES == tuple(RESOLVERS)
    assert all(dict(RESOLVER_ARGS[name]) == dict(spec.args) for name, spec in RESOLVERS.items())
