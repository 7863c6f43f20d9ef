"""Safe YAML for rule files (engine/yamlsafe.py): plain data with the line of every value, on the shipped
rule files. The hostile documents (alias bombs, deep nesting, tags, merge keys, duplicates) are in
tests/fuzz/test_fuzz_rules.py::test_hostile_documents_fail_fast_with_a_clear_reason, through both PyYAML
loaders."""

from __future__ import annotations

import pytest
import yaml

from gpudoctor.datafiles import shipped_rules_dir
from gpudoctor.engine.yamlsafe import YamlError, load

GPU_RULES = shipped_rules_dir() / "gpu.yaml"


def line_of(text: str, needle: str, after: str = "") -> int:
    start = text.index(after) if after else 0
    return text[: text.index(needle, start)].count("\n") + 1


def test_a_shipped_rule_file_reads_as_pyyaml_reads_it_with_every_line():
    text = GPU_RULES.read_text(encoding="utf-8")
    data, lines = load(text)
    assert data == yaml.safe_load(text)
    i = next(n for n, rule in enumerate(data["rules"]) if rule["id"] == "GD-PCIE-002")
    assert lines[("rules", i)] == line_of(text, "- id: GD-PCIE-002")
    assert lines[("rules", i, "severity")] == line_of(text, "severity: warning", "id: GD-PCIE-002")
    assert lines[("rules", i, "when", "all", 1)] == line_of(text, "{fact: .utilization.gpu, ge: 10}")
    assert len(lines) > 500  # every value of the file, not just the rules


def test_an_empty_document_is_none():
    assert load("") == (None, {})
    assert load("# only a comment\n") == (None, {})


def test_a_syntax_error_names_its_line():
    text = GPU_RULES.read_text(encoding="utf-8")
    start = text.index("severity: warning", text.index("id: GD-PCIE-002"))
    at = text[:start].count("\n") + 1
    broken = text[:start] + "severity: [warning" + text[start + len("severity: warning") :]
    with pytest.raises(YamlError) as e:
        load(broken)
    assert e.value.message.startswith("not valid YAML: ")
    assert at <= e.value.line <= at + 2
