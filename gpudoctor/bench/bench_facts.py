"""A bench run as facts: the `bench[]` list (docs/facts.md) the bench rules judge, added to the host's facts.

Each measurement becomes one list member with its value, its expectation, what the NVML samples said
during it, and, with a baseline, the earlier value. A value that was not measured is unknown with the
reason (timed out, failed, skipped), so that no rule reads it as fine.
"""

from __future__ import annotations

from typing import Any, Optional

from ..facts import Fact, Facts, FactSpec, known, list_facts, unknown
from ..knowledge.rows import Knowledge
from ..probes.gpus import event_reason_names
from .expect import Expectation, expectation
from .model import LABELS, OK, UNITS, BenchRun, Measurement, Row

FACT_SPECS: tuple[FactSpec, ...] = (
    FactSpec("bench.count", "int", "", "measurements of this bench run (one per test and GPU, pair or node)"),
    FactSpec(
        "bench[].test",
        "str",
        "",
        "the test: matmul_fp32, matmul_tf32, matmul_bf16, matmul_fp16, matmul_fp8, h2d_pinned, h2d_pageable, "
        "d2h_pinned, d2h_pageable, d2d, p2p, allreduce",
    ),
    FactSpec("bench[].kind", "str", "", "`matmul`, `host_copy`, `device_copy`, `p2p` or `allreduce`"),
    FactSpec("bench[].label", "str", "", "the test as reports name it: `bf16 matmul`, `H2D pinned`"),
    FactSpec(
        "bench[].gpu", "int", "", "NVML index of the GPU measured (p2p: the source; allreduce: the first)"
    ),
    FactSpec("bench[].peer", "int", "", "p2p: NVML index of the destination GPU"),
    FactSpec("bench[].gpus", "int", "", "GPUs taking part (2 for p2p, all of the node's for allreduce)"),
    FactSpec("bench[].gpu_name", "str", "", "product name of the GPU measured, as gpus[].name"),
    FactSpec(
        "bench[].group", "str", "", "what the measurement compares with across a fleet: `<gpu_name> <test>`"
    ),
    FactSpec(
        "bench[].status", "str", "", "`ok`, `failed` (the test raised: bench[].detail says what), `skipped`"
    ),
    FactSpec(
        "bench[].detail",
        "str",
        "",
        "sizes and iterations of a test that ran; the reason for one that did not",
    ),
    FactSpec(
        "bench[].value",
        "float",
        "",
        "the result in bench[].unit: TFLOP/s for matmuls; GB/s (10^9 bytes a second) for copies, "
        "device-to-device counting bytes read and written, and all-reduce bus bandwidth as nccl-tests "
        "defines it",
    ),
    FactSpec("bench[].unit", "str", "", "`TFLOP/s` or `GB/s`"),
    FactSpec(
        "bench[].expected", "float", "", "what the GPU should reach, from the GPU catalogue, in bench[].unit"
    ),
    FactSpec(
        "bench[].expected_basis", "str", "", "what bench[].expected is: the catalogue figure and its row"
    ),
    FactSpec("bench[].ratio", "float", "", "bench[].value / bench[].expected, rounded to 3 places"),
    FactSpec("bench[].percent", "int", "%", "bench[].ratio as a whole percentage"),
    FactSpec("bench[].sm_mhz", "int", "MHz", "median SM clock sampled during the test"),
    FactSpec("bench[].sm_max_mhz", "int", "MHz", "the GPU's highest SM clock (gpus[].clocks.sm_max_mhz)"),
    FactSpec(
        "bench[].sm_clock_ratio", "float", "", "bench[].sm_mhz / bench[].sm_max_mhz, rounded to 2 places"
    ),
    FactSpec("bench[].power_max_w", "float", "W", "highest power draw sampled during the test"),
    FactSpec("bench[].power_limit_w", "float", "W", "power limit in force during the test (lowest sampled)"),
    FactSpec(
        "bench[].default_limit_w",
        "float",
        "W",
        "the GPU's default power limit (gpus[].power.default_limit_w)",
    ),
    FactSpec("bench[].temperature_max_c", "int", "°C", "highest GPU temperature sampled during the test"),
    FactSpec(
        "bench[].event_reasons",
        "int",
        "bitmask",
        "every clock event (throttle) reason sampled during the test, ORed; nvml.h bits as gpus[].clocks",
    ),
    FactSpec("bench[].event_reason_names", "list[str]", "", "those reasons by name, e.g. SwPowerCap"),
    FactSpec("bench[].pcie_gen", "int", "", "host copies: lowest PCIe generation sampled during the copy"),
    FactSpec(
        "bench[].pcie_width", "int", "lanes", "host copies: narrowest PCIe width sampled during the copy"
    ),
    FactSpec(
        "bench[].pcie_gen_expected", "int", "", "host copies: the PCIe generation the expectation assumes"
    ),
    FactSpec(
        "bench[].pcie_width_expected", "int", "lanes", "host copies: the PCIe width the expectation assumes"
    ),
    FactSpec(
        "bench[].pinned_ratio",
        "float",
        "",
        "pageable copies: the same direction's pinned result divided by this one, rounded to 1 place",
    ),
    FactSpec(
        "bench[].peer_access", "bool", "", "p2p: the two GPUs can use peer access (cudaDeviceCanAccessPeer)"
    ),
    FactSpec(
        "bench[].link", "str", "", "p2p and allreduce: `NVLink` or `PCIe`, the link the expectation assumes"
    ),
    FactSpec("bench[].baseline", "float", "", "the same test on the same GPU in the --baseline run"),
    FactSpec("bench[].baseline_ratio", "float", "", "bench[].value / bench[].baseline, rounded to 3 places"),
    FactSpec(
        "bench[].baseline_percent", "int", "%", "how far below the baseline: (1 - baseline_ratio) x 100"
    ),
)

SOURCE = "bench"


def _fact(value: Any, why: str) -> Fact:
    return known(value, SOURCE) if value is not None else unknown(why, SOURCE)


def gpus_of(m: Measurement, run: BenchRun, facts: Facts) -> list[int]:
    """The GPUs a measurement used, the one it is named by first."""
    if m.peer is not None:
        return [m.gpu, m.peer]
    if m.test == "allreduce":
        return list(run.gpus) or list(range(facts.count("gpus")))
    return [m.gpu]


def member(
    m: Measurement,
    e: Expectation,
    facts: Facts,
    pinned: Optional[float] = None,
    baseline: Optional[float] = None,
) -> dict[str, Fact]:
    """One measurement's facts, as list_facts takes them."""
    g = f"gpus[{m.gpu}]"
    name = facts.value(f"{g}.name")
    s = m.samples
    not_measured = m.detail or m.status if m.status != OK else ""
    no_samples = (s.unknown or "not sampled") if s.count == 0 else "NVML gave no such reading during the test"
    out: dict[str, Fact] = {
        "test": known(m.test, SOURCE),
        "kind": known(m.kind, SOURCE),
        "label": known(LABELS[m.test], SOURCE),
        "gpu": known(m.gpu, SOURCE),
        "gpus": known(m.gpus, SOURCE),
        "gpu_name": facts.get(f"{g}.name"),
        "group": _fact(f"{name} {m.test}" if name else None, "GPU name unknown"),
        "status": known(m.status, SOURCE),
        "detail": known(m.detail, SOURCE),
        "value": _fact(None if m.value is None else round(m.value, 3), f"{m.status}: {not_measured}"),
        "unit": known(UNITS[m.kind], SOURCE),
        "expected": _fact(None if e.value is None else float(e.value), e.none),
        "expected_basis": known(e.basis or e.none, SOURCE),
        "sm_max_mhz": facts.get(f"{g}.clocks.sm_max_mhz"),
        "default_limit_w": facts.get(f"{g}.power.default_limit_w"),
    }
    if m.peer is not None:
        out["peer"] = known(m.peer, SOURCE)
        out["peer_access"] = _fact(m.peer_access, "not reported")
    if e.link:
        out["link"] = known(e.link, SOURCE)
    ratio = m.value / e.value if m.value is not None and e.value else None
    why = e.none if e.value is None else f"{m.status}: {not_measured}"
    out["ratio"] = _fact(None if ratio is None else round(ratio, 3), why)
    out["percent"] = _fact(None if ratio is None else int(round(ratio * 100)), why)
    for key, value in (
        ("sm_mhz", s.sm_mhz_median),
        ("power_max_w", s.power_w_max),
        ("power_limit_w", s.power_limit_w),
        ("temperature_max_c", s.temperature_c_max),
        ("event_reasons", s.event_reasons),
    ):
        out[key] = _fact(value, no_samples)
    out["event_reason_names"] = _fact(
        None if s.event_reasons is None else event_reason_names(s.event_reasons), no_samples
    )
    sm_max = facts.value(f"{g}.clocks.sm_max_mhz")
    clock_ratio = round(s.sm_mhz_median / sm_max, 2) if s.sm_mhz_median is not None and sm_max else None
    out["sm_clock_ratio"] = _fact(clock_ratio, no_samples if s.sm_mhz_median is None else "no highest clock")
    if m.kind == "host_copy":
        out["pcie_gen"] = _fact(s.pcie_gen_min, no_samples)
        out["pcie_width"] = _fact(s.pcie_width_min, no_samples)
        out["pcie_gen_expected"] = _fact(e.pcie_gen, e.none or "not known")
        out["pcie_width_expected"] = _fact(e.pcie_width, e.none or "not known")
        if m.test.endswith("_pageable"):
            p = round(pinned / m.value, 1) if pinned and m.value else None
            out["pinned_ratio"] = _fact(p, "the pinned copy was not measured")
    b_ratio = round(m.value / baseline, 3) if baseline and m.value is not None else None
    b_why = "no baseline" if baseline is None else f"{m.status}: {not_measured}"
    out["baseline"] = _fact(baseline, "no baseline")
    out["baseline_ratio"] = _fact(b_ratio, b_why)
    out["baseline_percent"] = _fact(None if b_ratio is None else int(round((1 - b_ratio) * 100)), b_why)
    return out


def key(m: Measurement) -> tuple:
    """What identifies a measurement across runs of the same node: test and GPUs."""
    return (m.test, m.gpu, m.peer)


def baseline_values(doc: Any) -> Optional[dict[tuple, float]]:
    """What an earlier `bench --format json` report measured, by key(); None for another document."""
    members = doc.get("facts", {}).get("bench") if isinstance(doc, dict) else None
    if not isinstance(members, list):
        return None
    out = {}
    for m in members:
        if not isinstance(m, dict):
            continue
        value, test, gpu, peer = m.get("value"), m.get("test"), m.get("gpu"), m.get("peer")
        if isinstance(value, (int, float)) and not isinstance(value, bool) and isinstance(test, str):
            out[(test, gpu, peer if isinstance(peer, int) else None)] = float(value)
    return out


def judge(
    run: BenchRun, facts: Facts, kb: Knowledge, baseline: Optional[dict[tuple, float]] = None
) -> tuple[Facts, tuple[Row, ...]]:
    """The host's facts with the run's `bench[]` list added, and the run's rows for the reports."""
    values = {key(m): m.value for m in run.measurements if m.value is not None}
    members, rows = [], []
    for i, m in enumerate(run.measurements):
        name = facts.value(f"gpus[{m.gpu}].name") or ""
        e = expectation(m.test, name, facts, gpus_of(m, run, facts), kb)
        pinned = values.get((m.test.replace("_pageable", "_pinned"), m.gpu, m.peer))
        base = (baseline or {}).get(key(m))
        members.append(member(m, e, facts, pinned if m.test.endswith("_pageable") else None, base))
        rows.append(
            Row(
                index=i,
                test=m.test,
                label=LABELS[m.test],
                gpu=m.gpu,
                gpu_name=name,
                status=m.status,
                unit=UNITS[m.kind],
                value=m.value,
                peer=m.peer,
                expected=e.value,
                expected_basis=e.basis,
                no_expectation=e.none,
                baseline=base,
                detail=m.detail,
            )
        )
    items = dict(facts.items())
    items.update(list_facts("bench", members, SOURCE))
    return Facts(items, facts.missing), tuple(rows)
