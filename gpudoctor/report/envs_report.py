"""`gpudoctor envs` as text (a table, one line per environment) and as JSON (schema gpudoctor.envs,
version 1; docs/envs.md)."""

from __future__ import annotations

import json
from typing import Optional

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
    name = row["name"] + (" *" if row.get("check_default") else "")
    return (name, row["kind"], row["python"] or "?", frameworks, ", ".join(row["found_by"]))


def render_text(rows: list[dict], default: Optional[dict] = None) -> str:
    """The table; `default`: what `gpudoctor check` judges without --python ({interpreter, chosen_by,
    name}), marked `*` when it is one of the rows."""
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
    lines += [""]
    if default and default["name"]:
        lines.append(f"* what `gpudoctor check` judges without --python (chosen by {default['chosen_by']})")
    elif default:
        lines.append(
            f"`gpudoctor check` without --python judges {default['interpreter']} (chosen by "
            f"{default['chosen_by']}): none of these (a launcher, such as a pyenv shim, picks one as it runs)"
        )
    lines.append(f"{summary}. Judge each: gpudoctor check --all-envs")
    return terminal_lines("\n".join(lines) + "\n")


def render_json(rows: list[dict], default: Optional[dict] = None) -> str:
    data = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "gpudoctor": __version__,
        "check_default": default,
        "environments": rows,
    }
    return json.dumps(data, indent=2) + "\n"
