"""The bench rule (kind `slower`): each GPU's measurement against the median of the same model under the
same test across the fleet, from `gpudoctor bench --format json` reports."""

from __future__ import annotations

import json

import pytest

from gpudoctor.fleet.load import ReportError, load_reports, parse_report
from gpudoctor.fleet.merge import evaluate, verdict
from gpudoctor.fleet.rules import FleetRule, table_problems
from gpudoctor.report.fleet_report import fleet_data, render_markdown, render_text

from .fleetgen import bench, bench_report, fleet_of, report, write
from conftest import run_cli

RULE = "GD-FLEET-BENCH-001"
BF16 = {"matmul_bf16": 730.0}
H100 = "NVIDIA H100 80GB HBM3"


def result(f):
    (r,) = [r for r in f.results if r.rule.id == RULE]
    return r


def messages(f) -> list[str]:
    return [x.message for x in f.findings if x.rule.id == RULE]


def near_730(odd=None):
    """bf16 results of 8 GPUs a little apart (728.0 to 731.5 TFLOP/s), as real ones are."""
    return {**{("matmul_bf16", g): 728.0 + g * 0.5 for g in range(8)}, **(odd or {})}


def test_a_gpu_slower_than_its_peers_is_one_finding_naming_its_node_and_gpu():
    docs = [bench_report(f"bench-{i}", odd=near_730()) for i in range(1, 6)]
    docs.append(bench_report("bench-6", odd=near_730({("matmul_bf16", 3): 600.0})))
    f = fleet_of(*docs)
    (found,) = f.findings
    assert found.rule.id == RULE and found.nodes == ("bench-6",)
    assert (found.key, found.gpus, found.items) == ("NVIDIA H200 matmul_bf16", (("bench-6", 3, 600.0),), (3,))
    assert (found.majority, found.compared) == (729.75, 48)
    assert found.message == (
        "bench-6: NVIDIA H200 matmul_bf16 600.0 TFLOP/s on GPU 3 (82%), where the median of 48 in the fleet "
        "is 729.8 TFLOP/s and under 90% of it is slower"
    )
    r = result(f)
    assert r.status == "fired" and r.unknown == ()
    assert [(g.key, g.majority, g.count, g.lowest, g.highest, g.unit, g.compared) for g in r.groups] == [
        ("NVIDIA H200 allreduce", 360.0, 6, 360.0, 360.0, "GB/s", True),
        ("NVIDIA H200 h2d_pinned", 55.0, 48, 55.0, 55.0, "GB/s", True),
        ("NVIDIA H200 matmul_bf16", 729.75, 48, 600.0, 731.5, "TFLOP/s", True),
    ]
    # A warning: the exit code is 1 from --fail-on warning on
    assert [verdict(f, level).code for level in ("error", "warning")] == [0, 1]


def test_a_node_with_several_slow_gpus_is_one_finding_per_test_and_faster_is_no_finding():
    odd = {("matmul_bf16", 5): 590.0, ("matmul_bf16", 6): 640.0, ("h2d_pinned", 2): 26.0}
    docs = [bench_report(f"n{i}") for i in range(4)] + [bench_report("slow", odd=odd)]
    docs.append(bench_report("fast", odd={("matmul_bf16", 1): 900.0}))
    assert messages(fleet_of(*docs)) == [
        "slow: NVIDIA H200 matmul_bf16 590.0 TFLOP/s on GPU 5 (80%), 640.0 TFLOP/s on GPU 6 (87%), where the "
        "median of 48 in the fleet is 730.0 TFLOP/s and under 90% of it is slower",
        "slow: NVIDIA H200 h2d_pinned 26.0 GB/s on GPU 2 (47%), where the median of 48 in the fleet is 55.0 "
        "GB/s and under 90% of it is slower",
    ]
    # Just above 90% of the median is no finding; just under it is, and never reads as 90%.
    edge = [bench_report(f"n{i}", values=BF16) for i in range(3)]
    edge += [bench_report("ok", values=BF16, odd={("matmul_bf16", 0): 657.1})]
    edge += [bench_report("under", values=BF16, odd={("matmul_bf16", 0): 656.9})]
    assert messages(fleet_of(*edge)) == [
        "under: NVIDIA H200 matmul_bf16 656.9 TFLOP/s on GPU 0 (89%), where the median of 40 in the fleet is "
        "730.0 TFLOP/s and under 90% of it is slower"
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
    assert messages(f) == []
    r = result(f)
    assert r.status == "passed"
    assert r.unknown == (  # nodes in name order
        ("broke", "bench[0].status: failed"),
        ("hung", "bench[1].status: timed out"),
        ("no-gpu", "no framework that can reach a GPU"),
    )
    assert [(g.count, g.lowest) for g in r.groups] == [(38, 730.0)]
    assert (
        "on 3 nodes: broke (bench[0].status: failed), hung (bench[1].status: timed out), no-gpu (no framework"
        in render_text(f, verdict(f, "error"), width=200)
    )


def test_groups_of_fewer_than_three_values_are_not_compared():
    one_gpu = {"gpus": 1, "values": BF16}
    f = fleet_of(bench_report("a", **one_gpu), bench_report("b", **one_gpu, odd={("matmul_bf16", 0): 300.0}))
    r = result(f)
    assert messages(f) == [] and r.status == "not compared"
    assert [(g.key, g.majority, g.count, g.compared) for g in r.groups] == [
        ("NVIDIA H200 matmul_bf16", None, 2, False)
    ]
    text = render_text(f, verdict(f, "error"))
    (line,) = [line for line in text.splitlines() if line.startswith("NVIDIA H200 matmul_bf16")]
    assert line.split("  ")[-1].strip() == "2 values: not compared (fewer than 3)"
    assert fleet_data(f, verdict(f, "error"))["fleet_rules"][-1]["groups"] == [
        {
            "key": "NVIDIA H200 matmul_bf16",
            "status": "not compared",
            "median": None,
            "count": 2,
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
    assert result(f).status == "fired" and [x.nodes for x in f.findings if x.rule.id == RULE] == [("b",)]


def test_models_are_not_compared_with_each_other():
    h200 = [bench_report(f"h200-{i}", values=BF16) for i in range(3)]
    h100 = [bench_report(f"h100-{i}", values={"matmul_bf16": 400.0}, gpu_name=H100) for i in range(3)]
    f = fleet_of(*h200, *h100)
    assert messages(f) == []
    assert [(g.key, g.majority, g.count) for g in result(f).groups] == [
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
    r = result(f)
    assert (r.status, r.groups, r.unknown) == ("not compared", (), tuple((n, "not in report") for n in "abc"))
    assert "bench" not in render_text(f, verdict(f, "error"))
    # Among bench reports a check report is unknown for this rule and the others are compared.
    f = fleet_of(*(bench_report(f"n{i}") for i in range(3)), report("check-only"))
    assert result(f).status == "passed" and result(f).unknown == (("check-only", "not in report"),)
    # A bench report may carry nothing but its bench results: the other rules are then not compared.
    bare = [bench_report(f"n{i}") for i in range(3)]
    for doc in bare:
        doc["facts"] = {"host": doc["facts"]["host"], "bench": doc["facts"]["bench"]}
    f = fleet_of(*bare)
    assert {r.rule.id: r.status for r in f.results if r.status != "not compared"} == {RULE: "passed"}


def test_p2p_names_the_pair_and_an_all_reduce_its_gpus():
    def node(name, p2p=20.0, allreduce=40.0):
        doc = bench_report(name, gpus=2, values={"allreduce": allreduce})
        doc["facts"]["bench"] += [
            bench("p2p", 0, p2p, peer=1, gpus=2),
            bench("p2p", 1, 20.0, peer=0, gpus=2),
        ]
        return doc

    f = fleet_of(node("a"), node("b"), node("c", p2p=11.0, allreduce=30.0))
    assert messages(f) == [
        "c: NVIDIA H200 allreduce 30.0 GB/s on 2 GPUs (75%), where the median of 3 in the fleet is 40.0 GB/s "
        "and under 90% of it is slower",
        "c: NVIDIA H200 p2p 11.0 GB/s on GPU 0 to 1 (55%), where the median of 6 in the fleet is 20.0 GB/s "
        "and under 90% of it is slower",
    ]
    (p2p,) = [x for x in f.findings if x.key == "NVIDIA H200 p2p"]
    assert (p2p.gpus, p2p.items) == ((("c", 0, 11.0),), (1,))


def test_json_has_the_median_the_tolerance_and_each_slow_member():
    docs = [bench_report(f"n{i}", values=BF16) for i in range(3)]
    docs.append(bench_report("slow", values=BF16, odd={("matmul_bf16", 4): 500.0}))
    data = fleet_data(fleet_of(*docs), verdict(fleet_of(*docs), "error"))
    (found,) = data["fleet_findings"]
    assert {
        k: found[k] for k in ("rule", "kind", "key", "value", "majority", "majority_count", "compared")
    } == {
        "rule": RULE,
        "kind": "slower",
        "key": "NVIDIA H200 matmul_bf16",
        "value": None,
        "majority": 730.0,
        "majority_count": 0,
        "compared": 32,
    }
    assert found["gpus"] == [{"node": "slow", "index": 4, "value": 500.0, "item": 4}]
    rule = data["fleet_rules"][-1]
    assert (rule["tolerance"], rule["counted"], rule["status"]) == (0.9, "values", "fired")
    assert all(r["tolerance"] is None for r in data["fleet_rules"][:-1])
    md = render_markdown(fleet_of(*docs), verdict(fleet_of(*docs), "error"))
    assert f"| warning | {RULE} Slower than its peers of the same model | slow: NVIDIA H200 matmul_bf16" in md
    assert "| NVIDIA H200 matmul_bf16 | median 730.0 TFLOP/s of 32 values · lowest 500.0 |" in md


def test_the_table_refuses_slower_rules_without_a_sensible_tolerance():
    def rule(**kw):
        fields = dict(id="GD-FLEET-X-001", title="t", severity="info", kind="slower", fact="bench[].value")
        fields.update(what="x", why="w", tolerance=0.9)
        fields.update(kw)
        return FleetRule(**fields)

    assert table_problems((rule(by="bench[].group"),)) == []
    assert table_problems((rule(tolerance=None),)) == [
        "GD-FLEET-X-001: a slower rule needs tolerance: a number between 0 and 1"
    ]
    assert [table_problems((rule(tolerance=t),)) for t in (0, 1, 1.5, True)] == [
        [f"GD-FLEET-X-001: tolerance {t!r} is not between 0 and 1"] for t in (0, 1, 1.5, True)
    ]
    assert table_problems((rule(fact="driver.version", worse="lower"),)) == [
        "GD-FLEET-X-001: worse applies to outlier rules only",
        "GD-FLEET-X-001: a slower rule compares a fact of list members (<list>[].<field>)",
    ]
    assert table_problems((rule(kind="drift", fact="driver.version"),)) == [
        "GD-FLEET-X-001: tolerance applies to slower rules only"
    ]
    # A list without `status` members (gpus[]) is compared as it is, each GPU by its index.
    slower_gpus = rule(fact="gpus[].pcie.width_current", by="gpus[].name", what="{key} PCIe width", fmt="x{}")
    nodes = fleet_of(report("a"), report("b"), report("c", facts={"gpus[2].pcie.width_current": 8})).nodes
    (r,) = evaluate((slower_gpus,), nodes)
    assert [(x.nodes, x.gpus) for x in r.findings] == [(("c",), (("c", 2, 8),))]
    assert r.findings[0].message == (
        "c: NVIDIA H200 PCIe width x8 on GPU 2 (50%), where the median of 24 in the fleet is x16 and under "
        "90% of it is slower"
    )


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
        [{"node": "gpu-3", "index": 7, "value": 610.0, "item": 7}],
    )
    text = run_cli("fleet", str(reports)).stdout
    assert "gpu-3: NVIDIA H200 matmul_bf16 610.0 TFLOP/s on GPU 7 (83%), where the median of 32" in text
