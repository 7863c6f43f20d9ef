"""The fleet rules: what no single node can see, as a table of data.

Two kinds, both against the fleet's most common value (its "majority"):

- `drift`: one value per node (a node fact, or the distinct values of a per-item fact on that node).
  Every value other than the most common is a finding naming its nodes. When two values tie for most
  common there is no majority and every value is a finding.
- `outlier`: one value per GPU (`gpus[].<field>`), compared with the other GPUs of the same model in the
  fleet. A GPU whose value is on the `worse` side of the most common value is a finding, one per node
  naming its GPUs. When values tie for most common, the better one is the norm.

`by` splits the comparison into groups: torch versions are compared with torch versions, the PCIe width
of H200s with that of H200s. `what` names the value in messages (`{key}` is the group); `fmt` shows it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..engine.model import SEVERITIES

KINDS = ("drift", "outlier")
WORSE = ("lower", "higher")


@dataclass(frozen=True)
class FleetRule:
    id: str
    title: str
    severity: str
    kind: str  # drift | outlier
    fact: str  # a fact name as in docs/facts.md: `driver.version`, `gpus[].pcie.width_current`
    what: str  # how messages name the value; `{key}` is the group's value of `by`
    why: str
    by: Optional[str] = None  # a fact of the same list item that groups the comparison
    worse: Optional[str] = None  # outlier only: lower | higher
    fmt: str = "{}"  # how a value is shown, e.g. "x{}" for a PCIe width


FLEET_RULES: tuple[FleetRule, ...] = (
    FleetRule(
        id="GD-FLEET-DRIVER-001",
        title="Driver version differs across nodes",
        severity="warning",
        kind="drift",
        fact="driver.version",
        what="driver version",
        why="Nodes on another driver behave differently under the same job (CUDA features, NCCL "
        "transports, bugs fixed or not); a multi-node job is only as good as its oddest node.",
    ),
    FleetRule(
        id="GD-FLEET-CUDA-001",
        title="Newest supported CUDA differs across nodes",
        severity="warning",
        kind="drift",
        fact="driver.max_cuda",
        what="driver CUDA version",
        why="A container or wheel built for a newer CUDA runs on most nodes and fails on these with "
        "'CUDA driver version is insufficient for CUDA runtime version'.",
    ),
    FleetRule(
        id="GD-FLEET-NCCL-001",
        title="NCCL versions differ across nodes",
        severity="warning",
        kind="drift",
        fact="nccl.versions",
        what="NCCL versions",
        why="NCCL expects the same version on every rank; mixed versions can fail to connect or hang "
        "in the first collective.",
    ),
    FleetRule(
        id="GD-FLEET-FW-001",
        title="Framework version differs across nodes",
        severity="warning",
        kind="drift",
        fact="frameworks[].version",
        by="frameworks[].name",
        what="{key} version",
        why="Ranks on another framework version may disagree on checkpoint formats, collective "
        "semantics or compiled kernels; distributed jobs want one version everywhere.",
    ),
    FleetRule(
        id="GD-FLEET-GPU-001",
        title="GPU count differs from the fleet's",
        severity="error",
        kind="drift",
        fact="gpus.count",
        what="GPU count",
        why="A node that shows fewer GPUs than its peers usually lost one (fallen off the bus, "
        "Xid 79, disabled); jobs asking for a full node fail or wait there.",
    ),
    FleetRule(
        id="GD-FLEET-GPU-002",
        title="GPU model differs from the fleet's",
        severity="warning",
        kind="drift",
        fact="gpus[].name",
        what="GPU model",
        why="A job sized for one model (memory, speed) runs out of memory or becomes the straggler "
        "on another; schedule such nodes in their own pool.",
    ),
    FleetRule(
        id="GD-FLEET-PCIE-001",
        title="GPU PCIe link narrower than on the fleet's other GPUs",
        severity="warning",
        kind="outlier",
        fact="gpus[].pcie.width_current",
        by="gpus[].name",
        worse="lower",
        what="PCIe width",
        fmt="x{}",
        why="A GPU on fewer lanes than its peers moves data to and from the host at a fraction of "
        "their speed; a riser, slot or bifurcation setting differs on this node even when the "
        "node alone looks consistent.",
    ),
    FleetRule(
        id="GD-FLEET-PCIE-002",
        title="GPU PCIe generation lower than on the fleet's other GPUs",
        severity="warning",
        kind="outlier",
        fact="gpus[].pcie.gen_max",
        by="gpus[].name",
        worse="lower",
        what="PCIe generation",
        fmt="gen {}",
        why="The highest generation the GPU and its slot share is lower than on the same GPUs "
        "elsewhere (BIOS setting, slot, riser); the current generation is not compared because it "
        "drops when a GPU idles.",
    ),
    FleetRule(
        id="GD-FLEET-NVLINK-001",
        title="More NVLink links down than on the fleet's other GPUs",
        severity="error",
        kind="outlier",
        fact="gpus[].nvlink.links_down",
        by="gpus[].name",
        worse="higher",
        what="NVLink links down",
        why="GPU-to-GPU traffic over the remaining links (or PCIe) is slower, and the whole job "
        "waits for this node in every collective.",
    ),
    FleetRule(
        id="GD-FLEET-NVLINK-002",
        title="Fewer NVLink links than on the fleet's other GPUs",
        severity="warning",
        kind="outlier",
        fact="gpus[].nvlink.links",
        by="gpus[].name",
        worse="lower",
        what="NVLink links",
        why="The same GPU model reports NVLink links elsewhere but fewer (or none) here: NVLink is not "
        "set up on this node (fabric manager, NVSwitch, driver), so GPU traffic goes over PCIe.",
    ),
)


def table_problems(rules: tuple[FleetRule, ...]) -> list[str]:
    """Everything wrong with a rule table; empty when it is well formed."""
    problems = []
    seen: set[str] = set()
    for r in rules:
        where = r.id or "<no id>"
        if r.id in seen:
            problems.append(f"{where}: duplicate id")
        seen.add(r.id)
        if not r.id.startswith("GD-FLEET-"):
            problems.append(f"{where}: id must start with GD-FLEET-")
        if r.severity not in SEVERITIES:
            problems.append(f"{where}: severity {r.severity!r} is not one of {', '.join(SEVERITIES)}")
        if r.kind not in KINDS:
            problems.append(f"{where}: kind {r.kind!r} is not one of {', '.join(KINDS)}")
        if r.kind == "outlier":
            if not r.fact.startswith("gpus[]."):
                problems.append(f"{where}: an outlier rule compares a per-GPU fact (gpus[].<field>)")
            if r.worse not in WORSE:
                problems.append(f"{where}: an outlier rule needs worse: {' or '.join(WORSE)}")
        elif r.worse is not None:
            problems.append(f"{where}: worse applies to outlier rules only")
        if r.by is not None:
            if "[]" not in r.fact or r.by.split("[]")[0] != r.fact.split("[]")[0]:
                problems.append(f"{where}: by must name a fact of the same list as {r.fact}")
        if "{key}" in r.what and r.by is None:
            problems.append(f"{where}: what uses {{key}} but the rule has no by")
    return problems
