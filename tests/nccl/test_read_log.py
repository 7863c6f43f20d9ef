"""gpudoctor/nccl/read_log.py on real NCCL_DEBUG=INFO lines (each with its source)."""

from __future__ import annotations

from gpudoctor.nccl.read_log import channels, nccl_version

from .topo_texts import PCIE8_1817_LOG


def test_the_channel_lines_of_a_real_log_give_each_pairs_transport():
    # NVIDIA/nccl#1817 (NCCL 2.19+ names the CUDA device in brackets)
    assert channels(PCIE8_1817_LOG) == {
        ("0", "4"): "SHM/direct/direct",
        ("3", "7"): "SHM/direct/direct",
        ("1", "5"): "SHM/direct/direct",
        ("2", "6"): "SHM/direct/direct",
    }
    assert nccl_version(PCIE8_1817_LOG) is None  # the excerpt has no version line
