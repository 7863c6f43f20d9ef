"""`gpudoctor nccl`: the transports NCCL will use on this host (or a snapshot), predicted from its facts by
NCCL's own rules (gpudoctor/nccl/), with what a `bench` report measured and what an NCCL_DEBUG=INFO log
shows NCCL chose. Exit 1 when a pair or GPU would take a slower path than the hardware allows, or the log
disagrees with the prediction; 2 when an input cannot be read."""

from __future__ import annotations

import sys
from typing import Any, NamedTuple, Optional

from . import CommandError, Outcome
from ._shared import collect


class LogSummary(NamedTuple):
    path: str
    version: Optional[str]
    pairs: int  # GPU pairs whose transport the log shows
    problem: str  # why it was not compared ("" when it was)
    network_gpus: int = 0  # GPUs whose transport to the network the log shows


class NcclView(NamedTuple):
    topology: Any
    prediction: Any
    busbw: Any
    comparison: Any  # busbw.Comparison with a bench report, else None
    log: Optional[LogSummary]
    disagreements: tuple[str, ...]
    code: int


def run(
    snapshot: Optional[str] = None,
    fmt: str = "text",
    log: Optional[str] = None,
    bench: Optional[str] = None,
    timeout: Optional[float] = None,
) -> Outcome:
    from ..collect import collect as collect_facts
    from ..derive import derive
    from ..nccl.busbw import busbw_detail, compare
    from ..nccl.observed import against_log
    from ..nccl.predict import predict
    from ..nccl.topology import from_facts
    from ..probes import registry
    from ..report import nccl_report

    measured = _bench_facts(bench) if bench else None
    log_text = _read(log) if log else None
    host, source, deadline = collect(snapshot, [], timeout, inspect_python=False)
    facts, _ = collect_facts(host, deadline, registry())
    facts = derive(facts)
    topo = from_facts(facts)
    prediction = predict(topo)
    bw = busbw_detail(prediction, topo)
    summary, disagreements = (None, ())
    if log is not None and log_text is not None:
        seen = against_log(log_text, prediction, topo)
        summary = LogSummary(log, seen.version, seen.pairs, seen.problem, seen.network_gpus)
        disagreements = seen.disagreements
    code = 1 if prediction.findings or disagreements else 0
    view = NcclView(
        topo,
        prediction,
        bw,
        compare(bw, measured) if measured is not None else None,
        summary,
        disagreements,
        code,
    )
    where = (
        f"snapshot {snapshot}" if snapshot else f"live check of {facts.value('host.hostname') or 'this host'}"
    )
    render = nccl_report.render_json if fmt == "json" else nccl_report.render_text
    sys.stdout.write(render(view, where))
    return Outcome(code, list(getattr(host, "timed_out", [])))


MAX_LOG_BYTES = 64 << 20  # an NCCL_DEBUG=INFO log of a large job is megabytes; more is not one run's


def _read(path: str) -> str:
    """The log's text (bytes that are not UTF-8 replaced: a log may hold anything)."""
    from ..datafiles import read_capped

    try:
        return read_capped(path, MAX_LOG_BYTES).decode("utf-8", "replace")
    except OSError as e:
        raise CommandError(f"--log {path}: {e.strerror or e}") from None


def _bench_facts(path: str) -> Any:
    """The facts of a `bench --format json` report (a check report with bench[] facts)."""
    from ..fleet.load import ReportError, read_report

    try:
        return read_report(path, whole=True).facts
    except ReportError as e:
        raise CommandError(f"--bench {path}: {e}") from None
