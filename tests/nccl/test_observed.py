"""gpudoctor/nccl/observed.py: real NCCL_DEBUG=INFO logs against the prediction, GPUs matched by their
bracket (tests/nccl/topo_texts.py and tests/nccl/data, each with its source)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from gpudoctor.nccl.observed import _net_kind, against_log, gpu_index
from gpudoctor.nccl.predict import predict
from gpudoctor.nccl.topology import from_topo_matrix

from .topo_texts import PCIE8_1817, PCIE8_1817_LOG, RTX5090_X2, read_matrix

DATA = Path(__file__).parent / "data"


def _topo(text):
    return from_topo_matrix(*read_matrix(text))


def test_nccl_1817s_log_agrees_with_the_prediction_on_its_own_node():
    topo = _topo(PCIE8_1817)
    seen = against_log(PCIE8_1817_LOG, predict(topo), topo)
    assert seen == (None, 4, "", (), 0)


def test_bus_ids_in_the_brackets_name_the_gpus_with_those_bus_ids():
    # NVIDIA/Megatron-LM#516: NCCL before 2.12 prints the bus id, `3[201d0] -> 2[201c0]`
    topo = _topo(PCIE8_1817)
    buses = ("0000:20:1c.0", "0000:20:1d.0", "0000:90:1c.0", "0000:90:1d.0")
    gpus = tuple(dataclasses.replace(g, bus_id=b) for g, b in zip(topo.gpus, buses)) + topo.gpus[4:]
    topo = dataclasses.replace(topo, gpus=gpus)
    assert gpu_index({"201d0", "901c0"}, topo) == ({"201d0": 1, "901c0": 2}, "")


def test_a_log_of_another_machine_is_not_compared():
    text = (DATA / "megatron516_busid" / "nccl.log").read_text(encoding="utf-8")
    topo = _topo(PCIE8_1817)  # its GPUs' bus ids are not the log's
    seen = against_log(text, predict(topo), topo)
    assert (seen.pairs, seen.disagreements) == (0, ())
    assert seen.problem.startswith("its GPUs (") and seen.problem.endswith(
        "are not this host's 8 GPU(s): a log of another machine?"
    )


def test_channels_to_another_node_are_compared_per_gpu_with_its_network_prediction():
    """NVIDIA/nccl#1189: 2 nodes x 2 H20 (its comm lines put ranks 0, 1 on H20-GPU-05 and 2, 3 on
    H20-GPU-06), `[receive] via NET/IB/3/GDRDMA` between them. Read against the 2x RTX 5090 of
    club-3090#1140, a node with no RDMA device (predicted: sockets), each GPU's IB channels disagree; the GPU
    at this end is the receiver of a receive and the sender of a send."""
    text = (DATA / "nccl1189_h20_ib_cumem" / "nccl.log").read_text(encoding="utf-8")
    topo = _topo(RTX5090_X2)
    seen = against_log(text, predict(topo), topo)
    assert (seen.pairs, seen.network_gpus, seen.problem) == (1, 2, "")
    assert seen.disagreements[1:] == (
        "GPU0 -> network: predicted socket, NCCL used ib-gdr (NET/IB/GDRDMA)",
        "GPU1 -> network: predicted socket, NCCL used ib-gdr (NET/IB/GDRDMA)",
    )


def test_the_network_nccl_loaded_is_compared_even_without_channel_lines():
    """k8snetworkplumbingwg/multus-cni#1100: `NET/IB : Using [0]mlx5_4:1/RoCE [RO]` and `Using network IB`,
    no channel line in the excerpt; against a node with no RDMA device, predicted Socket."""
    text = (DATA / "multus1100_roce" / "nccl.log").read_text(encoding="utf-8")
    topo = _topo(RTX5090_X2)
    seen = against_log(text, predict(topo), topo)
    assert seen.problem == "it has no `Channel ... via` lines between GPUs (run with NCCL_DEBUG=INFO)"
    (line,) = seen.disagreements
    assert line.startswith("network: predicted Socket (no RDMA device: ") and line.endswith(
        ", NCCL used IB (`Using network IB`)"
    )


def test_net_labels_map_to_the_predicted_network_transports():
    # labels as log.Transport.label gives them for the corpus' `via` texts (tests/nccl/data/SOURCES.md)
    assert [
        _net_kind(x) for x in ("NET/IB/GDRDMA", "NET/IB", "NET/Socket", "NET/IBext_v8", "NET/AWS Libfabric")
    ] == ["ib-gdr", "ib", "socket", "ib", "net:AWS Libfabric"]
