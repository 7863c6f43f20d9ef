"""`gpudoctor fleet`: merge per-node JSON reports into one fleet view; one verdict for all renderers."""

from __future__ import annotations

import sys

from . import use_color
from ._shared import warn


def run(paths: tuple[str, ...], fmt: str = "text", fail_on: str = "error", skip_invalid: bool = False) -> int:
    from ..fleet.load import load_reports
    from ..fleet.merge import merge, verdict
    from ..report import fleet_report
    from ..report.safe import terminal_text

    merged = merge(load_reports(list(paths)))
    for bad in merged.invalid:
        warn(terminal_text(f"cannot use {bad.file}: {bad.reason}"))
    v = verdict(merged, fail_on, skip_invalid)  # the one verdict, handed to whichever renderer
    if fmt == "json":
        sys.stdout.write(fleet_report.render_json(merged, v))
    elif fmt == "markdown":
        sys.stdout.write(fleet_report.render_markdown(merged, v))
    elif use_color():
        fleet_report.print_rich(merged, v)
    else:
        sys.stdout.write(fleet_report.render_text(merged, v))
    return v.code
