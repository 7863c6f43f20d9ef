"""`gpudoctor bench --format json`: the check's JSON report (report/json_report.py, docs/json-report.md)
of the bench's facts and rules, so that `gpudoctor fleet` merges it like any node report, with a `bench`
key beside it holding the run as measured: every measurement with its NVML samples (docs/bench.md)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Optional

from .json_report import report_data


def bench_data(result: Any, verdict: Any, report: Any, diag: Optional[Any] = None) -> dict[str, Any]:
    """`verdict`: the run's, decided once by the bench pipeline (pipeline/verdict.py)."""
    data = report_data(result, verdict)
    run = report.run
    data["bench"] = {
        "status": run.status,
        "reason": run.reason,
        "backend": run.backend,
        "python": run.python,
        "seconds": run.seconds,
        "measurements": [asdict(m) for m in run.measurements],
    }
    if diag is not None:
        data["dcgm"] = {
            "error": diag.error,
            "version": diag.version,
            "results": [asdict(r) for r in diag.results],
        }
    return data
