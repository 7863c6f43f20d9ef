"""Real messages of the causes issue 23 added rules for rank those rules first by their text, and the
specific ones before the generic GD-RUNTIME-012 they refine. Each message is quoted from where it was seen."""

from __future__ import annotations

import pytest

from gpudoctor.explain.index import build


@pytest.fixture(scope="module")
def shipped():
    return build()[0]


@pytest.mark.parametrize(
    ("message", "first"),
    [
        # vllm-project/vllm#2719
        (
            "RuntimeError: unable to open shared memory object </torch_1_2004494542_0> in read-write mode: "
            "Permission denied (13)",
            {"GD-SHM-004"},
        ),
        # saltstack/salt#41092 (a minion whose /dev/shm tmpfs was read-only)
        ("[ERROR   ] [Errno 30] Read-only file system", {"GD-SHM-003"}),
        # NVIDIA/DCGM#57
        (
            "Error: unable to establish a connection to the specified host: localhost\n"
            "Error: Unable to connect to host engine. Host engine connection invalid/disconnected.",
            {"GD-DCGM-002"},
        ),
        # SYSTRAN/faster-whisper#717
        ("Library libcublas.so.12 is not found or cannot be loaded", {"GD-LIBS-001", "GD-LIBS-002"}),
        # NVIDIA/nccl#1676
        (
            "learn01:2228637:2230195 [3] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'",
            {"GD-IB-005"},
        ),
    ],
)
def test_the_new_causes_rank_first_on_their_messages(shipped, message, first):
    ranked = shipped.rank(message)
    assert ranked and ranked[0].known.id in first, [c.known.id for c in ranked[:3]]


def test_the_onnxruntime_message_puts_the_library_rules_before_the_generic_one(shipped):
    # PaddlePaddle/PaddleNLP#8195
    message = (
        "[ONNXRuntimeError] : 1 : FAIL : Failed to load library libonnxruntime_providers_cuda.so with error: "
        "libcublasLt.so.11: cannot open shared object file: No such file or directory"
    )
    ids = [c.known.id for c in shipped.rank(message)]
    assert set(ids[:2]) == {"GD-LIBS-003", "GD-LIBS-002"}
    assert "GD-RUNTIME-012" not in ids[:2]
