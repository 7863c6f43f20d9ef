"""Rank logs read into events (explain/ranks.py): times, ranks and nodes read from real lines, files found
under directories and globs. The logs are in ranklogs/ (SOURCES.md says where each was posted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudoctor.explain import logfile
from gpudoctor.explain.index import build
from gpudoctor.explain.ranks import (
    SourceError,
    Stamp,
    expand,
    host_of,
    line_rank,
    path_rank,
    read,
    said_rank,
    stamp,
)
from gpudoctor.explain.triage import CAUSE, NETWORK, WAITING, Classifier

LOGS = Path(__file__).parent / "ranklogs"


@pytest.fixture(scope="module")
def classify():
    return Classifier(build()[0])


def _read(directory: str, classify):
    return read(expand([str(LOGS / directory)]), classify, logfile.blocks)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # torch's glog prefix, no year (hiyouga/LlamaFactory#7396)
        (
            "[rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective "
            "operation timeout",
            Stamp(None, 3, 21, 2 * 3600 + 7 * 60 + 8.408271257),
        ),
        # torchrun's agent (modelscope/ms-swift#6301)
        (
            "W1026 03:51:31.222000 2521679 site-packages/torch/distributed/elastic/multiprocessing/"
            "api.py:908] Sending process 2521733 closing signal SIGTERM",
            Stamp(None, 10, 26, 3 * 3600 + 51 * 60 + 31.222),
        ),
        # a collector's ISO time before NCCL's own `[%F %T]` one: the first is taken (NVIDIA/nccl#1920)
        (
            "2025-11-24T03:20:21.001125857Z [2025-11-24 11:20:21] gpu-server320 [5] misc/socket.cc:46 NCCL "
            "WARN socketProgressOpt: Call to send to 10.44.137.149<52905> failed : Connection reset by peer",
            Stamp(2025, 11, 24, 3 * 3600 + 20 * 60 + 21.001125857),
        ),
        # Python logging (InternLM/InternLM#290)
        (
            "2023-09-07 09:14:40,098 ERROR train.py:308 in <module> -- Raise exception from f363ff97a009 "
            "with rank id: 3",
            Stamp(2023, 9, 7, 9 * 3600 + 14 * 60 + 40.098),
        ),
        # torchrun's failure summary (modelscope/ms-swift#4340)
        ("  time      : 2025-05-24_03:42:44", Stamp(2025, 5, 24, 3 * 3600 + 42 * 60 + 44)),
        # journalctl -k (leptonai/gpud#1209)
        (
            "Feb 14 05:03:41 000-000-00000-1-gpu-1 kernel: mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link INIT",
            Stamp(None, 2, 14, 5 * 3600 + 3 * 60 + 41),
        ),
        # no time: NCCL's own prefix (NVIDIA/nccl-tests#252), dmesg's seconds since boot
        # (NVIDIA/NVSentinel#155)
        ("kolyoz2:25146:25854 [0] NCCL INFO proxy.cc:698 -> 6", None),
        ("[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0", None),
    ],
)
def test_times_are_read_from_the_formats_logs_carry(line, expected):
    got = stamp(line)
    if expected is None:
        assert got is None
    else:
        assert (got.year, got.month, got.day) == (expected.year, expected.month, expected.day)
        assert got.seconds == pytest.approx(expected.seconds)


def test_a_time_without_a_year_is_shown_without_one_and_ordered_in_the_year_given():
    s = stamp("[rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog")
    assert s.text() == "03-21 02:07:08.408271"
    assert s.key(2025) < stamp("2025-03-21 02:07:09,000 x").key(2025)


@pytest.mark.parametrize(
    ("line", "ranks"),
    [
        # torch's prefix (modelscope/ms-swift#6301)
        ("[rank11]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.35 GiB.", (11, None)),
        # Open MPI's --tag-output after mpirun's timestamp (NVIDIA/nccl#957)
        (
            "Fri Aug 11 12:31:45 2023[1,3]<stdout>:tomte401:1850304:1881110 [3] transport.cc:154 NCCL WARN "
            "Cuda failure 'invalid argument'",
            (3, None),
        ),
        # NCCL's prefix names a process and its GPU, not a rank (NVIDIA/nccl-tests#252)
        ("kolyoz2:25146:25854 [0] NCCL INFO proxy.cc:698 -> 6", (None, None)),
    ],
)
def test_a_line_prefix_names_its_rank(line, ranks):
    assert line_rank(line) == ranks


def test_a_message_names_its_rank_where_no_prefix_does():
    # lyulyul/shine-cluster#171 (torch before 2.2 wrote no [rankN]: prefix)
    assert (
        said_rank(
            "[E ProcessGroupNCCL.cpp:737] [Rank 2] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=86645, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1805320 milliseconds"
        )
        == 2
    )
    assert (
        said_rank("RuntimeError: NCCL communicator was aborted on rank 2.  Original reason for failure") == 2
    )
    assert said_rank("kolyoz2:25146:25854 [0] NCCL INFO proxy.cc:698 -> 6") is None


@pytest.mark.parametrize(
    ("path", "ranks"),
    [
        # Slurm's %t in --output (the task: a global rank), with and without an array index
        ("logs/slurm-123-0.out", (0, None)),
        ("logs/slurm-4567_2-13.err", (13, None)),
        ("logs/rank11.log", (11, None)),
        ("logs/train_rank_3.txt", (3, None)),
        # a site's per-rank files, rank.host.job (NVIDIA/nccl#1618, the file names its grep printed)
        ("logs/rank_604.s12gn3064.4031852.log", (604, None)),
        # torchrun --log-dir: <run>/attempt_<n>/<local rank>/stdout.log, stderr.log, error.json
        # (pytorch torch/distributed/elastic/multiprocessing/api.py, DefaultLogsSpecs.reify)
        ("torchrun/none_abc/attempt_0/3/stderr.log", (None, 3)),
        ("logs/kolyoz2.log", (None, None)),
        ("logs/train-2024.log", (None, None)),
    ],
)
def test_a_file_path_names_its_rank(path, ranks):
    assert path_rank(path) == ranks


def test_the_node_is_the_host_of_ncc_ls_prefix():
    assert host_of("kolyoz2:25146:25854 [0] ib_plugin.c:1105 NCCL WARN NET/IB : Got completion") == "kolyoz2"
    assert host_of("[rank11]: torch.OutOfMemoryError: CUDA out of memory.") is None
    # a site's own NCCL log format, `[host:pid=N] NCCL` (NVIDIA/nccl#1618)
    line = (
        "[0607/1024][2025-02-16 22:31:34,418] [misc/socket.cc:586] [s12gn3064:pid=3942411] NCCL WARN "
        "socketPollConnect poll() returned 1, no POLLOUT events"
    )
    assert host_of(line) == "s12gn3064"
    assert stamp(line) == Stamp(2025, 2, 16, 22 * 3600 + 31 * 60 + 34.418)
    assert line_rank(line) == (None, None)  # `[0607/1024]` is not read as a rank: the file name says it


def test_directories_and_globs_give_their_files_sorted_each_once(tmp_path):
    case = LOGS / "timeouts-llamafactory-7396"
    names = ["rank0.log", "rank3.log", "rank4.log"]
    assert expand([str(case)]) == [str(case / n) for n in names]
    assert expand([str(case / "rank*.log")]) == [str(case / n) for n in names]  # a quoted glob
    assert expand([str(case / "rank4.log"), str(case)]) == [str(case / n) for n in ["rank4.log"] + names[:2]]
    (tmp_path / "empty").mkdir()
    with pytest.raises(SourceError, match="the pattern matches no file"):
        expand([str(tmp_path / "*.out")])
    with pytest.raises(SourceError, match="an empty directory"):
        expand([str(tmp_path / "empty")])
    with pytest.raises(SourceError, match="no such file"):
        expand([str(tmp_path / "missing.log")])
    with pytest.raises(SourceError, match="standard input is read alone"):
        expand(["-", str(case)])


def test_events_are_read_by_rank_with_their_role_and_time(classify):
    found = _read("timeouts-llamafactory-7396", classify)
    assert [p.key for p in found.processes] == ["rank 0", "rank 3", "rank 4"]
    rank0 = found.processes[0]
    assert [(e.line_no, e.role.tier, e.role.kind) for e in rank0.events] == [
        (1, WAITING, "watchdog timeout"),
        (2, WAITING, "watchdog timeout"),
    ]
    assert rank0.events[0].stamp.text() == "03-21 02:07:08.408271" and rank0.events[0].stamp_own


def test_ncc_l_processes_of_unknown_rank_are_their_files_on_their_host(classify):
    found = _read("ib-nccl-tests-252", classify)
    by_host = {p.host: p for p in found.processes}
    assert set(by_host) == {"kolyoz1", "kolyoz2"}
    kolyoz2 = by_host["kolyoz2"]
    assert kolyoz2.rank is None and kolyoz2.key.endswith("kolyoz2.log")
    assert [(e.line_no, e.role.tier, e.role.cause) for e in kolyoz2.events][:2] == [
        (1, CAUSE, "GD-IB-001"),
        (5, NETWORK, None),
    ]
    assert found.files == [(str(LOGS / "ib-nccl-tests-252" / n), 8) for n in ("kolyoz1.log", "kolyoz2.log")]


def test_a_traceback_of_unprefixed_lines_goes_to_the_rank_its_message_names(classify):
    found = _read("xid-shine-cluster-171", classify)
    rank2 = next(p for p in found.processes if p.rank == 2)
    assert [(e.line_no, e.role.kind) for e in rank2.events] == [
        (1, "watchdog timeout"),
        (8, "watchdog timeout"),
    ]
