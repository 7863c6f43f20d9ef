"""What every resolver shares (resolvers/base.py): the host it reads from the facts, the installed framework,
and the order releases are tried in; on the facts of the real H200 capture
(tests/fixtures/h200-driver580-snapshot: driver 580.159.04, Python 3.12, one H200, torch 2.11.0 cu130,
jax 0.11.2, cupy-cuda13x 14.2.0, the CPU-only onnxruntime 1.30.0)."""

from __future__ import annotations

import pytest

from gpudoctor.collect import collect
from gpudoctor.facts import Facts, unknown
from gpudoctor.host.base import Deadline
from gpudoctor.host.snapshot import SnapshotHost, load
from gpudoctor.knowledge import knowledge, torch_release
from gpudoctor.resolvers.base import (
    EXACT_VERSION,
    Host,
    Installed,
    Request,
    begin,
    beyond_tables,
    installed,
    not_downgraded,
    read_host,
    release_order,
)

from conftest import H200


@pytest.fixture(scope="module")
def h200() -> Facts:
    facts, _statuses = collect(SnapshotHost(load(str(H200))), Deadline(30))
    return facts


def test_the_host_a_resolver_reads(h200):
    host, why = read_host(h200, knowledge())
    # system.glibc: the capture's interpreter did not identify its libc ("libc not identified")
    assert (host, why) == (Host("580.159.04", "3.12", (("9.0", "NVIDIA H200"),), "x86_64", None), "")


def test_an_unknown_compute_capability_is_taken_from_the_gpu_catalogue(h200):
    facts = Facts({**dict(h200.items()), "gpus[0].compute_capability": unknown("not supported", "nvml")})
    host, _why = read_host(facts, knowledge())
    assert host.gpus == (("9.0", "NVIDIA H200"),)  # gpus.yaml's NVIDIA H200 row


@pytest.mark.parametrize(
    ("fact", "why"),
    [
        ("driver.version", "the driver version is unknown (timed out)"),
        ("python.version", "the Python version is unknown (timed out)"),
        ("gpus.count", "the GPUs are unknown (timed out)"),
    ],
)
def test_a_host_fact_that_is_unknown_is_the_reason(h200, fact, why):
    facts = Facts({**dict(h200.items()), fact: unknown("timed out", "a probe past the deadline")})
    assert read_host(facts, knowledge()) == (None, why)
    failed = begin("torch", "a torch build", facts, knowledge(), None, None)
    assert (failed.ok, failed.reasons) == (False, (f"cannot choose a torch build: {why}",))


def test_a_driver_resolver_needs_no_python(h200):
    facts = Facts({**dict(h200.items()), "python.version": unknown("--no-python", "python")})
    host, why = read_host(facts, knowledge(), need_python=False)
    assert (host.python, why) == ("", "")


def test_the_installed_framework_by_item_or_by_name(h200):
    torch = Installed(0, "torch", "2.11.0", "cuda", "13.0", "torch")
    assert installed(h200, "torch", None) == installed(h200, "torch", 0) == torch
    assert installed(h200, "onnxruntime", None) == Installed(
        3, "onnxruntime", "1.30.0", "cpu", None, "onnxruntime"
    )
    assert installed(h200, "torch", 3) is None  # item 3 is onnxruntime
    assert installed(h200, "tensorflow", None) is None


def test_begin_reads_the_arguments_of_the_step(h200):
    args = {"minor_compat": "avoid", "downgrade": "no"}
    request = begin("torch", "a torch build", h200, knowledge(), 0, args, lambda v, kb: torch_release(v))
    assert isinstance(request, Request)
    assert (request.avoid, request.downgrade, request.keep.version) == (True, False, "2.11")
    plain = begin("torch", "a torch build", h200, knowledge(), 0, None)
    assert (plain.avoid, plain.downgrade, plain.keep) == (False, True, None)


def test_releases_are_tried_installed_first_then_newest_first(h200):
    rows = list(knowledge().torch_releases)
    have = installed(h200, "torch", 0)
    keep = torch_release("2.11")
    order, older = release_order(rows, keep, have, downgrade=True)
    assert [r.version for r in order[:3]] == ["2.11", "2.15", "2.14"] and older == []
    assert len(order) == len(rows)
    # a warning's fix never downgrades: nothing older than 2.11 is tried, and the reasons say so
    order, older = release_order(rows, keep, have, downgrade=False)
    assert [r.version for r in order] == ["2.11", "2.15", "2.14", "2.13", "2.12"]
    assert older[:2] == ["2.10", "2.9"]
    assert not_downgraded("torch", ["2.10"]) == [
        "older releases (2.10) are not considered: a warning's fix never downgrades torch"
    ]
    assert not_downgraded("torch", []) == []


def test_a_release_newer_than_the_table_is_not_planned(h200):
    versions = [r.version for r in knowledge().torch_releases]
    assert beyond_tables("torch", installed(h200, "torch", 0), versions) is None
    newer = Installed(0, "torch", "2.16.0", "cuda", "13.0", "torch")  # the release after the table's last
    assert beyond_tables("torch", newer, versions) == (
        "torch 2.16.0 is newer than gpudoctor's torch table, which ends at 2.15: gpudoctor is older than "
        "your torch, so it plans no other torch (upgrade gpudoctor for newer tables)"
    )


@pytest.mark.parametrize(
    ("version", "exact"),
    [("2.11.0", True), ("2.6.0rc1", True), ("2.4.0.post1", True), ("0.11.2", True), ("2.11.0+cu130", False),
     ("2.11", True), ("2", False), ("2.11.*", False), ("latest", False)],
)  # fmt: skip
def test_a_version_placed_into_a_pin_as_is(version, exact):
    # torch's installed version on the H200 is 2.11.0 with no local tag in its metadata (its README); the
    # +cu130 spelling is torch/version.py's, which never goes into a pin
    assert bool(EXACT_VERSION.match(version)) is exact
