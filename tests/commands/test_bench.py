"""`gpudoctor bench` end to end, as users run it: a real process whose NVML is the fake libnvidia-ml
(tests/fake_nvml, loaded by the real pynvml) and whose target interpreter is a real venv holding the fake
torch (tests/fake_frameworks): the real worker, harness, sampler, expectations, rules and reports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.bench.torchfake import scenario

from nvmlrig import SCENARIOS

ROOT = Path(__file__).parents[2]


@dataclass
class Run:
    rc: int
    stdout: str
    stderr: str

    def json(self) -> dict:
        return json.loads(self.stdout)


def bench(
    lib_dir: Path, nvml: str, torch_scenario: Path, *args: str, cwd: Path | None = None, path: str = ""
) -> Run:
    env = {
        "PATH": path + os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/"),
        "LD_LIBRARY_PATH": str(lib_dir),
        "NO_COLOR": "1",
        "PYTHONPATH": str(ROOT),
        "FAKE_NVML_SCENARIO": str(SCENARIOS / f"{nvml}.scn"),
        "GPUDOCTOR_FAKE_GPU": str(torch_scenario),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "gpudoctor", "bench", "--seconds", "0.05", *args],
        cwd=str(cwd or lib_dir),
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return Run(proc.returncode, proc.stdout, proc.stderr)


def findings(data: dict) -> list[tuple[str, str]]:
    return [(f["rule"], f["message"]) for f in data["findings"]]


def test_a_healthy_h200_passes(fake_lib, fake_torch_python, tmp_path):
    run = bench(fake_lib, "h200-bench", scenario(tmp_path), "--python", fake_torch_python, "--format", "json")
    data = run.json()
    assert run.rc == 0, run.stderr
    assert data["schema"] == "gpudoctor.report" and data["bench"]["status"] == "complete"
    assert data["bench"]["backend"] == "torch 2.13.0+cu128"
    # Only the advice about pageable memory, which a healthy host gets too.
    assert [rule for rule, _ in findings(data)] == ["GD-BENCH-008", "GD-BENCH-008"]
    members = {m["test"]: m for m in data["facts"]["bench"]}
    assert sorted(members) == sorted(
        [
            "matmul_fp32",
            "matmul_tf32",
            "matmul_bf16",
            "matmul_fp16",
            "matmul_fp8",
            "h2d_pinned",
            "h2d_pageable",
            "d2h_pinned",
            "d2h_pageable",
            "d2d",
        ]
    )
    bf16 = members["matmul_bf16"]
    assert (bf16["value"], bf16["expected"], bf16["percent"]) == (733.0, 989.0, 74)
    # Sampled through the real NVML bindings while the test ran.
    assert (bf16["power_limit_w"], bf16["default_limit_w"], bf16["sm_mhz"]) == (700.0, 700.0, 1755)
    assert bf16["event_reason_names"] == ["SwPowerCap"]
    assert members["h2d_pinned"]["pcie_gen"] == 5
    unknown = [r["id"] for r in data["rules"] if r["status"] == "unknown"]
    assert unknown == []


def test_a_power_capped_gpu_is_named_with_its_cause(fake_lib, fake_torch_python, tmp_path):
    slow = scenario(
        tmp_path, rates={"matmul_bf16": 376, "matmul_fp16": 360, "matmul_tf32": 190, "matmul_fp32": 26}
    )
    run = bench(
        fake_lib,
        "h200-power-capped",
        slow,
        "--python",
        fake_torch_python,
        "--format",
        "json",
        "--test",
        "matmul",
        "--fail-on",
        "warning",
    )
    assert run.rc == 1, run.stderr
    capped = "while its power limit is 350 W, below the default 700 W."
    assert [msg for rule, msg in findings(run.json()) if rule == "GD-BENCH-001"] == [
        f"fp32 matmul on GPU 0 (NVIDIA H200) at 39% of its rate (26 of 67 TFLOP/s) {capped}",
        f"tf32 matmul on GPU 0 (NVIDIA H200) at 38% of its rate (190 of 494 TFLOP/s) {capped}",
        f"bf16 matmul on GPU 0 (NVIDIA H200) at 38% of its rate (376 of 989 TFLOP/s) {capped}",
        f"fp16 matmul on GPU 0 (NVIDIA H200) at 36% of its rate (360 of 989 TFLOP/s) {capped}",
    ]
    # fp8 ran at 66% of its peak: above the threshold, no finding.
    assert [rule for rule, _ in findings(run.json())] == ["GD-BENCH-001"] * 4


def test_no_gpu_is_a_clear_line_and_exit_0(fake_lib, fake_torch_python, tmp_path):
    empty = tmp_path / "no-nvml"
    empty.mkdir()
    run = bench(empty, "h200-bench", scenario(tmp_path), "--python", fake_torch_python, "--format", "json")
    assert run.rc == 0, run.stderr
    data = run.json()
    assert (data["bench"]["status"], data["bench"]["reason"]) == (
        "not run",
        "No NVIDIA GPU here: nothing to benchmark.",
    )
    assert data["findings"] == [] and data["facts"]["bench"] == []


def test_a_cpu_only_torch_cannot_bench_and_says_why(fake_lib, fake_torch_python, tmp_path):
    cpu = scenario(tmp_path, cpu_build=True, version="2.13.0+cpu")
    run = bench(fake_lib, "h200-bench", cpu, "--python", fake_torch_python)
    assert run.rc == 2
    assert run.stderr == (
        f"gpudoctor: bench could not run in {fake_torch_python}: torch 2.13.0+cpu is a CPU-only build "
        "(torch.version.cuda is None)\n"
    )


def test_a_hanging_test_ends_the_bench_with_an_error_finding(fake_lib, fake_torch_python, tmp_path):
    hang = scenario(tmp_path, hang="matmul_bf16")
    args = ("--python", fake_torch_python, "--format", "json", "--test-timeout", "1")
    run = bench(fake_lib, "h200-bench", hang, *args)
    assert run.rc == 1
    data = run.json()
    assert data["bench"]["status"] == "incomplete"
    assert data["bench"]["reason"] == "bf16 matmul on GPU 0 did not finish within 1 s: the worker was stopped"
    assert (
        "GD-BENCH-015",
        "bf16 matmul on GPU 0 did not finish: still running after 1 s, the worker was stopped.",
    ) in (findings(data))


def test_a_baseline_names_what_got_slower(fake_lib, fake_torch_python, tmp_path):
    args = ("--python", fake_torch_python, "--format", "json", "--test", "matmul_bf16", "--test", "d2d")
    first = bench(fake_lib, "h200-bench", scenario(tmp_path), *args)
    saved = tmp_path / "before.json"
    saved.write_text(first.stdout, encoding="utf-8")
    (tmp_path / "slower").mkdir()
    slower = scenario(tmp_path / "slower", rates={"matmul_bf16": 640})
    run = bench(fake_lib, "h200-bench", slower, *args, "--baseline", str(saved))
    assert findings(run.json()) == [
        ("GD-BENCH-013", "bf16 matmul on GPU 0 at 640 TFLOP/s, 13% below the baseline's 733.")
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--test", "matmul_int4"), "--test 'matmul_int4': expected one of copy, matmul, matmul_fp32, "),
        (("--gpu", "3"), "--gpu 3: this host has GPUs 0 to 0"),
        (("--dcgm", "5"), "--dcgm: expected 1 or 2 (the dcgmi diag run level)"),
    ],
)
def test_bad_options_are_refused(fake_lib, fake_torch_python, tmp_path, args, message):
    run = bench(fake_lib, "h200-bench", scenario(tmp_path), "--python", fake_torch_python, *args)
    assert run.rc == 2 and run.stderr.startswith(f"gpudoctor: {message}")


DCGM = ROOT / "tests" / "fixtures" / "bench" / "dcgm"


def test_dcgm_results_fold_into_the_findings(fake_lib, fake_torch_python, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    dcgmi = bin_dir / "dcgmi"
    capture = DCGM / "dcgm-4.5.2-gb10-level2-allowed.json"
    dcgmi.write_text(f"#!/bin/sh\ncat {capture}\nexit 226\n", encoding="utf-8")
    dcgmi.chmod(0o755)
    args = ("--python", fake_torch_python, "--format", "json", "--test", "d2d", "--dcgm", "2")
    data = bench(fake_lib, "h200-bench", scenario(tmp_path), *args, path=f"{bin_dir}:").json()
    assert findings(data) == [
        (
            "GD-BENCH-016",
            "DCGM's software test (Deployment) failed on GPU 0: Persistence Mode: Persistence mode for GPU 0 "
            'is disabled. Enable persistence mode by running "nvidia-smi -i <gpuId> -pm 1 " as root.; Error '
            "getting the SRAM Threshold Count for GPU 0. Status = 0. Value = 9223372036854775794. SRAM "
            "Threshold checking was skipped.",
        )
    ]
    assert [r["status"] for r in data["dcgm"]["results"]] == ["fail", "pass", "pass"]
    assert data["summary"]["exit_code"] == 1


def test_dcgm_missing_is_could_not_judge_not_a_pass(fake_lib, fake_torch_python, tmp_path):
    args = ("--python", fake_torch_python, "--format", "json", "--test", "d2d", "--dcgm", "1")
    data = bench(fake_lib, "h200-bench", scenario(tmp_path), *args).json()
    status = {r["id"]: (r["status"], r["unknown_facts"]) for r in data["rules"]}
    assert status["GD-BENCH-016"] == ("unknown", {"dcgm.count": "dcgmi not found: DCGM is not installed"})
    assert status["GD-BENCH-017"][0] == "unknown"


def test_fleet_compares_real_bench_reports_with_their_peers(fake_lib, fake_torch_python, tmp_path):
    reports = tmp_path / "reports"
    reports.mkdir()
    args = ("--python", fake_torch_python, "--format", "json", "--test", "matmul_bf16")
    for node, bf16 in (("a", 733), ("b", 729), ("c", 736), ("d", 600)):
        (tmp_path / node).mkdir()
        run = bench(fake_lib, "h200-bench", scenario(tmp_path / node, rates={"matmul_bf16": bf16}), *args)
        (reports / f"{node}.json").write_text(run.stdout, encoding="utf-8")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpudoctor",
            "fleet",
            str(reports),
            "--format",
            "json",
            "--fail-on",
            "warning",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, NO_COLOR="1", PYTHONPATH=str(ROOT)),
    )
    assert proc.returncode == 1, proc.stderr
    slower = [f for f in json.loads(proc.stdout)["fleet_findings"] if f["rule"] == "GD-FLEET-BENCH-001"]
    assert len(slower) == 1 and slower[0]["nodes"][0].endswith("#4")
    assert slower[0]["message"].startswith(
        "NVIDIA H200 matmul_bf16 600 TFLOP/s on vm#4 GPU 0 (82%), where the "
    )
