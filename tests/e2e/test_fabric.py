"""The fabric probe end to end: the fake libnvidia-ml.so.1 (tests/fake_nvml/fake_nvml.c, part 3) loaded by the
real pynvml, through the live Host, `gpudoctor check` and `gpudoctor snapshot` as users run them.

The fake lays out nvmlGpuFabricInfo_t, _v2_t and _v3_t as nvml.h does and pynvml's ctypes classes mirror
them, and refuses a version word it does not accept with NVML_ERROR_ARGUMENT_VERSION_MISMATCH, so the
structures, their version words and the passing by reference are exercised as on a driver. The services'
facts (systemd, nv-fabricmanager) and the NVSwitch count come from the machine running the tests and are
not asserted here (tests/probes/test_fabric.py stages them).
"""

from __future__ import annotations

import json
import tarfile

import pytest

from nvmlrig import SCENARIOS, U, check, gpudoctor, init_codes

FABRIC_RULES = ("GD-FABRIC-001", "GD-FABRIC-002", "GD-FABRIC-005")  # those NVML's answers alone decide
HEALTHY = 0x1AA
NOT_YET = "GPU {} has not joined its NVLink fabric (fabric state: {}); CUDA fails to start here with error 802, system not yet initialized, until it has."  # noqa: E501


def fabric_gpu(i: int, **changes) -> dict:
    """GPU i of the fake's HGX H100 board, its fabric set up, as the facts tree shows it."""
    facts = {"index": i, "state": "completed", "status": "NVML_SUCCESS", "clique_id": 0,
             "health_mask": HEALTHY, "bandwidth": "full", "health_summary": "healthy"}  # fmt: skip
    for key, value in changes.items():
        assert key in facts, key
        facts[key] = value
    return facts


def rule_status(data: dict) -> dict:
    return {r["id"]: r["status"] for r in data["rules"] if r["id"] in FABRIC_RULES}


def findings(data: dict, rule_id: str) -> list[tuple]:
    return [(f["item"], f["message"]) for f in data["findings"] if f["rule"] == rule_id]


def test_healthy_board_has_its_fabric_up(fake_lib):
    data = check(fake_lib, "healthy-h100-8")
    assert data["facts"]["fabric"]["gpus"] == [fabric_gpu(i) for i in range(8)]
    assert data["facts"]["fabric"]["nvswitch_system"] is True  # the GPUs say so, whatever this PCI bus holds
    assert rule_status(data) == dict.fromkeys(FABRIC_RULES, "passed")


def test_fabric_manager_not_run_yet_fails_every_gpu(fake_lib):
    data = check(fake_lib, "fabric-not-started")
    unset = "set once the fabric state is completed ({})"
    assert data["facts"]["fabric"]["gpus"] == [
        fabric_gpu(i, state=s, status=U(unset.format(s)), clique_id=U(unset.format(s)))
        for i, s in enumerate(["not started"] * 7 + ["in progress"])
    ]
    assert findings(data, "GD-FABRIC-001") == [
        (i, NOT_YET.format(i, "in progress" if i == 7 else "not started")) for i in range(8)
    ]
    assert all(f["severity"] == "error" for f in data["findings"] if f["rule"] == "GD-FABRIC-001")
    assert data["summary"]["exit_code"] == 1
    # The other GPU facts are those of a healthy board: only the fabric is not up.
    assert {f["rule"] for f in data["findings"] if f["category"] == "gpu"} == {"GD-FABRIC-001"}


def test_each_fabric_structure_and_fault(fake_lib):
    data = check(fake_lib, "fabric-faults")
    none_v1 = U("nvmlDeviceGetGpuFabricInfo's structure has no health fields")
    # GPU 0's padding after its one-byte state is 0xA5A5A5: read as nvml.h lays it out, the state is 3.
    assert data["facts"]["fabric"]["gpus"] == [
        fabric_gpu(0, clique_id=7),
        fabric_gpu(1, clique_id=7, status="NVML_ERROR_INSUFFICIENT_RESOURCES"),
        fabric_gpu(2, clique_id=7, health_mask=0x1A9, bandwidth="degraded",
                   health_summary=U("the driver answers only the v2 structure: no health summary")),
        fabric_gpu(3, clique_id=7, health_mask=none_v1, bandwidth=none_v1, health_summary=none_v1),
    ]  # fmt: skip
    failed = "GPU 1's registration with its NVLink fabric completed with an error: {}."
    assert findings(data, "GD-FABRIC-002") == [(1, failed.format("NVML_ERROR_INSUFFICIENT_RESOURCES"))]
    assert findings(data, "GD-FABRIC-005") == [
        (2, "GPU 2 reaches its NVLink fabric at degraded bandwidth (NVML fabric health: unknown).")
    ]
    assert findings(data, "GD-FABRIC-001") == []


def test_single_pcie_gpu_passes_every_fabric_rule(fake_lib):
    data = check(fake_lib, "pcie-single-gpu")
    no = U("no NVLink fabric")
    assert data["facts"]["fabric"]["gpus"] == [
        {"index": 0, "state": "not supported", "status": no, "clique_id": no, "health_mask": no,
         "bandwidth": no, "health_summary": no}
    ]  # fmt: skip
    assert rule_status(data) == dict.fromkeys(FABRIC_RULES, "passed")
    assert [f for f in data["findings"] if f["rule"].startswith(("GD-FABRIC", "GD-IMEX"))] == []


def test_a_gpu_that_answers_nothing_optional_has_no_fabric(fake_lib):
    # `default NOT_SUPPORTED`: all three fabric calls answer NotSupported: known "not supported", not unknown.
    data = check(fake_lib, "all-not-supported")
    assert data["facts"]["fabric"]["gpus"][0]["state"] == "not supported"
    assert rule_status(data) == dict.fromkeys(FABRIC_RULES, "passed")


def test_a_lost_gpu_leaves_only_its_fabric_unknown(fake_lib, tmp_path):
    # Lost from its first call (the gpu-lost scenario's GPU 4 answers ten calls first, in whatever order the
    # probes ask them).
    scenario = tmp_path / "lost.scn"
    scenario.write_text("gpus 8\ngpu.4.lost_after 0\n")
    data = check(fake_lib, str(scenario.with_suffix("")))
    states = [g["state"] for g in data["facts"]["fabric"]["gpus"]]
    assert states == ["completed"] * 4 + [U("GPU is lost")] + ["completed"] * 3
    assert next(r for r in data["rules"] if r["id"] == "GD-FABRIC-001")["unknown_facts"] == {
        "fabric.gpus[4].state": "GPU is lost"
    }


def test_a_driver_without_the_calls(old_driver_lib):
    # Built -DFAKE_NVML_OLD_DRIVER: neither symbol; pynvml says NVMLError_FunctionNotFound for each.
    data = check(old_driver_lib, "old-driver")
    assert [g["state"] for g in data["facts"]["fabric"]["gpus"]] == ["not supported"] * 2
    assert rule_status(data) == dict.fromkeys(FABRIC_RULES, "passed")


def test_preflight_fails_on_a_fabric_not_up(fake_lib):
    run = gpudoctor(fake_lib, "fabric-not-started", "check", "--profile", "preflight")
    fix = " · fix: sudo systemctl enable --now nvidia-fabricmanager"
    assert (run.rc, run.stdout) == (1, "")
    states = ["not started"] * 7 + ["in progress"]
    assert run.stderr.splitlines() == [
        f"gpudoctor: ERROR GD-FABRIC-001: {NOT_YET.format(i, state)}{fix}" for i, state in enumerate(states)
    ]


def test_snapshot_records_the_fabric_redacted_and_replays_it(fake_lib, tmp_path):
    scenario = tmp_path / "rack.scn"
    scenario.write_text((SCENARIOS / "fabric-not-started.scn").read_text() + "fabric_cluster 0xc0\n")
    out = tmp_path / "snap.tar.gz"
    # The scenario is named relative to SCENARIOS by gpudoctor(); a path outside it works as an absolute one.
    run = gpudoctor(fake_lib, str(scenario.with_suffix("")), "snapshot", "-o", str(out))
    assert run.rc == 0, run.stderr
    with tarfile.open(out) as tar:
        nvml = json.load(tar.extractfile("nvml.json"))
    reading = nvml["devices"]["0"]["nvmlDeviceGetGpuFabricInfoV(v3)"]
    assert reading["clusterUuid"] == [0] * 15 + [1]  # the rack's UUID (0xc0, 0xc1, ...) numbered, not kept
    assert (reading["state"], reading["version"]) == (1, 0x3000028)
    replay = gpudoctor(fake_lib, None, "check", "--snapshot", str(out), "--format", "json").json()
    assert [(i, m) for i, m in findings(replay, "GD-FABRIC-001")] == [
        (i, NOT_YET.format(i, "in progress" if i == 7 else "not started")) for i in range(8)
    ]


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("fabric_state 4", "fabric_state: out of range"),
        ("fabric_status NOT_A_CODE", "fabric_status: expected a return code"),
        ("fabric_health lots", "fabric_health: not a number"),
        ("gpu.1.fabric_info_version 1", "fabric_info_version: expected 2 or 3"),
        ("fabric_sate 1", "fabric_sate: unknown key"),
    ],
)
def test_a_fabric_scenario_mistake_fails_loudly(fake_lib, tmp_path, line, problem):
    bad = tmp_path / "bad.scn"
    bad.write_text(f"gpus 2\n{line}\n")
    codes, stderr = init_codes(fake_lib, bad)
    assert (codes, stderr.strip()) == ([999], f"fake_nvml: {bad}:2: {problem}")
