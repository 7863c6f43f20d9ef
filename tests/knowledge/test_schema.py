"""The schema's own answers (knowledge/schema.py): the wheel variant that names a CUDA build, and whether a
companion's torch requirement admits a torch release. The table-level checks built on them are in
test_loading.py."""

from __future__ import annotations

import pytest

from gpudoctor.knowledge.schema import cuda_variant, torch_requirement_admits


@pytest.mark.parametrize(
    ("cuda", "variant"),
    [
        ("13.0", "cu130"),  # the H200 capture's torch 2.11.0+cu130 (tests/fixtures/h200-driver580-snapshot)
        ("12.8", "cu128"),
        ("11.8", "cu118"),
        ("13.0.2", "cu130"),  # a toolkit's full release number names the same build
        (" 12.6 ", "cu126"),
        ("13", None),  # a major alone names no build
        ("", None),
        ("cu130", None),
    ],
)
def test_the_variant_that_names_a_cuda_build(cuda, variant):
    assert cuda_variant(cuda) == variant


# The requirements on torch that companion releases publish (rules/knowledge/torch_companions.yaml: torchaudio
# 2.11.1 "torch>=2.11", torchvision 0.29.2 "torch>=2.14.0"; older companions pin one torch, "torch==2.5.1").
@pytest.mark.parametrize(
    ("requirement", "admitted", "refused"),
    [
        ("torch>=2.11", ["2.11.0", "2.11.1", "2.12.0"], ["2.10.0", "2.10.1"]),
        ("torch>=2.14.0", ["2.14.0", "2.15.0"], ["2.13.0"]),
        ("torch==2.5.1", ["2.5.1"], ["2.5.0", "2.5.10", "2.6.0"]),
        ("torch>=2.14.0,<2.15", ["2.14.0", "2.14.1"], ["2.15.0", "2.13.1"]),  # the docstring's example
        ("torch!=2.9.0", ["2.9.1"], ["2.9.0"]),
    ],
)
def test_a_requirement_admits_the_releases_its_specifiers_allow(requirement, admitted, refused):
    assert [v for v in admitted + refused if torch_requirement_admits(requirement, v)] == admitted


def test_a_specifier_outside_the_grammar_admits_nothing():
    # wildcards and local versions are refused by the table's grammar, so they never admit a release
    assert not torch_requirement_admits("torch==2.5.*", "2.5.1")
    assert not torch_requirement_admits("torch~=2.5", "2.5.1")
