"""Where NCCL would find its network plugin, the way it looks for one (used by the libraries probe).

NCCL dlopen()s `libnccl-net.so` at init; with NCCL_NET_PLUGIN=X it tries `X` and then `libnccl-net-X.so`
instead, and never the plain name (NVIDIA/nccl@v2.23.4-1:src/net.cc openNetPluginLib; the same names in
@v2.30.7-1:src/plugin/plugin_open.cc openPluginLib, which skips the second name when X has a `/` or is
itself a lib*.so name). A plugin found comes first: NCCL uses it whenever it has a device, before its own
IB and Socket (src/net.cc ncclNetInit, ncclNets[0]), and logs `Using network <its name>`, e.g. IBext for
the HPC-X nccl-rdma-sharp plugin. dlopen() looks for a bare name in the LD_LIBRARY_PATH directories, the
loader cache and the default directories (ld.so(8)); the RPATH/RUNPATH of the library calling it is not
read here. STATIC_PLUGIN names a plugin linked into the program: not looked for.
"""

from __future__ import annotations

import os
from typing import Any, Optional

from ..host.base import NOT_FOUND, HostError

PLAIN = "libnccl-net.so"
DEFAULT_DIRS = ("/lib", "/usr/lib", "/lib64", "/usr/lib64")  # ld.so(8): the trusted default path


def plugin_names(setting: Optional[str]) -> tuple[str, ...]:
    """The file names NCCL dlopen()s, in order, for NCCL_NET_PLUGIN's value (None or "": unset)."""
    if not setting:
        return (PLAIN,)
    if "/" in setting or (setting.startswith("lib") and setting.endswith(".so")):
        return (setting,)
    return (setting, f"libnccl-net-{setting}.so")


def find(
    host: Any,
    setting: Optional[str],
    cache: list[tuple[str, str]],
    cache_error: Optional[str],
    ld_dirs: list[str],
) -> tuple[Optional[str], Optional[str]]:
    """(the path of the plugin NCCL would load, None) or (None, None) when there is none, or (None, why it
    cannot be told). `cache` is the loader cache's (soname, path), `ld_dirs` LD_LIBRARY_PATH's directories."""
    if setting and setting.strip().upper() == "STATIC_PLUGIN":
        return None, "NCCL_NET_PLUGIN=STATIC_PLUGIN: a plugin linked into the program is not looked for"
    unsure: list[str] = []
    for name in plugin_names(setting):
        if "/" in name:  # a path: dlopen opens that file alone
            found, why = _in_dir(host, os.path.dirname(name) or ".", os.path.basename(name))
            if found:
                return name, None
            unsure += [why] if why else []
            continue
        for d in ld_dirs:
            found, why = _in_dir(host, d, name)
            if found:
                return f"{d}/{name}", None
            unsure += [why] if why else []
        cached = next((path for soname, path in cache if soname == name), None)
        if cached:
            return cached, None
        if cache_error:
            unsure.append(f"the loader cache: {cache_error}")
        for d in DEFAULT_DIRS:
            found, why = _in_dir(host, d, name)
            if found:
                return f"{d}/{name}", None
            unsure += [why] if why else []
    if unsure:
        return None, "; ".join(dict.fromkeys(unsure))
    return None, None


def _in_dir(host: Any, directory: str, name: str) -> tuple[bool, Optional[str]]:
    """(whether `directory` holds `name`, why it could not be listed); a missing directory holds nothing."""
    try:
        return name in host.listdir(directory), None
    except HostError as e:
        return False, None if e.reason == NOT_FOUND else f"{directory}: {e.reason}"
