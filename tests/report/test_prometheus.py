"""Prometheus text exposition, read back by prometheus_client's own parser."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from gpudoctor.engine.loader import load_rules
from gpudoctor.pipeline.verdict import decide
from gpudoctor.report import prometheus

from .reportkit import result_of
from conftest import FIXTURES

GOLDEN = FIXTURES / "golden"


def _families(text: str) -> dict:
    return {f.name: f for f in text_string_to_metric_families(text)}


def _samples(families: dict, name: str) -> list[tuple[dict, float]]:
    return [(s.labels, s.value) for s in families[name].samples]


def test_h200_golden_parses_with_help_and_type_for_every_metric():
    text = (GOLDEN / "h200-check.prom").read_text()
    families = _families(text)
    assert all(f.type == "gauge" and f.documentation for f in families.values())
    for name in families:
        assert f"# HELP {name} " in text and f"# TYPE {name} gauge\n" in text
    assert _samples(families, "gpudoctor_gpu_count") == [({}, 1.0)]
    assert _samples(families, "gpudoctor_driver_info") == [
        ({"version": "580.159.04", "max_cuda": "13.0"}, 1.0)
    ]
    assert _samples(families, "gpudoctor_finding") == [
        ({"rule": "GD-FW-004", "severity": "warning", "category": "frameworks", "item": "3"}, 1.0),
        ({"rule": "GD-CUDNN-002", "severity": "info", "category": "cudnn", "item": ""}, 1.0),
    ]
    assert _samples(families, "gpudoctor_findings") == [
        ({"severity": "error"}, 0.0),
        ({"severity": "warning"}, 1.0),
        ({"severity": "info"}, 1.0),
    ]
    statuses = _samples(families, "gpudoctor_rule_status")
    # not evaluated without --deep: the runtime rules and GD-EXT-001 (the extension scan)
    deep = [r for r in load_rules([]) if r.file.endswith(("runtime.yaml", "extensions.yaml"))]
    # and the suspend rules that read the cuInit result (rules/suspend.yaml)
    deep += [r for r in load_rules([]) if r.id in ("GD-SUSPEND-004", "GD-SUSPEND-005")]
    # no policy, no image: none of their rules
    given = [r for r in load_rules([]) if r.file.endswith(("policy.yaml", "image.yaml"))]
    assert len(statuses) == len(load_rules([])) - len(deep) - len(given)
    assert ({"rule": "GD-FW-004", "status": "fired"}, 1.0) in statuses
    assert _samples(families, "gpudoctor_gpu_pcie_link_width") == [({"gpu": "0"}, 16.0)]
    assert _samples(families, "gpudoctor_gpu_temperature_celsius") == [({"gpu": "0"}, 36.0)]
    assert _samples(families, "gpudoctor_gpu_power_draw_watts") == [({"gpu": "0"}, 80.368)]
    assert _samples(families, "gpudoctor_gpu_ecc_uncorrected_volatile_errors") == [({"gpu": "0"}, 0.0)]


def test_nogpu_golden_parses_and_has_no_gpu_series():
    families = _families((GOLDEN / "nogpu-check.prom").read_text())
    assert _samples(families, "gpudoctor_gpu_count") == [({}, 0.0)]
    assert not [n for n in families if n.startswith("gpudoctor_gpu_") and n != "gpudoctor_gpu_count"]
    assert "gpudoctor_driver_info" not in families  # the driver version is unknown: no made-up sample


def test_label_values_are_escaped():
    name = 'Odd "GPU" \\ model\nsecond line'
    result = result_of(
        {
            "gpus.count": 1,
            "gpus[0].index": 0,
            "gpus[0].name": name,
            "gpus[0].temperature.gpu_c": {"unknown": "not supported"},
            "driver.version": 'v"1\\',
        }
    )
    text = prometheus.render(result, decide(result, "error"), include_timing=False)
    assert '\\"GPU\\" \\\\ model\\nsecond line' in text
    families = _families(text)
    assert _samples(families, "gpudoctor_gpu_info") == [({"gpu": "0", "name": name, "bus_id": ""}, 1.0)]
    assert _samples(families, "gpudoctor_driver_info")[0][0]["version"] == 'v"1\\'
    assert "gpudoctor_gpu_temperature_celsius" not in families  # unknown: no sample, no family


def test_escape_helpers():
    assert prometheus.escape_label('a\\b"c\nd') == 'a\\\\b\\"c\\nd'
    assert prometheus.escape_help('a\\b"c\nd') == 'a\\\\b"c\\nd'


def test_ignored_and_exit_code():
    result = result_of({"gpus.count": 0, "pci.nvidia_gpus": 0}, ignore={"GD-HOST-001": "CPU runner"})
    families = _families(prometheus.render(result, decide(result, "info"), include_timing=False))
    assert _samples(families, "gpudoctor_findings_ignored") == [({}, 1.0)]
    assert ({"rule": "GD-HOST-001", "status": "ignored"}, 1.0) in _samples(families, "gpudoctor_rule_status")
    assert "gpudoctor_finding" not in families
    assert _samples(families, "gpudoctor_exit_code") == [({}, 0.0)]
