"""Nodes grouped by GPU model, driver and machine; a group's node side taken from its report."""

from __future__ import annotations

import json

from gpudoctor.fleet.load import parse_report
from gpudoctor.pipeline.gate import NO_GPU, Node, group_key, groups_of, node_side, weakest

from conftest import H200, run_cli


def _h200_report() -> dict:
    r = run_cli("check", "--snapshot", str(H200), "--format", "json")
    return json.loads(r.stdout)


def _node(data: dict, name: str) -> Node:
    report = parse_report(json.dumps(data).encode(), f"{name}.json", whole=True)
    return Node(name, f"{name}.json", report.facts)


def test_nodes_group_by_gpu_model_driver_and_machine():
    data = _h200_report()
    a, b = _node(data, "a"), _node(data, "b")
    other = json.loads(json.dumps(data))
    other["facts"]["driver"]["version"] = "535.183.01"
    c = _node(other, "c")
    assert group_key(a.facts) == ("NVIDIA H200", "580.159.04", "x86_64")
    assert [(key, [n.name for n in nodes]) for key, nodes in groups_of([a, c, b])] == [
        (("NVIDIA H200", "580.159.04", "x86_64"), ["a", "b"]),
        (("NVIDIA H200", "535.183.01", "x86_64"), ["c"]),
    ]
    nogpu = json.loads(json.dumps(data))
    nogpu["facts"]["gpus"] = []
    assert group_key(_node(nogpu, "d").facts)[0] == NO_GPU


def test_a_node_gives_its_machine_not_its_own_python_environment():
    facts = _node(_h200_report(), "a").facts
    mine = node_side(facts, "image")
    assert mine["driver.version"].value == "580.159.04" and "gpus[0].name" in mine
    assert not [k for k in mine if k.startswith(("python.", "frameworks", "knowledge.", "cuda.", "env."))]
    assert [k for k in mine if k.startswith("container.")] == [
        k for k in dict(facts.items()) if k.startswith("container.toolkit_")
    ]
    assert "cuda.toolkit.version" in node_side(facts, "lock")  # a lockfile brings no CUDA toolkit
    # the image's interpreter links the image's C library; a lockfile installs with the node's
    assert "system.glibc" in facts
    assert "system.glibc" not in mine and "system.glibc" in node_side(facts, "lock")


def test_the_weakest_node_has_the_lowest_driver_and_every_gpu_model():
    """One node stands for a machine's groups: the lowest driver's facts, with one GPU of each model."""
    data = _h200_report()
    data["facts"]["gpus"] = data["facts"]["gpus"] * 2  # a node of two H200s
    old = json.loads(json.dumps(data))
    old["facts"]["driver"]["version"] = "535.183.01"
    old["facts"]["gpus"] = [dict(old["facts"]["gpus"][0], name="NVIDIA A100-SXM4-80GB")]
    a, b = _node(data, "a"), _node(old, "b")
    node = weakest([a, b])
    assert (node.name, node.facts.value("driver.version")) == ("b", "535.183.01")
    assert node.facts.value("gpus.count") == 2
    # in the order the nodes come, each model once
    assert [node.facts.value(f"gpus[{i}].name") for i in range(2)] == ["NVIDIA H200", "NVIDIA A100-SXM4-80GB"]
    assert a.facts.value("gpus.count") == 2
    assert node.facts.value("gpus[0].compute_capability") == a.facts.value("gpus[0].compute_capability")
    assert not [k for k in dict(node.facts.items()) if k.startswith("gpus[2]")]


def test_a_node_whose_gpus_are_unknown_makes_the_weakest_gpus_unknown():
    data = _h200_report()
    lost = json.loads(json.dumps(data))
    lost["facts"]["gpus"] = {"unknown": "NVML: driver not loaded"}
    node = weakest([_node(data, "a"), _node(lost, "b")])
    count = node.facts.get("gpus.count")
    assert not count.known and "driver not loaded" in count.unknown
