"""`gpudoctor fix` end to end: real pip and uv, real virtual environments, a real package index on loopback.

The host is the fake NVML library's healthy 8-GPU H100 node (driver 570); the environments hold torch-like
wheels built by the tests (tests/pyenvs.py), served by tests/pkgindex.LocalIndex. gpudoctor plans on that
index with `--index-mirror` (the way a host behind a mirror of PyTorch's indexes would), so the commands it
runs are the planned ones, with only the host of the index URL changed. Nothing of gpudoctor is installed
in the environments it fixes; its state directory is the test's.

What is compared after a rollback or an undo is the whole site-packages tree (pyenvs.tree_hash: every
path, mode and byte, bytecode included) and every distribution's RECORD hash.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpudoctor.remedy.inventory import read_inventory

from conftest import ROOT
from nvmlrig import SCENARIOS
from pkgindex import LocalIndex, offline_env
from pyenvs import broken_wheel, clone_venv, make_venv, site_packages, torch_wheel, tree_hash, uv, wheels_for

PYTORCH = "https://download.pytorch.org/whl/"


@pytest.fixture(scope="module")
def site(tmp_path_factory, fake_lib):
    """The wheels directory and its index, and the environment every gpudoctor run gets."""
    root = tmp_path_factory.mktemp("fix-e2e")
    wheels = root / "wheels"
    wheels_for(wheels, ["torch==2.5.1+cpu", "onnxruntime==1.20.1", "onnxruntime-gpu==1.20.2"])
    with LocalIndex(wheels) as index:
        env = offline_env(root, index.url("simple"))
        env.update(
            LD_LIBRARY_PATH=str(fake_lib),
            FAKE_NVML_SCENARIO=str(SCENARIOS / "healthy-h100-8.scn"),
            NO_COLOR="1",
            PYTHONPATH=str(ROOT),
            PATH=f"{Path(uv()).parent}:{env['PATH']}",  # uv steps run the uv on PATH
        )
        yield {"root": root, "wheels": wheels, "index": index, "env": env, "lib": fake_lib}


@pytest.fixture
def state(site, tmp_path):
    """gpudoctor's state directory for one test."""
    return tmp_path / "state"


def gd(site, state, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(site["env"], XDG_STATE_HOME=str(state))
    return subprocess.run(
        [sys.executable, "-m", "gpudoctor", *args],
        cwd=str(site["lib"]),  # no policy file of the repository applies
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def mirror(index: LocalIndex) -> list[str]:
    """PyTorch's wheel indexes planned on `index`."""
    return ["--index-mirror", f"{PYTORCH}={index.url('whl')}/"]


def fix_from(site, state, python: Path, wheels: Path) -> subprocess.CompletedProcess:
    """`fix --yes` with PyTorch's indexes served from `wheels` (an index of the test's own making)."""
    with LocalIndex(wheels) as index:
        return gd(site, state, "fix", "--yes", "--python", str(python), *mirror(index))


def install(python: Path, site, *requirements: str, index: str = "whl/cpu") -> None:
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", *requirements, "--index-url", site["index"].url(index)],
        env=site["env"],
        check=True,
        timeout=120,
    )


def cpu_env(site, pip_template, where: Path) -> Path:
    python = clone_venv(pip_template, where)
    install(python, site, "torch==2.5.1+cpu")
    return python


def plan_of(site, state, python: Path) -> dict:
    r = gd(site, state, "plan", "--python", str(python), "--format", "json", *mirror(site["index"]))
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def serve_the_plan(site, plan: dict) -> list[str]:
    """Wheels for every package the plan installs (whatever versions the knowledge tables pin); the pins."""
    pins = [a for s in plan["steps"] if s["kind"] in ("pip", "uv") for a in s["argv"] if "==" in a]
    wheels_for(site["wheels"], pins)
    return pins


def records(python: Path) -> dict[str, tuple[str, str]]:
    return {n: (d.version, d.record_sha256) for n, d in read_inventory(str(python)).dists.items()}


def torch_cuda(python: Path) -> str:
    text = (site_packages(python) / "torch" / "version.py").read_text()
    return next(line for line in text.splitlines() if line.startswith("cuda"))


def journal(state: Path) -> list[list[dict]]:
    runs = sorted((state / "gpudoctor" / "runs").iterdir())
    return [[json.loads(x) for x in (r / "journal.jsonl").read_text().splitlines()] for r in runs]


def test_fix_installs_the_pinned_cuda_build_then_has_nothing_to_do_and_undo_restores_it(
    site, state, pip_template, tmp_path
):
    python = cpu_env(site, pip_template, tmp_path / "env")
    pins = serve_the_plan(site, plan_of(site, state, python))
    assert any(p.startswith("torch==2.5.1+cu") for p in pins), pins
    before_tree, before_records = tree_hash(python), records(python)

    r = gd(site, state, "fix", "--yes", "--python", str(python), *mirror(site["index"]))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "-> done in " in r.stdout and ": verified: its findings are gone" in r.stdout
    assert "Outcome: fixed" in r.stdout
    assert torch_cuda(python) == "cuda: Optional[str] = '12.4'"
    (run,) = journal(state)
    assert [e["event"] for e in run] == ["start", "restore_point", "step", "end"]
    step = run[2]
    assert step["status"] == "applied" and step["exit"] == 0 and step["rules"] == ["GD-FW-001"]
    assert step["argv"][:4] == [str(python), "-m", "pip", "install"]
    assert step["changes"]["torch"] == {"before": "2.5.1+cpu", "after": "2.5.1+cu124"}
    assert run[-1]["outcome"] == "fixed"

    again = gd(site, state, "fix", "--yes", "--python", str(python), *mirror(site["index"]))
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Outcome: nothing to do" in again.stdout and "Nothing to do" in again.stdout
    assert len(journal(state)) == 1  # a run that runs nothing leaves nothing behind

    listed = gd(site, state, "fix", "--list")
    assert listed.returncode == 0 and run[0]["run"] in listed.stdout and " fixed " in listed.stdout

    undone = gd(site, state, "fix", "--undo", "--yes")
    assert undone.returncode == 0, undone.stdout + undone.stderr
    assert f"Undo of run {run[0]['run']} in {python}: undone" in undone.stdout
    assert (tree_hash(python), records(python)) == (before_tree, before_records)
    assert journal(state)[-1][-1]["outcome"] == "undone"


def test_dry_run_leaves_the_environment_byte_identical_and_writes_nothing(
    site, state, pip_template, tmp_path
):
    python = cpu_env(site, pip_template, tmp_path / "env")
    plan = plan_of(site, state, python)
    serve_the_plan(site, plan)
    before = tree_hash(python)
    r = gd(site, state, "fix", "--dry-run", "--python", str(python), *mirror(site["index"]))
    assert r.returncode == 0, r.stderr
    (install_step,) = [s for s in plan["steps"] if s["kind"] == "pip"]
    assert f"   {install_step['command']}\n   why:" in r.stdout  # exactly what it would run
    assert "-> would run" in r.stdout and "Dry run: nothing was changed." in r.stdout
    assert tree_hash(python) == before
    assert not state.exists()


def test_a_step_that_fails_half_way_rolls_back_to_the_same_files(site, state, pip_template, tmp_path):
    python = cpu_env(site, pip_template, tmp_path / "env")
    plan = plan_of(site, state, python)
    pins = serve_the_plan(site, plan)
    # A torchaudio whose installation fails after pip has installed torch and the nvidia wheels.
    (audio,) = [p for p in pins if p.startswith("torchaudio==")]
    wheels = tmp_path / "wheels"
    wheels_for(wheels, [p for p in pins if not p.startswith("torchaudio==")])
    torch_pin = next(p for p in pins if p.startswith("torch=="))
    broken_wheel(wheels, "torchaudio", audio.split("==")[1], (torch_pin,))
    before_tree, before_records = tree_hash(python), records(python)
    r = fix_from(site, state, python, wheels)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "-> FAILED in " in r.stdout and ": it exited 1" in r.stdout
    assert "trying to install outside the target directory" in r.stdout  # pip's own words, streamed
    assert "Rolled back: the environment is as it was before the run" in r.stdout
    assert "Outcome: rolled back" in r.stdout
    assert (tree_hash(python), records(python)) == (before_tree, before_records)
    rollback = next(e for e in journal(state)[0] if e["event"] == "rollback")
    assert rollback["ok"] is True and "torch 2.5.1+cpu" in rollback["restored"]


def test_a_step_that_exits_0_but_leaves_its_finding_rolls_back(site, state, pip_template, tmp_path):
    python = cpu_env(site, pip_template, tmp_path / "env")
    pins = serve_the_plan(site, plan_of(site, state, python))
    # An index whose "CUDA" torch is a CPU build under the CUDA build's name: pip is content, the check not.
    wheels = tmp_path / "wheels"
    wheels_for(wheels, pins)
    torch_pin = next(p for p in pins if p.startswith("torch=="))
    for old in wheels.glob("torch-*"):
        old.unlink()
    torch_wheel(wheels, torch_pin.split("==")[1], None)
    before_tree = tree_hash(python)
    r = fix_from(site, state, python, wheels)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "-> FAILED in " in r.stdout and "its finding is still there: GD-FW-001" in r.stdout
    assert "Outcome: rolled back" in r.stdout
    assert tree_hash(python) == before_tree


def test_a_saved_plan_applies_exactly_and_a_stale_one_is_refused(site, state, pip_template, tmp_path):
    python = cpu_env(site, pip_template, tmp_path / "env")
    serve_the_plan(site, plan_of(site, state, python))
    saved = tmp_path / "plan.json"
    r = gd(site, state, "plan", "--python", str(python), "-o", str(saved), *mirror(site["index"]))
    assert r.returncode == 0, r.stderr

    # The environment changes after the plan was made: an onnxruntime CPU build appears.
    install(python, site, "onnxruntime==1.20.1", index="simple")
    before = tree_hash(python)
    stale = gd(site, state, "fix", "--yes", "--plan", str(saved))
    assert stale.returncode == 2, stale.stdout + stale.stderr
    assert f"--plan {saved} is stale: the facts it was made from have changed since:" in stale.stderr
    assert "  frameworks: was [" in stale.stderr and "'onnxruntime 1.20.1 cpu ?'" in stale.stderr
    assert tree_hash(python) == before and not state.exists()

    fresh = tmp_path / "fresh.json"
    assert (
        gd(site, state, "plan", "--python", str(python), "-o", str(fresh), *mirror(site["index"])).returncode
        == 0
    )
    steps = json.loads(fresh.read_text())["steps"]
    r = gd(site, state, "fix", "--yes", "--plan", str(fresh))
    assert r.returncode == 0, r.stdout + r.stderr
    ran = [e["argv"] for e in journal(state)[0] if e["event"] == "step"]
    assert ran == [s["argv"] for s in steps if s["kind"] == "pip"]  # exactly the saved commands


def test_a_saved_plan_with_a_smuggled_argument_is_refused_whole(site, state, pip_template, tmp_path):
    from gpudoctor.plan_file import digest

    python = cpu_env(site, pip_template, tmp_path / "env")
    serve_the_plan(site, plan_of(site, state, python))
    saved = tmp_path / "plan.json"
    assert (
        gd(site, state, "plan", "--python", str(python), "-o", str(saved), *mirror(site["index"])).returncode
        == 0
    )
    data = json.loads(saved.read_text())
    step = next(s for s in data["steps"] if s["kind"] == "pip")
    step["argv"][4] += ";touch${IFS}/tmp/gpudoctor-pwned"  # as a crafted version string would read
    data["digest"] = digest(data)  # the digest is no secret: the patterns must hold on their own
    saved.write_text(json.dumps(data))
    before = tree_hash(python)
    r = gd(site, state, "fix", "--yes", "--plan", str(saved))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "the plan has steps fix refuses to run:" in r.stderr and "is not a plain requirement" in r.stderr
    assert tree_hash(python) == before and not state.exists()


def test_uv_environment_is_fixed_with_uv_and_undone(site, state, tmp_path):
    venv = tmp_path / "uvenv"
    subprocess.run(
        [uv(), "venv", "--quiet", "--python", sys.executable, str(venv)],
        env=site["env"],
        check=True,
        timeout=120,
    )
    python = venv / "bin" / "python"
    subprocess.run(
        [
            uv(),
            "pip",
            "install",
            "--quiet",
            "--python",
            str(python),
            "torch==2.5.1+cpu",
            "--index-url",
            site["index"].url("whl/cpu"),
        ],
        env=site["env"],
        check=True,
        timeout=120,
    )
    plan = plan_of(site, state, python)
    assert plan["python"]["installer"] == "uv" and plan["steps"][-1]["argv"][:3] == ["uv", "pip", "install"]
    serve_the_plan(site, plan)
    before_tree, before_records = tree_hash(python), records(python)
    r = gd(site, state, "fix", "--yes", "--python", str(python), *mirror(site["index"]))
    assert r.returncode == 0, r.stdout + r.stderr
    assert torch_cuda(python) == "cuda: Optional[str] = '12.4'"
    assert journal(state)[0][2]["changes"]["torch"] == {"before": "2.5.1+cpu", "after": "2.5.1+cu124"}
    r = gd(site, state, "fix", "--undo", "--yes")
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tree_hash(python), records(python)) == (before_tree, before_records)


def hold_the_second_download(index: LocalIndex, prefix: str) -> None:
    """Hold the download of `prefix` after the one the installer's dry run makes: the step's own download
    (no cache) then stalls, while the step runs."""
    index.held.clear()
    index.hold(prefix, skip=1)


@pytest.fixture
def onnx_env(site, pip_template, tmp_path) -> Path:
    """onnxruntime's CPU build on the GPU host: the plan uninstalls it, then installs onnxruntime-gpu."""
    python = clone_venv(pip_template, tmp_path / "env")
    install(python, site, "onnxruntime==1.20.1", index="simple")
    return python


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGHUP])
def test_ctrl_c_during_a_step_rolls_back_what_earlier_steps_did(site, state, onnx_env, signum):
    """Ctrl-C, or the terminal closing (SIGHUP), while pip installs: the run rolls back, then ends."""
    before = tree_hash(onnx_env)
    index = site["index"]
    hold_the_second_download(index, "onnxruntime_gpu-")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpudoctor", "fix", "--yes", "--python", str(onnx_env)],
        cwd=str(site["lib"]),
        env=dict(site["env"], XDG_STATE_HOME=str(state)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert index.held.wait(60), "pip never reached the held download"
        time.sleep(0.2)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
    finally:
        index.release()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out + err
    assert "-> done in " in out  # the uninstall ran before the interruption
    assert "   running (it is stopped after 3600 s)\n" in out.split("[5/5]")[1]  # the install was running
    assert "Rolling back (interrupted) ..." in out and "Rolled back: the environment is as it was" in out
    assert tree_hash(onnx_env) == before
    events = journal(state)[0]
    assert events[-1] == {**events[-1], "event": "end", "outcome": "interrupted", "exit": 130}


def test_a_step_past_its_timeout_is_stopped_and_rolled_back(site, state, onnx_env):
    before = tree_hash(onnx_env)
    index = site["index"]
    hold_the_second_download(index, "onnxruntime_gpu-")
    try:
        r = gd(site, state, "fix", "--yes", "--python", str(onnx_env), "--step-timeout", "3")
    finally:
        index.release()
    assert r.returncode == 1, r.stdout + r.stderr
    assert "-> FAILED in " in r.stdout and "it did not finish in 3 s and was stopped" in r.stdout, r.stdout
    assert "Outcome: rolled back" in r.stdout
    assert tree_hash(onnx_env) == before


def test_answering_no_changes_nothing(site, state, onnx_env):
    before = tree_hash(onnx_env)
    env = dict(site["env"], XDG_STATE_HOME=str(state))
    r = subprocess.run(
        [sys.executable, "-m", "gpudoctor", "fix", "--python", str(onnx_env)],
        cwd=str(site["lib"]),
        env=env,
        input="n\nn\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stdout.count("   Run this step? [y]es / [n]o / [q]uit: ") == 2
    assert re.search(r"Outcome: declined \(.*2 skipped\)", r.stdout) and "-> skipped: you said no" in r.stdout
    assert tree_hash(onnx_env) == before and not state.exists()


PACK = """\
rules:
  - id: ACME-HOUSEKEEPING-001
    title: Housekeeping
    severity: warning
    category: system
    when:
      all:
        - {fact: driver.version, exists: true}
    message: "Time for housekeeping."
    why: "A rule pack's fix steps, as issue 24 reported `fix --allow-system` running them."
    silent: "Nothing fails; this is a test of what fix runs."
    fix:
      - kind: command
        argv: [sudo, systemctl, start, reboot.target]
      - kind: command
        argv: [journalctl, --vacuum-time=1s]
      - kind: command
        argv: [nvidia-smi, -pl, "100"]
      - kind: command
        argv: [systemctl, restart, acme-agent]
"""


def test_allow_system_never_runs_a_rule_packs_reboot_power_or_log_deletion(site, state, tmp_path):
    pack = tmp_path / "acme.yaml"
    pack.write_text(PACK)
    python = make_venv(sys.executable, tmp_path / "env")
    r = gd(site, state, "fix", "--yes", "--allow-system", "--rules", str(pack), "--python", str(python))
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert "fix never reboots, powers off or suspends the machine" in out.split("reboot.target")[1]
    assert "deletes or rewrites the system's logs" in out.split("--vacuum-time=1s")[1]
    assert "changes a GPU's power limit, clocks or mode" in out.split("nvidia-smi -pl 100")[1]
    assert "not one of the system commands fix runs" in out.split("systemctl restart acme-agent")[1]
    assert "Outcome: nothing to do" in out and "-> done" not in out
    assert not state.exists()  # no run: nothing ran


def test_a_fix_that_worked_removes_the_runs_the_retention_policy_does_not_keep(
    site, state, pip_template, tmp_path
):
    python = cpu_env(site, pip_template, tmp_path / "env")
    serve_the_plan(site, plan_of(site, state, python))
    runs = state / "gpudoctor" / "runs"
    old = []
    for n in range(5):  # five runs of a month ago, as fix left them: the newest 5 stay, so 1 goes
        run_id = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() - (30 + n) * 86400)) + "-0000"
        (runs / run_id / "restore" / "dists").mkdir(parents=True)
        (runs / run_id / "restore" / "dists" / "torch-2.5.1+cpu-0123456789ab.tar").write_bytes(b"\0" * 4000)
        (runs / run_id / "journal.jsonl").write_text('{"event": "start", "kind": "fix"}\n')
        old.append(run_id)
    r = gd(site, state, "fix", "--yes", "--python", str(python), *mirror(site["index"]))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Outcome: fixed" in r.stdout
    assert r.stdout.endswith(
        "Removed 1 old run(s), 4.0 kB (fix keeps the newest 5 runs and every run of the last 14 days; "
        "gpudoctor fix --prune).\n"
    )
    assert sorted(p.name for p in runs.iterdir())[:4] == sorted(old)[1:]  # the oldest went
    assert len(list(runs.iterdir())) == 5
