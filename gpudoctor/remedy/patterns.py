"""Which commands `fix` will run: strict shapes for each kind of step, every argument matched.

A plan's commands are argument lists built from facts (an interpreter path, an installed version) and from
the knowledge tables; a saved plan is a file anyone can edit. So before anything runs, each argument is
checked again here against the shape of the step it belongs to, whatever checked it before: a package
name, a version, an index URL or a path that does not match its pattern, an option this module does not
know, or an interpreter other than the target's makes the step refuse. What this module does not know how
to run stays an instruction: driver changes and reboots always do.

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
# An argument of a system command: a plain token or a plain option.
TOKEN = re.compile(r"^(?:[A-Za-z0-9][A-Za-z0-9,=:._/@+-]*|--?[A-Za-z][A-Za-z0-9-]*(?:=[A-Za-z0-9,._/-]+)?)$")

PACKAGE_OPS = ("install", "uninstall")
INDEX_OPTIONS = ("--index-url", "--extra-index-url")
# System commands fix runs with --allow-system, by program (after an optional sudo) and what they may do.
SYSTEMCTL_VERBS = ("status", "show", "is-active", "is-enabled", "start", "restart", "enable", "unmask")
SYSTEM_PROGRAMS = ("nvidia-smi", "journalctl", "systemctl")
NEVER_RUN = {
    "driver": "driver changes are instructions, always: how depends on how the driver was installed",
    "reboot": "fix never reboots: reboot yourself when nothing else runs",
    "manual": "a person carries this out",
    "env": "fix cannot change the variables of your shell, job script or image: set them there",
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


def system_problem(argv: tuple[str, ...], python: Optional[str]) -> Optional[str]:
    """A diagnostic or service command of the shipped rules: nvidia-smi, journalctl, systemctl (start,
    restart, enable ...; never reboot, poweroff or isolate), or `<python> -m pip check`."""
    if not argv:
        return "no command"
    if len(argv) == 4 and argv[1:] == ("-m", "pip", "check"):
        return _python_problem(argv[0], python)
    words = list(argv[1:] if argv[0] == "sudo" else argv)
    if not words or words[0] not in SYSTEM_PROGRAMS:
        program = words[0] if words else argv[0]
        return f"fix runs only {', '.join(SYSTEM_PROGRAMS)} and pip check as system steps, not {program!r}"
    bad = next((w for w in words[1:] if not TOKEN.match(w)), None)
    if bad is not None:
        return f"argument {bad!r} is not a plain token"
    if words[0] == "systemctl":
        verb = next((w for w in words[1:] if not w.startswith("-")), "")
        if verb not in SYSTEMCTL_VERBS:
            return f"systemctl {verb or '(no verb)'} is not one fix runs ({', '.join(SYSTEMCTL_VERBS)})"
    return None


@dataclass(frozen=True)
class Held:
    """Why fix does not run a step: `refused` when something in it is wrong (a pattern, an option, another
    interpreter), else it is a step fix leaves to you (a driver change, a system step without
    --allow-system)."""

    reason: str
    refused: bool


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
        if not allow_system:
            return Held("a system step: fix runs it only with --allow-system", False)
        problem = system_problem(argv, python)
    else:
        return Held(f"fix does not run {kind} steps", False)
    return Held(problem, True) if problem else None
