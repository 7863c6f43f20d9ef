"""NVLink judged on the links a GPU's model wires (issue 10): NVML's link states, derived through the GPU
catalogue (rules/knowledge/gpus.yaml), judged by the shipped NVLink rules and the policy's NVLink rule.

Each case is a host as the gpus probe reports it, GPU by GPU: (NVML product name, links NVML reports a
state for, the numbers of the inactive ones). The expected findings are (rule, GPU index, message); the
comment on each case names the catalogue row the answer traces to.
"""

from __future__ import annotations

import pytest

from gpudoctor.derive import derive
from gpudoctor.engine.evaluate import evaluate_rule
from gpudoctor.engine.loader import load_rules
from gpudoctor.facts import Facts, known
from gpudoctor.policy import parse

PCIE_UNWIRED = [4, 5, 10, 11, 16, 17]

CASES = [
    pytest.param(
        # Row h100-pcie: nvlink_links 12, nvlink_unwired [4, 5, 10, 11, 16, 17]: a bridged pair is healthy.
        [("NVIDIA H100 PCIe", 18, PCIE_UNWIRED), ("NVIDIA H100 PCIe", 18, PCIE_UNWIRED)],
        [],
        id="two-bridged-h100-pcie",
    ),
    pytest.param(
        # Row h100-pcie: link 7 is one of the 12 wired links.
        [("NVIDIA H100 PCIe", 18, [4, 5, 7, 10, 11, 16, 17]), ("NVIDIA H100 PCIe", 18, PCIE_UNWIRED)],
        [("GD-NVLINK-001", 0, "GPU 0 (NVIDIA H100 PCIe): 1 of 12 NVLink links are down (links 7).")],
        id="h100-pcie-one-wired-link-down",
    ),
    pytest.param(
        # Row h100-pcie: no bridge, none of its 12 links up.
        [("NVIDIA H100 PCIe", 18, list(range(18)))],
        [("GD-NVLINK-002", 0, "GPU 0 (NVIDIA H100 PCIe) has 12 NVLink links and none is active.")],
        id="h100-pcie-without-bridges",
    ),
    pytest.param(
        # Row h100-sxm: nvlink_links 18, every link wired.
        [("NVIDIA H100 80GB HBM3", 18, []), ("NVIDIA H100 80GB HBM3", 18, [9])],
        [("GD-NVLINK-001", 1, "GPU 1 (NVIDIA H100 80GB HBM3): 1 of 18 NVLink links are down (links 9).")],
        id="h100-sxm-one-of-18-down",
    ),
    pytest.param(
        # Row a100-sxm4-40gb: nvlink_links 12; NVML answering for links 12 to 17 it does not have.
        [("NVIDIA A100-SXM4-40GB", 18, [12, 13, 14, 15, 16, 17])],
        [],
        id="a100-sxm4-links-it-does-not-have",
    ),
    pytest.param(
        # Row gb200: nvlink_links 18.
        [("NVIDIA GB200", 18, [0, 1])],
        [("GD-NVLINK-001", 0, "GPU 0 (NVIDIA GB200): 2 of 18 NVLink links are down (links 0, 1).")],
        id="gb200-two-down",
    ),
    pytest.param(
        # No row for an H800: every link NVML reports is judged, as before the catalogue knew wiring.
        [("NVIDIA H800", 18, [4, 5])],
        [("GD-NVLINK-001", 0, "GPU 0 (NVIDIA H800): 2 of 18 NVLink links are down (links 4, 5).")],
        id="unknown-model-keeps-todays-judgement",
    ),
    pytest.param(
        # Row h100-nvl sets no nvlink_links (its bridge wiring is not known): today's judgement.
        [("NVIDIA H100 NVL", 18, PCIE_UNWIRED)],
        [
            (
                "GD-NVLINK-001",
                0,
                "GPU 0 (NVIDIA H100 NVL): 6 of 18 NVLink links are down (links 4, 5, 10, 11, 16, 17).",
            )
        ],
        id="model-whose-wiring-is-unknown",
    ),
    pytest.param(
        # An RTX 5090 has no NVLink: NVML says NotSupported on link 0, the probe reports no links.
        [("NVIDIA GeForce RTX 5090", 0, [])],
        [],
        id="no-nvlink",
    ),
]


def host(gpus: list[tuple[str, int, list[int]]], given: dict = {}) -> Facts:  # noqa: B006 (read only)
    items = {"gpus.count": known(len(gpus), "test"), **given}  # given: a policy's facts
    for i, (name, links, down) in enumerate(gpus):
        for field, value in {
            "index": i,
            "name": name,
            "nvlink.links": links,
            "nvlink.links_up": links - len(down),
            "nvlink.links_down": len(down),
            "nvlink.down": down,
        }.items():
            items[f"gpus[{i}].{field}"] = known(value, "test")
    return derive(Facts(items))


def findings(facts: Facts, rule_ids: tuple[str, ...]) -> list[tuple[str, int, str]]:
    rules = {r.id: r for r in load_rules([])}
    out = []
    for rule_id in rule_ids:
        result = evaluate_rule(rules[rule_id], facts)
        assert result.status in ("passed", "fired"), (rule_id, result.status, result.unknown_facts)
        out += [(rule_id, f.item, f.message) for f in result.findings]
    return out


@pytest.mark.parametrize(("gpus", "expected"), CASES)
def test_nvlink_rules_judge_wired_links(gpus, expected):
    assert findings(host(gpus), ("GD-NVLINK-001", "GD-NVLINK-002")) == expected


def test_the_policy_requires_every_wired_link_active():
    policy = parse({"gpus": {"nvlink_all_active": True}}, "gpudoctor.toml")
    rule = {r.id: r for r in load_rules([])}["POLICY-NVLINK"]
    healthy = host([("NVIDIA H100 PCIe", 18, PCIE_UNWIRED)], policy.facts)  # row h100-pcie: 12 wired, all up
    assert evaluate_rule(rule, healthy).status == "passed"
    broken = host([("NVIDIA H100 PCIe", 18, [4, 5, 7, 10, 11, 16, 17])], policy.facts)
    (finding,) = evaluate_rule(rule, broken).findings
    assert finding.message == (
        "GPU 0 has 11 NVLink link(s) active and 1 of its wired links inactive; the policy requires NVLink "
        "with every link active."
    )
