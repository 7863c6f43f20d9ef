"""The bench worker: runs the measurements in the target interpreter, through torch or CuPy.

Runs as source text in a child process of the target interpreter (`python -I -B -c PROGRAM PLAN`), so it
uses the standard library besides the framework and works on Python 3.8+. PLAN is a JSON object:
{"backend": "torch" | "cupy" | "auto", "tests": [test names], "seconds": s, "warmup": s, "matmul_n": n,
"copy_mib": m, "allreduce_mib": m}. Per-GPU tests run on every device the framework sees (the parent
narrows that with CUDA_VISIBLE_DEVICES), one device after the other; then p2p for each pair of devices
and the all-reduce over all of them, when there are two or more.

It answers with JSON lines on stdout, one event each, flushed as they happen:
  {"event": "hello", "backend", "version", "python", "devices": [{"index", "name", "uuid", "cc"}],
   "tests": [[test, gpu, peer], ...]}        what follows, gpu and peer being the framework's numbers
  {"event": "none", "reason"}                      nothing to measure with: no framework, no CUDA device
  {"event": "start", "test", "gpu", "peer"}        a test begins (the parent samples NVML meanwhile)
  {"event": "result", "test", "gpu", "peer", "status", "value", "detail", "gpus", "peer_access"}
  {"event": "done"}
Whatever the framework prints goes to stderr, so stdout holds only events; the process leaves with
os._exit so that no framework's exit handlers run.

Timing: every test warms up for `warmup` seconds of GPU time, calibrates how many operations fill
`seconds`, and times that many between two CUDA events on the device's stream (the first device's, for
tests spanning several). Matrix products are n x n (fp8: torch._scaled_mm with unit scales); a matmul is
2n^3 flops. Copies move `copy_mib` MiB; device-to-device counts the bytes read and written; the all-
reduce's bus bandwidth is algbw x 2(n-1)/n, as nccl-tests defines it (PERFORMANCE.md).
"""

from __future__ import annotations

import json
import os
import sys

FORMAT = 1
MAX_TEXT = 300
# The data types of the matmul tests, by test name.
MATMUL_DTYPES = {
    "matmul_fp32": "fp32",
    "matmul_tf32": "tf32",
    "matmul_bf16": "bf16",
    "matmul_fp16": "fp16",
    "matmul_fp8": "fp8",
}
MAX_ITERATIONS = 100000


def _text(value) -> str:
    return " ".join(str(value).split())[:MAX_TEXT]


def _error(e: BaseException) -> str:
    lines = [line for line in str(e).strip().splitlines() if line.strip()]
    return _text(f"{type(e).__name__}: {lines[0] if lines else ''}".rstrip(": "))


class Out:
    """Events on the real stdout (fd 1 itself goes to stderr, for whatever the framework prints)."""

    def __init__(self) -> None:
        self.fd = os.dup(1)
        os.dup2(2, 1)

    def send(self, event: str, **data) -> None:
        data = dict(event=event, **data)
        raw = (json.dumps(data, default=str) + "\n").encode("utf-8")
        sys.stdout.flush()
        while raw:
            raw = raw[os.write(self.fd, raw) :]


def timed(backend, device, op, seconds: float, warmup: float):
    """Seconds per call of op() in steady state, and how many calls were timed. Warm-up and calibration
    are one: batches of calls, timed on the GPU, grow until one lasts `seconds`/4 (at most 50 ms) and the
    GPU has run for `warmup` seconds; then enough calls to fill `seconds` are timed."""
    op()
    backend.synchronize(device)
    target = min(0.05, seconds / 4)
    batch, spent = 1, 0.0
    while True:
        elapsed = backend.time_ms(device, op, batch) / 1000.0
        spent += elapsed
        if batch >= MAX_ITERATIONS or (elapsed >= target and spent >= warmup):
            break
        if elapsed < target:
            batch = min(MAX_ITERATIONS, batch * 4)
    iterations = max(1, min(MAX_ITERATIONS, int(batch * seconds / max(elapsed, 1e-9))))
    elapsed = backend.time_ms(device, op, iterations) / 1000.0
    return elapsed / iterations, iterations


# --- torch ---------------------------------------------------------------------------------------------


class Torch:
    name = "torch"

    def __init__(self) -> None:
        import torch

        self.torch = torch
        self.version = str(torch.__version__)

    def devices(self) -> list:
        torch = self.torch
        if getattr(getattr(torch, "version", None), "cuda", "") is None:
            raise NoDevice(f"torch {self.version} is a CPU-only build (torch.version.cuda is None)")
        if not torch.cuda.is_available():
            try:
                torch.cuda.init()  # raises what is_available() keeps to itself
            except Exception as e:  # noqa: BLE001 - the CUDA initialisation error is the answer
                raise NoDevice(f"torch {self.version} cannot use CUDA: {_error(e)}") from None
            return []
        out = []
        for i in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(i)
            uuid = getattr(props, "uuid", None)
            out.append(
                {
                    "index": i,
                    "name": str(props.name),
                    "uuid": str(uuid) if uuid is not None else None,
                    "cc": f"{props.major}.{props.minor}",
                }
            )
        return out

    def synchronize(self, device) -> None:
        self.torch.cuda.synchronize(device)

    def time_ms(self, device, op, iterations: int) -> float:
        cuda = self.torch.cuda
        with cuda.device(device):
            start = cuda.Event(enable_timing=True)
            stop = cuda.Event(enable_timing=True)
            start.record()
            for _ in range(iterations):
                op()
            stop.record()
            stop.synchronize()
            return float(start.elapsed_time(stop))

    def matmul(self, device, dtype: str, n: int):
        torch = self.torch
        where = f"cuda:{device}"
        torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
        if dtype == "fp8":
            fp8 = getattr(torch, "float8_e4m3fn", None)
            if fp8 is None or not hasattr(torch, "_scaled_mm"):
                raise Unsupported(f"torch {self.version} has no fp8 matrix product (torch._scaled_mm)")
            a = torch.randn(n, n, device=where).to(fp8)
            b = torch.randn(n, n, device=where).to(fp8).t()  # _scaled_mm's second operand is column-major
            one = torch.ones((), device=where)

            def op():
                torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

            return op
        kind = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
        a = torch.randn(n, n, device=where, dtype=kind[dtype])
        b = torch.randn(n, n, device=where, dtype=kind[dtype])
        c = torch.empty(n, n, device=where, dtype=kind[dtype])
        return lambda: torch.mm(a, b, out=c)

    def host_copy(self, device, to_device: bool, pinned: bool, nbytes: int):
        torch = self.torch
        host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=pinned)
        dev = torch.empty(nbytes, dtype=torch.uint8, device=f"cuda:{device}")
        if to_device:
            return lambda: dev.copy_(host, non_blocking=pinned)
        return lambda: host.copy_(dev, non_blocking=pinned)

    def device_copy(self, device, nbytes: int):
        torch = self.torch
        a = torch.empty(nbytes, dtype=torch.uint8, device=f"cuda:{device}")
        b = torch.empty(nbytes, dtype=torch.uint8, device=f"cuda:{device}")
        return lambda: b.copy_(a)

    def can_access_peer(self, device, peer) -> bool:
        return bool(self.torch.cuda.can_device_access_peer(device, peer))

    def peer_copy(self, device, peer, nbytes: int):
        torch = self.torch
        a = torch.empty(nbytes, dtype=torch.uint8, device=f"cuda:{device}")
        b = torch.empty(nbytes, dtype=torch.uint8, device=f"cuda:{peer}")
        return lambda: b.copy_(a, non_blocking=True)

    def all_reduce(self, devices: list, nbytes: int):
        torch = self.torch
        nccl = getattr(torch.cuda, "nccl", None)
        tensors = [torch.empty(nbytes // 4, dtype=torch.float32, device=f"cuda:{d}") for d in devices]
        if nccl is None or not nccl.is_available(tensors):
            raise Unsupported(f"torch {self.version} was built without NCCL")

        def op():
            nccl.all_reduce(tensors)
            for d in devices[1:]:
                torch.cuda.synchronize(d)

        return op


# --- CuPy ------------------------------------------------------------------------------------------------


class Cupy:
    name = "cupy"

    def __init__(self) -> None:
        import cupy

        self.cupy = cupy
        self.version = str(cupy.__version__)

    def devices(self) -> list:
        runtime = self.cupy.cuda.runtime
        try:
            count = runtime.getDeviceCount()
        except Exception:  # noqa: BLE001 - no driver, no device: nothing to measure
            return []
        out = []
        for i in range(count):
            props = runtime.getDeviceProperties(i)
            name = props.get("name", b"")
            uuid = props.get("uuid")
            out.append(
                {
                    "index": i,
                    "name": name.decode() if isinstance(name, bytes) else str(name),
                    "uuid": _uuid_text(uuid) if uuid is not None else None,
                    "cc": f"{props.get('major')}.{props.get('minor')}",
                }
            )
        return out

    def synchronize(self, device) -> None:
        with self.cupy.cuda.Device(device):
            self.cupy.cuda.Device(device).synchronize()

    def time_ms(self, device, op, iterations: int) -> float:
        cuda = self.cupy.cuda
        with cuda.Device(device):
            start, stop = cuda.Event(), cuda.Event()
            start.record()
            for _ in range(iterations):
                op()
            stop.record()
            stop.synchronize()
            return float(cuda.get_elapsed_time(start, stop))

    def matmul(self, device, dtype: str, n: int):
        cupy = self.cupy
        if dtype not in ("fp32", "fp16"):
            raise Unsupported(f"CuPy offers no {dtype} matrix product that gpudoctor can select per test")
        with cupy.cuda.Device(device):
            kind = cupy.float32 if dtype == "fp32" else cupy.float16
            a = cupy.random.random((n, n)).astype(kind)
            b = cupy.random.random((n, n)).astype(kind)
            c = cupy.empty((n, n), dtype=kind)

        def op():
            with cupy.cuda.Device(device):
                cupy.matmul(a, b, out=c)

        return op

    def host_copy(self, device, to_device: bool, pinned: bool, nbytes: int):
        import ctypes

        cupy = self.cupy
        runtime = cupy.cuda.runtime
        if pinned:
            memory = cupy.cuda.alloc_pinned_memory(nbytes)
            host = memory.ptr
        else:
            memory = ctypes.create_string_buffer(nbytes)
            host = ctypes.addressof(memory)
        with cupy.cuda.Device(device):
            dev = cupy.empty(nbytes, dtype=cupy.uint8)

        def op():
            keep = memory  # noqa: F841 - the host buffer lives as long as the copy does
            if to_device:
                runtime.memcpyAsync(dev.data.ptr, host, nbytes, runtime.memcpyHostToDevice, 0)
            else:
                runtime.memcpyAsync(host, dev.data.ptr, nbytes, runtime.memcpyDeviceToHost, 0)

        return op

    def device_copy(self, device, nbytes: int):
        cupy = self.cupy
        runtime = cupy.cuda.runtime
        with cupy.cuda.Device(device):
            a = cupy.empty(nbytes, dtype=cupy.uint8)
            b = cupy.empty(nbytes, dtype=cupy.uint8)

        def op():
            with cupy.cuda.Device(device):
                runtime.memcpyAsync(b.data.ptr, a.data.ptr, nbytes, runtime.memcpyDeviceToDevice, 0)

        return op

    def can_access_peer(self, device, peer) -> bool:
        return bool(self.cupy.cuda.runtime.deviceCanAccessPeer(device, peer))

    def peer_copy(self, device, peer, nbytes: int):
        cupy = self.cupy
        with cupy.cuda.Device(device):
            a = cupy.empty(nbytes, dtype=cupy.uint8)
        with cupy.cuda.Device(peer):
            b = cupy.empty(nbytes, dtype=cupy.uint8)
        return lambda: cupy.cuda.runtime.memcpyPeerAsync(b.data.ptr, peer, a.data.ptr, device, nbytes, 0)

    def all_reduce(self, devices: list, nbytes: int):
        raise Unsupported("the all-reduce is measured through torch only")


class NoDevice(Exception):
    """Nothing to measure with: the framework cannot reach a GPU, for this reason."""


class Unsupported(Exception):
    """A test this framework, build or GPU cannot run: the result is `skipped` with this reason."""


def _uuid_text(raw) -> str:
    data = raw if isinstance(raw, (bytes, bytearray)) else bytes(raw)
    h = data.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


BACKENDS = {"torch": Torch, "cupy": Cupy}


def open_backend(wanted: str):
    """The framework to measure with and why none, as (backend or None, reason)."""
    reasons = []
    for name in ("torch", "cupy") if wanted == "auto" else (wanted,):
        try:
            backend = BACKENDS[name]()
        except ImportError as e:
            reasons.append(f"{name} cannot be imported ({_error(e)})")
            continue
        except Exception as e:  # noqa: BLE001 - a framework that breaks on import is a reason, not a crash
            reasons.append(f"{name} failed to import ({_error(e)})")
            continue
        return backend, ""
    return None, "; ".join(reasons)


# --- the tests -------------------------------------------------------------------------------------------


def expand(tests: list, devices: list) -> list:
    """The plan's test names as [test, gpu, peer] runs on these devices."""
    runs = [[t, d["index"], None] for d in devices for t in tests if t not in ("p2p", "allreduce")]
    if "p2p" in tests:
        runs += [["p2p", a["index"], b["index"]] for a in devices for b in devices if a["index"] < b["index"]]
    if "allreduce" in tests and len(devices) > 1:
        runs.append(["allreduce", devices[0]["index"], None])
    return runs


def _cc(text: str) -> tuple:
    try:
        major, minor = text.split(".")
        return int(major), int(minor)
    except ValueError:
        return (0, 0)


def measure(backend, plan: dict, test: str, gpu: int, peer, devices: list) -> dict:
    seconds, warmup = float(plan["seconds"]), float(plan["warmup"])
    copy_bytes = int(plan["copy_mib"]) << 20
    out = {"gpus": 1, "peer_access": None}
    if test in MATMUL_DTYPES:
        n = int(plan["matmul_n"])
        cc = next((d["cc"] for d in devices if d["index"] == gpu), "")
        if test == "matmul_fp8" and _cc(cc) < (8, 9):
            raise Unsupported(f"fp8 tensor cores need compute capability 8.9 or later; this GPU has {cc}")
        op = backend.matmul(gpu, MATMUL_DTYPES[test], n)
        per_call, iterations = timed(backend, gpu, op, seconds, warmup)
        out["value"] = 2.0 * n**3 / per_call / 1e12
        out["detail"] = f"{n}x{n}x{n}, {iterations} products in {per_call * iterations:.2f} s"
        return out
    if test == "d2d":
        op = backend.device_copy(gpu, copy_bytes)
        factor = 2  # every byte is read and written
    elif test == "p2p":
        out["gpus"] = 2
        out["peer_access"] = backend.can_access_peer(gpu, peer)
        op = backend.peer_copy(gpu, peer, copy_bytes)
        factor = 1
    elif test == "allreduce":
        indices = [d["index"] for d in devices]
        nbytes = int(plan["allreduce_mib"]) << 20
        n = len(indices)
        out["gpus"] = n
        op = backend.all_reduce(indices, nbytes)
        per_call, iterations = timed(backend, indices[0], op, seconds, warmup)
        out["value"] = nbytes / per_call / 1e9 * 2 * (n - 1) / n
        out["detail"] = f"{nbytes >> 20} MiB float32 on {n} GPUs, {iterations} all-reduces"
        return out
    else:
        direction, memory = test.split("_")
        op = backend.host_copy(gpu, direction == "h2d", memory == "pinned", copy_bytes)
        factor = 1
    per_call, iterations = timed(backend, gpu, op, seconds, warmup)
    out["value"] = factor * copy_bytes / per_call / 1e9
    out["detail"] = f"{copy_bytes >> 20} MiB, {iterations} copies in {per_call * iterations:.2f} s"
    return out


def run(out: Out, plan: dict) -> None:
    backend, reason = open_backend(plan.get("backend", "auto"))
    if backend is None:
        out.send("none", reason=reason)
        return
    try:
        devices = backend.devices()
    except NoDevice as e:
        out.send("none", reason=_text(e))
        return
    except Exception as e:  # noqa: BLE001 - a CUDA initialisation error is the answer
        out.send("none", reason=f"{backend.name} {backend.version} cannot use CUDA: {_error(e)}")
        return
    if not devices:
        out.send("none", reason=f"{backend.name} {backend.version} sees no CUDA device")
        return
    runs = expand(list(plan.get("tests", ())), devices)
    out.send(
        "hello",
        format=FORMAT,
        backend=backend.name,
        version=backend.version,
        python=sys.version.split()[0],
        devices=devices,
        tests=runs,
    )
    for test, gpu, peer in runs:
        out.send("start", test=test, gpu=gpu, peer=peer)
        result = {"test": test, "gpu": gpu, "peer": peer}
        try:
            result.update(measure(backend, plan, test, gpu, peer, devices), status="ok")
        except Unsupported as e:
            result.update(status="skipped", detail=_text(e))
        except Exception as e:  # noqa: BLE001 - a test that raises (a CUDA error, out of memory) is a result
            result.update(status="failed", detail=_error(e))
        out.send("result", **result)
    out.send("done")


def main(argv: list) -> None:
    out = Out()
    try:
        plan = json.loads(argv[1]) if len(argv) > 1 else {}
        run(out, plan)
    except Exception as e:  # noqa: BLE001 - the parent reads this rather than a traceback
        out.send("error", reason=_error(e))
    sys.stderr.flush()
    os._exit(0)


def source() -> str:
    """This module as a program for `python -c`, given the plan as its argument."""
    with open(__file__, encoding="utf-8") as f:
        return f.read()


if __name__ == "__main__":
    main(sys.argv)
