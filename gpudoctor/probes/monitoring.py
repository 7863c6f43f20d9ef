"""The monitoring probe: whether NVIDIA DCGM (Data Center GPU Manager) is installed.

Produces `monitoring.*`. DCGM's packages put its library (libdcgm.so.N) where the loader cache lists it and
its daemon, nv-hostengine, in a system bin directory; either one shows DCGM is installed. Nothing is run:
nv-hostengine started without arguments becomes a daemon, so it is looked for, never called.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from ..facts import Fact, known, unknown
from ..host.base import NOT_FOUND, HostError
from .libraries import ldconfig_entries

DCGM_SONAME = re.compile(r"libdcgm\.so\.[0-9]{1,4}")
HOSTENGINE = "nv-hostengine"
BIN_DIRS = ("/usr/bin", "/usr/sbin", "/usr/local/bin")
NOT_INSTALLED = "not installed"


# --- pure parsing ---------------------------------------------------------------------------------------


def find_dcgm_library(entries: list[tuple[str, str]]) -> Optional[str]:
    """The path of the first libdcgm.so.N in the loader cache's (soname, path) entries, or None."""
    return next((path for soname, path in entries if DCGM_SONAME.fullmatch(soname)), None)


# --- probe ----------------------------------------------------------------------------------------------


def _hostengine(host: Any) -> tuple[Optional[str], Optional[str]]:
    """(where nv-hostengine is, None), or (None, why a directory could not be searched), or (None, None)."""
    failure = None
    for directory in BIN_DIRS:
        try:
            names = host.listdir(directory)
        except HostError as e:
            if e.reason != NOT_FOUND:
                failure = failure or e.reason
            continue
        if HOSTENGINE in names:
            return f"{directory}/{HOSTENGINE}", None
    return None, failure


def probe(host: Any) -> dict[str, Fact]:
    entries, ldconfig_error = ldconfig_entries(host)
    library = find_dcgm_library(entries)
    hostengine, bin_error = _hostengine(host)
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
    return facts
