"""A probe that crashes or hangs is a result, not an abort."""

from __future__ import annotations

import threading
import time

from gpudoctor.collect import collect
from gpudoctor.facts import known
from gpudoctor.host.base import Deadline

from conftest import fake_host


def ok_probe(host):
    return {"system.cpus": known(4, "test")}


def crashing_probe(host):
    raise ValueError("unexpected text")


def hanging_probe(host, _stop=threading.Event()):
    _stop.wait(30)
    return {}


def test_crash_and_hang_leave_their_facts_unknown_and_the_rest_intact():
    probes = [
        ("system", ("system",), ok_probe),
        ("gpus", ("gpus",), crashing_probe),
        ("driver", ("driver", "pci"), hanging_probe),
    ]
    start = time.monotonic()
    facts, statuses = collect(fake_host(), Deadline(0.5), probes)
    assert time.monotonic() - start < 1.0
    assert facts.value("system.cpus") == 4
    assert facts.get("gpus[0].name").unknown == "probe crashed: ValueError: unexpected text"
    assert facts.get("driver.version").unknown == "timed out"
    assert facts.get("pci.unbound").unknown == "timed out"
    assert [(s.name, s.status) for s in statuses] == [
        ("system", "ok"),
        ("gpus", "crashed"),
        ("driver", "timed out"),
    ]


def test_every_fact_a_probe_produces_is_documented(h200_host):
    from gpudoctor.facts import spec_for

    facts, _ = collect(h200_host, Deadline(10))
    assert [name for name, _ in facts.items() if spec_for(name) is None] == []
