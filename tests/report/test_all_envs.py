"""`check --all-envs` as text (report/all_envs.py): the machine once, each environment with what is its own,
on the real H200 capture (tests/fixtures/h200-driver580-snapshot) judged as two environments."""

from __future__ import annotations

from gpudoctor.host.base import Deadline
from gpudoctor.pipeline.check import run_check
from gpudoctor.pipeline.verdict import decide
from gpudoctor.report.all_envs import own, render_plain

from conftest import H200


def test_a_finding_is_the_environments_when_it_read_the_environments_facts():
    assert own(["frameworks[0].cuda", "driver.max_cuda"])  # a build against the driver: its own
    assert own(["python.version"])
    assert not own(["cudnn.installs[0].version", "gpus[0].name"])  # the machine's alone
    assert not own([])


def test_the_machine_is_shown_once_and_each_environment_with_its_findings(h200_host):
    result = run_check(h200_host, str(H200), Deadline(10), [])
    python = str(result.target.python)
    results, verdicts = [result, result], [decide(result, "error")] * 2
    labels = {python: {"name": "capture", "kind": "system", "found_by": ["PATH"], "problem": ""}}
    lines = render_plain(results, verdicts, labels).splitlines()
    assert lines[0].endswith(" · 2 Python environments")
    assert sum(1 for line in lines if line.startswith("Driver ")) == 1
    machine = lines[
        lines.index("Machine findings (the same for every environment)") : lines.index("Environments")
    ]
    # the capture's two cuDNN copies read the machine's files; its CPU-only onnxruntime, the environment's
    assert any("INFO    GD-CUDNN-002" in line for line in machine)
    assert not any("GD-FW-004" in line for line in machine)
    assert [line for line in lines if line.startswith(("1. ", "2. "))] == [
        "1. capture (system; found by PATH)",
        "2. capture (system; found by PATH)",
    ]
    assert sum(1 for line in lines if line.startswith("   WARNING GD-FW-004")) == 2
    assert lines[-1].startswith(
        "Result      0 error(s), 2 warning(s), 1 info (the machine's counted once); 0 of 2"
    )
