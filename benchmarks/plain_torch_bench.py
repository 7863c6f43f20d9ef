"""An independent measurement with plain torch calls, to check `gpudoctor bench` against (issue 14: its
figures must be within 10% of these on the same GPU).

It shares no code with gpudoctor: the same operations written the obvious way, timed with CUDA events
after a warm-up, sized as the bench sizes them (8192 x 8192 products, 256 MiB copies). Run it, then
`gpudoctor bench --format json`, on the same GPU, and compare:

    CUDA_DEVICE_ORDER=PCI_BUS_ID python benchmarks/plain_torch_bench.py --gpu 0 > plain.json
    gpudoctor bench --gpu 0 --format json > bench.json
    python benchmarks/plain_torch_bench.py --compare plain.json bench.json

(PCI_BUS_ID makes torch number the GPUs as NVML does, which is how the bench names them.) The
comparison prints each test's two figures and their ratio, and exits 1 when one differs by more than
10%. Needs torch with CUDA; on a machine without a GPU it says so and exits 0.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

N = 8192
COPY_BYTES = 256 << 20
SECONDS = 1.0


def events_time(torch, op, iterations: int) -> float:
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iterations):
        op()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) / 1000.0


def per_call(torch, op) -> float:
    for _ in range(3):  # warm-up: cuBLAS picks its kernel, clocks ramp up
        op()
    torch.cuda.synchronize()
    end = time.perf_counter() + 0.5
    while time.perf_counter() < end:
        op()
    torch.cuda.synchronize()
    one = events_time(torch, op, 10) / 10
    iterations = max(10, int(SECONDS / max(one, 1e-6)))
    return events_time(torch, op, iterations) / iterations


def measure(torch, gpu: int) -> dict:
    torch.cuda.set_device(gpu)
    dev = f"cuda:{gpu}"
    out = {}
    for name, dtype, tf32 in (
        ("matmul_fp32", torch.float32, False),
        ("matmul_tf32", torch.float32, True),
        ("matmul_bf16", torch.bfloat16, False),
        ("matmul_fp16", torch.float16, False),
    ):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        a = torch.randn(N, N, device=dev, dtype=dtype)
        b = torch.randn(N, N, device=dev, dtype=dtype)
        out[name] = 2 * N**3 / per_call(torch, lambda a=a, b=b: a @ b) / 1e12
        del a, b
    if torch.cuda.get_device_capability(gpu) >= (8, 9) and hasattr(torch, "_scaled_mm"):
        a = torch.randn(N, N, device=dev).to(torch.float8_e4m3fn)
        b = torch.randn(N, N, device=dev).to(torch.float8_e4m3fn).t()
        one = torch.tensor(1.0, device=dev)

        def fp8():
            return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

        out["matmul_fp8"] = 2 * N**3 / per_call(torch, fp8) / 1e12
        del a, b
    device = torch.empty(COPY_BYTES, dtype=torch.uint8, device=dev)
    for pinned in (True, False):
        host = torch.empty(COPY_BYTES, dtype=torch.uint8, pin_memory=pinned)
        kind = "pinned" if pinned else "pageable"

        def h2d(host=host, pinned=pinned):
            device.copy_(host, non_blocking=pinned)

        def d2h(host=host, pinned=pinned):
            host.copy_(device, non_blocking=pinned)

        out[f"h2d_{kind}"] = COPY_BYTES / per_call(torch, h2d) / 1e9
        out[f"d2h_{kind}"] = COPY_BYTES / per_call(torch, d2h) / 1e9
    other = torch.empty_like(device)
    out["d2d"] = 2 * COPY_BYTES / per_call(torch, lambda: other.copy_(device)) / 1e9
    return out


def compare(plain_path: str, bench_path: str) -> int:
    with open(plain_path, encoding="utf-8") as f:
        plain = json.load(f)
    with open(bench_path, encoding="utf-8") as f:
        bench = json.load(f)
    worst = 1.0
    for member in bench["facts"]["bench"]:
        value = member.get("value")
        ours = plain.get(str(member.get("gpu")), {}).get(member["test"])
        if not isinstance(value, (int, float)) or ours is None:
            continue
        ratio = value / ours
        worst = min(worst, ratio, 1 / ratio)
        test = member["test"]
        print(f"GPU {member['gpu']} {test:<14} bench {value:10.1f}  plain {ours:10.1f}  {ratio:6.3f}")
    print(f"largest difference: {(1 - worst) * 100:.1f}%")
    return 0 if worst >= 0.9 else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", type=int, action="append", help="GPU index (default: every GPU)")
    parser.add_argument("--compare", nargs=2, metavar=("PLAIN", "BENCH"), help="compare two saved runs")
    args = parser.parse_args()
    if args.compare:
        return compare(*args.compare)
    try:
        import torch
    except ImportError:
        print("torch is not installed: nothing to measure with", file=sys.stderr)
        return 0
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to measure", file=sys.stderr)
        return 0
    gpus = args.gpu or list(range(torch.cuda.device_count()))
    json.dump({str(g): measure(torch, g) for g in gpus}, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
