"""Every error text shipped with gpudoctor says where that wording was seen (issue 23).

A source is a public https address (an issue thread, release notes, official documentation) or a reference
into a library's own source, `owner/repo@<40-hex commit>:path[:line]`. A rule without error texts says why
no program prints one (`silent:`).
"""

from __future__ import annotations

import re

import pytest

from gpudoctor.bench.rules import load_bench_rules
from gpudoctor.engine.loader import load_rules
from gpudoctor.explain.entries import load_entries

URL = re.compile(r"^https://[^\s/]+\.[^\s/]+/\S*$")
CODE_REF = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+@[0-9a-f]{40}:[^\s:]+(:[1-9][0-9]*)?$")


def is_source(source: str) -> bool:
    return bool(URL.match(source) or CODE_REF.match(source))


def shipped_rules():
    return load_rules([]) + load_bench_rules()


@pytest.mark.parametrize(
    "source",
    [
        "https://github.com/NVIDIA/nccl/issues/1837",
        "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html",
        "NVIDIA/nccl@5067397c2676d5aed50042fc39e5c8ee96eb0027:src/bootstrap.cc:126",
        "jax-ml/jax@cec06d116c05f0d52adfceee3d3b730fdbcb0ce5:jax/_src/xla_bridge.py",
    ],
)
def test_a_source_is_an_https_address_or_a_pinned_code_reference(source):
    assert is_source(source)


@pytest.mark.parametrize(
    "source",
    [
        "",
        "http://github.com/NVIDIA/nccl/issues/1837",
        "github.com/NVIDIA/nccl/issues/1837",
        "NVIDIA/nccl:src/bootstrap.cc:126",
        "NVIDIA/nccl@5067397c:src/bootstrap.cc:126",
        "NVIDIA/nccl@HEAD:src/bootstrap.cc",
        "NVIDIA/nccl@5067397c2676d5aed50042fc39e5c8ee96eb0027:",
        "seen in a forum post",
    ],
)
def test_what_is_not_a_source(source):
    assert not is_source(source)


def test_every_shipped_rule_error_text_has_a_source():
    missing = [
        f"{rule.id}: {error.text!r} <- {error.source!r}"
        for rule in shipped_rules()
        for error in rule.errors
        if not is_source(error.source)
    ]
    assert missing == []


def test_every_explain_entry_error_text_has_a_source():
    entries = load_entries()
    assert entries
    missing = [
        f"{entry.id}: {error.text!r} <- {error.source!r}"
        for entry in entries
        for error in entry.errors
        if not is_source(error.source)
    ]
    assert missing == []


def test_every_shipped_rule_has_error_texts_or_says_why_not():
    rules = shipped_rules()
    assert [r.id for r in rules if not r.errors and not r.silent] == []
    assert [r.id for r in rules if r.errors and r.silent] == []


def test_shipped_error_texts_are_not_repeated_within_a_rule():
    repeated = [rule.id for rule in shipped_rules() if len({e.text for e in rule.errors}) != len(rule.errors)]
    assert repeated == []


def test_the_shared_symptom_rules_the_issue_names_are_marked_catch_all():
    by_id = {r.id: r for r in shipped_rules()}
    for rid in ("GD-RUNTIME-003", "GD-RUNTIME-005", "GD-RUNTIME-012", "GD-DRIVER-003"):
        assert by_id[rid].catch_all, rid


def test_no_shipped_rule_refines_a_rule_that_refines_it():
    """Specific refines generic, one way: two rules refining each other would both claim to be the specific
    cause, and neither would rank first."""
    by_id = {r.id: r for r in shipped_rules()}
    pairs = [(r.id, other) for r in by_id.values() for other in r.refines if r.id in by_id[other].refines]
    assert any(r.refines for r in by_id.values())
    assert pairs == []
