"""`ldconfig -p` read and written back, on real output: the H200 host's, and this machine's own."""

from __future__ import annotations

import json
import shutil
import subprocess

from gpudoctor.host import ldconfig_text

from conftest import H200


def _h200_ldconfig() -> str:
    """The real H200 host's `ldconfig -p`, as its snapshot recorded it."""
    commands = json.loads((H200 / "commands.json").read_text())
    entry = next(c for c in commands if c["argv"] in (["ldconfig", "-p"], ["/sbin/ldconfig", "-p"]))
    return entry["stdout"]


def test_ldconfig_lines_read_as_printed():
    text = _h200_ldconfig()
    entries = ldconfig_text.entries(text)
    assert len(entries) == len([line for line in text.splitlines() if " => " in line]) > 100
    assert ("libnvidia-ml.so.1", "libc6,x86-64", "/usr/local/nvidia/lib64/libnvidia-ml.so.1") in entries


def test_a_rendered_cache_prints_as_this_machines_ldconfig_does():
    """This machine's own `ldconfig -p`: read and rendered back, every line and the header as it printed."""
    program = shutil.which("ldconfig") or "/sbin/ldconfig"
    real = subprocess.run([program, "-p"], capture_output=True, text=True, timeout=10).stdout
    entries = ldconfig_text.entries(real)
    lines = real.splitlines()
    assert ldconfig_text.render(list(entries)).splitlines() == [
        line for line in lines if not line.startswith("Cache generated")
    ]
