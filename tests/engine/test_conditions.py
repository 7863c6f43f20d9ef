"""Conditions evaluate in three values: a rule fires only when its condition is known to be true."""

from __future__ import annotations

import pytest

from gpudoctor.engine.conditions import Evaluation
from gpudoctor.facts import Facts, known, unknown


def facts(**values) -> Facts:
    items = {}
    for name, value in values.items():
        name = name.replace("__", ".").replace("_I0_", "[0].")
        items[name] = unknown(value[1]) if isinstance(value, tuple) and value[0] == "?" else known(value, "t")
    return Facts(items)


F = Facts(
    {
        "driver.version": known("580.159.04", "t"),
        "driver.max_cuda": known("13.0", "t"),
        "driver.max_cuda_major": known(13, "t"),
        "driver.nvml_status": known("ok", "t"),
        "gpus.count": known(1, "t"),
        "gpus[0].name": known("NVIDIA H200", "t"),
        "gpus[0].pcie.width_current": known(8, "t"),
        "gpus[0].pcie.width_max": known(16, "t"),
        "gpus[0].clocks.event_reasons": known(0x44, "t"),
        "gpus[0].clocks.event_reason_names": known(["SwPowerCap", "HwThermalSlowdown"], "t"),
        "gpus[0].ecc.uncorrected_volatile": unknown("not supported", "t"),
        "cudnn.versions": known(["9.19.0.56", "9.14.0"], "t"),
        "policy.gpus.model_pattern": known("(?i:h200)", "t"),
        "policy.driver.cuda": known(">=12.4,<14", "t"),
    }
)


@pytest.mark.parametrize(
    ("cond", "expected"),
    [
        ({"fact": "driver.max_cuda_major", "eq": 13}, True),
        ({"fact": "driver.max_cuda_major", "ne": 13}, False),
        ({"fact": "gpus[i].pcie.width_current", "lt": {"fact": "gpus[i].pcie.width_max"}}, True),
        ({"fact": "gpus[i].pcie.width_current", "ge": 16}, False),
        ({"fact": "driver.version", "version_ge": "525.60.13"}, True),
        ({"fact": "driver.version", "version_lt": "580.65.06"}, False),
        # 580.159 is newer than 580.65: a string comparison would say otherwise.
        ({"fact": "driver.version", "version_gt": "580.65.06"}, True),
        ({"fact": "driver.nvml_status", "in": ["ok", "x"]}, True),
        ({"fact": "driver.nvml_status", "not_in": ["ok"]}, False),
        ({"fact": "cudnn.versions", "contains": "9.14.0"}, True),
        ({"fact": "gpus[i].name", "matches": "H[12]00"}, True),
        ({"fact": "gpus[i].name", "matches": {"fact": "policy.gpus.model_pattern"}}, True),
        ({"fact": "gpus[i].name", "matches": {"fact": "policy.gpus.model"}}, None),  # not given
        # A range: every bound met, each compared as versions (13.0 is not below 13 as a string is).
        ({"fact": "driver.max_cuda", "version_in": ">=12.4,<14"}, True),
        ({"fact": "driver.max_cuda", "version_in": {"fact": "policy.driver.cuda"}}, True),
        ({"fact": "driver.max_cuda", "version_in": ">=13.1"}, False),
        ({"fact": "driver.max_cuda", "version_in": ">=12,<13"}, False),
        ({"fact": "driver.max_cuda", "version_in": "==13.0.0,!=12.8"}, True),
        ({"fact": "driver.max_cuda", "version_in": ">12.9,<=13"}, True),
        ({"fact": "driver.nvml_status", "version_in": ">=12.4"}, None),  # "ok" is no version
        ({"fact": "driver.max_cuda", "version_in": "~=13.0"}, None),  # not a range version_in reads
        ({"fact": "gpus[i].clocks.event_reasons", "bits_any": "0xC8"}, True),
        ({"fact": "gpus[i].clocks.event_reasons", "bits_all": "0x44"}, True),
        ({"fact": "gpus[i].clocks.event_reasons", "bits_none": 0x1}, True),
        ({"fact": "gpus[i].ecc.uncorrected_volatile", "gt": 0}, None),
        ({"fact": "gpus[i].ecc.uncorrected_volatile", "exists": True}, False),
        ({"fact": "gpus[i].ecc.uncorrected_volatile", "unknown": True}, True),
        ({"fact": "driver.version", "exists": True}, True),
        ({"fact": "no.such", "eq": 1}, None),
        # A string compared with a number is not comparable: unknown, never an exception.
        ({"fact": "gpus[i].name", "gt": 3}, None),
    ],
)
def test_comparisons(cond, expected):
    assert Evaluation(F, 0)(cond) is expected


UNKNOWN = {"fact": "gpus[i].ecc.uncorrected_volatile", "gt": 0}
TRUE = {"fact": "driver.max_cuda_major", "eq": 13}
FALSE = {"fact": "driver.max_cuda_major", "eq": 12}


@pytest.mark.parametrize(
    ("cond", "expected"),
    [
        ({"all": [TRUE, TRUE]}, True),
        ({"all": [TRUE, FALSE]}, False),
        ({"all": [UNKNOWN, FALSE]}, False),
        ({"all": [UNKNOWN, TRUE]}, None),
        ({"any": [UNKNOWN, TRUE]}, True),
        ({"any": [UNKNOWN, FALSE]}, None),
        ({"any": [FALSE, FALSE]}, False),
        ({"not": UNKNOWN}, None),
        ({"not": FALSE}, True),
    ],
)
def test_three_valued_logic(cond, expected):
    assert Evaluation(F, 0)(cond) is expected


def test_evaluation_remembers_what_it_read():
    ev = Evaluation(F, 0)
    ev({"all": [TRUE, UNKNOWN]})
    assert ev.read == {"driver.max_cuda_major": 13}
    assert ev.unknown == {"gpus[0].ecc.uncorrected_volatile": "not supported"}
