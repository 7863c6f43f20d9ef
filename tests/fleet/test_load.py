"""Reading reports: every unusable file is named with the reason and the others still load."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpudoctor.facts import Facts
from gpudoctor.fleet import load
from gpudoctor.fleet.load import ReportError, load_reports, parse_report
from gpudoctor.fleet.merge import merge, verdict
from gpudoctor.report.fleet_report import render_text

from .fleetgen import finding, report, write


def reason(doc) -> str:
    data = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    with pytest.raises(ReportError) as e:
        parse_report(data, "x.json")
    return str(e.value)


def test_a_real_report_loads_with_its_findings_and_what_they_are_about():
    pcie = finding("GD-PCIE-001", "warning", "t", "m", item=5, evidence={"gpus[5].pcie.width_current": 8})
    node = parse_report(json.dumps(report("gpu-1", findings=[pcie])).encode(), "r.json")
    assert (node.hostname, node.written_by, node.file) == ("gpu-1", "0.1.0", "r.json")
    assert [(f.rule, f.severity, f.item, f.item_label, f.gpu) for f in node.findings] == [
        ("GD-FW-004", "warning", 3, "onnxruntime", None),
        ("GD-CUDNN-002", "info", None, None, None),
        ("GD-PCIE-001", "warning", 5, "GPU 5", 5),
    ]
    assert (node.timed_out, node.incomplete, node.unknown_rules) == ((), (), 0)


def test_incomplete_checks_are_kept():
    doc = report("gpu-1")
    doc["probes"][1] = {"name": "gpus", "status": "timed out", "detail": "", "seconds": 10}
    doc["timed_out"] = ["nvmlDeviceGetClockInfo"]
    doc["rules"][0]["status"] = "unknown"
    node = parse_report(json.dumps(doc).encode(), "r.json")
    assert (node.incomplete, node.timed_out, node.unknown_rules) == (
        ("gpus timed out",),
        ("nvmlDeviceGetClockInfo",),
        1,
    )


@pytest.mark.parametrize(
    "doc,expected",
    [
        (b"", "empty file"),
        (b'{"schema": ', "not JSON: Expecting value: line 1 column 12 (char 11)"),
        (b"\xff\xfe", "not JSON: "),
        ([1, 2], "not a gpudoctor report (not a JSON object)"),
        (
            {"schema": "gpudoctor.fleet", "schema_version": 1},
            "not a gpudoctor report (schema is 'gpudoctor.fleet', expected 'gpudoctor.report'; "
            "write reports with `gpudoctor check --format json`)",
        ),
        (dict(report(), schema_version="1"), "schema_version is missing or not an integer"),
        (
            dict(report(), schema_version=2),
            "report schema_version 2 is newer than this gpudoctor reads (1); merge with the gpudoctor "
            "version that wrote it, or a newer one",
        ),
        (
            dict(report(), schema_version=0),
            "report schema_version 0 is not supported (this gpudoctor reads 1)",
        ),
        (dict(report(), facts=[]), "facts: expected an object, got list"),
        ({k: v for k, v in report().items() if k != "host"}, "host: expected an object, missing"),
        (dict(report(), host={"hostname": 7}), "host.hostname: expected a string or null"),
        (dict(report(), findings=[{}]), "findings[0].severity: expected a string, missing"),
        (
            dict(report(), findings=[finding("X", "critical", "t", "m")]),
            "findings[0].severity: expected one of error, warning, info, got 'critical'",
        ),
        (
            dict(report(), findings=[dict(finding("X", "info", "t", "m"), item="3")]),
            "findings[0].item: expected an integer or null",
        ),
    ],
)
def test_unusable_reports_say_why(doc, expected):
    assert reason(doc).startswith(expected)


def test_one_bad_file_does_not_hide_the_others(tmp_path):
    write(tmp_path, "a.json", report("gpu-a"))
    write(tmp_path, "b.json", "{not json")
    write(tmp_path / "sub" / "deeper", "c.json", report("gpu-c"))
    write(tmp_path, "notes.txt", "not a report, not a .json file")
    (tmp_path / "empty").mkdir()
    given = [tmp_path, tmp_path / "a.json", tmp_path / "nope.json", tmp_path / "empty"]
    loaded = load_reports([str(p) for p in given])
    assert [n.name for n in loaded.nodes] == ["gpu-a", "gpu-c"]  # a.json once, though named twice
    assert [(i.file, i.reason.split(":")[0]) for i in loaded.invalid] == [
        (str(tmp_path / "nope.json"), "no such file or directory"),
        (str(tmp_path / "empty"), "no *.json files in this directory"),
        (str(tmp_path / "b.json"), "not JSON"),
    ]


def test_an_oversized_or_unreadable_file_is_refused_without_reading_it(tmp_path, monkeypatch):
    path = write(tmp_path, "big.json", report("gpu-a"))
    monkeypatch.setattr(load, "MAX_REPORT_BYTES", 100)
    expected = f"too large for a report ({path.stat().st_size} bytes; the limit is 100)"
    assert load_reports([str(path)]).invalid[0].reason == expected
    monkeypatch.undo()
    (tmp_path / "dir.json").mkdir()
    (tmp_path / "dir.json" / "inner.json").write_text("")
    bad = load_reports([str(tmp_path / "dir.json"), str(tmp_path / "dir.json" / "inner.json")]).invalid
    assert [b.reason for b in bad] == ["empty file"]  # the directory is searched, its file read once


def test_node_names_hostname_else_file_name_duplicates_numbered(tmp_path):
    write(tmp_path, "1.json", report("gpu-a"))
    write(tmp_path, "2.json", report("gpu-a"))
    write(tmp_path, "3.json", report(None))
    write(tmp_path, "4.json", report("3"))  # a hostname equal to another report's file name
    write(tmp_path, "5.json", report("gpu-a#2"))  # and one that looks like a numbered duplicate
    loaded = load_reports([str(tmp_path)])
    assert [(n.name, n.file[-6:]) for n in loaded.nodes] == [
        ("gpu-a#1", "1.json"),
        ("gpu-a#3", "2.json"),
        ("3#1", "3.json"),
        ("3#2", "4.json"),
        ("gpu-a#2", "5.json"),
    ]
    assert loaded.duplicates == {"gpu-a": ["gpu-a#1", "gpu-a#3"], "3": ["3#1", "3#2"]}


def test_hostile_reports_are_refused_or_read_never_crash(tmp_path):
    assert reason(b"[" * 100_000 + b"]" * 100_000).startswith("not JSON")
    assert reason(b'{"a": ' + b"9" * 5000 + b"}").startswith("not JSON")
    doc = report(
        "9" * 5000, findings=[finding("X", "info", "t", "m", item=1, evidence={"gpus[" + "1" * 50 + "]": 1})]
    )
    write(tmp_path, "a.json", doc)
    write(tmp_path, "b.json", report("evil\x1b[2Jhost"))
    nested = report("nested")
    nested["facts"]["driver"]["version"] = [[["nested"]]]
    write(tmp_path, "c.json", nested)
    fleet = merge(load_reports([str(tmp_path)]))
    assert [n.name[:3] for n in fleet.nodes] == ["999", "evi"]
    assert fleet.nodes[0].findings[-1].item_label == "item 1"
    assert [(Path(bad.file).name, bad.reason) for bad in fleet.invalid] == [
        (
            "c.json",
            "facts.driver.version: expected a version string (driver.version is version), got an array",
        )
    ]
    text = render_text(fleet, verdict(fleet, "error"))
    assert "\x1b" not in text and "evil?[2Jhost" in text


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        (("gpus", 0, "name"), 7, "facts.gpus[0].name: expected a string (gpus[].name is str), got int 7"),
        (
            ("gpus", 2, "pcie", "width_current"),
            "x16",
            "facts.gpus[2].pcie.width_current: expected an integer (gpus[].pcie.width_current is int), "
            "got str 'x16'",
        ),
        (
            ("gpus", 1, "index"),
            True,
            "facts.gpus[1].index: expected an integer (gpus[].index is int), got bool True",
        ),
        (
            ("nccl", "versions"),
            [2, 21],
            "facts.nccl.versions: expected an array of strings (nccl.versions is list[str]), got an array",
        ),
    ],
)
def test_a_wrongly_typed_fact_is_refused_naming_the_file_and_the_fact(tmp_path, path, value, expected):
    doc = report("typed")
    node = doc["facts"]
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    write(tmp_path, "typed.json", doc)
    loaded = load_reports([str(tmp_path)])
    assert loaded.nodes == []
    assert [(bad.file, bad.reason) for bad in loaded.invalid] == [(str(tmp_path / "typed.json"), expected)]


def test_a_node_keeps_only_the_facts_the_fleet_reads():
    node = parse_report(json.dumps(report("slim")).encode(), "r.json")
    assert isinstance(node.facts, Facts)  # the same Facts class a check reads
    names = {name for name, _ in node.facts.items()}
    heads = {"driver", "gpus", "frameworks", "nccl", "gpu_health", "xid"}  # xid, gpu_health: the records'
    assert {n.split(".")[0].split("[")[0] for n in names} <= heads
    assert {n for n in names if n.startswith("gpus[0].")} == {
        "gpus[0].index",
        "gpus[0].name",
        "gpus[0].pcie.width_current",
        "gpus[0].pcie.gen_max",
        "gpus[0].nvlink.links",
        "gpus[0].nvlink.links_down",
        "gpus[0].ecc.corrected_volatile",  # the records stage's counters (fleet/records.py)
        "gpus[0].pcie.replay_counter",
    }
    assert {n for n in names if n.startswith("driver.")} == {"driver.version", "driver.max_cuda"}
    assert node.facts.value("gpus.count") == 8 and node.facts.get("gpus[0].name").source == "report"
