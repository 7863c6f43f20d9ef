"""`gpudoctor explain` (commands/explain.py): a message or a log, judged on the host; how the matcher ranks
and reads numbers is tested in tests/explain/test_match.py."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fleet.fleetgen import lost_gpu_report, write

from conftest import H200, run_cli


def test_explain_on_the_h200_says_a_cpu_torch_rule_does_not_apply_and_why():
    r = run_cli("explain", "--snapshot", str(H200), "Torch not compiled with CUDA enabled")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "Explaining: Torch not compiled with CUDA enabled"
    assert lines[2] == "1. GD-FW-001 · CPU-only PyTorch on a GPU host"
    assert lines[3] == '   matched "Torch not compiled with CUDA enabled"'
    assert lines[4].endswith(": does not apply")
    assert "frameworks[0].name = torch; frameworks[0].build = cuda" in r.stdout  # torch there is a CUDA build
    assert "{" not in r.stdout  # no template reaches the user


def test_explain_says_a_rule_about_bare_metal_does_not_apply_in_a_container_and_why(tmp_path):
    # The H200 capture ran in a Docker container (its README): GD-DRIVER-005 judges the host's sysfs, and its
    # applies: says so; explain gives that reason, not the facts of a check that was never made.
    r = run_cli("explain", "--snapshot", str(H200), "RmInitAdapter failed", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    at = next(
        n
        for n, line in enumerate(lines)
        if line.endswith(" GD-DRIVER-005 · GPUs the proprietary kernel module did not bring up")
    )
    assert lines[at + 2].endswith(": does not apply")
    assert lines[at + 3].strip() == (
        "applies only where container.detected eq false; here container.detected is true"
    )


def test_explain_on_a_host_where_it_applies_gives_the_finding_and_the_plan(tmp_path):
    # The H200 capture's onnxruntime is the CPU-only package: the rule applies there, with its plan step.
    r = run_cli(
        "explain",
        "--snapshot",
        str(H200),
        "Specified provider 'CUDAExecutionProvider' is not in available provider names",
    )
    assert r.returncode == 0, r.stderr
    assert ": APPLIES" in r.stdout
    assert (
        "fix: /opt/torch/.venv/bin/python3 -m pip install 'onnxruntime-gpu[cuda,cudnn]==1.30.0'" in r.stdout
    )


def test_no_match_says_so_and_exits_1():
    r = run_cli("explain", "ModuleNotFoundError: No module named 'foo'")
    assert r.returncode == 1
    assert "No rule explains this message. `gpudoctor check` judges the whole host" in r.stdout


def test_a_log_is_triaged_each_cause_once(tmp_path):
    log = tmp_path / "job.log"
    log.write_text(
        "step 1 ok\n"
        "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.\n"
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.\n"
        "NVRM: Xid (PCI:0000:5d:00): 79, pid=1234, GPU has fallen off the bus.\n"
    )
    r = run_cli("explain", "--log", str(log), "--snapshot", str(H200))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Read 5 line(s): 2 cause(s) recognised.\n")
    assert "   seen in 2 line(s), e.g.:\n" in r.stdout  # the two distinct Xid 79 lines, the repeat once
    assert "GD-EXPLAIN-001 · Illegal memory access" in r.stdout


def test_a_log_with_nothing_known(tmp_path):
    log = tmp_path / "ok.log"
    log.write_text("epoch 1 loss 0.3\nepoch 2 loss 0.2\n")
    r = run_cli("explain", "--log", str(log))
    assert r.returncode == 1
    assert r.stdout.startswith("Read 2 line(s): none matches a cause gpudoctor knows.\n")


def test_message_or_log_not_both():
    assert run_cli("explain").returncode == 2
    assert run_cli("explain", "x", "--log", "-").returncode == 2


RANKLOGS = Path(__file__).resolve().parents[1] / "explain" / "ranklogs"


def test_a_jobs_rank_logs_through_the_cli_name_the_rank_that_failed_first(tmp_path):
    # modelscope/ms-swift#6301 (tests/explain/ranklogs/SOURCES.md): --log repeated, JSON
    case = RANKLOGS / "oom-ms-swift-6301"
    r = run_cli(
        "explain",
        "--log",
        str(case / "rank11.log"),
        "--log",
        str(case / "torchrun-agent.log"),
        "--format",
        "json",
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    first = doc["first_failure"]
    assert (first["rank"], first["node"], first["cause"]["id"]) == (11, None, "GD-EXPLAIN-003")
    assert first["line"].startswith("[rank11]: torch.OutOfMemoryError: CUDA out of memory.")
    assert [(x["process"], x["waiting_for"]) for x in doc["ranks"]] == [
        ("rank 11", None),
        (str(case / "torchrun-agent.log"), "rank 11"),
    ]
    # lyulyul/shine-cluster#171: a quoted glob, and the node's report (check --format json) in a directory
    write(tmp_path / "reports", "hoth.json", lost_gpu_report())
    glob = str(RANKLOGS / "xid-shine-cluster-171" / "*" / "rank*.log")
    r = run_cli("explain", "--log", glob, "--reports", str(tmp_path / "reports"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[2:4] == [
        "First failure: node hoth (no rank's log names a cause; this node's report does)",
        "   cause: GD-GPU-004 · GPU lost (fallen off the bus)",
    ]
    assert "No log from rank(s) 0 (below the highest rank seen)" in r.stdout


def test_rank_logs_that_name_nothing_readable_are_a_usage_error(tmp_path):
    r = run_cli("explain", "--log", str(tmp_path / "*.out"))
    assert r.returncode == 2 and "the pattern matches no file" in r.stderr
