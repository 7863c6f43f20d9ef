"""`gpudoctor bench`: measure the GPUs through the target interpreter's torch or CuPy, and judge the results
against the GPU catalogue with the bench rules (rules/bench/). The report is the check's (its JSON is a
gpudoctor.report that `gpudoctor fleet` merges), with the run's measurements and samples beside it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Optional

from ..datafiles import missing_directory, read_capped
from . import CommandError, Outcome, problems, use_color
from ._shared import collect, report_width

# What --test accepts: a test's name, or a group of them.
GROUPS = {
    "matmul": ("matmul_fp32", "matmul_tf32", "matmul_bf16", "matmul_fp16", "matmul_fp8"),
    "copy": ("h2d_pinned", "h2d_pageable", "d2h_pinned", "d2h_pageable"),
}
NO_GPU = "No NVIDIA GPU here: nothing to benchmark."


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


def why_unknown(unknown_facts: tuple, shown: int = 3) -> str:
    """Why a rule could not judge, in a line: its distinct reasons, and how many facts had one."""
    reasons: list[str] = []
    for _name, why in unknown_facts:
        if why not in reasons:
            reasons.append(why)
    text = "; ".join(reasons[:shown]) or "unknown"
    if len(reasons) > shown:
        text += f"; and {len(reasons) - shown} more"
    n = len(unknown_facts)
    return text + (f" ({n} facts)" if n > 1 else "")


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
    from ..bench import harness
    from ..bench.bench_facts import judge
    from ..bench.model import BenchReport, BenchRun
    from ..bench.rules import load_bench_rules
    from ..bench.sampler import Sampler
    from ..check import CheckResult
    from ..collect import collect as collect_facts
    from ..engine.evaluate import evaluate
    from ..engine.loader import RuleLoadError
    from ..knowledge import knowledge

    if len(python) > 1:
        raise CommandError("bench measures through one interpreter: give --python once")
    chosen = select_tests(tests)
    if html and missing_directory(Path(html)):  # said before minutes of measuring, not after
        raise CommandError(f"--html {html}: no such directory: {missing_directory(Path(html))}")
    earlier = read_baseline(baseline) if baseline else None
    host, source, deadline = collect(None, list(python), timeout)
    facts, probes = collect_facts(host, deadline)
    count = facts.get("gpus.count")
    if not count.known:
        raise CommandError(f"cannot tell whether this host has a GPU: NVML {count.unknown}")
    target = facts.value("python.executable")
    if not target:
        raise CommandError(f"--python: {facts.get('python.executable').unknown or 'no interpreter'}")
    listed = [
        harness.Gpu(i, facts.value(f"gpus[{i}].uuid"), facts.value(f"gpus[{i}].name") or "")
        for i in range(facts.count("gpus"))
    ]
    for g in gpus:
        if not 0 <= g < len(listed):
            raise CommandError(f"--gpu {g}: this host has GPUs 0 to {len(listed) - 1}" if listed else NO_GPU)
    if dcgm is not None and dcgm not in (1, 2):
        raise CommandError("--dcgm: expected 1 or 2 (the dcgmi diag run level)")
    if not listed:
        run_ = BenchRun("not run", python=target, reason=NO_GPU)
    else:
        selected = [g for g in listed if not gpus or g.index in gpus]
        options = harness.Options(tests=chosen, backend=backend, seconds=seconds, test_timeout=test_timeout)
        run_ = harness.run(target, selected, options, deadline, Sampler(host), _progress, selected=bool(gpus))
    if run_.status == "not run" and run_.reason != NO_GPU:
        raise CommandError(f"bench could not run in {target}: {run_.reason}")
    diag = _dcgm(host, dcgm, deadline) if dcgm is not None and listed else None
    judged, rows = judge(run_, facts, knowledge(), earlier)
    if diag is not None:
        from ..bench.dcgm_facts import add_dcgm

        judged = add_dcgm(judged, diag)
    try:
        rules = load_bench_rules(dcgm=dcgm is not None)
    except RuleLoadError as e:
        raise problems("bench rule files have", e) from None
    results = evaluate(rules, judged)
    result = CheckResult(
        facts=judged,
        results=results,
        probes=probes,
        host_kind=host.kind,
        source=source,
        elapsed=run_.seconds,
        profile="bench",
    )
    verdict = result.verdict(fail_on)
    report = BenchReport(
        run=run_,
        rows=rows,
        findings=tuple(result.findings),
        hostname=facts.value("host.hostname") or "",
        verdict=verdict,
        fail_on=fail_on,
        unknown=tuple((r.rule.id, why_unknown(r.unknown_facts)) for r in results if r.status == "unknown"),
    )
    if html:
        from ..datafiles import write_output
        from ..report import bench_html

        try:
            write_output(Path(html), bench_html.render(report))
        except OSError as e:
            raise CommandError(f"--html {html}: {e.strerror or e}") from None
    if fmt == "json":
        from ..report.bench_json import bench_data

        sys.stdout.write(json.dumps(bench_data(result, report, diag), indent=2) + "\n")
    else:
        from ..report import bench_text

        sys.stdout.write(bench_text.render(report, color=use_color(), width=report_width()))
    return Outcome(verdict)


def _dcgm(host: Any, level: int, deadline: Any) -> Any:
    from ..bench import dcgm

    return dcgm.run(host, level, timeout=max(1.0, deadline.remaining()))
