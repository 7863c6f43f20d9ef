"""DCGM diagnostic results (bench/dcgm.py) as the `dcgm[]` facts that rules/bench/dcgm.yaml judges."""

from __future__ import annotations

from typing import Any

from ..facts import Facts, FactSpec, known, list_facts, unknown

FACT_SPECS: tuple[FactSpec, ...] = (
    FactSpec(
        "dcgm.count",
        "int",
        "",
        "results of DCGM's diagnostic (`bench --dcgm`: dcgmi diag -r LEVEL --json); unknown if not run",
    ),
    FactSpec("dcgm[].test", "str", "", "the DCGM test, as dcgmi names it: memory, pcie, targeted_power, ..."),
    FactSpec(
        "dcgm[].category", "str", "", "DCGM's category of the test: Deployment, Hardware, Integration, ..."
    ),
    FactSpec("dcgm[].status", "str", "", "`pass`, `fail`, `warn` or `skip`; another DCGM status lower-cased"),
    FactSpec(
        "dcgm[].gpu", "int", "", "NVML index of the GPU the result is about; unknown for node-wide tests"
    ),
    FactSpec("dcgm[].where", "str", "", "`GPU N`, or `the node` for a result about no GPU in particular"),
    FactSpec("dcgm[].message", "str", "", "the warning or information DCGM attached to the result"),
)

SOURCE = "dcgmi diag"


def add_dcgm(facts: Facts, diag: Any) -> Facts:
    """The facts with the diagnostic's results added; when dcgmi could not run, `dcgm.count` is unknown with
    the reason, so that the DCGM rules say they could not judge rather than pass."""
    items = dict(facts.items())
    if diag.error:
        items["dcgm.count"] = unknown(diag.error, SOURCE)
        return Facts(items, facts.missing)
    members = []
    for r in diag.results:
        members.append(
            {
                "test": known(r.test, SOURCE),
                "category": known(r.category, SOURCE),
                "status": known(r.status, SOURCE),
                "gpu": known(r.gpu, SOURCE) if r.gpu is not None else unknown("not about one GPU", SOURCE),
                "where": known(f"GPU {r.gpu}" if r.gpu is not None else "the node", SOURCE),
                "message": known(r.message or "no message", SOURCE),
            }
        )
    items.update(list_facts("dcgm", members, SOURCE))
    return Facts(items, facts.missing)
