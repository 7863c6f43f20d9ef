"""The jax resolver (resolvers/jax.py) against the shipped knowledge tables: each expected answer is traced,
in a comment, to the rows it comes from (file and row; `rules/knowledge/` is left out of the file names)."""

from __future__ import annotations

import pytest

from gpudoctor.knowledge import knowledge
from gpudoctor.resolvers import resolve

from .hosts import H100, V100, host

JAX = {"name": "jax", "distribution": "jax", "version": "0.7.2", "build": "cpu"}


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        # jax.yaml cuda13: driver >= 580, SM >= 7.5; the newest 13.x toolkit, 13.3 update 0, needs 610.43.02.
        (
            host("580.95.05", [H100], **JAX),
            {"ok": True, "packages": ("jax[cuda13]==0.7.2",), "minor_compat": True},
        ),
        # jax.yaml cuda13 needs SM 7.5: a V100 gets cuda12 (SM >= 5.2); 12.9 update 0 needs 575.51.03 <= 580.
        (
            host("580.95.05", [V100], **JAX),
            {"ok": True, "packages": ("jax[cuda12]==0.7.2",), "minor_compat": False},
        ),
        # jax.yaml cuda13 needs 580, cuda12 525; 535 is below 12.9's 575.51.03.
        (
            host("535.183.01", [H100], **JAX),
            {"ok": True, "packages": ("jax[cuda12]==0.7.2",), "minor_compat": True},
        ),
        # Below cuda12's 525.
        (host("470.256.02", [H100], **JAX), {"ok": False, "packages": ()}),
    ],
)
def test_jax_resolver(facts, expected):
    res = resolve("jax", facts, knowledge(), 0)
    assert {k: getattr(res, k) for k in expected} == expected, res.reasons


def test_jax_switching_cuda_major_removes_the_other_plugin():
    # jax.yaml cuda13 needs 580; on 570 the cuda12 plugin (floor 525) replaces the installed CUDA 13 one.
    facts = host("570.172.08", [H100], **dict(JAX, build="cuda", cuda="13"))
    res = resolve("jax", facts, knowledge(), 0)
    assert (res.packages, res.uninstall) == (
        ("jax[cuda12]==0.7.2",),
        ("jax-cuda13-plugin", "jax-cuda13-pjrt"),
    )


def test_jax_avoiding_minor_compat_needs_the_newest_toolkit_of_its_major():
    # cuda_drivers.yaml 12.9 update 0: 575.51.03 > 570.172.08, and cuda13 needs 580: nothing without
    # minor-version compatibility; a driver for CUDA 12.9 (the installed plugin's major) would do.
    facts = host("570.172.08", [H100], **dict(JAX, build="cuda", cuda="12.9"))
    res = resolve("jax", facts, knowledge(), 0, (("minor_compat", "avoid"),))
    assert (res.ok, res.needs_cuda) == (False, "12.9")
    assert resolve("jax", facts, knowledge(), 0).reasons == (
        "the installed jax[cuda12] is already the best plugin this host runs",
    )
