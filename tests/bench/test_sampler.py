"""The NVML samples taken while a bench test runs (bench/sampler.py), with a Host that answers as NVML
does, refusals included."""

from __future__ import annotations

import time

from gpudoctor.bench.model import Samples
from gpudoctor.bench.sampler import Sampler, _Series, summarise
from gpudoctor.host.base import NvmlError


class NvmlHost:
    """Answers host.nvml(function, device, arg) from a table per GPU; an NvmlError value is raised."""

    kind = "live"

    def __init__(self, table: dict) -> None:
        self.table = table
        self.calls: list = []

    def nvml(self, function, device=None, arg=None):
        self.calls.append((function, device, arg))
        value = self.table.get(device, {}).get((function, arg), NvmlError("NVMLError_NotSupported"))
        if isinstance(value, Exception):
            raise value
        return value


def busy_h200(**changes) -> dict:
    t = {
        ("nvmlDeviceGetClockInfo", "SM"): 1755,
        ("nvmlDeviceGetClockInfo", "MEM"): 2619,
        ("nvmlDeviceGetPowerUsage", None): 699_400,
        ("nvmlDeviceGetEnforcedPowerLimit", None): 700_000,
        ("nvmlDeviceGetTemperature", "GPU"): 67,
        ("nvmlDeviceGetCurrentClocksEventReasons", None): 0x4,
        ("nvmlDeviceGetCurrPcieLinkGeneration", None): 5,
        ("nvmlDeviceGetCurrPcieLinkWidth", None): 16,
    }
    t.update(changes)
    return t


def test_samples_summarise_each_reading():
    series = _Series()
    for sm, power, reasons, gen in ((1755, 699.4, 0x4, 5), (1980, 420.0, 0x0, 5), (1410, 700.0, 0x20, 3)):
        series.count += 1
        for what, value in (
            ("sm_mhz", sm),
            ("power_w", power),
            ("event_reasons", reasons),
            ("pcie_gen", gen),
        ):
            series.values.setdefault(what, []).append(value)
    s = summarise(series)
    assert (s.count, s.sm_mhz_median, s.power_w_max, s.power_w_median) == (3, 1755, 700.0, 699.4)
    assert (s.event_reasons, s.pcie_gen_min, s.temperature_c_max) == (0x24, 3, None)


def test_no_sample_says_why():
    series = _Series(errors=["NVML gave no reading (sm_mhz: no permission)"])
    assert summarise(series) == Samples(unknown="NVML gave no reading (sm_mhz: no permission)")
    assert summarise(_Series()).unknown == "no samples taken"


def test_a_sample_reads_every_reading_through_the_host():
    host = NvmlHost({3: busy_h200()})
    sampler = Sampler(host)
    sampler._series = {3: _Series()}
    sampler.sample(3)
    s = summarise(sampler._series[3])
    assert s == Samples(
        count=1,
        sm_mhz_median=1755,
        mem_mhz_median=2619,
        power_w_max=699.4,
        power_w_median=699.4,
        power_limit_w=700.0,
        temperature_c_max=67,
        event_reasons=0x4,
        pcie_gen_min=5,
        pcie_width_min=16,
    )
    assert {device for _, device, _ in host.calls} == {3}


def test_an_old_driver_answers_by_the_old_name_of_the_event_reasons():
    table = busy_h200()
    del table[("nvmlDeviceGetCurrentClocksEventReasons", None)]
    table[("nvmlDeviceGetCurrentClocksThrottleReasons", None)] = 0x40
    sampler = Sampler(NvmlHost({0: table}))
    sampler._series = {0: _Series()}
    sampler.sample(0)
    sampler.sample(0)  # the second round asks by the old name
    assert summarise(sampler._series[0]).event_reasons == 0x40


def test_implausible_readings_are_left_out():
    table = busy_h200()
    table[("nvmlDeviceGetTemperature", "GPU")] = 0xFFFFFFFF  # a sentinel, not 4 billion degrees
    sampler = Sampler(NvmlHost({0: table}))
    sampler._series = {0: _Series()}
    sampler.sample(0)
    s = summarise(sampler._series[0])
    assert s.temperature_c_max is None and s.sm_mhz_median == 1755


def test_begin_and_end_sample_in_the_background():
    host = NvmlHost({0: busy_h200()})
    sampler = Sampler(host, interval=0.01)
    sampler.begin([0])
    deadline = time.monotonic() + 5
    while len(host.calls) < 16 and time.monotonic() < deadline:
        time.sleep(0.01)
    got = sampler.end()
    assert got[0].count >= 2 and got[0].sm_mhz_median == 1755
    assert sampler.end() == {}


def test_a_gpu_nvml_refuses_has_no_samples_with_the_reason():
    host = NvmlHost({0: {}})
    sampler = Sampler(host)
    sampler._series = {0: _Series()}
    sampler.sample(0)
    assert summarise(sampler._series[0]).unknown == "NVML gave no reading (sm_mhz: not supported)"
