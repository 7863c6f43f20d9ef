"""`gpudoctor bench`: the options wired to the bench pipeline (pipeline/bench.py) and its renderers. The
report is the check's (its JSON is a gpudoctor.report that `gpudoctor fleet` merges), with the run's
measurements and samples beside it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

from ..datafiles import missing_directory, read_capped
from . import CommandError, Outcome, problems, use_color
from ._shared import collect, report_width

# What --test accepts: a test's name, or a group of them.
GROUPS = {
    "matmul": ("matmul_fp32", "matmul_tf32", "matmul_bf16", "matmul_fp16", "matmul_fp8"),
    "copy": ("h2d_pinned", "h2d_pageable", "d2h_pinned", "d2h_pageable"),
}


def select_tests(names: tuple[str, ...]) -> tuple[str, ...]:
    from ..bench.model import TESTS

    if not names:
        return TESTS
    wanted = set()
    for name in names:
        if name in GROUPS:
            wanted.update(GROUPS[name])
        elif name in TESTS:
            wanted.add(name)
        else:
            raise CommandError(
                f"--test {name!r}: expected one of {', '.join(sorted(GROUPS))}, {', '.join(TESTS)}"
            )
    return tuple(t for t in TESTS if t in wanted)


MAX_BASELINE_BYTES = 8 << 20  # a bench report is a few KiB a GPU


def read_baseline(path: str) -> dict[tuple, float]:
    """(test, gpu, peer) -> value of an earlier `bench --format json` run."""
    try:
        doc = json.loads(read_capped(path, MAX_BASELINE_BYTES))
    except OSError as e:
        raise CommandError(f"--baseline {path}: {e.strerror or e}") from None
    except ValueError as e:
        raise CommandError(f"--baseline {path}: not JSON ({e})") from None
    from ..bench.bench_facts import baseline_values

    values = baseline_values(doc)
    if values is None:
        raise CommandError(f"--baseline {path}: not a `gpudoctor bench --format json` report")
    return values


def _progress(text: str, done: int, total: int) -> None:
    if not sys.stderr.isatty():
        return
    if text == "done":
        sys.stderr.write("\r\033[K")
    else:
        sys.stderr.write(f"\r\033[K[{done + 1}/{total}] {text} ...")
    sys.stderr.flush()


def run(
    python: tuple[str, ...] = (),
    fmt: str = "text",
    fail_on: str = "error",
    timeout: float = 600.0,
    tests: tuple[str, ...] = (),
    gpus: tuple[int, ...] = (),
    seconds: float = 1.0,
    test_timeout: float = 60.0,
    backend: str = "auto",
    baseline: Optional[str] = None,
    html: Optional[str] = None,
    dcgm: Optional[int] = None,
) -> Outcome:
    from ..engine.loader import RuleLoadError
    from ..pipeline.bench import CannotBench, run_bench

    if len(python) > 1:
        raise CommandError("bench measures through one interpreter: give --python once")
    if dcgm is not None and dcgm not in (1, 2):
        raise CommandError("--dcgm: expected 1 or 2 (the dcgmi diag run level)")
    chosen = select_tests(tests)
    if html and missing_directory(Path(html)):  # said before minutes of measuring, not after
        raise CommandError(f"--html {html}: no such directory: {missing_directory(Path(html))}")
    earlier = read_baseline(baseline) if baseline else None
    host, source, deadline = collect(None, list(python), timeout)
    try:
        bench = run_bench(
            host, source, deadline, fail_on, chosen, gpus=gpus, seconds=seconds, test_timeout=test_timeout,
            backend=backend, earlier=earlier, dcgm=dcgm, progress=_progress,
        )  # fmt: skip
    except CannotBench as e:
        raise CommandError(str(e)) from None
    except RuleLoadError as e:
        raise problems("bench rule files have", e) from None
    report = bench.report
    if html:
        from ..datafiles import write_output
        from ..report import bench_html

        try:
            write_output(Path(html), bench_html.render(report))
        except OSError as e:
            raise CommandError(f"--html {html}: {e.strerror or e}") from None
    if fmt == "json":
        from ..report.bench_json import bench_data

        sys.stdout.write(
            json.dumps(bench_data(bench.result, bench.verdict, report, bench.diag), indent=2) + "\n"
        )
    else:
        from ..report import bench_text

        sys.stdout.write(bench_text.render(report, color=use_color(), width=report_width()))
    return Outcome(bench.verdict.code)
