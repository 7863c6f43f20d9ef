from __future__ import annotations

import pytest

from gpudoctor.engine.template import UnsafeArgument, render, render_arg, size
from gpudoctor.facts import Facts, known, unknown

F = Facts(
    {
        "system.shm_bytes": known(67108864, "t"),
        "gpus[0].index": known(0, "t"),
        "gpus[0].clocks.event_reason_names": known(["SwPowerCap", "HwSlowdown"], "t"),
        "frameworks[0].version": known("2.5.1", "t"),
        "frameworks[1].version": known("2.5.1 --index-url http://evil", "t"),
        "python.executable": known("/opt/venv/bin/python", "t"),
        "gpus[0].ecc.uncorrected_volatile": unknown("not supported"),
        "python.venv": known(True, "t"),
    }
)


def test_render_with_filters_and_unknowns():
    text = "shm {system.shm_bytes|size}; {gpus[i].clocks.event_reason_names}; "
    text += "ecc {gpus[i].ecc.uncorrected_volatile}"
    assert render(text, F, 0) == "shm 64 MiB; SwPowerCap, HwSlowdown; ecc unknown"
    assert render("{python.venv}", F, None) == "yes"


@pytest.mark.parametrize(
    ("n", "text"), [(0, "0 B"), (1536, "1.5 KiB"), (1 << 30, "1 GiB"), (-1, "unlimited")]
)
def test_size(n, text):
    assert size(n) == text


def test_facts_in_commands_must_be_plain_tokens():
    assert render_arg("torch=={frameworks[i].version}", F, 0) == "torch==2.5.1"
    assert render_arg("{python.executable}", F, None) == "/opt/venv/bin/python"
    with pytest.raises(UnsafeArgument):
        render_arg("torch=={frameworks[i].version}", F, 1)
    with pytest.raises(UnsafeArgument):
        render_arg("{gpus[i].ecc.uncorrected_volatile}", F, 0)


def test_num_shows_a_measurement_as_people_read_it():
    from gpudoctor.engine.template import num

    got = [num(x) for x in (733.04, 55.12, 7.0, 0.0123, 63.02, 1979, 4170.4, 99.96, 0, -3.456, True, "n/a")]
    assert got == ["733", "55.1", "7", "0.0123", "63", "1979", "4170", "100", "0", "-3.46", "True", "n/a"]
    assert num(float("nan")) == "nan" and num(float("inf")) == "inf"


def test_plural_and_percent_filters():
    # The fleet rules' messages (rules/fleet/fleet.yaml): "1 of 8 nodes has ...", "2 of 8 nodes have ...".
    from gpudoctor.engine.template import FILTERS, percent

    assert [FILTERS["s"](n) for n in (1, 2, 0, [1], [1, 2])] == ["", "s", "s", "", "s"]
    assert [FILTERS["has"](n) for n in (1, 7, ["gpu-1"], ["gpu-1", "gpu-2"])] == [
        "has",
        "have",
        "has",
        "have",
    ]
    # Rounded down: a value under 90% of a median never reads as 90%; 0.29 is 29%, not 28% (float error).
    assert [percent(x) for x in (0.808, 0.89986, 0.29, 1.0, 2.5, "n/a")] == [
        "80%",
        "89%",
        "29%",
        "100%",
        "250%",
        "n/a",
    ]
