"""`nvidia-smi topo -m` as text: a pure parser, text in, data out.

The matrix has one column per device (GPU0.., NIC0.. from driver 525 or so, the RDMA device's own name such
as mlx5_0 before), then `CPU Affinity`, later `NUMA Affinity` and `GPU NUMA ID`; each GPU row ends with
those affinities, a NIC row has none. A cell is X (self), NV# (# bonded NVLinks), PIX, PXB, PHB, NODE, SYS
(SOC in old drivers, the same meaning). nvidia-smi separates columns with tabs; text pasted into an issue
usually has them turned into runs of spaces, sometimes a single one, so a row is split on any whitespace
(no cell holds a blank). Then the legend, and with NIC columns a `NIC Legend:` naming each NIC
(`  NIC0: mlx5_0`). The matrix ends at `Legend:`: a `topo -p2p` matrix pasted after it (cells OK, GNS,
CNS...) is not read. A row cut short (a truncated paste) is left out and listed in `skipped`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

__all__ = ["TopoMatrix", "parse_topo"]

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_CELL = re.compile(r"^(X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC)$")
# Header labels after the device columns, longest first so that `GPU NUMA ID` is not read as a device.
_TRAILERS = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
_LEGEND_NIC = re.compile(r"^\s*(?P<nic>NIC\d+):\s*(?P<name>\S+)\s*$")


@dataclass(frozen=True)
class TopoMatrix:
    devices: tuple[str, ...] = ()  # the column names, in order
    cells: dict[tuple[str, str], str] = field(default_factory=dict)  # (row, column) -> X, NV18, PIX, ...
    cpu_affinity: dict[str, str] = field(default_factory=dict)
    numa_affinity: dict[str, str] = field(default_factory=dict)
    gpu_numa_id: dict[str, str] = field(default_factory=dict)
    nic_legend: dict[str, str] = field(default_factory=dict)  # NIC0 -> mlx5_0
    affinity_columns: tuple[str, ...] = ()  # which of CPU Affinity, NUMA Affinity, GPU NUMA ID the header has
    skipped: tuple[str, ...] = ()  # rows that could not be read whole

    @property
    def gpus(self) -> tuple[str, ...]:
        return tuple(d for d in self.devices if re.fullmatch(r"GPU\d+", d))

    @property
    def nics(self) -> tuple[str, ...]:
        return tuple(d for d in self.devices if not re.fullmatch(r"GPU\d+", d))

    def link(self, a: str, b: str) -> Optional[str]:
        """The cell between two devices, read from a's row or else from b's (a truncated matrix may hold only
        one of the two)."""
        return self.cells.get((a, b)) or self.cells.get((b, a))

    def nvlinks(self, a: str, b: str) -> int:
        cell = self.link(a, b) or ""
        return int(cell[2:]) if re.fullmatch(r"NV\d+", cell) else 0

    def nic_name(self, column: str) -> str:
        """The RDMA device behind a column: NIC0 -> mlx5_0 by the legend; an mlx5_0 column is itself."""
        return self.nic_legend.get(column, column)


def _header(tokens_line: str) -> Optional[tuple[tuple[str, ...], tuple[str, ...]]]:
    text = tokens_line.strip()
    trailers: list[tuple[int, str]] = []
    for label in _TRAILERS:
        at = text.find(label)
        if at >= 0:
            trailers.append((at, label))
    cut = min((at for at, _ in trailers), default=len(text))
    devices = tuple(text[:cut].split())
    if not devices or not devices[0].startswith("GPU"):
        return None
    if len(devices) > 1 and _CELL.match(devices[1]):
        return None  # a row (GPU0  X  NV18 ...), not the header
    return devices, tuple(label for _, label in sorted(trailers))


def parse_topo(text: str) -> TopoMatrix:
    devices: tuple[str, ...] = ()
    trailers: tuple[str, ...] = ()
    cells: dict[tuple[str, str], str] = {}
    cpu: dict[str, str] = {}
    numa: dict[str, str] = {}
    gpu_numa: dict[str, str] = {}
    legend: dict[str, str] = {}
    skipped: list[str] = []
    in_matrix = True
    for raw in text.splitlines():
        line = _ANSI.sub("", raw)
        nic = _LEGEND_NIC.match(line)
        if nic:
            legend[nic.group("nic")] = nic.group("name")
            continue
        if line.strip() == "Legend:":
            # The matrix ends at its legend; what follows (`topo -p2p` matrices pasted after it) is not it.
            in_matrix = not devices
            continue
        if not in_matrix:
            continue
        if not devices:
            header = _header(line)
            if header:
                devices, trailers = header
            continue
        tokens = line.split()
        if not tokens or tokens[0] not in devices:
            continue
        row, values = tokens[0], tokens[1:]
        if len(values) < len(devices) or not all(_CELL.match(v) for v in values[: len(devices)]):
            skipped.append(row)
            continue
        for column, value in zip(devices, values):
            cells[(row, column)] = value
        extra = values[len(devices) :]
        for label, value in zip(trailers, extra):
            target = {"CPU Affinity": cpu, "NUMA Affinity": numa, "GPU NUMA ID": gpu_numa}[label]
            target[row] = value
    return TopoMatrix(
        devices=devices,
        cells=cells,
        cpu_affinity=cpu,
        numa_affinity=numa,
        gpu_numa_id=gpu_numa,
        nic_legend=legend,
        affinity_columns=trailers,
        skipped=tuple(skipped),
    )
