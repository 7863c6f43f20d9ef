"""`gpudoctor nccl`'s report, text and JSON, as golden files, for the real ACS case of NVIDIA/nccl#2079 (two
GPUs whose bridges redirect peer-to-peer traffic; topology in tests/nccl/topo_texts.py). Regenerate after
an intended change with: GPUDOCTOR_UPDATE_GOLDEN=1 python -m pytest tests/report/test_nccl_report.py"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from gpudoctor.commands.nccl import LogSummary, NcclView
from gpudoctor.nccl.busbw import busbw_detail
from gpudoctor.nccl.predict import predict
from gpudoctor.nccl.topology import from_topo_matrix
from gpudoctor.report.nccl_report import matrix_lines, render_json, render_text
from tests.nccl.topo_texts import RTX5880_X2_ACS, RTX5880_X2_ACS_BRIDGES, read_matrix

from .reportkit import compare

GOLDEN = Path(__file__).parents[1] / "fixtures" / "golden"


def _view(log=None, disagreements=()) -> NcclView:
    cells, gpus, nics, numa = read_matrix(RTX5880_X2_ACS)
    topo = from_topo_matrix(
        cells, gpus, nics, numa, cpu_vendor="amd", acs_redirect=RTX5880_X2_ACS_BRIDGES, nccl_version="2.25.1"
    )
    topo = dataclasses.replace(topo, gpus=tuple(dataclasses.replace(g, p2p_no_read=()) for g in topo.gpus))
    pred = predict(topo)
    return NcclView(topo, pred, busbw_detail(pred, topo), None, log, tuple(disagreements), 1)


def test_text_and_json():
    compare(render_text(_view(), "snapshot nccl-2079"), GOLDEN / "nccl-acs.txt")
    data = json.loads(render_json(_view(), "snapshot nccl-2079"))
    assert [(p["src"], p["dst"], p["transport"], p["path"]) for p in data["pairs"]] == [
        (0, 1, "p2p-pcie", "PHB"),
        (1, 0, "p2p-pcie", "PHB"),
    ]
    assert [f["code"] for f in data["findings"]] == ["acs"] and data["log"] is None


def test_a_disagreement_with_the_log_is_shown_not_hidden():
    view = _view(
        LogSummary("nccl.log", "2.25.1", 1, ""),
        ["GPU0 -> GPU1: predicted p2p-pcie, NCCL used shm (SHM/direct/direct)"],
    )
    text = render_text(view, "snapshot nccl-2079")
    assert (
        "NCCL's log (nccl.log): NCCL 2.25.1, 1 GPU pair(s) and 0 GPU(s) to the network seen\n"
        "  disagrees with the prediction:\n"
        "    GPU0 -> GPU1: predicted p2p-pcie, NCCL used shm (SHM/direct/direct)\n"
    ) in text
    assert json.loads(render_json(view, "x"))["log"]["disagreements"] == [
        "GPU0 -> GPU1: predicted p2p-pcie, NCCL used shm (SHM/direct/direct)"
    ]


def test_the_matrix_is_laid_out_as_nvidia_smi_lays_out_its_own():
    assert matrix_lines(_view().prediction, 2) == [
        "      GPU0     GPU1",
        "GPU0  X        P2P/PHB",
        "GPU1  P2P/PHB  X",
    ]
