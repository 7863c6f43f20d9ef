"""A finding as the text reports show it (report/lines.py), on the shipped GD-PCIE-002 fired by its own rule
case (tests/rules/cases/GD-PCIE-002.yaml, busy-at-gen3): the exact lines at 100 columns, and what changes
at 60."""

from __future__ import annotations

import pytest

from gpudoctor.engine.evaluate import evaluate_rule
from gpudoctor.engine.loader import load_rules
from gpudoctor.engine.model import FixStep
from gpudoctor.facts import Facts, known
from gpudoctor.report.lines import STYLE, command_text, finding_lines, plain_text


@pytest.fixture(scope="module")
def finding():
    rule = next(r for r in load_rules([]) if r.id == "GD-PCIE-002")
    case = {
        "gpus.count": 1, "gpus[0].index": 0, "gpus[0].name": "NVIDIA H200", "gpus[0].pcie.gen_current": 3,
        "gpus[0].pcie.gen_max": 5, "gpus[0].utilization.gpu": 97,
    }  # fmt: skip
    (found,) = evaluate_rule(rule, Facts({k: known(v, "case") for k, v in case.items()})).findings
    return found


def test_a_finding_at_100_columns(finding):
    assert plain_text(finding_lines(finding, 100, "GPU 0")) == (
        "  WARNING GD-PCIE-002  PCIe link below its generation while the GPU is busy · GPU 0\n"
        "    GPU 0 (NVIDIA H200) is 97% busy but its PCIe link runs at gen 3 of gen 5.\n"
        "    why: An idle GPU drops its link speed to save power, which is normal; a busy one should "
        "train up\n"
        "         to its highest generation. A link stuck low under load halves host-device bandwidth with\n"
        "         each step down, and points at signal-integrity trouble (risers, retimers) or a BIOS limit\n"
        "         on the slot's generation.\n"
        "    fix: Check the slot's PCIe generation setting in the BIOS and any riser or retimer; confirm\n"
        "         under load with nvidia-smi --query-gpu=pcie.link.gen.current,pcie.link.gen.max\n"
        "         --format=csv.\n"
    )


def test_where_goes_below_the_title_when_the_line_would_be_too_wide(finding):
    lines = plain_text(finding_lines(finding, 60, "GPU 0 (NVIDIA H200, 0000:00:06.0)")).splitlines()
    assert lines[0] == "  WARNING GD-PCIE-002  PCIe link below its generation while the GPU is busy"
    assert lines[1] == "    on GPU 0 (NVIDIA H200, 0000:00:06.0)"
    # the text below is wrapped to the width, the nvidia-smi option kept whole on a line of its own (the
    # title line itself is not wrapped)
    assert max(len(line) for line in lines[1:]) <= 60
    assert "         --query-gpu=pcie.link.gen.current,pcie.link.gen.max" in lines


def test_the_severity_is_styled_and_padded(finding):
    head = finding_lines(finding, 100)[0]
    assert head[1] == ("WARNING ", STYLE["warning"]) and head[2] == ("GD-PCIE-002", "bold")
    assert len(head) == 4  # no `where`: nothing follows the title


def test_a_command_step_is_shown_as_the_shell_would_run_it():
    # rules/builds.yaml's step, rendered for the H200 capture's CUDA 13.0
    assert command_text(FixStep("env", ("export", "CUDA_HOME=/usr/local/cuda-13.0"))) == (
        "export CUDA_HOME=/usr/local/cuda-13.0"
    )
    # an argument with a space or a shell character is quoted, so that pasting it runs this argv
    assert command_text(FixStep("pip", ("pip", "install", "torch>=2.11"))) == "pip install 'torch>=2.11'"
    assert command_text(FixStep("manual", (), "Reseat the GPU.")) == ""


def test_a_findings_side_is_named_for_what_was_judged():
    from gpudoctor.report.lines import side_words

    assert [side_words("image", s) for s in ("image", "host", "both")] == ["image", "host", "image and host"]
    assert side_words("lock", "both") == "lockfile and host"
