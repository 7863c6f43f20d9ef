"""Rule files from strangers are data: any text or bytes give rules or loader Problems (file, line, rule id,
reason), never an exception, and hostile documents (alias bombs, huge or deeply nested files, binary junk)
are refused fast with a clear reason."""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from gpudoctor.engine import yamlsafe
from gpudoctor.engine.evaluate import evaluate
from gpudoctor.engine.loader import (
    FIX_KEYS,
    OPTIONAL,
    REQUIRED,
    Problem,
    RuleLoadError,
    load_file,
    load_rules,
    parse_rules,
)
from gpudoctor.engine.model import CATEGORIES, FIX_KINDS, SEVERITIES, Rule
from gpudoctor.engine.template import FILTERS
from gpudoctor.facts import LISTS, SCHEMA

from .strategies import conditions, facts_trees, json_values, lines_like, referenced, text, token

ROOT = Path(__file__).parents[2]
SHIPPED_LINES = [
    line
    for f in sorted((ROOT / "rules").glob("*.yaml"))
    for line in f.read_text(encoding="utf-8").splitlines()
]
YAML_TOKENS = st.sampled_from(
    [
        "&a ", "*a", "<<: *a", "!!python/object:os.system", "!!binary", "!!timestamp", "!!set", "!!omap",
        "!!int", "!!float 1e999", "? ", "- ", ": ", "{", "}", "[", "]", "|", ">", "%YAML 1.1", "---", "...",
        "!tag", "\t", "2001-13-45", "0x", "0o", "1_000", "190:20:30", ".inf", "~", "null", "yes", "on",
        "'", '"', "#", "\\x", "\\u", "1" * 5000, "[" * 100, "{a: " * 70,
    ]
)  # fmt: skip
yaml_text = st.one_of(
    text,
    lines_like(SHIPPED_LINES),
    st.lists(st.one_of(YAML_TOKENS, token, st.just("\n"), st.just("  ")), max_size=40).map("".join),
)


def assert_problems(problems: list) -> None:
    for p in problems:
        assert isinstance(p, Problem) and isinstance(p.line, int) and p.message
        assert str(p).startswith(p.file)


# --- yamlsafe and parse_rules on any text ------------------------------------------------------------------


@given(yaml_text)
def test_yamlsafe_gives_data_or_yaml_error(text_):
    try:
        data, lines = yamlsafe.load(text_)
    except yamlsafe.YamlError as e:
        assert e.message and isinstance(e.line, int)
        return
    assert all(isinstance(k, tuple) and isinstance(v, int) and v >= 1 for k, v in lines.items())
    if data is not None:
        assert () in lines


@given(yaml_text)
def test_parse_rules_gives_rules_or_problems(text_):
    rules, problems = parse_rules(text_, "fuzz.yaml")
    assert all(isinstance(r, Rule) for r in rules)
    assert_problems(problems)
    assert all(p.file == "fuzz.yaml" for p in problems)


@given(st.binary(max_size=400))
def test_binary_junk_in_a_rule_file(data):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "junk.yaml"
        path.write_bytes(data)
        rules, problems = load_file(path)
    assert_problems(problems)
    assert all(isinstance(r, Rule) for r in rules)


@given(st.binary(min_size=1, max_size=100))
def test_invalid_utf8_is_a_problem_not_a_crash(junk):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bad.yaml"
        path.write_bytes(b"rules:\n  - id: X-1\n    title: " + b"\xff\xfe" + junk + b"\n")
        rules, problems = load_file(path)
    assert rules == [] and len(problems) >= 1
    assert_problems(problems)


# --- rule-shaped structures, dumped to YAML ---------------------------------------------------------------

valid_version = st.from_regex(r"\A[0-9]{1,4}(\.[0-9]{1,4}){0,3}\Z")
fact_placeholders = st.builds(
    lambda name, flt: "{" + name + (f"|{flt}" if flt else "") + "}",
    st.sampled_from([s.name for s in SCHEMA if "[]" not in s.name]),
    st.one_of(st.none(), st.sampled_from(sorted(FILTERS))),
)
templates = (
    st.lists(
        st.one_of(st.text(alphabet="abc XYZ.,:%", max_size=10), fact_placeholders), min_size=1, max_size=4
    )
    .map("".join)
    .filter(str.strip)
)


@st.composite
def valid_rules(draw) -> dict:
    for_each = draw(st.one_of(st.none(), st.sampled_from(LISTS)))
    kind = draw(st.sampled_from(FIX_KINDS))
    step: dict = {"kind": kind}
    if kind not in ("manual", "env"):
        step["argv"] = draw(
            st.lists(
                st.one_of(st.text(alphabet="abcxyz-=/.", min_size=1, max_size=8), fact_placeholders),
                min_size=1,
                max_size=4,
            )
        )
    if kind in ("manual", "env") or draw(st.booleans()):
        step["text"] = draw(templates)
    rule = {
        "id": draw(st.from_regex(r"\A[A-Z][A-Z0-9]{0,4}(-[A-Z0-9]{1,4}){1,3}\Z")),
        "title": draw(templates),
        "severity": draw(st.sampled_from(SEVERITIES)),
        "category": draw(st.sampled_from(CATEGORIES)),
        "when": draw(conditions(for_each, max_leaves=6)),
        "message": draw(templates),
        "why": draw(templates),
        "references": draw(st.lists(st.text(max_size=20), max_size=2)),
        # an error text is a string or {text, source}, never blank
        "errors": draw(
            st.lists(
                st.one_of(
                    st.text(min_size=1, max_size=20).filter(str.strip),
                    st.fixed_dictionaries(
                        {"text": st.text(min_size=1, max_size=20).filter(str.strip)},
                        optional={"source": st.text(max_size=20)},
                    ),
                ),
                max_size=2,
            )
        ),
        "fix": [step],
        "overrides": draw(st.booleans()),
    }
    if for_each is not None:
        rule["for_each"] = for_each
    return rule


def _dump(doc) -> str:
    return yaml.safe_dump(doc, allow_unicode=True, sort_keys=False)


@given(st.lists(valid_rules(), min_size=1, max_size=3, unique_by=lambda r: r["id"]), st.data())
def test_valid_rules_load_exactly_and_evaluate_on_any_facts(raw_rules, data):
    facts = data.draw(facts_trees(sorted(referenced(raw_rules))))
    rules, problems = parse_rules(_dump({"rules": raw_rules}), "gen.yaml")
    assert problems == []
    assert [r.id for r in rules] == [r["id"] for r in raw_rules]
    for result in evaluate(rules, facts):
        assert result.status in ("fired", "passed", "unknown", "not_applicable")
        for finding in result.findings:
            assert isinstance(finding.message, str) and isinstance(finding.why, str)
            for step in finding.fix:
                assert step.kind in FIX_KINDS and all(isinstance(a, str) for a in step.argv)


def _corrupt(rule: dict, keys: list, junk: list) -> dict:
    out = dict(rule)
    for key, value in zip(keys, junk):
        out[key] = value
    return out


rule_keys = st.sampled_from(
    [*REQUIRED, *OPTIONAL, *FIX_KEYS, "all", "any", "not", "fact", "eq", "junk", 1, True]
)
junk_values = st.one_of(
    json_values,
    st.dictionaries(rule_keys, json_values, max_size=3),
    st.lists(st.dictionaries(rule_keys, json_values, max_size=3), max_size=3),
)


@given(
    valid_rules(),
    st.lists(rule_keys, max_size=3),
    st.lists(junk_values, max_size=3),
    st.one_of(st.none(), st.dictionaries(rule_keys, json_values, max_size=2)),
)
def test_corrupted_rules_give_problems_never_exceptions(rule, keys, junk, top_level_junk):
    doc: dict = {"rules": [_corrupt(rule, keys, junk)]}
    if top_level_junk:
        doc.update(top_level_junk)
    try:
        text_ = _dump(doc)
    except yaml.YAMLError:
        return
    rules, problems = parse_rules(text_, "bad.yaml")
    assert_problems(problems)
    assert len(rules) + len(problems) >= 1


@given(
    st.recursive(
        json_values, lambda inner: st.dictionaries(rule_keys, inner, max_size=4) | st.lists(inner, max_size=4)
    )
)
def test_any_structure_under_rules(doc):
    for wrapped in ({"rules": doc}, {"rules": [doc]}, doc):
        try:
            text_ = _dump(wrapped)
        except yaml.YAMLError:
            continue
        rules, problems = parse_rules(text_, "x.yaml")
        assert_problems(problems)


# --- hostile documents --------------------------------------------------------------------------------------

BILLION_LAUGHS = "\n".join(
    ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]" for i in range(8)]
    + ["rules: *i"]
)
DEEP_FLOW = "rules: " + "[" * 10_000 + "]" * 10_000
DEEP_MAPPINGS = "rules: " + "{a: " * 10_000 + "1" + "}" * 10_000
DEEP_CONDITION = (
    "rules:\n  - id: X-DEEP-1\n    title: t\n    severity: info\n    category: gpu\n"
    "    message: m\n    why: w\n"
    "    when: " + "{not: " * 10_000 + "{fact: driver.version, exists: true}" + "}" * 10_000 + "\n"
)


@pytest.fixture(params=["libyaml", "pure-python"])
def yaml_impl(request, monkeypatch):
    """Both PyYAML loaders: the C one (when built) and the pure-Python fallback."""
    if request.param == "pure-python":
        monkeypatch.delattr(yaml, "CSafeLoader", raising=False)
    elif not hasattr(yaml, "CSafeLoader"):
        pytest.skip("PyYAML without libyaml")
    return request.param


@pytest.mark.parametrize(
    "doc, reason",
    [
        (BILLION_LAUGHS, "more than 200000 values"),
        (DEEP_FLOW, "nest|deep"),
        (DEEP_MAPPINGS, "nest|deep"),
        (DEEP_CONDITION, "nest|deep"),
        ("rules: " + "[" * 65 + "]" * 65, "nested deeper than 64"),
        ("x" * (yamlsafe.MAX_BYTES + 1), "larger than 1024 KiB"),
        ("rules: !!python/object/apply:os.system ['true']", "unsupported tag"),
        ("rules: [2001-13-45]", "bad timestamp value .2001-13-45. \\(month must be in 1..12\\)"),
        ("2001-13-45: x", "bad timestamp value"),
        ("rules: " + "1" * 5000, "bad int value .1111"),
        ("rules: !!timestamp soon", "bad timestamp value 'soon'"),
        ("rules: !!bool maybe", "bad bool value 'maybe'"),
        ("base: &b {x: 1}\nrules: {<<: *b}", "merge keys"),
        ("a: 1\na: 2", "duplicate key"),
    ],
    ids=[
        "billion-laughs", "deep-flow-10k", "deep-mappings-10k", "deep-condition-10k", "depth-65", "huge",
        "python-tag", "bad-date", "bad-date-key", "5000-digit-int", "timestamp-tag", "bool-tag", "merge-key",
        "duplicate-key",
    ],
)  # fmt: skip
def test_hostile_documents_fail_fast_with_a_clear_reason(yaml_impl, doc, reason):
    started = time.monotonic()
    rules, problems = parse_rules(doc, "hostile.yaml")
    assert time.monotonic() - started < 5
    assert rules == [] and len(problems) == 1
    assert problems[0].file == "hostile.yaml"
    assert re.search(reason, problems[0].message), problems[0].message


def test_huge_file_on_disk_is_refused(tmp_path):
    path = tmp_path / "huge.yaml"
    path.write_text("rules:\n" + "# padding\n" * (yamlsafe.MAX_BYTES // 10 + 1), encoding="utf-8")
    rules, problems = load_file(path)
    assert rules == [] and "larger than" in problems[0].message


def test_a_bomb_among_good_files_is_reported_with_its_file(tmp_path):
    (tmp_path / "bomb.yaml").write_text(BILLION_LAUGHS, encoding="utf-8")
    with pytest.raises(RuleLoadError) as info:
        load_rules([str(tmp_path)])
    problems = info.value.problems
    assert [p.file for p in problems] == [str(tmp_path / "bomb.yaml")]


def test_cli_rules_validate_refuses_a_bomb_quickly(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(BILLION_LAUGHS, encoding="utf-8")
    started = time.monotonic()
    r = subprocess.run(
        [sys.executable, "-m", "gpudoctor", "rules", "validate", str(path)],
        capture_output=True, text=True, cwd=ROOT, timeout=60,
    )  # fmt: skip
    assert time.monotonic() - started < 30
    assert r.returncode == 2
    assert f"{path}:" in r.stderr and "more than 200000 values" in r.stderr and "Traceback" not in r.stderr
