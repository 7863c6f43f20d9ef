"""Rules as text (report/rules_text.py): the `rules list` table and `rules show`, on shipped rules."""

from __future__ import annotations

import pytest

from gpudoctor.datafiles import shipped_rules_dir
from gpudoctor.engine.loader import load_rules
from gpudoctor.report.rules_text import rule_detail, rule_table


@pytest.fixture(scope="module")
def rules():
    return {rule.id: rule for rule in load_rules([])}


def test_the_table_is_sorted_by_id_in_aligned_columns(rules):
    chosen = [rules["GD-PCIE-002"], rules["GD-CUDA-001"], rules["GD-BUILD-001"]]
    assert rule_table(chosen).splitlines() == [
        "ID            SEVERITY  AREA        TITLE",
        "GD-BUILD-001  warning   cuda        CUDA extensions would build with another CUDA major than "
        "torch's",
        "GD-CUDA-001   error     cuda        Framework built for a newer CUDA major version than the driver "
        "supports",
        "GD-PCIE-002   warning   gpu         PCIe link below its generation while the GPU is busy",
    ]
    assert rule_table([]) == "ID  SEVERITY  AREA        TITLE\n"


def test_a_rule_that_prints_no_error_says_so(rules):
    rule = rules["GD-PCIE-002"]
    text = (shipped_rules_dir() / "gpu.yaml").read_text(encoding="utf-8")
    line = text[: text.index("- id: GD-PCIE-002")].count("\n") + 1
    lines = rule_detail(rule).splitlines()
    assert lines[:3] == [
        "GD-PCIE-002: PCIe link below its generation while the GPU is busy",
        "severity: warning   area: gpu   for each: gpus",
        f"defined in: {rule.file}:{line}",
    ]
    assert f"no error message: {rule.silent}" in lines
    assert "errors users meet:" not in lines
    assert lines[lines.index("fix:") + 1].startswith("  [manual] Check the slot's PCIe generation setting")
    assert lines[-2:] == [
        "references:",
        "  https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html",
    ]


def test_a_rule_with_error_texts_a_refined_cause_and_a_resolver_step(rules):
    rule = rules["GD-CUDA-001"]
    lines = rule_detail(rule).splitlines()
    start = lines.index("errors users meet:")
    assert lines[start + 1 : start + 1 + len(rule.errors)] == [f"  {e.text}" for e in rule.errors]
    assert "  CUDA driver version is insufficient for CUDA runtime version" in lines
    assert "a more specific cause than: GD-RUNTIME-006" in lines
    (step,) = rule.fix
    assert (
        lines[lines.index("fix:") + 1]
        == f"  [pip] computed by the framework resolver (gpudoctor plan): {step.text}"
    )


def test_the_conditions_are_shown_as_the_generated_docs_word_them(rules):
    lines = rule_detail(rules["GD-NCCL-004"]).splitlines()
    start = lines.index("applies only where (else not applicable):")
    assert lines[start : start + 5] == [
        "applies only where (else not applicable):",
        "  - `gpus.count` > `1`",
        "",
        "fires when:",
        "  - `nccl_paths.finding_count` > `0`",
    ]
    assert "applies only where (else not applicable):" not in rule_detail(rules["GD-CUDA-001"]).splitlines()
