"""Fleet rules: each fires on the node that differs from the fleet's most common value, and only there."""

from __future__ import annotations

from typing import Optional

import pytest

from gpudoctor.fleet.merge import evaluate, exit_code, lookup
from gpudoctor.fleet.rules import FLEET_RULES, FleetRule, table_problems

from .fleetgen import bench, fleet_of, report

NVLINK = {"nvlink.links": 18, "nvlink.links_up": 18}
# Every node of the cases has bench results too (as if its check and bench reports were one), so that the
# bench rule has its case among the others.
BASE = {"every_gpu": NVLINK, "facts": {"bench": [bench("matmul_bf16", g, 730.0) for g in range(8)]}}


def fleet(odd: dict, n: int = 4, base: Optional[dict] = None):
    """n nodes like `base`; the last one also gets `odd` (report() keyword arguments)."""
    base = base or {}
    docs = [report(f"gpu-{i + 1}", **base) for i in range(n - 1)]
    merged = dict(base, **odd)
    merged["facts"] = dict(base.get("facts", {}), **odd.get("facts", {}))
    docs.append(report(f"gpu-{n}", **merged))
    return fleet_of(*docs)


def messages(f, rule_id: str) -> list[str]:
    return [x.message for x in f.findings if x.rule.id == rule_id]


CASES = [
    (
        "GD-FLEET-DRIVER-001",
        {"facts": {"driver.version": "535.104.05"}},
        "1 of 4 nodes has driver version 535.104.05 where 3 have 580.159.04: gpu-4",
    ),
    (
        "GD-FLEET-CUDA-001",
        {"facts": {"driver.max_cuda": "12.2"}},
        "1 of 4 nodes has driver CUDA version 12.2 where 3 have 13.0: gpu-4",
    ),
    (
        "GD-FLEET-NCCL-001",
        {"facts": {"nccl.versions": ["2.21.5"]}},
        "1 of 4 nodes has NCCL versions 2.21.5 where 3 have 2.28.9, 2.28.3: gpu-4",
    ),
    (
        "GD-FLEET-FW-001",
        {"facts": {"frameworks[0].version": "2.10.0"}},
        "1 of 4 nodes has torch version 2.10.0 where 3 have 2.11.0: gpu-4",
    ),
    ("GD-FLEET-GPU-001", {"gpus": 7}, "1 of 4 nodes has GPU count 7 where 3 have 8: gpu-4"),
    (
        "GD-FLEET-GPU-002",
        {"facts": {f"gpus[{i}].name": "NVIDIA H100 80GB HBM3" for i in range(8)}},
        "1 of 4 nodes has GPU model NVIDIA H100 80GB HBM3 where 3 have NVIDIA H200: gpu-4",
    ),
    (
        "GD-FLEET-PCIE-001",
        {"facts": {"gpus[2].pcie.width_current": 8, "gpus[6].pcie.width_current": 8}},
        "gpu-4: PCIe width x8 on GPUs 2, 6, where 30 of 32 NVIDIA H200 GPUs in the fleet have x16",
    ),
    (
        "GD-FLEET-PCIE-002",
        {"facts": {"gpus[0].pcie.gen_max": 4}},
        "gpu-4: PCIe generation gen 4 on GPU 0, where 31 of 32 NVIDIA H200 GPUs in the fleet have gen 5",
    ),
    (
        "GD-FLEET-NVLINK-001",
        {"facts": {"gpus[3].nvlink.links_down": 2, "gpus[3].nvlink.links_up": 16}},
        "gpu-4: NVLink links down 2 on GPU 3, where 31 of 32 NVIDIA H200 GPUs in the fleet have 0",
    ),
    (
        "GD-FLEET-NVLINK-002",
        {"facts": {f"gpus[{i}].nvlink.{k}": 0 for i in range(8) for k in ("links", "links_up")}},
        "gpu-4: NVLink links 0 on GPUs 0, 1, 2, 3, 4, 5, 6, 7, where 24 of 32 NVIDIA H200 GPUs in the "
        "fleet have 18",
    ),
    (
        "GD-FLEET-BENCH-001",
        {"facts": {"bench[3].value": 600.0}},
        "gpu-4: NVIDIA H200 matmul_bf16 600.0 TFLOP/s on GPU 3 (82%), where the median of 32 in the fleet "
        "is 730.0 TFLOP/s and under 90% of it is slower",
    ),
]


def test_every_rule_has_a_case():
    assert sorted(c[0] for c in CASES) == sorted(r.id for r in FLEET_RULES)


@pytest.mark.parametrize("rule_id,odd,message", CASES, ids=[c[0] for c in CASES])
def test_rule_fires_on_the_odd_node_only(rule_id, odd, message):
    f = fleet(odd, base=BASE)
    assert messages(f, rule_id) == [message]
    fired = {x.rule.id for x in f.findings}
    # A lost GPU also changes nothing else; a changed model is its own PCIe/NVLink group (nothing to compare)
    assert fired == {rule_id}, fired
    (finding,) = [x for x in f.findings if x.rule.id == rule_id]
    assert finding.nodes == ("gpu-4",)


def test_a_uniform_fleet_has_no_fleet_findings():
    f = fleet({}, base=BASE)
    assert f.findings == []
    assert {r.status for r in f.results} == {"passed"}


def test_better_than_the_majority_is_no_outlier():
    # One node's GPUs run x16 where the rest run x8: not a finding (narrower is worse, wider is not).
    odd = {"facts": {f"gpus[{i}].pcie.width_current": 16 for i in range(8)}}
    f = fleet(odd, base={"facts": {f"gpus[{i}].pcie.width_current": 8 for i in range(8)}})
    assert messages(f, "GD-FLEET-PCIE-001") == []
    # Nor is an idle GPU whose current generation dropped: the rule compares gen_max.
    f = fleet({"facts": {"gpus[1].pcie.gen_current": 1}})
    assert f.findings == []


def test_outliers_are_compared_within_one_gpu_model():
    h100 = {f"gpus[{i}].name": "NVIDIA H100 PCIe" for i in range(8)}
    h100.update({f"gpus[{i}].pcie.width_current": 8 for i in range(8)})
    docs = [report(f"h200-{i}") for i in range(3)] + [report(f"h100-{i}", facts=h100) for i in range(3)]
    f = fleet_of(*docs)
    assert messages(f, "GD-FLEET-PCIE-001") == []
    (result,) = [r for r in f.results if r.rule.id == "GD-FLEET-PCIE-001"]
    assert [(g.key, g.majority, g.values) for g in result.groups] == [
        ("NVIDIA H100 PCIe", 8, ((8, 24),)),
        ("NVIDIA H200", 16, ((16, 24),)),
    ]
    # ... and the model mix itself is a drift finding, with no majority (3 and 3): both sides named.
    assert messages(f, "GD-FLEET-GPU-002") == [
        "3 of 6 nodes have GPU model NVIDIA H100 PCIe (no value is the most common: NVIDIA H100 PCIe on 3, "
        "NVIDIA H200 on 3): h100-0, h100-1, h100-2",
        "3 of 6 nodes have GPU model NVIDIA H200 (no value is the most common: NVIDIA H100 PCIe on 3, "
        "NVIDIA H200 on 3): h200-0, h200-1, h200-2",
    ]


def test_drift_tie_names_every_side_and_has_no_majority():
    f = fleet_of(report("a"), report("b", facts={"driver.version": "535.104.05"}))
    found = [x for x in f.findings if x.rule.id == "GD-FLEET-DRIVER-001"]
    assert [(x.value, x.majority, x.nodes) for x in found] == [
        ("535.104.05", None, ("b",)),
        ("580.159.04", None, ("a",)),
    ]


def test_outlier_tie_takes_the_better_value_as_the_norm():
    narrow = {f"gpus[{i}].pcie.width_current": 8 for i in range(4)}
    f = fleet_of(report("a", facts=narrow), report("b", facts=narrow))
    assert messages(f, "GD-FLEET-PCIE-001") == [
        "a: PCIe width x8 on GPUs 0, 1, 2, 3, where 8 of 16 NVIDIA H200 GPUs in the fleet have x16",
        "b: PCIe width x8 on GPUs 0, 1, 2, 3, where 8 of 16 NVIDIA H200 GPUs in the fleet have x16",
    ]


def test_several_minority_values_are_one_finding_each_and_the_majority_may_be_a_plurality():
    versions = ["550.54.15"] * 5 + ["535.104.05"] * 2 + ["560.35.03"]
    docs = [report(f"n{i}", facts={"driver.version": v}) for i, v in enumerate(versions)]
    assert messages(fleet_of(*docs), "GD-FLEET-DRIVER-001") == [
        "2 of 8 nodes have driver version 535.104.05 where 5 have 550.54.15: n5, n6",
        "1 of 8 nodes has driver version 560.35.03 where 5 have 550.54.15: n7",
    ]


def test_a_long_node_list_is_cut_in_the_message_but_not_in_the_finding():
    docs = [report(f"n{i}") for i in range(30)]
    docs += [report(f"old{i}", facts={"driver.version": "535.104.05"}) for i in range(25)]
    (found,) = [x for x in fleet_of(*docs).findings if x.rule.id == "GD-FLEET-DRIVER-001"]
    assert len(found.nodes) == 25
    named = ", ".join(f"old{i}" for i in range(20))
    assert found.message.endswith(f": {named} and 5 more")


def test_unknown_values_are_not_compared_and_say_why():
    no_driver = report("c", gpus=0, facts={"driver.version": {"unknown": "NVML library not found"}})
    f = fleet_of(report("a"), report("b"), no_driver)
    (result,) = [r for r in f.results if r.rule.id == "GD-FLEET-DRIVER-001"]
    assert result.status == "passed" and result.unknown == (("c", "NVML library not found"),)
    # Its missing GPUs are a finding of their own; with none, it is not compared on GPU model.
    assert messages(f, "GD-FLEET-GPU-001") == ["1 of 3 nodes has GPU count 0 where 2 have 8: c"]
    assert messages(f, "GD-FLEET-GPU-002") == []


def test_a_node_without_a_framework_is_not_drift_for_it():
    doc = report("b")
    doc["facts"]["frameworks"] = doc["facts"]["frameworks"][1:]  # no torch here
    f = fleet_of(report("a"), doc)
    assert messages(f, "GD-FLEET-FW-001") == []
    (result,) = [r for r in f.results if r.rule.id == "GD-FLEET-FW-001"]
    assert [(g.key, g.values) for g in result.groups] == [
        ("cupy", (("14.2.0", 2),)),
        ("jax", (("0.11.2", 2),)),
        ("onnxruntime", (("1.30.0", 2),)),
        ("torch", (("2.11.0", 1),)),
    ]


def test_a_single_node_is_never_drift_and_nothing_known_is_not_compared():
    f = fleet_of(report("a"))
    assert f.findings == []
    rule = FleetRule("GD-FLEET-X-001", "t", "info", "drift", "no.such.fact", "x", "w")
    (result,) = evaluate((rule,), f.nodes)
    assert result.status == "not compared" and result.unknown == (("a", "not in report"),)


def test_lookup_reads_values_unknowns_and_array_counts():
    tree = {"driver": {"version": "1.0", "max_cuda": {"unknown": "timed out"}}, "gpus": [{}, {}]}
    assert lookup(tree, "driver.version") == ("1.0", None)
    assert lookup(tree, "driver.max_cuda") == (None, "timed out")
    assert lookup(tree, "gpus.count") == (2, None)
    assert lookup(tree, "driver") == (None, "not a value")
    assert lookup(tree, "cuda.home") == (None, "not in report")


def test_the_shipped_table_is_well_formed_and_bad_tables_are_refused():
    assert table_problems(FLEET_RULES) == []
    bad = (
        FleetRule("GD-FLEET-X-001", "t", "fatal", "drift", "driver.version", "{key} v", "w", worse="lower"),
        FleetRule("GD-FLEET-X-001", "t", "error", "outlier", "driver.version", "x", "w", by="gpus[].name"),
    )
    assert table_problems(bad) == [
        "GD-FLEET-X-001: severity 'fatal' is not one of error, warning, info",
        "GD-FLEET-X-001: worse applies to outlier rules only",
        "GD-FLEET-X-001: what uses {key} but the rule has no by",
        "GD-FLEET-X-001: duplicate id",
        "GD-FLEET-X-001: an outlier rule compares a per-GPU fact (gpus[].<field>)",
        "GD-FLEET-X-001: an outlier rule needs worse: lower or higher",
        "GD-FLEET-X-001: by must name a fact of the same list as driver.version",
    ]


def test_exit_code_counts_fleet_and_node_findings_at_or_above_fail_on():
    clean = report("a")
    clean["findings"] = []
    assert exit_code(fleet_of(clean, clean), "info") == 0
    drift = fleet_of(clean, clean, dict(clean, facts=report("c", facts={"driver.version": "1"})["facts"]))
    assert [exit_code(drift, level) for level in ("error", "warning", "never")] == [0, 1, 0]
    node_warning = fleet_of(report("a"))  # the H200 report has a warning and an info
    assert [exit_code(node_warning, level) for level in ("error", "warning", "info")] == [0, 1, 1]
    lost_gpu = fleet_of(clean, clean, report("c", gpus=7))
    assert exit_code(lost_gpu, "error") == 1
