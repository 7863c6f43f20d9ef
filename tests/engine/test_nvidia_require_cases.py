"""NVIDIA's verdicts on NVIDIA_REQUIRE_* (nvidia_require_cases.yaml, each case citing the source line that
decides it), reached through the real container probe on the case's environment and the derived
container.require_* facts: the toolkit's part (which variables, legacy CUDA_VERSION, NVIDIA_DISABLE_REQUIRE,
the device request) and nvidia-container-cli's (the expression on each visible GPU)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpudoctor.container_verdict import derive
from gpudoctor.facts import Facts, known
from gpudoctor.probes import container

from conftest import fake_host

CASES = yaml.safe_load((Path(__file__).parent / "nvidia_require_cases.yaml").read_text())
DEFAULTS = {"driver": "550.163.01", "cuda": "12.4", "gpus": [["tesla", "7.0"]]}


def facts_of(case: dict) -> Facts:
    env = {"NVIDIA_VISIBLE_DEVICES": "all", **case["requires"], **case.get("env", {})}
    items = dict(container.probe(fake_host(env=env, dirs={"/": []}, read_errors={})))
    gpus = case.get("gpus", DEFAULTS["gpus"])
    items["driver.version"] = known(case.get("driver", DEFAULTS["driver"]), "case")
    items["driver.max_cuda"] = known(case.get("cuda", DEFAULTS["cuda"]), "case")
    items["gpus.count"] = known(len(gpus), "case")
    for i, (brand, arch) in enumerate(gpus):
        items[f"gpus[{i}].brand"] = known(brand, "case")
        items[f"gpus[{i}].compute_capability"] = known(arch, "case")
    return Facts(items)


def test_the_table_is_large_and_every_case_cites_its_source():
    assert len(CASES) >= 60
    assert len({c["name"] for c in CASES}) == len(CASES)
    for case in CASES:
        assert case["source"].split(":")[0].split(" ")[0] in (
            "dsl.c",
            "configure.c",
            "driver.c",
            "cuda_image.go",
            "devices.go",
        ), case["name"]
    verdicts = {c["verdict"] for c in CASES}
    assert verdicts == {"met", "unmet", "invalid", "disabled", "not a GPU container", "not required"}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_nvidia_verdict(case):
    facts = facts_of(case)
    out = derive(facts)
    verdict = out["container.require_verdict"]
    assert verdict.known, verdict.unknown
    assert verdict.value == case["verdict"]
    refused = case["verdict"] in ("unmet", "invalid")
    assert ("container.require_error" in out) == refused
    if "error" in case:
        assert out["container.require_error"].value == case["error"]
    if "failed" in case:
        assert out["container.require_failed"].value == case["failed"]
    if "gpu" in case:
        where = out["container.require_gpu"].value
        assert where.startswith(f"GPU {case['gpu']} " if case["gpu"] is not None else "no visible GPU"), where
