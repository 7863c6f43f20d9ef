"""report/explain_text.py: what `gpudoctor explain` prints, for real error messages (each with the thread it
was seen in) matched by the shipped rules and explain entries and judged on the recorded H200
(tests/fixtures/h200-driver580-snapshot), in process; `gpudoctor explain` as a process is tested in
tests/test_explain.py."""

from __future__ import annotations

import pytest

from gpudoctor.explain.answer import answer, candidates_by_line, how, judged_triage
from gpudoctor.explain.index import build
from gpudoctor.explain.match import read_numbers
from gpudoctor.host.base import Deadline
from gpudoctor.host.snapshot import SnapshotHost, load
from gpudoctor.pipeline.check import run_check
from gpudoctor.plan import build_plan
from gpudoctor.profiles import PROFILES
from gpudoctor.report import explain_text

from conftest import H200

WHERE = "snapshot h200"
# rules/frameworks.yaml GD-FW-004's error text, from https://github.com/ASLP-lab/DiffRhythm/issues/84
ORT = "Specified provider 'CUDAExecutionProvider' is not in available provider names"
# https://github.com/ZJULearning/RMI/issues/26 (tests/explain/corpus/first_set.yaml)
ILLEGAL = "RuntimeError: CUDA error: an illegal memory access was encountered"
# https://github.com/lllyasviel/Fooocus/issues/1313 (tests/explain/corpus/first_set.yaml)
OLD_DRIVER = (
    "RuntimeError: The NVIDIA driver on your system is too old (found version 11040). Please update your GPU"
    " driver by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx"
    " Alternatively, go to: https://pytorch.org to install a PyTorch version that has been compiled with your"
    " version of the CUDA driver."
)
# https://github.com/NVIDIA/NVSentinel/issues/155 (tests/explain/corpus/first_set.yaml)
XID79 = "NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus."
# https://github.com/NVIDIA/nccl/issues/1372 (corpus/cuda_frameworks.yaml): no rule is sure of it
NCCL = "enqueue.cc:58 NCCL WARN Cuda failure 'named symbol not found'"


@pytest.fixture(scope="module")
def judge():
    result = run_check(
        SnapshotHost(load(str(H200)), "h200"), "h200", Deadline(10), [], profile=PROFILES["workstation"]
    )
    plan = build_plan(result.findings, result.facts)
    matcher, entries = build()

    def found(message: str) -> list:
        return answer(matcher.rank(message, limit=8), result, plan, entries)

    found.log = lambda lines: judged_triage(candidates_by_line(lines, matcher), result, plan, entries)
    return found


def test_a_cause_that_applies_here_shows_the_finding_and_the_plans_commands(judge):
    text = explain_text.message(ORT, judge(ORT), [], how, WHERE)
    assert text.split("\n\n")[:2] == [
        f"Explaining: {ORT}",
        "1. GD-FW-004 · CPU-only ONNX Runtime on a GPU host\n"
        f'   matched "{ORT}"\n'
        "   here (snapshot h200): APPLIES\n"
        "     onnxruntime 1.30.0 is the CPU-only package; the CUDA execution provider is not available on\n"
        "       this host's 1 GPU(s).\n"
        "     fix: /opt/torch/.venv/bin/python3 -m pip uninstall -y onnxruntime\n"
        "     fix: /opt/torch/.venv/bin/python3 -m pip install 'onnxruntime-gpu[cuda,cudnn]==1.30.0'",
    ]
    assert text.endswith("\n") and not text.endswith("\n\n")


def test_a_program_error_says_what_it_means_and_no_here_line(judge):
    found = judge(ILLEGAL)
    block = explain_text.answers(found[:1], how, WHERE)
    assert block[:3] == [
        "1. GD-EXPLAIN-001 · Illegal memory access (nearly always a bug in a kernel or the program)",
        '   matched "an illegal memory access was encountered"',
        "   what it means: A kernel read or wrote GPU memory it does not own: an index out of range, a"
        " tensor",
    ]
    assert not any(line.startswith("   here (") for line in block)
    assert block[-2:] == [
        "   here: the kernel log could not be read (unknown), so Xid events are not known",
        "",
    ]
    assert all(len(line) <= 100 for line in block)


def test_numbers_read_from_the_message_and_a_long_message_cut(judge):
    numbers = read_numbers(OLD_DRIVER).lines()
    lines = explain_text.message(OLD_DRIVER, judge(OLD_DRIVER), numbers, how, WHERE).splitlines()
    assert lines[0] == f"Explaining: {OLD_DRIVER[:300]}..."
    assert lines[1:3] == ["Read from it: the driver it found supports CUDA 11.4 at most", ""]


def test_no_confident_cause_shows_the_closest_with_a_caution(judge):
    found = judge(NCCL)
    assert found and not found[0].candidate.confident
    lines = explain_text.message(NCCL, found, [], how, WHERE).splitlines()
    assert lines[1:4] == ["", "No rule explains this with confidence; the closest:", ""]
    top = found[0].candidate.known
    assert lines[4] == f"1. {top.id} · {top.title} · not confident"


def test_nothing_matched():
    text = explain_text.message("ModuleNotFoundError:   No module\n named 'foo'", [], [], None, "")
    assert text == "Explaining: ModuleNotFoundError: No module named 'foo'\n\n" + explain_text.NO_MATCH


def test_a_log_shows_each_cause_once_with_its_lines(judge):
    # A progress line of the kind issue 24 names ("step 802" is no CUDA error 802), and the Xid line again
    # and from a second GPU's address.
    lines = ["step 802 ok", XID79, ILLEGAL, XID79, XID79.replace("44:00", "45:00")]
    groups = judge.log(lines)
    text = explain_text.log(groups, len(lines), how, WHERE)
    assert text.startswith(f"Read 5 line(s): {len(groups)} cause(s) recognised.\n\n1. ")
    assert f"   seen in 2 line(s), e.g.:\n     | {XID79}\n     | {XID79.replace('44:00', '45:00')}\n" in text
    assert f"   seen in 1 line(s), e.g.:\n     | {ILLEGAL}\n" in text
    assert "step 802" not in text


def test_a_log_with_nothing_known():
    assert explain_text.log([], 2, None, "") == (
        "Read 2 line(s): none matches a cause gpudoctor knows.\n" + explain_text.NO_MATCH
    )


def test_control_characters_from_the_input_do_not_reach_the_terminal(judge):
    hostile = ORT + "\x1b]0;owned\x07\x1b[2J"
    text = explain_text.message(hostile, judge(ORT), [], how, WHERE)
    assert "\x1b" not in text and "\x07" not in text
    assert explain_text.judged("/opt/torch/.venv/bin/python3 (VIRTUAL_ENV)") == (
        "\nPython judged: /opt/torch/.venv/bin/python3 (VIRTUAL_ENV)\n"
    )
