"""CUDA extensions judged end to end: the real H200 capture (driver 580, torch 2.11.0 cu130, one H200 of
compute capability 9.0) with a `check --deep` extension scan added, whose answer is the real scan program's
output over real compiled extensions (tests/fixtures/cuda_ext); through the runtime probe, derive and
GD-EXT-001, as `check --deep` runs them."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest

from gpudoctor.host.base import Deadline
from gpudoctor.host.cuda_binaries import scan
from gpudoctor.host.snapshot import SnapshotHost, load
from gpudoctor.pipeline.check import run_check

from conftest import FIXTURES, H200

EXT = FIXTURES / "cuda_ext"
PYTHON = "/opt/torch/.venv/bin/python3"  # the capture's interpreter


def _scan_answer(tmp_path: Path, libraries: dict[str, str]) -> dict:
    """The scan child's answer, {"rc", "stdout", "stderr"}, over an environment holding one distribution
    that requires torch per library (name -> fixture file)."""
    site = tmp_path / "site-packages"
    for name, fixture in libraries.items():
        (site / name).mkdir(parents=True)
        shutil.copy(EXT / fixture, site / name / "_C.so")
        info = site / f"{name}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\nRequires-Dist: torch\n"
        )
        (info / "RECORD").write_text(f"{name}/_C.so,,\n")
    return {"rc": 0, "stdout": json.dumps(scan([str(site)])), "stderr": ""}


def _check(tmp_path: Path, libraries: dict[str, str], cc: tuple[int, int] = (9, 0)):
    rec = copy.deepcopy(load(str(H200)))
    rec.runtime["cuda_binaries"] = {PYTHON: _scan_answer(tmp_path, libraries)}
    for device in rec.nvml_devices.values():
        device["nvmlDeviceGetCudaComputeCapability"] = list(cc)
    return run_check(SnapshotHost(rec, str(H200)), str(H200), Deadline(20), [], deep=True)


def _ext001(result):
    return next(r for r in result.results if r.rule.id == "GD-EXT-001")


def test_an_extension_built_for_the_a100_only_fails_on_the_h200(tmp_path):
    result = _check(
        tmp_path, {"add_one_a100": "add_one_sm80.so", "add_one_fat": "add_one_sm80_sm90_ptx90.so"}
    )
    v = result.facts.value
    assert [v(f"extensions[{i}].arch") for i in range(2)] == [["sm_80"], ["sm_80", "sm_90", "compute_90"]]
    assert [v(f"extensions[{i}].unsupported_gpus") for i in range(2)] == [[0], []]
    assert v("extensions[0].torch_covers") is True  # torch 2.11.0 cu130 has sm_90
    assert v("extensions[0].rebuild_arch") == "9.0"
    found = _ext001(result)
    assert found.status == "fired"
    file = tmp_path / "site-packages" / "add_one_a100" / "_C.so"
    assert [f.message for f in found.findings] == [
        f"add_one_a100 1.0 has no GPU code for compute capability 9.0 (GPU 0): {file} carries sm_80 only. "
        'Torch itself has code for that GPU: yes. Every kernel of this extension fails there with "no kernel '
        'image is available for execution on the device".'
    ]
    assert (
        found.findings[0]
        .fix[0]
        .text.startswith(
            "Rebuild add_one_a100 1.0 for the GPUs here, against the installed torch, with nvcc of torch's "
            'CUDA major on PATH: TORCH_CUDA_ARCH_LIST="9.0" /opt/torch/.venv/bin/python3 -m pip install '
            "--no-build-isolation --no-deps --force-reinstall --no-binary add_one_a100 add_one_a100==1.0 "
        )
    )


def test_a_newer_gpu_runs_the_ptx_through_the_drivers_jit(tmp_path):
    # A compute capability 10.0 GPU (B200) on the same driver 580: sm_80 alone has nothing for it; PTX for
    # 9.0 is compiled by the driver (CUDA 13.0's PTX on driver 580 meets that toolkit's minimum).
    result = _check(
        tmp_path, {"add_one_a100": "add_one_sm80.so", "add_one_fat": "add_one_sm80_sm90_ptx90.so"}, cc=(10, 0)
    )
    v = result.facts.value
    assert [v(f"extensions[{i}].unsupported_ccs") for i in range(2)] == [["10.0"], []]
    assert [f.item for f in _ext001(result).findings] == [0]


@pytest.mark.parametrize(
    ("cc", "missing"), [((9, 0), []), ((10, 0), []), ((10, 3), []), ((12, 0), []), ((8, 0), [0])]
)
def test_arch_specific_and_family_code(tmp_path, cc, missing):
    # sm_90a runs on 9.0 alone, sm_100a on 10.0, sm_100f on 10.x, PTX 12.0 on 12.0 (JIT); nothing on 8.0.
    result = _check(tmp_path, {"add_one_new": "add_one_sm90a_sm100a_sm100f_ptx120.so"}, cc=cc)
    assert result.facts.value("extensions[0].unsupported_gpus") == missing


def test_without_the_scan_the_rule_cannot_be_judged(h200_host):
    result = run_check(h200_host, str(H200), Deadline(20), [], deep=True)
    assert result.facts.get("extensions.count").unknown == "not recorded in snapshot"
    assert _ext001(result).status == "unknown"
    # Without --deep the rule is not run at all: explain says "not checked (try --deep)".
    plain = run_check(h200_host, str(H200), Deadline(20), [])
    assert "GD-EXT-001" in plain.skipped_rules


def test_explain_puts_the_extension_first_where_it_is_the_cause(tmp_path):
    from gpudoctor.commands._shared import make_plan
    from gpudoctor.explain.answer import answer
    from gpudoctor.explain.index import build

    # flash-attn's message on two RTX 5090s (hiyouga/LlamaFactory#10132; the rule lists it from line 184):
    # the text alone ranks torch's arch list first; here torch runs on the GPU, the extension does not.
    message = (
        "CUDA error (/build/source/flash-attn/flash_fwd_launch_template.h:191): no kernel image is available "
        "for execution on the device"
    )
    matcher, entries = build()
    ranked = matcher.rank(message, limit=8)
    assert [c.known.id for c in ranked][0] == "GD-ARCH-001" and "GD-EXT-001" in [c.known.id for c in ranked]
    result = _check(tmp_path, {"add_one_a100": "add_one_sm80.so"})
    found = answer(ranked, result, make_plan(result), entries)
    # GD-RUNTIME-007 reads what the imported torch saw, which the capture did not record; GD-CUDA-009 (a
    # CUDA 13 build on a GPU older than 7.5) does not apply to the H200, nor does torch's arch list.
    assert [(a.candidate.known.id, a.verdict.status) for a in found] == [
        ("GD-EXT-001", "applies"),
        ("GD-RUNTIME-007", "could not be checked"),
        ("GD-ARCH-001", "does not apply"),
    ]
