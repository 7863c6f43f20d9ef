"""`gpudoctor which [--format text|json] -- CMD ARGS...`: the Python interpreter a command will run, and why
([docs/which.md](../../docs/which.md)). Nothing of the command runs.

The interpreter is read by host/command_python.interpreter_of, the very function `gpudoctor run` uses to
pick the environment it judges after a failure, from the same command line, environment (run's
_command_env) and working directory; so what `which` names is what `run` judges. The commands followed on
the way (a wrapper, a `#!` line, a pyenv shim, `uv run`) are listed. The interpreter's environment is then
read as `check` reads it, from its distributions' metadata (host/pyinspect.py run in that interpreter,
isolated, writing nothing, under the deadline): its prefix, Python version, whether it is a virtual
environment and what manages it, and the GPU frameworks installed with their build
(probes/python_env.frameworks). Nothing is imported: a framework's build is what its files say.

Exit codes: 0 an interpreter is named (its environment described, or why it could not be read); 1 none can
be known from the command line (the reason says why: not a Python program, an environment uv makes for one
run, a conda name found nowhere, a name not on PATH); 2 bad usage (no command).
"""

from __future__ import annotations

import os
import sys
from typing import Any, Optional

from . import CommandError

USAGE = "which: no command given (usage: gpudoctor which [--format text|json] -- CMD [ARGS]...)"


def run(command: tuple[str, ...] = (), fmt: str = "text", timeout: float = 5.0) -> int:
    if not command:
        raise CommandError(USAGE, 2)
    from ..host.command_python import LiveFiles, interpreter_of
    from .run import _command_env

    env = _command_env()
    trail: list = []
    try:
        cwd = os.getcwd()
    except OSError as e:  # the shell's directory was removed: relative paths and project files name nothing
        raise CommandError(
            f"which: the working directory is gone ({e.strerror}); cd into one first", 2
        ) from None
    judged = interpreter_of(command, os.environ if env is None else env, cwd, LiveFiles(), trail)
    environment = describe(judged.interpreter, timeout) if judged.interpreter else None
    answer = {
        "command": list(command),
        "interpreter": judged.interpreter,
        "reason": judged.reason,
        "followed": [{"command": word, "from": how} for word, how in trail],
        "environment": environment,
    }
    if fmt == "json":
        import json

        sys.stdout.write(json.dumps(answer, indent=2) + "\n")
    else:
        from ..report.safe import terminal_lines

        sys.stdout.write(terminal_lines(render(answer)))  # it repeats the command's own words
    return 0 if judged.interpreter else 1


def describe(interpreter: str, timeout: float) -> dict[str, Any]:
    """The interpreter's environment from its metadata: {"prefix", "version", "venv", "installer",
    "frameworks"}, or {"unknown": why} when it cannot be read."""
    from ..host.base import Deadline, HostError
    from ..host.live import LiveHost
    from ..probes.python_env import frameworks, inspection_failure, installer

    if not os.path.exists(interpreter):
        return {"unknown": f"{interpreter} does not exist (yet)"}
    try:
        dump = LiveHost(Deadline(timeout)).python(interpreter)
    except HostError as e:
        return {"unknown": inspection_failure(interpreter, e)}
    prefix, base = dump.get("prefix"), dump.get("base_prefix")
    return {
        "executable": dump.get("executable"),
        "prefix": prefix,
        "version": dump.get("version"),
        "venv": (prefix != base) if prefix and base else None,
        "installer": installer(dump),
        "frameworks": [
            {k: v for k, v in fw.items() if v is not None and k != "why"} for fw in frameworks(dump)
        ],
    }


def render(answer: dict[str, Any]) -> str:
    interpreter: Optional[str] = answer["interpreter"]
    lines = [interpreter or "no interpreter can be known from the command line", f"  why: {answer['reason']}"]
    followed = [f"{step['command']} ({step['from']})" for step in answer["followed"]]
    if len(followed) > 1:
        lines.append("  followed: " + followed[0])
        lines += [f"            {step}" for step in followed[1:]]
    environment = answer["environment"]
    if environment is None:
        return "\n".join(lines) + "\n"
    if "unknown" in environment:
        lines.append(f"  environment: not read: {environment['unknown']}")
        return "\n".join(lines) + "\n"
    kind = {True: "a virtual environment", False: "not a virtual environment"}.get(environment["venv"], "")
    about = ", ".join(filter(None, (kind, environment["installer"])))
    lines.append(f"  environment: {environment['prefix']} ({about}), Python {environment['version']}")
    shown = [_framework(fw) for fw in environment["frameworks"]]
    lines.append(
        "  frameworks: "
        + (", ".join(shown) if shown else "none of torch, tensorflow, jax, cupy, onnxruntime")
    )
    return "\n".join(lines) + "\n"


def _framework(fw: dict[str, Any]) -> str:
    build = fw.get("build")
    if build == "cuda":
        how = f"CUDA {fw['cuda']} build" if fw.get("cuda") else "CUDA build"
    elif build == "rocm":
        how = f"ROCm {fw['rocm']} build" if fw.get("rocm") else "ROCm build"
    elif build == "cpu":
        how = "CPU-only build"
    else:
        how = "build not known from its files"
    return f"{fw['distribution']} {fw['version']} ({how})"
