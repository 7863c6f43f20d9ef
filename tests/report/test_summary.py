"""The summary of the report: the Runtime line (what `check --deep` saw, in one line), and a summary that
fits an 80-column terminal."""

from __future__ import annotations

from gpudoctor.facts import Facts, known, unknown
from gpudoctor.pipeline.verdict import decide
from gpudoctor.report.summary import runtime_line, summary

from .reportkit import result_of


def facts(**values) -> Facts:
    items = {}
    for name, value in values.items():
        key = "runtime." + name.replace("__", ".")
        items[key] = unknown(value["unknown"]) if isinstance(value, dict) else known(value, "test")
    return Facts(items)


def test_a_failed_cuinit_is_named_by_its_curesult():
    f = facts(
        cuda__status="failed",
        cuda__result="CUDA_ERROR_SYSTEM_NOT_READY",
        cuda__code=802,
        torch__status={"unknown": "not installed"},
        jax__status="import failed",
        jax__error="ModuleNotFoundError: No module named 'jaxlib'",
    )
    assert runtime_line(f) == (
        "CUDA failed: CUDA_ERROR_SYSTEM_NOT_READY (802) · "
        "jax import failed: ModuleNotFoundError: No module named 'jaxlib'"
    )


def test_a_hung_import_is_unknown_not_missing():
    f = facts(cuda__status="ok", cuda__device_count=8, torch__status={"unknown": "timed out"})
    assert runtime_line(f) == "CUDA ok (8 device(s)) · torch unknown (timed out)"


def test_without_deep_there_is_no_runtime_line():
    assert "Runtime" not in [area for area, _lines in summary(Facts({}))]


def test_a_runtime_probe_that_did_not_finish_says_so():
    f = Facts({}, missing={"runtime": "timed out"})
    assert ("Runtime", ["unknown (timed out)"]) in summary(f)


def test_the_summary_wraps_inside_its_column_on_an_80_column_terminal():
    from gpudoctor.report.text import LABEL_WIDTH, render_plain

    long = " · ".join(f"part number {n} of a long summary line" for n in range(6))
    result = result_of({"system.os": long, "gpus.count": 0})
    lines = render_plain(result, decide(result, "error"), width=80, wrap=True).splitlines()
    system = next(i for i, line in enumerate(lines) if line.startswith("System"))
    assert all(len(line) <= 80 for line in lines[system : system + 4])
    assert lines[system + 1].startswith(" " * LABEL_WIDTH) and lines[system + 1][LABEL_WIDTH] != " "
    # Files and pipes keep one line per area (the golden reports).
    assert len(render_plain(result, decide(result, "error"), width=80).splitlines()[system]) > 80
