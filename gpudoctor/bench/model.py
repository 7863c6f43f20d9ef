"""What a bench run produces: measurements as the worker reports them, NVML samples taken meanwhile, and
the run as a whole. Plain frozen data; judging happens elsewhere (bench/expect.py, the rules in
rules/bench/), rendering in report/bench_*.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

# Test names, in the order a run measures them. A matmul test per data type; copies by direction and host
# memory; device-to-device; per pair of GPUs; an all-reduce over all GPUs of the node.
MATMUL_TESTS = ("matmul_fp32", "matmul_tf32", "matmul_bf16", "matmul_fp16", "matmul_fp8")
COPY_TESTS = ("h2d_pinned", "h2d_pageable", "d2h_pinned", "d2h_pageable")
TESTS = MATMUL_TESTS + COPY_TESTS + ("d2d", "p2p", "allreduce")

# kind of each test: what its expectation is made of
KINDS = {
    **{t: "matmul" for t in MATMUL_TESTS},
    **{t: "host_copy" for t in COPY_TESTS},
    "d2d": "device_copy",
    "p2p": "p2p",
    "allreduce": "allreduce",
}

LABELS = {
    "matmul_fp32": "fp32 matmul",
    "matmul_tf32": "tf32 matmul",
    "matmul_bf16": "bf16 matmul",
    "matmul_fp16": "fp16 matmul",
    "matmul_fp8": "fp8 matmul",
    "h2d_pinned": "H2D pinned",
    "h2d_pageable": "H2D pageable",
    "d2h_pinned": "D2H pinned",
    "d2h_pageable": "D2H pageable",
    "d2d": "device-to-device",
    "p2p": "peer-to-peer",
    "allreduce": "NCCL all-reduce",
}

UNITS = {"matmul": "TFLOP/s", "host_copy": "GB/s", "device_copy": "GB/s", "p2p": "GB/s", "allreduce": "GB/s"}

# Measurement.status values
OK, FAILED, SKIPPED, TIMED_OUT = "ok", "failed", "skipped", "timed out"


@dataclass(frozen=True)
class Samples:
    """NVML readings of one GPU taken while a test ran (None where NVML could not say)."""

    count: int = 0
    sm_mhz_median: Optional[int] = None
    mem_mhz_median: Optional[int] = None
    power_w_max: Optional[float] = None
    power_w_median: Optional[float] = None
    power_limit_w: Optional[float] = None  # enforced limit, lowest seen
    temperature_c_max: Optional[int] = None
    event_reasons: Optional[int] = None  # every clock-event reason seen in any sample, ORed (nvml.h bits)
    pcie_gen_min: Optional[int] = None  # lowest link generation seen (links train down when idle)
    pcie_width_min: Optional[int] = None
    unknown: str = ""  # why there are no samples, when count is 0


@dataclass(frozen=True)
class Measurement:
    """One test on one GPU (or a pair, for p2p; every GPU, for allreduce, where `gpu` is the first).
    `gpu` is the NVML index. `value` is in UNITS[KINDS[test]]; None unless status is OK."""

    test: str
    gpu: int
    status: str
    value: Optional[float] = None
    peer: Optional[int] = None
    gpus: int = 1  # GPUs taking part (allreduce)
    detail: str = ""  # sizes and iterations when OK; the reason otherwise
    seconds: float = 0.0  # wall time the test took
    samples: Samples = field(default_factory=Samples)  # of `gpu` (for p2p: the source GPU)
    peer_access: Optional[bool] = None  # p2p: whether the pair can use peer access

    @property
    def kind(self) -> str:
        return KINDS[self.test]


@dataclass(frozen=True)
class BenchRun:
    """A whole run. `status`: `complete`, `incomplete` (the deadline or a dead worker cut it short; `reason`
    says which) or `not run` (no GPU, no framework that can reach one: `reason` says so)."""

    status: str
    backend: str = ""  # "torch 2.13.0+cu128", "cupy 13.3.0"
    python: str = ""  # the interpreter the worker ran in
    reason: str = ""
    measurements: tuple[Measurement, ...] = ()
    seconds: float = 0.0
    gpus: tuple[int, ...] = ()  # NVML indices of the GPUs the worker saw


@dataclass(frozen=True)
class Row:
    """One measurement as reports show it, judged against its expectation. `index` is its position in the
    `bench` facts list, which findings of the bench rules name as their `item`."""

    index: int
    test: str
    label: str  # LABELS[test]
    gpu: int
    gpu_name: str
    status: str
    unit: str
    value: Optional[float] = None
    peer: Optional[int] = None
    expected: Optional[float] = None
    expected_basis: str = ""  # what the expectation is: "dense BF16 peak of the NVIDIA H200 (989 TFLOP/s)"
    no_expectation: str = ""  # why there is none, when expected is None
    baseline: Optional[float] = None  # the same test on the same GPU in --baseline FILE
    detail: str = ""

    @property
    def ratio(self) -> Optional[float]:
        if self.value is None or not self.expected:
            return None
        return self.value / self.expected


@dataclass(frozen=True)
class BenchReport:
    """What the renderers get: the run, its rows, and the findings of the bench rules (engine Findings:
    `.rule.id`, `.severity`, `.message`, `.item` (a Row index or None), `.fix` steps with `.text`/`.argv`).
    `verdict` is the exit code computed once by the command; `unknown` lists (rule id, reason) for bench
    rules that could not be judged."""

    run: BenchRun
    rows: tuple[Row, ...]
    findings: tuple = ()
    hostname: str = ""
    verdict: int = 0
    fail_on: str = "error"
    unknown: tuple[tuple[str, str], ...] = ()
