"""The rank that failed first, named from real multi-rank logs (ranklogs/, SOURCES.md says where each was
posted), the others folded onto it; a node's report joined by hostname."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpudoctor.explain import logfile
from gpudoctor.explain.index import build
from gpudoctor.explain.ranks import Event, Process, Read, Stamp, expand, read
from gpudoctor.explain.triage import CAUSE, NETWORK, WAITING, Classifier, Role, as_json, triage
from gpudoctor.fleet.load import parse_report
from tests.fleet.fleetgen import finding, lost_gpu_report, report

LOGS = Path(__file__).parent / "ranklogs"


@pytest.fixture(scope="module")
def classify():
    return Classifier(build()[0])


def _triage(directory: str, classify, reports=None):
    found = read(expand([str(LOGS / directory)]), classify, logfile.blocks)
    return triage(found, reports or {})


def _hoth() -> dict:
    """hoth's report: the real H200 report (tests/fleet/fleetgen.py), named hoth, with the finding that the
    thread's `nvidia-smi` answer shows (lyulyul/shine-cluster#171: GPU 0000:1C:00.0, "Unknown Error")."""
    doc = lost_gpu_report()
    return {"hoth": parse_report(json.dumps(doc).encode(), "reports/hoth.json")}


def test_the_rank_out_of_memory_is_named_and_the_other_ranks_watchdog_timeouts_are_folded(classify):
    # 4 nodes x 4 A100: rank 11 runs out of memory (its line has no time), torchrun's agent on its node stops
    # the node's other workers at 03:51:31, and ranks 0-5 on the other nodes time out in the same
    # reduce-scatter ten minutes later (Timeout(ms)=600000), at 04:01:29
    t = _triage("oom-ms-swift-6301", classify)
    f = t.first
    assert (f.process.rank, f.node, f.event.role.cause, f.how) == (11, None, "GD-EXPLAIN-003", "only one")
    assert f.event.text.startswith("[rank11]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate")
    assert f.event.line_no == 5 and f.event.stamp is None
    others = [r for r in t.ranks if r.process is not f.process]
    assert [(r.process.key, r.first.role.kind, r.waiting_for) for r in others] == [
        ("rank 0", "watchdog timeout", "rank 11"),
        ("rank 2", "watchdog timeout", "rank 11"),
        ("rank 3", "watchdog timeout", "rank 11"),
        ("rank 4", "watchdog timeout", "rank 11"),
        ("rank 5", "watchdog timeout", "rank 11"),
        (str(LOGS / "oom-ms-swift-6301" / "torchrun-agent.log"), "stopped by torchrun", "rank 11"),
    ]
    agent = next(r for r in t.ranks if r.process.rank is None)
    assert agent.first.stamp.text() == "10-26 03:51:31.222000"
    rank3 = next(r for r in t.ranks if r.process.rank == 3)
    assert rank3.first.stamp.text() == "10-26 04:01:29.510594" and rank3.lead is None
    # ranks 0 and 2 logged only what the watchdog prints after its timeout (the flight recorder's dump): they
    # waited too, they are not silent
    assert t.silent == [] and t.absent == [1, 6, 7, 8, 9, 10]


def test_an_rdma_completion_error_on_one_node_comes_before_the_peers_that_saw_connections_close(classify):
    t = _triage("ib-nccl-tests-252", classify)
    f = t.first
    assert (f.process.rank, f.node, f.event.role.cause, f.how) == (None, "kolyoz2", "GD-IB-001", "by kind")
    assert "NET/IB : Got completion from peer 10.0.35.1<49189> with error 4" in f.event.text
    other = next(r for r in t.ranks if r.process.host == "kolyoz1")
    assert other.first.role.tier == NETWORK and other.first.role.kind == "connection closed by a peer"
    assert other.waiting_for == f.process.key


def test_the_process_that_ran_out_of_memory_comes_before_the_one_whose_socket_closed(classify):
    t = _triage("nccl-oom-socket-1235", classify)
    f = t.first
    assert f.process.key.endswith("ng30903-pid3063028.log") and f.node == "ng30903" and f.how == "by kind"
    # "Cuda failure 'out of memory'" in NCCL's setup (NCCL allocating its own buffers, inside the job): CUDA
    # out of memory, not a process outside the job (GD-PROC-001, the raw "CUDA error: out of memory")
    assert (f.event.role.tier, f.event.role.cause) == (CAUSE, "GD-EXPLAIN-003")
    other = next(r for r in t.ranks if r.process is not f.process)
    assert other.first.role.kind == "connection closed by a peer" and other.waiting_for == f.process.key


def test_of_two_ranks_whose_sockets_timed_out_the_earlier_is_named_on_its_node(classify):
    # NVIDIA/nccl#1618: ranks 604 and 607 of 1024, both on s12gn3064, time out connecting to a peer node that
    # dropped their TCP SYNs; the rank is read from the file name, the node from `[s12gn3064:pid=N]`
    t = _triage("socket-timeout-nccl-1618", classify)
    f = t.first
    assert (f.process.rank, f.node, f.event.role.tier, f.event.role.kind, f.how) == (
        607,
        "s12gn3064",
        NETWORK,
        "socket timeout",
        "earliest",
    )
    assert f.event.stamp.text() == "2025-02-16 22:31:34.418000"
    other = next(r for r in t.ranks if r.process.rank == 604)
    assert (other.process.host, other.first.role.kind, other.waiting_for) == (
        "s12gn3064",
        "socket timeout",
        "rank 607",
    )
    doc = as_json(t)
    assert doc["first_failure"]["cause"] == {"id": None, "title": "socket timeout", "role": "network"}
    assert doc["absent_ranks"] == [r for r in range(607) if r != 604]


def test_when_every_rank_timed_out_none_is_named_and_the_ranks_without_a_log_are(classify):
    t = _triage("timeouts-llamafactory-7396", classify)
    assert t.first is None
    assert [(r.process.rank, r.first.role.tier) for r in t.ranks] == [
        (0, WAITING),
        (3, WAITING),
        (4, WAITING),
    ]
    assert t.absent == [1, 2]
    assert all(r.waiting_for is None for r in t.ranks)


def test_a_node_whose_report_shows_its_gpu_fell_off_the_bus_is_named_when_its_ranks_only_timed_out(classify):
    alone = _triage("xid-shine-cluster-171", classify)
    assert alone.first is None and alone.absent == [0]
    t = _triage("xid-shine-cluster-171", classify, _hoth())
    f = t.first
    assert (f.process, f.node, f.event.role.cause, f.how) == (None, "hoth", "GD-GPU-004", "node report")
    assert [n.rule for n in f.findings][0] == "GD-GPU-004"
    assert [(r.process.rank, r.process.host, r.waiting_for) for r in t.ranks] == [
        (1, "hoth", "node hoth"),
        (2, "hoth", "node hoth"),
        (3, "hoth", "node hoth"),
    ]
    doc = as_json(t)
    assert doc["first_failure"]["node"] == "hoth" and doc["first_failure"]["rank"] is None
    assert doc["first_failure"]["cause"] == {
        "id": "GD-GPU-004",
        "title": "GPU lost (fallen off the bus)",
        "role": "cause",
    }
    assert doc["absent_ranks"] == [0]


def test_the_failing_ranks_node_is_joined_to_its_report(classify):
    # GD-IB-001's message as the rule renders it, for a port in the states ibstat names (a port down)
    message = "RDMA port mlx5_0/1 (InfiniBand) is DOWN, physical state Polling."
    lost = finding("GD-IB-001", "warning", "RDMA port not active", message, item=0)
    doc = report(hostname="kolyoz2", gpus=1, findings=[lost])
    reports = {"kolyoz2": parse_report(json.dumps(doc).encode(), "kolyoz2.json")}
    t = _triage("ib-nccl-tests-252", classify, reports)
    assert t.first.node == "kolyoz2" and t.first.how == "by kind"
    assert t.first.findings[0].rule == "GD-IB-001"
    assert as_json(t)["first_failure"]["node_findings"][0]["message"] == message


def _process(key: str, rank: int, *events: tuple) -> Process:
    p = Process(key, rank, None, [f"{key}.log"])
    for n, (text, role, when) in enumerate(events, 1):
        p.events.append(Event(f"{key}.log", n, text, role, when, when is not None, rank, None, None))
    return p


# The ordering rule on events as the reader makes them; the lines are real (cited), their times are given.
RESET = (
    "2025-11-24T03:20:21.001125857Z [2025-11-24 11:20:21] gpu-server320 [5] misc/socket.cc:46 NCCL WARN "
    "socketProgressOpt: Call to send to 10.44.137.149<52905> failed : Connection reset by peer"
)  # NVIDIA/nccl#1920
OOM = "[rank11]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.35 GiB."  # ms-swift#6301
TIMEOUT = (
    "[rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective "
    "operation timeout"
)  # hiyouga/LlamaFactory#7396


def test_where_every_lead_has_a_time_the_earliest_wins_whatever_its_kind():
    network, cause = (
        Role(NETWORK, "connection reset by peer"),
        Role(CAUSE, "CUDA out of memory", "GD-EXPLAIN-003"),
    )
    early, late = Stamp(2025, 11, 24, 100.0), Stamp(2025, 11, 24, 200.0)
    procs = [_process("a", 5, (RESET, network, early)), _process("b", 11, (OOM, cause, late))]
    t = triage(Read([("a.log", 1), ("b.log", 1)], procs))
    assert (t.first.process.rank, t.first.how) == (5, "earliest")
    # without a time on one of them: a cause before a network error
    procs = [_process("a", 5, (RESET, network, early)), _process("b", 11, (OOM, cause, None))]
    assert triage(Read([("a.log", 1), ("b.log", 1)], procs)).first.process.rank == 11


def test_a_cause_a_rank_logs_after_its_own_timeout_is_not_its_lead():
    waiting = Role(WAITING, "watchdog timeout", "GD-EXPLAIN-007")
    cause = Role(CAUSE, "CUDA out of memory", "GD-EXPLAIN-003")
    procs = [_process("a", 0, (TIMEOUT, waiting, None), (OOM, cause, None))]
    t = triage(Read([("a.log", 2)], procs))
    assert t.first is None and t.ranks[0].lead is None


@pytest.mark.parametrize(
    ("line", "tier", "kind"),
    [
        # Megatron-LM's NaN check, as a user's run printed it (seen in a public notes file, read 2026-12-05;
        # the text is megatron/core/distributed/param_and_grad_buffer.py's)
        (
            "AssertionError: Rank 13: found NaN in local grad norm in backward pass before data-parallel "
            "communication collective. Device: 5, node: node-15-11",
            CAUSE,
            "NaN check",
        ),
        # torch's anomaly mode (torch/csrc/autograd/engine.cpp's text)
        ("RuntimeError: Function 'MulBackward0' returned nan values in its 0th output.", CAUSE, "NaN check"),
        # NVIDIA/nccl#963
        (
            "9306dc444753:248281:248336 [3] misc/socket.cc:456 NCCL WARN Net : Connect to 172.17.0.2<40537> "
            "failed : Connection reset by peer",
            NETWORK,
            "connection reset by peer",
        ),
        # hiyouga/LlamaFactory#3698
        (
            "torch.distributed.DistBackendError: [4] is setting up NCCL communicator and retrieving "
            "ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: "
            "Socket Timeout",
            NETWORK,
            "socket timeout",
        ),
        # hiyouga/LlamaFactory#8261
        (
            "[rank4]:[E602 11:18:52.531176265 ProcessGroupNCCL.cpp:684] [Rank 4] Some NCCL operations have "
            "failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations "
            "might run on corrupted/incomplete data.",
            WAITING,
            "watchdog timeout",
        ),
        # modelscope/ms-swift#6301 (torch 2.8): what the watchdog prints after a timeout, on a rank whose
        # timeout line the paste does not have
        (
            "[rank0]:[E1026 04:01:29.500953846 ProcessGroupNCCL.cpp:730] Stack trace of the failed "
            "collective not found, potentially because FlightRecorder is disabled. You can enable it by "
            "setting TORCH_NCCL_TRACE_BUFFER_SIZE to a non-zero value.",
            WAITING,
            "watchdog timeout",
        ),
        (
            "[rank2]:[E1026 04:01:29.444150962 ProcessGroupNCCL.cpp:2573] [PG ID 1 PG GUID 1 Rank 2] "
            "First PG on this rank to signal dumping.",
            WAITING,
            "watchdog timeout",
        ),
        # NCCL's socket errors (NVIDIA/nccl#706, #795, #1235, #1618)
        (
            "[15]worker-23:83:2526 [0] misc/socket.cc:503 NCCL WARN Net : Call to recv from "
            "100.96.188.199<41468> failed : Connection timed out",
            NETWORK,
            "socket timeout",
        ),
        (
            "[15]23:83:2526 [0] transport/net_socket.cc:219 NCCL WARN NET/Socket : socket progress error",
            NETWORK,
            "socket timeout",
        ),
        (
            "[03/16][2025-02-25 15:46:48,389] [misc/socket.cc:602] [s11gn1268:pid=3987720] NCCL WARN "
            "socketPollConnect poll() failed, ret 1, error Connection timed out, revents 8, connect to "
            "172.16.30.229:39953",
            NETWORK,
            "socket timeout",
        ),
        (
            "a100-st-p4d24xlarge-22:183006:183220 [1] misc/socket.cc:518 NCCL WARN Net : Call to recv from "
            "10.200.84.247<58355> failed : Broken pipe",
            NETWORK,
            "connection closed by a peer",
        ),
        (  # sgl-project/sglang#3820 (the title)
            "NCCL WARN socketPollConnect: Connect to 10.0.0.4<56849> returned 113(No route to host) errno "
            "115(Operation now in progress)",
            NETWORK,
            "no route to host",
        ),
        (  # hiyouga/LlamaFactory#8045
            "zgiot:1183664:1184669 [0] NCCL INFO socketPollConnect: connect returned No route to host, "
            "retrying (34/34) after sleep for 3400 msec",
            NETWORK,
            "no route to host",
        ),
        (
            "ng30903:3063025:3066048 [0] proxy.cc:1143 NCCL WARN Socket recv failed while polling for "
            "opId=0x55a51966cc80",
            NETWORK,
            "connection closed by a peer",
        ),
        # vllm-project/vllm#6042: the watchdog reports another error than its timeout: that error is the cause
        (
            "[rank3]:[E ProcessGroupNCCL.cpp:1414] [PG 2 Rank 3] Process group watchdog thread terminated "
            "with exception: CUDA error: an illegal memory access was encountered",
            CAUSE,
            "Illegal memory access (nearly always a bug in a kernel or the program)",
        ),
    ],
)
def test_each_line_has_its_role(classify, line, tier, kind):
    role = classify.role(line)
    assert (role.tier, role.kind) == (tier, kind)
