"""Check results built from plain fact values, and bench reports built by hand, for the renderers' tests."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Optional

from gpudoctor.engine.evaluate import evaluate, parameters_given
from gpudoctor.engine.loader import load_rules, parse_rules
from gpudoctor.facts import Facts, known, unknown
from gpudoctor.pipeline.result import Result


def facts_of(values: dict) -> Facts:
    """{name: value}; a value {"unknown": reason} makes the fact unknown."""
    return Facts(
        {
            name: unknown(v["unknown"]) if isinstance(v, dict) and "unknown" in v else known(v, "test")
            for name, v in values.items()
        }
    )


def rules_of(yaml_text: str) -> list:
    rules, problems = parse_rules(yaml_text, "test.yaml")
    assert problems == [], problems
    return rules


def result_of(
    values: dict,
    rules: Optional[list] = None,
    ignore: Optional[dict] = None,
    timed_out: tuple = (),
) -> Result:
    facts = facts_of(values)
    return Result(
        facts=facts,
        # The shipped rules a check evaluates: the policy's only where `values` give what they read.
        results=evaluate(
            rules if rules is not None else [r for r in load_rules([]) if parameters_given(r, facts)], facts
        ),
        probes=[],
        host_kind="snapshot",
        source="test",
        elapsed=0.5,
        timed_out=list(timed_out),
        ignore=dict(ignore or {}),
    )


# Bench reports built by hand (gpudoctor/bench/model.py), for the bench renderers' tests.

H200 = "NVIDIA H200"
BASIS = {
    "matmul_fp32": "dense FP32 peak of the NVIDIA H200 (67 TFLOP/s)",
    "matmul_tf32": "dense TF32 peak of the NVIDIA H200 (494 TFLOP/s)",
    "matmul_bf16": "dense BF16 peak of the NVIDIA H200 (989 TFLOP/s)",
    "matmul_fp16": "dense FP16 peak of the NVIDIA H200 (989 TFLOP/s)",
    "matmul_fp8": "dense FP8 peak of the NVIDIA H200 (1979 TFLOP/s)",
    "h2d_pinned": "PCIe gen 5 x16 at 80% of 63.02 GB/s, one direction",
    "d2h_pinned": "PCIe gen 5 x16 at 80% of 63.02 GB/s, one direction",
    "d2d": "HBM3e bandwidth of the NVIDIA H200 (4800 GB/s)",
    "p2p": "NVLink 4, 18 links, one direction (450 GB/s)",
    "allreduce": "NVLink 4 bus bandwidth (360 GB/s)",
}


def bench_row(index, test, value=None, expected=None, gpu=0, status="ok", **more):
    from gpudoctor.bench.model import KINDS, LABELS, UNITS, Row

    if expected is not None:
        more.setdefault("expected_basis", BASIS.get(test, ""))
    return Row(
        index=index,
        test=test,
        label=LABELS[test],
        gpu=gpu,
        gpu_name=more.pop("gpu_name", H200),
        status=status,
        unit=UNITS[KINDS[test]],
        value=value,
        expected=expected,
        **more,
    )


def bench_finding(rule_id, severity, title, message, item=None, fix=(), why=""):
    from gpudoctor.engine.model import Finding, Rule

    rule = Rule(
        id=rule_id, title=title, severity=severity, category="gpu", when=None, message=message, why=why
    )
    return Finding(rule=rule, message=message, why=why, fix=tuple(fix), item=item)


def bench_run(status="complete", reason="", seconds=48.2, measurements=()):
    from gpudoctor.bench.model import BenchRun

    return BenchRun(
        status=status,
        backend="torch 2.13.0+cu128",
        python="/opt/venv/bin/python3",
        reason=reason,
        seconds=seconds,
        measurements=tuple(measurements),
    )


def healthy_bench():
    """One H200 as it should be: every matmul and copy near what the catalogue says."""
    from gpudoctor.bench.model import BenchReport

    rows = (
        bench_row(0, "matmul_fp32", 51.0, 67.0),
        bench_row(1, "matmul_tf32", 387.2, 494.0),
        bench_row(2, "matmul_bf16", 733.4, 989.0),
        bench_row(3, "matmul_fp16", 707.1, 989.0),
        bench_row(4, "h2d_pinned", 55.07, 63.02),
        bench_row(
            5,
            "h2d_pageable",
            7.0,
            no_expectation="pageable copies go through a staging buffer: the host's memory decides them",
        ),
        bench_row(6, "d2d", 4168.4, 4800.0),
    )
    return BenchReport(run=bench_run(), rows=rows, hostname="gpu-node-07", verdict=0)


def unhealthy_bench():
    """Two H200s, one of them slow: a finding on a row, a timed-out, a failed and a skipped test, baselines,
    an over-performer, p2p and all-reduce rows, a node-wide finding and a rule that could not judge."""
    from gpudoctor.bench.model import BenchReport, Measurement
    from gpudoctor.engine.model import FixStep

    rows = (
        bench_row(0, "matmul_bf16", 412.6, 989.0, baseline=740.0),
        bench_row(1, "matmul_fp16", 707.1, 989.0),
        bench_row(2, "matmul_fp8", status="timed out", detail="no answer within 30 s; the worker was killed"),
        bench_row(3, "h2d_pinned", 24.9, 63.02),
        bench_row(4, "d2h_pinned", status="failed", detail="RuntimeError: CUDA error: out of memory"),
        bench_row(5, "d2d", 4520.0, 4800.0, baseline=4480.0),
        bench_row(6, "matmul_bf16", 760.2, 989.0, gpu=1, baseline=740.0),
        bench_row(7, "matmul_fp8", gpu=1, status="skipped", detail="not asked for (--tests)"),
        bench_row(8, "d2d", 5210.0, 4800.0, gpu=1),
        bench_row(9, "p2p", 389.0, 450.0, peer=1),
        bench_row(10, "p2p", 121.5, 450.0, gpu=1, peer=0),
        bench_row(11, "allreduce", 301.0, 360.0),
    )
    findings = (
        bench_finding(
            "GD-BENCH-004",
            "warning",
            "Host copies at a fraction of the PCIe link",
            "H2D pinned on GPU 0 reached 24.9 GB/s, 40% of 63.02 GB/s; its link ran at PCIe gen 4 x8.",
            item=3,
            why="A link that trains below its maximum halves host copies each step down.",
            fix=(FixStep(kind="command", argv=("nvidia-smi", "-q", "-i", "0", "-d", "PCIE")),),
        ),
        bench_finding(
            "GD-BENCH-001",
            "error",
            "Matmul far below what the GPU should reach",
            "bf16 matmul on GPU 0 reached 413 TFLOP/s, 42% of 989; the SM clock stayed at 1110 MHz of 1980"
            " (HwSlowdown).",
            item=0,
            why="A GPU that slows its own clocks in hardware is too hot or short of power.",
            fix=(
                FixStep(kind="command", argv=("nvidia-smi", "-q", "-i", "0", "-d", "PERFORMANCE")),
                FixStep(kind="manual", text="Check the GPU's cooling and the power supply of its slot."),
            ),
        ),
        bench_finding(
            "GD-BENCH-006",
            "warning",
            "Peer-to-peer slower one way",
            "GPU 1 -> 0 reached 122 GB/s, 27% of 450.",
            item=10,
        ),
        bench_finding(
            "GD-BENCH-009",
            "info",
            "Clock events during the run",
            "SwPowerCap was seen on 1 of 2 GPUs while tests ran.",
        ),
    )
    measurements = (Measurement(test="allreduce", gpu=0, status="ok", value=301.0, gpus=2),)
    return BenchReport(
        run=bench_run(seconds=131.7, measurements=measurements),
        rows=rows,
        findings=findings,
        hostname="gpu-node-12",
        verdict=1,
        unknown=(("GD-BENCH-007", "bench[].power_limit_w is unknown: NVML gave no samples"),),
    )


def incomplete_bench():
    """The deadline cut the run short during the fp16 matmul."""
    from gpudoctor.bench.model import BenchReport

    rows = (
        bench_row(0, "matmul_fp32", 51.0, 67.0),
        bench_row(1, "matmul_tf32", 387.2, 494.0),
        bench_row(2, "matmul_bf16", 733.4, 989.0),
        bench_row(3, "matmul_fp16", status="timed out", detail="the run's deadline (120 s) passed"),
    )
    run = bench_run("incomplete", reason="the deadline of 120 s passed during matmul_fp16", seconds=120.0)
    return BenchReport(run=run, rows=rows, hostname="gpu-node-07", verdict=2)


def not_run_bench():
    from gpudoctor.bench.model import BenchReport, BenchRun

    run = BenchRun(status="not run", reason="No NVIDIA GPU here: nothing to benchmark.")
    return BenchReport(run=run, rows=(), hostname="ci-runner", verdict=0)


BENCH_CASES = {
    "healthy": healthy_bench,
    "unhealthy": unhealthy_bench,
    "incomplete": incomplete_bench,
    "notrun": not_run_bench,
}


HOSTILE = "evil<script>alert(1)</script>\x1b]0;owned\x07\x1b[2J\r"


def compare(actual: str, golden: Path) -> None:
    if os.environ.get("GPUDOCTOR_UPDATE_GOLDEN"):
        golden.write_text(actual, encoding="utf-8")
    assert golden.exists(), f"{golden} is missing: run with GPUDOCTOR_UPDATE_GOLDEN=1"
    assert actual == golden.read_text(encoding="utf-8")


def hostile_bench():
    """The unhealthy bench with machine-given text that tries to reach the terminal and the browser."""
    report = unhealthy_bench()
    rows = list(report.rows)
    rows[2] = dataclasses.replace(rows[2], detail=HOSTILE)
    rows[6] = dataclasses.replace(rows[6], gpu_name=HOSTILE)
    finding = bench_finding("GD-BENCH-001", "error", HOSTILE, HOSTILE, item=0, why=HOSTILE)
    return dataclasses.replace(
        report,
        hostname=HOSTILE,
        rows=tuple(rows),
        findings=(finding,),
        run=dataclasses.replace(report.run, backend=HOSTILE, python=HOSTILE),
        unknown=(("GD-BENCH-007", HOSTILE),),
    )
