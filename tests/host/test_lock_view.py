"""A lockfile as if installed: its pins are the Python environment; the machine is the host's."""

from __future__ import annotations

import pytest

from gpudoctor.host.base import HostError
from gpudoctor.host.lock_view import NOT_INSTALLED, LockHost

DUMP = {
    "format": 1,
    "executable": "",
    "machine": "x86_64",
    "all": {"torch": "2.5.1+cu124"},
    "distributions": [],
}


def test_the_pins_are_the_environment_and_the_rest_is_the_hosts(h200_host):
    host = LockHost(h200_host, DUMP, "lockfile uv.lock")
    assert host.python_targets() == [("lockfile uv.lock", "--lock")]
    assert host.python() is DUMP and host.python("anything") is DUMP
    assert host.read("/proc/driver/nvidia/version") == h200_host.read("/proc/driver/nvidia/version")
    assert host.kind == h200_host.kind


def test_nothing_of_the_lock_runs(h200_host):
    host = LockHost(h200_host, DUMP, "lockfile uv.lock")
    with pytest.raises(HostError) as e:
        host.framework_runtime("lockfile uv.lock", "torch")
    assert e.value.reason == NOT_INSTALLED
