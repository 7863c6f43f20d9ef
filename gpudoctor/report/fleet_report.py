"""The fleet view as text (plain or rich), JSON (schema `gpudoctor.fleet`, docs/fleet.md) and Markdown."""

from __future__ import annotations

import json
import textwrap
from typing import Any, Optional

from .. import __version__
from ..fleet.load import NodeReport
from ..fleet.merge import Fleet, FleetFinding, Verdict, by_rule, sorted_node_findings
from ..fleet.records import MIN_PEERS, NAMES, Counter, Drift, Group, show
from .lines import plain_text
from .safe import safe_line, terminal_lines

SCHEMA = "gpudoctor.fleet"
SCHEMA_VERSION = 2
OVERVIEW_VALUES = 6  # values a group's overview line shows before "N more"

Line = list[tuple[str, str]]  # (text, rich style)
STYLE = {"error": "bold red", "warning": "bold yellow", "info": "cyan"}


# --- shared pieces ---------------------------------------------------------------------------------


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _counts_words(counts: dict[str, int]) -> str:
    return f"{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} info"


def _node_counts(node: NodeReport) -> dict[str, int]:
    out = {"error": 0, "warning": 0, "info": 0}
    for f in node.findings:
        out[f.severity] += 1
    return out


def _short_counts(counts: dict[str, int]) -> str:
    """ "1 error, 2 warnings, 1 info", leaving out the severities with none."""
    parts = [_plural(counts[s], s) for s in ("error", "warning") if counts[s]]
    return ", ".join(parts + ([f"{counts['info']} info"] if counts["info"] else []))


def _incomplete(node: NodeReport) -> str:
    parts = []
    if node.incomplete:
        parts.append("probe " + ", ".join(node.incomplete))
    if node.timed_out:
        parts.append("timed out: " + ", ".join(node.timed_out))
    if node.unknown_rules:
        parts.append(f"{_plural(node.unknown_rules, 'rule')} could not be evaluated (facts unknown)")
    return "; ".join(parts)


def _overview(fleet: Fleet) -> list[tuple[str, str]]:
    """(label, values) per compared fact and group: what the fleet runs, most common first; a measurement's
    median and lowest value."""
    rows = []
    for what, groups in fleet.records.groups.items():
        unknown = fleet.records.unknown[what]
        if isinstance(what, Counter) and what.list_name == "bench":
            rows += _bench_overview(what, groups, unknown)
            continue
        if not what.label:
            continue
        unit = "nodes" if isinstance(what, Drift) else "GPUs"
        fmt = getattr(what, "fmt", "{}")
        for group in groups:
            ranked = group.ranked
            shown = [f"{_show(fmt, v)} on {c}" for v, c in ranked[:OVERVIEW_VALUES]]
            shown[0] += " " + (unit if ranked[0][1] != 1 else unit[:-1])
            if len(ranked) > OVERVIEW_VALUES:
                shown.append(f"{len(ranked) - OVERVIEW_VALUES} more values")
            rows.append((_label(what, group), " · ".join(shown)))
        if unknown and isinstance(what, Drift) and what.by is None:
            rows.append((what.label, f"unknown on {_plural(len(unknown), 'node')}"))
    return rows


def _bench_overview(counter: Counter, groups: list[Group], unknown: list) -> list[tuple[str, str]]:
    """A measurement's median and lowest value per group; the nodes with values unknown, once anything was
    measured (a fleet of check reports has no bench results: nothing to say)."""
    rows = []
    for g in groups:
        if g.compared:
            lowest = min(g.values)
            values = f"median {_show(counter.fmt, g.median)} {g.unit} of {_plural(g.count, 'value')}"
            values += f" · lowest {_show(counter.fmt, lowest)}"
        else:
            values = f"{_plural(g.count, 'value')}: not compared (fewer than {MIN_PEERS})"
        rows.append((_label(counter, g), values))
    if groups and unknown:
        names = _names([f"{node} ({why})" for node, why in unknown])
        fact = f"{counter.list_name}[].{counter.fields[0]}"
        rows.append((f"{fact} unknown", f"on {_plural(len(unknown), 'node')}: {names}"))
    return rows


def _label(what: Drift | Counter, group: Group) -> str:
    return what.label.format(group=group.key if group.key is not None else "unknown")


def _show(fmt: str, value: object) -> str:
    return fmt.format(value) if not isinstance(value, tuple) else show(value)


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:NAMES])
    return shown + (f" and {len(names) - NAMES} more" if len(names) > NAMES else "")


def _headline(fleet: Fleet) -> str:
    files = len(fleet.nodes) + len(fleet.invalid)
    text = f"fleet of {_plural(len(fleet.nodes), 'node')}, {_plural(fleet.gpus, 'GPU')}"
    text += f" ({_plural(files, 'report file')}"
    return text + (f", {len(fleet.invalid)} unusable)" if fleet.invalid else ")")


def _nodes_line(fleet: Fleet) -> str:
    with_findings = sum(1 for n in fleet.nodes if n.findings)
    incomplete = sum(1 for n in fleet.nodes if _incomplete(n))
    in_fleet = {name for f in fleet.findings for name in f.nodes}
    parts = [
        str(len(fleet.nodes)),
        f"{with_findings} with findings",
        f"{len(in_fleet)} in fleet findings",
    ]
    if incomplete:
        parts.append(f"{incomplete} incomplete")
    return " · ".join(parts)


def _verdict(fleet: Fleet, v: Verdict) -> tuple[str, str]:
    """(the finding counts, the exit code and why)."""
    code, fail_on, skip_invalid = v.code, v.fail_on, v.skip_invalid
    counts = f"fleet: {_counts_words(fleet.fleet_counts())} · nodes: {_counts_words(fleet.node_counts())}"
    why = f"--fail-on {fail_on}"
    if not fleet.nodes:
        why = "no report could be used"
    elif fleet.invalid and not skip_invalid:
        why = f"{_plural(len(fleet.invalid), 'report file')} unusable; --skip-invalid ignores them"
    return counts, f"exit {code} ({why})"


def _by_rule_result(fleet: Fleet) -> dict[str, list[FleetFinding]]:
    grouped: dict[str, list[FleetFinding]] = {}
    for f in fleet.findings:
        grouped.setdefault(f.rule.id, []).append(f)
    return grouped


def _wrap(text: str, width: int) -> list[str]:
    return textwrap.wrap(text, width=max(30, width), break_on_hyphens=False, break_long_words=False) or [""]


# --- text ------------------------------------------------------------------------------------------


def build_lines(fleet: Fleet, v: Verdict, width: int = 100) -> list[Line]:
    lines: list[Line] = [[("gpudoctor ", "bold"), (__version__, "bold"), (f" · {_headline(fleet)}", "")], []]
    overview = [("Nodes", _nodes_line(fleet))] + _overview(fleet)
    label_width = max(len(label) for label, _ in overview) + 2
    for label, values in overview:
        for n, chunk in enumerate(_wrap(values, width - label_width)):
            lines.append([((label if n == 0 else "").ljust(label_width), "bold"), (chunk, "")])
    lines.append([])
    grouped = _by_rule_result(fleet)
    if grouped:
        lines.append([("Fleet findings", "bold underline")])
        for findings in grouped.values():
            rule = findings[0].rule
            lines.append(
                [("  ", ""), (rule.severity.upper().ljust(8), STYLE[rule.severity]), (rule.id, "bold")]
                + [(f"  {rule.title}", "")]
            )
            for f in findings:
                lines += [[("    " + chunk, "")] for chunk in _wrap(f.message, width - 4)]
            lines += [
                [("    " + ("why: " if n == 0 else "     ") + chunk, "dim")]
                for n, chunk in enumerate(_wrap(rule.why, width - 9))
            ]
        lines.append([])
    ignored = fleet.ignored_findings
    if ignored:
        lines.append([("Ignored by policy", "bold underline")])
        for f, reason in ignored:
            lines.append([("  ", ""), (f.severity.upper().ljust(8), "dim"), (f.rule.id, "bold")])
            lines += [[("    " + chunk, "dim")] for chunk in _wrap(f.message, width - 4)]
            lines += [
                [("    " + ("reason: " if n == 0 else "        ") + chunk, "")]
                for n, chunk in enumerate(_wrap(reason, width - 12))
            ]
        lines.append([])
    summaries = by_rule(fleet.nodes)
    if summaries:
        id_width = max(len(s.rule) for s in summaries)
        lines.append([("Node findings by rule", "bold underline")])
        for s in summaries:
            lines.append(
                [
                    ("  ", ""),
                    (s.severity.upper().ljust(8), STYLE[s.severity]),
                    (s.rule.ljust(id_width), "bold"),
                    (f"  {s.title} · {_plural(len(s.nodes), 'node')}", ""),
                ]
            )
        lines.append([])
    lines += _node_lines(fleet, width)
    if fleet.duplicates:
        lines.append([("Reports with the same host name", "bold underline")])
        files = {n.name: n.file for n in fleet.nodes}
        for base, names in sorted(fleet.duplicates.items()):
            shown = ", ".join(f"{n} ({files.get(n, '?')})" for n in names)
            lines += [[("  " + chunk, "")] for chunk in _wrap(f"{base}: {shown}", width - 2)]
        lines.append([])
    if fleet.invalid:
        lines.append([("Unusable report files", "bold red underline")])
        for bad in fleet.invalid:
            lines += [[("  " + chunk, "")] for chunk in _wrap(f"{bad.file}: {bad.reason}", width - 2)]
        lines.append([])
    code_style = "bold red" if v.code else "bold green"
    counts, verdict = _verdict(fleet, v)
    lines.append([("Result  ", "bold"), (counts, code_style)])
    lines.append([("        ", ""), (verdict, "")])
    return _printable(lines)


def _node_lines(fleet: Fleet, width: int) -> list[Line]:
    shown = [n for n in fleet.nodes if n.findings or _incomplete(n)]
    if not shown:
        return []
    id_width = max((len(f.rule) for n in shown for f in n.findings), default=0)
    lines: list[Line] = [[("Findings by node", "bold underline")]]
    for node in shown:
        counts = _short_counts(_node_counts(node))
        lines.append(
            [
                ("  ", ""),
                (node.name, "bold"),
                (f"  {counts}" if counts else "", ""),
                (f"  ({node.file})", "dim"),
            ]
        )
        for f in sorted_node_findings(node):
            lead = "    " + f.severity.upper().ljust(8) + f.rule.ljust(id_width) + "  "
            text = (f"{f.item_label}: " if f.item_label else "") + f.message
            for n, chunk in enumerate(_wrap(text, width - len(lead))):
                if n == 0:
                    lines.append(
                        [
                            ("    ", ""),
                            (f.severity.upper().ljust(8), STYLE[f.severity]),
                            (f.rule.ljust(id_width) + "  ", "bold"),
                            (chunk, ""),
                        ]
                    )
                else:
                    lines.append([(" " * len(lead) + chunk, "")])
        incomplete = _incomplete(node)
        if incomplete:
            lines += [
                [("    " + ("incomplete: " if n == 0 else "            ") + chunk, "yellow")]
                for n, chunk in enumerate(_wrap(incomplete, width - 16))
            ]
    lines.append([])
    return lines


def _printable(lines: list[Line]) -> list[Line]:
    """Control characters from reports (a hostname, a message) must not reach a terminal."""
    return [safe_line(line) for line in lines]


def render_text(fleet: Fleet, v: Verdict, width: int = 100) -> str:
    lines = build_lines(fleet, v, width)
    return plain_text(lines)


def print_rich(fleet: Fleet, v: Verdict, console: Optional[Any] = None) -> None:
    from rich.console import Console
    from rich.text import Text

    con = console or Console(highlight=False)
    for line in build_lines(fleet, v, con.width):
        con.print(Text.assemble(*line) if line else "")


# --- JSON ------------------------------------------------------------------------------------------


def _finding_data(f: FleetFinding) -> dict[str, Any]:
    data: dict[str, Any] = {"rule": f.rule.id, "severity": f.severity, "title": f.rule.title}
    r = f.record
    if r is not None and r.group is not None:
        g = r.group
        drift = r.kind == "drift"
        data.update(
            records=r.kind,
            fact=r.what.fact if drift else " + ".join(f"{r.what.list_name}[].{x}" for x in r.what.fields),
            key=g.key,
            value=_json(r.value),
            majority=_json(g.mode),
            majority_count=len(g.values[g.mode]) if g.mode is not None else 0,
            **({} if drift else {"median": g.median, "unit": g.unit}),
            compared=g.count,
            nodes=list(f.nodes),
            gpus=[{"node": m.node, "index": m.gpu, "value": m.value} for m in r.members if m.gpu is not None],
        )
    return {**data, "message": f.message, "why": f.rule.why}


def _json(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _records_data(fleet: Fleet) -> dict[str, Any]:
    """What the fleet compared: per drift fact and per counter, each group's values (a measurement's median
    and range), and where a node's value was unknown, why."""
    drift, peers = [], []
    for what, groups in fleet.records.groups.items():
        unknown = {node: why for node, why in fleet.records.unknown[what]}
        if isinstance(what, Drift):
            drift.append(
                {
                    "fact": what.fact,
                    "by": what.by,
                    "groups": [
                        {"key": g.key, "mode": _json(g.mode), "values": _values(g.ranked)} for g in groups
                    ],
                    "unknown": unknown,
                }
            )
            continue
        peers.append(
            {
                "counter": what.name,
                "groups": [
                    {
                        "key": g.key,
                        "status": "compared" if g.compared else "not compared",
                        "count": g.count,
                        "median": g.median,
                        "mode": g.mode,
                        "lowest": min(g.values),
                        "highest": max(g.values),
                        "unit": g.unit,
                    }
                    for g in groups
                ],
                **({"unknown": unknown} if what.label else {}),
            }
        )
    return {"drift": drift, "peers": peers}


def _values(ranked: list[tuple[Any, int]]) -> list[dict[str, Any]]:
    return [{"value": _json(v), "count": c} for v, c in ranked]


def _node_data(node: NodeReport) -> dict[str, Any]:
    gpus = node.facts.get("gpus.count") if "gpus.count" in node.facts else node.facts.get("gpus")
    return {
        "name": node.name,
        "hostname": node.hostname,
        "file": node.file,
        "gpudoctor": node.written_by,
        "gpus": gpus.value
        if isinstance(gpus.value, int)
        else len(gpus.value)
        if isinstance(gpus.value, list)
        else None,
        "counts": _node_counts(node),
        "findings": [
            {
                "rule": f.rule,
                "severity": f.severity,
                "category": f.category,
                "title": f.title,
                "message": f.message,
                "item": f.item,
                "item_label": f.item_label,
                "gpu": f.gpu,
            }
            for f in sorted_node_findings(node)
        ],
        "incomplete": list(node.incomplete),
        "timed_out": list(node.timed_out),
        "unknown_rules": node.unknown_rules,
    }


def fleet_data(fleet: Fleet, v: Verdict) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "gpudoctor": __version__,
        "summary": {
            "nodes": len(fleet.nodes),
            "gpus": fleet.gpus,
            "nodes_with_findings": sum(1 for n in fleet.nodes if n.findings),
            "incomplete_nodes": sum(1 for n in fleet.nodes if _incomplete(n)),
            "invalid_files": len(fleet.invalid),
            "fleet": fleet.fleet_counts(),
            "node": fleet.node_counts(),
            "fail_on": v.fail_on,
            "skip_invalid": v.skip_invalid,
            "exit_code": v.code,
        },
        "fleet_findings": [_finding_data(f) for f in fleet.findings],
        **(
            {"ignored_fleet_findings": [dict(_finding_data(f), reason=r) for f, r in fleet.ignored_findings]}
            if fleet.ignore
            else {}
        ),
        "fleet_rules": [
            {"id": r.rule.id, "title": r.rule.title, "severity": r.rule.severity, "status": r.status}
            for r in fleet.results
        ],
        "records": _records_data(fleet),
        "node_rules": [
            {
                "rule": s.rule,
                "severity": s.severity,
                "title": s.title,
                "nodes": list(s.nodes),
                "findings": s.findings,
            }
            for s in by_rule(fleet.nodes)
        ],
        "nodes": [_node_data(n) for n in fleet.nodes],
        "invalid": [{"file": bad.file, "reason": bad.reason} for bad in fleet.invalid],
        "duplicates": {base: list(names) for base, names in sorted(fleet.duplicates.items())},
    }


def render_json(fleet: Fleet, v: Verdict) -> str:
    return json.dumps(fleet_data(fleet, v), indent=2) + "\n"


# --- Markdown --------------------------------------------------------------------------------------


def _cell(text: Any) -> str:
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return out + [""]


def render_markdown(fleet: Fleet, v: Verdict) -> str:
    out = [f"# gpudoctor fleet: {_headline(fleet)[len('fleet of ') :]}", ""]
    out += ["**Result:** " + " · ".join(_verdict(fleet, v)), ""]
    out += _table(["", ""], [["Nodes", _nodes_line(fleet)]] + [list(row) for row in _overview(fleet)])
    if fleet.findings:
        out += ["## Fleet findings", ""]
        out += _table(
            ["severity", "rule", "finding"],
            [[f.severity, f"{f.rule.id} {f.rule.title}", f.message] for f in fleet.findings],
        )
    summaries = by_rule(fleet.nodes)
    if summaries:
        out += ["## Node findings by rule", ""]
        out += _table(
            ["severity", "rule", "title", "nodes"],
            [[s.severity, s.rule, s.title, len(s.nodes)] for s in summaries],
        )
    rows = [
        [n.name, f.severity, f.rule, f.item_label or "", f.message]
        for n in fleet.nodes
        for f in sorted_node_findings(n)
    ]
    if rows:
        out += ["## Findings by node", ""]
        out += _table(["node", "severity", "rule", "item", "message"], rows)
    incomplete = [[n.name, _incomplete(n)] for n in fleet.nodes if _incomplete(n)]
    if incomplete:
        out += ["## Incomplete nodes", ""] + _table(["node", "what"], incomplete)
    if fleet.duplicates:
        files = {n.name: n.file for n in fleet.nodes}
        out += ["## Reports with the same host name", ""]
        out += _table(
            ["host name", "node", "file"],
            [[base, n, files.get(n, "?")] for base, names in sorted(fleet.duplicates.items()) for n in names],
        )
    if fleet.ignored_findings:
        out += ["## Ignored by policy", ""]
        out += _table(
            ["rule", "finding", "reason"], [[f.rule.id, f.message, why] for f, why in fleet.ignored_findings]
        )
    if fleet.invalid:
        out += ["## Unusable report files", ""]
        out += _table(["file", "problem"], [[bad.file, bad.reason] for bad in fleet.invalid])
    return terminal_lines("\n".join(out).rstrip("\n") + "\n")


# --- the counters, for docs/fleet.md -----------------------------------------------------------------


def counters_table() -> str:
    """The records stage's counters as a Markdown table (docs/fleet.md carries it; a test keeps it fresh)."""
    from ..fleet.records import COUNTERS

    rows = [
        [
            f"`{c.name}`",
            " + ".join(f"`{c.list_name}[].{f}`" for f in c.fields),
            f"`{c.list_name}[].{c.by}`" if c.list_name != "xid" else "`gpus[].name` of `xid[].gpu`",
            c.unit or "the measurement's own",
        ]
        for c in COUNTERS
    ]
    return "\n".join(_table(["counter", "read from", "peers: same", "unit"], rows)).rstrip("\n") + "\n"
