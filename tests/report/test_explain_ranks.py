"""What explain prints for a job's rank logs (report/explain_ranks.py), in full, for two real failures
(tests/explain/ranklogs/SOURCES.md): an RDMA error on one node; a node whose GPU fell off the bus, named by
its report while its ranks only timed out; one rank out of memory while the others timed out."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gpudoctor.explain import logfile
from gpudoctor.explain.index import build
from gpudoctor.explain.ranks import expand, read
from gpudoctor.explain.triage import Classifier, triage
from gpudoctor.fleet.load import parse_report
from gpudoctor.report.explain_ranks import json_text, text
from tests.fleet.fleetgen import lost_gpu_report

LOGS = Path(__file__).resolve().parents[1] / "explain" / "ranklogs"


@pytest.fixture(scope="module")
def classify():
    return Classifier(build()[0])


def _triage(directory: str, classify, reports=None):
    old = os.getcwd()
    os.chdir(LOGS)  # paths as a user gives them, relative
    try:
        return triage(read(expand([directory]), classify, logfile.blocks), reports or {})
    finally:
        os.chdir(old)


def test_the_first_failure_its_cause_line_and_the_ranks_waiting_for_it(classify):
    assert text(_triage("ib-nccl-tests-252", classify)) == (
        "Read 2 log(s), 16 line(s): 2 process(es), 2 with an error line.\n"
        "\n"
        "First failure: ib-nccl-tests-252/kolyoz2.log on kolyoz2 (not every log carries a time: a cause "
        "before a network error, then the order)\n"
        "   cause: GD-IB-001 · RDMA port not active\n"
        "   | kolyoz2:25146:25854 [0] ib_plugin.c:1105 NCCL WARN NET/IB : Got completion from peer "
        "10.0.35.1<49189> with error 4, opcode 5327, len 5327, vendor err 81 (Send)\n"
        "     ib-nccl-tests-252/kolyoz2.log:1\n"
        "   (`gpudoctor rules show GD-IB-001` says what it means and what to do)\n"
        "\n"
        "Waiting for ib-nccl-tests-252/kolyoz2.log (1):\n"
        "   ib-nccl-tests-252/kolyoz1.log on kolyoz1: connection closed by a peer\n"
    )


def test_a_node_named_by_its_report_and_the_rank_no_log_was_kept_of(classify):
    doc = lost_gpu_report()
    reports = {"hoth": parse_report(json.dumps(doc).encode(), "reports/hoth.json")}
    assert text(_triage("xid-shine-cluster-171", classify, reports)) == (
        "Read 3 log(s), 10 line(s): 3 process(es), 3 with an error line.\n"
        "\n"
        "First failure: node hoth (no rank's log names a cause; this node's report does)\n"
        "   cause: GD-GPU-004 · GPU lost (fallen off the bus)\n"
        "   its node hoth, as its report says:\n"
        '     GD-GPU-004 · GPU 0 (NVIDIA H200, PCI 0000:1C:00.0) is lost: every NVML call on it answers "GPU '
        'is lost"; no program can use it.\n'
        "   and 1 other finding(s) in hoth's report\n"
        "   (`gpudoctor rules show GD-GPU-004` says what it means and what to do)\n"
        "\n"
        "Waiting for node hoth (3):\n"
        "   rank 1 on hoth: watchdog timeout\n"
        "   rank 2 on hoth: watchdog timeout\n"
        "   rank 3 on hoth: watchdog timeout\n"
        "\n"
        "No log from rank(s) 0 (below the highest rank seen): look there first, a rank that died or hung "
        "without a word leaves no line\n"
    )


def test_one_rank_out_of_memory_and_the_others_timed_out_waiting_for_it(classify):
    # modelscope/ms-swift#6301: the ranks not in the paste are named, not as suspects: rank 11's log says why
    out = text(_triage("oom-ms-swift-6301", classify)).splitlines()
    assert out[0] == "Read 7 log(s), 18 line(s): 7 process(es), 7 with an error line."
    assert out[2:4] == [
        "First failure: rank 11 (the only rank that logged a cause)",
        "   cause: GD-EXPLAIN-003 · CUDA out of memory (the program asked for more GPU memory than was free)",
    ]
    assert out[8:] == [
        "Waiting for rank 11 (6):",
        "   rank 0: watchdog timeout at 10-26 04:01:29.500954",
        "   rank 2: watchdog timeout at 10-26 04:01:29.444125",
        "   rank 3: watchdog timeout at 10-26 04:01:29.510594",
        "   rank 4: watchdog timeout at 10-26 04:01:29.476087",
        "   rank 5: watchdog timeout at 10-26 04:01:29.465823",
        "   oom-ms-swift-6301/torchrun-agent.log: stopped by torchrun at 10-26 03:51:31.222000",
        "",
        "No log from rank(s) 1, 6-10 (below the highest rank seen): not among the logs read",
    ]


def test_a_socket_timeout_first_is_named_as_a_network_error_and_the_ranks_not_read_as_runs(classify):
    # NVIDIA/nccl#1618: two ranks of a 1024-rank job, both on s12gn3064, time out connecting (a peer node
    # dropped the TCP SYN); rank 607's line is the earlier by 4 ms
    assert text(_triage("socket-timeout-nccl-1618", classify)) == (
        "Read 2 log(s), 2 line(s): 2 process(es), 2 with an error line.\n"
        "\n"
        "First failure: rank 607 on s12gn3064 at 2025-02-16 22:31:34.418000 (the earliest of the ranks that "
        "logged a cause)\n"
        "   cause: socket timeout\n"
        "   a network error, seen from this side: the peer it talked to, or the network between them, may be "
        "where the fault is\n"
        "   | [0607/1024][2025-02-16 22:31:34,418] [misc/socket.cc:586] [s12gn3064:pid=3942411] NCCL WARN "
        "socketPollConnect poll() returned 1, no POLLOUT events\n"
        "     socket-timeout-nccl-1618/rank_607.s12gn3064.4031852.log:1\n"
        "\n"
        "Waiting for rank 607 (1):\n"
        "   rank 604 on s12gn3064: socket timeout at 2025-02-16 22:31:34.422000\n"
        "\n"
        "No log from rank(s) 0-603, 605-606 (below the highest rank seen): not among the logs read\n"
    )


def test_every_rank_waiting_lists_them_with_their_times(classify):
    out = text(_triage("timeouts-llamafactory-7396", classify))
    assert out.splitlines()[2:9] == [
        "No rank's log names a cause: every rank that logged an error was waiting for another one.",
        "   the nodes' reports (--reports DIR, from gpudoctor check --format json) would show an Xid or a "
        "port down on one of them",
        "",
        "Waiting (3):",
        "   rank 0: watchdog timeout at 03-21 02:07:08.408271",
        "   rank 3: watchdog timeout at 03-21 02:07:08.465224",
        "   rank 4: watchdog timeout at 03-21 02:07:08.414641",
    ]


def test_the_json_is_the_document_as_it_is():
    assert json_text({"schema": "gpudoctor.explain.ranks"}) == '{\n  "schema": "gpudoctor.explain.ranks"\n}\n'
