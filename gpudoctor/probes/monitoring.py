"""The monitoring probe: whether NVIDIA DCGM (Data Center GPU Manager) is installed, and whether its host
engine answers where dcgmi looks for it.

Produces `monitoring.*`. DCGM's packages put its library (libdcgm.so.N) where the loader cache lists it and
its daemon, nv-hostengine, and its client, dcgmi, in a system bin directory; the library or the daemon shows
DCGM is installed. Nothing is run: nv-hostengine started without arguments becomes a daemon, so it is looked
for, never called.

dcgmi connects to localhost on DCGM_HE_PORT_NUMBER, 5555 (NVIDIA/DCGM@v4.6.0 dcgmlib/dcgm_structs.h:289),
unless given --host. Whether something listens there is read from /proc/net/tcp and tcp6 (this network
namespace's sockets, as dcgmi sees them; state 0A is LISTEN, ports in hex): no process list is walked, and
it holds for a host engine in a pod with the host's network as for the systemd service. A host engine told
to use a Unix socket instead (--domain-socket) is not seen.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from ..facts import Fact, FactSpec, known, unknown
from ..host.base import NOT_FOUND, HostError
from . import ProbeSpec
from .libraries import ldconfig_entries

FACT_SPECS: tuple[FactSpec, ...] = (
    FactSpec(
        "monitoring.dcgm.installed",
        "bool",
        "",
        "NVIDIA DCGM is installed (its library or nv-hostengine found)",
    ),
    FactSpec("monitoring.dcgm.library", "str", "", "libdcgm.so.N as the loader cache lists it"),
    FactSpec("monitoring.dcgm.hostengine", "str", "", "where nv-hostengine (DCGM's daemon) is installed"),
    FactSpec("monitoring.dcgm.dcgmi", "str", "", "where dcgmi (DCGM's command-line client) is installed"),
    FactSpec(
        "monitoring.dcgm.hostengine_listening",
        "bool",
        "",
        "a socket listens on DCGM's host engine port, 5555, where dcgmi connects by default (/proc/net/tcp, "
        "tcp6: this network namespace)",
    ),
)
PROBE = ProbeSpec("monitoring")

DCGM_SONAME = re.compile(r"libdcgm\.so\.[0-9]{1,4}")
HOSTENGINE = "nv-hostengine"
DCGMI = "dcgmi"
HOSTENGINE_PORT = 5555
TCP_TABLES = ("/proc/net/tcp", "/proc/net/tcp6")
BIN_DIRS = ("/usr/bin", "/usr/sbin", "/usr/local/bin")
NOT_INSTALLED = "not installed"


# --- pure parsing ---------------------------------------------------------------------------------------


def find_dcgm_library(entries: list[tuple[str, str]]) -> Optional[str]:
    """The path of the first libdcgm.so.N in the loader cache's (soname, path) entries, or None."""
    return next((path for soname, path in entries if DCGM_SONAME.fullmatch(soname)), None)


def listening_ports(text: str) -> set[int]:
    """The local ports of the LISTEN sockets (st 0A) in a /proc/net/tcp or tcp6 table, whose lines read
    "   0: 0100007F:15B3 00000000:0000 0A ..." (local address:port, remote, state, all hex)."""
    ports = set()
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 4 and fields[3] == "0A" and ":" in fields[1]:
            try:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
            except ValueError:
                continue
    return ports


# --- probe ----------------------------------------------------------------------------------------------


def _installed(host: Any, program: str) -> tuple[Optional[str], Optional[str]]:
    """(where the program is, None), or (None, why a directory could not be searched), or (None, None)."""
    failure = None
    for directory in BIN_DIRS:
        try:
            names = host.listdir(directory)
        except HostError as e:
            if e.reason != NOT_FOUND:
                failure = failure or e.reason
            continue
        if program in names:
            return f"{directory}/{program}", None
    return None, failure


def _listening(host: Any) -> Fact:
    """Whether a socket listens on the host engine's port, from whichever TCP tables can be read."""
    source = ", ".join(TCP_TABLES)
    failure, read = None, False
    for path in TCP_TABLES:
        try:
            text = host.read(path)
        except HostError as e:
            if e.reason != NOT_FOUND:  # no tcp6 table: a kernel without IPv6
                failure = failure or e.reason
            continue
        read = True
        if HOSTENGINE_PORT in listening_ports(text):
            return known(True, f"{path} (port {HOSTENGINE_PORT})")
    if failure or not read:
        return unknown(failure or NOT_FOUND, source)
    return known(False, f"{source} (port {HOSTENGINE_PORT})")


def probe(host: Any) -> dict[str, Fact]:
    entries, ldconfig_error = ldconfig_entries(host)
    library = find_dcgm_library(entries)
    hostengine, bin_error = _installed(host, HOSTENGINE)
    dcgmi, dcgmi_error = _installed(host, DCGMI)
    bins = ", ".join(BIN_DIRS)
    facts = {
        "monitoring.dcgm.library": (
            known(library, "ldconfig") if library else unknown(ldconfig_error or NOT_INSTALLED, "ldconfig")
        ),
        "monitoring.dcgm.hostengine": (
            known(hostengine, hostengine) if hostengine else unknown(bin_error or NOT_INSTALLED, bins)
        ),
    }
    if library or hostengine:
        installed = known(True, library or hostengine or "")
    elif ldconfig_error or bin_error:
        # Not found where we could look, but one place could not be looked at: "not installed" is a guess.
        installed = unknown(ldconfig_error or bin_error or "", f"ldconfig, {bins}")
    else:
        installed = known(False, f"ldconfig, {bins}")
    facts["monitoring.dcgm.installed"] = installed
    facts["monitoring.dcgm.dcgmi"] = (
        known(dcgmi, dcgmi) if dcgmi else unknown(dcgmi_error or NOT_INSTALLED, bins)
    )
    facts["monitoring.dcgm.hostengine_listening"] = _listening(host)
    return facts
