"""`gpudoctor facts` as text (report/facts_text.py): one fact a line, aligned, its value or why it is
unknown, and its source; on the facts of the real H200 capture (tests/fixtures/h200-driver580-snapshot)."""

from __future__ import annotations

from gpudoctor.collect import collect
from gpudoctor.facts import Facts, known
from gpudoctor.host.base import Deadline
from gpudoctor.host.snapshot import SnapshotHost, load
from gpudoctor.report.facts_text import render

from conftest import H200


def test_every_fact_is_one_aligned_line_with_its_source():
    facts, _statuses = collect(SnapshotHost(load(str(H200))), Deadline(30))
    lines = render(facts).splitlines()
    assert len(lines) == len(list(facts.items()))
    width = max(len(name) for name, _fact in facts.items())
    by_name = {line.split(" ", 1)[0]: line for line in lines}
    assert (
        by_name["driver.version"]
        == "driver.version".ljust(width) + "  '580.159.04'  [nvml:nvmlSystemGetDriverVersion]"
    )
    assert (
        by_name["gpus[0].name"] == "gpus[0].name".ljust(width) + "  'NVIDIA H200'  [nvml:nvmlDeviceGetName]"
    )
    # unknown is shown with its reason, never as a value
    assert by_name["system.glibc"] == "system.glibc".ljust(width) + (
        "  unknown (libc not identified)  [python:/opt/torch/.venv/bin/python3 platform.libc_ver()]"
    )


def test_a_fact_without_a_source_has_no_brackets_and_no_facts_is_nothing():
    assert render(Facts({"gpus.count": known(0, "")})) == "gpus.count  0\n"
    assert render(Facts()) == ""
