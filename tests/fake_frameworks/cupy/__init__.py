"""A fake of the few CuPy calls gpudoctor's bench worker makes (gpudoctor/bench/worker.py), on the same
virtual GPU as the fake torch (_fakegpu.py): imported only where the scenario lists "cupy" in its
`frameworks`. Pointers are numbers handed out here; a host pointer from alloc_pinned_memory is pinned,
any other (a ctypes buffer's address) pageable.
"""

from __future__ import annotations

import itertools

import _fakegpu
from _fakegpu import S as _S
from _fakegpu import current as _current

_fakegpu.importable("cupy")
__version__ = _S.get("cupy_version", "13.3.0")

float32, float16, uint8 = ("float32", 4), ("float16", 2), ("uint8", 1)
_MATMUL = {"float32": "matmul_fp32", "float16": "matmul_fp16"}
_pointers = itertools.count(1 << 40)
_pinned: set = set()
_device_of: dict = {}  # device pointer -> GPU


class _Data:
    def __init__(self, device: int) -> None:
        self.ptr = next(_pointers)
        _device_of[self.ptr] = device


class ndarray:
    def __init__(self, shape, dtype) -> None:
        self.shape = shape if isinstance(shape, tuple) else (shape,)
        self.dtype = dtype
        self.data = _Data(_current[0])

    def astype(self, dtype) -> ndarray:
        return ndarray(self.shape, dtype)


def empty(shape, dtype=float32) -> ndarray:
    return ndarray(shape, dtype)


def matmul(a: ndarray, b: ndarray, out=None) -> ndarray:
    _fakegpu.spend(_current[0], _MATMUL[a.dtype[0]], 2.0 * a.shape[0] * a.shape[1] * b.shape[1], 1e12)
    return out


class random:
    @staticmethod
    def random(shape) -> ndarray:
        return ndarray(shape, ("float64", 8))


class _Pinned:
    def __init__(self, nbytes: int) -> None:
        self.ptr = next(_pointers)
        _pinned.add(self.ptr)


class _Runtime:
    memcpyHostToDevice, memcpyDeviceToHost, memcpyDeviceToDevice = 1, 2, 3

    @staticmethod
    def getDeviceCount() -> int:
        if _S.get("cuda_error"):
            raise RuntimeError(_S["cuda_error"])
        return len(_S["devices"])

    @staticmethod
    def getDeviceProperties(i: int) -> dict:
        spec = _S["devices"][i]
        major, minor = (int(x) for x in spec.get("cc", "9.0").split("."))
        return {"name": spec["name"].encode(), "major": major, "minor": minor}

    @staticmethod
    def deviceCanAccessPeer(a: int, b: int) -> int:
        return 1 if _S.get("peer_access", True) else 0

    @staticmethod
    def memcpyAsync(dst: int, src: int, nbytes: int, kind: int, stream: int) -> None:
        if kind == 1:
            _fakegpu.spend(_device_of[dst], "h2d_pinned" if src in _pinned else "h2d_pageable", nbytes, 1e9)
        elif kind == 2:
            _fakegpu.spend(_device_of[src], "d2h_pinned" if dst in _pinned else "d2h_pageable", nbytes, 1e9)
        else:
            _fakegpu.spend(_device_of[src], "d2d", 2 * nbytes, 1e9)

    @staticmethod
    def memcpyPeerAsync(
        dst: int, dst_device: int, src: int, src_device: int, nbytes: int, stream: int
    ) -> None:
        _fakegpu.spend(src_device, "p2p", nbytes, 1e9)


class _Event:
    def __init__(self) -> None:
        self.at = None

    def record(self, stream=None) -> None:
        self.at = _fakegpu.clock.get(_current[0], 0.0)

    def synchronize(self) -> None:
        pass


class _DeviceContext:
    def __init__(self, i: int) -> None:
        self.id = i
        self._before = []

    def __enter__(self):
        self._before.append(_current[0])
        _current[0] = self.id
        return self

    def __exit__(self, *exc) -> None:
        _current[0] = self._before.pop()

    def synchronize(self) -> None:
        pass


class cuda:
    runtime = _Runtime
    Event = _Event
    Device = _DeviceContext

    @staticmethod
    def alloc_pinned_memory(nbytes: int) -> _Pinned:
        return _Pinned(nbytes)

    @staticmethod
    def get_elapsed_time(start: _Event, stop: _Event) -> float:
        return (stop.at - start.at) * 1000.0
