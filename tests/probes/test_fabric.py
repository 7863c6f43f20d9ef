"""The fabric probe: NVML's per-GPU NVLink fabric state, NVSwitch devices on the PCI bus, and the Fabric
Manager and IMEX services as systemd reports them.

Formats, as their programs print them:
  * `systemctl show -p Id -p LoadState -p ActiveState UNIT...`: one `Key=Value` block per unit, blank lines
    between; a unit systemd does not know is `LoadState=not-found` with `ActiveState=inactive` (what
    `systemctl is-active` also prints for a unit that exists and is stopped).
  * `systemctl` where systemd is not PID 1 (this development container, most containers), exit status 1:
    "System has not been booted with systemd as init system (PID 1). Can't operate." and "Failed to connect
    to bus: Host is down" on stderr; /run/systemd exists there, without `system`.
  * `nv-fabricmanager --version`: "Fabric Manager version is : 450.102.04" (as a user's shell session on a
    DGX A100 shows it).
  * sysfs `class` files: "0x068000" for an NVSwitch (bridge, other), "0x030200" for an H100 (3D controller).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpudoctor.engine.evaluate import evaluate_rule
from gpudoctor.facts import Facts, known
from gpudoctor.host.base import NOT_RECORDED, NvmlError
from gpudoctor.host.snapshot import Recording, RecordingHost, SnapshotHost, cluster_uuids, redact
from gpudoctor.pipeline.verdict import decide, unknown_errors
from gpudoctor.probes import fabric as fb
from gpudoctor.probes.gpus import Implausible

import conftest
from conftest import fake_host

SHOW = list(fb.SYSTEMCTL)
FM_ACTIVE = (
    "Id=nvidia-fabricmanager.service\nLoadState=loaded\nActiveState=active\n\n"
    "Id=nvidia-imex.service\nLoadState=not-found\nActiveState=inactive\n"
)
NO_SYSTEMD_STDERR = (
    "System has not been booted with systemd as init system (PID 1). Can't operate.\n"
    "Failed to connect to bus: Host is down\n"
)
FM_VERSION_TEXT = "Fabric Manager version is : 450.102.04\n"
HEALTHY_MASK = 0x1AA  # DEGRADED_BW FALSE, ROUTE_RECOVERY FALSE, ROUTE_UNHEALTHY FALSE, ACCESS_TIMEOUT FALSE,
# INCORRECT_CONFIGURATION NONE: (2 << 0) | (2 << 2) | (2 << 4) | (2 << 6) | (1 << 8)

# Fabric Manager active at the driver's version, no IMEX: the services of a healthy HGX node.
SERVICES_UP = {
    "fabric_manager.installed": True,
    "fabric_manager.state": "active",
    "fabric_manager.version": "450.102.04",
    "imex.installed": False,
    "imex.state": "not installed",
}


def v3(state=3, status=0, clique=0, mask=HEALTHY_MASK, summary=1, uuid=None) -> dict:
    """nvmlGpuFabricInfo_v3_t as the live Host makes it plain (nvml_live.to_plain)."""
    return {"version": 0x3000028, "clusterUuid": uuid or [0] * 16, "status": status, "cliqueId": clique,
            "state": state, "healthMask": mask, "healthSummary": summary}  # fmt: skip


def err(name: str) -> dict:
    return {"error": name, "msg": ""}


def _values(facts):
    return {k: (f.value if f.known else ("unknown", f.unknown)) for k, f in facts.items()}


def _pci(n_gpus: int, n_switches: int) -> tuple[dict, dict]:
    files, names = {}, []
    for i in range(n_switches):
        names.append(f"0000:0{5 + i}:00.0")
        files[f"/sys/bus/pci/devices/{names[-1]}/vendor"] = "0x10de\n"
        files[f"/sys/bus/pci/devices/{names[-1]}/class"] = "0x068000\n"
    for i in range(n_gpus):
        names.append(f"0000:{0x18 + i:02x}:00.0")
        files[f"/sys/bus/pci/devices/{names[-1]}/vendor"] = "0x10de\n"
        files[f"/sys/bus/pci/devices/{names[-1]}/class"] = "0x030200\n"
    names.append("0000:00:00.0")  # the host bridge: Intel, class 0x060000
    files["/sys/bus/pci/devices/0000:00:00.0/vendor"] = "0x8086\n"
    files["/sys/bus/pci/devices/0000:00:00.0/class"] = "0x060000\n"
    return files, {"/sys/bus/pci/devices": sorted(names)}


def host(
    devices: dict,
    switches: int = 0,
    systemd: object = ("system", "journal"),
    show: object = FM_ACTIVE,
    imex_dir: object = "not found",
    version: object = FM_VERSION_TEXT,
):
    """A Host for the probe: `devices` as nvml.json's per-GPU tables; `systemd` the listing of /run/systemd
    (a reason string for a failed listing); `show` systemctl's stdout, or (rc, stderr), or the entry to
    record; `imex_dir` the listing of /etc/nvidia-imex or a reason; `version` nv-fabricmanager's stdout."""
    files, dirs = _pci(len(devices), switches)
    dirs[fb.SYSTEMD_DIR] = list(systemd) if isinstance(systemd, tuple) else {"error": systemd}
    dirs[fb.IMEX_DIR] = list(imex_dir) if isinstance(imex_dir, tuple) else {"error": imex_dir}
    commands = []
    if isinstance(show, str):
        commands.append({"argv": SHOW, "rc": 0, "stdout": show, "stderr": ""})
    elif isinstance(show, tuple):
        commands.append({"argv": SHOW, "rc": show[0], "stdout": "", "stderr": show[1]})
    elif isinstance(show, dict):
        commands.append({"argv": SHOW, **show})
    if isinstance(version, str):
        commands.append({"argv": list(fb.FM_VERSION), "rc": 0, "stdout": version, "stderr": ""})
    return fake_host(
        files=files,
        dirs=dirs,
        commands=commands,
        nvml_system={"nvmlDeviceGetCount": len(devices)},
        nvml_devices={str(i): table for i, table in enumerate(devices)},
    )


# --- pure decoding --------------------------------------------------------------------------------------


def test_fabric_states_and_return_names_as_nvml_h_names_them():
    assert [fb.fabric_state(n) for n in range(4)] == [
        "not supported",
        "not started",
        "in progress",
        "completed",
    ]
    with pytest.raises(Implausible):
        fb.fabric_state(4)
    assert fb.return_name(0) == "NVML_SUCCESS"
    assert fb.return_name(27) == "NVML_ERROR_NOT_READY"
    assert fb.return_name(999) == "NVML_ERROR_UNKNOWN"
    assert fb.return_name(31) == "nvmlReturn_t 31"  # a code newer than this table: said as a number
    with pytest.raises(TypeError):
        fb.return_name("0")


def test_health_mask_and_summary_decode_only_what_pynvml_defines():
    assert fb.bandwidth(HEALTHY_MASK) == "full"
    assert fb.bandwidth(0x1A9) == "degraded"  # NVML_GPU_FABRIC_HEALTH_MASK_DEGRADED_BW_TRUE
    assert fb.bandwidth(0) == "not supported"
    with pytest.raises(Implausible):
        fb.bandwidth(0x3)  # no such value of the 2-bit field
    assert [fb.health_summary(n) for n in range(4)] == [
        "not supported",
        "healthy",
        "unhealthy",
        "limited capacity",
    ]


def test_systemctl_show_and_unit_states():
    units = fb.parse_systemctl_show(FM_ACTIVE)
    fm, imex = "nvidia-fabricmanager.service", "nvidia-imex.service"
    assert units == {
        fm: {"Id": fm, "LoadState": "loaded", "ActiveState": "active"},
        imex: {"Id": imex, "LoadState": "not-found", "ActiveState": "inactive"},
    }
    assert fb.unit_state(units["nvidia-fabricmanager.service"]) == "active"
    assert fb.unit_state(units["nvidia-imex.service"]) == "not installed"  # not "inactive", as is-active says
    assert fb.unit_state({"LoadState": "masked", "ActiveState": "inactive"}) == "masked"
    assert fb.unit_state({"LoadState": "loaded", "ActiveState": "failed"}) == "failed"
    with pytest.raises(ValueError):
        fb.unit_state({"LoadState": "loaded", "ActiveState": ""})
    assert fb.parse_systemctl_show(NO_SYSTEMD_STDERR) == {}


def test_fabric_manager_version_line():
    assert fb.parse_fm_version(FM_VERSION_TEXT) == "450.102.04"
    assert fb.parse_fm_version("\n\n\tFabric Manager version is : 535.161.08\n\n") == "535.161.08"
    assert fb.parse_fm_version("nv-fabricmanager: unrecognized option '--version'\n") is None


def test_nvswitch_is_an_nvidia_other_bridge():
    assert fb.is_nvswitch("0x10de 0x068000")
    assert not fb.is_nvswitch("0x10de 0x030200")  # a GPU
    assert not fb.is_nvswitch("0x10de 0x060400")  # a PCI bridge (Grace's root ports)
    assert not fb.is_nvswitch("0x15b3 0x068000")  # not NVIDIA


# --- the probe through a Host -------------------------------------------------------------------------


def test_hgx_h100_with_fabric_manager_running():
    facts = _values(fb.probe(host([{"nvmlDeviceGetGpuFabricInfoV(v3)": v3(clique=7)}] * 2, switches=4)))
    assert facts == {
        "fabric.gpus.count": 2,
        **{f"fabric.gpus[{i}].{k}": v for i in range(2) for k, v in (
            ("index", i), ("state", "completed"), ("status", "NVML_SUCCESS"), ("clique_id", 7),
            ("health_mask", HEALTHY_MASK), ("bandwidth", "full"), ("health_summary", "healthy"))},
        "fabric.nvswitch_count": 4,
        "fabric.nvswitch_system": True,
        **SERVICES_UP,
    }  # fmt: skip


def test_a_fabric_not_up_yet_leaves_status_and_clique_unset():
    facts = _values(fb.probe(host([{"nvmlDeviceGetGpuFabricInfoV(v3)": v3(state=1, status=0)}], switches=4)))
    assert facts["fabric.gpus[0].state"] == "not started"
    why = ("unknown", "set once the fabric state is completed (not started)")
    assert (facts["fabric.gpus[0].status"], facts["fabric.gpus[0].clique_id"]) == (why, why)


def test_pcie_gpu_in_a_container_is_known_to_have_no_fabric():
    """One PCIe GPU (NVML answers NotSupported), no NVSwitch, and systemd not visible: nothing is run, the
    services are unknown with that reason, and every fabric rule passes (none is unknown)."""
    h = host([{"nvmlDeviceGetGpuFabricInfoV(v3)": err("NVMLError_NotSupported"),
               "nvmlDeviceGetGpuFabricInfoV(v2)": err("NVMLError_NotSupported"),
               "nvmlDeviceGetGpuFabricInfo": err("NVMLError_NotSupported")}],
             systemd="not found", show=None, version=None)  # fmt: skip
    facts = fb.probe(h)
    values = _values(facts)
    assert values["fabric.gpus[0].state"] == "not supported"
    assert facts["fabric.gpus[0].state"].source == "nvml:nvmlDeviceGetGpuFabricInfo (not supported)"
    assert values["fabric.gpus[0].status"] == ("unknown", fb.NO_FABRIC)
    assert (values["fabric.nvswitch_count"], values["fabric.nvswitch_system"]) == (0, False)
    for name in fb.FM_FACTS + ("imex.installed", "imex.state"):
        assert values[name] == ("unknown", fb.NO_SYSTEMD), name
    from gpudoctor.engine.loader import load_rules

    all_facts = Facts({**facts, "driver.version": known("580.159.04", "test")})
    rules = [r for r in load_rules([]) if r.file.endswith("fabric.yaml")]
    assert sorted(r.id for r in rules) == [
        "GD-FABRIC-001", "GD-FABRIC-002", "GD-FABRIC-003", "GD-FABRIC-004", "GD-FABRIC-005", "GD-IMEX-001",
    ]  # fmt: skip
    assert {r.id: evaluate_rule(r, all_facts).status for r in rules} == dict.fromkeys(
        (r.id for r in rules), "passed"
    )


V2_DEGRADED = {k: v for k, v in v3(mask=0x1A9).items() if k != "healthSummary"}


def test_older_structures_are_asked_in_turn():
    facts = _values(fb.probe(host([
        # an older driver: the v3 version word is refused, the v2 structure answered
        {"nvmlDeviceGetGpuFabricInfoV(v3)": err("NVMLError_ArgumentVersionMismatch"),
         "nvmlDeviceGetGpuFabricInfoV(v2)": V2_DEGRADED},
        # no V call at all: the unversioned structure
        {"nvmlDeviceGetGpuFabricInfoV(v3)": err("NVMLError_FunctionNotFound"),
         "nvmlDeviceGetGpuFabricInfoV(v2)": err("NVMLError_FunctionNotFound"),
         "nvmlDeviceGetGpuFabricInfo": {"clusterUuid": [0] * 16, "status": 0, "cliqueId": 0, "state": 3}},
        # a driver without either call: on no fabric NVML can report
        {"nvmlDeviceGetGpuFabricInfoV(v3)": err("NVMLError_FunctionNotFound"),
         "nvmlDeviceGetGpuFabricInfoV(v2)": err("NVMLError_FunctionNotFound"),
         "nvmlDeviceGetGpuFabricInfo": err("NVMLError_FunctionNotFound")},
    ])))  # fmt: skip
    assert (facts["fabric.gpus[0].bandwidth"], facts["fabric.gpus[0].health_mask"]) == ("degraded", 0x1A9)
    assert facts["fabric.gpus[0].health_summary"] == (
        "unknown", "the driver answers only the v2 structure: no health summary",
    )  # fmt: skip
    assert facts["fabric.gpus[1].state"] == "completed"
    assert facts["fabric.gpus[1].bandwidth"] == (
        "unknown",
        "nvmlDeviceGetGpuFabricInfo's structure has no health fields",
    )
    assert facts["fabric.gpus[2].state"] == "not supported"


def test_what_nvml_did_not_answer_is_unknown_unless_the_gpu_has_no_nvlink():
    not_recorded = {"nvmlDeviceGetNvLinkState(0)": 1}  # a snapshot from before the probe, of an NVLink GPU
    facts = _values(fb.probe(host([
        not_recorded,
        {"nvmlDeviceGetNvLinkState(0)": err("NVMLError_NotSupported")},  # no NVLink: no NVLink fabric
        {"nvmlDeviceGetGpuFabricInfoV(v3)": err("NVMLError_NoPermission"), "nvmlDeviceGetNvLinkState(0)": 1},
        {"nvmlDeviceGetGpuFabricInfoV(v3)": err("NVMLError_Timeout"), "nvmlDeviceGetNvLinkState(0)": 1},
    ], switches=0)))  # fmt: skip
    assert facts["fabric.gpus[0].state"] == ("unknown", NOT_RECORDED)
    assert facts["fabric.gpus[0].bandwidth"] == ("unknown", NOT_RECORDED)
    assert facts["fabric.gpus[1].state"] == "not supported"
    assert facts["fabric.gpus[2].state"] == ("unknown", "no permission")
    assert facts["fabric.gpus[3].state"] == ("unknown", "timed out")
    # No NVSwitch on the bus, but GPUs that might be on a rack's fabric: not known either way.
    assert facts["fabric.nvswitch_system"] == ("unknown", NOT_RECORDED)


def test_hostile_readings_are_unknown():
    facts = _values(fb.probe(host([
        {"nvmlDeviceGetGpuFabricInfoV(v3)": v3(state=7)},
        {"nvmlDeviceGetGpuFabricInfoV(v3)": v3(status=2**32, mask=0x3, summary=9)},
        {"nvmlDeviceGetGpuFabricInfoV(v3)": "not a structure"},
    ])))  # fmt: skip
    assert facts["fabric.gpus[0].state"] == ("unknown", "implausible value: 7 (expected 0 to 3)")
    assert facts["fabric.gpus[0].status"] == ("unknown", "implausible value: 7 (expected 0 to 3)")
    assert facts["fabric.gpus[1].state"] == "completed"
    assert facts["fabric.gpus[1].status"] == (
        "unknown",
        "implausible value: 4294967296 (expected 0 to 4294967295)",
    )
    assert facts["fabric.gpus[1].bandwidth"] == (
        "unknown", "implausible value: degraded-bandwidth field 3 of healthMask 0x3",
    )  # fmt: skip
    assert facts["fabric.gpus[1].health_summary"] == ("unknown", "implausible value: 9 (expected 0 to 3)")
    assert facts["fabric.gpus[2].state"] == ("unknown", "unexpected value 'not a structure'")


def test_no_gpu_means_no_fabric_gpus():
    h = fake_host(nvml_system={"nvmlDeviceGetCount": err("NVMLError_LibraryNotFound")})
    facts = _values(fb.probe(h))
    assert facts["fabric.gpus.count"] == 0
    assert facts["fabric.nvswitch_system"] == ("unknown", NOT_RECORDED)  # the PCI bus was not recorded


# --- services -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("systemd", "show", "why"),
    [
        ("not found", None, fb.NO_SYSTEMD),  # /run/systemd absent: nothing is run (no command is recorded)
        (("ask-password", "machines", "sessions", "users"), None, fb.NO_SYSTEMD),  # this container
        (("system",), "not found", "systemctl: not found"),
        (("system",), (1, NO_SYSTEMD_STDERR), "systemctl show exited with status 1"),
        (("system",), {"rc": None, "stdout": "", "stderr": ""}, "systemctl did not finish"),
        (("system",), "Id=nvidia-fabricmanager.service\n", "unexpected systemctl show output"),
        ("no permission", (1, NO_SYSTEMD_STDERR), "systemctl show exited with status 1"),
        (NOT_RECORDED, None, NOT_RECORDED),  # a snapshot from before the probe
    ],
)
def test_services_unknown_with_the_reason_never_inactive(systemd, show, why):
    if isinstance(show, str) and show == "not found":
        show = {"error": "not found", "detail": "systemctl"}
    facts = _values(fb.probe(host([], switches=4, systemd=systemd, show=show, version=None)))
    for name in fb.FM_FACTS + ("imex.installed", "imex.state"):
        assert facts[name] == ("unknown", why), name


def test_fabric_manager_not_installed_or_stopped():
    not_found = FM_ACTIVE.replace(
        "LoadState=loaded\nActiveState=active", "LoadState=not-found\nActiveState=inactive"
    )
    facts = _values(fb.probe(host([], switches=4, show=not_found, version=None)))
    assert (facts["fabric_manager.installed"], facts["fabric_manager.state"]) == (False, "not installed")
    assert facts["fabric_manager.version"] == ("unknown", "not installed")  # nv-fabricmanager is not run
    stopped = FM_ACTIVE.replace("ActiveState=active", "ActiveState=failed")
    facts = _values(fb.probe(host([], switches=4, show=stopped)))
    assert (facts["fabric_manager.state"], facts["fabric_manager.version"]) == ("failed", "450.102.04")


def test_fabric_manager_version_unreadable():
    h = host([], switches=4, version=None)
    h.rec.commands.append({"argv": list(fb.FM_VERSION), "error": "not found", "detail": "nv-fabricmanager"})
    assert _values(fb.probe(h))["fabric_manager.version"] == ("unknown", "not found")
    h = host([], switches=4, version="Fabric Manager\n")
    assert _values(fb.probe(h))["fabric_manager.version"] == ("unknown", "could not parse 'Fabric Manager'")


IMEX_ACTIVE = FM_ACTIVE.replace(
    "LoadState=not-found\nActiveState=inactive", "LoadState=loaded\nActiveState=active"
)
IMEX_STOPPED = FM_ACTIVE.replace("LoadState=not-found", "LoadState=loaded")


@pytest.mark.parametrize(
    ("systemd", "show", "imex_dir", "expected"),
    [
        (("system",), IMEX_ACTIVE, ("config.cfg", "nodes_config.cfg"), (True, "active")),
        (("system",), IMEX_STOPPED, ("config.cfg",), (True, "inactive")),
        (("system",), IMEX_STOPPED, "not found", (True, "inactive")),
        (("system",), FM_ACTIVE, ("config.cfg",), (True, "not installed")),  # configured, no service
        (("system",), FM_ACTIVE, "not found", (False, "not installed")),
        (("system",), FM_ACTIVE, "no permission", (("unknown", "no permission"), "not installed")),
        ("not found", None, ("config.cfg",), (True, ("unknown", fb.NO_SYSTEMD))),
        ("not found", None, "not found", (("unknown", fb.NO_SYSTEMD), ("unknown", fb.NO_SYSTEMD))),
    ],
)
def test_imex(systemd, show, imex_dir, expected):
    facts = _values(fb.probe(host([], systemd=systemd, show=show, imex_dir=imex_dir)))
    assert (facts["imex.installed"], facts["imex.state"]) == expected


# --- snapshots ------------------------------------------------------------------------------------------


def test_snapshot_replays_what_the_probe_read():
    live = host([{"nvmlDeviceGetGpuFabricInfoV(v3)": err("NVMLError_ArgumentVersionMismatch"),
                  "nvmlDeviceGetGpuFabricInfoV(v2)": v3(state=2)}], switches=4)  # fmt: skip
    recorder = RecordingHost(live)
    first = _values(fb.probe(recorder))
    assert _values(fb.probe(SnapshotHost(recorder.recording, source="test"))) == first
    assert recorder.recording.commands[0]["argv"] == SHOW
    assert set(recorder.recording.nvml_devices["0"]) == {
        "nvmlDeviceGetGpuFabricInfoV(v3)", "nvmlDeviceGetGpuFabricInfoV(v2)",
    }  # fmt: skip


GPU_UUID = "GPU-11111111-aaaa-bbbb-cccc-dddddddddddd"


def test_redaction_numbers_cluster_uuids_as_gpu_uuids_and_still_replays():
    rack_a, rack_b = list(range(0xC0, 0xD0)), list(range(0x10, 0x20))
    devices = {
        "0": {"nvmlDeviceGetGpuFabricInfoV(v3)": v3(uuid=rack_a), "nvmlDeviceGetUUID": GPU_UUID},
        "1": {"nvmlDeviceGetGpuFabricInfoV(v2)": v3(uuid=rack_b)},
        "2": {"nvmlDeviceGetGpuFabricInfo": v3(uuid=rack_a)},
        "3": {"nvmlDeviceGetGpuFabricInfoV(v3)": v3(uuid=[0] * 16)},
        "4": {"nvmlDeviceGetGpuFabricInfoV(v3)": err("NVMLError_NotSupported")},
    }  # fmt: skip
    redacted = redact(Recording(nvml_devices=devices)).nvml_devices
    uuids = [next(iter(redacted[d].values())).get("clusterUuid") for d in "01234"]
    assert uuids == [[0] * 15 + [1], [0] * 15 + [2], [0] * 15 + [1], [0] * 16, None]
    assert redacted["0"]["nvmlDeviceGetUUID"] == "GPU-00000000-0000-0000-0000-000000000000"
    assert cluster_uuids(redacted) == redacted  # redacting twice changes nothing
    assert devices["0"]["nvmlDeviceGetGpuFabricInfoV(v3)"]["clusterUuid"] == rack_a  # the input is untouched
    # The facts do not depend on the UUID: the redacted recording replays to the same ones.
    plain = _values(
        fb.probe(SnapshotHost(Recording(nvml_system={"nvmlDeviceGetCount": 5}, nvml_devices=devices)))
    )
    again = _values(
        fb.probe(SnapshotHost(Recording(nvml_system={"nvmlDeviceGetCount": 5}, nvml_devices=redacted)))
    )
    assert again == plain and plain["fabric.gpus[0].state"] == "completed"
    # A hostile snapshot's clusterUuid that is not a list of bytes is left to the probe, which ignores it.
    odd = {"0": {"nvmlDeviceGetGpuFabricInfoV(v3)": dict(v3(), clusterUuid=[{"x": 1}] * 16)}}
    assert cluster_uuids(odd) == odd


# --- the live Host, with stub systemctl and nv-fabricmanager on PATH ------------------------------------


class RootedHost(conftest.RootedHost):
    """conftest's RootedHost, without NVML."""

    def nvml(self, function, device=None, arg=None):
        raise NvmlError("NVMLError_LibraryNotFound", "no NVML in this test")


def _stub(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


def test_live_host_runs_systemctl_show_and_the_version_as_argv(tmp_path, monkeypatch):
    bins = tmp_path / "bin"
    bins.mkdir()
    log = tmp_path / "argv.log"
    answer = tmp_path / "show.txt"
    answer.write_text(FM_ACTIVE)
    # systemctl records its arguments, one a line, then answers as the real one does.
    _stub(bins / "systemctl", f'#!/bin/sh\nprintf "%s\\n" "$@" > "{log}"\ncat "{answer}"\n')
    _stub(bins / "nv-fabricmanager", f'#!/bin/sh\necho "{FM_VERSION_TEXT.strip()}"\n')
    monkeypatch.setenv("PATH", f"{bins}{os.pathsep}{os.environ.get('PATH', '')}")
    root = tmp_path / "root"
    (root / "run/systemd/system").mkdir(parents=True)
    (root / "etc").mkdir()
    for bdf, cls in (("0000:05:00.0", "0x068000"), ("0000:18:00.0", "0x030200")):
        (root / "sys/bus/pci/devices" / bdf).mkdir(parents=True)
        (root / "sys/bus/pci/devices" / bdf / "vendor").write_text("0x10de\n")
        (root / "sys/bus/pci/devices" / bdf / "class").write_text(cls + "\n")
    facts = _values(fb.probe(RootedHost(root)))
    assert log.read_text().splitlines() == SHOW[1:]
    assert facts == {
        "fabric.gpus.count": 0,
        "fabric.nvswitch_count": 1,
        "fabric.nvswitch_system": True,
        **SERVICES_UP,
    }


# --- the gates ------------------------------------------------------------------------------------------


def test_a_container_on_an_nvswitch_board_does_not_fail_the_ci_gate_for_the_services_alone():
    """The H200 capture made into an HGX board seen from a container: four NVSwitches on the PCI bus, the
    GPU's fabric completed, systemd not visible. GD-FABRIC-003 and GD-FABRIC-004 cannot be judged; the ci
    and preflight profiles do not exit 2 for that alone (Profile.unknown_ok), --fail-on-unknown still does."""
    from gpudoctor.host.base import Deadline
    from gpudoctor.host.snapshot import load
    from gpudoctor.pipeline.check import run_check
    from gpudoctor.profiles import PROFILES

    from conftest import H200

    def hgx_in_a_container() -> SnapshotHost:
        rec = load(str(H200))
        files, dirs = _pci(0, 4)
        rec.files.update(files)
        rec.dirs["/sys/bus/pci/devices"] = sorted(
            rec.dirs["/sys/bus/pci/devices"] + dirs["/sys/bus/pci/devices"]
        )
        rec.dirs[fb.SYSTEMD_DIR] = {"error": "not found"}
        rec.nvml_devices["0"]["nvmlDeviceGetGpuFabricInfoV(v3)"] = v3()
        return SnapshotHost(rec, "hgx")

    for name in ("ci", "preflight"):
        result = run_check(hgx_in_a_container(), "hgx", Deadline(10), [], profile=PROFILES[name])
        status = {r.rule.id: (r.status, [f for f, _ in r.unknown_facts]) for r in result.results}
        assert status["GD-FABRIC-001"] == ("passed", [])
        assert status["GD-FABRIC-003"] == ("unknown", ["fabric_manager.state"])
        assert status["GD-FABRIC-004"] == ("unknown", ["fabric_manager.installed", "fabric_manager.version"])
        assert not {"GD-FABRIC-003", "GD-FABRIC-004"} & {r.rule.id for r in unknown_errors(result)}, name
        assert decide(result, "error").code == 0, name
    strict = run_check(
        hgx_in_a_container(), "hgx", Deadline(10), [], profile=PROFILES["ci"], fail_unknown=True
    )
    assert {"GD-FABRIC-003", "GD-FABRIC-004"} <= {r.rule.id for r in unknown_errors(strict)}
    assert decide(strict, "error").code == 2
