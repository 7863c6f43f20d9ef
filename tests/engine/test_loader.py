"""Rule files are validated strictly: every problem at once, each with file, line and rule id."""

from __future__ import annotations

import pytest

from gpudoctor.engine.loader import RuleLoadError, load_rules, parse_rules

GOOD = """\
rules:
  - id: USR-PCIE-001
    title: Narrow link
    severity: warning
    category: gpu
    for_each: gpus
    when: {fact: "gpus[i].pcie.width_current", lt: 16}
    message: "GPU {gpus[i].index} is x{gpus[i].pcie.width_current}"
    why: Slow copies.
    fix:
      - kind: command
        argv: [nvidia-smi, -i, "{gpus[i].index}"]
"""

BAD = """\
rules:
  - id: USR-X-001
    title: Bad operator
    severity: warning
    category: gpu
    when:
      all:
        - {fact: driver.version, version_gt: "525"}
        - {fact: driver.branch, lte: 525}
    message: m
    why: w
  - id: usr-lowercase
    title: t
    severity: fatal
    category: gpus
    when: {fact: no.such.fact, eq: 1}
    message: "{also.missing}"
    why: w
    colour: red
  - id: USR-X-003
    title: missing when
    severity: info
    category: system
    message: m
    why: w
    fix:
      - kind: pip
        text: no argv
"""


def test_good_file_loads():
    rules, problems = parse_rules(GOOD, "user.yaml")
    assert problems == []
    assert [r.id for r in rules] == ["USR-PCIE-001"]
    assert rules[0].fix[0].argv == ("nvidia-smi", "-i", "{gpus[i].index}")


def test_every_problem_is_reported_with_file_line_and_rule_id():
    _, problems = parse_rules(BAD, "bad.yaml")
    text = [str(p) for p in problems]
    assert text == [
        "bad.yaml:9: USR-X-001: at when.all[1].lte: unknown operator 'lte'; "
        "expected one of: eq, ne, lt, le, gt, "
        "ge, version_eq, version_ne, version_lt, version_le, version_gt, version_ge, in, not_in, contains, "
        "matches, bits_any, bits_all, bits_none, exists, unknown",
        "bad.yaml:19: usr-lowercase: at colour: unknown key (expected: id, title, severity, category, when, "
        "message, why, applies, for_each, references, errors, silent, refines, catch_all, fix, overrides)",
        "bad.yaml:12: usr-lowercase: at id: an id looks like GD-PCIE-001 (letters, digits, dashes), "
        "got 'usr-lowercase'",
        "bad.yaml:14: usr-lowercase: at severity: expected one of error, warning, info, got 'fatal'",
        "bad.yaml:15: usr-lowercase: at category: expected one of driver, gpu, cuda, cudnn, frameworks, "
        "container, system, fleet, got 'gpus'",
        "bad.yaml:16: usr-lowercase: at when.fact: unknown fact 'no.such.fact' (see docs/facts.md for the "
        "names facts have)",
        "bad.yaml:17: usr-lowercase: at message: unknown fact 'also.missing' (see docs/facts.md for the "
        "names facts have)",
        "bad.yaml:20: USR-X-003: missing required key 'when'",
        "bad.yaml:27: USR-X-003: at fix[0]: a pip step needs 'argv'",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("rules: [", "x.yaml:2: not valid YAML"),
        ("- just a list", "x.yaml:1: a rule file is a mapping with a 'rules' list"),
        ("rules: {}", "x.yaml:1: at rules: expected a list of rules"),
        ("rules: []\nextra: 1", "x.yaml:2: at extra: unknown top-level key"),
        ("rules:\n  - a: 1\n    a: 2", "x.yaml:3: duplicate key 'a'"),
        (
            "rules: !!python/object:os.system []",
            "x.yaml:1: unsupported tag tag:yaml.org,2002:python/object:os.system",
        ),
    ],
)
def test_malformed_files(text, expected):
    _, problems = parse_rules(text, "x.yaml")
    assert problems and str(problems[0]).startswith(expected)


def test_iterating_facts_need_for_each():
    text = GOOD.replace("    for_each: gpus\n", "")
    _, problems = parse_rules(text, "u.yaml")
    assert "uses [i] but the rule has no for_each" in str(problems[0])


def test_bad_regex_and_bad_version_values():
    text = GOOD.replace("lt: 16}", 'matches: "(unclosed"}')
    _, problems = parse_rules(text, "u.yaml")
    assert "not a valid regular expression" in str(problems[0])
    text = GOOD.replace(
        '{fact: "gpus[i].pcie.width_current", lt: 16}', '{fact: driver.version, version_lt: "abc"}'
    )
    _, problems = parse_rules(text, "u.yaml")
    assert "'version_lt' expects a version" in str(problems[0])


def test_duplicate_id_is_an_error_unless_it_overrides(tmp_path):
    a = tmp_path / "a.yaml"
    a.write_text(GOOD)
    b = tmp_path / "b.yaml"
    b.write_text(GOOD)
    with pytest.raises(RuleLoadError) as e:
        load_rules([str(tmp_path)], include_shipped=False)
    assert "b.yaml:2: USR-PCIE-001: at id: duplicate id (first defined at" in str(e.value)
    b.write_text(GOOD.replace("    title: Narrow link", "    title: Narrower\n    overrides: true"))
    rules = load_rules([str(tmp_path)], include_shipped=False)
    assert [r.title for r in rules] == ["Narrower"]


def test_user_rules_load_beside_the_shipped_ones(tmp_path):
    f = tmp_path / "mine.yaml"
    f.write_text(GOOD)
    rules = load_rules([str(f)])
    ids = {r.id for r in rules}
    assert "USR-PCIE-001" in ids and "GD-PCIE-001" in ids


def test_missing_path_is_a_problem():
    with pytest.raises(RuleLoadError) as e:
        load_rules(["/no/such/rules.yaml"], include_shipped=False)
    assert str(e.value) == "/no/such/rules.yaml:0: no such file or directory"


def test_shipped_rules_are_valid():
    rules = load_rules([], include_shipped=True)
    assert len(rules) >= 20
    assert all(r.id.startswith("GD-") for r in rules)


def test_a_directory_without_rule_files_is_a_problem(tmp_path):
    # Issue 24: `rules validate emptydir` said "0 rule(s) valid" and exited 0, so a typo in a CI path
    # (or a pack that was never copied) passed as valid. It names the directory and exits 2.
    from conftest import run_cli

    empty = tmp_path / "emptydir"
    empty.mkdir()
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "README.md").write_text("no rules here\n")
    for folder in (empty, tmp_path / "notes"):
        r = run_cli("rules", "validate", str(folder))
        assert r.returncode == 2, r.stdout
        assert r.stderr == (
            f"{folder}:0: no rule files (*.yaml, *.yml) in this directory\n1 problem(s) found\n"
        )
        assert r.stdout == ""


APPLIES = """\
rules:
  - id: USR-APPLIES-001
    title: Small /dev/shm in a container
    severity: warning
    category: container
    applies: {fact: container.detected, eq: true}
    when: {fact: system.shm_bytes, lt: 1073741824}
    message: "/dev/shm is {system.shm_bytes|size}"
    why: w
"""


def test_applies_loads_as_the_rule_wrote_it():
    (rule,), problems = parse_rules(APPLIES, "user.yaml")
    assert problems == []
    assert rule.applies == {"fact": "container.detected", "eq": True}
    assert rule.when == {"fact": "system.shm_bytes", "lt": 1073741824}


def test_applies_is_validated_with_the_grammar_and_types_of_when():
    text = APPLIES.replace(
        "applies: {fact: container.detected, eq: true}",
        "applies:\n      all:\n        - {fact: container.detected, eq: yes-please}\n"
        "        - {fact: no.such.fact, eq: 1}\n        - {fact: gpus.count, lte: 2}",
    )
    _, problems = parse_rules(text, "user.yaml")
    assert [str(p) for p in problems] == [
        "user.yaml:8: USR-APPLIES-001: at applies.all[0].eq: 'eq' compares container.detected, declared "
        "bool, with 'yes-please'",
        "user.yaml:9: USR-APPLIES-001: at applies.all[1].fact: unknown fact 'no.such.fact' (see "
        "docs/facts.md for the names facts have)",
        "user.yaml:10: USR-APPLIES-001: at applies.all[2].lte: unknown operator 'lte'; expected one of: eq, "
        "ne, lt, le, gt, ge, version_eq, version_ne, version_lt, version_le, version_gt, version_ge, in, "
        "not_in, contains, matches, bits_any, bits_all, bits_none, exists, unknown",
    ]


def test_applies_names_no_fact_of_an_item_it_is_judged_once_per_host():
    text = APPLIES.replace(
        "category: container\n", "category: container\n    for_each: frameworks\n"
    ).replace(
        "applies: {fact: container.detected, eq: true}",
        'applies: {any: [{fact: .build, eq: cuda}, {fact: "frameworks[i].name", eq: torch}]}',
    )
    _, problems = parse_rules(text, "user.yaml")
    assert [str(p) for p in problems] == [
        "user.yaml:7: USR-APPLIES-001: at applies: names a fact of an item (.build, frameworks[i].name): "
        "applies is judged once for the host, before for_each; put it in when"
    ]
    _, problems = parse_rules(text.replace("    for_each: frameworks\n", ""), "user.yaml")
    assert "'.build' names a fact of the item, but the rule has no for_each" in str(problems[0])
