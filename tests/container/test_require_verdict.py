"""container.require_*: the verdict on the host's GPUs, the GPUs NVIDIA_VISIBLE_DEVICES picks outside a
container, unknown inputs, and which toolkit mode the finding names.

Then NVIDIA's verdicts on NVIDIA_REQUIRE_* (nvidia_require_cases.yaml, each case citing the source line that
decides it), reached through the real container probe on the case's environment and the derived
container.require_* facts: the toolkit's part (which variables, legacy CUDA_VERSION, NVIDIA_DISABLE_REQUIRE,
the device request) and nvidia-container-cli's (the expression on each visible GPU). Last, the same verdict
from a real `gpudoctor` process on the fake NVML library (tests/nvmlrig.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpudoctor.container.require_verdict import TOOLKIT_CONFIG, derive, enforcement
from gpudoctor.facts import Facts, known, unknown
from gpudoctor.probes import container

from conftest import fake_host
from nvmlrig import gpudoctor, rule

NOT_SET = unknown("not set", "env")


def facts(visible="0", detected=False, **extra) -> Facts:
    items = {
        "container.detected": known(detected, "t"),
        "container.nvidia_requires": known(["NVIDIA_REQUIRE_CUDA=brand=tesla"], "env"),
        "container.cuda_version": NOT_SET,
        "container.nvidia_disable_require": NOT_SET,
        "container.nvidia_visible_devices": known(visible, "env") if visible is not None else NOT_SET,
        "container.toolkit_mode": known("legacy", TOOLKIT_CONFIG),
        "driver.version": known("550.163.01", "t"),
        "driver.max_cuda": known("12.4", "t"),
        "gpus.count": known(2, "t"),
        "gpus[0].brand": known("geforce", "t"),
        "gpus[0].compute_capability": known("8.6", "t"),
        "gpus[0].uuid": known("GPU-aaaa", "t"),
        "gpus[1].brand": known("tesla", "t"),
        "gpus[1].compute_capability": known("7.0", "t"),
        "gpus[1].uuid": known("GPU-bbbb", "t"),
    }
    items.update(extra)
    return Facts(items)


def values(out: dict) -> dict:
    return {k: (f.value if f.known else ("unknown", f.unknown)) for k, f in out.items()}


def test_on_the_host_nvidia_visible_devices_picks_the_gpus_judged():
    assert values(derive(facts("1")))["container.require_verdict"] == "met"
    assert values(derive(facts("GPU-bbbb")))["container.require_verdict"] == "met"
    refused = values(derive(facts("0")))
    assert refused["container.require_verdict"] == "unmet"
    assert refused["container.require_gpu"] == "GPU 0 (brand GeForce, arch 8.6)"
    assert refused["container.require_enforcement"].startswith(f"legacy mode ({TOOLKIT_CONFIG})")
    assert values(derive(facts("all")))["container.require_gpu"] == "GPU 0 (brand GeForce, arch 8.6)"
    assert values(derive(facts("7")))["container.require_verdict"] == (
        "unknown",
        "NVIDIA_VISIBLE_DEVICES names '7', which is no GPU gpudoctor sees here",
    )


def test_inside_a_container_every_gpu_nvml_lists_is_visible():
    # NVML inside a container numbers the GPUs it was given from 0; "1" names a host index.
    out = values(derive(facts("1", detected=True)))
    assert out["container.require_verdict"] == "unmet"
    assert out["container.require_enforcement"].startswith("this container is running")


def test_unknown_inputs_give_an_unknown_verdict_with_their_reason():
    out = derive(facts(**{"gpus[0].brand": unknown("not supported", "nvml")}))
    assert out["container.require_verdict"].unknown == "gpus[0].brand: not supported"
    out = derive(facts(**{"container.nvidia_requires": unknown("not recorded in snapshot", "env")}))
    assert out["container.require_verdict"].unknown == "container.nvidia_requires: not recorded in snapshot"
    out = derive(facts(**{"container.nvidia_visible_devices": unknown("not recorded in snapshot", "env")}))
    assert out["container.require_verdict"].unknown.startswith("container.nvidia_visible_devices")
    # Only refusals name where they are enforced, and what refuses.
    assert set(derive(facts("1"))) == {"container.require_verdict"}


def test_the_toolkit_s_disable_require_turns_the_check_off():
    out = derive(facts("0", **{"container.toolkit_disable_require": known(True, TOOLKIT_CONFIG)}))
    assert out["container.require_verdict"].value == "disabled"


def test_enforcement_by_mode():
    mode = lambda m: known(m, TOOLKIT_CONFIG)  # noqa: E731
    assert "jit-cdi from toolkit 1.18" in enforcement(False, mode("auto"))
    assert enforcement(False, mode("cdi")).endswith("the CUDA runtime inside fails at its first call instead")
    assert enforcement(False, mode("jit-cdi")).startswith("jit-cdi mode")
    assert "Jetson" in enforcement(False, mode("csv"))
    assert (
        enforcement(False, mode("turbo")) == f"turbo mode ({TOOLKIT_CONFIG}): a mode gpudoctor does not know"
    )
    assert enforcement(None, unknown("not found", TOOLKIT_CONFIG)).startswith(
        f"no toolkit configuration here ({TOOLKIT_CONFIG}: not found); legacy mode refuses it"
    )


# --- NVIDIA's verdicts, case by case ---------------------------------------------------------------------

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


def test_an_image_requirement_is_judged_per_gpu_as_the_container_runtime_judges_it(fake_lib, tmp_path):
    # A real process whose environment holds an image's variables (read through the live Host's env_names),
    # on a 550 driver with a Tesla-brand GPU 0 and a GPU 1 of brand NVIDIA, which nvidia-container-cli
    # calls Nvidia (src/driver.c @63d366ee:588-590): the branch group meets GPU 0 only, so the runtime
    # refuses the image on GPU 1.
    scenario = tmp_path / "mixed-brands.scn"
    scenario.write_text(
        "gpus 2\ndriver_version 550.163.01\ncuda_version 12040\ngpu.0.brand 2\ngpu.0.cc_major 8\n"
    )
    image = {
        "NVIDIA_REQUIRE_CUDA": "cuda>=12.9 brand=tesla,driver>=550,driver<551",
        "NVIDIA_REQUIRE_JETPACK": "csv-mounts=all",  # never a requirement
        "NVIDIA_VISIBLE_DEVICES": "all",
        "CUDA_VERSION": "12.9.1",
    }
    run = gpudoctor(fake_lib, scenario, "check", "--format", "json", extra_env=image)
    data = run.json()
    assert rule(data, "GD-CONTAINER-001")["status"] == "fired"
    (message,) = [f["message"] for f in data["findings"] if f["rule"] == "GD-CONTAINER-001"]
    assert message.startswith(
        "The runtime will refuse this image: unmet requirement NVIDIA_REQUIRE_CUDA=cuda>=12.9 "
        "brand=tesla,driver>=550,driver<551, judged on GPU 1 (brand Nvidia, arch 9.0) with driver "
        "550.163.01 (CUDA 12.4): requirement error: unsatisfied condition: cuda>=12.9, please update your "
        "driver to a newer version, or use an earlier cuda container. Where that is enforced: "
    )
    assert run.rc == 1
    facts = gpudoctor(fake_lib, scenario, "facts", "--format", "json", extra_env=image).json()
    assert facts["container"]["nvidia_requires"] == [
        "NVIDIA_REQUIRE_CUDA=cuda>=12.9 brand=tesla,driver>=550,driver<551",
        "NVIDIA_REQUIRE_JETPACK=csv-mounts=all",
    ]
    assert facts["container"]["require_gpu"] == "GPU 1 (brand Nvidia, arch 9.0)"
    # NVIDIA_DISABLE_REQUIRE as Go reads it: "yes" leaves the check on, "True" turns it off.
    for spelling, verdict in (("yes", "unmet"), ("True", "disabled")):
        env = dict(image, NVIDIA_DISABLE_REQUIRE=spelling)
        facts = gpudoctor(fake_lib, scenario, "facts", "--format", "json", extra_env=env).json()
        assert facts["container"]["require_verdict"] == verdict


def test_the_cuda_a_refused_requirement_asks_is_its_highest_cuda_bound():
    """As the nvidia/cuda images write it (NVIDIA_REQUIRE_CUDA of 12.4.1: `cuda>=12.4 brand=tesla,driver>=470,
    driver<471 ...`), and the LocalAI one (https://github.com/mudler/LocalAI/issues/4789) that asks none."""
    from gpudoctor.container.require_verdict import required_cuda

    assert required_cuda("cuda>=12.4 brand=tesla,driver>=470,driver<471") == "12.4"
    assert required_cuda("cuda>=12.10,cuda>=12.9") == "12.10"
    assert required_cuda("brand=tesla,driver>=470,driver<471") is None
