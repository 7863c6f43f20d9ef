"""A bench run as `bench[]` facts (bench/bench_facts.py): each measurement with its expectation, the NVML
samples taken during it and its baseline, judged on the facts of the real H200 capture
(tests/fixtures/h200-driver580-snapshot)."""

from __future__ import annotations

import pytest

from gpudoctor.bench.bench_facts import baseline_values, gpus_of, judge, key
from gpudoctor.bench.model import OK, TIMED_OUT, BenchRun, Measurement, Samples
from gpudoctor.collect import collect
from gpudoctor.host.base import Deadline
from gpudoctor.host.snapshot import SnapshotHost, load
from gpudoctor.knowledge import knowledge

from conftest import H200


@pytest.fixture(scope="module")
def h200():
    facts, _statuses = collect(SnapshotHost(load(str(H200))), Deadline(30))
    return facts


def m(test: str, value=None, status=OK, **kw) -> Measurement:
    return Measurement(test=test, gpu=0, status=status, value=value, **kw)


def test_a_run_becomes_bench_facts_with_ratios_samples_and_baseline(h200):
    busy = Samples(count=9, sm_mhz_median=1110, power_w_max=349.0, power_limit_w=350.0, event_reasons=0x4)
    run = BenchRun(
        "incomplete",
        measurements=(
            m("matmul_bf16", 376.2, samples=busy),
            m("h2d_pinned", 55.0, samples=Samples(count=3, pcie_gen_min=5, pcie_width_min=16)),
            m("h2d_pageable", 7.0),
            m("d2d", None, TIMED_OUT, detail="still running after 60 s, the worker was stopped"),
        ),
    )
    facts, rows = judge(run, h200, knowledge(), baseline={("matmul_bf16", 0, None): 740.0})
    v = facts.value
    assert (v("bench.count"), v("bench[0].ratio"), v("bench[0].percent")) == (4, 0.38, 38)
    assert (v("bench[0].power_limit_w"), v("bench[0].default_limit_w"), v("bench[0].sm_clock_ratio")) == (
        350.0,
        700.0,
        0.56,
    )
    assert v("bench[0].event_reason_names") == ["SwPowerCap"]
    assert (v("bench[0].baseline"), v("bench[0].baseline_ratio"), v("bench[0].baseline_percent")) == (
        740.0,
        0.508,
        49,
    )
    assert v("bench[0].group") == "NVIDIA H200 matmul_bf16"
    assert (v("bench[1].pcie_gen"), v("bench[1].pcie_gen_expected"), v("bench[2].pinned_ratio")) == (
        5,
        5,
        7.9,
    )
    assert facts.get("bench[2].expected").unknown == (
        "pageable copies go through the host's memory and CPU: see the pinned ones"
    )
    # Not measured is unknown with the reason, never zero.
    assert (
        facts.get("bench[3].value").unknown == "timed out: still running after 60 s, the worker was stopped"
    )
    assert (
        facts.get("bench[3].ratio").unknown == "timed out: still running after 60 s, the worker was stopped"
    )
    assert facts.get("bench[1].sm_mhz").unknown == "NVML gave no such reading during the test"
    assert facts.get("bench[2].sm_mhz").unknown == "not sampled"
    assert [(r.index, r.test, r.expected, r.baseline) for r in rows] == [
        (0, "matmul_bf16", 989, 740.0),
        (1, "h2d_pinned", 63.02, None),
        (2, "h2d_pageable", None, None),
        (3, "d2d", 4800, None),
    ]


# Measured on that H200 (shared/fixtures/h200-driver580/reference/bench.json: torch, 8192^3 products, 1 GiB
# copies) and NVML read 8 s into a bf16 matmul loop (reference/nvml_busy_load.json: SM clock 1425 MHz,
# clock event reasons 0x4, 706.891 W drawn against an enforced limit of 700 W, PCIe gen 5 x16).
UNDER_LOAD = Samples(
    count=1, sm_mhz_median=1425, mem_mhz_median=3201, power_w_max=706.891, power_limit_w=700.0,
    event_reasons=0x4, pcie_gen_min=5, pcie_width_min=16,
)  # fmt: skip
MEASURED = {
    "matmul_fp32": 50.576630593533125,  # "gemm_fp32_notf32": fp32 with TF32 off
    "matmul_tf32": 387.47070506299457,
    "matmul_bf16": 732.9451921557109,
    "matmul_fp16": 707.2233426625165,
    "h2d_pageable": 7.030723940463282,
    "d2h_pageable": 13.235768506973024,
    "h2d_pinned": 55.127100161656436,
    "d2h_pinned": 55.109625866481295,
    "d2d": 4165.6652417177,
}


def test_a_real_h200_run_is_judged_against_its_catalogue_figures(h200):
    run = BenchRun(
        "complete",
        measurements=tuple(Measurement(t, 0, OK, v, samples=UNDER_LOAD) for t, v in MEASURED.items()),
        gpus=(0,),
    )
    facts, rows = judge(run, h200, knowledge())
    by_test = {facts.value(f"bench[{i}].test"): i for i in range(facts.value("bench.count"))}

    def v(test, field):
        return facts.value(f"bench[{by_test[test]}].{field}")

    assert (v("matmul_bf16", "expected"), v("matmul_bf16", "percent")) == (989.0, 74)  # dense BF16 peak
    assert (v("matmul_fp32", "expected"), v("matmul_fp32", "percent")) == (67.0, 75)
    assert (v("d2d", "expected"), v("d2d", "ratio")) == (4800.0, 0.868)
    assert (v("h2d_pinned", "expected"), v("h2d_pinned", "percent")) == (63.02, 87)
    assert (v("h2d_pageable", "pinned_ratio"), v("d2h_pageable", "pinned_ratio")) == (7.8, 4.2)
    # at its power limit: the clocks drop, and NVML says why
    assert (v("matmul_bf16", "sm_clock_ratio"), v("matmul_bf16", "event_reason_names")) == (
        0.72,
        ["SwPowerCap"],
    )
    assert (v("matmul_bf16", "power_max_w"), v("matmul_bf16", "default_limit_w")) == (706.891, 700.0)
    assert (v("h2d_pinned", "pcie_gen"), v("h2d_pinned", "pcie_gen_expected")) == (5, 5)
    assert v("matmul_bf16", "group") == "NVIDIA H200 matmul_bf16"
    assert facts.get(f"bench[{by_test['matmul_bf16']}].baseline").unknown == "no baseline"
    assert [r.test for r in rows] == list(MEASURED)
    assert facts.value("gpus[0].name") == "NVIDIA H200"  # the host's facts are kept


def test_an_earlier_report_gives_the_baseline_by_test_and_gpus():
    # the shape `bench --format json` writes: facts.bench[] members with test, gpu, peer and value
    doc = {
        "facts": {
            "bench": [
                {"test": "matmul_bf16", "gpu": 0, "peer": None, "value": 732.945},
                {"test": "p2p", "gpu": 0, "peer": 1, "value": 389.2},
                {"test": "d2d", "gpu": 0, "value": None},  # not measured: no baseline
                {"test": "h2d_pinned", "gpu": 0, "value": True},  # not a number
                "not a member",
            ]
        }
    }
    assert baseline_values(doc) == {("matmul_bf16", 0, None): 732.945, ("p2p", 0, 1): 389.2}
    assert baseline_values({"findings": []}) is None
    assert baseline_values([1, 2]) is None


def test_the_gpus_a_measurement_used():
    run = BenchRun("complete", gpus=(0, 1, 2, 3))
    assert gpus_of(Measurement("p2p", 1, OK, 1.0, peer=3), run, None) == [1, 3]
    assert gpus_of(Measurement("allreduce", 0, OK, 1.0, gpus=4), run, None) == [0, 1, 2, 3]
    assert gpus_of(Measurement("d2d", 2, OK, 1.0), run, None) == [2]
    assert key(Measurement("p2p", 1, OK, 1.0, peer=3)) == ("p2p", 1, 3)
