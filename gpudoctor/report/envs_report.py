"""`gpudoctor envs` as text (a table, one line per environment) and as JSON (schema gpudoctor.envs,
version 1; docs/envs.md)."""

from __future__ import annotations

import json

from .. import __version__
from .safe import terminal_lines

SCHEMA = "gpudoctor.envs"
SCHEMA_VERSION = 1
HEADINGS = ("NAME", "KIND", "PYTHON", "FRAMEWORKS", "FOUND BY")


def framework_text(fw: dict) -> str:
    """torch 2.5.1+cu124 cuda 12.4 / torch 2.5.1+cpu cpu / cupy-cuda12x 13.3.0 cuda 12; the build unknown
    is said so."""
    name = fw["distribution"] if fw["name"] == "cupy" else fw["name"]
    build = fw.get("build")
    detail = fw.get("cuda") if build == "cuda" else fw.get("rocm") if build == "rocm" else None
    what = f"{build} {detail}" if detail else build or "build unknown"
    return f"{name} {fw['version']} {what}"


def cells(row: dict) -> tuple[str, ...]:
    frameworks = ", ".join(framework_text(fw) for fw in row["frameworks"]) or "-"
    return (row["name"], row["kind"], row["python"] or "?", frameworks, ", ".join(row["found_by"]))


def render_text(rows: list[dict]) -> str:
    if not rows:
        return "No Python environment found.\n"
    table = [HEADINGS] + [cells(r) for r in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(HEADINGS) - 1)]
    lines = []
    for n, line in enumerate(table):
        text = "  ".join(cell.ljust(w) for cell, w in zip(line, widths)) + "  " + line[-1]
        lines.append(text.rstrip())
        problem = rows[n - 1]["problem"] if n else None
        if problem:
            lines.append(f"  ! {problem}")
    broken = sum(1 for r in rows if r["problem"])
    summary = f"{len(rows)} environment{'s' if len(rows) != 1 else ''}"
    summary += f", {broken} broken" if broken else ""
    lines += ["", f"{summary}. Judge each: gpudoctor check --all-envs"]
    return terminal_lines("\n".join(lines) + "\n")


def render_json(rows: list[dict]) -> str:
    data = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "gpudoctor": __version__,
        "environments": rows,
    }
    return json.dumps(data, indent=2) + "\n"
