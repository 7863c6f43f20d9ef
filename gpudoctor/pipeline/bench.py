"""The bench pipeline: the host's facts, the measurements through the target interpreter's torch or CuPy,
and the bench facts they become judged by the bench rules (rules/bench/) into a Result, as a check's are;
the verdict is pipeline/verdict.py's. commands/bench.py wires it to the options and the renderers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from ..bench.model import BenchReport
from ..host.base import Deadline
from .result import Result, Target, Verdict
from .verdict import decide

NO_GPU = "No NVIDIA GPU here: nothing to benchmark."


class CannotBench(Exception):
    """The bench cannot start (no GPU count, no interpreter, a GPU index that does not exist) or its
    measurements could not run at all; the message is for the user, in one line."""


@dataclass(frozen=True)
class Bench:
    result: Result  # the bench facts and the bench rules' results
    verdict: Verdict
    report: BenchReport  # what the bench renderers show
    diag: Any = None  # the DCGM diagnostic (bench/dcgm.py), when asked for


def run_bench(
    host: Any,
    source: str,
    deadline: Deadline,
    fail_on: str,
    tests: tuple[str, ...],
    gpus: tuple[int, ...] = (),
    seconds: float = 1.0,
    test_timeout: float = 60.0,
    backend: str = "auto",
    earlier: Optional[dict[tuple, float]] = None,
    dcgm: Optional[int] = None,
    progress: Optional[Callable[[str, int, int], None]] = None,
) -> Bench:
    """Measure `tests` on the GPUs (all, or those `gpus` names) and judge them. Raises CannotBench, and
    RuleLoadError for bad bench rule files."""
    from ..bench import harness
    from ..bench.bench_facts import judge
    from ..bench.model import BenchRun
    from ..bench.rules import load_bench_rules
    from ..bench.sampler import Sampler
    from ..collect import collect as collect_facts
    from ..engine.evaluate import evaluate
    from ..knowledge import knowledge

    facts, probes = collect_facts(host, deadline)
    count = facts.get("gpus.count")
    if not count.known:
        raise CannotBench(f"cannot tell whether this host has a GPU: NVML {count.unknown}")
    python = facts.value("python.executable")
    if not python:
        raise CannotBench(f"--python: {facts.get('python.executable').unknown or 'no interpreter'}")
    listed = [
        harness.Gpu(i, facts.value(f"gpus[{i}].uuid"), facts.value(f"gpus[{i}].name") or "")
        for i in range(facts.count("gpus"))
    ]
    for g in gpus:
        if not 0 <= g < len(listed):
            raise CannotBench(f"--gpu {g}: this host has GPUs 0 to {len(listed) - 1}" if listed else NO_GPU)
    if not listed:
        run = BenchRun("not run", python=python, reason=NO_GPU)
    else:
        selected = [g for g in listed if not gpus or g.index in gpus]
        options = harness.Options(tests=tests, backend=backend, seconds=seconds, test_timeout=test_timeout)
        quiet = progress or (lambda _text, _done, _total: None)
        run = harness.run(python, selected, options, deadline, Sampler(host), quiet, selected=bool(gpus))
    if run.status == "not run" and run.reason != NO_GPU:
        raise CannotBench(f"bench could not run in {python}: {run.reason}")
    diag = _dcgm(host, dcgm, deadline) if dcgm is not None and listed else None
    judged, rows = judge(run, facts, knowledge(), earlier)
    if diag is not None:
        from ..bench.dcgm_facts import add_dcgm

        judged = add_dcgm(judged, diag)
    results = evaluate(load_bench_rules(dcgm=dcgm is not None), judged)
    result = Result(
        facts=judged,
        results=results,
        probes=probes,
        host_kind=host.kind,
        source=source,
        elapsed=run.seconds,
        profile="bench",
        target=Target(python, str(facts.value("python.selected_by") or "")),
    )
    verdict = decide(result, fail_on)
    report = BenchReport(
        run=run,
        rows=rows,
        findings=tuple(result.findings),
        hostname=facts.value("host.hostname") or "",
        verdict=verdict.code,
        fail_on=verdict.fail_on,
        unknown=tuple((r.rule.id, why_unknown(r.unknown_facts)) for r in results if r.status == "unknown"),
    )
    return Bench(result, verdict, report, diag)


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


def _dcgm(host: Any, level: int, deadline: Any) -> Any:
    from ..bench import dcgm

    return dcgm.run(host, level, timeout=max(1.0, deadline.remaining()))
