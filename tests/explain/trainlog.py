"""Distinct training-progress lines, as many as wanted, shaped like real training output: for benchmarks and
for the tests that bury a real error in a large log. Every line differs (steps, losses, rates, times) as in a
real job's log, so no line repeats.

The shapes are those of two real captured logs, the numbers drawn here:
- Hugging Face Trainer under FSDP, launched by srun (rank prefix `0: `): the metrics dict every logging step,
  tqdm's progress bar, the trainer's INFO lines with their timestamps, NCCL INFO lines at start-up.
  Seen in aws-solutions-library-samples/guidance-for-protein-language-esm-model-training-with-sagemaker-
  hyperpod@488697e4f07fe516122c8d6126e9a04b0518bd90:esm2_models/slurm/README.md (section 7, the FSDP job's
  output).
- Megatron-LM's iteration line: https://github.com/epfLLM/Megatron-LLM/issues/11 (the log in the first
  comment).
"""

from __future__ import annotations

import random
from collections.abc import Iterator

BAR = " ▏▎▍▌▋▊▉█"  # tqdm's partial blocks


def _tqdm(n: int, total: int, elapsed: float, rate: float) -> str:
    frac = n / total
    eighths = int(frac * 10 * 8)
    bar = "█" * (eighths // 8) + (BAR[eighths % 8] if eighths < 80 else "")
    left = (total - n) / rate

    def mmss(s: float) -> str:
        return f"{int(s) // 60:02d}:{int(s) % 60:02d}"

    return f"{int(frac * 100):3d}%|{bar:<10}| {n}/{total} [{mmss(elapsed)}<{mmss(left)}, {rate:5.2f}it/s]"


def _stamp(t: float) -> str:
    s = int(t)
    return f"2025-05-02 {22 + s // 3600 % 2:02d}:{s // 60 % 60:02d}:{s % 60:02d},{int(t * 1000) % 1000:03d}"


def hf_fsdp(rng: random.Random, steps: int) -> Iterator[str]:
    """A Hugging Face Trainer job's output (see the module's docstring)."""
    t = rng.uniform(0, 3000)
    info = f"1: [INFO|trainer.py:{{}}] {_stamp(t)} >>   {{}}"
    yield info.format(2134, "Total train batch size (w. parallel, distributed & accumulation) = 88")
    yield info.format(2136, f"Total optimization steps = {steps:,}")
    for rank, host in ((1, "ip-10-1-40-172"), (0, "ip-10-1-39-225")):
        pid = rng.randint(40000, 60000)
        yield f"{rank}: {host}:{pid}:{pid + 134} [0] NCCL INFO Connected binomial trees"
    loss, lr0, start = rng.uniform(2.8, 3.2), 5e-05, t
    for step in range(1, steps + 1):
        t += rng.uniform(0.4, 0.5)
        loss = max(0.5, loss - rng.uniform(-0.002, 0.0025))
        lr = lr0 * (1 - step / steps)
        norm, epoch = rng.uniform(0.5, 4.0), round(step / steps, 2)
        metrics = {"loss": round(loss, 4), "grad_norm": norm, "learning_rate": lr, "epoch": epoch}
        yield f"0: {metrics}"
        yield _tqdm(step, steps, t - start, rng.uniform(2.15, 2.25))
        if step % 500 == 0:
            out, at = f"/fsx/ubuntu/esm-slurm/out-fsdp/checkpoint-{step}", _stamp(t)
            yield f"0: [INFO|trainer.py:3478] {at} >> Saving model checkpoint to {out}"
            yield f"0: [INFO|configuration_utils.py:472] {at} >> Configuration saved in {out}/config.json"
            yield f"0: [INFO|modeling_utils.py:2690] {at} >> Model weights saved in {out}/model.safetensors"


def megatron(rng: random.Random, steps: int) -> Iterator[str]:
    """Megatron-LM's iteration lines (see the module's docstring)."""
    loss, batch, first = rng.uniform(2.4, 2.6), 1024, rng.randint(1, 100_000)
    for it in range(first, first + steps):
        loss = max(0.5, loss - rng.uniform(-0.003, 0.0035))
        took, rate, norm = rng.uniform(85000, 90000), 1.5e-4 * min(1.0, it / 2000), rng.uniform(0.2, 0.4)
        yield (
            f" iteration {it:8d}/{250000:8d} | consumed samples: {it * batch:12d} | elapsed time per"
            f" iteration (ms): {took:.1f} | learning rate: {rate:.3E} | global batch size: {batch:5d} |"
            f" lm loss: {loss:.6E} | loss scale: 1.0 | grad norm: {norm:.3f} | number of skipped iterations:"
            f" {0:3d} | number of nan iterations: {0:3d} |"
        )


def training_lines(seed: int = 24) -> Iterator[str]:
    """An endless training log: Trainer jobs and Megatron runs in turn, every line distinct."""
    rng = random.Random(seed)
    while True:
        yield from hf_fsdp(rng, rng.randint(800, 1200))
        yield from megatron(rng, rng.randint(800, 1200))
