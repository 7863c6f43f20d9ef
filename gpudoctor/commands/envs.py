"""`gpudoctor envs`: every Python environment on this machine, with its GPU frameworks and their builds,
read from files (gpudoctor/envs/) without starting any interpreter. Exit 0; 2 when it cannot read this
machine (a snapshot holds no home directory to search)."""

from __future__ import annotations

import os
import sys
from typing import Any

from . import CommandError, Outcome


def run(fmt: str = "text") -> Outcome:
    from ..report import envs_report

    envs = find_all()
    found, target, chosen_by = check_default(envs)
    rows = [row(e, chosen_by if e is found else None) for e in envs]
    default = {"interpreter": target, "chosen_by": chosen_by, "name": found.name if found else None}
    if fmt == "json":
        sys.stdout.write(envs_report.render_json(rows, default))
    else:
        sys.stdout.write(envs_report.render_text(rows, default))
    return Outcome(0)


def find_all(host: Any = None) -> list:
    """Every environment the live host's files show (gpudoctor/envs/find.py)."""
    from ..envs import find, places

    if host is None:  # asked only env() and env_files(); host.live is imported anyway (check_default)
        from ..host.live import LiveHost

        host = LiveHost()
    files = getattr(host, "env_files", None)
    if files is None:
        raise CommandError("finding environments reads this machine's files: a snapshot holds none")
    try:
        cwd = os.getcwd()
    except OSError:  # the working directory was removed: no project .venv to look for
        cwd = ""
    return find.discover(files(), places.from_host(host, cwd))


def check_default(envs: list) -> tuple:
    """(the environment of `envs` that `gpudoctor check` judges without --python, or None; that
    interpreter; what chose it): host/live.py default_target (VIRTUAL_ENV, CONDA_PREFIX, python3 on PATH)."""
    from ..envs.find import holding
    from ..host.env_files import EnvFiles
    from ..host.live import default_target

    target, chosen_by = default_target(os.environ, sys.executable)
    found = holding(EnvFiles(), envs, target)
    if found is None:  # a launcher (a pyenv shim): the interpreter it runs, as `gpudoctor which` finds it
        from ..host.command_python import LiveFiles, interpreter_of

        try:
            cwd = os.getcwd()
        except OSError:  # the working directory was removed: a shim's .python-version cannot be looked for
            return found, target, chosen_by
        judged = interpreter_of([target], os.environ, cwd, LiveFiles())
        runs = holding(EnvFiles(), envs, judged.interpreter) if judged.interpreter else None
        if runs is not None and judged.interpreter != target:
            return runs, target, f"{chosen_by}; {judged.reason}"
    return found, target, chosen_by


def row(env: Any, check_default: Any = None) -> dict:
    """One environment as the report shows it: where it is, what found it, its frameworks and builds
    (probes/python_env.py's parsers over the description read from its files), and what makes it the one
    `gpudoctor check` judges without --python (`check_default`, else None)."""
    from ..probes import python_env

    frameworks = []
    installer = None
    if env.dump is not None:
        installer = python_env.installer(env.dump)
        every = env.dump.get("all") or {}
        for fw in python_env.frameworks(env.dump):
            frameworks.append(
                {
                    "name": fw["name"],
                    "distribution": fw["distribution"],
                    "version": every.get(fw["distribution"]) or fw["version"],
                    "build": fw.get("build"),
                    "cuda": fw.get("cuda"),
                    "rocm": fw.get("rocm"),
                }
            )
    return {
        "name": env.name,
        "kind": env.kind,
        "python": env.python or None,
        "prefix": env.prefix,
        "interpreter": env.interpreter or None,
        "installer": installer,
        "found_by": list(env.found_by),
        "problem": env.problem or None,
        "check_default": check_default,
        "frameworks": frameworks,
    }
