"""The bench worker's own arithmetic (bench/worker.py), in this process with a scripted clock: which runs a
plan expands to, how warm-up and calibration choose the number of timed calls, how a time becomes TFLOP/s
or GB/s, and how an error is told. The worker as a child program, through a fake torch, is tested in
test_harness.py."""

from __future__ import annotations

import pytest

from gpudoctor.bench import worker
from gpudoctor.bench.model import TESTS


class Clock:
    """A backend whose GPU takes `ms` per call of any op, timed exactly."""

    name, version = "scripted", "0"

    def __init__(self, ms: float) -> None:
        self.ms = ms
        self.batches: list = []

    def synchronize(self, device) -> None:
        pass

    def time_ms(self, device, op, calls: int) -> float:
        self.batches.append(calls)
        return self.ms * calls

    def matmul(self, gpu, dtype, n):
        return lambda: None

    def host_copy(self, gpu, to_device, pinned, nbytes):
        return lambda: None

    def device_copy(self, gpu, nbytes):
        return lambda: None

    def all_reduce(self, indices, nbytes):
        return lambda: None


PLAN = {"seconds": 1.0, "warmup": 0.5, "matmul_n": 8192, "copy_mib": 256, "allreduce_mib": 256}


def devices(*ccs: str) -> list:
    return [{"index": i, "name": "NVIDIA H200", "uuid": "", "cc": cc} for i, cc in enumerate(ccs)]


def test_a_plan_expands_to_per_gpu_tests_then_pairs_then_the_all_reduce():
    runs = worker.expand(["matmul_bf16", "p2p", "allreduce"], devices("9.0", "9.0", "9.0"))
    assert runs == [
        ["matmul_bf16", 0, None], ["matmul_bf16", 1, None], ["matmul_bf16", 2, None],
        ["p2p", 0, 1], ["p2p", 0, 2], ["p2p", 1, 2],
        ["allreduce", 0, None],
    ]  # fmt: skip
    # one GPU: no pair, no all-reduce
    assert worker.expand(["d2d", "p2p", "allreduce"], devices("9.0")) == [["d2d", 0, None]]


def test_the_worker_knows_every_matmul_test_of_the_model():
    assert set(worker.MATMUL_DTYPES) == {t for t in TESTS if t.startswith("matmul_")}


def test_calibration_grows_batches_until_one_fills_a_quarter_of_the_time_and_warmup_is_spent():
    clock = Clock(ms=1.0)
    per_call, iterations = worker.timed(clock, 0, lambda: None, seconds=1.0, warmup=0.5)
    assert per_call == pytest.approx(0.001)
    assert iterations == 1000  # 1 s of 1 ms calls
    # batches of 1, 4, 16, 64 calls (64 ms >= min(50 ms, 1 s / 4)) until 0.5 s of GPU time is spent
    assert clock.batches[:4] == [1, 4, 16, 64]
    assert sum(clock.batches[:-1]) * 0.001 >= 0.5 and clock.batches[-1] == 1000


def test_calibration_stops_at_the_most_iterations():
    clock = Clock(ms=1e-6)
    _per_call, iterations = worker.timed(clock, 0, lambda: None, seconds=1.0, warmup=0.0)
    assert iterations == worker.MAX_ITERATIONS


def test_a_matmul_is_two_n_cubed_flops_per_product():
    clock = Clock(ms=1.0)
    out = worker.measure(clock, PLAN, "matmul_bf16", 0, None, devices("9.0"))
    assert out["value"] == pytest.approx(2 * 8192**3 / 1e-3 / 1e12)  # 1099.5 TFLOP/s
    assert out["detail"] == "8192x8192x8192, 1000 products in 1.00 s"


def test_fp8_needs_compute_capability_8_9():
    # torch._scaled_mm's fp8 needs sm_89 or later (Ada, Hopper); an A100 is 8.0
    with pytest.raises(worker.Unsupported) as e:
        worker.measure(Clock(1.0), PLAN, "matmul_fp8", 0, None, devices("8.0"))
    assert str(e.value) == "fp8 tensor cores need compute capability 8.9 or later; this GPU has 8.0"
    assert worker.measure(Clock(1.0), PLAN, "matmul_fp8", 0, None, devices("8.9"))["value"] > 0


def test_copies_count_bytes_moved_and_device_copies_count_them_twice():
    clock = Clock(ms=10.0)
    h2d = worker.measure(clock, PLAN, "h2d_pinned", 0, None, devices("9.0"))
    assert h2d["value"] == pytest.approx((256 << 20) / 0.01 / 1e9)  # 26.8 GB/s
    assert h2d["detail"] == "256 MiB, 100 copies in 1.00 s"
    d2d = worker.measure(clock, PLAN, "d2d", 0, None, devices("9.0"))
    assert d2d["value"] == pytest.approx(2 * h2d["value"])  # every byte read and written


def test_the_all_reduce_reports_bus_bandwidth_as_nccl_tests_defines_it():
    # NVIDIA/nccl-tests doc/PERFORMANCE.md: busBw = algBw * 2(n-1)/n for all-reduce
    out = worker.measure(Clock(ms=10.0), PLAN, "allreduce", 0, None, devices(*["9.0"] * 8))
    algbw = (256 << 20) / 0.01 / 1e9
    assert out["value"] == pytest.approx(algbw * 2 * 7 / 8)
    assert (out["gpus"], out["detail"]) == (8, "256 MiB float32 on 8 GPUs, 100 all-reduces")


class OutOfMemoryError(RuntimeError):
    """The name of torch's out-of-memory error (torch.OutOfMemoryError, a RuntimeError)."""


def test_an_error_is_its_type_and_first_line_collapsed_and_cut():
    # pytorch/pytorch#16417, comment of 2024-03-13 (the message as torch 2.2 words it)
    message = (
        "CUDA out of memory. Tried to allocate 22.00 MiB. GPU 0 has a total capacity of 23.65 GiB of which "
        "11.06 MiB is free. Including non-PyTorch memory, this process has 23.60 GiB memory in use. Of the "
        "allocated memory 22.90 GiB is allocated by PyTorch, and 194.87 MiB is reserved by PyTorch but "
        "unallocated. If reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for "
        "Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
    )
    text = worker._error(OutOfMemoryError(message + "\nsecond line"))
    assert len(text) == worker.MAX_TEXT
    assert text.startswith("OutOfMemoryError: CUDA out of memory. Tried to allocate 22.00 MiB. GPU 0 has")
    assert "  " not in text and "second line" not in text
    assert worker._error(RuntimeError("")) == "RuntimeError"


def test_a_device_uuid_is_written_as_nvml_writes_it():
    # torch's device properties give the UUID as 16 bytes; NVML writes GPU-<8-4-4-4-12 hex>, as the H200
    # capture's nvidia-smi -q shows it (shared/fixtures/h200-driver580/commands/nvsmi_q.txt, anonymised there)
    raw = bytes.fromhex("00000000111122223333444444444444")
    assert "GPU-" + worker._uuid_text(raw) == "GPU-00000000-1111-2222-3333-444444444444"
    assert worker._uuid_text(bytearray(raw)) == worker._uuid_text(list(raw))
