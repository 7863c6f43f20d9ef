"""The display probe (gpudoctor/probes/display.py): connected monitors, display servers on a GPU, and the
memory they hold."""

from __future__ import annotations

from gpudoctor.engine.rule_tests import build_facts
from gpudoctor.probes import display
from gpudoctor.probes.display import is_connector

from conftest import fake_host

DRM = "/sys/class/drm"
# `grep . /sys/class/drm/card*-*/status` on a Lenovo P1 (Quadro P1000 Mobile) started without its dock: the
# integrated GPU's panel and the NVIDIA GPU's HDMI port connected (freedesktop.org bug 110993, 2019-06-25,
# https://bugs.freedesktop.org/show_bug.cgi?id=110993).
P1_STATUS = {
    "card0-eDP-1": "connected",
    "card1-DP-1": "disconnected",
    "card1-DP-2": "disconnected",
    "card1-HDMI-A-1": "connected",
    "card1-eDP-2": "disconnected",
}
# /sys/class/drm also holds the cards, their render nodes and a version file (drivers/gpu/drm/drm_sysfs.c).
OTHER_ENTRIES = ["card0", "card1", "renderD128", "renderD129", "version"]
MIB = 1024 * 1024


def drm_host(statuses: dict[str, str], **extra) -> object:
    files = {f"{DRM}/{name}/status": f"{status}\n" for name, status in statuses.items()}
    return fake_host(dirs={DRM: sorted([*statuses, *OTHER_ENTRIES])}, files=files, **extra)


def test_connector_names():
    assert is_connector("card1-HDMI-A-1") and is_connector("card0-eDP-1")
    assert not any(is_connector(n) for n in OTHER_ENTRIES)


def test_connected_connectors_of_a_laptop_with_a_monitor():
    fact = display.probe(drm_host(P1_STATUS))["display.connectors"]
    assert fact.value == ["card0-eDP-1", "card1-HDMI-A-1"]


def test_every_port_disconnected_is_no_display():
    statuses = {name: "disconnected" for name in P1_STATUS}
    assert display.probe(drm_host(statuses))["display.connectors"].value == []


def test_no_drm_at_all_is_no_display():
    host = fake_host(dirs={DRM: {"error": "not found"}})
    fact = display.probe(host)["display.connectors"]
    assert fact.known and fact.value == []


def test_a_status_that_cannot_be_read_is_unknown_not_disconnected():
    host = fake_host(
        dirs={DRM: ["card1", "card1-HDMI-A-1"]},
        read_errors={f"{DRM}/card1-HDMI-A-1/status": "no permission"},
    )
    fact = display.probe(host)["display.connectors"]
    assert fact.unknown == f"{DRM}/card1-HDMI-A-1/status: no permission"


def test_a_connector_gone_between_listing_and_reading_is_skipped():
    host = fake_host(
        dirs={DRM: ["card1", "card1-DP-1", "card1-HDMI-A-1"]},
        files={f"{DRM}/card1-HDMI-A-1/status": "connected\n"},
        read_errors={f"{DRM}/card1-DP-1/status": "not found"},
    )
    assert display.probe(host)["display.connectors"].value == ["card1-HDMI-A-1"]


# The GPU processes of an idle GNOME desktop as `nvidia-smi -q` lists them (NVIDIA/nvidia-docker#1264,
# turn 5): PID 1248 /usr/lib/xorg/Xorg 28 MiB and PID 1535 /usr/bin/gnome-shell 46 MiB, both type G; NVML
# names them by /proc/<pid>/comm (Xorg, gnome-shell). A third, compute process holds 2 GiB.
def desktop_facts(**more) -> object:
    flat = {
        "gpus.count": 1,
        "gpus[0].index": 0,
        "gpus[0].name": "NVIDIA GeForce RTX 4060",
        "gpus[0].memory.total_bytes": 8188 * MIB,
        "gpu_processes.count": 3,
        "gpu_processes[0].gpu": 0,
        "gpu_processes[0].pid": 1248,
        "gpu_processes[0].name": "Xorg",
        "gpu_processes[0].type": "graphics",
        "gpu_processes[0].used_bytes": 28 * MIB,
        "gpu_processes[1].gpu": 0,
        "gpu_processes[1].pid": 1535,
        "gpu_processes[1].name": "gnome-shell",
        "gpu_processes[1].type": "graphics",
        "gpu_processes[1].used_bytes": 46 * MIB,
        "gpu_processes[2].gpu": 0,
        "gpu_processes[2].pid": 2222,
        "gpu_processes[2].name": "python3",
        "gpu_processes[2].type": "compute",
        "gpu_processes[2].used_bytes": 2048 * MIB,
    }
    flat.update(more)
    return build_facts(flat)


def test_display_servers_and_their_memory_on_each_gpu():
    out = display.derive(desktop_facts(**{"display.connectors": ["card1-HDMI-A-1"]}))
    assert out["display.servers"].value == ["Xorg", "gnome-shell"]
    assert out["display.headless"].value is False
    assert out["display_gpus.count"].value == 1
    assert out["display_gpus[0].display_bytes"].value == 74 * MIB
    assert out["display_gpus[0].display_share"].value == round(74 / 8188, 4)
    assert out["display_gpus[0].display_processes"].value == ["Xorg (1248)", "gnome-shell (1535)"]


def test_a_display_server_on_a_gpu_is_a_display_without_a_connector():
    # A remote desktop: nothing plugged in, yet Xorg holds the GPU open.
    out = display.derive(desktop_facts(**{"display.connectors": []}))
    assert out["display.headless"].value is False


def test_headless_no_connector_and_no_display_server():
    facts = build_facts(
        {
            "gpus.count": 1,
            "gpus[0].index": 0,
            "gpus[0].name": "NVIDIA H200",
            "gpus[0].memory.total_bytes": 150754820096,
            "gpu_processes.count": 0,
            "display.connectors": [],
        }
    )
    out = display.derive(facts)
    assert out["display.headless"].value is True
    assert out["display_gpus[0].display_bytes"].value == 0
    assert out["display_gpus[0].display_processes"].value == []


def test_a_process_whose_name_cannot_be_read_leaves_headless_unknown():
    why = "process not visible here (it exited since NVML listed it, or /proc hides other users' processes)"
    facts = desktop_facts(**{"display.connectors": [], "gpu_processes[0].name": {"unknown": why}})
    out = display.derive(facts)
    assert out["display.servers"].unknown == f"process 1248: {why}"
    assert out["display.headless"].unknown == f"process 1248: {why}"
    assert out["display_gpus[0].display_share"].unknown == f"process 1248: {why}"


def test_memory_nvml_does_not_report_leaves_the_share_unknown():
    facts = desktop_facts(
        **{
            "display.connectors": ["card1-HDMI-A-1"],
            "gpu_processes[0].used_bytes": {"unknown": "not available"},
        }
    )
    out = display.derive(facts)
    why = "NVML does not say how much memory Xorg (1248) holds"
    assert out["display_gpus[0].display_share"].unknown == why


def test_nothing_derived_without_the_gpu_processes():
    assert display.derive(build_facts({"display.connectors": []})) == {}


def test_nothing_derived_where_the_display_probe_did_not_run():
    # preflight runs the leftovers probe, not this one: no display facts there.
    assert display.derive(desktop_facts()) == {}
