"""The gate never turns away a line that matches: every real message of the corpus, every known text, lines
made of known texts' words in any case, order and company, and a real log buried in a large training log
all give the answers they give without it; and it does turn away the lines of a training log."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudoctor.explain import answer, gate
from gpudoctor.explain.index import build
from gpudoctor.explain.match import Known, Matcher

from .trainlog import training_lines
from conftest import H200, run_cli

CORPUS = Path(__file__).parent / "corpus"
# Real messages (each case cites the thread it was seen in), line by line.
MESSAGES = [
    c["message"] for f in sorted(CORPUS.glob("*.yaml")) for c in yaml.safe_load(f.read_text())["cases"]
]
CORPUS_LINES = [line for m in MESSAGES for line in m.splitlines()]


@pytest.fixture(scope="module")
def matcher():
    return build()[0]


@pytest.fixture(scope="module")
def the_gate(matcher):
    return gate.Gate(matcher)


def confident(matcher, line):
    return any(c.confident for c in matcher.rank(line.strip(), limit=8))


def passes(the_gate, line):
    return list(the_gate.lines([line])) == [0]


def test_every_corpus_line_and_known_text_that_matches_is_let_through(matcher, the_gate):
    lines = CORPUS_LINES + [t for k in matcher.knowns for t in k.errors]
    matching = [line for line in lines if confident(matcher, line)]
    assert len(matching) > 300
    assert [line for line in matching if not passes(the_gate, line)] == []


def test_the_lines_of_a_training_log_are_turned_away(the_gate):
    lines = list(itertools.islice(training_lines(), 20_000))
    through = [lines[i] for i in the_gate.lines(lines)]
    assert len(through) < 40, through[:5]  # a checkpoint's "Configuration saved in .../out-fsdp/..." line


OOM = (
    "RuntimeError: CUDA out of memory. Tried to allocate 12.50 MiB (GPU 0; 10.92 GiB total capacity; "
    "8.57 MiB already allocated; 9.28 GiB free; 4.68 MiB cached)"
)


def test_a_gate_of_a_few_texts_turns_away_what_none_of_them_can_match():
    # The OOM text as a user's rule file might list it alone, and a real OOM line (tests/explain/corpus/
    # first_set.yaml, with its thread).
    few = gate.Gate(Matcher([Known("GD-USER-1", "oom", ("CUDA out of memory. Tried to allocate",))]))
    lines = list(itertools.islice(training_lines(), 3_000))
    lines.insert(1234, OOM)
    assert list(few.lines(lines)) == [1234]
    assert list(gate.Gate(Matcher([])).lines(lines)) == []


SEPARATORS = [
    " ",
    "  ",
    ".",
    ". ",
    "\t",
    "_",
    ".so",
    ".so.1",
    "1",
    "9.",
    ":",
    "\u2019",
    "\u00a0",
    "",
    "(",
    "=",
    "-",
]


@st.composite
def made_of_known_words(draw, texts):
    """Words of one or two known texts, some left out, in their order or shuffled, with numbers changed, in
    any case, joined by what logs put between words."""
    words = []
    for text in draw(st.lists(st.sampled_from(texts), min_size=1, max_size=2)):
        kept = [w for w in text.split() if draw(st.booleans()) or draw(st.booleans())]
        if draw(st.booleans()):
            kept = draw(st.permutations(kept))
        words += kept
    if draw(st.booleans()):
        words = ["".join(str(draw(st.integers(0, 999))) if c.isdigit() else c for c in w) for w in words]
    line = ""
    for w in words:
        line += draw(st.sampled_from(SEPARATORS)) + w
    case = draw(st.sampled_from([str, str.upper, str.title, str.swapcase]))
    around = draw(st.sampled_from(["", "0: ", "[rank3]: ", "2025-05-02 22:51:04,774 ", "\u0130 ", "x"]))
    return around + case(line) + draw(st.sampled_from(SEPARATORS))


@given(data=st.data())
@settings(max_examples=1500, deadline=None, derandomize=True)
def test_no_line_made_of_known_words_that_matches_is_turned_away(matcher, the_gate, data):
    texts = [t for k in matcher.knowns for t in k.errors]
    line = data.draw(made_of_known_words(texts))
    if confident(matcher, line):
        assert passes(the_gate, line)


@given(st.lists(st.sampled_from(CORPUS_LINES[:400] + ["", "  ", "\u0130\u00e9", "é loss 0.5"]), max_size=30))
@settings(max_examples=300, deadline=None, derandomize=True)
def test_a_block_gives_the_lines_each_line_alone_gives(the_gate, block):
    assert list(the_gate.lines(block)) == [i for i, line in enumerate(block) if passes(the_gate, line)]


def _answer(matches):
    return [
        ([(c.known.id, c.score, c.how, c.text, at) for c, at in m.best], m.count, m.examples) for m in matches
    ]


def every_line(lines, matcher):
    """The triage as it was before the gate, blocks and shapes: every line matched in turn (a repeat
    skipped), for the tests to hold the new one to."""
    out, matched, missed = {}, set(), set()
    for index, raw in enumerate(lines):
        line = raw.strip()
        if not line or line in missed or len(line) > 4000 or hash(line) in matched:
            continue
        ranked = [c for c in matcher.rank(line, limit=8) if c.confident]
        if not ranked:
            missed.add(line)
            continue
        matched.add(hash(line))
        same = out.get(tuple(c.known.id for c in ranked))
        if same is None:
            out[tuple(c.known.id for c in ranked)] = answer.Matches(
                [(c, index) for c in ranked], 1, [(index, line)]
            )
            continue
        same.count += 1
        if len(same.examples) < answer.EXAMPLES:
            same.examples.append((index, line))
        for place, c in enumerate(ranked):
            if c.score > same.best[place][0].score:
                same.best[place] = (c, index)
    return list(out.values())


def test_the_corpus_and_a_training_log_give_the_answers_every_line_matched_in_turn_gives(matcher):
    # The corpus's lines, then numbered as a log numbers them (each twice: the second of a shape is not
    # matched again), among training progress; in blocks as logfile gives them.
    lines = list(itertools.islice(training_lines(7), 5_000))
    lines[1000:1000] = CORPUS_LINES + [f"{n}| {line}" for n, line in enumerate(CORPUS_LINES * 2)]
    blocks = [lines[i : i + 700] for i in range(0, len(lines), 700)]
    found, total = answer.triage(blocks, matcher)
    assert total == len(lines)
    assert _answer(found) == _answer(every_line(lines, matcher))
    assert len(found) > 50


def test_a_real_log_in_a_large_training_log_gives_the_answer_it_gives_alone(tmp_path):
    # The real messages of the corpus as a log, then the same lines among ~4 MB of training progress
    # (several of logfile's 1 MiB pieces), a few here and there.
    alone = tmp_path / "alone.log"
    alone.write_text("\n".join(CORPUS_LINES) + "\n", encoding="utf-8")
    body = training_lines(24)
    buried = tmp_path / "buried.log"
    added = 0
    with open(buried, "w", encoding="utf-8") as f:
        for n, line in enumerate(CORPUS_LINES):
            filler = list(itertools.islice(body, 800 if n % 50 == 0 else 60))
            f.write("\n".join(filler + [line]) + "\n")
            added += len(filler)
    assert buried.stat().st_size > 3_000_000
    first = run_cli("explain", "--log", str(alone), "--snapshot", str(H200))
    second = run_cli("explain", "--log", str(buried), "--snapshot", str(H200))
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr
    head = f"Read {len(CORPUS_LINES)} line(s): "
    assert first.stdout.startswith(head)
    assert second.stdout == first.stdout.replace(head, f"Read {len(CORPUS_LINES) + added} line(s): ", 1)


@given(data=st.data())
@settings(max_examples=2000, deadline=None, derandomize=True)
def test_lines_of_one_shape_match_alike(matcher, the_gate, data):
    # A corpus line, or a line made of known words, and the same line with other numbers in the places of
    # its numbers (the known texts' own among them): where the gate gives the two one shape, both match
    # (confidently) or neither does; with the same candidates where the gate says they match alike.
    texts = [t for k in matcher.knowns for t in k.errors]
    numbers = sorted({n for t in texts + CORPUS_LINES for n in gate.DIGITS.findall(t)})
    line = data.draw(st.one_of(st.sampled_from(CORPUS_LINES), made_of_known_words(texts)))
    line = data.draw(st.sampled_from(["", "12| ", "step 7 ", "Error 7 "])) + line
    other = gate.DIGITS.sub(lambda m: data.draw(st.sampled_from(numbers + ["0", "7", "123456"])), line)
    shape = the_gate.shape(line)
    assert shape == "" or gate.DIGITS.sub("#", shape) == gate.DIGITS.sub("#", line)
    if shape and the_gate.shape(other) == shape:
        assert confident(matcher, line) == confident(matcher, other)
        if the_gate.same_match(line):
            assert the_gate.same_match(other)
            assert candidates(matcher, line) == candidates(matcher, other)


def candidates(matcher, line):
    return [(c.known.id, c.score, c.how, c.text, c.shared) for c in matcher.rank(line, 8) if c.confident]


def test_a_shape_keeps_the_numbers_that_are_read(the_gate):
    # Pieces of real lines: a version (corpus/cuda_frameworks.yaml), an error code (corpus/first_set.yaml),
    # each with its thread there; the kernel log's Xid line tests/test_explain.py reads.
    assert the_gate.shape("12| PyTorch (11.8). Please make sure") == "#| PyTorch (11.8). Please make sure"
    assert the_gate.shape("7 cu118 Error 802: system not yet") == "# cu118 Error 802: system not yet"
    assert the_gate.shape("NVRM: Xid (PCI:0000:3b:00): 79, pid=1234") == ""


def test_a_text_with_a_number_a_shape_masks_is_matched_line_by_line(matcher, the_gate):
    # The known texts (each rule cites where it was seen) whose numbers a shape masks (`(803 vs. 0)`,
    # `for hca 0 'mlx5_0'`): the text itself scores 1, the same line with another number 0.95. Such a line
    # is not given its shape's candidates.
    texts = [t for k in matcher.knowns for t in k.errors]
    masked = [t for t in texts if the_gate.shape(t) and the_gate.shape(t) != t]
    assert masked
    differ = 0
    for text in masked:
        other = gate.DIGITS.sub(lambda m: "7" if m.group(0) != "7" else "8", text)
        if the_gate.shape(other) == the_gate.shape(text):
            assert not the_gate.same_match(text) and not the_gate.same_match(other)
            differ += candidates(matcher, text) != candidates(matcher, other)
    assert differ
