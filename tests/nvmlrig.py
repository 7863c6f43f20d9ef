"""The fake NVML rig: tests/fake_nvml/fake_nvml.c built into a libnvidia-ml.so.1 that the real pynvml loads,
its scenarios, and `python -m gpudoctor` run against it with the facts and findings read back.

pynvml dlopens the library by name, so the loader finds the fake through LD_LIBRARY_PATH; a scenario file
(tests/fake_nvml/scenarios/*.scn, named in FAKE_NVML_SCENARIO) scripts what it answers. The session fixtures
`fake_lib` and `old_driver_lib` (tests/conftest.py) build it once a session with `compile_fake`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Union

import pytest

FAKE = Path(__file__).parent / "fake_nvml"
SCENARIOS = FAKE / "scenarios"
LIBRARY = "libnvidia-ml.so.1"
# The fake's default PCI bus numbers: an HGX H100 board's.
BUSES = (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)
# Allowed beyond a check's deadline: rendering the report and leaving the process.
SLACK_S = 0.5


def U(reason: str) -> dict:
    """An unknown fact as the JSON facts tree shows it."""
    return {"unknown": reason}


# --- building the fake library ----------------------------------------------------------------------


def compile_fake(out_dir: Path, *defines: str) -> Path:
    """The fake libnvidia-ml.so.1 built into out_dir (with the C `defines`); returns out_dir."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.fail("no C compiler (cc or gcc) on PATH: the fake NVML library is built from C")
    out_dir.mkdir(parents=True, exist_ok=True)
    argv = [cc, "-shared", "-fPIC", "-O1", *defines, "-o", str(out_dir / LIBRARY), str(FAKE / "fake_nvml.c")]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"{' '.join(argv)} failed:\n{proc.stderr}"
    return out_dir


# --- running gpudoctor against it ---------------------------------------------------------------------


@dataclass
class Run:
    rc: int
    stdout: str
    stderr: str
    wall: float  # seconds, from starting the process to its end

    def json(self) -> dict:
        return json.loads(self.stdout)


def gpudoctor(
    lib_dir: Path, scenario: Union[str, Path, None], *args: str, extra_env: Optional[dict] = None
) -> Run:
    """`python -m gpudoctor ARGS` with the fake library (or whatever lib_dir holds) first on the loader's
    path, in a clean environment (plus `extra_env`); asserts what every run must satisfy: no traceback, exit
    code 0 or 1. `scenario` names a file in SCENARIOS without its .scn, or is the path of one elsewhere."""
    env = {
        **(extra_env or {}),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/"),
        "LD_LIBRARY_PATH": str(lib_dir),
        "NO_COLOR": "1",
        # This tree's gpudoctor, not whichever copy the interpreter has installed.
        "PYTHONPATH": str(Path(__file__).parents[1]),
    }
    if scenario is not None:
        path = scenario if isinstance(scenario, Path) else SCENARIOS / f"{scenario}.scn"
        env["FAKE_NVML_SCENARIO"] = str(path)
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


def check(lib_dir: Path, scenario: Union[str, Path, None], timeout: float = 10) -> dict:
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


SYSFS_FIELDS = ("pcie.sysfs_", "numa_node")  # read from sysfs: this machine's, not the scenario's


def gpu_facts(data: dict) -> list[dict]:
    """Each GPU's facts, flat, without the sysfs readings (the link, the NUMA node: those come from this
    machine's sysfs)."""
    return [
        {k: v for k, v in flat(g).items() if not k.startswith(SYSFS_FIELDS)} for g in data["facts"]["gpus"]
    ]


def socket_of(i: int) -> int:
    """The fake's default CPU socket of GPU i: an HGX board's GPUs 0-3 on socket 0, 4-7 on socket 1."""
    return i % 8 // 4


def h100(i: int, gpus: int = 8, **changes: Any) -> dict:
    """GPU i of the fake's healthy HGX H100 node of `gpus` GPUs, as gpudoctor's facts; `changes` use "__"
    for "."."""
    # Every pair P2P OK; the peers on the other socket are NVML_TOPOLOGY_SYSTEM (SYS), the others on its
    # own NVML_TOPOLOGY_NODE (NODE).
    cross = [j for j in range(gpus) if socket_of(j) != socket_of(i)]
    levels = ["X" if j == i else "SYS" if j in cross else "NODE" for j in range(gpus)]
    facts = {
        "index": i, "name": "NVIDIA H100 80GB HBM3", "uuid": f"GPU-fa4e0000-0000-4000-8000-{i:012d}",
        "bus_id": f"0000:{BUSES[i]:02x}:00.0", "brand": "nvidia", "architecture": "Hopper",
        "compute_capability": "9.0", "compute_mode": "Default", "virtualization_mode": "None",
        "persistence_mode": True, "lost": False, "recovery_action": "none",
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
        "nvlink.version": 4, "nvlink.peers": ["nvswitch"] * 18,  # every link to an NVSwitch
        # Derived (gpudoctor/derive.py): the catalogue's h100-sxm row wires all 18 links.
        "nvlink.links_wired": 18, "nvlink.links_down_wired": 0, "nvlink.down_wired": [],
        "p2p.no_read": [], "p2p.no_read_count": 0,
        "topology.cross_socket": cross, "topology.cross_socket_count": len(cross), "topology.levels": levels,
    }  # fmt: skip
    for key, value in changes.items():
        key = key.replace("__", ".")
        assert key in facts, key
        facts[key] = value
    return facts


def gpu_findings(data: dict) -> list[tuple[str, Optional[int]]]:
    return sorted((f["rule"], f["item"]) for f in data["findings"] if f["category"] == "gpu")


def rule(data: dict, rule_id: str) -> dict:
    return next(r for r in data["rules"] if r["id"] == rule_id)


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


def init_codes(lib_dir: Path, *scenarios: Path) -> tuple[list[int], str]:
    """nvmlInit_v2's return code for each scenario file, and what the fake wrote on stderr."""
    argv = [sys.executable, "-c", INIT_EACH, str(lib_dir / LIBRARY), *map(str, scenarios)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    return [int(x) for x in proc.stdout.split()], proc.stderr
