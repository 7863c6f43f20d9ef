"""What the two bench reports (bench_text.py, bench_html.py) show, worked out once: rows grouped by GPU,
their labels, numbers and marks, the findings in order, the summary and the verdict. Plain strings, not yet
made safe: each renderer escapes them for its medium."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from ..engine.model import SEVERITIES, SEVERITY_RANK
from ..engine.template import num

if TYPE_CHECKING:
    from ..bench.model import BenchReport, Row

# A bar's full length is the expectation; an over-performer's bar runs on, up to this ratio.
CAP = 1.1

# A row's mark: the worst finding on it, else whether it was measured at all. Shown with colour and without.
MARKS = {"error": "x", "warning": "!", "info": "i", "not measured": "?", "skipped": "-"}

NOT_RUN, INCOMPLETE = "not run", "incomplete"


def sig3(x: float) -> str:
    """x as the bench rules' messages show numbers (the `num` filter): 733, 55.1, 4170, 0.0123."""
    return num(x)


def value_text(row: Row) -> str:
    return f"{sig3(row.value)} {row.unit}" if row.value is not None else "no value"


def has_expectation(row: Row) -> bool:
    return row.status == "ok" and row.value is not None and row.ratio is not None


def percent(row: Row) -> str:
    return f"{round(row.ratio * 100)}%" if row.ratio is not None else ""


def bar_ratio(row: Row) -> float:
    """How much of the bar to fill: value/expected, capped at CAP."""
    return min(max(row.ratio or 0.0, 0.0), CAP)


def baseline_text(row: Row) -> str:
    """The --baseline run's result and how this one differs from it: "baseline 740, -1%"."""
    if row.baseline is None:
        return ""
    if row.value is None or not row.baseline:
        return f"baseline {sig3(row.baseline)}"
    change = round((row.value / row.baseline - 1) * 100)
    return f"baseline {sig3(row.baseline)}, {change:+d}%"


def no_expectation_text(row: Row) -> str:
    return "no expectation" + (f": {row.no_expectation}" if row.no_expectation else "")


def status_text(row: Row) -> str:
    """A row that was not measured: its status and why, never a value."""
    return row.status + (f": {row.detail}" if row.detail else "")


def label(report: BenchReport, row: Row) -> str:
    """The row's name in its group: the test for a GPU's rows, the pair for p2p, the GPUs for all-reduce."""
    if row.test == "p2p":
        return f"GPU {row.gpu} -> {row.peer if row.peer is not None else '?'}"
    if row.test == "allreduce":
        n = next(
            (m.gpus for m in report.run.measurements if m.test == "allreduce" and m.gpu == row.gpu),
            len({r.gpu for r in report.rows if r.test not in ("p2p", "allreduce")}),
        )
        return f"GPUs {row.gpu}-{row.gpu + n - 1}" if n > 1 else "all GPUs"
    return row.label


def groups(report: BenchReport) -> list[tuple[str, list[Row]]]:
    """(heading, rows): each GPU's own tests in the order of the run, then peer-to-peer, then all-reduce."""
    per_gpu: dict[int, list[Row]] = {}
    p2p: list[Row] = []
    allreduce: list[Row] = []
    for row in report.rows:
        if row.test == "p2p":
            p2p.append(row)
        elif row.test == "allreduce":
            allreduce.append(row)
        else:
            per_gpu.setdefault(row.gpu, []).append(row)
    out = [
        (f"GPU {gpu}" + (f" · {rows[0].gpu_name}" if rows[0].gpu_name else ""), rows)
        for gpu, rows in per_gpu.items()
    ]
    if p2p:
        out.append(("Peer-to-peer", p2p))
    if allreduce:
        out.append(("NCCL all-reduce", allreduce))
    return out


def worst(report: BenchReport) -> dict[int, str]:
    """Row index -> the severity of the worst finding that names it."""
    out: dict[int, str] = {}
    for f in report.findings:
        if f.item is None:
            continue
        if f.item not in out or SEVERITY_RANK[f.severity] > SEVERITY_RANK[out[f.item]]:
            out[f.item] = f.severity
    return out


def mark(row: Row, severity: Optional[str]) -> str:
    """The key into MARKS for a row, "" for a measured row no finding names."""
    if severity:
        return severity
    if row.status == "skipped":
        return "skipped"
    return "not measured" if row.status != "ok" else ""


def findings(report: BenchReport) -> list:
    """Most severe first; otherwise in the order the rules gave them."""
    return sorted(report.findings, key=lambda f: -SEVERITY_RANK[f.severity])


def where(report: BenchReport, finding) -> str:
    """What a finding is about, "GPU 0 bf16 matmul", when it names a row."""
    row = next((r for r in report.rows if finding.item is not None and r.index == finding.item), None)
    if row is None:
        return ""
    name = label(report, row)
    return name if row.test in ("p2p", "allreduce") else f"GPU {row.gpu} {name}"


def header_parts(report: BenchReport) -> list[str]:
    """The host, the framework the worker measured with, its interpreter, how long the run took."""
    run = report.run
    parts = [
        report.hostname,
        run.backend,
        f"python {run.python}" if run.python else "",
        f"{run.seconds:.1f} s" if run.seconds else "",
    ]
    return [p for p in parts if p]


def header(report: BenchReport) -> str:
    return " · ".join(["gpudoctor bench", *header_parts(report)])


def not_run_text(report: BenchReport) -> str:
    return report.run.reason or "Nothing was benchmarked."


def cut_short_text(report: BenchReport) -> str:
    reason = report.run.reason or "no reason given"
    return f"the run was cut short ({reason}): below is only what it measured before that"


def exit_reason(report: BenchReport) -> str:
    """Why the exit code is what it is, in a few words, as the check's report words it."""
    if report.verdict == 2:
        ids = ", ".join(rule for rule, _ in report.unknown)
        if ids:
            return f"could not judge: rule(s) {ids} could not be evaluated"
        if report.run.status == INCOMPLETE:
            return "could not judge: the run was cut short"
        return "could not judge"
    return f"--fail-on {report.fail_on}"


def result_words(report: BenchReport) -> str:
    """Counts of findings and of rows by status, and of the rules that could not judge, e.g.
    "1 error(s), 0 warning(s), 0 info; 8 measured, 1 timed out; 1 rule(s) could not judge"."""
    c = {s: 0 for s in SEVERITIES}
    for f in report.findings:
        c[f.severity] += 1
    statuses: dict[str, int] = {}
    for row in report.rows:
        key = "measured" if row.status == "ok" else row.status
        statuses[key] = statuses.get(key, 0) + 1
    measured = ", ".join(
        f"{n} {s}" for s, n in sorted(statuses.items(), key=lambda kv: (kv[0] != "measured", kv[0]))
    )
    words = f"{c['error']} error(s), {c['warning']} warning(s), {c['info']} info"
    words += f"; {measured or 'nothing measured'}"
    if report.unknown:
        words += f"; {len(report.unknown)} rule(s) could not judge"
    return words


def worst_of_all(report: BenchReport) -> str:
    """The summary's colour: "error", "warning" or "ok"."""
    sevs = {f.severity for f in report.findings}
    return "error" if "error" in sevs else ("warning" if "warning" in sevs else "ok")
