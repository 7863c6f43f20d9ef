"""Issue 10's must-show plans, end to end: host facts -> derived facts -> the shipped rules -> the plan.

Each expected pin is traced, in a comment, to the table rows it comes from (`rules/knowledge/` left out of
the file names); the resolvers' own cases are in tests/resolvers/.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

from gpudoctor.derive import derive
from gpudoctor.engine.evaluate import evaluate
from gpudoctor.engine.loader import load_rules
from gpudoctor.facts import Facts, known
from gpudoctor.knowledge import Knowledge, knowledge
from gpudoctor.pipeline.result import Result
from gpudoctor.plan import FixPlan, build_plan

EXE = "/venv/bin/python"
INDEX = "https://download.pytorch.org/whl/"


def host_facts(
    driver: str,
    gpu: str,
    cc: str,
    torch: str,
    cuda: Optional[str] = None,
    python: str = "3.11.9",
    machine: str = "x86_64",
) -> Facts:
    """One GPU, one torch (a CUDA build when `cuda` is given, else CPU-only), pip in /venv."""
    major = int(driver.split(".")[0])
    max_cuda = {535: "12.2", 550: "12.4", 570: "12.8", 580: "13.0"}[major]
    values: dict[str, Any] = {
        "driver.version": driver,
        "driver.max_cuda": max_cuda,
        "driver.max_cuda_major": int(max_cuda.split(".")[0]),
        "gpus.count": 1,
        "gpus[0].index": 0,
        "gpus[0].name": gpu,
        "gpus[0].compute_capability": cc,
        "python.executable": EXE,
        "python.version": python,
        "python.machine": machine,
        "python.prefix": "/venv",
        "python.installer": "pip",
        "frameworks.count": 1,
        "frameworks[0].name": "torch",
        "frameworks[0].distribution": "torch",
        "frameworks[0].version": torch,
        "frameworks[0].build": "cuda" if cuda else "cpu",
    }
    if cuda:
        values.update({"frameworks[0].cuda": cuda, "frameworks[0].cuda_major": int(cuda.split(".")[0])})
    return derive(Facts({name: known(value, "test") for name, value in values.items()}))


def plan(facts: Facts, kb: Optional[Knowledge] = None) -> tuple[list[str], FixPlan]:
    result = Result(facts, evaluate(load_rules([]), facts), [], "test", "test", 0.0)
    errors = [f.rule.id for f in result.findings if f.severity == "error"]
    return errors, build_plan(result.findings, facts, kb or knowledge())


def pip_steps(p: FixPlan) -> list[tuple[str, ...]]:
    return [s.argv for s in p.steps if s.kind == "pip"]


def test_rtx5090_driver_570_torch_2_6_cu124_gets_a_cu128_build_with_its_companions():
    # gpus.yaml rtx-5090: 12.0. torch.yaml 2.6 cu124 stops at 9.0, so GD-ARCH-001 is an error. The resolver:
    # 2.15-2.12 have no sm_120 variant that 570.133.07 runs natively (cu130/cu132 need the 13.x floor 580;
    # 2.12 cu129 would need minor-version compatibility: 12.9 is 575.51.03); 2.11 cu128 lists 12.0 and
    # 12.8 needs 570.26. torch_companions.yaml 2.11.0: torchvision 0.26.0, torchaudio 2.11.1.
    errors, p = plan(host_facts("570.133.07", "NVIDIA GeForce RTX 5090", "12.0", "2.6.0+cu124", "12.4"))
    assert "GD-ARCH-001" in errors
    assert pip_steps(p) == [
        (
            EXE, "-m", "pip", "install", "torch==2.11.0+cu128", "torchvision==0.26.0+cu128",
            "torchaudio==2.11.1", "--index-url", INDEX + "cu128",
        )
    ]  # fmt: skip
    assert "GD-ARCH-001" in p.steps[0].rules


def test_v100_driver_580_torch_2_11_cu130_gets_cu126_of_the_same_release():
    # torch.yaml 2.11: cu130 and cu128 start at 7.5; cu126 lists 7.0 and 580.95.05 meets 12.6's 560.28.03.
    errors, p = plan(host_facts("580.95.05", "Tesla V100-SXM2-32GB", "7.0", "2.11.0+cu130", "13.0"))
    assert errors == ["GD-ARCH-001"]
    assert pip_steps(p) == [
        (
            EXE, "-m", "pip", "install", "torch==2.11.0+cu126", "torchvision==0.26.0+cu126",
            "torchaudio==2.11.1", "--index-url", INDEX + "cu126",
        )
    ]  # fmt: skip


def _tables_ending_at(kb: Knowledge, last: str) -> Knowledge:
    cut = tuple(int(x) for x in last.split("."))
    releases = tuple(r for r in kb.torch_releases if tuple(int(x) for x in r.version.split(".")) <= cut)
    companions = tuple(c for c in kb.torch_companions if tuple(int(x) for x in c.torch.split(".")[:2]) <= cut)
    return dataclasses.replace(kb, torch_releases=releases, torch_companions=companions)


def test_a_torch_newer_than_the_tables_is_never_planned_down():
    # Tables that end at 2.13, torch 2.14.0+cu130 on a CUDA 12.8 driver (GD-CUDA-001, an error) and a
    # CPU-only 2.14.0 (GD-FW-001, an error): nothing in either plan installs torch; each says why.
    kb = _tables_ending_at(knowledge(), "2.13")
    for facts in (
        host_facts("570.133.07", "NVIDIA H100 80GB HBM3", "9.0", "2.14.0+cu130", "13.0"),
        host_facts("580.95.05", "NVIDIA H100 80GB HBM3", "9.0", "2.14.0"),
    ):
        errors, p = plan(facts, kb)
        assert errors and not any("torch==" in " ".join(argv) for argv in pip_steps(p)), p.steps
        manual = [s.text for s in p.steps if s.resolver == "torch"]
        assert manual and all("which ends at 2.13: gpudoctor is older than your torch" in t for t in manual)


def test_a_warning_on_driver_550_never_downgrades_torch_2_9():
    # GD-CUDA-002 (a warning): 2.9.0+cu128 runs on 550 through minor-version compatibility. Its fix avoids
    # minor-version compatibility and, being a warning's, never downgrades: no 2.9 or newer variant runs
    # natively on 550 (every one needs CUDA 12.6 or newer: 560.28.03), so the plan is the driver for the
    # installed CUDA 12.8 (cuda_drivers.yaml 12.8 update 0: 570.26) and a reboot, not torch 2.7 or older.
    errors, p = plan(host_facts("550.127.05", "NVIDIA H100 80GB HBM3", "9.0", "2.9.0+cu128", "12.8"))
    assert errors == []
    assert pip_steps(p) == []
    assert [s.kind for s in p.steps] == ["driver", "manual", "reboot"]
    assert p.steps[0].text.startswith("Upgrade the NVIDIA driver (now 550.127.05) to 570.26 or newer")
    assert (
        "older releases (2.8, 2.7, 2.6, 2.5, 2.4, 2.3, 2.2, 2.1, 2.0, 1.13) are not considered"
        in " ".join(p.steps[1].reasons)
    )


def test_torch_2_0_1_cpu_on_an_a100_gets_companions_pip_accepts():
    # torch_companions.yaml 2.0.1: torchvision 0.15.2 and torchaudio 2.0.2 require torch==2.0.1 (0.15.1 and
    # 2.0.1 require 2.0.0). torch.yaml 2.0: cu118 lists 8.0; 535 meets 11.8's 520.61.05.
    errors, p = plan(host_facts("535.183.01", "NVIDIA A100-SXM4-80GB", "8.0", "2.0.1"))
    assert errors == ["GD-FW-001"]
    assert pip_steps(p) == [
        (
            EXE, "-m", "pip", "install", "torch==2.0.1+cu118", "torchvision==0.15.2+cu118",
            "torchaudio==2.0.2+cu118", "--index-url", INDEX + "cu118",
        )
    ]  # fmt: skip


def test_gh200_aarch64_cpu_torch_2_7_gets_pins_that_exist_for_aarch64():
    # gpus.yaml gh200: 9.0. torch.yaml 2.7: only cu128 has an aarch64 wheel (arch_aarch64 9.0, 10.0, 12.0;
    # cu118 and cu126 list none), and 570.133.07 meets 12.8's 570.26. torch_companions.yaml 2.7.0:
    # torchvision 0.22.0 and torchaudio 2.7.0, with aarch64 wheels. torch.yaml 2.7 aarch64_companion_tag:
    # false (test-infra release/2.7 version.py: no build suffix on linux-aarch64), so they are pinned without
    # a tag and removed first. It records no aarch64_torch_tag (no source read says whether the cu128 index's
    # aarch64 torch wheel is tagged), so torch is pinned without one as well, which matches that wheel either
    # way, and removed first (an installed CPU torch 2.7.0 would satisfy torch==2.7.0).
    facts = host_facts("570.133.07", "NVIDIA GH200 480GB", "9.0", "2.7.0", machine="aarch64")
    errors, p = plan(facts)
    assert errors == ["GD-FW-001"]
    assert pip_steps(p) == [
        (EXE, "-m", "pip", "uninstall", "-y", "torch", "torchvision", "torchaudio"),
        (
            EXE, "-m", "pip", "install", "torch==2.7.0", "torchvision==0.22.0", "torchaudio==2.7.0",
            "--index-url", INDEX + "cu128",
        ),
    ]  # fmt: skip
    # The same host as x86_64 keeps 2.7 with its highest native variant that lists 9.0, tags everywhere.
    errors, p = plan(host_facts("570.133.07", "NVIDIA H100 80GB HBM3", "9.0", "2.7.0"))
    assert pip_steps(p)[0][4:] == (
        "torch==2.7.0+cu128", "torchvision==0.22.0+cu128", "torchaudio==2.7.0+cu128",
        "--index-url", INDEX + "cu128",
    )  # fmt: skip


def test_two_h100_pcie_with_their_unwired_links_inactive_get_no_nvlink_finding():
    # gpus.yaml h100-pcie: nvlink_links 12, nvlink_unwired [4, 5, 10, 11, 16, 17]: NVML reports 18 links,
    # the six unwired ones inactive by design. Derived facts, then every shipped rule: nothing about NVLink.
    values: dict[str, Any] = {"gpus.count": 2}
    for i in range(2):
        values.update({
            f"gpus[{i}].index": i,
            f"gpus[{i}].name": "NVIDIA H100 PCIe",
            f"gpus[{i}].nvlink.links": 18,
            f"gpus[{i}].nvlink.links_up": 12,
            f"gpus[{i}].nvlink.links_down": 6,
            f"gpus[{i}].nvlink.down": [4, 5, 10, 11, 16, 17],
        })  # fmt: skip
    facts = derive(Facts({name: known(value, "test") for name, value in values.items()}))
    results = evaluate(load_rules([]), facts)
    nvlink = {r.rule.id: r.status for r in results if r.rule.id.startswith("GD-NVLINK")}
    assert nvlink == {"GD-NVLINK-001": "passed", "GD-NVLINK-002": "passed"}
    # The same cards with wired link 7 down: GD-NVLINK-001 fires for each.
    for i in range(2):
        values.update({f"gpus[{i}].nvlink.links_up": 11, f"gpus[{i}].nvlink.links_down": 7,
                       f"gpus[{i}].nvlink.down": [4, 5, 7, 10, 11, 16, 17]})  # fmt: skip
    facts = derive(Facts({name: known(value, "test") for name, value in values.items()}))
    fired = [f.rule.id for f in Result(facts, evaluate(load_rules([]), facts), [], "t", "t", 0.0).findings]
    assert fired.count("GD-NVLINK-001") == 2


def test_gh200_driver_550_cpu_torch_2_5_1_keeps_2_5_with_its_cu124_aarch64_wheel():
    # Issue 23: a GH200 (gpus.yaml gh200: 9.0, aarch64) on driver 550 with a CPU-only torch 2.5.1 (and, from
    # the same default index, torchvision 0.20.1 and torchaudio 2.5.1) was planned torch 2.14.1+cu126 alone,
    # through minor-version compatibility, with the old companions left behind.
    # torch.yaml 2.5 cu124: arch_aarch64 5.0 ... 9.0 (pt-builder-2.5-aarch64-version, pt-select-compute-arch,
    # pt-pr-140844), and 550.127.05 meets 12.4's 550.54.14 (cuda_drivers.yaml 12.4 update 0): the installed
    # release runs natively, so it is kept. torch_companions.yaml 2.5.1: torchvision 0.20.1 and torchaudio
    # 2.5.1, both with aarch64 wheels. torch.yaml 2.5 aarch64_torch_tag and aarch64_companion_tag are false:
    # the cu124 index's aarch64 wheels are plain 2.5.1 / 0.20.1 / 2.5.1 (pytorch/builder release/2.5
    # aarch64_wheel_ci_build.py:186-190; pytorch/test-infra release/2.5 version.py:107), the very versions
    # of the CPU builds installed, so all three are removed first and pinned without a tag.
    facts = host_facts("550.127.05", "NVIDIA GH200 480GB", "9.0", "2.5.1", machine="aarch64")
    errors, p = plan(facts)
    assert errors == ["GD-FW-001"]
    assert pip_steps(p) == [
        (EXE, "-m", "pip", "uninstall", "-y", "torch", "torchvision", "torchaudio"),
        (
            EXE, "-m", "pip", "install", "torch==2.5.1", "torchvision==0.20.1", "torchaudio==2.5.1",
            "--index-url", INDEX + "cu124",
        ),
    ]  # fmt: skip
    install = p.steps[-1]
    assert install.minor_compat is False
    assert install.reasons[0] == (
        "keeps torch 2.5 (installed 2.5.1, a CPU-only build); cu124: its best variant for this host"
    )
    assert "driver 550.127.05 meets CUDA 12.4's minimum 550.54.14" in install.reasons
    assert "sm_90 (NVIDIA GH200 480GB): native kernels (built for 5.0, 8.0, 8.6, 8.9, 9.0)" in install.reasons
    assert (
        "aarch64: torch, torchvision and torchaudio on the cu124 index: no +cu124 tag (PyTorch's build "
        "scripts for torch 2.5 give their aarch64 wheels none), so they are pinned without one, which "
        "matches the index's wheel either way, and removed first (pip would keep an installed CPU build of "
        "the same version)"
    ) in install.notes
