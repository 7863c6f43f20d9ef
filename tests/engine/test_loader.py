"""Rule files are validated strictly: every problem at once, each with file, line and rule id. The loader
also lists the rule packs that replace a shipped rule, rewrites relative item names (`.pcie.width_current`)
and checks the resolvers that fix steps name."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gpudoctor.datafiles import shipped_rules_dir
from gpudoctor.engine.evaluate import evaluate_rule
from gpudoctor.engine.loader import RuleLoadError, load_rules, parse_rules
from gpudoctor.engine.model import FixStep
from gpudoctor.facts import Facts, known

from conftest import H200, run_cli

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
        "ge, version_eq, version_ne, version_lt, version_le, version_gt, version_ge, version_in, in, not_in, "
        "contains, matches, bits_any, bits_all, bits_none, exists, unknown",
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
    assert all(r.id.startswith(("GD-", "POLICY-")) for r in rules)


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


# --- overrides ----------------------------------------------------------------------------------------------
# No shipped rule changes silently: a rule pack that replaces one (`overrides: true`) is listed in every
# report, with where it came from; and `rules validate` refuses the id clashes that `check --rules` refuses.

# Where the shipped GD-FW-004 starts: reports name it by file and line.
FW004_LINE = next(
    n
    for n, line in enumerate((shipped_rules_dir() / "frameworks.yaml").read_text().splitlines(), 1)
    if line.strip() == "- id: GD-FW-004"
)
FW004 = f"frameworks.yaml:{FW004_LINE}"

# Replaces the shipped GD-FW-004, which fires on the H200 fixture, with a rule that never fires.
SILENCER = """\
rules:
  - id: GD-FW-004
    title: Never mind
    severity: info
    category: frameworks
    when: {fact: gpus.count, lt: 0}
    message: never
    why: silenced
    silent: The replacement never fires, so no program meets it.
    overrides: true
"""


def test_reports_list_every_overridden_shipped_rule(tmp_path):
    pack = tmp_path / "silencer.yaml"
    pack.write_text(SILENCER)
    text = run_cli("check", "--snapshot", str(H200), "--rules", str(pack))
    assert text.returncode == 0, text.stderr
    assert "GD-FW-004" not in text.stdout.split("Findings")[-1]
    lines = [line for line in text.stdout.splitlines() if line.startswith("Overridden")]
    assert lines == [f"Overridden  GD-FW-004 (shipped, {FW004}) replaced by {pack}:2"]
    data = json.loads(
        run_cli("check", "--snapshot", str(H200), "--rules", str(pack), "--format", "json").stdout
    )
    assert data["overrides"] == [{"id": "GD-FW-004", "shipped": FW004, "by": f"{pack}:2"}]
    md = run_cli("check", "--snapshot", str(H200), "--rules", str(pack), "--format", "markdown").stdout
    assert f"| Overridden | GD-FW-004 (shipped, {FW004}) replaced by {pack}:2 |" in md.splitlines()


def test_reports_without_overrides_say_nothing_of_them():
    data = json.loads(run_cli("check", "--snapshot", str(H200), "--format", "json").stdout)
    assert "overrides" not in data
    assert "Overridden" not in run_cli("check", "--snapshot", str(H200)).stdout
    assert "Overridden" not in run_cli("check", "--snapshot", str(H200), "--format", "markdown").stdout


def test_validate_refuses_a_clash_with_a_shipped_id_as_check_does(tmp_path):
    clash = tmp_path / "clash.yaml"
    clash.write_text(SILENCER.replace("    overrides: true\n", ""))
    validate = run_cli("rules", "validate", str(clash))
    check = run_cli("check", "--snapshot", str(H200), "--rules", str(clash))
    assert validate.returncode == check.returncode == 2
    for r in (validate, check):
        assert f"{clash}:2: GD-FW-004: at id: duplicate id (first defined at " in r.stderr
        assert f"{FW004}); add 'overrides: true' to replace it" in r.stderr
    ok = tmp_path / "ok.yaml"
    ok.write_text(SILENCER)
    assert (
        run_cli("rules", "validate", str(ok)).returncode,
        run_cli("rules", "validate", str(ok)).stdout,
    ) == (
        0,
        "1 rule(s) valid\n",
    )


def test_validating_the_shipped_rules_themselves_is_no_clash():
    r = run_cli("rules", "validate", "rules")
    assert r.returncode == 0 and r.stdout.endswith(" rule(s) valid\n"), r.stderr


def test_a_copy_of_the_shipped_rules_is_no_clash_but_an_edited_copy_is(tmp_path):
    # What a non-editable install sees when it validates the source tree's rules/: copies, not the same files.
    copy = tmp_path / "rules"
    copy.mkdir()
    shipped = Path(__file__).resolve().parents[2] / "rules" / "frameworks.yaml"
    (copy / "frameworks.yaml").write_bytes(shipped.read_bytes())
    r = run_cli("rules", "validate", str(copy))
    assert r.returncode == 0 and r.stdout.endswith(" rule(s) valid\n"), r.stderr
    # Changed by one byte it is another file: its ids clash with the shipped ones, as `check --rules` says.
    (copy / "frameworks.yaml").write_bytes(shipped.read_bytes() + b"\n")
    r = run_cli("rules", "validate", str(copy))
    assert r.returncode == 2 and "GD-FW-004: at id: duplicate id" in r.stderr


# --- relative names -----------------------------------------------------------------------------------------
# A for_each rule names its item's facts relatively (`.pcie.width_current`); the old `gpus[i].` form keeps
# working, and both load to the same rule.

RELATIVE = """\
rules:
  - id: USR-PCIE-001
    title: "Narrow link on {.name}"
    severity: warning
    category: gpu
    for_each: gpus
    when:
      all:
        - {fact: .pcie.width_current, lt: {fact: ".pcie.width_max"}}
        - not: {fact: .name, matches: "A100"}
        - {fact: gpus.count, ge: 1}
    message: "GPU {.index} is x{.pcie.width_current} of x{.pcie.width_max}; {.memory.total_bytes|size}"
    why: Slow copies on {.bus_id}.
    fix:
      - kind: command
        argv: [nvidia-smi, -i, "{.index}"]
        text: "GPU {.index}"
"""

ABSOLUTE = re.sub(r'fact: "?\.([a-z_.]+)"?', r'fact: "gpus[i].\1"', RELATIVE).replace("{.", "{gpus[i].")


def test_relative_and_absolute_names_load_to_the_same_rule():
    (rel,), p1 = parse_rules(RELATIVE, "r.yaml")
    (abs_,), p2 = parse_rules(ABSOLUTE, "r.yaml")
    assert p1 == p2 == []
    assert "gpus[i]." in ABSOLUTE and "{." not in ABSOLUTE
    assert rel == abs_
    assert (
        rel.message == "GPU {gpus[i].index} is x{gpus[i].pcie.width_current} of x{gpus[i].pcie.width_max}; "
        "{gpus[i].memory.total_bytes|size}"
    )
    assert rel.fix[0].argv == ("nvidia-smi", "-i", "{gpus[i].index}")


def test_a_relative_rule_evaluates_per_item():
    (rule,), _ = parse_rules(RELATIVE, "r.yaml")
    facts = Facts(
        {
            "gpus.count": known(2, "t"),
            **{f"gpus[{i}].index": known(i, "t") for i in range(2)},
            **{f"gpus[{i}].name": known("NVIDIA H200", "t") for i in range(2)},
            "gpus[0].pcie.width_current": known(16, "t"),
            "gpus[1].pcie.width_current": known(8, "t"),
            **{f"gpus[{i}].pcie.width_max": known(16, "t") for i in range(2)},
            **{f"gpus[{i}].memory.total_bytes": known(1 << 30, "t") for i in range(2)},
        }
    )
    result = evaluate_rule(rule, facts)
    assert [f.message for f in result.findings] == ["GPU 1 is x8 of x16; 1 GiB"]
    assert result.findings[0].fix[0].argv == ("nvidia-smi", "-i", "1")


def test_a_relative_name_needs_for_each():
    text = RELATIVE.replace("    for_each: gpus\n", "")
    rules, problems = parse_rules(text, "r.yaml")
    assert rules == []
    messages = [str(p) for p in problems]
    assert (
        "r.yaml:8: USR-PCIE-001: at when.all[0].fact: '.pcie.width_current' names a fact of the item, "
        "but the rule has no for_each" in messages
    )
    assert any("at message: '.index' names a fact of the item" in m for m in messages)
    assert any("at fix[0].argv: '.index' names a fact of the item" in m for m in messages)


def test_a_relative_name_must_be_a_fact_of_the_item():
    rules, problems = parse_rules(RELATIVE.replace(".pcie.width_current, lt", ".no_such, lt"), "r.yaml")
    assert [p.message for p in problems] == [
        "unknown fact 'gpus[i].no_such' (see docs/facts.md for the names facts have)"
    ]


# --- resolver steps -----------------------------------------------------------------------------------------
# Fix steps that name a resolver: the loader checks the name and args against the registry, the engine carries
# them unresolved in findings.

RULE = """\
rules:
  - id: USR-FW-001
    title: CPU torch
    severity: error
    category: frameworks
    for_each: frameworks
    when: {{fact: "frameworks[i].build", eq: cpu}}
    message: "torch {{frameworks[i].version}} is CPU-only"
    why: w
    fix:
{step}
"""


def load(step: str):
    return parse_rules(RULE.format(step=step), "r.yaml")


def test_a_resolver_step_loads_with_its_args():
    rules, problems = load(
        "      - kind: pip\n        resolver: torch\n        args: {minor_compat: avoid}\n"
        '        text: "Reinstall torch {frameworks[i].version}"'
    )
    assert problems == []
    assert rules[0].fix == (
        FixStep("pip", (), "Reinstall torch {frameworks[i].version}", "torch", (("minor_compat", "avoid"),)),
    )


@pytest.mark.parametrize(
    ("step", "expected"),
    [
        (
            "      - {kind: pip, resolver: pytorch, text: t}",
            "r.yaml:11: USR-FW-001: at fix[0].resolver: unknown resolver 'pytorch' (expected one of torch, "
            "tensorflow, jax, onnxruntime, framework, driver, base_image)",
        ),
        (
            "      - {kind: pip, resolver: torch, args: {cuda: '12.4'}, text: t}",
            "r.yaml:11: USR-FW-001: at fix[0].args.cuda: resolver torch takes no argument 'cuda' "
            "(expected: minor_compat, downgrade)",
        ),
        (
            "      - {kind: pip, resolver: torch, args: {minor_compat: never}, text: t}",
            "r.yaml:11: USR-FW-001: at fix[0].args.minor_compat: expected one of allow, avoid, got 'never'",
        ),
        (
            "      - {kind: driver, resolver: driver, args: {cuda: ''}, text: t}",
            "r.yaml:11: USR-FW-001: at fix[0].args.cuda: expected a non-empty string",
        ),
        (
            "      - {kind: pip, resolver: torch, args: [minor_compat], text: t}",
            "r.yaml:11: USR-FW-001: at fix[0].args: expected a mapping of argument names to strings",
        ),
        (
            "      - {kind: pip, resolver: torch, argv: [pip, install, torch], text: t}",
            "r.yaml:11: USR-FW-001: at fix[0]: a step names a resolver or gives 'argv', not both",
        ),
        (
            "      - {kind: pip, resolver: torch}",
            "r.yaml:11: USR-FW-001: at fix[0]: a step that names a resolver needs 'text' (what reports show "
            "for it)",
        ),
        (
            "      - {kind: pip, argv: [pip, install, torch], args: {minor_compat: avoid}}",
            "r.yaml:11: USR-FW-001: at fix[0].args: 'args' go with 'resolver'",
        ),
    ],
)
def test_bad_resolver_steps_are_refused(step, expected):
    rules, problems = load(step)
    assert (rules, [str(p) for p in problems]) == ([], [expected])


def test_the_engine_carries_a_resolver_step_unresolved():
    rules, _ = load(
        "      - {kind: pip, resolver: framework, args: {minor_compat: avoid},"
        ' text: "torch {frameworks[i].version}"}'
    )
    facts = Facts(
        {
            "frameworks.count": known(1, "t"),
            "frameworks[0].build": known("cpu", "t"),
            "frameworks[0].version": known("2.5.1", "t"),
        }
    )
    result = evaluate_rule(rules[0], facts)
    assert result.findings[0].fix == (
        FixStep("pip", (), "torch 2.5.1", "framework", (("minor_compat", "avoid"),)),
    )


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
        "ne, lt, le, gt, ge, version_eq, version_ne, version_lt, version_le, version_gt, version_ge, "
        "version_in, in, not_in, contains, matches, bits_any, bits_all, bits_none, exists, unknown",
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
