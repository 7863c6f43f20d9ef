"""The table-driven test of `explain`: real error messages as users paste them, each with where it was seen
and the rule or explain entry that should rank first, or none (tests/fixtures/explain/messages.yaml and its
README). A case with `also` names ids that share its text on other hosts: `expect` must be among the first
1 + len(also) confident candidates; otherwise it must be first."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpudoctor.explain.answer import build

CORPUS = Path(__file__).parent / "fixtures" / "explain" / "messages.yaml"
CASES = yaml.safe_load(CORPUS.read_text(encoding="utf-8"))["messages"]


@pytest.fixture(scope="module")
def matcher():
    return build()[0]


def test_the_corpus_is_large_and_sourced():
    assert len(CASES) >= 40
    assert sum(1 for c in CASES if c["expect"] is None) >= 6
    assert all(c["seen"] for c in CASES if c["expect"] is not None)


@pytest.mark.parametrize("case", CASES, ids=[f"{n}-{c['expect']}" for n, c in enumerate(CASES)])
def test_a_real_message_ranks_its_rule_first(matcher, case):
    ranked = [c for c in matcher.rank(case["message"], limit=8) if c.confident]
    ids = [c.known.id for c in ranked]
    if case["expect"] is None:
        assert ids == [], f"{case['message']!r} matched {ids}"
        return
    room = 1 + len(case.get("also") or [])
    assert case["expect"] in ids[:room], (
        f"{case['message']!r}: {[(c.known.id, round(c.score, 2)) for c in ranked]}"
    )
