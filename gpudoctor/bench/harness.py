"""Runs the bench worker (bench/worker.py) in the target interpreter and turns its events into a BenchRun.

The worker runs in a session of its own (host/children.spawn), so that a test that hangs in the GPU
or a framework can be killed with everything it started. Each test has `test_timeout` seconds and the
whole run the deadline; a worker that goes past either, dies, or writes something that is not an event
ends the run, which is then `incomplete` with the reason; what was measured before stays. While a test
runs, the Sampler reads NVML for the GPUs it uses.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from ..host import children
from ..host.base import Deadline
from .model import FAILED, LABELS, OK, SKIPPED, TESTS, TIMED_OUT, BenchRun, Measurement, Samples
from .protocol import MAX_LINE, ProtocolError, parse_event

STDERR_KEPT = 4000  # characters of the worker's stderr kept for the reason of a crash
HELLO_TIMEOUT = 120.0  # importing torch on a GPU host takes seconds; CUDA's first context, more


@dataclass(frozen=True)
class Options:
    tests: tuple[str, ...] = TESTS
    backend: str = "auto"  # torch | cupy | auto
    seconds: float = 1.0  # timed part of each test
    warmup: float = 0.5
    matmul_n: int = 8192
    copy_mib: int = 256
    allreduce_mib: int = 256
    test_timeout: float = 60.0


@dataclass(frozen=True)
class Gpu:
    """An NVML GPU the run may use: its index and UUID (as NVML gives it, "GPU-...")."""

    index: int
    uuid: Optional[str] = None
    name: str = ""


@dataclass
class _State:
    backend: str = ""
    version: str = ""
    python: str = ""
    devices: dict[int, int] = field(default_factory=dict)  # framework device -> NVML index
    planned: list = field(default_factory=list)
    measurements: list[Measurement] = field(default_factory=list)
    current: Optional[dict] = None  # the start event of the running test
    started: float = 0.0


def plan_json(options: Options) -> str:
    return json.dumps(
        {
            "backend": options.backend,
            "tests": list(options.tests),
            "seconds": options.seconds,
            "warmup": options.warmup,
            "matmul_n": options.matmul_n,
            "copy_mib": options.copy_mib,
            "allreduce_mib": options.allreduce_mib,
        }
    )


def worker_env(gpus: list[Gpu], selected: bool, environ: Optional[dict] = None) -> dict[str, str]:
    """The worker's environment: the user's (CUDA_*, NCCL_* and library paths matter), with the devices
    in PCI bus order as NVML numbers them, narrowed to the selected GPUs by their UUIDs."""
    env = dict(os.environ if environ is None else environ)
    env.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    if selected and all(g.uuid for g in gpus):
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(g.uuid) for g in gpus)
    return env


def _uuid_key(uuid: Optional[str]) -> Optional[str]:
    if not uuid:
        return None
    text = uuid.lower()
    return text[4:] if text.startswith("gpu-") else text


def map_devices(devices: list[dict], gpus: list[Gpu]) -> dict[int, int]:
    """Framework device number -> NVML index: by UUID where both know it, else in order (the worker's
    devices are in PCI bus order, as NVML's, unless the user's own CUDA_VISIBLE_DEVICES reorders them)."""
    by_uuid = {_uuid_key(g.uuid): g.index for g in gpus if g.uuid}
    out = {}
    for position, d in enumerate(devices):
        key = _uuid_key(d.get("uuid"))
        if key in by_uuid:
            out[d["index"]] = by_uuid[key]
        elif position < len(gpus):
            out[d["index"]] = gpus[position].index
        else:
            out[d["index"]] = d["index"]
    return out


def _reader(stream: Any, lines: queue.Queue) -> None:
    """The worker's lines; one longer than the protocol allows is cut one past MAX_LINE, which parse_event
    refuses (the worker is then stopped), so that a stream without newlines is never held whole."""
    for raw in iter(lambda: stream.readline(MAX_LINE + 1), b""):
        lines.put(raw.decode("utf-8", "replace").rstrip("\n"))
    lines.put(None)


def _collector(stream: Any, kept: list) -> None:
    for raw in iter(lambda: stream.readline(STDERR_KEPT), b""):
        kept.append(raw.decode("utf-8", "replace"))
        while sum(len(k) for k in kept) > STDERR_KEPT and len(kept) > 1:
            kept.pop(0)


def _ended(proc: subprocess.Popen, kept: list) -> str:
    """How the worker ended, with the last line it wrote to stderr."""
    try:
        rc = proc.wait(timeout=5.0)
    except subprocess.TimeoutExpired:
        children.kill_group(proc)
        rc = proc.wait()
    if rc < 0:
        try:
            how = f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            how = f"killed by signal {-rc}"
    else:
        how = f"exit code {rc}"
    last = [line.strip() for line in "".join(kept).splitlines() if line.strip()]
    return how + (f"; it last said: {last[-1][:300]}" if last else "")


def what(event: dict) -> str:
    """A test as reasons name it: "bf16 matmul on GPU 0", "peer-to-peer GPU 0 -> 1"."""
    label = LABELS.get(event.get("test", ""), str(event.get("test")))
    if event.get("peer") is not None:
        return f"{label} GPU {event['gpu']} -> {event['peer']}"
    if event.get("test") == "allreduce":
        return f"{label} over every GPU"
    return f"{label} on GPU {event.get('gpu')}"


def run(
    python: str,
    gpus: list[Gpu],
    options: Options,
    deadline: Deadline,
    sampler: Any = None,
    progress: Optional[Callable[[str, int, int], None]] = None,
    selected: bool = False,
    environ: Optional[dict] = None,
) -> BenchRun:
    """The whole run. `progress(text, done, total)` is told of each test as it starts and when all end."""
    started = time.monotonic()
    state = _State(python=python)
    argv = (python, "-I", "-B", "-c", _worker_source(), plan_json(options))
    try:
        proc = children.spawn(argv, env=worker_env(gpus, selected, environ))
    except OSError as e:
        return BenchRun("not run", python=python, reason=f"cannot start {python}: {e.strerror or e}")
    lines: queue.Queue = queue.Queue()
    kept: list[str] = []
    threading.Thread(target=_reader, args=(proc.stdout, lines), daemon=True).start()
    threading.Thread(target=_collector, args=(proc.stderr, kept), daemon=True).start()
    try:
        status, reason = _converse(proc, lines, kept, state, gpus, options, deadline, sampler, progress)
    finally:
        if proc.poll() is None:
            children.kill_group(proc)
            proc.wait()
        children.untrack(proc.pid)
        if sampler is not None:
            sampler.end()
    return BenchRun(
        status=status,
        backend=f"{state.backend} {state.version}".strip(),
        python=state.python,
        reason=reason,
        measurements=tuple(state.measurements),
        seconds=round(time.monotonic() - started, 2),
        gpus=tuple(sorted(state.devices.values())),
    )


def _worker_source() -> str:
    from . import worker

    return worker.source()


def _converse(proc, lines, kept, state, gpus, options, deadline, sampler, progress) -> tuple[str, str]:
    """Reads events until the worker is done; (run status, reason)."""
    hello = False
    while True:
        limit = options.test_timeout if state.current is not None else HELLO_TIMEOUT
        wait = min(
            limit - (time.monotonic() - state.started) if state.current else limit, deadline.remaining()
        )
        try:
            line = lines.get(timeout=max(0.0, wait))
        except queue.Empty:
            children.kill_group(proc)
            if state.current is None:
                why = "the deadline" if deadline.expired() else f"{limit:g} s"
                return ("incomplete" if hello else "not run"), f"the worker did not answer within {why}"
            over = "the bench's deadline" if deadline.expired() else f"{options.test_timeout:g} s"
            reason = f"{what(state.current)} did not finish within {over}: the worker was stopped"
            _close(state, sampler, TIMED_OUT, f"still running after {over}, the worker was stopped")
            return "incomplete", reason
        if line is None:  # the worker's stdout closed: it ended, by itself or not
            how = _ended(proc, kept)
            if state.current is not None:
                reason = f"the worker died during {what(state.current)} ({how})"
                _close(state, sampler, FAILED, f"the worker died ({how})")
                return "incomplete", reason
            if not hello:
                return "not run", f"the worker in {state.python} ended before it started ({how})"
            return "incomplete", f"the worker ended before it was done ({how})"
        if not line.strip():
            continue
        try:
            event = parse_event(line)
        except ProtocolError as e:
            children.kill_group(proc)
            if state.current is not None:
                _close(state, sampler, FAILED, f"the worker wrote something else than its answer ({e})")
            return ("incomplete" if hello else "not run"), f"the worker's output cannot be read: {e}"
        kind = event["event"]
        if kind == "none":
            return "not run", event["reason"]
        if kind == "error":
            if state.current is not None:
                _close(state, sampler, FAILED, event["reason"])
            return ("incomplete" if hello else "not run"), f"the worker failed: {event['reason']}"
        if kind == "hello":
            hello = True
            state.backend = event["backend"]
            state.version = event["version"]
            state.devices = map_devices(event["devices"], gpus)
            state.planned = event["tests"]
            continue
        if not hello:
            children.kill_group(proc)
            return "not run", f"the worker's output cannot be read: {kind} before hello"
        if kind == "start":
            state.current, state.started = event, time.monotonic()
            if sampler is not None:
                sampler.begin([state.devices.get(event["gpu"], event["gpu"])])
            if progress is not None:
                progress(what(_nvml(event, state)), len(state.measurements), len(state.planned))
        elif kind == "result":
            _close(state, sampler, event["status"], event.get("detail") or "", event)
        elif kind == "done":
            if progress is not None:
                progress("done", len(state.measurements), len(state.planned))
            return "complete", ""


def _nvml(event: dict, state: _State) -> dict:
    """The event with NVML indices for the framework's device numbers."""
    out = dict(event)
    for key in ("gpu", "peer"):
        if out.get(key) is not None:
            out[key] = state.devices.get(out[key], out[key])
    return out


def _close(state: _State, sampler: Any, status: str, detail: str, result: Optional[dict] = None) -> None:
    """The running test's measurement, from its result event or from how it ended."""
    start = _nvml(state.current or result or {}, state)
    samples = {}
    if sampler is not None:
        samples = sampler.end()
    gpu = start.get("gpu", 0)
    data = result or {}
    state.measurements.append(
        Measurement(
            test=start.get("test", ""),
            gpu=gpu,
            peer=start.get("peer"),
            status=status if status in (OK, FAILED, SKIPPED, TIMED_OUT) else FAILED,
            value=float(data["value"]) if status == OK else None,
            gpus=int(data.get("gpus") or (2 if start.get("peer") is not None else 1)),
            detail=detail,
            seconds=round(time.monotonic() - state.started, 2) if state.current else 0.0,
            samples=samples.get(gpu, Samples(unknown="not sampled")),
            peer_access=data.get("peer_access"),
        )
    )
    state.current = None
