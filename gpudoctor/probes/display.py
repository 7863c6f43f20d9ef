"""The display: which monitors are plugged in, which display servers hold a GPU, and how much of it.

Produces `display.*` and `display_gpus[]`. Two questions a workstation asks of it:

- is the box headless? Then nothing keeps the NVIDIA driver's GPU state loaded between two CUDA programs,
  and without the persistence daemon every job pays the GPU's initialisation again (NVIDIA, Driver
  Persistence, "Background": "compute-only environments, where X is not used [...] long load times for each
  CUDA job, on the order of seconds"). Read from the DRM connectors (/sys/class/drm/card<N>-<connector>/status
  is `connected`, `disconnected` or `unknown`: include/drm/drm_connector.h, enum drm_connector_status) and
  from the processes NVML lists on a GPU: a display server (Xorg, gnome-shell, kwin, ...) that holds one is a
  display, whatever the connectors say (a remote or virtual desktop).
- does the desktop hold most of a small GPU? Xorg, the compositor and the greeter are graphics processes
  NVML lists with the memory they hold (gpu_processes[], the leftovers probe); what they hold no CUDA
  program can have.

Only reads: one directory listing and one small file per connector; the GPU processes come from the
leftovers probe's facts (derive()).
"""

from __future__ import annotations

from typing import Any, Optional

from ..facts import Fact, Facts, FactSpec, collected, known, list_facts, unknown
from ..host.base import NOT_FOUND, HostError
from . import ProbeSpec

FACT_SPECS: tuple[FactSpec, ...] = (
    FactSpec(
        "display.connectors",
        "list[str]",
        "",
        "DRM connectors with a display plugged in: /sys/class/drm/card<N>-<connector>/status reads "
        "`connected` (e.g. card1-HDMI-A-1); empty on a box with no monitor, or with no DRM driver",
    ),
    FactSpec(
        "display.servers",
        "list[str]",
        "",
        "derived: display servers, compositors and greeters (Xorg, Xwayland, gnome-shell, kwin_wayland, "
        "sddm-greeter, ...) among the processes NVML lists on a GPU (gpu_processes[].name)",
    ),
    FactSpec(
        "display.headless",
        "bool",
        "",
        "derived: no DRM connector has a display connected and no display server holds a GPU",
    ),
    FactSpec("display_gpus.count", "int", "", "derived: GPUs the display memory reading covers (gpus.count)"),
    FactSpec("display_gpus[].index", "int", "", "derived: NVML index (gpus[].index)"),
    FactSpec("display_gpus[].name", "str", "", "derived: product name (gpus[].name)"),
    FactSpec(
        "display_gpus[].total_bytes",
        "int",
        "bytes",
        "derived: the GPU's framebuffer memory (gpus[].memory.total_bytes)",
    ),
    FactSpec(
        "display_gpus[].display_bytes",
        "int",
        "bytes",
        "derived: GPU memory the display servers on this GPU hold (their gpu_processes[].used_bytes, summed)",
    ),
    FactSpec(
        "display_gpus[].display_share",
        "float",
        "",
        "derived: display_bytes / total_bytes, the share of the GPU's memory the desktop holds (0 to 1)",
    ),
    FactSpec(
        "display_gpus[].display_processes",
        "list[str]",
        "",
        "derived: the display servers on this GPU, as `name (pid)`",
    ),
)
PROBE = ProbeSpec("display")

DRM = "/sys/class/drm"
# comm (/proc/<pid>/comm, at most 15 characters: TASK_COMM_LEN 16) of the processes that draw the desktop:
# X servers, Wayland compositors and desktop shells, and the display managers' greeters. The names are those
# nvidia-smi and NVML list in real reports: /usr/lib/xorg/Xorg and /usr/bin/gnome-shell (NVIDIA/nvidia-docker
# #1264, #1663), cosmic-comp (pop-os/cosmic-epoch#1591), cinnamon (linuxmint/cinnamon#3892), deepin-wm
# (martyr-deepin/deepin-wm#62); the others are the binaries of the desktops of the major distributions.
DISPLAY_SERVERS = frozenset(
    {
        "Xorg", "X", "Xwayland", "gnome-shell", "kwin_wayland", "kwin_x11", "plasmashell", "sddm-greeter",
        "sddm-greeter-qt", "gdm-wayland-ses", "gdm-x-session", "cinnamon", "muffin", "mutter", "marco",
        "xfwm4", "compiz", "deepin-wm", "kwin", "cosmic-comp", "sway", "Hyprland", "weston", "niri",
        "labwc", "wayfire", "gamescope",
    }
)  # fmt: skip
MAX_CONNECTORS = 256


# --- pure parsers --------------------------------------------------------------------------------------


def is_connector(name: str) -> bool:
    """A connector's directory in /sys/class/drm: card<N>-<type>-<n> (card1-HDMI-A-1, card0-eDP-1); not the
    cards themselves (card0), their render nodes (renderD128) nor `version`."""
    card, dash, rest = name.partition("-")
    return bool(dash and rest) and card.startswith("card") and card[4:].isdigit()


def is_display_server(name: str) -> bool:
    return name in DISPLAY_SERVERS


# --- probe ----------------------------------------------------------------------------------------------


def probe(host: Any) -> dict[str, Fact]:
    return {"display.connectors": connectors(host)}


def connectors(host: Any) -> Fact:
    """The connected DRM connectors; unknown when the list or a status cannot be read (a status that cannot
    be read might be the one display)."""
    src = f"{DRM}/card*-*/status"
    try:
        names = sorted(n for n in host.listdir(DRM) if is_connector(n))[:MAX_CONNECTORS]
    except HostError as e:
        if e.reason == NOT_FOUND:  # no DRM driver at all (a container without /sys/class/drm, a bare server)
            return known([], DRM)
        return unknown(f"{DRM}: {e.reason}", src)
    found = []
    for name in names:
        path = f"{DRM}/{name}/status"
        try:
            status = host.read(path).strip()
        except HostError as e:
            if e.reason == NOT_FOUND:
                continue  # unplugged (a dock, an MST hub) between the listing and the read
            return unknown(f"{path}: {e.reason}", src)
        if status == "connected":
            found.append(name)
    return known(found, src)


# --- derived facts --------------------------------------------------------------------------------------


def derive(facts: Facts) -> dict[str, Fact]:
    """display.servers, display.headless and display_gpus[] (gpudoctor/derive.py runs it)."""
    # Only where the display probe ran: a profile without it (preflight) is not asked about the desktop.
    if not collected(facts, "gpu_processes.count", "gpus.count", "display.connectors"):
        return {}
    servers = _servers(facts)
    headless = _headless(facts.get("display.connectors"), servers)
    out = {"display.servers": servers, "display.headless": headless}
    out.update(_display_gpus(facts))
    return out


def _processes(facts: Facts) -> tuple[Optional[list[tuple[int, str, Optional[int], int]]], str]:
    """[(gpu, name, used bytes or None, pid)] of the display servers NVML lists, or (None, why unknown)."""
    count = facts.get("gpu_processes.count")
    if not count.known:
        return None, count.unknown or "unknown"
    found = []
    for i in range(facts.count("gpu_processes")):
        name = facts.get(f"gpu_processes[{i}].name")
        if not name.known:
            # A process whose name cannot be read may be the display server: the answer is unknown.
            return None, f"process {facts.value(f'gpu_processes[{i}].pid')}: {name.unknown}"
        if not is_display_server(str(name.value)):
            continue
        used = facts.get(f"gpu_processes[{i}].used_bytes")
        found.append(
            (
                facts.value(f"gpu_processes[{i}].gpu"),
                str(name.value),
                used.value if used.known else None,
                facts.value(f"gpu_processes[{i}].pid"),
            )
        )
    return found, ""


def _servers(facts: Facts) -> Fact:
    src = "derived:gpu_processes[].name"
    found, why = _processes(facts)
    if found is None:
        return unknown(why, src)
    return known(sorted({name for _, name, _, _ in found}), src)


def _headless(connected: Fact, servers: Fact) -> Fact:
    src = "derived:display.connectors, display.servers"
    if connected.known and connected.value:
        return known(False, src)
    if servers.known and servers.value:
        return known(False, src)
    if not connected.known:
        return unknown(connected.unknown or "unknown", src)
    if not servers.known:
        return unknown(servers.unknown or "unknown", src)
    return known(True, src)


def _display_gpus(facts: Facts) -> dict[str, Fact]:
    src = "derived:gpu_processes[], gpus[].memory.total_bytes"
    gpus = facts.get("gpus.count")
    if not gpus.known:
        return {"display_gpus.count": unknown(gpus.unknown or "unknown", src)}
    found, why = _processes(facts)
    members = []
    for i in range(facts.count("gpus")):
        index = facts.get(f"gpus[{i}].index")
        member: dict[str, Fact] = {
            "index": index,
            "name": facts.get(f"gpus[{i}].name"),
            "total_bytes": facts.get(f"gpus[{i}].memory.total_bytes"),
        }
        if found is None:
            member["display_bytes"] = member["display_share"] = unknown(why, src)
            member["display_processes"] = unknown(why, src)
            members.append(member)
            continue
        here = [(name, used, pid) for gpu, name, used, pid in found if gpu == index.value]
        member["display_processes"] = known([f"{name} ({pid})" for name, _, pid in here], src)
        missing = [f"{name} ({pid})" for name, used, pid in here if used is None]
        if missing:
            why_bytes = f"NVML does not say how much memory {missing[0]} holds"
            member["display_bytes"] = member["display_share"] = unknown(why_bytes, src)
        else:
            total_used = sum(used for _, used, _ in here if used is not None)
            member["display_bytes"] = known(total_used, src)
            member["display_share"] = _share(total_used, member["total_bytes"], src)
        members.append(member)
    return list_facts("display_gpus", members, src)


def _share(used: int, total: Fact, src: str) -> Fact:
    if not total.known:
        return unknown(total.unknown or "unknown", src)
    if not isinstance(total.value, int) or total.value <= 0:
        return unknown(f"unexpected memory size {total.value!r}"[:80], src)
    return known(round(used / total.value, 4), src)
