"""explain on real error messages nobody here wrote (tests/explain/corpus/): each case well-formed and
sourced; the score (top-1, top-3, program errors blamed on the environment) printed at the end of every
test run and held to its floor. `python tools/explain_corpus.py` prints it per file with the misses."""

from __future__ import annotations

import re

import pytest

from gpudoctor.explain.index import build

from .corpus_score import FIELDS, KINDS, load, score

CASES = load()
# The floors: what the corpus scored when they were set (see CHANGELOG); raise them as explain improves,
# never lower them to let a change through.
TOP1_FLOOR = 0.74
TOP3_FLOOR = 0.80
SOURCE = re.compile(r"^https://\S+$")


@pytest.fixture(scope="module")
def matcher():
    return build()[0]


@pytest.fixture(scope="module")
def known_ids():
    from gpudoctor.engine.loader import load_rules
    from gpudoctor.explain.entries import load_entries

    return {r.id for r in load_rules([])} | {e.id for e in load_entries()}


def test_the_corpus_is_large_real_and_well_formed(known_ids):
    assert len(CASES) >= 150
    problems = []
    for n, c in enumerate(CASES):
        where = f"{c['file']} case {n}: {c['message'][:60]!r}"
        if set(c) - FIELDS - {"file"}:
            problems.append(f"{where}: unknown fields {sorted(set(c) - FIELDS - {'file'})}")
        if not isinstance(c.get("message"), str) or not c["message"].strip():
            problems.append(f"{where}: no message")
        if not SOURCE.match(str(c.get("source"))):
            problems.append(f"{where}: source is not a URL: {c.get('source')!r}")
        if not isinstance(c.get("cause"), str) or len(c["cause"]) < 10:
            problems.append(f"{where}: no established cause")
        if c.get("kind") not in KINDS:
            problems.append(f"{where}: kind {c.get('kind')!r}")
        if c.get("expect") is not None and c["expect"] not in known_ids:
            problems.append(f"{where}: expect {c['expect']} is no rule or explain entry")
        if c.get("expect") is None and c.get("kind") == "environment" and not c.get("needs"):
            problems.append(f"{where}: an environment cause with no rule names what it needs")
        if c.get("expect") is not None and c.get("needs"):
            problems.append(f"{where}: needs {c['needs']} although it expects {c['expect']}")
    assert not problems, "\n".join(problems)
    # One message may come from several threads (the same text, another host, maybe another cause); one
    # thread's message is there once.
    sources = [c["source"] for c in CASES]
    pairs = [(" ".join(c["message"].split()).lower(), c["source"]) for c in CASES]
    assert len(set(pairs)) == len(pairs), "a thread's message is in the corpus twice"
    assert len(set(sources)) >= 0.8 * len(sources), "most cases come from threads of their own"


def test_explain_scores_at_least_its_floor_and_never_blames_the_environment_for_a_program_error(matcher):
    s = score(matcher, CASES)
    assert s.blamed == [], s.blamed
    assert s.top1 >= TOP1_FLOOR * s.cases, s.line("corpus")
    assert s.top3 >= TOP3_FLOOR * s.cases, s.line("corpus")
