"""The monitoring probe: DCGM's library in the loader cache, its daemon in a bin directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudoctor.facts import SCHEMA
from gpudoctor.probes import monitoring

from conftest import fake_host

RAW = Path(__file__).resolve().parents[1] / "fixtures" / "raw"
H200_LDCONFIG = (RAW / "h200-ldconfig-p.txt").read_text()
# What `ldconfig -p` prints for the datacenter-gpu-manager-4 packages on Ubuntu (one line per ABI entry).
DCGM_LINES = (
    "\tlibdcgmmoduleprofiling.so.4 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libdcgmmoduleprofiling.so.4\n"
    "\tlibdcgm.so.4 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libdcgm.so.4\n"
    "\tlibdcgm.so (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libdcgm.so\n"
)
USR_BIN = ["dcgmi", "dcgmproftester12", "nv-hostengine", "nvidia-smi", "python3"]
MONITORING_FACTS = {s.name for s in SCHEMA if s.name.startswith("monitoring.")}


def ldconfig(stdout: str) -> list[dict]:
    return [{"argv": ["ldconfig", "-p"], "rc": 0, "stdout": stdout, "stderr": ""}]


def values(facts: dict) -> dict:
    return {k: (f.value if f.known else ("unknown", f.unknown)) for k, f in facts.items()}


def test_find_dcgm_library():
    entries = [
        ("libdcgmmoduleprofiling.so.4", "/usr/lib/x86_64-linux-gnu/libdcgmmoduleprofiling.so.4"),
        ("libdcgm.so", "/usr/lib/x86_64-linux-gnu/libdcgm.so"),
        ("libdcgm.so.3", "/usr/lib/x86_64-linux-gnu/libdcgm.so.3"),
    ]
    assert monitoring.find_dcgm_library(entries) == "/usr/lib/x86_64-linux-gnu/libdcgm.so.3"
    assert monitoring.find_dcgm_library(entries[:2]) is None
    assert monitoring.find_dcgm_library([]) is None


def test_dcgm_installed():
    lines = H200_LDCONFIG.splitlines(keepends=True)
    text = "".join(lines[:1] + [DCGM_LINES] + lines[1:])
    facts = monitoring.probe(fake_host(commands=ldconfig(text), dirs={"/usr/bin": USR_BIN}))
    assert set(facts) == MONITORING_FACTS
    assert values(facts) == {
        "monitoring.dcgm.library": "/usr/lib/x86_64-linux-gnu/libdcgm.so.4",
        "monitoring.dcgm.hostengine": "/usr/bin/nv-hostengine",
        "monitoring.dcgm.installed": True,
    }
    assert facts["monitoring.dcgm.library"].source == "ldconfig"


def test_not_installed_when_every_place_was_searched():
    facts = monitoring.probe(
        fake_host(
            commands=ldconfig(H200_LDCONFIG),
            dirs={
                "/usr/bin": ["nvidia-smi"],
                "/usr/sbin": ["ldconfig"],
                "/usr/local/bin": {"error": "not found"},
            },
        )
    )
    assert values(facts) == {
        "monitoring.dcgm.library": ("unknown", "not installed"),
        "monitoring.dcgm.hostengine": ("unknown", "not installed"),
        "monitoring.dcgm.installed": False,
    }


def test_the_daemon_alone_is_enough():
    # A container image with only the dcgm binaries copied in, not registered with the loader.
    facts = monitoring.probe(
        fake_host(commands=ldconfig(H200_LDCONFIG), dirs={"/usr/local/bin": ["nv-hostengine"]})
    )
    assert values(facts)["monitoring.dcgm.installed"] is True
    assert values(facts)["monitoring.dcgm.hostengine"] == "/usr/local/bin/nv-hostengine"


@pytest.mark.parametrize(
    ("commands", "dirs", "reason"),
    [
        # /usr/bin was not recorded (the H200 fixture): absence cannot be told.
        (ldconfig(H200_LDCONFIG), {"/usr/sbin": [], "/usr/local/bin": []}, "not recorded in snapshot"),
        (
            [{"argv": ["ldconfig", "-p"], "error": "timed out"}],
            {"/usr/bin": [], "/usr/sbin": []},
            "timed out",
        ),
    ],
)
def test_a_place_not_searched_leaves_installed_unknown(commands, dirs, reason):
    facts = monitoring.probe(fake_host(commands=commands, dirs=dirs))
    assert facts["monitoring.dcgm.installed"].unknown == reason


def test_empty_host_never_raises():
    facts = monitoring.probe(fake_host())
    assert set(facts) == MONITORING_FACTS
    assert not facts["monitoring.dcgm.installed"].known
