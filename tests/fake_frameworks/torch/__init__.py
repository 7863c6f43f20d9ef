"""A fake of the few torch calls gpudoctor's bench worker makes (gpudoctor/bench/worker.py), for tests on
machines without a GPU: the measurement source the bench's CPU tests use.

Time is virtual (_fakegpu.py): an operation advances the clock of the GPU it runs on by what it would take
at the scenario's rate, and CUDA events read that clock. So the worker's own arithmetic (flops or bytes
over event time) produces the figures a GPU with those rates would show, and everything from there on
(the harness, the sampler, expectations, rules, reports) is gpudoctor's real code.
"""

from __future__ import annotations

from contextlib import contextmanager

import _fakegpu
from _fakegpu import S as _S
from _fakegpu import current as _current

_fakegpu.importable("torch")
__version__ = _S.get("version", "2.13.0+cu128")


class dtype:
    def __init__(self, name: str, size: int) -> None:
        self.name, self.itemsize = name, size

    def __repr__(self) -> str:
        return f"torch.{self.name}"


float32, float16, bfloat16 = dtype("float32", 4), dtype("float16", 2), dtype("bfloat16", 2)
uint8, float8_e4m3fn = dtype("uint8", 1), dtype("float8_e4m3fn", 1)
_MATMUL = {"float32": "matmul_fp32", "bfloat16": "matmul_bf16", "float16": "matmul_fp16"}


def _device(where) -> int | None:
    if where is None or where == "cpu":
        return None
    if isinstance(where, int):
        return where
    text = str(where)
    return int(text.split(":")[1]) if ":" in text else _current[0]


class Tensor:
    def __init__(self, shape, kind: dtype, device, pinned: bool = False) -> None:
        self.shape, self.dtype, self.device, self.pinned = tuple(shape), kind, device, pinned

    @property
    def nbytes(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n * self.dtype.itemsize

    def to(self, kind: dtype) -> Tensor:
        return Tensor(self.shape, kind, self.device)

    def t(self) -> Tensor:
        return Tensor(tuple(reversed(self.shape)), self.dtype, self.device)

    def copy_(self, src: Tensor, non_blocking: bool = False) -> Tensor:
        if self.device is not None and src.device is None:
            key = "h2d_pinned" if src.pinned else "h2d_pageable"
            _fakegpu.spend(self.device, key, self.nbytes, 1e9)
        elif self.device is None and src.device is not None:
            key = "d2h_pinned" if self.pinned else "d2h_pageable"
            _fakegpu.spend(src.device, key, self.nbytes, 1e9)
        elif self.device == src.device:
            _fakegpu.spend(self.device, "d2d", 2 * self.nbytes, 1e9)
        else:
            _fakegpu.spend(src.device, "p2p", self.nbytes, 1e9)
        return self


def _shape(size) -> tuple:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        return tuple(size[0])
    return tuple(size)


def empty(*size, dtype=float32, device=None, pin_memory=False) -> Tensor:
    return Tensor(_shape(size), dtype, _device(device), pin_memory)


def randn(*size, dtype=float32, device=None) -> Tensor:
    return Tensor(_shape(size), dtype, _device(device))


def ones(*size, dtype=float32, device=None) -> Tensor:
    return Tensor(_shape(size), dtype, _device(device))


def mm(a: Tensor, b: Tensor, out=None) -> Tensor:
    key = _MATMUL[a.dtype.name]
    if key == "matmul_fp32" and backends.cuda.matmul.allow_tf32:
        key = "matmul_tf32"
    _fakegpu.spend(a.device, key, 2.0 * a.shape[0] * a.shape[1] * b.shape[1], 1e12)
    return out if out is not None else Tensor((a.shape[0], b.shape[1]), a.dtype, a.device)


def _scaled_mm(a: Tensor, b: Tensor, scale_a=None, scale_b=None, out_dtype=None) -> Tensor:
    _fakegpu.spend(a.device, "matmul_fp8", 2.0 * a.shape[0] * a.shape[1] * b.shape[1], 1e12)
    return Tensor((a.shape[0], b.shape[1]), out_dtype or bfloat16, a.device)


class _Namespace:
    pass


version = _Namespace()
version.cuda = None if _S.get("cpu_build") else "12.8"

backends = _Namespace()
backends.cuda = _Namespace()
backends.cuda.matmul = _Namespace()
backends.cuda.matmul.allow_tf32 = False


class _Props:
    def __init__(self, spec: dict) -> None:
        self.name = spec["name"]
        self.major, self.minor = (int(x) for x in spec.get("cc", "9.0").split("."))
        uuid = spec.get("uuid")
        self.uuid = uuid[4:] if uuid and uuid.startswith("GPU-") else uuid  # torch prints no "GPU-"


class Event:
    def __init__(self, enable_timing: bool = False) -> None:
        self.at = None

    def record(self) -> None:
        self.at = _fakegpu.clock.get(_current[0], 0.0)

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, end: Event) -> float:
        return (end.at - self.at) * 1000.0


class _Nccl:
    @staticmethod
    def is_available(tensors) -> bool:
        return not _S.get("no_nccl")

    @staticmethod
    def all_reduce(tensors) -> None:
        n = len(tensors)
        moved = tensors[0].nbytes * 2 * (n - 1) / n
        for t in tensors:
            _fakegpu.spend(t.device, "allreduce", moved, 1e9)


class cuda:
    Event = Event
    nccl = _Nccl

    @staticmethod
    def is_available() -> bool:
        return bool(_S["devices"]) and not _S.get("cuda_error")

    @staticmethod
    def init() -> None:
        if _S.get("cuda_error"):
            raise RuntimeError(_S["cuda_error"])

    @staticmethod
    def device_count() -> int:
        if _S.get("cuda_error"):
            raise RuntimeError(_S["cuda_error"])
        return len(_S["devices"])

    @staticmethod
    def get_device_properties(i: int) -> _Props:
        return _Props(_S["devices"][i])

    @staticmethod
    def synchronize(device=None) -> None:
        pass

    @staticmethod
    @contextmanager
    def device(i):
        before = _current[0]
        _current[0] = _device(i) if not isinstance(i, int) else i
        try:
            yield
        finally:
            _current[0] = before

    @staticmethod
    def can_device_access_peer(a: int, b: int) -> bool:
        return bool(_S.get("peer_access", True))
