"""`gpudoctor nccl` end to end: a real process whose NVML is the fake libnvidia-ml (tests/fake_nvml, loaded
by the real pynvml), on scenarios built from real `nvidia-smi topo -m` outputs (each scenario cites its
own), with a real `bench` report for the measured all-reduce."""

from __future__ import annotations

from tests.bench.torchfake import scenario
from tests.commands.test_bench import bench
from tests.nccl.topo_texts import PCIE8_1817_LOG

from conftest import run_cli
from nvmlrig import gpudoctor


def test_a_pcie_node_on_two_sockets_goes_through_host_memory_between_switches(fake_lib):
    """NVIDIA/nccl#1817's 8x L20 (tests/fake_nvml/scenarios/pcie-l20-8.scn): pairs under one PCIe switch
    (PIX) talk peer-to-peer, the others through host memory, as that thread's NCCL log says
    (`via SHM/direct/direct`); that is the hardware's best, so no finding."""
    run = gpudoctor(fake_lib, "pcie-l20-8", "nccl")
    assert run.rc == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[3:6] == [
        "        GPU0     GPU1     GPU2     GPU3     GPU4     GPU5     GPU6     GPU7",
        "  GPU0  X        P2P/PIX  SHM/PHB  SHM/PHB  SHM/SYS  SHM/SYS  SHM/SYS  SHM/SYS",
        "  GPU1  P2P/PIX  X        SHM/PHB  SHM/PHB  SHM/SYS  SHM/SYS  SHM/SYS  SHM/SYS",
    ]
    assert "No finding: every pair and GPU predicted takes the best path the hardware allows." in lines


def test_p2p_disabled_in_the_environment_is_the_one_line_that_says_why(fake_lib):
    """The HGX H100 (nvswitch-h100-8.scn) with NCCL_P2P_DISABLE=1 left in the environment: every pair
    falls to host memory; exit 1 and the fix."""
    run = gpudoctor(
        fake_lib, "nvswitch-h100-8", "nccl", "--format", "json", extra_env={"NCCL_P2P_DISABLE": "1"}
    )
    assert run.rc == 1, run.stderr
    data = run.json()
    assert (data["schema"], data["schema_version"], data["exit_code"]) == ("gpudoctor.nccl", 1, 1)
    assert {p["transport"] for p in data["pairs"]} == {"shm"} and len(data["pairs"]) == 56
    (finding,) = data["findings"]
    assert (finding["code"], finding["fix"], len(finding["subjects"])) == (
        "env-p2p-disable",
        "unset NCCL_P2P_DISABLE",
        28,
    )
    # and check says it too, as GD-NCCL-004
    checked = gpudoctor(
        fake_lib, "nvswitch-h100-8", "check", "--format", "json", extra_env={"NCCL_P2P_DISABLE": "1"}
    )
    (rule,) = [f for f in checked.json()["findings"] if f["rule"] == "GD-NCCL-004"]
    assert rule["message"].startswith(
        "NCCL will move data between GPUs of this node by a slower path than the hardware gives it: every "
        "GPU pair (28): NCCL_P2P_DISABLE=1 turns P2P off"
    )


def test_a_bench_report_is_measured_against_the_prediction(fake_lib, fake_torch_python, tmp_path):
    """A real `gpudoctor bench` report of the same HGX H100 (the fake torch measures its all-reduce): the
    measured bus bandwidth beside the predicted one."""
    rates = scenario(tmp_path, gpus=8, rates={"allreduce": 360})
    measured = bench(fake_lib, "nvswitch-h100-8", rates, "--python", fake_torch_python, "--format", "json")
    report = tmp_path / "bench.json"
    report.write_text(measured.stdout, encoding="utf-8")
    data = gpudoctor(fake_lib, "nvswitch-h100-8", "nccl", "--format", "json", "--bench", str(report)).json()
    busbw = data["busbw"]
    assert (busbw["predicted_gbs"], busbw["measured_gbs"], busbw["ratio"]) == (450.0, 360.0, 0.8)


def test_an_unreadable_input_is_exit_2_with_its_reason(tmp_path):
    r = run_cli("nccl", "--bench", str(tmp_path / "none.json"))
    assert r.returncode == 2 and r.stderr.startswith("gpudoctor: --bench ") and "No such file" in r.stderr
    r = run_cli("nccl", "--log", str(tmp_path))
    assert r.returncode == 2 and r.stderr.startswith("gpudoctor: --log "), r.stderr


def test_nccls_own_log_agrees_and_a_disagreement_is_reported(fake_lib, tmp_path):
    """NVIDIA/nccl#1817's NCCL_DEBUG=INFO lines (tests/nccl/topo_texts.py) on that thread's node agree with
    the prediction (SHM between sockets); the same lines read against the HGX H100, where NVLink joins
    every pair, disagree, and the report says so with exit 1."""
    log = tmp_path / "nccl.log"
    log.write_text(PCIE8_1817_LOG, encoding="utf-8")
    same = gpudoctor(fake_lib, "pcie-l20-8", "nccl", "--format", "json", "--log", str(log)).json()
    assert same["log"] == {
        "path": str(log), "nccl_version": None, "pairs": 4, "network_gpus": 0, "problem": None,
        "disagreements": [],
    }  # fmt: skip
    other = gpudoctor(fake_lib, "nvswitch-h100-8", "nccl", "--log", str(log))
    assert other.rc == 1
    assert (
        "    GPU0 -> GPU4: predicted p2p-nvlink, NCCL used shm (SHM/direct/direct)"
        in other.stdout.splitlines()
    )


def test_nccl_variables_and_a_network_plugin_reach_the_prediction(fake_lib, tmp_path):
    """The 8x L20 node of NVIDIA/nccl#1817 with NCCL_SHM_DISABLE=1 and NCCL_NET_PLUGIN naming a plugin file
    (named as microsoft/mrc-nccl-plugin's README sets it, `NCCL_NET_PLUGIN=$PWD/libnccl-net-mrc.so`): the
    pairs that went through host memory go over the network, a finding, and the network is the plugin's,
    which the prediction says it does not model."""
    plugin = tmp_path / "libnccl-net-mrc.so"
    plugin.write_bytes(b"")
    run = gpudoctor(
        fake_lib,
        "pcie-l20-8",
        "nccl",
        "--format",
        "json",
        extra_env={"NCCL_SHM_DISABLE": "1", "NCCL_NET_PLUGIN": str(plugin)},
    )
    assert run.rc == 1, run.stderr
    data = run.json()
    transports = {(p["src"], p["dst"]): p["transport"] for p in data["pairs"]}
    assert (transports[(0, 1)], transports[(0, 2)], transports[(0, 4)]) == ("p2p-pcie", "net", "net")
    assert [f["code"] for f in data["findings"]] == ["env-shm-disable"]
    assert data["network"]["name"] is None
    assert data["network"]["reasons"][0].startswith(f"NCCL loads the network plugin {plugin} first")
