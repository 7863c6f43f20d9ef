"""Reliability: the live probes, end to end, against a fake NVML driver library and a fake nvidia-smi.

gpudoctor runs where things are broken, so broken hosts are its normal input. tests/fake_nvml/fake_nvml.c
is a libnvidia-ml.so.1 that the real pynvml loads (pynvml dlopens the library by name, so the loader finds
it through LD_LIBRARY_PATH); a scenario file (tests/fake_nvml/scenarios/*.scn, named in FAKE_NVML_SCENARIO)
scripts what it answers. Each test runs `python -m gpudoctor` in a subprocess against it, through the real
LiveHost, and asserts the facts and findings the scenario determines. Everything else (the kernel module's
/proc file, sysfs, ldconfig, Python packages) comes from the machine running the tests, so those facts
are asserted only where the scenario fixes them, or against what this machine reported.
"""

from __future__ import annotations

import ast
import os
import re
import signal
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import pytest

from gpudoctor.host.base import TIMED_OUT, HostError, NvmlError
from gpudoctor.host.live import LiveHost
from gpudoctor.host.nvml_live import NvmlSession
from gpudoctor.probes.gpus import FIELDS

from nvmlrig import (
    FAKE,
    LIBRARY,
    SCENARIOS,
    SLACK_S,
    SYSFS_FIELDS,
    U,
    check,
    flat,
    gpu_facts,
    gpu_findings,
    gpudoctor,
    h100,
    init_codes,
    rule,
)

# Rules about GPUs, whose results the scenarios alone decide (rules/gpu.yaml).
GPU_RULES = (
    "GD-PCIE-001", "GD-PCIE-002", "GD-NVLINK-001", "GD-NVLINK-002", "GD-CLOCK-001", "GD-CLOCK-002",
    "GD-ECC-001", "GD-ECC-002", "GD-ECC-003", "GD-P2P-001", "GD-TOPO-001",
)  # fmt: skip


def all_unknown(i: int, reason: str) -> dict:
    """GPU i when nothing could be read from it: every fact unknown for one reason, but its index."""
    facts = {field: U(reason) for field in FIELDS if not field.startswith(SYSFS_FIELDS)}
    facts["index"] = i
    # The derived NVLink facts are unknown for the same reason as the link states they come from.
    facts.update({f"nvlink.{f}": U(reason) for f in ("links_wired", "links_down_wired", "down_wired")})
    return facts


# --- healthy and degraded nodes ---------------------------------------------------------------------


def test_healthy_h100_node(fake_lib):
    data = check(fake_lib, "healthy-h100-8")
    assert gpu_facts(data) == [h100(i) for i in range(8)]
    driver = data["facts"]["driver"]
    assert (driver["nvml_status"], driver["version"], driver["branch"], driver["nvml_version"]) == (
        "ok", "570.133.20", 570, "12.570.133.20",
    )  # fmt: skip
    assert (driver["max_cuda"], driver["max_cuda_major"]) == ("12.8", 12)
    assert gpu_findings(data) == []
    assert {r: rule(data, r)["status"] for r in GPU_RULES} == dict.fromkeys(GPU_RULES, "passed")
    assert data["timed_out"] == []
    assert all(p["status"] == "ok" for p in data["probes"])


def test_facts_command_reads_the_same_gpus(fake_lib):
    # --no-redact: `facts` redacts GPU UUIDs by default (tests/commands/test_facts.py); compared here.
    run = gpudoctor(fake_lib, "healthy-h100-8", "facts", "--format", "json", "--no-redact")
    assert run.rc == 0
    assert gpu_facts({"facts": run.json()}) == [h100(i) for i in range(8)]


def test_degraded_node_names_each_fault_by_gpu_index(fake_lib):
    data = check(fake_lib, "degraded-h100-8")
    assert gpu_findings(data) == [
        ("GD-CLOCK-001", 5),
        ("GD-ECC-001", 1),
        ("GD-NVLINK-001", 2),
        ("GD-PCIE-001", 3),
    ]
    assert gpu_facts(data) == [
        h100(0),
        h100(1, ecc__uncorrected_volatile=4, ecc__uncorrected_aggregate=4),
        h100(2, nvlink__links_up=17, nvlink__links_down=1, nvlink__down=[5], nvlink__links_down_wired=1,
             nvlink__down_wired=[5], nvlink__peers=["nvswitch"] * 17),
        h100(3, pcie__width_current=8),
        h100(4),
        h100(5, clocks__event_reasons=0x41, clocks__event_reason_names=["GpuIdle", "HwThermalSlowdown"],
             temperature__gpu_c=91, clocks__sm_mhz=1035),
        h100(6),
        h100(7),
    ]  # fmt: skip
    messages = {f["rule"]: f["message"] for f in data["findings"] if f["category"] == "gpu"}
    assert messages == {
        "GD-CLOCK-001": "GPU 5 (NVIDIA H100 80GB HBM3) is held back by GpuIdle, HwThermalSlowdown: "
        "SM clock 1035 of 1980 MHz at 91 C and 71.0 W.",
        "GD-ECC-001": "GPU 1 (NVIDIA H100 80GB HBM3) has had 4 uncorrected ECC errors since the driver "
        "loaded (4 over its life).",
        "GD-NVLINK-001": "GPU 2 (NVIDIA H100 80GB HBM3): 1 of 18 NVLink links are down (links 5).",
        "GD-PCIE-001": "GPU 3 (NVIDIA H100 80GB HBM3, 0000:5d:00.0) runs its PCIe link at x8 of x16.",
    }
    assert data["summary"]["exit_code"] == 1


# --- partial answers ----------------------------------------------------------------------------------


def test_mig_parent_with_no_permission(fake_lib):
    data = check(fake_lib, "mig-no-permission")
    no = U("no permission")
    assert gpu_facts(data) == [
        h100(0, 2, mig__current=True, mig__pending=True, utilization__gpu=U("not supported"),
             utilization__memory=U("not supported"), ecc__uncorrected_volatile=no,
             ecc__uncorrected_aggregate=no, ecc__corrected_volatile=no, remapped_rows__correctable=no,
             remapped_rows__uncorrectable=no, remapped_rows__pending=no, remapped_rows__failed=no,
             clocks__event_reasons=no, clocks__event_reason_names=no),
        h100(1, 2),
    ]  # fmt: skip
    assert gpu_findings(data) == []
    # What could not be read is said, per rule, by name and reason; GPU 1 was still checked.
    unknown = {r: rule(data, r)["unknown_facts"] for r in GPU_RULES if rule(data, r)["status"] == "unknown"}
    assert unknown == {
        "GD-CLOCK-001": {"gpus[0].clocks.event_reasons": "no permission"},
        "GD-CLOCK-002": {"gpus[0].clocks.event_reasons": "no permission"},
        "GD-ECC-001": {"gpus[0].ecc.uncorrected_volatile": "no permission"},
        "GD-ECC-002": {"gpus[0].remapped_rows.pending": "no permission"},
        "GD-ECC-003": {"gpus[0].remapped_rows.failed": "no permission"},
    }


def test_every_optional_call_not_supported(fake_lib):
    data = check(fake_lib, "all-not-supported")
    expected = all_unknown(0, "not supported")
    expected.update(
        name="NVIDIA A10-24Q", uuid="GPU-fa4e0000-0000-4000-8000-000000000000", bus_id="0000:18:00.0"
    )
    # NotSupported on link 0 means "no NVLink": zero links, a known fact, not an unknown one.
    expected.update({"nvlink.links": 0, "nvlink.links_up": 0, "nvlink.links_down": 0, "nvlink.down": [],
                     "nvlink.links_wired": 0, "nvlink.links_down_wired": 0,
                     "nvlink.down_wired": []})  # fmt: skip
    # With one GPU there is no peer to ask about: no peer is unreachable, a known fact; its row of the
    # topology matrix is itself alone. No NVLink: no link reaches anything.
    expected.update({"p2p.no_read": [], "p2p.no_read_count": 0, "topology.cross_socket": [],
                     "topology.cross_socket_count": 0, "topology.levels": ["X"],
                     "nvlink.peers": []})  # fmt: skip
    # It answers, so it is not lost; a driver that offers no recovery action reports none.
    expected.update({"lost": False, "recovery_action": "not reported"})
    assert gpu_facts(data) == [expected]
    assert gpu_findings(data) == []
    assert {r: rule(data, r)["status"] for r in GPU_RULES} == {
        **dict.fromkeys(GPU_RULES, "unknown"), "GD-NVLINK-001": "passed", "GD-NVLINK-002": "passed",
        "GD-P2P-001": "passed", "GD-TOPO-001": "passed",
    }  # fmt: skip


PEER_LISTS = ("p2p.no_read", "topology.cross_socket")  # each with its _count
# The topology matrix row comes from the same readings as topology.cross_socket: unknown with it.
PEER_FACTS = tuple(f for name in PEER_LISTS for f in (name, f"{name}_count")) + ("topology.levels",)
LOST = U("GPU is lost")


def peer_lists(gpus: list[dict]) -> list[tuple]:
    """(list, count) of each GPU's peer readings, in the order the GPU probe asks NVML for them."""
    return [(g[name], g[f"{name}_count"]) for g in gpus for name in PEER_LISTS]


def lost(i: int) -> dict:
    """GPU i lost part way through being read: what it said before (its name, UUID and PCI address) still
    names it, everything else is unknown, and it is known to be lost."""
    facts = all_unknown(i, "GPU is lost")
    h = h100(i)
    facts.update({f: h[f] for f in ("name", "uuid", "bus_id")}, lost=True)
    return facts


def test_one_lost_gpu_never_hides_the_others(fake_lib):
    data = check(fake_lib, "gpu-lost")
    facts = gpu_facts(data)
    # GPU 4 is known to be lost. Which probe used up its ten answers first (the probes run at the same time)
    # decides whether its name, UUID and address came before: those are asserted with gpu-lost-midway.
    identity = ("name", "uuid", "bus_id")
    assert {k: v for k, v in facts[4].items() if k not in identity} == {
        **{k: v for k, v in all_unknown(4, "GPU is lost").items() if k not in identity},
        "lost": True,
    }
    # GPUs 5-7 are read after GPU 4, which the GPU probe's own reading of it has lost by then: asked about
    # GPU 4, NVML answers GPU_IS_LOST, and a peer that cannot be read leaves the lists unknown. Everything
    # else they report is intact.
    assert facts[5:] == [h100(i, **{f.replace(".", "__"): LOST for f in PEER_FACTS}) for i in (5, 6, 7)]
    # GPUs 0-3 ask about GPU 4 before the GPU probe reads it, but the other NVML probes, running at the same
    # time, may reach GPU 4 first and use up its ten answers: each peer fact is its healthy value until
    # then, and unknown from then on. So in asking order (GPU 0's P2P reading, then its topology, then
    # GPU 1's, ...) the known facts come first, then only unknown ones. Usually all eight pairs are known.
    asked, healthy = peer_lists(facts[:4]), peer_lists([h100(i) for i in range(4)])
    known = next((n for n, pair in enumerate(asked) if pair != healthy[n]), len(asked))
    assert asked == healthy[:known] + [(LOST, LOST)] * (len(asked) - known)
    for i, g in enumerate(facts[:4]):
        assert g["topology.levels"] == (
            LOST if g["topology.cross_socket"] == LOST else h100(i)["topology.levels"]
        )
    assert [{k: v for k, v in g.items() if k not in PEER_FACTS} for g in facts[:4]] == [
        {k: v for k, v in h100(i).items() if k not in PEER_FACTS} for i in range(4)
    ]
    # The most urgent state a GPU node can be in is an error naming the GPU, and the check exits 1 (check()).
    assert gpu_findings(data) == [("GD-GPU-004", 4)]
    assert rule(data, "GD-ECC-001")["unknown_facts"] == {"gpus[4].ecc.uncorrected_volatile": "GPU is lost"}
    # The rules say which facts they could not judge: the P2P rule each unknown count, GPUs 4-7 at least;
    # the topology rule GPU 4 alone, since every other GPU has NVLink up and so passes it in any case.
    unknown_counts = [i for i, g in enumerate(facts) if g["p2p.no_read_count"] == LOST]
    assert unknown_counts[-4:] == [4, 5, 6, 7]
    assert rule(data, "GD-P2P-001")["unknown_facts"] == {
        f"gpus[{i}].p2p.no_read_count": "GPU is lost" for i in unknown_counts
    }
    assert rule(data, "GD-TOPO-001")["unknown_facts"] == {
        "gpus[4].topology.cross_socket_count": "GPU is lost", "gpus[4].nvlink.links_up": "GPU is lost",
    }  # fmt: skip
    assert data["timed_out"] == []


def test_a_gpu_lost_midway_is_named_by_what_it_answered(fake_lib):
    # GPU 4 answers its name, UUID and PCI address, then falls off the bus at its power reading.
    data = check(fake_lib, "gpu-lost-midway")
    facts = gpu_facts(data)
    assert facts[4] == lost(4)
    assert gpu_findings(data) == [("GD-GPU-004", 4)]
    finding = next(f for f in data["findings"] if f["rule"] == "GD-GPU-004")
    assert finding["message"] == (
        "GPU 4 (NVIDIA H100 80GB HBM3, PCI 0000:9a:00.0) is lost: every NVML call on it answers"
        ' "GPU is lost"; no program can use it.'
    )
    assert [s["argv"] for s in finding["fix"] if s["argv"]] == [
        ["sudo", "nvidia-smi", "-r", "-i", "4"],
        ["sudo", "reboot"],
    ]


def test_a_lost_gpu_reads_as_lost_in_the_report(fake_lib):
    run = gpudoctor(fake_lib, "gpu-lost-midway", "check")
    assert run.rc == 1
    lines = run.stdout.splitlines()
    lost = '4: NVIDIA H100 80GB HBM3 · PCI 0000:9a:00.0 · LOST: NVML answers "GPU is lost"'
    assert " " * 12 + lost in lines
    assert "  ERROR   GD-GPU-004  GPU lost (fallen off the bus)" in lines


def test_nvml_recovery_actions_become_findings(fake_lib):
    data = check(fake_lib, "recovery-action")
    actions = [flat(g)["recovery_action"] for g in data["facts"]["gpus"]]
    assert actions == ["none", "gpu reset", "node reboot", "drain p2p", "drain and reset", "none",
                       U("unexpected value [{'fieldId': 230, 'nvmlReturn': 0, 'value': 99}]"),
                       U("no permission")]  # fmt: skip
    assert gpu_findings(data) == [("GD-GPU-006", 1), ("GD-GPU-006", 4), ("GD-GPU-007", 2), ("GD-GPU-008", 3)]
    assert rule(data, "GD-GPU-006")["unknown_facts"] == {}  # fired: the unknown GPUs do not hide it
    reset = next(f for f in data["findings"] if f["rule"] == "GD-GPU-006" and f["item"] == 1)
    assert reset["message"] == (
        'NVML\'s recovery action for GPU 1 (NVIDIA H100 80GB HBM3) is "gpu reset": it cannot be used again'
        " until it is reset."
    )


@pytest.mark.parametrize("scenario", ["gpu-lost", "recovery-action"])
def test_a_broken_node_replays_from_its_snapshot(fake_lib, tmp_path, scenario):
    # The field values and a lost GPU are recorded as NVML answered them, and replay so. (Which of the lost
    # GPU's readings came before it was lost depends on the order the process asked in: not compared.)
    live = check(fake_lib, scenario)
    archive = tmp_path / "node.tar.gz"
    assert gpudoctor(fake_lib, scenario, "snapshot", "-o", str(archive)).rc == 0
    replayed = gpudoctor(fake_lib, None, "check", "--snapshot", str(archive), "--format", "json").json()

    def judged(data: dict) -> tuple:
        gpus = [{k: flat(g).get(k) for k in ("lost", "recovery_action")} for g in data["facts"]["gpus"]]
        return gpus, gpu_findings(data)

    assert judged(replayed) == judged(live)


def test_a_gpu_lost_before_the_check_leaves_every_peer_list_unknown(fake_lib, tmp_path):
    # GPU 4 fell off the bus before the check started: no handle, no answer, to anyone asking about it.
    scenario = tmp_path / "lost-at-start.scn"
    scenario.write_text("gpus 8\ngpu.4.lost_after 0\n")
    data = check(fake_lib, scenario)
    unknown_peers = {f.replace(".", "__"): LOST for f in PEER_FACTS}
    assert gpu_facts(data) == [
        {**all_unknown(4, "GPU is lost"), "lost": True} if i == 4 else h100(i, **unknown_peers)
        for i in range(8)
    ]
    assert gpu_findings(data) == [("GD-GPU-004", 4)]
    assert rule(data, "GD-P2P-001")["unknown_facts"] == {
        f"gpus[{i}].p2p.no_read_count": "GPU is lost" for i in range(8)
    }
    # GD-TOPO-001 also needs no active NVLink link: the other GPUs, with all 18 up, certainly pass it.
    assert rule(data, "GD-TOPO-001")["unknown_facts"] == {
        "gpus[4].topology.cross_socket_count": "GPU is lost", "gpus[4].nvlink.links_up": "GPU is lost",
    }  # fmt: skip


def test_broken_peer_paths(fake_lib):
    data = check(fake_lib, "p2p-broken")
    # GPU 3 on socket 1 with GPUs 4-7: its socket-0 peers are GPUs 0-2, and it is everyone else's peer
    # across the sockets too.
    away = {i: [0, 1, 2] if i >= 3 else [3, 4, 5, 6, 7] for i in range(8)}
    all_down = list(range(18))
    levels = {i: ["X" if j == i else "SYS" if j in away[i] else "NODE" for j in range(8)] for i in range(8)}
    expected = [
        h100(i, topology__cross_socket=away[i], topology__cross_socket_count=len(away[i]),
             topology__levels=levels[i])
        for i in range(8)
    ]  # fmt: skip
    expected[2].update({"p2p.no_read": [5], "p2p.no_read_count": 1})
    expected[5].update({"p2p.no_read": [2], "p2p.no_read_count": 1})
    expected[3].update({"nvlink.links_up": 0, "nvlink.links_down": 18, "nvlink.down": all_down,
                        "nvlink.version": U("no active link"), "nvlink.links_down_wired": 18,
                        "nvlink.down_wired": all_down, "nvlink.peers": []})  # fmt: skip
    assert gpu_facts(data) == expected
    # GD-TOPO-001 needs no active NVLink link as well: every GPU has peers across the sockets, but only
    # GPU 3 reaches them without NVLink.
    assert gpu_findings(data) == [
        ("GD-NVLINK-002", 3), ("GD-P2P-001", 2), ("GD-P2P-001", 5), ("GD-TOPO-001", 3),
    ]  # fmt: skip
    messages = {(f["rule"], f["item"]): f["message"] for f in data["findings"] if f["category"] == "gpu"}
    assert messages == {
        ("GD-NVLINK-002", 3): "GPU 3 (NVIDIA H100 80GB HBM3) has 18 NVLink links and none is active.",
        ("GD-P2P-001", 2): "GPU 2 (NVIDIA H100 80GB HBM3) cannot read from GPU(s) 5 peer-to-peer.",
        ("GD-P2P-001", 5): "GPU 5 (NVIDIA H100 80GB HBM3) cannot read from GPU(s) 2 peer-to-peer.",
        ("GD-TOPO-001", 3): "GPU 3 (NVIDIA H100 80GB HBM3) reaches GPU(s) 0, 1, 2 only through the link "
        "between CPU sockets, with no NVLink.",
    }
    assert {r: rule(data, r)["status"] for r in GPU_RULES} == {
        **dict.fromkeys(GPU_RULES, "passed"), "GD-NVLINK-002": "fired", "GD-P2P-001": "fired",
        "GD-TOPO-001": "fired",
    }  # fmt: skip


def test_old_driver_without_newer_calls(old_driver_lib):
    data = check(old_driver_lib, "old-driver")
    missing = U("not supported by this driver")  # pynvml: NVMLError_FunctionNotFound
    # Clock reasons come through the older ThrottleReasons call.
    assert gpu_facts(data) == [
        h100(0, 2, pcie__gen_gpu_max=missing, recovery_action="not reported"),
        h100(1, 2, pcie__gen_gpu_max=missing, clocks__event_reasons=8,
             clocks__event_reason_names=["HwSlowdown"], recovery_action="not reported"),
    ]  # fmt: skip
    driver = data["facts"]["driver"]
    assert driver["version"] == "470.256.02"
    assert (driver["max_cuda"], driver["max_cuda_major"]) == (missing, missing)
    assert gpu_findings(data) == [("GD-CLOCK-001", 1)]


# --- NVML that will not start -------------------------------------------------------------------------


def driver_findings(data: dict) -> set:
    return {f["rule"] for f in data["findings"] if f["category"] == "driver"} - {"GD-DRIVER-001"}


def no_nvidia_on_this_bus(data: dict) -> bool:
    count = data["facts"]["pci"]["nvidia_gpus"]
    return count == 0 or isinstance(count, dict)


def test_driver_library_version_mismatch(fake_lib):
    data = check(fake_lib, "version-mismatch")
    driver = data["facts"]["driver"]
    assert driver["nvml_status"] == "NVMLError_LibRmVersionMismatch"
    mismatch = U("driver/library version mismatch")
    assert (driver["nvml_version"], driver["max_cuda"]) == (mismatch, mismatch)
    # Without NVML the driver's version is the kernel module's, if this machine has one loaded.
    kernel = driver["kernel_version"]
    assert driver["version"] == (mismatch if isinstance(kernel, dict) else kernel)
    assert "GD-DRIVER-002" in driver_findings(data)
    assert "GD-DRIVER-003" not in driver_findings(data)  # the mismatch has a rule of its own
    # The GPU count is unknown, not zero: every GPU rule says it could not be evaluated, and why.
    for r in GPU_RULES:
        assert (rule(data, r)["status"], rule(data, r)["unknown_facts"]) == (
            "unknown", {"gpus.count": "driver/library version mismatch"},
        )  # fmt: skip
    assert data["summary"]["exit_code"] == 1


def test_driver_not_loaded(fake_lib):
    data = check(fake_lib, "driver-not-loaded")
    assert data["facts"]["driver"]["nvml_status"] == "NVMLError_DriverNotLoaded"
    assert data["facts"]["gpus"] == []  # no kernel driver: no GPU any program can use
    # No GPU a program can use: the rules about GPUs have nothing to judge (not applicable, not passed).
    assert {r: rule(data, r)["status"] for r in GPU_RULES} == dict.fromkeys(GPU_RULES, "not_applicable")
    expected = {"GD-DRIVER-003"} if data["facts"]["driver"]["loaded"] is True else set()
    if no_nvidia_on_this_bus(data):
        expected.add("GD-HOST-001")
    assert driver_findings(data) == expected


# Loads libnvidia-ml.so.1 the way pynvml does (by name) and prints the file the loader chose, if any.
WHICH_NVML = """
import ctypes
try:
    ctypes.CDLL("libnvidia-ml.so.1")
except OSError:
    raise SystemExit(0)
with open("/proc/self/maps") as maps:
    print(next(line.split()[-1] for line in maps if "libnvidia-ml" in line))
"""


def _nvml_found_with(lib_dir: Path) -> str:
    """The libnvidia-ml.so.1 this machine's loader finds with only lib_dir on LD_LIBRARY_PATH, or ""."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LD_LIBRARY_PATH": str(lib_dir)}
    out = subprocess.run(
        [sys.executable, "-c", WHICH_NVML], env=env, capture_output=True, text=True, timeout=30
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def _assert_library_not_found(data: dict) -> None:
    assert data["facts"]["driver"]["nvml_status"] == "NVMLError_LibraryNotFound"
    assert data["facts"]["gpus"] == []
    assert {r: rule(data, r)["status"] for r in GPU_RULES} == dict.fromkeys(GPU_RULES, "not_applicable")
    assert "GD-DRIVER-002" not in driver_findings(data)


def test_library_absent(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    # pynvml dlopens "libnvidia-ml.so.1" by name: the loader looks in LD_LIBRARY_PATH, then in
    # ld.so.cache and the system directories. On a machine with a real driver it finds that one, and
    # "absent" cannot be staged there; CI machines have none, so this always runs in CI.
    found = _nvml_found_with(empty)
    if found and not os.environ.get("CI"):
        pytest.skip(f"this machine's loader finds {found}; absence is tested where there is none (CI)")
    assert found == "", f"CI must run this test on a machine without an NVML library, found {found}"
    _assert_library_not_found(check(empty, None))


def test_library_present_but_unloadable(tmp_path):
    # A truncated file named libnvidia-ml.so.1 (a half-finished driver install). The loader stops at the
    # first file of that name, so this holds on every machine, even one with a real driver.
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / LIBRARY).write_bytes(b"\x7fELF\x02\x01\x01")
    _assert_library_not_found(check(broken, None))


# --- calls that never return ----------------------------------------------------------------------------

HUNG_POWER = "NVML nvmlDeviceGetPowerUsage on GPU 3"


def test_hung_call_inside_the_deadline_costs_only_what_it_stops(fake_lib):
    # NVML calls get 2 s each; with a 3 s deadline the hung call is given up before the check's end.
    data = check(fake_lib, "hang-power", timeout=3)
    assert data["timed_out"] == [HUNG_POWER]
    # GPUs read before the hang are intact; from the hung call on, NVML is not asked again. GPU 3 is still
    # named by what it answered before its power reading hung; whether it is lost cannot be told.
    hung = {**all_unknown(3, "timed out"), **{f: h100(3)[f] for f in ("name", "uuid", "bus_id")}}
    assert gpu_facts(data) == [h100(i) if i < 3 else hung if i == 3 else all_unknown(i, "timed out")
                               for i in range(8)]  # fmt: skip
    assert all(p["status"] == "ok" for p in data["probes"])


def test_hung_nvml_init_inside_the_deadline(fake_lib):
    data = check(fake_lib, "hang-init", timeout=3)
    assert data["timed_out"] == ["NVML nvmlInit"]
    assert data["facts"]["driver"]["nvml_status"] == "NVMLError_Timeout"
    assert {r: rule(data, r)["unknown_facts"] for r in GPU_RULES} == dict.fromkeys(
        GPU_RULES, {"gpus.count": "timed out"}
    )


# The probes that wait on NVML, and so on a hung call.
NVML_PROBES = ("gpus", "driver", "gpu_health", "gpu_processes", "fabric")


# (fmt, deadline): the JSON report with a deadline past the 2 s NVML call limit is tested above.
@pytest.mark.parametrize("scenario", ["hang-power", "hang-init"])
@pytest.mark.parametrize(("fmt", "deadline"), [("json", 1.0), ("text", 1.0), ("text", 3.0)])
def test_whole_check_ends_by_its_deadline_and_names_what_hung(fake_lib, scenario, fmt, deadline):
    run = gpudoctor(fake_lib, scenario, "check", "--format", fmt, "--timeout", str(deadline))
    assert run.wall < deadline + SLACK_S, f"{run.wall:.2f} s"
    hung = HUNG_POWER if scenario == "hang-power" else "NVML nvmlInit"
    # The 2 s NVML call limit is cut to the deadline, so the call and the probe waiting on it give up at
    # the same moment: the report names the call in any case, and the probe if it was abandoned.
    if fmt == "json":
        data = run.json()
        assert run.rc == data["summary"]["exit_code"]
        assert data["timed_out"] == [hung]
        abandoned = {p["name"] for p in data["probes"] if p["status"] != "ok"}
        assert abandoned <= set(NVML_PROBES)
    else:
        lines = [" ".join(line.split()) for line in run.stdout.splitlines()]
        assert f"Timed out {hung}" in lines, run.stdout
        abandoned = {ln for ln in lines if ln.startswith("Probe ")}
        assert abandoned <= {f"Probe {name} timed out" for name in NVML_PROBES}, run.stdout


def test_facts_command_ends_by_its_deadline(fake_lib):
    run = gpudoctor(fake_lib, "hang-power", "facts", "--format", "json", "--timeout", "1")
    assert run.wall < 1 + SLACK_S, f"{run.wall:.2f} s"
    assert run.rc == 0
    assert run.json()["driver"]["nvml_status"] == "ok"


def test_a_call_past_the_deadline_is_refused_not_blamed():
    # No time left: the call is not made, and NVML is not marked as hung in a call it never received.
    pynvml = types.SimpleNamespace(nvmlInit=lambda: None, nvmlSystemGetDriverVersion=lambda: b"570.133.20")
    session = NvmlSession(loader=lambda: pynvml)
    with pytest.raises(NvmlError) as e:
        session.call("nvmlSystemGetDriverVersion", None, None, 0.0)
    assert (e.value.reason, session.hung_in) == (TIMED_OUT, None)
    assert session.call("nvmlSystemGetDriverVersion", None, None, 1.0) == "570.133.20"


def test_at_the_deadline_running_commands_are_named():
    host = LiveHost()
    argv = (sys.executable, "-c", "import time; time.sleep(5)")
    worker = threading.Thread(target=lambda: pytest.raises(HostError, host.run, argv, 0.8), daemon=True)
    worker.start()
    time.sleep(0.3)
    host.note_unanswered()  # what the collector calls when a probe is still running at the deadline
    assert host.timed_out == [" ".join(argv)]
    worker.join(5)
    assert host.timed_out == [" ".join(argv)]  # named once, though the command's own limit ran out too


# --- the fake itself ------------------------------------------------------------------------------------


def test_every_scenario_file_is_valid(fake_lib):
    files = sorted(SCENARIOS.glob("*.scn"))
    assert len(files) == 25
    expected = {"version-mismatch.scn": 18, "driver-not-loaded.scn": 9}  # NVML's codes for the two
    codes, stderr = init_codes(fake_lib, *files)
    assert (dict(zip([f.name for f in files], codes)), stderr) == (
        {f.name: expected.get(f.name, 0) for f in files}, "",
    )  # fmt: skip


@pytest.mark.parametrize(
    "line, problem",
    [
        ("gpu.1.pcie_widht 8", "pcie_widht: unknown key"),
        ("gpus 99", "gpus: too many GPUs"),
        ("gpu.2.gpus 4", "gpus: a whole-host key cannot be given per GPU"),
        ("temp hot", "temp: not a number"),
        ("init NOT_A_CODE", "init: not a return code (HANG is only for fail)"),
        ("fail nvmlDeviceGetPowerUsage", "fail: expected SYMBOL CODE (or hang SYMBOL)"),
        ("gpu.0.nvlink.x down", "nvlink.x: expected nvlink.L"),
        ("gpu.0.nvlink.3 sideways", "nvlink.3: expected up or down"),
        ("gpu.16.temp 40", "gpu.16.temp: bad GPU number"),
        ("gpu.2.p2p NOT_SUPPORTED", "p2p: expected p2p.J"),
        ("gpu.2.p2p.16 NOT_SUPPORTED", "p2p.16: expected p2p.J"),
        ("gpu.2.p2p.5 BROKEN", "p2p.5: expected a P2P status (NOT_SUPPORTED, ...) or a number"),
        ("gpu.2.p2p.5 -1", "p2p.5: expected a P2P status (NOT_SUPPORTED, ...) or a number"),
        ("gpu.3.socket one", "socket: not a number"),
        ("gpu.3.pcie_switch one", "pcie_switch: not a number"),
        ("gpu.0.nvlink.3.remote gpu7", "nvlink.3.remote: expected switch, ibmnpu or a bus id DDDD:BB:DD.F"),
        (
            "gpu.0.nvlink.3.remote 0000:2a:00",
            "nvlink.3.remote: expected switch, ibmnpu or a bus id DDDD:BB:DD.F",
        ),
        ("gpu.0.nvlink.32.remote switch", "nvlink.32.remote: expected nvlink.L"),
        ("gpu.0.nvlink.3.far switch", "nvlink.3.far: expected nvlink.L"),
        ("gpu.0.nvlink..remote switch", "nvlink..remote: expected nvlink.L"),
    ],
)
def test_a_scenario_mistake_fails_loudly(fake_lib, tmp_path, line, problem):
    bad = tmp_path / "bad.scn"
    bad.write_text(f"# a scenario with a mistake\n{line}\n")
    codes, stderr = init_codes(fake_lib, bad)
    assert (codes, stderr) == ([999], f"fake_nvml: {bad}:2: {problem}\n")


# --- a fake nvidia-smi ----------------------------------------------------------------------------------


def test_run_gives_up_on_a_wedged_nvidia_smi(tmp_path, monkeypatch):
    """nvidia-smi hangs, ignores SIGTERM, and its grandchild holds its pipes: run() still returns on time.
    (gpudoctor's probes do not call nvidia-smi today; LiveHost.run is what any command goes through.)"""
    pidfile = tmp_path / "grandchild.pid"
    monkeypatch.setenv(
        "PATH", os.pathsep.join([str(FAKE), os.path.dirname(sys.executable), os.environ["PATH"]])
    )
    host = LiveHost()
    argv = ("nvidia-smi", "-q", "--fake-pidfile", str(pidfile))
    start = time.monotonic()
    try:
        with pytest.raises(HostError) as e:
            host.run(argv, timeout=1.0)
        elapsed = time.monotonic() - start
        assert e.value.reason == TIMED_OUT
        assert elapsed < 1.0 + SLACK_S, f"{elapsed:.2f} s"
        assert host.timed_out == [" ".join(argv)]
        # The hard case really happened: the grandchild outlived nvidia-smi's process group.
        os.kill(int(pidfile.read_text()), 0)
    finally:
        if pidfile.exists():
            os.kill(int(pidfile.read_text()), signal.SIGKILL)


def test_fake_nvidia_smi_ignores_sigterm(tmp_path):
    pidfile = tmp_path / "grandchild.pid"
    proc = subprocess.Popen(
        [sys.executable, str(FAKE / "nvidia-smi"), "--fake-pidfile", str(pidfile)],
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"==============NVSMI LOG==============\n"
        proc.terminate()
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=0.3)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)
        if pidfile.exists():
            os.kill(int(pidfile.read_text()), signal.SIGKILL)
        if proc.stdout is not None:
            proc.stdout.close()


# --- no shell -------------------------------------------------------------------------------------------

PACKAGE = Path(__file__).resolve().parents[2] / "gpudoctor"
SHELL_CALLS = {
    ("os", "system"),
    ("os", "popen"),
    ("subprocess", "getoutput"),
    ("subprocess", "getstatusoutput"),
}


def shell_uses(source: str) -> list[int]:
    """Lines that start a shell: os.system and friends, or any call given shell= other than False."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if (
            isinstance(f, ast.Attribute)
            and isinstance(f.value, ast.Name)
            and (f.value.id, f.attr) in SHELL_CALLS
        ):
            lines.append(node.lineno)
        for kw in node.keywords:
            if kw.arg == "shell" and not (isinstance(kw.value, ast.Constant) and kw.value.value is False):
                lines.append(node.lineno)
    return lines


def test_shell_uses_finds_each_way_of_starting_a_shell():
    source = "os.system('x')\nsubprocess.run(a, shell=True)\nsubprocess.run(a, shell=flag)\n"
    source += "subprocess.run(a, shell=False)\nos.popen('x')\nsubprocess.run(['ls'])\n"
    assert shell_uses(source) == [1, 2, 3, 5]


def test_no_module_starts_a_shell():
    found = {
        str(path.relative_to(PACKAGE.parent)): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if (lines := shell_uses(path.read_text(encoding="utf-8")))
    }
    assert found == {}


# --- hostile values: readings no GPU gives --------------------------------------------------------------

U32 = 0xFFFFFFFF


def implausible(value: int, low: int, high: int) -> dict:
    return U(f"implausible value: {value} (expected {low} to {high})")


def test_hostile_nvml_values_are_unknown_and_fire_no_rule(fake_lib):
    data = check(fake_lib, "hostile-values")
    assert gpu_facts(data) == [
        h100(0, 2, pcie__width_max=implausible(0xFFFFFFF0, 0, 32),
             memory__total_bytes=implausible(2**64 - 1, 1, 2**44),
             clocks__sm_mhz=implausible(U32, 0, 100000),
             temperature__gpu_c=implausible(U32, 0, 200),
             power__draw_w=implausible(U32, 0, 10000000),
             ecc__uncorrected_volatile=implausible(2**64 - 1, 0, U32 - 1),
             clocks__event_reasons=implausible(U32, 0, U32 - 1),
             clocks__event_reason_names=implausible(U32, 0, U32 - 1)),
        h100(1, 2),
    ]  # fmt: skip
    assert gpu_findings(data) == []
    for rule_id, fact in (
        ("GD-PCIE-001", "gpus[0].pcie.width_max"),
        ("GD-ECC-001", "gpus[0].ecc.uncorrected_volatile"),
        ("GD-CLOCK-001", "gpus[0].clocks.event_reasons"),
    ):
        result = rule(data, rule_id)
        assert result["status"] == "unknown", rule_id
        assert result["unknown_facts"][fact].startswith("implausible value: ")


# --- docs/reliability.md -----------------------------------------------------------------------------


def test_reliability_doc_names_only_tests_that_exist():
    root = Path(__file__).resolve().parents[2]
    text = (root / "docs" / "reliability.md").read_text(encoding="utf-8")
    named = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", text)
    assert len(named) > 40
    missing = [
        f"{path}::{name}"
        for path, name in named
        if not (root / path).is_file()
        or not re.search(rf"^def {name}\(", (root / path).read_text(encoding="utf-8"), re.MULTILINE)
    ]
    assert missing == []
