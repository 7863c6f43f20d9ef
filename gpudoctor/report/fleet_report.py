"""The fleet view as text (plain or rich), JSON (schema `gpudoctor.fleet`, docs/fleet.md) and Markdown."""

from __future__ import annotations

import json
import textwrap
from typing import Any, Optional

from .. import __version__
from ..fleet.load import NodeReport
from ..fleet.merge import (
    Fleet,
    FleetFinding,
    FleetRuleResult,
    Group,
    Verdict,
    by_rule,
    name_list,
    show,
    sorted_node_findings,
    what,
    with_unit,
)
from ..fleet.rules import MIN_VALUES, FleetRule
from .lines import plain_text
from .safe import safe_line, terminal_lines

SCHEMA = "gpudoctor.fleet"
SCHEMA_VERSION = 1
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
    """(label, values) per rule group: what the fleet runs, most common first."""
    rows = []
    for result in fleet.results:
        rule = result.rule
        if rule.kind == "slower":
            rows += _slower_overview(result)
            continue
        unit = "nodes" if rule.kind == "drift" else "GPUs"
        for group in result.groups:
            label = what(rule, group.key)
            if rule.kind == "outlier" and group.key is not None:
                label = f"{label}, {group.key}"
            shown = [f"{show(rule, v)} on {c}" for v, c in group.values[:OVERVIEW_VALUES]]
            shown[0] += " " + (unit if group.values[0][1] != 1 else unit[:-1])
            if len(group.values) > OVERVIEW_VALUES:
                shown.append(f"{len(group.values) - OVERVIEW_VALUES} more values")
            rows.append((label, " · ".join(shown)))
        if result.unknown and rule.kind == "drift" and rule.by is None:
            label = what(rule, None)
            rows.append((label, f"unknown on {_plural(len(result.unknown), 'node')}"))
    return rows


def _slower_overview(result: FleetRuleResult) -> list[tuple[str, str]]:
    """A measurement's median and lowest value per group; the nodes with values unknown, once anything was
    measured (a fleet of check reports has no bench results: nothing to say)."""
    rule, rows = result.rule, []
    for g in result.groups:
        if g.compared:
            median = with_unit(rule, g.majority, g.unit)
            values = f"median {median} of {_plural(g.count, 'value')} · lowest {show(rule, g.lowest)}"
        else:
            values = f"{_plural(g.count, 'value')}: not compared (fewer than {MIN_VALUES})"
        rows.append((what(rule, g.key), values))
    if result.groups and result.unknown:
        names = name_list([f"{node} ({why})" for node, why in result.unknown])
        rows.append((f"{rule.fact} unknown", f"on {_plural(len(result.unknown), 'node')}: {names}"))
    return rows


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
    return {
        "rule": f.rule.id,
        "severity": f.severity,
        "title": f.rule.title,
        "kind": f.rule.kind,
        "fact": f.rule.fact,
        "key": f.key,
        "value": f.value,
        "majority": f.majority,
        "majority_count": f.majority_count,
        "compared": f.compared,
        "nodes": list(f.nodes),
        "gpus": [
            {"node": node, "index": index, "value": value, **({"item": f.items[n]} if f.items else {})}
            for n, (node, index, value) in enumerate(f.gpus)
        ],
        "message": f.message,
        "why": f.rule.why,
    }


def _rule_data(r: FleetRuleResult) -> dict[str, Any]:
    slower = r.rule.kind == "slower"
    return {
        "id": r.rule.id,
        "title": r.rule.title,
        "severity": r.rule.severity,
        "kind": r.rule.kind,
        "fact": r.rule.fact,
        "by": r.rule.by,
        "worse": r.rule.worse,
        "tolerance": r.rule.tolerance,
        "counted": {"drift": "nodes", "outlier": "gpus"}.get(r.rule.kind, "values"),
        "status": r.status,
        "groups": [_slower_group(g) if slower else _group(g) for g in r.groups],
        "unknown": {node: reason for node, reason in r.unknown},
    }


def _group(g: Group) -> dict[str, Any]:
    return {"key": g.key, "majority": g.majority, "values": [{"value": v, "count": c} for v, c in g.values]}


def _slower_group(g: Group) -> dict[str, Any]:
    return {
        "key": g.key,
        "status": "compared" if g.compared else "not compared",
        "median": g.majority,
        "count": g.count,
        "lowest": g.lowest,
        "highest": g.highest,
        "unit": g.unit,
    }


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
        "fleet_rules": [_rule_data(r) for r in fleet.results],
        "peer_rules": [
            {"id": r.rule.id, "title": r.rule.title, "severity": r.rule.severity, "status": r.status}
            for r in fleet.peer_results
        ],
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


# --- the rule table, for docs/fleet.md -------------------------------------------------------------


def rules_table(rules: tuple[FleetRule, ...]) -> str:
    """The fleet rules as a Markdown table (docs/fleet.md carries it; a test keeps it fresh)."""
    rows = []
    for r in rules:
        compares = f"`{r.fact}`" + (f" by `{r.by}`" if r.by else "")
        rows.append([r.id, r.severity, r.kind_words, compares, r.title])
    return "\n".join(_table(["id", "severity", "kind", "compares", "title"], rows)).rstrip("\n") + "\n"


def counters_table() -> str:
    """The records stage's counters as a Markdown table (docs/fleet.md carries it; a test keeps it fresh)."""
    from ..fleet.records import COUNTERS

    rows = [
        [
            f"`{c.name}`",
            " + ".join(f"`{c.list_name}[].{f}`" for f in c.fields),
            f"`{c.list_name}[].{c.by}`" if c.list_name != "xid" else "`gpus[].name` of `xid[].gpu`",
            c.unit,
        ]
        for c in COUNTERS
    ]
    return "\n".join(_table(["counter", "read from", "peers: same", "unit"], rows)).rstrip("\n") + "\n"
