"""The examples under examples/ run as they are written: the container entrypoint and the Slurm health
check as scripts, with the repository's gpudoctor first on PATH; the YAML examples parse."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import H200

ROOT = Path(__file__).parents[2]
EXAMPLES = ROOT / "examples"
ENTRYPOINT = EXAMPLES / "container" / "entrypoint.sh"
HEALTHCHECK = EXAMPLES / "slurm" / "gpudoctor-healthcheck.sh"


def _bin(tmp_path: Path) -> Path:
    """A bin directory whose `gpudoctor` is this repository's, run by this interpreter."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    exe = bin_dir / "gpudoctor"
    exe.write_text(f'#!/bin/sh\nPYTHONPATH="{ROOT}" exec "{sys.executable}" -m gpudoctor "$@"\n')
    exe.chmod(0o755)
    return bin_dir


def _env(tmp_path: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUDOCTOR", "SLURM"))}
    env.update(NO_COLOR="1", PATH=f"{_bin(tmp_path)}{os.pathsep}{os.environ.get('PATH', '')}", **extra)
    return env


def _failing_policy(tmp_path: Path) -> Path:
    path = tmp_path / "needs-8-gpus.toml"
    path.write_text("[gpus]\ncount = 8\n")
    return path


def _run(argv: list, env: dict, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)


def test_entrypoint_healthy_execs_the_command(tmp_path):
    env = _env(tmp_path, GPUDOCTOR_ARGS=f"--snapshot {H200}")
    # The command prints its own PID and exits 7: exec means it IS the entrypoint's process, and its
    # exit status is the container's.
    proc = _run([str(ENTRYPOINT), "sh", "-c", 'echo "job $$ $0"; exit 7', "arg0"], env, tmp_path)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 7
    assert out == f"job {proc.pid} arg0\n"
    assert (
        err == "gpudoctor: ok · 1 × NVIDIA H200 · driver 580.159.04 · CUDA 13.0 · 1 warning(s): GD-FW-004 · "
        "7 rule(s) could not be evaluated\n"
    )


def test_entrypoint_failing_check_does_not_run_the_command(tmp_path):
    marker = tmp_path / "ran"
    env = _env(tmp_path, GPUDOCTOR_ARGS=f"--snapshot {H200} --policy {_failing_policy(tmp_path)}")
    proc = _run([str(ENTRYPOINT), "touch", str(marker)], env, tmp_path)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert not marker.exists()
    assert out == ""
    assert err.startswith(
        "gpudoctor: ERROR POLICY-GPU-COUNT: The policy requires exactly 8 GPU(s); 1 visible."
    )


def test_entrypoint_live_on_this_machine_ends_and_decides(tmp_path):
    """Whatever this machine is, the preflight answers in its deadline and either runs the job or not."""
    proc = _run([str(ENTRYPOINT), "echo", "job ran"], _env(tmp_path), tmp_path)
    out, err = proc.communicate(timeout=30)
    assert err.startswith("gpudoctor: ")
    assert (proc.returncode, out) in ((0, "job ran\n"), (1, ""))


def _fake_scontrol(tmp_path: Path) -> Path:
    log = tmp_path / "scontrol.log"
    fake = _bin(tmp_path) / "scontrol"
    fake.write_text(f'#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done >> "{log}"\n')
    fake.chmod(0o755)
    return log


def test_slurm_healthcheck_drains_the_node_with_the_finding_as_reason(tmp_path):
    log = _fake_scontrol(tmp_path)
    env = _env(
        tmp_path,
        SLURMD_NODENAME="gpu-node-07",
        GPUDOCTOR_ARGS=f"--snapshot {H200} --policy {_failing_policy(tmp_path)}",
    )
    proc = _run([str(HEALTHCHECK)], env, tmp_path)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert log.read_text().splitlines() == [
        "update",
        "nodename=gpu-node-07",
        "state=drain",
        "reason=gpudoctor: ERROR POLICY-GPU-COUNT: The policy requires exactly 8 GPU(s); 1 visible.",
    ]
    assert "draining gpu-node-07" in err


def test_slurm_healthcheck_leaves_a_healthy_node_alone(tmp_path):
    log = _fake_scontrol(tmp_path)
    env = _env(tmp_path, SLURMD_NODENAME="gpu-node-07", GPUDOCTOR_ARGS=f"--snapshot {H200}")
    proc = _run([str(HEALTHCHECK)], env, tmp_path)
    proc.communicate(timeout=60)
    assert proc.returncode == 0 and not log.exists()


def test_slurm_healthcheck_does_not_drain_when_gpudoctor_cannot_run(tmp_path):
    log = _fake_scontrol(tmp_path)
    env = _env(tmp_path, SLURMD_NODENAME="n1", GPUDOCTOR_ARGS="--snapshot /nonexistent.tar.gz")
    proc = _run([str(HEALTHCHECK)], env, tmp_path)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and not log.exists()
    assert "could not check this node (exit 2)" in err


def test_slurm_healthcheck_scontrol_comes_from_a_variable(tmp_path):
    log = _fake_scontrol(tmp_path)
    moved = tmp_path / "my-scontrol"
    (tmp_path / "bin" / "scontrol").rename(moved)
    env = _env(
        tmp_path,
        SCONTROL=str(moved),
        SLURMD_NODENAME="n2",
        GPUDOCTOR_ARGS=f"--snapshot {H200} --policy {_failing_policy(tmp_path)}",
    )
    proc = _run([str(HEALTHCHECK)], env, tmp_path)
    proc.communicate(timeout=60)
    assert proc.returncode == 1 and log.read_text().splitlines()[1] == "nodename=n2"


@pytest.mark.parametrize("path", sorted(EXAMPLES.rglob("*.y*ml")), ids=lambda p: p.name)
def test_yaml_examples_parse(path):
    docs = list(yaml.safe_load_all(path.read_text()))
    assert docs and all(isinstance(d, dict) for d in docs)


def test_yaml_examples_say_what_they_should():
    job = yaml.safe_load((EXAMPLES / "kubernetes" / "gpudoctor-job.yaml").read_text())
    assert (job["kind"], job["spec"]["template"]["spec"]["restartPolicy"]) == ("Job", "Never")
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["args"][:2] == ["gpudoctor", "check"]
    ds = yaml.safe_load((EXAMPLES / "kubernetes" / "gpudoctor-daemonset.yaml").read_text())
    assert ds["kind"] == "DaemonSet"
    script = ds["spec"]["template"]["spec"]["containers"][0]["args"][0]
    assert "gpudoctor check --format prometheus" in script
    gate = yaml.safe_load((EXAMPLES / "github-actions" / "gpu-gate.yml").read_text())
    run = "\n".join(s.get("run", "") for s in gate["jobs"]["gpu-gate"]["steps"])
    assert "--format junit --fail-on warning" in run and "--format markdown" in run
    assert "self-hosted" in gate["jobs"]["gpu-gate"]["runs-on"]


def test_shell_examples_are_executable_posix_sh():
    for script in (ENTRYPOINT, HEALTHCHECK):
        assert os.access(script, os.X_OK), script
        assert script.read_text().startswith("#!/bin/sh\n")
        assert subprocess.run(["sh", "-n", str(script)], capture_output=True).returncode == 0
    assert 'gpudoctor check --profile preflight ${GPUDOCTOR_ARGS:-} && exec "$@"' in ENTRYPOINT.read_text()
    assert "set -eu" in ENTRYPOINT.read_text()
