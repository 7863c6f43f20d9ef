"""explain/failure.py: the block `gpudoctor run` prints after a failed command, from real error output, judged
live on this machine (a CPU box: no GPU, the kernel log as it is); `gpudoctor run` itself is tested in
tests/test_run_command.py."""

from __future__ import annotations

import sys

from gpudoctor.explain.failure import MAX_CAUSES, explain_failure, judged_line
from gpudoctor.host.base import Deadline
from gpudoctor.host.command_words import Judged
from gpudoctor.host.open import open_host

# https://github.com/ZJULearning/RMI/issues/26 (tests/explain/corpus/first_set.yaml)
ILLEGAL = "RuntimeError: CUDA error: an illegal memory access was encountered"
# https://github.com/X-PLUG/MobileAgent/issues/60 (tests/explain/corpus/cuda_frameworks.yaml)
NOT_COMPILED = "AssertionError: Torch not compiled with CUDA enabled"
HEAD = "gpudoctor: the command failed; what its error output points at on this host:"


def test_output_that_matches_nothing_gives_no_block():
    # A training log's progress lines (issue 24: a bare "802" is no CUDA error 802).
    assert explain_failure("epoch 1 loss 0.3\nstep 802 ok\n", 10.0) == ""


def test_a_program_error_says_so_with_what_to_do_and_the_kernel_logs_word():
    lines = explain_failure(f"Traceback (most recent call last):\n{ILLEGAL}\n", 10.0).splitlines()
    assert lines[0] == HEAD
    assert lines[1].startswith("  the command was not read; judging ")
    assert lines[2] == (
        "  GD-EXPLAIN-001 · Illegal memory access (nearly always a bug in a kernel or the program): an error"
        " of the program, not of this host"
    )
    assert lines[3:5] == [
        "    do: Run again with CUDA_LAUNCH_BLOCKING=1 so that the error is raised at the launch that caused"
        " it.",
        "    do: Find the faulty access: compute-sanitizer --tool memcheck python your_script.py",
    ]
    assert lines[5].startswith("    here: ")  # the kernel log's word on Xid events, whatever it is here
    assert (
        lines[6]
        == "  (gpudoctor explain --log FILE reads a whole log; gpudoctor check judges the whole host)"
    )
    assert len(lines) == 7


def test_the_commands_interpreter_is_judged_and_named():
    target = Judged(sys.executable, "argv[0] of the command")
    lines = explain_failure(NOT_COMPILED + "\n", 10.0, target).splitlines()
    assert lines[:2] == [HEAD, f"  judged {sys.executable}: argv[0] of the command"]
    causes = [line for line in lines if line.startswith("  GD-")]
    assert 1 <= len(causes) <= MAX_CAUSES
    assert causes[0].startswith("  GD-FW-001 · CPU-only PyTorch on a GPU host: ")
    assert causes[0].endswith(" here")  # its verdict on this host (this venv has no torch)
    assert lines[-1] == (
        f"  (gpudoctor explain --log FILE --python {sys.executable} reads a whole log; gpudoctor check judges"
        " the whole host)"
    )


def test_judged_line_without_an_interpreter_names_the_default_target_and_why():
    host, _source = open_host(None, [], Deadline(10))
    default = host.python_targets()[0][0]
    assert judged_line(None, host).startswith(f"the command was not read; judging {default} (")
    not_python = Judged(None, "the command is not a Python program")
    assert judged_line(not_python, host).startswith(
        f"the command is not a Python program; judging {default} ("
    )
    assert judged_line(Judged("/opt/venv/bin/python", "argv[0] of the command"), host) == (
        "judged /opt/venv/bin/python: argv[0] of the command"
    )
