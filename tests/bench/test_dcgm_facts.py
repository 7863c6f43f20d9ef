"""DCGM diagnostic results as `dcgm[]` facts (bench/dcgm_facts.py), from real `dcgmi diag` output
(tests/fixtures/bench/dcgm/README.md says where each file was captured)."""

from __future__ import annotations

from pathlib import Path

from gpudoctor.bench import dcgm
from gpudoctor.bench.dcgm_facts import SOURCE, add_dcgm
from gpudoctor.facts import Facts, known

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "bench" / "dcgm"


def diag(name: str) -> dcgm.Diag:
    return dcgm.parse((FIXTURES / name).read_text(encoding="utf-8"))


def values(facts: Facts, i: int) -> dict:
    return {
        field: facts.get(f"dcgm[{i}].{field}").value
        for field in ("test", "category", "status", "gpu", "where", "message")
    }


def test_each_result_of_a_real_run_is_one_member():
    # DCGM 4.5.2 on a GB10, level 2: software fails (persistence mode), memory and pcie are skipped
    facts = add_dcgm(Facts(), diag("dcgm-4.5.2-gb10-level2-gated.json"))
    assert facts.value("dcgm.count") == 3
    first = values(facts, 0)
    assert (first["test"], first["category"], first["status"], first["gpu"], first["where"]) == (
        "software", "Deployment", "fail", 0, "GPU 0",
    )  # fmt: skip
    assert first["message"].startswith("Persistence Mode: Persistence mode for GPU 0 is disabled.")
    # a skipped test gives no reason: the member says so rather than carrying an empty message
    assert values(facts, 1) == {
        "test": "memory", "category": "Hardware", "status": "skip", "gpu": 0, "where": "GPU 0",
        "message": "no message",
    }  # fmt: skip
    assert all(facts.get(f"dcgm[{i}].test").source == SOURCE for i in range(3))


def test_a_result_for_the_whole_node_names_no_gpu_with_the_reason():
    # nvvs 3.1.0 (NVIDIA/DCGM JsonResultTests.cpp "Deserialize real output"): deployment checks for all GPUs
    facts = add_dcgm(Facts(), diag("nvvs-3.1.0-real-output.txt"))
    assert facts.value("dcgm.count") == 17
    node = next(i for i in range(17) if facts.value(f"dcgm[{i}].test") == "Persistence Mode")
    gpu = facts.get(f"dcgm[{node}].gpu")
    assert (gpu.known, gpu.unknown) == (False, "not about one GPU")
    assert facts.value(f"dcgm[{node}].where") == "the node"


def test_dcgmi_that_could_not_run_leaves_the_count_unknown_with_its_reason():
    # what dcgmi prints without a host engine (NVIDIA/dcgm-exporter#46)
    facts = add_dcgm(Facts(), diag("no-hostengine.txt"))
    count = facts.get("dcgm.count")
    assert count.known is False
    assert count.unknown.startswith("dcgmi cannot reach the DCGM host engine")
    assert [name for name, _fact in facts.items()] == ["dcgm.count"]


def test_the_host_facts_are_kept():
    host = Facts({"driver.version": known("580.82.09", "nvml")}, {"gpus": "timed out"})
    facts = add_dcgm(host, diag("dcgm-4.2.3-gb10-level1.json"))
    assert facts.value("driver.version") == "580.82.09"
    assert facts.missing == {"gpus": "timed out"}
    assert facts.value("dcgm.count") == 1
    assert "dcgm.count" not in host  # the host's facts are not changed in place
