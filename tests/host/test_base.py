"""The Host interface's shared pieces (host/base.py): the errors a read ends with, the reason a failed NVML
call gives its facts, and the deadline the whole check shares."""

from __future__ import annotations

import time

import pynvml
import pytest

from gpudoctor.host.base import (
    NOT_FOUND,
    NOT_RECORDED,
    TIMED_OUT,
    Deadline,
    HostError,
    NvmlError,
    env_or_none,
    listdir_or_reason,
    nvml_key,
    nvml_reason,
    read_or_reason,
)
from gpudoctor.host.snapshot import SnapshotHost, load

from conftest import H200

# The names gpudoctor itself gives a failed call: a reading a snapshot did not record, and a call the live
# Host's time limit ended (host/nvml_live.py); every other name is a pynvml exception class.
OWN_NAMES = {"NVMLError_NotRecorded", "NVMLError_TimedOut"}
MAPPED = [
    "NVMLError_NotSupported", "NVMLError_NoPermission", "NVMLError_Timeout", "NVMLError_GpuIsLost",
    "NVMLError_LibraryNotFound", "NVMLError_DriverNotLoaded", "NVMLError_LibRmVersionMismatch",
    "NVMLError_NotFound", "NVMLError_FunctionNotFound", "NVMLError_InvalidArgument",
    "NVMLError_Uninitialized", "NVMLError_Unknown",
]  # fmt: skip


@pytest.mark.parametrize("name", MAPPED)
def test_every_mapped_name_is_an_exception_pynvml_raises(name):
    # the installed nvidia-ml-py (pynvml.py builds one class per NVML_ERROR_* constant)
    assert issubclass(getattr(pynvml, name), pynvml.NVMLError), name
    assert not nvml_reason(name).startswith("NVML error (")


def test_the_reasons_a_person_reads():
    assert nvml_reason("NVMLError_NotSupported") == "not supported"
    assert nvml_reason("NVMLError_DriverNotLoaded") == "driver not loaded"
    assert nvml_reason("NVMLError_LibRmVersionMismatch") == "driver/library version mismatch"
    assert nvml_reason("NVMLError_Timeout") == nvml_reason("NVMLError_TimedOut") == TIMED_OUT
    assert nvml_reason("NVMLError_NotRecorded") == NOT_RECORDED


def test_a_name_without_a_reason_of_its_own_keeps_its_name():
    # a class the installed pynvml defines (for NVML_ERROR_INSUFFICIENT_POWER) that has no reason of its own
    assert issubclass(pynvml.NVMLError_InsufficientPower, pynvml.NVMLError)
    assert nvml_reason("NVMLError_InsufficientPower") == "NVML error (NVMLError_InsufficientPower)"


def test_an_nvml_error_is_a_host_error_with_its_reason():
    e = NvmlError("NVMLError_GpuIsLost")
    assert isinstance(e, HostError)
    assert (e.reason, e.detail, e.name, str(e)) == (
        "GPU is lost", "NVMLError_GpuIsLost", "NVMLError_GpuIsLost", "GPU is lost: NVMLError_GpuIsLost"
    )  # fmt: skip
    assert str(HostError("not found")) == "not found"
    assert str(HostError("no permission", "/dev/nvidiactl")) == "no permission: /dev/nvidiactl"


def test_a_reading_is_stored_under_its_function_and_symbolic_argument():
    assert nvml_key("nvmlSystemGetDriverVersion") == "nvmlSystemGetDriverVersion"
    assert nvml_key("nvmlDeviceGetClockInfo", "NVML_CLOCK_SM") == "nvmlDeviceGetClockInfo(NVML_CLOCK_SM)"


def test_env_or_none_reads_an_unrecorded_variable_as_none():
    host = SnapshotHost(load(str(H200)))
    assert env_or_none(host, "GPUDOCTOR_NEVER_RECORDED") is None
    with pytest.raises(HostError):
        host.env("GPUDOCTOR_NEVER_RECORDED")


def test_a_deadline_clamps_every_timeout_to_the_time_left():
    deadline = Deadline(30)
    assert deadline.clamp(2.0) == 2.0 and not deadline.expired()
    assert 29.0 < deadline.clamp(60.0) <= 30.0
    spent = Deadline(0.01)
    time.sleep(0.02)
    assert (spent.remaining(), spent.clamp(2.0), spent.expired()) == (0.0, 0.0, True)


def test_read_or_reason_gives_the_text_or_the_hosts_reason():
    # the H200 capture: a file read, one the machine lacked (no DMI in that VM), a directory listed
    host = SnapshotHost(load(str(H200)))
    text, why = read_or_reason(host, "/proc/driver/nvidia/version")
    assert why is None and text.startswith("NVRM version: NVIDIA UNIX")
    assert read_or_reason(host, "/sys/class/dmi/id/sys_vendor") == (None, NOT_FOUND)
    assert listdir_or_reason(host, "/sys/bus/pci/devices") == (["0000:00:06.0"], None)
    assert listdir_or_reason(host, "/gpudoctor/never/listed") == (None, NOT_RECORDED)
