"""Per-node reports for fleet tests, made from the real H200 report by changing facts and findings."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any, Optional

from gpudoctor.bench.model import KINDS, LABELS, UNITS
from gpudoctor.fleet.load import Loaded, name_nodes, parse_report
from gpudoctor.fleet.merge import Fleet, merge

BASE_REPORT = Path(__file__).resolve().parents[1] / "fixtures" / "golden" / "h200-check.json"
_BASE: dict = json.loads(BASE_REPORT.read_text())
# The H200 capture recorded neither PATH nor a compiler's --version, so its report could not evaluate the
# build-toolchain rules (GD-CUDA-006, GD-CUDA-007). The fleet's nodes stand for complete checks: those
# rules are taken as passed here, and a test that wants an incomplete node makes one.
for _rule in _BASE["rules"]:
    if _rule["status"] == "unknown":
        _rule["status"], _rule["unknown_facts"] = "passed", {}
        _BASE["summary"]["unknown"] -= 1
        _BASE["summary"]["passed"] += 1
_STEP = re.compile(r"([a-z_]+)\[(\d+)\]$")


def set_fact(tree: dict, path: str, value: Any) -> None:
    """Set `gpus[3].pcie.width_current` (or any dotted path) in a facts tree."""
    parts = path.split(".")
    node: Any = tree
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        m = _STEP.match(part)
        if m:
            node = node[m.group(1)]
            if last:
                node[int(m.group(2))] = value
            else:
                node = node[int(m.group(2))]
        elif last:
            node[part] = value
        else:
            node = node.setdefault(part, {})


def report(
    hostname: Optional[str] = "gpu-node-01",
    gpus: int = 8,
    facts: Optional[dict[str, Any]] = None,
    findings: Optional[list[dict]] = None,
    every_gpu: Optional[dict[str, Any]] = None,
) -> dict:
    """A report like the H200 one, on `gpus` identical GPUs, with facts changed and findings added.

    every_gpu: facts of each GPU, by their name under gpus[i] (`nvlink.links`)."""
    doc = copy.deepcopy(_BASE)
    doc["host"]["hostname"] = hostname
    doc["facts"]["host"]["hostname"] = hostname if hostname is not None else {"unknown": "not recorded"}
    gpu0 = doc["facts"]["gpus"][0]
    doc["facts"]["gpus"] = [
        dict(copy.deepcopy(gpu0), index=i, bus_id=f"0000:{0x18 + i:02x}:00.0") for i in range(gpus)
    ]
    for f in doc["findings"]:  # the base report's findings name its GPU count
        f["message"] = f["message"].replace("1 GPU(s)", f"{gpus} GPU(s)")
        if "gpus.count" in f["evidence"]:
            f["evidence"]["gpus.count"] = gpus
    for i in range(gpus):
        for path, value in (every_gpu or {}).items():
            set_fact(doc["facts"], f"gpus[{i}].{path}", value)
    for path, value in (facts or {}).items():
        set_fact(doc["facts"], path, copy.deepcopy(value))  # a value given to many reports is not shared
    doc["findings"] += findings or []
    return doc


# What an H200 measures under `gpudoctor bench`, about: the values the bench fleets are made of.
H200_BENCH = {"matmul_bf16": 730.0, "h2d_pinned": 55.0, "allreduce": 360.0}


def bench(test: str, gpu: int, value: Any, gpu_name: str = "NVIDIA H200", **more: Any) -> dict:
    """One bench[] member as `gpudoctor bench --format json` writes it (docs/facts.md, bench). A value that
    is a string is a status: the test did not measure ("timed out", "failed"), and its value is unknown."""
    status = "ok" if not isinstance(value, str) else value
    return {
        "test": test,
        "kind": KINDS[test],
        "label": LABELS[test],
        "gpu": gpu,
        "gpus": 1,
        "gpu_name": gpu_name,
        "group": f"{gpu_name} {test}",
        "status": status,
        "detail": "50 iterations" if status == "ok" else f"{status} after 60 s",
        "value": value if status == "ok" else {"unknown": f"{status} after 60 s"},
        "unit": UNITS[KINDS[test]],
        **more,
    }


def bench_report(
    hostname: str,
    gpus: int = 8,
    values: Optional[dict[str, float]] = None,
    odd: Optional[dict[tuple[str, int], Any]] = None,
    gpu_name: str = "NVIDIA H200",
) -> dict:
    """A bench report: the check report of `hostname` whose facts have a bench[] list instead of findings,
    each test of `values` (H200_BENCH) on every GPU, test by test as a run measures them; an all-reduce is
    one measurement of the node (its first GPU, `gpus` of them). odd: {(test, GPU): value or status}."""
    doc = report(hostname, gpus=gpus, every_gpu={"name": gpu_name})
    doc["findings"], doc["rules"] = [], []
    members = []
    for test, value in (values or H200_BENCH).items():
        for gpu in range(1 if test == "allreduce" else gpus):
            member = bench(test, gpu, (odd or {}).get((test, gpu), value), gpu_name)
            if test == "allreduce":
                member["gpus"] = gpus
            members.append(member)
    doc["facts"]["bench"] = members
    return doc


def finding(
    rule: str,
    severity: str,
    title: str,
    message: str,
    item: Optional[int] = None,
    evidence: Optional[dict] = None,
) -> dict:
    return {
        "rule": rule,
        "severity": severity,
        "category": "gpu",
        "title": title,
        "message": message,
        "why": "",
        "item": item,
        "fix": [],
        "references": [],
        "evidence": evidence or {},
    }


def write(directory: Path, name: str, doc: Any) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc, indent=1))
    return path


def small_fleet(directory: Path) -> Path:
    """The fleet of the golden files: one oddity per node, a duplicate host, two unusable files."""
    pcie = finding(
        "GD-PCIE-001",
        "warning",
        "PCIe link narrower than it can be",
        "GPU 5 (NVIDIA H200) runs its PCIe link at x8 of x16.",
        item=5,
        evidence={"gpus[5].pcie.width_current": 8, "gpus[5].pcie.width_max": 16},
    )
    nodes = {
        "gpu-node-01.json": report("gpu-node-01"),
        "gpu-node-02.json": report("gpu-node-02", facts={"frameworks[0].version": "2.10.0"}),
        "gpu-node-03.json": report(
            "gpu-node-03",
            facts={"driver.version": "535.104.05", "driver.max_cuda": "12.2", "driver.branch": 535},
        ),
        "gpu-node-04.json": report("gpu-node-04", facts={"gpus[5].pcie.width_current": 8}, findings=[pcie]),
        "gpu-node-05.json": report("gpu-node-05", gpus=7),
        "gpu-node-10.json": report("gpu-node-10", facts={"gpus[7].name": "NVIDIA H100 80GB HBM3"}),
        "collected-twice-a.json": report("gpu-node-07"),
        "collected-twice-b.json": report("gpu-node-07"),
    }
    for name, doc in nodes.items():
        write(directory, name, doc)
    newer = dict(report("gpu-node-08"), schema_version=2)
    write(directory, "gpu-node-08.json", newer)
    write(directory, "gpu-node-09.json", json.dumps(report("gpu-node-09"))[:100])
    return directory


def bench_fleet(directory: Path) -> Path:
    """The bench fleet of the golden files: a throttled node, a narrow link, a test that timed out, a slow
    all-reduce, and a node with a check report among the bench reports."""
    nodes = {
        "bench-node-01.json": bench_report("bench-node-01"),
        "bench-node-02.json": bench_report(
            "bench-node-02", odd={("matmul_bf16", 5): 590.0, ("matmul_bf16", 6): 640.0}
        ),
        "bench-node-03.json": bench_report("bench-node-03", odd={("h2d_pinned", 2): 26.0}),
        "bench-node-04.json": bench_report("bench-node-04", odd={("matmul_bf16", 0): "timed out"}),
        "bench-node-05.json": bench_report("bench-node-05", odd={("allreduce", 0): 250.0}),
        "check-node-06.json": report("check-node-06"),
    }
    for name, doc in nodes.items():
        write(directory, name, doc)
    return directory


def fleet_of(*docs: dict) -> Fleet:
    """The merged fleet of these reports, without files (each named node-<n>.json)."""
    reports = [parse_report(json.dumps(d).encode(), f"node-{n}.json") for n, d in enumerate(docs)]
    nodes, duplicates = name_nodes(reports)
    return merge(Loaded(nodes=nodes, invalid=[], duplicates=duplicates))


# The records stage's counters on a fleet of bench reports (each also a check report: gpus[], gpu_health[],
# xid[]). Healthy values are those of the real H200 capture (pcie.replay_counter 1, ECC and NVLink counters
# 0) with the small spread a real fleet has; under load an H200 holds its highest SM clock, 1980 MHz
# (gpus[0].clocks.sm_max_mhz of the capture). The Xid is the MMU fault the kernel-log probe's tests cite
# ("NVRM: Xid (PCI:0000:c1:00): 31, pid=2646416, name=python, channel 0x0000001a, ...":
# NVIDIA/open-gpu-kernel-modules issue 1208), read into xid[] as the probe reads it.
PEER_OUTLIERS = {
    # counter: (node, GPU, fact under that GPU, value) -- one outlier each
    "ecc_corrected": ("peer-node-02", 3, "gpus[3].ecc.corrected_volatile", 5210),
    "pcie_replays": ("peer-node-03", 1, "gpus[1].pcie.replay_counter", 2400),
    "pcie_aer_correctable": ("peer-node-04", 6, "gpu_health[6].pcie.aer_correctable", 350),
    "nvlink_errors": ("peer-node-05", 2, "gpu_health[2].nvlink.replay_errors", 900),
    "xid_events": ("peer-node-06", 4, None, 12),
    "sm_clock_under_load": ("peer-node-07", 0, None, 1410),
}


def peer_report(n: int, outliers: bool) -> dict:
    """Node `peer-node-<n>` of the peer fleet: 8 H200s, counters that differ a little between GPUs; with
    `outliers`, the one PEER_OUTLIERS names on this node."""
    name = f"peer-node-{n:02d}"
    doc = bench_report(name, values={"matmul_bf16": 730.0})
    facts = doc["facts"]
    health0 = facts["gpu_health"][0]
    facts["gpu_health"] = [dict(copy.deepcopy(health0), index=i) for i in range(8)]
    facts["xid"] = []  # the kernel log was read and had no Xid
    for i in range(8):
        facts["gpus"][i]["ecc"]["corrected_volatile"] = (n + i) % 3
        facts["gpus"][i]["pcie"]["replay_counter"] = 1 + (n * i) % 4
        facts["gpu_health"][i]["pcie"]["aer_correctable"] = (n + 2 * i) % 3
        facts["bench"][i]["sm_mhz"] = 1980 - 15 * ((n + i) % 3)
    if not outliers:
        return doc
    for counter, (node, gpu, path, value) in PEER_OUTLIERS.items():
        if node != name:
            continue
        if path is not None:
            set_fact(facts, path, value)
        elif counter == "xid_events":
            facts["xid"] = [
                {
                    "code": 31,
                    "pci": "0000:1c:00",
                    "pid": 2646416,
                    "process": "python",
                    "text": "channel 0x0000001a, intr 00000000. MMU Fault",
                    "events": value,
                    "gpu": gpu,
                }
            ]
        else:
            facts["bench"][gpu]["sm_mhz"] = value
    return doc


def peer_fleet(directory: Path, outliers: bool) -> Path:
    """Eight nodes of the peer fleet (peer_report)."""
    for n in range(1, 9):
        write(directory, f"peer-node-{n:02d}.json", peer_report(n, outliers))
    return directory


def lost_gpu_report(hostname: str = "hoth") -> dict:
    """A node report (the real H200 report, renamed) whose GPU 0 is lost, as the `nvidia-smi` answer of
    lyulyul/shine-cluster#171 shows (GPU 0000:1C:00.0, "Unknown Error"): the rank-log triage's Xid case."""
    lost = finding(
        "GD-GPU-004",
        "error",
        "GPU lost (fallen off the bus)",
        'GPU 0 (NVIDIA H200, PCI 0000:1C:00.0) is lost: every NVML call on it answers "GPU is lost"; no '
        "program can use it.",
        item=0,
    )
    return report(hostname=hostname, gpus=1, findings=[lost])
