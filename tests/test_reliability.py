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
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import pytest

from gpudoctor.host.base import TIMED_OUT, HostError, NvmlError
from gpudoctor.host.live import LiveHost
from gpudoctor.host.nvml_live import NvmlSession
from gpudoctor.probes.gpus import FIELDS

FAKE = Path(__file__).parent / "fake_nvml"
SCENARIOS = FAKE / "scenarios"
LIBRARY = "libnvidia-ml.so.1"
# The fake's default PCI bus numbers: an HGX H100 board's.
BUSES = (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)
# Rules about GPUs, whose results the scenarios alone decide (rules/gpu.yaml).
GPU_RULES = (
    "GD-PCIE-001", "GD-PCIE-002", "GD-NVLINK-001", "GD-NVLINK-002", "GD-CLOCK-001", "GD-CLOCK-002",
    "GD-ECC-001", "GD-ECC-002", "GD-ECC-003",
)  # fmt: skip
NO_PEER_CALLS = "not supported by this driver"
# Allowed beyond a check's deadline: rendering the report and leaving the process.
SLACK_S = 0.5


def U(reason: str) -> dict:
    """An unknown fact as the JSON facts tree shows it."""
    return {"unknown": reason}


# --- building the fake library ----------------------------------------------------------------------


def _compile(out_dir: Path, *defines: str) -> Path:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.fail("no C compiler (cc or gcc) on PATH: the fake NVML library is built from C")
    out_dir.mkdir(parents=True, exist_ok=True)
    argv = [cc, "-shared", "-fPIC", "-O1", *defines, "-o", str(out_dir / LIBRARY), str(FAKE / "fake_nvml.c")]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"{' '.join(argv)} failed:\n{proc.stderr}"
    return out_dir


@pytest.fixture(scope="session")
def fake_lib(tmp_path_factory) -> Path:
    """A directory holding the fake libnvidia-ml.so.1 (compiled once per test session)."""
    return _compile(tmp_path_factory.mktemp("fake-nvml"))


@pytest.fixture(scope="session")
def old_driver_lib(tmp_path_factory) -> Path:
    """The same, as a driver before r535: without the calls such drivers lack."""
    return _compile(tmp_path_factory.mktemp("fake-nvml-old"), "-DFAKE_NVML_OLD_DRIVER")


# --- running gpudoctor against it ---------------------------------------------------------------------


@dataclass
class Run:
    rc: int
    stdout: str
    stderr: str
    wall: float  # seconds, from starting the process to its end

    def json(self) -> dict:
        return json.loads(self.stdout)


def gpudoctor(lib_dir: Path, scenario: Optional[str], *args: str) -> Run:
    """`python -m gpudoctor ARGS` with the fake library (or whatever lib_dir holds) first on the loader's
    path, in a clean environment; asserts what every run must satisfy: no traceback, exit code 0 or 1."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/"),
        "LD_LIBRARY_PATH": str(lib_dir),
        "NO_COLOR": "1",
        # This tree's gpudoctor, not whichever copy the interpreter has installed.
        "PYTHONPATH": str(Path(__file__).parents[1]),
    }
    if scenario is not None:
        env["FAKE_NVML_SCENARIO"] = str(SCENARIOS / f"{scenario}.scn")
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "gpudoctor", *args],
        cwd=str(lib_dir),  # not the repository: no policy file or pyproject settings of ours apply
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    run = Run(proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start)
    assert "Traceback" not in run.stderr, run.stderr
    assert run.rc in (0, 1), f"exit {run.rc}\n{run.stderr}"
    return run


def check(lib_dir: Path, scenario: Optional[str], timeout: float = 10) -> dict:
    """A JSON check, which must end by its deadline, with the exit code its findings imply (1 for an
    error, with --fail-on error)."""
    run = gpudoctor(
        lib_dir, scenario, "check", "--format", "json", "--fail-on", "error", "--timeout", str(timeout)
    )
    # Measured from the process's start, so this includes starting Python and importing gpudoctor.
    assert run.wall < timeout + SLACK_S, f"{run.wall:.2f} s"
    data = run.json()
    errors = [f for f in data["findings"] if f["severity"] == "error"]
    assert run.rc == (1 if errors else 0) == data["summary"]["exit_code"]
    return data


def flat(tree: Any, prefix: str = "") -> dict:
    """A GPU's nested facts as {"pcie.width_current": value}; unknown facts stay {"unknown": reason}."""
    if isinstance(tree, dict) and set(tree) != {"unknown"}:
        out: dict = {}
        for k, v in tree.items():
            out.update(flat(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: tree}


def gpu_facts(data: dict) -> list[dict]:
    """Each GPU's facts, flat, without the sysfs link readings (those come from this machine's sysfs)."""
    return [
        {k: v for k, v in flat(g).items() if not k.startswith("pcie.sysfs_")} for g in data["facts"]["gpus"]
    ]


def h100(i: int, **changes: Any) -> dict:
    """GPU i of the fake's healthy HGX H100 node, as gpudoctor's facts; `changes` use "__" for "."."""
    facts = {
        "index": i, "name": "NVIDIA H100 80GB HBM3", "uuid": f"GPU-fa4e0000-0000-4000-8000-{i:012d}",
        "bus_id": f"0000:{BUSES[i]:02x}:00.0", "brand": "nvidia", "architecture": "Hopper",
        "compute_capability": "9.0", "compute_mode": "Default", "virtualization_mode": "None",
        "persistence_mode": True,
        "memory.total_bytes": 85520809984, "memory.used_bytes": 555745280,
        "pcie.gen_current": 5, "pcie.gen_max": 5, "pcie.gen_gpu_max": 5, "pcie.width_current": 16,
        "pcie.width_max": 16, "pcie.replay_counter": 0,
        "clocks.sm_mhz": 345, "clocks.sm_max_mhz": 1980, "clocks.mem_mhz": 2619, "clocks.mem_max_mhz": 2619,
        "clocks.event_reasons": 1, "clocks.event_reason_names": ["GpuIdle"],
        "utilization.gpu": 0, "utilization.memory": 0,
        "temperature.gpu_c": 33, "temperature.slowdown_c": 87, "temperature.shutdown_c": 92,
        "power.draw_w": 71.0, "power.limit_w": 700.0, "power.default_limit_w": 700.0,
        "mig.current": False, "mig.pending": False, "ecc.enabled": True, "ecc.pending": True,
        "ecc.uncorrected_volatile": 0, "ecc.uncorrected_aggregate": 0, "ecc.corrected_volatile": 0,
        "remapped_rows.correctable": 0, "remapped_rows.uncorrectable": 0, "remapped_rows.pending": False,
        "remapped_rows.failed": False,
        "nvlink.links": 18, "nvlink.links_up": 18, "nvlink.links_down": 0, "nvlink.down": [],
        "nvlink.version": 4,
        # Derived (gpudoctor/derive.py): the catalogue's h100-sxm row wires all 18 links.
        "nvlink.links_wired": 18, "nvlink.links_down_wired": 0, "nvlink.down_wired": [],
        # The fake has no nvmlDeviceGetP2PStatus or nvmlDeviceGetTopologyCommonAncestor: pynvml says so.
        "p2p.no_read": U(NO_PEER_CALLS), "p2p.no_read_count": U(NO_PEER_CALLS),
        "topology.cross_socket": U(NO_PEER_CALLS), "topology.cross_socket_count": U(NO_PEER_CALLS),
    }  # fmt: skip
    for key, value in changes.items():
        key = key.replace("__", ".")
        assert key in facts, key
        facts[key] = value
    return facts


def all_unknown(i: int, reason: str) -> dict:
    """GPU i when nothing could be read from it: every fact unknown for one reason, but its index."""
    facts = {field: U(reason) for field in FIELDS if not field.startswith("pcie.sysfs_")}
    facts["index"] = i
    # The derived NVLink facts are unknown for the same reason as the link states they come from.
    facts.update({f"nvlink.{f}": U(reason) for f in ("links_wired", "links_down_wired", "down_wired")})
    return facts


def gpu_findings(data: dict) -> list[tuple[str, Optional[int]]]:
    return sorted((f["rule"], f["item"]) for f in data["findings"] if f["category"] == "gpu")


def rule(data: dict, rule_id: str) -> dict:
    return next(r for r in data["rules"] if r["id"] == rule_id)


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
    # --no-redact: `facts` redacts GPU UUIDs by default (tests/test_redaction.py); here they are compared.
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
             nvlink__down_wired=[5]),
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
        h100(0, mig__current=True, mig__pending=True, utilization__gpu=U("not supported"),
             utilization__memory=U("not supported"), ecc__uncorrected_volatile=no,
             ecc__uncorrected_aggregate=no, ecc__corrected_volatile=no, remapped_rows__correctable=no,
             remapped_rows__uncorrectable=no, remapped_rows__pending=no, remapped_rows__failed=no,
             clocks__event_reasons=no, clocks__event_reason_names=no),
        h100(1),
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
    # With one GPU there is no peer to ask about: no peer is unreachable, a known fact.
    expected.update({"p2p.no_read": [], "p2p.no_read_count": 0, "topology.cross_socket": [],
                     "topology.cross_socket_count": 0})  # fmt: skip
    assert gpu_facts(data) == [expected]
    assert gpu_findings(data) == []
    assert {r: rule(data, r)["status"] for r in GPU_RULES} == {
        **dict.fromkeys(GPU_RULES, "unknown"), "GD-NVLINK-001": "passed", "GD-NVLINK-002": "passed",
    }  # fmt: skip


def test_one_lost_gpu_never_hides_the_others(fake_lib):
    data = check(fake_lib, "gpu-lost")
    assert gpu_facts(data) == [h100(i) if i != 4 else all_unknown(4, "GPU is lost") for i in range(8)]
    assert gpu_findings(data) == []
    assert rule(data, "GD-ECC-001")["unknown_facts"] == {"gpus[4].ecc.uncorrected_volatile": "GPU is lost"}
    assert data["timed_out"] == []


def test_old_driver_without_newer_calls(old_driver_lib):
    data = check(old_driver_lib, "old-driver")
    missing = U("not supported by this driver")  # pynvml: NVMLError_FunctionNotFound
    # Clock reasons come through the older ThrottleReasons call.
    assert gpu_facts(data) == [
        h100(0, pcie__gen_gpu_max=missing),
        h100(1, pcie__gen_gpu_max=missing, clocks__event_reasons=8,
             clocks__event_reason_names=["HwSlowdown"]),
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
    # GPUs read before the hang are intact; from the hung call on, NVML is not asked again.
    assert gpu_facts(data) == [h100(i) if i < 3 else all_unknown(i, "timed out") for i in range(8)]
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

# Calls nvmlInit_v2 straight through ctypes, by path, for each scenario named: a scenario with a mistake
# would otherwise pass silently as the default healthy host.
INIT_EACH = """
import ctypes, os, sys
lib = ctypes.CDLL(sys.argv[1])
for path in sys.argv[2:]:
    os.environ["FAKE_NVML_SCENARIO"] = path
    print(lib.nvmlInit_v2(), flush=True)
"""


def _init_codes(lib_dir: Path, *scenarios: Path) -> tuple[list[int], str]:
    argv = [sys.executable, "-c", INIT_EACH, str(lib_dir / LIBRARY), *map(str, scenarios)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    return [int(x) for x in proc.stdout.split()], proc.stderr


def test_every_scenario_file_is_valid(fake_lib):
    files = sorted(SCENARIOS.glob("*.scn"))
    assert len(files) == 16
    expected = {"version-mismatch.scn": 18, "driver-not-loaded.scn": 9}  # NVML's codes for the two
    codes, stderr = _init_codes(fake_lib, *files)
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
    ],
)
def test_a_scenario_mistake_fails_loudly(fake_lib, tmp_path, line, problem):
    bad = tmp_path / "bad.scn"
    bad.write_text(f"# a scenario with a mistake\n{line}\n")
    codes, stderr = _init_codes(fake_lib, bad)
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

PACKAGE = Path(__file__).resolve().parents[1] / "gpudoctor"
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


# --- docs/reliability.md -----------------------------------------------------------------------------


def test_reliability_doc_names_only_tests_that_exist():
    root = Path(__file__).resolve().parents[1]
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
