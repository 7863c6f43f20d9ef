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
        "monitoring.dcgm.dcgmi": "/usr/bin/dcgmi",
        "monitoring.dcgm.hostengine_listening": ("unknown", "not recorded in snapshot"),
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
        "monitoring.dcgm.dcgmi": ("unknown", "not installed"),
        "monitoring.dcgm.hostengine_listening": ("unknown", "not recorded in snapshot"),
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


# --- is the host engine listening where dcgmi connects? ---------------------------------------------------

# /proc/net/tcp and tcp6 on the helper machine (2026-12-05), each with `python3 -m http.server 5555` bound to
# 127.0.0.1 (then ::1) as the listener; trailing blanks as the kernel pads them.
TCP_HEADER = (
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode"
    + " " * 53
    + "\n"
)
TCP_5555 = (
    TCP_HEADER
    + "   0: 0100007F:15B3 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 116570 1 "
    "00000000b1713948 100 0 0 10 0                    \n"
    "   1: 00000000:07E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1050 1 "
    "00000000c8924ca9 100 0 0 10 0                      \n"
)
TCP_WITHOUT = TCP_HEADER + TCP_5555.splitlines(keepends=True)[2]
TCP6_HEADER = (
    "  sl  local_address                         remote_address                        st tx_queue rx_queue"
    " tr tm->when retrnsmt   uid  timeout inode\n"
)
TCP6_5555 = (
    TCP6_HEADER + "   0: 00000000000000000000000001000000:15B3 00000000000000000000000000000000:0000 0A "
    "00000000:00000000 00:00000000 00000000     0        0 117769 1 000000008feb4c28 100 0 0 10 0\n"
)


def test_listening_ports():
    assert monitoring.listening_ports(TCP_5555) == {5555, 2024}
    assert monitoring.listening_ports(TCP6_5555) == {5555}
    assert monitoring.listening_ports(TCP_HEADER) == set()


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"/proc/net/tcp": TCP_5555, "/proc/net/tcp6": TCP6_HEADER}, True),
        ({"/proc/net/tcp": TCP_WITHOUT, "/proc/net/tcp6": TCP6_5555}, True),
        ({"/proc/net/tcp": TCP_WITHOUT, "/proc/net/tcp6": TCP6_HEADER}, False),
        ({"/proc/net/tcp": TCP_WITHOUT}, ("unknown", "not recorded in snapshot")),
    ],
)
def test_hostengine_listening(files, expected):
    facts = values(monitoring.probe(fake_host(commands=ldconfig(H200_LDCONFIG), files=files)))
    assert facts["monitoring.dcgm.hostengine_listening"] == expected


def test_no_ipv6_table_is_no_ipv6():
    host = fake_host(files={"/proc/net/tcp": TCP_WITHOUT}, read_errors={"/proc/net/tcp6": "not found"})
    assert values(monitoring.probe(host))["monitoring.dcgm.hostengine_listening"] is False
