"""gpudoctor/nccl/observed.py: real NCCL_DEBUG=INFO logs against the prediction, GPUs matched by their
bracket (tests/nccl/topo_texts.py and tests/nccl/data, each with its source)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from gpudoctor.nccl.observed import against_log, gpu_index
from gpudoctor.nccl.predict import predict
from gpudoctor.nccl.topology import from_topo_matrix

from .topo_texts import PCIE8_1817, PCIE8_1817_LOG, read_matrix

DATA = Path(__file__).parent / "data"


def _topo(text):
    return from_topo_matrix(*read_matrix(text))


def test_nccl_1817s_log_agrees_with_the_prediction_on_its_own_node():
    topo = _topo(PCIE8_1817)
    seen = against_log(PCIE8_1817_LOG, predict(topo), topo)
    assert seen == (None, 4, "", ())


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
