"""The records stage (fleet/records.py) and the peer rules over it (rules/fleet/peers.yaml): a fleet with one
seeded outlier per counter raises one finding each, naming its node and GPU; a healthy fleet raises none."""

from __future__ import annotations

import json

from gpudoctor.fleet.load import load_reports
from gpudoctor.fleet.merge import merge
from gpudoctor.fleet.records import COUNTERS, record_facts, records

from .fleetgen import PEER_OUTLIERS, peer_fleet
from conftest import run_cli

PEER_RULES = {
    "ecc_corrected": "GD-FLEET-ECC-001",
    "pcie_replays": "GD-FLEET-PCIE-003",
    "pcie_aer_correctable": "GD-FLEET-AER-001",
    "nvlink_errors": "GD-FLEET-NVLINK-003",
    "xid_events": "GD-FLEET-XID-001",
    "sm_clock_under_load": "GD-FLEET-CLOCK-001",
}


def test_every_counter_has_a_rule_and_a_seeded_outlier():
    assert {c.name for c in COUNTERS} == set(PEER_RULES) == set(PEER_OUTLIERS)


def test_a_healthy_fleet_raises_nothing(tmp_path):
    fleet = merge(load_reports([str(peer_fleet(tmp_path, outliers=False))]))
    assert [r.status for r in fleet.peer_results] == ["passed"] * len(PEER_RULES)
    assert fleet.findings == []


def test_one_seeded_outlier_per_counter_is_one_finding_each(tmp_path):
    fleet = merge(load_reports([str(peer_fleet(tmp_path, outliers=True))]))
    found = {f.rule.id: f for f in fleet.findings}
    assert sorted(found) == sorted(PEER_RULES.values())  # no other fleet rule fires, nothing twice
    assert len(fleet.findings) == len(PEER_RULES)
    for counter, (node, gpu, _, value) in PEER_OUTLIERS.items():
        f = found[PEER_RULES[counter]]
        assert (f.nodes, f.gpus, f.value) == ((node,), ((node, gpu, value),), value), counter
    assert [f.message for f in fleet.findings] == [
        "5210 corrected ECC errors since the driver loaded on peer-node-02 GPU 3, where the median of 64 "
        "NVIDIA H200 GPUs in the fleet is 1",
        "2400 PCIe replays since boot on peer-node-03 GPU 1, where the median of 64 NVIDIA H200 GPUs in the "
        "fleet is 1.5",
        "350 correctable PCIe AER errors since boot on peer-node-04 GPU 6, where the median of 64 NVIDIA "
        "H200 GPUs in the fleet is 1",
        "900 NVLink errors (replays, recoveries and CRC errors, all links) since boot on peer-node-05 GPU 2, "
        "where the median of 64 NVIDIA H200 GPUs in the fleet is 0",
        "12 Xid events in the kernel log window on peer-node-06 GPU 4, where the median of 64 NVIDIA H200 "
        "GPUs in the fleet is 0",
        "SM clock 1410 MHz under NVIDIA H200 matmul_bf16 on peer-node-07 GPU 0, where the median of 64 in "
        "the fleet is 1965 MHz",
    ]


def test_records_are_one_per_distinct_value_of_a_group(tmp_path):
    fleet = merge(load_reports([str(peer_fleet(tmp_path, outliers=True))]), peer_rules=[])
    ecc = [r for r in records(fleet.nodes) if r.counter.name == "ecc_corrected"]
    assert [(r.group, r.value, len(r.members), r.peers, r.median, r.mode) for r in ecc] == [
        ("NVIDIA H200", 0, 21, 64, 1, 0),
        ("NVIDIA H200", 1, 21, 64, 1, 0),
        ("NVIDIA H200", 2, 21, 64, 1, 0),
        ("NVIDIA H200", 5210, 1, 64, 1, 0),
    ]
    facts = record_facts(ecc)
    assert facts.value("peers.count") == 4
    assert facts.value("peers[3].where") == ["peer-node-02 GPU 3"]
    assert facts.value("peers[3].deviation") == 5209 and facts.value("peers[3].ratio") == 5210
    assert not facts.get("peers[0].ratio").known or facts.value("peers[0].ratio") == 0


def test_where_names_twenty_and_counts_the_rest(tmp_path):
    fleet = merge(load_reports([str(peer_fleet(tmp_path, outliers=True))]), peer_rules=[])
    ecc = [r for r in records(fleet.nodes) if r.counter.name == "ecc_corrected"]
    where = record_facts(ecc).value("peers[0].where")  # 21 GPUs have 0 corrected errors
    assert len(where) == 21 and where[0] == "peer-node-01 GPU 2" and where[-1] == "and 1 more"


def test_fewer_than_three_peers_are_not_compared(tmp_path):
    from .fleetgen import report, write

    write(tmp_path, "two.json", report("node-2", gpus=2))  # two H200s: no median worth the name
    write(tmp_path, "three.json", report("node-3", gpus=3, every_gpu={"name": "NVIDIA H100 80GB HBM3"}))
    fleet = merge(load_reports([str(tmp_path)]), peer_rules=[])
    ecc = [r for r in records(fleet.nodes) if r.counter.name == "ecc_corrected"]
    assert [(r.group, r.value, r.peers) for r in ecc] == [("NVIDIA H100 80GB HBM3", 0, 3)]
    assert [(r.counter.name, r.value) for r in records([])] == [(c.name, None) for c in COUNTERS]
    facts = record_facts(records([])[:1])
    assert facts.get("peers[0].value").unknown == (
        "no group of the fleet has 3 or more known values (same GPU model) to compare"
    )


USER_RULE = """\
rules:
  - id: SITE-FLEET-001
    title: Any corrected ECC error above the fleet's median
    severity: error
    category: fleet
    for_each: peers
    when:
      all:
        - {fact: .counter, eq: ecc_corrected}
        - {fact: .deviation, gt: 0}
    message: "{.value|num} corrected ECC errors on {.where|join} (median {.median|num})"
    why: This site replaces GPUs at the first corrected error above their peers.
    silent: Corrected errors print nothing.
"""


def test_a_user_fleet_rule_through_the_cli(tmp_path):
    reports = peer_fleet(tmp_path / "reports", outliers=True)
    rule = tmp_path / "site.yaml"
    rule.write_text(USER_RULE)
    r = run_cli("fleet", str(reports), "--rules", str(rule), "--format", "json")
    assert r.returncode == 1, r.stderr  # the user's rule is an error: --fail-on error
    data = json.loads(r.stdout)
    mine = [f for f in data["fleet_findings"] if f["rule"] == "SITE-FLEET-001"]
    assert [f["message"] for f in mine] == [
        "2 corrected ECC errors on " + ", ".join(_where_ecc(reports, 2)[:20]) + ", and 1 more (median 1)",
        "5210 corrected ECC errors on peer-node-02 GPU 3 (median 1)",
    ]
    assert data["summary"]["fleet"]["error"] == 2
    # Without it, the shipped rules alone: warnings, exit 0 under --fail-on error.
    assert run_cli("fleet", str(reports)).returncode == 0
    # `rules validate` reads it as any rule file; a policy ignores it by id.
    assert run_cli("rules", "validate", str(rule)).stdout == "1 rule(s) valid\n"
    policy = tmp_path / "gpudoctor.toml"
    policy.write_text('[ignore]\n"SITE-FLEET-001" = "replacements are on order"\n')
    with_policy = ("--rules", str(rule), "--policy", str(policy), "--format", "json")
    ignored = run_cli("fleet", str(reports), *with_policy)
    assert ignored.returncode == 0, ignored.stderr
    assert [f["reason"] for f in json.loads(ignored.stdout)["ignored_fleet_findings"]] == [
        "replacements are on order"
    ] * 2


def test_a_bad_user_fleet_rule_is_refused_with_its_problems(tmp_path):
    reports = peer_fleet(tmp_path / "reports", outliers=False)
    rule = tmp_path / "bad.yaml"
    rule.write_text(USER_RULE.replace(".deviation", ".no_such_field"))
    r = run_cli("fleet", str(reports), "--rules", str(rule))
    assert r.returncode == 2
    assert "rule files have problems:" in r.stderr and "SITE-FLEET-001" in r.stderr
    assert "unknown fact 'peers[i].no_such_field'" in r.stderr


def _where_ecc(reports, value):
    """The GPUs of the peer fleet whose corrected ECC count is `value`, as the records name them."""
    fleet = merge(load_reports([str(reports)]), peer_rules=[])
    (record,) = [r for r in records(fleet.nodes) if r.counter.name == "ecc_corrected" and r.value == value]
    return [f"{m.node} GPU {m.gpu}" for m in record.members]


def test_docs_carry_the_counter_table():
    from pathlib import Path

    from gpudoctor.report.fleet_report import counters_table

    docs = (Path(__file__).resolve().parents[2] / "docs" / "fleet.md").read_text()
    assert counters_table() in docs, "docs/fleet.md: paste counters_table() into it"


def test_counters_no_report_knows_are_not_compared(tmp_path):
    # The real H200 capture's report: AER counters unknown ("not recorded in snapshot"), the kernel log not
    # read (xid unknown), no bench. Those rules compare nothing and say so; the others pass.
    from .fleetgen import report, write

    for n in range(1, 4):
        write(tmp_path, f"n{n}.json", report(f"node-{n}"))
    fleet = merge(load_reports([str(tmp_path)]))
    status = {r.rule.id: r.status for r in fleet.peer_results}
    assert status == {
        "GD-FLEET-ECC-001": "passed",
        "GD-FLEET-PCIE-003": "passed",
        "GD-FLEET-AER-001": "not compared",
        "GD-FLEET-NVLINK-003": "passed",
        "GD-FLEET-XID-001": "not compared",
        "GD-FLEET-CLOCK-001": "not compared",
    }
    assert fleet.findings == []
