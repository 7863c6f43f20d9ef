"""NVML readings taken while a test runs: clocks, power, temperature, clock-event reasons, the PCIe link.

Reads through the Host (host.nvml, each call time-boxed there) in a thread of its own, every `interval`
seconds, for the GPUs the running test uses. A reading NVML refuses is left out of the summary; a GPU
that gave no reading at all has Samples(count=0, unknown=why).
"""

from __future__ import annotations

import statistics
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from ..host.base import HostError
from ..probes import gpus as decode
from .model import Samples

# (what, NVML function, symbolic argument, decoder)
READINGS: tuple[tuple[str, str, Optional[str], Callable[[Any], Any]], ...] = (
    ("sm_mhz", "nvmlDeviceGetClockInfo", "SM", decode._between(0, decode.MAX_CLOCK_MHZ)),
    ("mem_mhz", "nvmlDeviceGetClockInfo", "MEM", decode._between(0, decode.MAX_CLOCK_MHZ)),
    ("power_w", "nvmlDeviceGetPowerUsage", None, decode.watts),
    ("power_limit_w", "nvmlDeviceGetEnforcedPowerLimit", None, decode.watts),
    ("temperature_c", "nvmlDeviceGetTemperature", "GPU", decode._between(0, decode.MAX_TEMPERATURE_C)),
    ("event_reasons", "nvmlDeviceGetCurrentClocksEventReasons", None, decode.event_reasons),
    ("pcie_gen", "nvmlDeviceGetCurrPcieLinkGeneration", None, decode._between(1, decode.MAX_PCIE_GEN)),
    ("pcie_width", "nvmlDeviceGetCurrPcieLinkWidth", None, decode._between(0, decode.MAX_PCIE_WIDTH)),
)
# Drivers and pynvml before 535 know the clock-event reasons only by their older name.
OLD_NAMES = {"nvmlDeviceGetCurrentClocksEventReasons": "nvmlDeviceGetCurrentClocksThrottleReasons"}


@dataclass
class _Series:
    values: dict[str, list] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    count: int = 0


def summarise(series: _Series) -> Samples:
    """The readings of one GPU during one test, as Samples."""
    v = series.values

    def median(key: str) -> Optional[float]:
        return statistics.median(v[key]) if v.get(key) else None

    def top(key: str) -> Any:
        return max(v[key]) if v.get(key) else None

    def low(key: str) -> Any:
        return min(v[key]) if v.get(key) else None

    if series.count == 0:
        return Samples(unknown=series.errors[0] if series.errors else "no samples taken")
    reasons = None
    if v.get("event_reasons"):
        reasons = 0
        for r in v["event_reasons"]:
            reasons |= r
    sm, mem, power = median("sm_mhz"), median("mem_mhz"), median("power_w")
    return Samples(
        count=series.count,
        sm_mhz_median=None if sm is None else int(round(sm)),
        mem_mhz_median=None if mem is None else int(round(mem)),
        power_w_max=top("power_w"),
        power_w_median=None if power is None else round(power, 1),
        power_limit_w=low("power_limit_w"),
        temperature_c_max=top("temperature_c"),
        event_reasons=reasons,
        pcie_gen_min=low("pcie_gen"),
        pcie_width_min=low("pcie_width"),
    )


class Sampler:
    """`begin(gpus)` when a test starts, `end()` when it ends: {NVML index: Samples}."""

    def __init__(self, host: Any, interval: float = 0.1) -> None:
        self.host = host
        self.interval = interval
        self._lock = threading.Lock()
        self._series: dict[int, _Series] = {}
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._functions = {name: name for _, name, _, _ in READINGS}

    def begin(self, gpus: list[int]) -> None:
        self.end()
        with self._lock:
            self._series = {g: _Series() for g in gpus}
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._loop, args=(self._stop,), name="bench-sampler", daemon=True
        )
        self._thread.start()

    def end(self) -> dict[int, Samples]:
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=5.0)  # each NVML call is time-boxed by the Host
            self._thread = None
        with self._lock:
            out = {g: summarise(s) for g, s in self._series.items()}
            self._series = {}
        return out

    def _loop(self, stop: threading.Event) -> None:
        while True:
            with self._lock:
                gpus = list(self._series)
            for gpu in gpus:
                self.sample(gpu)
            if stop.wait(self.interval):
                return

    def sample(self, gpu: int) -> None:
        """One round of readings of `gpu`, added to its series."""
        got: dict[str, Any] = {}
        errors = []
        for what, function, arg, convert in READINGS:
            name = self._functions[function]
            try:
                got[what] = convert(self.host.nvml(name, device=gpu, arg=arg))
            except HostError as e:
                if function in OLD_NAMES and name == function and e.reason.startswith("not supported"):
                    self._functions[function] = OLD_NAMES[function]
                errors.append(f"{what}: {e.reason}")
            except (ValueError, TypeError, KeyError) as e:  # an implausible reading is no reading
                errors.append(f"{what}: {e}")
        with self._lock:
            series = self._series.get(gpu)
            if series is None:
                return
            if got:
                series.count += 1
                for what, value in got.items():
                    series.values.setdefault(what, []).append(value)
            elif errors:
                series.errors.append(f"NVML gave no reading ({errors[0]})")
