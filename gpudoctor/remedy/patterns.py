"""Which commands `fix` will run: strict shapes for each kind of step, every argument matched.

A plan's commands are argument lists built from facts (an interpreter path, an installed version) and from
the knowledge tables; a saved plan is a file anyone can edit. So before anything runs, each argument is
checked again here against the shape of the step it belongs to, whatever checked it before: a package
name, a version, an index URL or a path that does not match its pattern, an option this module does not
know, or an interpreter other than the target's makes the step refuse. What this module does not know how
to run stays an instruction: driver changes and reboots always do, and so do the system commands of a
rule pack that are not among the shipped rules' (SYSTEM_COMMANDS), and any command that reboots, changes a
GPU's power or mode, deletes logs or removes things, whoever wrote it.

`check(kind, risk, argv, python, allow_system)` returns None for a step fix may run, else why not (Held).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

# An absolute path of plain characters: no spaces, quotes, `$`, `;`, `..` segments or options.
PATH = re.compile(r"^/(?!.*(?:^|/)\.\.(?:/|$))[A-Za-z0-9._+@/-]+$")
# A requirement as the planner writes it: name, optional extras, optional one version clause.
NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
VERSION = r"[0-9]+(?:\.[0-9]+)*(?:(?:a|b|rc)[0-9]+)?(?:\.post[0-9]+)?(?:\.dev[0-9]+)?(?:\.\*)?"
LOCAL = r"(?:\+[a-z0-9]+(?:\.[a-z0-9]+)*)?"
REQUIREMENT = re.compile(rf"^{NAME}(?:\[{NAME}(?:,{NAME})*\])?(?:(?:==|!=|<=|>=|~=|<|>){VERSION}{LOCAL})?$")
# An index URL: http(s), a host name, an optional port and a plain path; no credentials, query or escapes.
URL = re.compile(
    r"^https?://[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?(?::[0-9]{1,5})?(?:/[A-Za-z0-9._~/-]*)?$"
)
PACKAGE_OPS = ("install", "uninstall")
INDEX_OPTIONS = ("--index-url", "--extra-index-url")
NEVER_RUN = {
    "driver": "driver changes are instructions, always: how depends on how the driver was installed",
    "reboot": "fix never reboots: reboot yourself when nothing else runs",
    "manual": "a person carries this out",
    "env": "fix cannot change the variables of your shell, job script or image: set them there",
}
# The system commands fix runs with --allow-system, each word matched in full: the diagnostics and service
# starts of the shipped rules (tests/remedy/test_patterns.py holds this list to them), with or without
# `sudo`. Any other command a rule pack's fix names stays an instruction, printed and never run.
UNIT = r"nvidia-(?:fabricmanager|imex|persistenced)"
INDEX = r"[0-9]{1,2}"
SYSTEM_COMMANDS = tuple(
    tuple(re.compile(f"^(?:{word})$") for word in shape)
    for shape in (
        ("journalctl", "-k", "-b", "--grep", "NVRM"),
        ("journalctl", "-u", UNIT, "-b"),
        ("nvidia-smi", "-L"),
        ("nvidia-smi", "-q", "-d", r"[A-Z_]+(?:,[A-Z_]+)*", "-i", INDEX),
        ("nvidia-smi", "nvlink", "--status"),
        ("nvidia-smi", "nvlink", "--status", "-i", INDEX),
        ("nvidia-smi", "topo", "-m"),
        ("nvidia-smi", "topo", "-p2p", "r"),
        ("systemctl", "status", UNIT),
        ("systemctl", "enable", "--now", UNIT),
        ("systemctl", "restart", UNIT),
    )
)
# What a rule pack's command may do that fix never does, whoever wrote the rule: named in the instruction.
POWER = "fix never reboots, powers off or suspends the machine: do it yourself when nothing else runs"
SYSTEMCTL_POWER = {
    "reboot",
    "poweroff",
    "halt",
    "kexec",
    "suspend",
    "hibernate",
    "hybrid-sleep",
    "suspend-then-hibernate",
    "isolate",
    "rescue",
    "emergency",
    "default",
    "soft-reboot",
}
POWER_PROGRAMS = {"reboot", "poweroff", "halt", "shutdown", "init", "telinit", "kexec", "systemd-run"}
GPU_SETTINGS = (
    "it changes a GPU's power limit, clocks or mode, or resets it, which stops its jobs: fix leaves that "
    "to you, while no job uses the GPU"
)
# nvidia-smi's options that set or reset something (nvidia-smi --help, "Device Modification" options).
NVIDIA_SMI_SETTERS = re.compile(
    r"^(?:-pl|--power-limit|-pm|--persistence-mode|-e|--ecc-config|-p|--reset-ecc-errors|-c|--compute-mode"
    r"|-r|--gpu-reset|-ac|--applications-clocks|-rac|--reset-applications-clocks|-lgc|--lock-gpu-clocks"
    r"|-rgc|--reset-gpu-clocks|-lmc|--lock-memory-clocks|-rmc|--reset-memory-clocks|-mig"
    r"|--multi-instance-gpu|-dm|--driver-model|-fdm|--force-driver-model|-am|--accounting-mode"
    r"|-caa|--clear-accounted-apps|--auto-boost-default|--auto-boost-permission|-cc|--cuda-clocks"
    r"|-gtt|--gpu-target-temp|-mgm)(?:=.*)?$|^(?:mig|drain|conf-compute|vgpu)$"
)
LOGS = "it deletes or rewrites the system's logs: fix never does"
JOURNALCTL_WRITERS = re.compile(
    r"^--(?:vacuum-size|vacuum-time|vacuum-files|rotate|flush|relinquish-var|smart-relinquish-var"
    r"|setup-keys|update-catalog|sync)(?:=.*)?$"
)
DESTRUCTIVE_PROGRAMS = {
    "rm",
    "dd",
    "shred",
    "wipefs",
    "mkfs",
    "rmmod",
    "modprobe",
    "fdisk",
    "parted",
    "kill",
    "pkill",
    "killall",
}


def requirement_problem(arg: str) -> Optional[str]:
    return None if REQUIREMENT.match(arg) else f"{arg!r} is not a plain requirement (name[extras]==version)"


def _package_args(args: list[str], op: str) -> Optional[str]:
    """The arguments after `install`/`uninstall`: requirements, `-y` for an uninstall, index URLs for an
    install; at least one requirement."""
    packages = 0
    while args:
        arg = args.pop(0)
        if op == "uninstall" and arg in ("-y", "--yes"):
            continue
        if op == "install" and arg in INDEX_OPTIONS:
            if not args:
                return f"{arg} without a URL"
            url = args.pop(0)
            if not URL.match(url):
                return f"{arg} {url!r} is not a plain http(s) URL"
            continue
        if arg.startswith("-"):
            return f"option {arg!r} is not one fix passes to an installer"
        problem = requirement_problem(arg)
        if problem:
            return problem
        packages += 1
    return None if packages else "no package named"


def _python_problem(exe: str, python: Optional[str]) -> Optional[str]:
    if not PATH.match(exe):
        return f"the interpreter {exe!r} is not a plain absolute path"
    if python is None or exe != python:
        return f"the interpreter {exe} is not the target environment's ({python or 'unknown'})"
    return None


def pip_problem(argv: tuple[str, ...], python: Optional[str]) -> Optional[str]:
    """`<python> -m pip install|uninstall ...` for the target interpreter."""
    if len(argv) < 5 or argv[1:3] != ("-m", "pip") or argv[3] not in PACKAGE_OPS:
        return "not of the form <python> -m pip install|uninstall PACKAGE..."
    return _python_problem(argv[0], python) or _package_args(list(argv[4:]), argv[3])


def uv_problem(argv: tuple[str, ...], python: Optional[str]) -> Optional[str]:
    """`uv pip install|uninstall --python <python> ...` for the target interpreter."""
    if len(argv) < 6 or argv[:2] != ("uv", "pip") or argv[2] not in PACKAGE_OPS or argv[3] != "--python":
        return "not of the form uv pip install|uninstall --python <python> PACKAGE..."
    return _python_problem(argv[4], python) or _package_args(list(argv[5:]), argv[2])


@dataclass(frozen=True)
class Held:
    """Why fix does not run a step: `refused` when something in it is wrong (a pattern, an option, another
    interpreter), else it is a step fix leaves to you (a driver change, a system step without
    --allow-system)."""

    reason: str
    refused: bool


def _never(words: list[str]) -> Optional[str]:
    """Why fix never runs this system command, whoever's rule names it: a reboot or power change, a GPU
    setting or reset, a log deletion, or something that removes or stops things."""
    program, args = words[0].rsplit("/", 1)[-1], words[1:]
    if program in POWER_PROGRAMS:
        return POWER
    if program == "systemctl":
        verbs = [w for w in args if not w.startswith("-")]
        if (verbs and verbs[0] in SYSTEMCTL_POWER) or any(w.endswith(".target") for w in verbs[1:]):
            return POWER
    if program == "nvidia-smi" and any(NVIDIA_SMI_SETTERS.match(w) for w in args):
        return GPU_SETTINGS
    if program == "journalctl" and any(JOURNALCTL_WRITERS.match(w) for w in args):
        return LOGS
    if program.startswith("mkfs") or program in DESTRUCTIVE_PROGRAMS:
        return f"{program} removes, unloads or stops things: fix never runs it"
    return None


def _system(argv: tuple[str, ...], python: Optional[str], allow_system: bool) -> Optional[Held]:
    """A system step: `<python> -m pip check`, or one of SYSTEM_COMMANDS (after an optional sudo); any other
    stays an instruction, with why."""
    words = list(argv[1:] if argv[0] == "sudo" else argv) or ["sudo"]
    never = _never(words)
    if never:
        return Held(never, False)
    if not allow_system:
        return Held("a system step: fix runs it only with --allow-system", False)
    if len(argv) == 4 and argv[1:] == ("-m", "pip", "check"):
        problem = _python_problem(argv[0], python)
        return Held(problem, True) if problem else None
    if not any(
        len(shape) == len(words) and all(p.match(w) for p, w in zip(shape, words))
        for shape in SYSTEM_COMMANDS
    ):
        return Held(
            "not one of the system commands fix runs (the shipped rules' diagnostics and service starts, "
            "docs/fix.md): run it yourself if you mean to",
            False,
        )
    return None


def check(
    kind: str, risk: str, argv: tuple[str, ...], python: Optional[str], allow_system: bool
) -> Optional[Held]:
    """None when fix may run this step; else why not."""
    if kind in NEVER_RUN:
        return Held(NEVER_RUN[kind], False)
    if not argv:
        return Held("it has no command", False)
    if kind == "pip" and risk == "python-env":
        problem = pip_problem(argv, python)
    elif kind == "uv" and risk == "python-env":
        problem = uv_problem(argv, python)
    elif kind == "command" and risk == "system":
        return _system(argv, python, allow_system)
    else:
        return Held(f"fix does not run {kind} steps", False)
    return Held(problem, True) if problem else None
