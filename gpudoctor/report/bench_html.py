"""The bench report as one self-contained HTML page: inline CSS and an inline SVG bar per result against
its expectation (a line at 100%); no script, font, image or link to anything outside the page, and a
Content-Security-Policy that would block one. The same content as the text report (bench_text.py).

Every string from the machine is escaped (html.escape, control characters as "?"); the page is the same
for the same report, so that golden files can hold it.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from . import bench_view as view
from .lines import command_text
from .safe import terminal_text

if TYPE_CHECKING:
    from ..bench.model import BenchReport, Row

# Nothing may load: no script, font, image, frame or connection; only the page's own <style>.
CSP = "default-src 'none'; style-src 'unsafe-inline'"

# The SVG bar: 100% at EXPECT_X, an over-performer runs on to view.CAP.
BAR_W, BAR_H = 220, 16
EXPECT_X = 200

CSS = """\
:root {
  color-scheme: light dark;
  --fg: #1f2328; --bg: #ffffff; --muted: #59636e; --border: #d1d9e0; --track: #e6eaef;
  --ok: #1a7f37; --error: #cf222e; --warning: #9a6700; --info: #0969da; --code: #f6f8fa;
}
@media (prefers-color-scheme: dark) {
  :root {
    --fg: #e6edf3; --bg: #0d1117; --muted: #9198a1; --border: #3d444d; --track: #262c36;
    --ok: #3fb950; --error: #f85149; --warning: #d29922; --info: #4493f8; --code: #151b23;
  }
}
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg);
  background: var(--bg); max-width: 70em; margin: 1.5em auto; padding: 0 1em; }
h1 { font-size: 1.4em; margin: 0 0 .2em; }
h2 { font-size: 1.1em; margin: 1.6em 0 .5em; }
.meta, .muted, .legend { color: var(--muted); }
.notice { font-weight: 600; padding: .6em .8em; border-left: 4px solid var(--warning); }
.notice.error { border-color: var(--error); }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .25em .6em; border-bottom: 1px solid var(--border);
  vertical-align: middle; }
th.group { padding-top: 1em; font-size: 1.05em; }
td.num, th.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
td.mark { width: 1.2em; text-align: center; font-weight: 700; }
td.bar { width: 220px; }
svg.bar { display: block; }
.track { fill: var(--track); }
.fill { fill: var(--ok); }
.sev-error .fill { fill: var(--error); }
.sev-warning .fill { fill: var(--warning); }
.sev-info .fill { fill: var(--info); }
.expect { stroke: var(--fg); stroke-width: 2; }
.mark-error, .status-bad, .sev-label-error { color: var(--error); }
.mark-warning, .sev-label-warning { color: var(--warning); }
.mark-info, .sev-label-info { color: var(--info); }
.mark-not-measured { color: var(--error); }
.mark-skipped { color: var(--muted); }
.status { font-weight: 600; }
.findings { list-style: none; padding: 0; }
.finding { border-left: 4px solid var(--info); padding: .3em .8em; margin: .6em 0; }
.finding.sev-error { border-color: var(--error); }
.finding.sev-warning { border-color: var(--warning); }
.finding p { margin: .25em 0; }
.sev-label { font-weight: 700; margin-right: .5em; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .95em; }
pre { background: var(--code); padding: .4em .6em; margin: .25em 0; white-space: pre-wrap;
  overflow-wrap: anywhere; }
.result { font-weight: 700; margin-top: 1.6em; }
.result.error { color: var(--error); }
.result.warning { color: var(--warning); }
.result.ok { color: var(--ok); }
"""


def _e(text: object) -> str:
    """Text from anywhere made safe for HTML: control characters as "?", then html.escape."""
    return html.escape(terminal_text(str(text)), quote=True)


def _bar(row: Row) -> str:
    width = view.bar_ratio(row) * EXPECT_X
    basis = f"{view.percent(row)} of the expectation" + (
        f": {row.expected_basis}" if row.expected_basis else ""
    )
    return (
        f'<svg class="bar" width="{BAR_W}" height="{BAR_H}" viewBox="0 0 {BAR_W} {BAR_H}" role="img"'
        f' aria-label="{_e(basis)}"><title>{_e(basis)}</title>'
        f'<rect class="track" x="0" y="3" width="{EXPECT_X}" height="10"/>'
        f'<rect class="fill" x="0" y="3" width="{width:.1f}" height="10"/>'
        f'<line class="expect" x1="{EXPECT_X}" y1="0" x2="{EXPECT_X}" y2="{BAR_H}"/></svg>'
    )


def _row(report: BenchReport, row: Row, severity: str) -> str:
    key = view.mark(row, severity)
    cls = f' class="sev-{severity}"' if severity else ""
    mark_title = {"not measured": f"not measured: {row.status}"}.get(key, key)
    mark = (
        f'<td class="mark mark-{key.replace(" ", "-")}" title="{_e(mark_title)}">{_e(view.MARKS[key])}</td>'
        if key
        else '<td class="mark"></td>'
    )
    cells = [mark, f"<td>{_e(view.label(report, row))}</td>"]
    if row.status != "ok":
        bad = "" if row.status == "skipped" else " status-bad"
        detail = f": {_e(row.detail)}" if row.detail else ""
        cells.append(f'<td colspan="5"><span class="status{bad}">{_e(row.status)}</span>{detail}</td>')
    elif not view.has_expectation(row):
        cells += [
            f'<td class="muted">{_e(view.no_expectation_text(row))}</td>',
            f'<td class="num"><strong>{_e(view.value_text(row))}</strong></td>',
            '<td class="num"></td><td class="num"></td><td></td>',
        ]
    else:
        basis = f' title="{_e(row.expected_basis)}"' if row.expected_basis else ""
        cells += [
            f'<td class="bar">{_bar(row)}</td>',
            f'<td class="num"><strong>{_e(view.value_text(row))}</strong></td>',
            f'<td class="num"{basis}>of {_e(view.sig3(row.expected))}</td>',
            f'<td class="num">{_e(view.percent(row))}</td>',
            f'<td class="muted">{_e(view.baseline_text(row))}</td>',
        ]
    return f"<tr{cls}>{''.join(cells)}</tr>"


def _finding(report: BenchReport, f) -> str:
    where = view.where(report, f)
    parts = [
        f'<li class="finding sev-{_e(f.severity)}">',
        f'<p><span class="sev-label sev-label-{_e(f.severity)}">{_e(f.severity.upper())}</span>'
        f"<code>{_e(f.rule.id)}</code> {_e(f.rule.title)}"
        + (f' <span class="muted">· {_e(where)}</span>' if where else "")
        + "</p>",
        f"<p>{_e(f.message)}</p>",
    ]
    if f.why:
        parts.append(f'<p class="muted">why: {_e(f.why)}</p>')
    for n, step in enumerate(f.fix):
        lead = "fix: " if n == 0 else ""
        if step.argv:
            parts.append(f"<p>{lead.strip()}</p>" if lead else "")
            parts.append(f"<pre><code>{_e(command_text(step))}</code></pre>")
            if step.text:
                parts.append(f'<p class="muted">{_e(step.text)}</p>')
        else:
            parts.append(f"<p>{lead}{_e(step.text)}</p>")
    parts.append("</li>")
    return "\n".join(p for p in parts if p)


def _body(report: BenchReport) -> list[str]:
    run = report.run
    out = [
        "<h1>gpudoctor bench</h1>",
        f'<p class="meta">{_e(" · ".join(view.header_parts(report)))}</p>',
    ]
    if run.status == view.NOT_RUN:
        return [*out, f'<p class="notice">{_e(view.not_run_text(report))}</p>']
    if run.status == view.INCOMPLETE:
        out.append(f'<p class="notice error">Incomplete: {_e(view.cut_short_text(report))}</p>')
    severities = view.worst(report)
    if report.rows:
        out += [
            "<table>",
            "<thead><tr><th></th><th>test</th><th>against the expectation (line: 100%)</th>"
            '<th class="num">result</th><th class="num">expected</th><th class="num">%</th>'
            "<th>baseline</th></tr></thead>",
            "<tbody>",
        ]
        for heading, rows in view.groups(report):
            out.append(f'<tr><th class="group" colspan="7">{_e(heading)}</th></tr>')
            out += [_row(report, row, severities.get(row.index, "")) for row in rows]
        out += ["</tbody>", "</table>"]
        out.append(
            '<p class="legend">Marks: x error, ! warning, i info (the worst finding on the row);'
            " ? not measured; - skipped. The line across each bar is the expectation (100%).</p>"
        )
    else:
        out.append('<p class="notice">Nothing was measured.</p>')
    findings = view.findings(report)
    if findings:
        out += ["<h2>Findings</h2>", '<ol class="findings">']
        out += [_finding(report, f) for f in findings]
        out.append("</ol>")
    if report.unknown:
        out += ["<h2>Could not judge</h2>", "<ul>"]
        out += [f"<li><code>{_e(rule)}</code> {_e(reason)}</li>" for rule, reason in report.unknown]
        out.append("</ul>")
    out.append(
        f'<p class="result {view.worst_of_all(report)}">Result: {_e(view.result_words(report))}'
        f" · exit {report.verdict} ({_e(view.exit_reason(report))})</p>"
    )
    return out


def render(report: BenchReport) -> str:
    """The whole page."""
    title = "gpudoctor bench" + (f" · {report.hostname}" if report.hostname else "")
    head = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title>",
        f"<style>\n{CSS}</style>",
        "</head>",
        "<body>",
    ]
    return "\n".join([*head, *_body(report), "</body>", "</html>"]) + "\n"
