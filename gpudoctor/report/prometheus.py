"""Prometheus text exposition format, for node-exporter's textfile collector.

Write it atomically where the collector looks (`gpudoctor check --format prometheus > x.prom.tmp &&
mv x.prom.tmp /var/lib/node_exporter/textfile/gpudoctor.prom`). Every metric is a gauge with HELP and
TYPE lines; a fact that could not be read has no sample rather than a made-up value.
"""

from __future__ import annotations

from typing import Any, Optional

from .. import __version__
from ..engine.model import SEVERITIES
from ..pipeline.result import Result, Verdict

Labels = dict[str, str]


def escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value: Any) -> Optional[str]:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    return None


class _Metrics:
    """Samples grouped by metric name, in the order metrics are first declared."""

    def __init__(self) -> None:
        self.order: list[str] = []
        self.help: dict[str, str] = {}
        self.samples: dict[str, list[tuple[Labels, str]]] = {}

    def declare(self, name: str, help_text: str) -> None:
        if name not in self.help:
            self.order.append(name)
            self.help[name] = help_text
            self.samples[name] = []

    def add(self, name: str, help_text: str, value: Any, labels: Optional[Labels] = None) -> None:
        self.declare(name, help_text)
        text = _number(value)
        if text is not None:
            self.samples[name].append((labels or {}, text))

    def text(self) -> str:
        out = []
        for name in self.order:
            if not self.samples[name]:
                continue
            out.append(f"# HELP {name} {escape_help(self.help[name])}")
            out.append(f"# TYPE {name} gauge")
            for labels, value in self.samples[name]:
                inner = ",".join(f'{k}="{escape_label(str(v))}"' for k, v in labels.items())
                out.append(f"{name}{{{inner}}} {value}" if inner else f"{name} {value}")
        return "\n".join(out) + "\n"


# (fact under gpus[i]., metric name, help)
GPU_GAUGES = (
    ("pcie.gen_current", "gpudoctor_gpu_pcie_link_gen", "PCIe generation the link runs at now"),
    ("pcie.gen_max", "gpudoctor_gpu_pcie_link_gen_max", "Highest PCIe generation of GPU and slot"),
    ("pcie.width_current", "gpudoctor_gpu_pcie_link_width", "PCIe link width now, in lanes"),
    ("pcie.width_max", "gpudoctor_gpu_pcie_link_width_max", "Widest PCIe link of GPU and slot, in lanes"),
    ("pcie.replay_counter", "gpudoctor_gpu_pcie_replays", "PCIe replays since boot"),
    ("temperature.gpu_c", "gpudoctor_gpu_temperature_celsius", "GPU core temperature"),
    ("power.draw_w", "gpudoctor_gpu_power_draw_watts", "GPU power draw"),
    ("power.limit_w", "gpudoctor_gpu_power_limit_watts", "GPU power management limit in force"),
    ("memory.total_bytes", "gpudoctor_gpu_memory_total_bytes", "GPU framebuffer memory"),
    ("clocks.event_reasons", "gpudoctor_gpu_clock_event_reasons", "Active clock event reasons (nvml.h bits)"),
    ("ecc.enabled", "gpudoctor_gpu_ecc_enabled", "1 when ECC is on"),
    (
        "ecc.uncorrected_volatile",
        "gpudoctor_gpu_ecc_uncorrected_volatile_errors",
        "Uncorrected ECC errors since the driver loaded",
    ),
    (
        "ecc.uncorrected_aggregate",
        "gpudoctor_gpu_ecc_uncorrected_aggregate_errors",
        "Uncorrected ECC errors over the GPU's life",
    ),
    (
        "ecc.corrected_volatile",
        "gpudoctor_gpu_ecc_corrected_volatile_errors",
        "Corrected ECC errors since the driver loaded",
    ),
    ("remapped_rows.pending", "gpudoctor_gpu_remapped_rows_pending", "1 when a row remap waits for a reset"),
    ("remapped_rows.failed", "gpudoctor_gpu_remapped_rows_failed", "1 when a row remap failed"),
    ("nvlink.links_up", "gpudoctor_gpu_nvlink_links_up", "NVLink links active"),
    ("nvlink.links_down", "gpudoctor_gpu_nvlink_links_down", "NVLink links inactive"),
)


def render(result: Result, verdict: Verdict, include_timing: bool = True) -> str:
    """`verdict`: the run's, decided once by the caller (pipeline/verdict.py)."""
    m = _Metrics()
    facts = result.facts
    m.add(
        "gpudoctor_info",
        "gpudoctor version and profile of this check",
        1,
        {"version": __version__, "profile": result.profile, "host_kind": result.host_kind},
    )
    m.add(
        "gpudoctor_exit_code",
        f"Exit code of the check under --fail-on {verdict.fail_on}",
        verdict.code,
    )
    if include_timing:
        m.add("gpudoctor_check_duration_seconds", "Wall time of the check", round(result.elapsed, 4))
    for f in result.findings:
        labels = {
            "rule": f.rule.id,
            "severity": f.severity,
            "category": f.rule.category,
            "item": "" if f.item is None else str(f.item),
        }
        m.add(
            "gpudoctor_finding",
            "A finding: 1 per rule and item that fired (ignored rules excluded)",
            1,
            labels,
        )
    counts = result.counts()
    for severity in SEVERITIES:
        m.add("gpudoctor_findings", "Findings by severity", counts[severity], {"severity": severity})
    m.add("gpudoctor_findings_ignored", "Findings of rules the policy ignores", counts["ignored"])
    for r in result.results:
        m.add(
            "gpudoctor_rule_status",
            "Each rule evaluated, by status: fired, passed, unknown, not_applicable, ignored",
            1,
            {"rule": r.rule.id, "status": result.status(r)},
        )
    for p in result.probes:
        m.add(
            "gpudoctor_probe_ok",
            "1 when the probe finished, 0 when it crashed or timed out",
            p.status == "ok",
            {"probe": p.name},
        )
    m.add(
        "gpudoctor_timed_out_calls",
        "Commands and NVML calls that did not answer in time",
        len(result.timed_out),
    )
    m.add("gpudoctor_gpu_count", "GPUs NVML can see", facts.value("gpus.count"))
    if facts.value("driver.version") is not None:
        m.add(
            "gpudoctor_driver_info",
            "NVIDIA driver version and the newest CUDA it supports",
            1,
            {
                "version": str(facts.value("driver.version")),
                "max_cuda": str(facts.value("driver.max_cuda", "")),
            },
        )
    for i in range(facts.count("gpus")):
        g = f"gpus[{i}]."
        index = str(facts.value(g + "index", i))
        m.add(
            "gpudoctor_gpu_info",
            "One per GPU: its name and PCI address",
            1,
            {
                "gpu": index,
                "name": str(facts.value(g + "name", "")),
                "bus_id": str(facts.value(g + "bus_id", "")),
            },
        )
    for field, name, help_text in GPU_GAUGES:
        for i in range(facts.count("gpus")):
            g = f"gpus[{i}]."
            m.add(name, help_text, facts.value(g + field), {"gpu": str(facts.value(g + "index", i))})
    return m.text()
