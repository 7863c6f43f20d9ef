"""The records stage (fleet/records.py) and the fleet rules over it (rules/fleet/): a fleet with one seeded
outlier per counter raises one finding each, naming its node and GPU; a healthy fleet raises none."""

from __future__ import annotations

import json

import pytest

from gpudoctor.fleet.load import ReportError, load_reports, parse_report
from gpudoctor.fleet.merge import merge, verdict
from gpudoctor.fleet.records import COUNTERS, record_facts, records
from gpudoctor.report.fleet_report import fleet_data, render_markdown, render_text

from .fleetgen import PEER_OUTLIERS, bench, bench_report, fleet_of, peer_fleet, report, write
from conftest import run_cli

PEER_RULES = {
    "ecc_corrected": "GD-FLEET-ECC-001",
    "pcie_replays": "GD-FLEET-PCIE-003",
    "pcie_aer_correctable": "GD-FLEET-AER-001",
    "nvlink_errors": "GD-FLEET-NVLINK-003",
    "xid_events": "GD-FLEET-XID-001",
    "sm_clock_under_load": "GD-FLEET-CLOCK-001",
}
# The counters of the legacy outlier and slower rules: tests/fleet/test_merge.py and the rule cases test them.
OTHER_RULES = {
    "pcie_width": "GD-FLEET-PCIE-001",
    "pcie_gen_max": "GD-FLEET-PCIE-002",
    "nvlink_links_down": "GD-FLEET-NVLINK-001",
    "nvlink_links": "GD-FLEET-NVLINK-002",
    "bench": "GD-FLEET-BENCH-001",
}


def test_every_counter_has_a_rule_and_a_seeded_outlier():
    assert {c.name for c in COUNTERS} == set(PEER_RULES) | set(OTHER_RULES)
    assert set(PEER_RULES) == set(PEER_OUTLIERS)


def test_a_healthy_fleet_raises_nothing(tmp_path):
    fleet = merge(load_reports([str(peer_fleet(tmp_path, outliers=False))]))
    status = {r.rule.id: r.status for r in fleet.results}
    assert [status[rule] for rule in PEER_RULES.values()] == ["passed"] * len(PEER_RULES)
    assert fleet.findings == []


def test_one_seeded_outlier_per_counter_is_one_finding_each(tmp_path):
    fleet = merge(load_reports([str(peer_fleet(tmp_path, outliers=True))]))
    found = {f.rule.id: f for f in fleet.findings}
    assert sorted(found) == sorted(PEER_RULES.values())  # no other fleet rule fires, nothing twice
    assert len(fleet.findings) == len(PEER_RULES)
    for counter, (node, gpu, _, value) in PEER_OUTLIERS.items():
        f = found[PEER_RULES[counter]]
        members = [(m.node, m.gpu, m.value) for m in f.record.members]
        assert (f.nodes, members, f.record.value) == ((node,), [(node, gpu, value)], value), counter
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
    fleet = merge(load_reports([str(peer_fleet(tmp_path, outliers=True))]), rules=[])
    ecc = [r for r in records(fleet.nodes) if r.kind == "peers" and r.what.name == "ecc_corrected"]
    assert [
        (r.group.key, r.value, len(r.members), r.group.count, r.group.median, r.group.mode) for r in ecc
    ] == [
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
    fleet = merge(load_reports([str(peer_fleet(tmp_path, outliers=True))]), rules=[])
    ecc = [r for r in records(fleet.nodes) if r.kind == "peers" and r.what.name == "ecc_corrected"]
    where = record_facts(ecc).value("peers[0].where")  # 21 GPUs have 0 corrected errors
    assert len(where) == 21 and where[0] == "peer-node-01 GPU 2" and where[-1] == "and 1 more"


def test_fewer_than_three_peers_are_not_compared(tmp_path):
    from .fleetgen import report, write

    write(tmp_path, "two.json", report("node-2", gpus=2))  # two H200s: no median worth the name
    write(tmp_path, "three.json", report("node-3", gpus=3, every_gpu={"name": "NVIDIA H100 80GB HBM3"}))
    fleet = merge(load_reports([str(tmp_path)]), rules=[])
    ecc = [r for r in records(fleet.nodes) if r.kind == "peers" and r.what.name == "ecc_corrected"]
    assert [(r.group.key, r.value, r.group.count) for r in ecc] == [("NVIDIA H100 80GB HBM3", 0, 3)]
    nothing = [r for r in records([]) if r.kind == "peers"]
    assert [(r.what.name, r.group) for r in nothing] == [(c.name, None) for c in COUNTERS]
    facts = record_facts(nothing[:1])
    assert facts.get("peers[0].value").unknown == (
        "no group of the fleet has 3 or more known values (same GPU model) to compare"
    )


def _user_rule() -> str:
    """The user fleet rule docs/fleet.md shows ("Your own fleet rules"), as the page has it."""
    from pathlib import Path

    docs = (Path(__file__).resolve().parents[2] / "docs" / "fleet.md").read_text()
    start = docs.index("```yaml\nrules:\n  - id: SITE-FLEET-001") + len("```yaml\n")
    return docs[start : docs.index("```", start)]


USER_RULE = _user_rule()


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
    fleet = merge(load_reports([str(reports)]), rules=[])
    (record,) = [
        r
        for r in records(fleet.nodes)
        if r.kind == "peers" and r.what.name == "ecc_corrected" and r.value == value
    ]
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
    status = {r.rule.id: r.status for r in fleet.results if r.rule.id in PEER_RULES.values()}
    assert status == {
        "GD-FLEET-ECC-001": "passed",
        "GD-FLEET-PCIE-003": "passed",
        "GD-FLEET-AER-001": "not compared",
        "GD-FLEET-NVLINK-003": "passed",
        "GD-FLEET-XID-001": "not compared",
        "GD-FLEET-CLOCK-001": "not compared",
    }
    assert fleet.findings == []


# --- bench measurements (GD-FLEET-BENCH-001): each against the median of its model and test ------------

RULE = "GD-FLEET-BENCH-001"
BF16 = {"matmul_bf16": 730.0}
H100 = "NVIDIA H100 80GB HBM3"


def bench_result(f):
    (r,) = [r for r in f.results if r.rule.id == RULE]
    return r


def bench_messages(f) -> list[str]:
    return [x.message for x in f.findings if x.rule.id == RULE]


def bench_groups(f):
    (counter,) = [c for c in COUNTERS if c.name == "bench"]
    return f.records.groups[counter], f.records.unknown[counter]


def near_730(odd=None):
    """bf16 results of 8 GPUs a little apart (728.0 to 731.5 TFLOP/s), as real ones are."""
    return {**{("matmul_bf16", g): 728.0 + g * 0.5 for g in range(8)}, **(odd or {})}


def test_a_gpu_slower_than_its_peers_is_one_finding_naming_its_node_and_gpu():
    docs = [bench_report(f"bench-{i}", odd=near_730()) for i in range(1, 6)]
    docs.append(bench_report("bench-6", odd=near_730({("matmul_bf16", 3): 600.0})))
    f = fleet_of(*docs)
    (found,) = f.findings
    assert found.rule.id == RULE and found.nodes == ("bench-6",)
    record = found.record
    assert (record.group.key, [(m.node, m.gpu, m.value) for m in record.members]) == (
        "NVIDIA H200 matmul_bf16",
        [("bench-6", 3, 600.0)],
    )
    assert (record.group.median, record.group.count) == (729.75, 48)
    assert found.message == (
        "NVIDIA H200 matmul_bf16 600 TFLOP/s on bench-6 GPU 3 (82%), where the median of 48 in the fleet "
        "is 730 TFLOP/s and under 90% of it is slower"
    )
    groups, unknown = bench_groups(f)
    assert bench_result(f).status == "fired" and unknown == []
    assert [(g.key, g.median, g.count, min(g.values), max(g.values), g.unit) for g in groups] == [
        ("NVIDIA H200 allreduce", 360.0, 6, 360.0, 360.0, "GB/s"),
        ("NVIDIA H200 h2d_pinned", 55.0, 48, 55.0, 55.0, "GB/s"),
        ("NVIDIA H200 matmul_bf16", 729.75, 48, 600.0, 731.5, "TFLOP/s"),
    ]
    # A warning: the exit code is 1 from --fail-on warning on
    assert [verdict(f, level).code for level in ("error", "warning")] == [0, 1]


def test_each_slow_value_is_one_finding_and_faster_is_no_finding():
    odd = {("matmul_bf16", 5): 590.0, ("matmul_bf16", 6): 640.0, ("h2d_pinned", 2): 26.0}
    docs = [bench_report(f"n{i}") for i in range(4)] + [bench_report("slow", odd=odd)]
    docs.append(bench_report("fast", odd={("matmul_bf16", 1): 900.0}))
    assert bench_messages(fleet_of(*docs)) == [
        "NVIDIA H200 h2d_pinned 26 GB/s on slow GPU 2 (47%), where the median of 48 in the fleet is 55 GB/s "
        "and under 90% of it is slower",
        "NVIDIA H200 matmul_bf16 590 TFLOP/s on slow GPU 5 (80%), where the median of 48 in the fleet is "
        "730 TFLOP/s and under 90% of it is slower",
        "NVIDIA H200 matmul_bf16 640 TFLOP/s on slow GPU 6 (87%), where the median of 48 in the fleet is "
        "730 TFLOP/s and under 90% of it is slower",
    ]
    # Just above 90% of the median is no finding; just under it is, and never reads as 90%.
    edge = [bench_report(f"n{i}", values=BF16) for i in range(3)]
    edge += [bench_report("ok", values=BF16, odd={("matmul_bf16", 0): 657.1})]
    edge += [bench_report("under", values=BF16, odd={("matmul_bf16", 0): 656.9})]
    assert bench_messages(fleet_of(*edge)) == [
        "NVIDIA H200 matmul_bf16 657 TFLOP/s on under GPU 0 (89%), where the median of 40 in the fleet is "
        "730 TFLOP/s and under 90% of it is slower"
    ]


def test_a_test_that_did_not_measure_is_unknown_not_slower():
    docs = [bench_report(f"n{i}", values=BF16) for i in range(3)]
    docs.append(bench_report("hung", values=BF16, odd={("matmul_bf16", 1): "timed out"}))
    # A value written although the test failed is not compared either: only "ok" measured.
    failed = bench_report("broke", values=BF16)
    failed["facts"]["bench"][0].update(status="failed", value=12.0)
    not_run = bench_report("no-gpu", values=BF16)
    not_run["facts"]["bench"] = {"unknown": "no framework that can reach a GPU"}
    f = fleet_of(*docs, failed, not_run)
    assert bench_messages(f) == []
    assert bench_result(f).status == "passed"
    groups, unknown = bench_groups(f)
    assert unknown == [  # nodes in name order
        ("broke", "bench[0].status: failed"),
        ("hung", "bench[1].status: timed out"),
        ("no-gpu", "no framework that can reach a GPU"),
    ]
    assert [(g.count, min(g.values)) for g in groups] == [(38, 730.0)]
    assert (
        "on 3 nodes: broke (bench[0].status: failed), hung (bench[1].status: timed out), no-gpu (no framework"
        in render_text(f, verdict(f, "error"), width=200)
    )


def test_groups_of_fewer_than_three_values_are_not_compared():
    one_gpu = {"gpus": 1, "values": BF16}
    f = fleet_of(bench_report("a", **one_gpu), bench_report("b", **one_gpu, odd={("matmul_bf16", 0): 300.0}))
    assert bench_messages(f) == [] and bench_result(f).status == "not compared"
    assert [(g.key, g.count, g.compared) for g in bench_groups(f)[0]] == [
        ("NVIDIA H200 matmul_bf16", 2, False)
    ]
    text = render_text(f, verdict(f, "error"))
    (line,) = [line for line in text.splitlines() if line.startswith("NVIDIA H200 matmul_bf16")]
    assert line.split("  ")[-1].strip() == "2 values: not compared (fewer than 3)"
    (bench,) = [c for c in fleet_data(f, verdict(f, "error"))["records"]["peers"] if c["counter"] == "bench"]
    assert bench["groups"] == [
        {
            "key": "NVIDIA H200 matmul_bf16",
            "status": "not compared",
            "count": 2,
            "median": 515.0,
            "mode": 730.0,
            "lowest": 300.0,
            "highest": 730.0,
            "unit": "TFLOP/s",
        }
    ]
    # A third value makes the group compared, and 300 is then slower than the median of 730.
    f = fleet_of(
        *(bench_report(n, **one_gpu) for n in "ac"),
        bench_report("b", **one_gpu, odd={("matmul_bf16", 0): 300.0}),
    )
    assert bench_result(f).status == "fired" and [x.nodes for x in f.findings if x.rule.id == RULE] == [
        ("b",)
    ]


def test_models_are_not_compared_with_each_other():
    h200 = [bench_report(f"h200-{i}", values=BF16) for i in range(3)]
    h100 = [bench_report(f"h100-{i}", values={"matmul_bf16": 400.0}, gpu_name=H100) for i in range(3)]
    f = fleet_of(*h200, *h100)
    assert bench_messages(f) == []
    assert [(g.key, g.median, g.count) for g in bench_groups(f)[0]] == [
        (f"{H100} matmul_bf16", 400.0, 24),
        ("NVIDIA H200 matmul_bf16", 730.0, 24),
    ]
    # ... though a slow H100 is slower than the H100s.
    f = fleet_of(*h200, *h100, bench_report("h100-x", values={"matmul_bf16": 300.0}, gpu_name=H100))
    assert [x.nodes for x in f.findings if x.rule.id == RULE] == [("h100-x",)]


def test_check_reports_have_no_bench_results_and_are_not_compared():
    # A fleet of check reports: the rule is not compared, each node's values "not in report", and the text
    # says nothing of it.
    f = fleet_of(report("a"), report("b"), report("c"))
    assert bench_result(f).status == "not compared"
    assert bench_groups(f) == ([], [(n, "not in report") for n in "abc"])
    assert "bench" not in render_text(f, verdict(f, "error"))
    # Among bench reports a check report is unknown for this rule and the others are compared.
    f = fleet_of(*(bench_report(f"n{i}") for i in range(3)), report("check-only"))
    assert bench_result(f).status == "passed" and bench_groups(f)[1] == [("check-only", "not in report")]
    # A bench report may carry nothing but its bench results: the drift rules are then not compared.
    bare = [bench_report(f"n{i}") for i in range(3)]
    for doc in bare:
        doc["facts"] = {"host": doc["facts"]["host"], "bench": doc["facts"]["bench"]}
    f = fleet_of(*bare)
    drift = {r.rule.id: r.status for r in f.results if r.rule.for_each == "drift"}
    assert set(drift.values()) == {"not compared"} and len(drift) == 6
    assert bench_result(f).status == "passed"


def test_p2p_names_the_pair_and_an_all_reduce_its_gpus():
    def node(name, p2p=20.0, allreduce=40.0):
        doc = bench_report(name, gpus=2, values={"allreduce": allreduce})
        doc["facts"]["bench"] += [
            bench("p2p", 0, p2p, peer=1, gpus=2),
            bench("p2p", 1, 20.0, peer=0, gpus=2),
        ]
        return doc

    f = fleet_of(node("a"), node("b"), node("c", p2p=11.0, allreduce=30.0))
    assert bench_messages(f) == [
        "NVIDIA H200 allreduce 30 GB/s on c (2 GPUs) (75%), where the median of 3 in the fleet is 40 GB/s "
        "and under 90% of it is slower",
        "NVIDIA H200 p2p 11 GB/s on c GPU 0 to 1 (55%), where the median of 6 in the fleet is 20 GB/s "
        "and under 90% of it is slower",
    ]


def test_json_has_the_median_and_each_slow_member():
    docs = [bench_report(f"n{i}", values=BF16) for i in range(3)]
    docs.append(bench_report("slow", values=BF16, odd={("matmul_bf16", 4): 500.0}))
    data = fleet_data(fleet_of(*docs), verdict(fleet_of(*docs), "error"))
    (found,) = data["fleet_findings"]
    keys = ("rule", "records", "fact", "key", "value", "majority", "majority_count", "median", "compared")
    assert {k: found[k] for k in keys} == {
        "rule": RULE,
        "records": "peers",
        "fact": "bench[].value",
        "key": "NVIDIA H200 matmul_bf16",
        "value": 500.0,
        "majority": 730.0,
        "majority_count": 31,
        "median": 730.0,
        "compared": 32,
    }
    assert found["gpus"] == [{"node": "slow", "index": 4, "value": 500.0}]
    (rule,) = [r for r in data["fleet_rules"] if r["id"] == RULE]
    assert rule["status"] == "fired"
    md = render_markdown(fleet_of(*docs), verdict(fleet_of(*docs), "error"))
    assert f"| warning | {RULE} Slower than its peers of the same model | NVIDIA H200 matmul_bf16 500" in md
    assert "| NVIDIA H200 matmul_bf16 | median 730.0 TFLOP/s of 32 values · lowest 500.0 |" in md


def test_bench_members_are_kept_and_type_checked_like_the_other_facts(tmp_path):
    node = parse_report(json.dumps(bench_report("n", gpus=2)).encode(), "r.json")
    names = {name for name, _ in node.facts.items() if name.startswith("bench[0].")}
    assert names == {f"bench[0].{m}" for m in ("value", "group", "status", "gpu", "gpus", "unit")}
    for member, value, expected in (
        ("value", "fast", "facts.bench[0].value: expected a number (bench[].value is float), got str 'fast'"),
        ("status", 0, "facts.bench[0].status: expected a string (bench[].status is str), got int 0"),
        ("gpu", 1.5, "facts.bench[0].gpu: expected an integer (bench[].gpu is int), got float 1.5"),
    ):
        doc = bench_report("typed", gpus=2)
        doc["facts"]["bench"][0][member] = value
        with pytest.raises(ReportError) as e:
            parse_report(json.dumps(doc).encode(), "typed.json")
        assert str(e.value) == expected
    write(tmp_path, "typed.json", doc)
    assert load_reports([str(tmp_path)]).invalid[0].reason == expected


def test_fleet_cli_reads_bench_reports(tmp_path):
    reports = tmp_path / "bench"
    for i in range(3):
        write(reports, f"gpu-{i}.json", bench_report(f"gpu-{i}"))
    write(reports, "gpu-3.json", bench_report("gpu-3", odd={("matmul_bf16", 7): 610.0}))
    r = run_cli("fleet", str(reports), "--format", "json", "--fail-on", "warning")
    assert (r.returncode, r.stderr) == (1, "")
    (found,) = json.loads(r.stdout)["fleet_findings"]
    assert (found["rule"], found["nodes"], found["gpus"]) == (
        RULE,
        ["gpu-3"],
        [{"node": "gpu-3", "index": 7, "value": 610.0}],
    )
    text = run_cli("fleet", str(reports)).stdout
    assert "NVIDIA H200 matmul_bf16 610 TFLOP/s on gpu-3 GPU 7 (83%), where the median of 32" in text
