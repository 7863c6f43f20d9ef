"""The bench harness through the real thing: the real worker (gpudoctor/bench/worker.py) in a second
interpreter, a real venv whose torch is the fake measurement source (tests/fake_frameworks), under real
deadlines; a worker that hangs, crashes, fails or has nothing to measure with ends the run with the reason."""

from __future__ import annotations

import os
import time

import pytest

from gpudoctor.bench import harness
from gpudoctor.bench.model import FAILED, OK, SKIPPED, TIMED_OUT
from gpudoctor.host.base import Deadline

from .torchfake import H200_RATES, scenario

FAST = harness.Options(seconds=0.05, warmup=0.01, test_timeout=5.0)


def bench(python: str, path, options=FAST, gpus=None, deadline: float = 30.0, **kw):
    env = dict(os.environ, GPUDOCTOR_FAKE_GPU=str(path))
    listed = gpus if gpus is not None else [harness.Gpu(0), harness.Gpu(1)]
    return harness.run(python, listed, options, Deadline(deadline), environ=env, **kw)


def by_test(run) -> dict:
    return {(m.test, m.gpu, m.peer): m for m in run.measurements}


def test_every_test_measures_what_the_gpu_does(fake_torch_python, tmp_path):
    seen = []
    run = bench(fake_torch_python, scenario(tmp_path, gpus=2), progress=lambda *a: seen.append(a))
    assert (run.status, run.reason, run.backend) == ("complete", "", "torch 2.13.0+cu128")
    got = by_test(run)
    # Per GPU in order, then the pair, then the all-reduce: 10 + 10 + 1 + 1.
    assert len(run.measurements) == 22
    for gpu in (0, 1):
        for test, rate in H200_RATES.items():
            if test in ("p2p", "allreduce"):
                continue
            m = got[(test, gpu, None)]
            assert m.status == OK, m
            assert m.value == pytest.approx(rate, rel=1e-6), test
    assert got[("p2p", 0, 1)].value == pytest.approx(390) and got[("p2p", 0, 1)].peer_access is True
    allreduce = got[("allreduce", 0, None)]
    assert (allreduce.gpus, allreduce.value) == (2, pytest.approx(360))
    assert "8192x8192x8192" in got[("matmul_bf16", 0, None)].detail
    assert seen[0] == ("fp32 matmul on GPU 0", 0, 22) and seen[-1] == ("done", 22, 22)


def test_devices_map_to_nvml_indices_by_uuid(fake_torch_python, tmp_path):
    # torch lists the GPUs the other way round from NVML (the user's CUDA_VISIBLE_DEVICES=1,0).
    devices = [
        {"name": "NVIDIA H200", "cc": "9.0", "uuid": "GPU-bbbbbbbb-0000-0000-0000-000000000000"},
        {"name": "NVIDIA H200", "cc": "9.0", "uuid": "GPU-aaaaaaaa-0000-0000-0000-000000000000"},
    ]
    path = scenario(tmp_path, devices=devices)
    nvml = [
        harness.Gpu(0, "GPU-aaaaaaaa-0000-0000-0000-000000000000"),
        harness.Gpu(1, "GPU-bbbbbbbb-0000-0000-0000-000000000000"),
    ]
    options = harness.Options(tests=("matmul_bf16", "p2p"), seconds=0.05, warmup=0.01)
    run = bench(fake_torch_python, path, options, gpus=nvml)
    assert [(m.test, m.gpu, m.peer) for m in run.measurements] == [
        ("matmul_bf16", 1, None),
        ("matmul_bf16", 0, None),
        ("p2p", 1, 0),
    ]


def test_fp8_is_skipped_on_a_gpu_without_fp8_tensor_cores(fake_torch_python, tmp_path):
    path = scenario(tmp_path, devices=[{"name": "NVIDIA A100-SXM4-80GB", "cc": "8.0"}])
    run = bench(fake_torch_python, path, harness.Options(tests=("matmul_fp8",), seconds=0.05, warmup=0.01))
    (m,) = run.measurements
    assert (m.status, m.detail) == (
        SKIPPED,
        "fp8 tensor cores need compute capability 8.9 or later; this GPU has 8.0",
    )


def test_a_test_that_raises_is_a_failed_result_and_the_run_goes_on(fake_torch_python, tmp_path):
    run = bench(fake_torch_python, scenario(tmp_path, fail="matmul_bf16"), gpus=[harness.Gpu(0)])
    got = by_test(run)
    assert run.status == "complete"
    assert got[("matmul_bf16", 0, None)].status == FAILED
    assert got[("matmul_bf16", 0, None)].detail == (
        "RuntimeError: CUDA error: an illegal memory access was encountered"
    )
    assert got[("matmul_fp16", 0, None)].status == OK


def test_a_hanging_test_is_stopped_at_its_timeout_and_ends_the_run(fake_torch_python, tmp_path):
    options = harness.Options(seconds=0.05, warmup=0.01, test_timeout=1.0)
    start = time.monotonic()
    run = bench(fake_torch_python, scenario(tmp_path, hang="matmul_tf32"), options, gpus=[harness.Gpu(0)])
    assert time.monotonic() - start < 10
    assert run.status == "incomplete"
    assert run.reason == "tf32 matmul on GPU 0 did not finish within 1 s: the worker was stopped"
    assert [(m.test, m.status) for m in run.measurements] == [("matmul_fp32", OK), ("matmul_tf32", TIMED_OUT)]


def test_the_deadline_stops_a_hanging_test_too(fake_torch_python, tmp_path):
    run = bench(
        fake_torch_python, scenario(tmp_path, hang="matmul_fp32"), deadline=3.0, gpus=[harness.Gpu(0)]
    )
    assert run.status == "incomplete"
    assert (
        run.reason
        == "fp32 matmul on GPU 0 did not finish within the bench's deadline: the worker was stopped"
    )


def test_a_crashing_worker_ends_the_run_with_how_it_died(fake_torch_python, tmp_path):
    run = bench(fake_torch_python, scenario(tmp_path, crash="h2d_pinned"), gpus=[harness.Gpu(0)])
    assert run.status == "incomplete"
    assert run.reason.startswith("the worker died during H2D pinned on GPU 0 (killed by SIGABRT")
    last = run.measurements[-1]
    assert (last.test, last.status) == ("h2d_pinned", FAILED)
    assert [m.status for m in run.measurements[:-1]] == [OK] * 5


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"devices": []}, "torch 2.13.0+cu128 sees no CUDA device"),
        (
            {"cuda_error": "Found no NVIDIA driver on your system."},
            "torch 2.13.0+cu128 cannot use CUDA: RuntimeError: Found no NVIDIA driver on your system.",
        ),
        (
            {"cpu_build": True, "version": "2.13.0+cpu"},
            "torch 2.13.0+cpu is a CPU-only build (torch.version.cuda is None)",
        ),
        (
            {"import_error": "libcudnn.so.9: cannot open shared object file"},
            "torch cannot be imported (ImportError: libcudnn.so.9: cannot open shared object file); "
            "cupy cannot be imported (ModuleNotFoundError: No module named 'cupy')",
        ),
    ],
)
def test_nothing_to_measure_with_is_not_run_with_the_reason(fake_torch_python, tmp_path, fields, reason):
    run = bench(fake_torch_python, scenario(tmp_path, **fields))
    assert (run.status, run.reason, run.measurements) == ("not run", reason, ())


def test_an_interpreter_without_torch_or_cupy(tmp_path):
    import sys

    run = bench(sys.executable, scenario(tmp_path), harness.Options(backend="torch"))
    assert run.status == "not run"
    assert run.reason == "torch cannot be imported (ModuleNotFoundError: No module named 'torch')"


def test_an_interpreter_that_cannot_start(tmp_path):
    run = bench(str(tmp_path / "no-python"), scenario(tmp_path))
    assert run.status == "not run"
    assert run.reason.startswith(f"cannot start {tmp_path / 'no-python'}: ")


def test_worker_env_narrows_to_the_selected_gpus_in_bus_order():
    gpus = [harness.Gpu(2, "GPU-c"), harness.Gpu(5, "GPU-f")]
    env = harness.worker_env(gpus, selected=True, environ={"PATH": "/bin"})
    assert env == {"PATH": "/bin", "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": "GPU-c,GPU-f"}
    assert harness.worker_env(gpus, selected=False, environ={"CUDA_DEVICE_ORDER": "FASTEST_FIRST"}) == {
        "CUDA_DEVICE_ORDER": "FASTEST_FIRST"
    }


def test_cupy_measures_what_it_can_and_says_what_it_cannot(fake_torch_python, tmp_path):
    path = scenario(tmp_path, gpus=2, frameworks=["cupy"])
    run = bench(fake_torch_python, path)
    assert (run.status, run.backend) == ("complete", "cupy 13.3.0")
    got = by_test(run)
    for test in (
        "matmul_fp32",
        "matmul_fp16",
        "h2d_pinned",
        "h2d_pageable",
        "d2h_pinned",
        "d2h_pageable",
        "d2d",
    ):
        assert got[(test, 1, None)].value == pytest.approx(H200_RATES[test]), test
    assert got[("p2p", 0, 1)].value == pytest.approx(H200_RATES["p2p"])
    assert got[("matmul_bf16", 0, None)].status == SKIPPED
    assert got[("matmul_bf16", 0, None)].detail == (
        "CuPy offers no bf16 matrix product that gpudoctor can select per test"
    )
    assert got[("allreduce", 0, None)].detail == "the all-reduce is measured through torch only"


def test_torch_is_preferred_and_backend_chooses(fake_torch_python, tmp_path):
    path = scenario(tmp_path, frameworks=["torch", "cupy"])
    one = [harness.Gpu(0)]
    assert bench(fake_torch_python, path, harness.Options(tests=("d2d",)), gpus=one).backend.startswith(
        "torch"
    )
    cupy = harness.Options(tests=("d2d",), backend="cupy")
    assert bench(fake_torch_python, path, cupy, gpus=one).backend == "cupy 13.3.0"


def test_a_worker_line_without_end_is_cut_at_the_protocols_bound(tmp_path):
    """A target interpreter that prints megabytes without a newline: the harness reads at most one
    protocol line's bound (MAX_LINE) of it, not the whole stream, and says what it read."""
    flood = tmp_path / "python"
    flood.write_text("#!/bin/sh\nhead -c 3000000 /dev/zero | tr '\\0' x\nsleep 60\n")
    flood.chmod(0o755)
    start = time.monotonic()
    run = harness.run(str(flood), [harness.Gpu(0)], FAST, Deadline(5.0))
    assert (run.status, run.reason) == (
        "not run",
        "the worker's output cannot be read: a line of 1048577 characters",
    )
    assert time.monotonic() - start < 4
