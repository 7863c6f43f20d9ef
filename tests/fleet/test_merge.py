"""merge: the fleet's records judged by the fleet rules (rules/fleet/fleet.yaml): each fires on the nodes or
GPUs whose value differs from the fleet's most common (or, for a measurement, falls under 90% of the median),
and only there; and the exit code."""

from __future__ import annotations

from typing import Optional

import pytest

from gpudoctor.fleet.load import facts_of
from gpudoctor.fleet.merge import exit_code, fleet_rule_files, shipped_fleet_rules
from gpudoctor.fleet.records import DRIFTS, lookup

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
        "PCIe width x8 on gpu-4 GPU 2, gpu-4 GPU 6, where 30 of 32 NVIDIA H200 GPUs in the fleet have x16",
    ),
    (
        "GD-FLEET-PCIE-002",
        {"facts": {"gpus[0].pcie.gen_max": 4}},
        "PCIe generation gen 4 on gpu-4 GPU 0, where 31 of 32 NVIDIA H200 GPUs in the fleet have gen 5",
    ),
    (
        "GD-FLEET-NVLINK-001",
        {"facts": {"gpus[3].nvlink.links_down": 2, "gpus[3].nvlink.links_up": 16}},
        "NVLink links down 2 on gpu-4 GPU 3, where 31 of 32 NVIDIA H200 GPUs in the fleet have 0",
    ),
    (
        "GD-FLEET-NVLINK-002",
        {"facts": {f"gpus[{i}].nvlink.{k}": 0 for i in range(8) for k in ("links", "links_up")}},
        "NVLink links 0 on " + ", ".join(f"gpu-4 GPU {i}" for i in range(8)) + ", where 24 of 32 NVIDIA "
        "H200 GPUs in the fleet have 18",
    ),
    (
        "GD-FLEET-BENCH-001",
        {"facts": {"bench[3].value": 600.0}},
        "NVIDIA H200 matmul_bf16 600 TFLOP/s on gpu-4 GPU 3 (82%), where the median of 32 in the fleet "
        "is 730 TFLOP/s and under 90% of it is slower",
    ),
]


def test_every_rule_of_fleet_yaml_has_a_case():
    (fleet_yaml,) = [f for f in fleet_rule_files() if f.endswith("fleet.yaml")]
    ids = [r.id for r in shipped_fleet_rules() if r.file == fleet_yaml]
    assert sorted(c[0] for c in CASES) == sorted(ids) and len(ids) == 11


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
    ids = {c[0] for c in CASES}
    assert {r.status for r in f.results if r.rule.id in ids} == {"passed"}


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
    width = [w for w in f.records.groups if getattr(w, "name", "") == "pcie_width"][0]
    assert [(g.key, g.mode, g.ranked) for g in f.records.groups[width]] == [
        ("NVIDIA H100 PCIe", 8, [(8, 24)]),
        ("NVIDIA H200", 16, [(16, 24)]),
    ]
    # ... and the model mix itself is a drift finding, with no majority (3 and 3): both sides named.
    assert messages(f, "GD-FLEET-GPU-002") == [
        "3 of 6 nodes have GPU model NVIDIA H100 PCIe where 3 have NVIDIA H200: h100-0, h100-1, h100-2",
        "3 of 6 nodes have GPU model NVIDIA H200 where 3 have NVIDIA H100 PCIe: h200-0, h200-1, h200-2",
    ]


def test_drift_tie_names_every_side_and_has_no_majority():
    f = fleet_of(report("a"), report("b", facts={"driver.version": "535.104.05"}))
    found = [x for x in f.findings if x.rule.id == "GD-FLEET-DRIVER-001"]
    assert [(x.record.value, x.record.group.mode, x.nodes) for x in found] == [
        ("535.104.05", None, ("b",)),
        ("580.159.04", None, ("a",)),
    ]


def test_outlier_tie_takes_the_better_value_as_the_norm():
    narrow = {f"gpus[{i}].pcie.width_current": 8 for i in range(4)}
    f = fleet_of(report("a", facts=narrow), report("b", facts=narrow))
    gpus = ", ".join(f"{node} GPU {i}" for node in "ab" for i in range(4))
    assert messages(f, "GD-FLEET-PCIE-001") == [
        f"PCIe width x8 on {gpus}, where 8 of 16 NVIDIA H200 GPUs in the fleet have x16"
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
    assert found.message.endswith(f": {named}, and 5 more")


def test_unknown_values_are_not_compared_and_say_why():
    no_driver = report("c", gpus=0, facts={"driver.version": {"unknown": "NVML library not found"}})
    f = fleet_of(report("a"), report("b"), no_driver)
    (result,) = [r for r in f.results if r.rule.id == "GD-FLEET-DRIVER-001"]
    assert result.status == "passed" and f.records.unknown[DRIFTS[0]] == [("c", "NVML library not found")]
    # Its missing GPUs are a finding of their own; with none, it is not compared on GPU model.
    assert messages(f, "GD-FLEET-GPU-001") == ["1 of 3 nodes has GPU count 0 where 2 have 8: c"]
    assert messages(f, "GD-FLEET-GPU-002") == []


def test_a_node_without_a_framework_is_not_drift_for_it():
    doc = report("b")
    doc["facts"]["frameworks"] = doc["facts"]["frameworks"][1:]  # no torch here
    f = fleet_of(report("a"), doc)
    assert messages(f, "GD-FLEET-FW-001") == []
    frameworks = [d for d in DRIFTS if d.fact == "frameworks[].version"][0]
    assert [(g.key, g.ranked) for g in f.records.groups[frameworks]] == [
        ("cupy", [("14.2.0", 2)]),
        ("jax", [("0.11.2", 2)]),
        ("onnxruntime", [("1.30.0", 2)]),
        ("torch", [("2.11.0", 1)]),
    ]


def test_a_single_node_is_never_drift_and_nothing_known_is_not_compared():
    f = fleet_of(report("a"))
    assert f.findings == []
    unknown = {"driver.version": {"unknown": "NVML library not found"}}
    f = fleet_of(report("a", facts=unknown), report("b", facts=unknown))
    (result,) = [r for r in f.results if r.rule.id == "GD-FLEET-DRIVER-001"]
    assert result.status == "not compared" and f.findings == []


def test_lookup_reads_values_unknowns_and_array_counts():
    # records.lookup: how the records stage reads a report's facts
    tree = {"driver": {"version": "1.0", "max_cuda": {"unknown": "timed out"}}, "gpus": [{}, {}]}
    assert lookup(facts_of(tree), "driver.version") == ("1.0", None)
    assert lookup(facts_of(tree), "driver.max_cuda") == (None, "timed out")
    assert lookup(facts_of(tree), "gpus.count") == (2, None)
    assert lookup(facts_of(tree), "driver") == (None, "not a value")
    assert lookup(facts_of(tree), "cuda.home") == (None, "not in report")


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
