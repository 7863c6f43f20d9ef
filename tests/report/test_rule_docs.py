"""Rule pages name the file a rule is defined in, as the source tree lays it out."""

from __future__ import annotations

from gpudoctor.report.rule_docs import documented_rules, rule_markdown


def test_a_rule_page_names_its_file_under_rules():
    by_id = {r.id: r for r in documented_rules()}
    where = {rid: rule_markdown(by_id[rid]).split("**Defined in:** ")[1].split()[0] for rid in by_id}
    assert where["GD-PCIE-001"] == "`rules/gpu.yaml`"
    assert where["GD-BENCH-001"] == "`rules/bench/bench.yaml`"  # was `rules/bench.yaml`: no such file
    assert where["GD-FLEET-ECC-001"] == "`rules/fleet/peers.yaml`"
