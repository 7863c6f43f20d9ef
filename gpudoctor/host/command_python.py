"""The interpreter a command will run: which Python `gpudoctor run -- CMD ARGS...` judges when CMD fails
([docs/run.md](../../docs/run.md#which-python-is-judged), docs/architecture.md#which-python).

`interpreter_of(argv, env, cwd, files)` is pure: the command line, the environment and working directory it
runs with, and `files`, the only way it reads a file (command_words.LiveFiles; anything with the same six
methods in a test). It answers `Judged(interpreter, reason)`: the interpreter's path and why that one, or
None with why none is known (the caller then judges its default and says so). The forms it knows:

- a Python interpreter (`.venv/bin/python`, `/opt/conda/envs/x/bin/python3.11`, or a bare `python3` found on
  the command's PATH as execvp finds it); `python -m module` is that python too;
- a script with a shebang, console scripts (`torchrun`, `accelerate`, `deepspeed`) included: the interpreter
  the kernel would start, `#!/usr/bin/env [-S] python3` through env, and pip's and uv's `#!/bin/sh`
  trampoline for a path too long for a shebang (or with a space) on its second line;
- `env [NAME=VALUE]... CMD`, as argv[0] or in a shebang, and `nohup`, `nice`, `timeout`, `stdbuf` before it;
- `uv run [OPTIONS] CMD...`: the project environment (UV_PROJECT_ENVIRONMENT, else `.venv` at the root of the
  workspace the project in the working directory belongs to), or outside a project (or in one that says
  `[tool.uv] managed = false`) the active or nearest `.venv`, else the first `python`/`python3` on PATH
  (none where uv has Pythons of its own, which it prefers, or a `.python-version` asks for a version);
  none where uv makes an environment for this run alone (`--isolated`, a script with inline metadata, `uvx`);
- a pyenv shim (`~/.pyenv/shims/python3`, `pip`, `torchrun`): the program of the version pyenv selects
  (host/command_pyenv.py);
- `poetry run`, `pipenv run`, `hatch run`: none (the environment is theirs to pick; their own `#!` line
  would name the launcher's interpreter);
- `conda run`, `mamba run`, `micromamba run` (`-n NAME`, `-p PREFIX`, or the active environment): that
  environment's python, the name looked up in the envs directories as conda does (conda's own list of
  environments, ~/.conda/environments.txt, only where conda's installation cannot be found).
Inside `uv run` and `conda run` the command is looked up with the environment's bin/ first on PATH, as they
run it; a command there that is not a Python program (`bash train.sh`) gets the environment's python.
"""

from __future__ import annotations

import os
import re
import shlex
from typing import Any, Optional, Union

from .command_conda import CONDA_VALUES, conda_run
from .command_pyenv import pyenv_exec, shim_root
from .command_uv import UV_GLOBAL_VALUES, uv_run
from .command_words import (
    DEFAULT_PATH,
    INNER,
    NOT_PYTHON,
    TOP,
    Inside,
    Judged,
    LiveFiles,
    find,
    read_options,
    said,
    subcommand,
    subject,
    tail,
)

__all__ = ["Judged", "LiveFiles", "interpreter_of", "shebang"]

# Python programs that run a command in a project environment of their choosing: their own #! line names
# the launcher's interpreter, not the command's. `poetry run` "Runs a command in the appropriate
# environment" (poetry's help, fig.io/manual/poetry/run), `pipenv run` "Spawns a command installed into the
# virtualenv" (fig.io/manual/pipenv/run), `hatch run` executes commands "in an environment as if you had
# already entered it" (hatch.pypa.io/latest/environment/); read 2026-12-05. Their options that take a value
# before `run`.
LAUNCHERS = {
    "poetry": frozenset(("--directory", "-C", "--project", "-P")),
    "pipenv": frozenset(("--python",)),
    "hatch": frozenset(("-e", "--env", "-p", "--project", "--data-dir", "--cache-dir", "--config")),
}
MAX_DEPTH = 8  # wrappers within wrappers (a shebang naming env naming uv ...): more is a loop
PYTHON = re.compile(r"python(\d+(\.\d+)?t?)?")  # python, python3, python3.11, python3.13t


def interpreter_of(argv: Any, env: Any, cwd: str, files: Any, trail: Optional[list] = None) -> Judged:
    """The interpreter `argv` will run with environment `env` in directory `cwd`, and why that one. `trail`,
    when given, receives each command followed on the way, as (word, where it came from): `gpudoctor which`
    shows them."""
    if not argv:
        return Judged(None, "no command")
    return _judge(list(argv), dict(env), cwd, files, TOP, [] if trail is None else trail)


def _judge(argv: list, env: dict, cwd: str, files: Any, how: str, trail: list) -> Judged:
    """`trail`: the commands followed so far (its length is the depth); this one is added to it."""
    if len(trail) > MAX_DEPTH:
        return Judged(None, f"more than {MAX_DEPTH} wrappers or interpreters in a row ({how})")
    trail.append((argv[0], how))
    name = argv[0]
    base = os.path.basename(name)
    if base == "env":
        return _env(argv[1:], env, cwd, files, how, trail)
    if PYTHON.fullmatch(base):
        path = find(name, env, cwd, files)
        if path is None:
            return Judged(None, f"{subject(name, how)} is not on the command's PATH")
        root = shim_root(files.head(path))
        if root is not None:
            return _pyenv(path, root, argv, env, cwd, files, how, trail)
        reason = how if os.sep in name else f"{name} on the command's PATH, {how}"
        return Judged(path, reason)
    if base in WRAPPERS:
        return _wrapper(base, argv[1:], env, cwd, files, how, trail)
    if base == "uv" and subcommand(argv[1:], UV_GLOBAL_VALUES) == "run":
        return _enter(uv_run(argv[1:], env, cwd, files, how), env, cwd, files, trail)
    if base == "uvx" or (base == "uv" and subcommand(argv[1:], UV_GLOBAL_VALUES) == "tool"):
        return Judged(None, f"{base} runs a tool in an environment uv makes for it{tail(how)}")
    if base in ("conda", "mamba", "micromamba") and subcommand(argv[1:], CONDA_VALUES) == "run":
        return _enter(conda_run(base, argv, env, cwd, files, how), env, cwd, files, trail)
    if base in LAUNCHERS and subcommand(argv[1:], LAUNCHERS[base]) == "run":
        return Judged(
            None, f"{base} run runs the command in an environment {base} picks, not read here{tail(how)}"
        )
    path = find(name, env, cwd, files)
    if path is None:
        return Judged(None, f"{subject(name, how)} is not found")
    head = files.head(path)
    root = shim_root(head)
    if root is not None:
        return _pyenv(path, root, argv, env, cwd, files, how, trail)
    line = shebang(head)
    if line is None:
        what = "cannot be read" if head is None else "is not a script"
        return Judged(None, f"{NOT_PYTHON} ({subject(path, how)} {what})")
    interpreter, arg, second = line
    if os.path.basename(interpreter) == "sh" and second is not None:
        trampoline = _trampoline(second, path, files)
        if trampoline is not None:
            return _judge(
                [trampoline, path] + argv[1:],
                env,
                cwd,
                files,
                f"named by the #!/bin/sh lines of {path}",
                trail,
            )
    words = [interpreter] + ([arg] if arg else []) + [path] + argv[1:]
    return _judge(words, env, cwd, files, f"named by the #! line of {path}", trail)


def _pyenv(
    shim: str, root: str, argv: list, env: dict, cwd: str, files: Any, how: str, trail: list
) -> Judged:
    """A pyenv shim: the program of the version pyenv selects, run as `pyenv exec` runs it."""
    chosen = pyenv_exec(shim, root, env, cwd, files)
    if isinstance(chosen, Judged):
        return Judged(None, said(chosen.reason, how))
    return _judge([chosen.program] + argv[1:], chosen.env, cwd, files, said(chosen.what, how), trail)


def shebang(head: Optional[bytes]) -> Optional[tuple[str, str, Optional[str]]]:
    """(interpreter, its one optional argument, the second line) of a `#!` first line, split as the kernel
    splits it (fs/binfmt_script.c: the interpreter up to a blank, the rest one argument, trailing blanks
    dropped); None for a file without one."""
    if not head or not head.startswith(b"#!"):
        return None
    first, _nl, rest = head[2:].partition(b"\n")
    text = first.decode("utf-8", "surrogateescape").strip(" \t\r")
    if not text:
        return None
    parts = re.split(r"[ \t]+", text, maxsplit=1)
    interpreter, arg = parts[0], (parts[1] if len(parts) > 1 else "")
    second = rest.partition(b"\n")[0].decode("utf-8", "surrogateescape") if rest else None
    return interpreter, arg.strip(" \t"), second


# pip (distlib's ScriptMaker) and uv write, for an interpreter path too long for the kernel's 127 bytes or
# holding a space, a script that starts with /bin/sh and exec's the interpreter on its second line:
#   #!/bin/sh
#   '''exec' "/a/very/long/path/bin/python" "$0" "$@"
#   ' '''
# uv's relocatable environments name it relative to the script: "$(dirname -- "$(realpath -- "$0")")"/'python'
RELATIVE = re.compile(r"""^'''exec' "\$\(dirname -- "\$\(realpath -- "\$0"\)"\)"/'([^']+)' "\$0" "\$@"$""")


def _trampoline(second: str, script: str, files: Any) -> Optional[str]:
    line = second.strip()
    relative = RELATIVE.match(line)
    if relative:
        return os.path.join(os.path.dirname(files.real(script)), relative.group(1))
    if not line.startswith("'''exec' "):
        return None
    try:
        words = shlex.split(line)
    except ValueError:
        return None
    return words[1] if len(words) >= 2 and words[0] == "exec" else None


def _env(args: list, env: dict, cwd: str, files: Any, how: str, trail: list) -> Judged:
    """`env [OPTION]... [NAME=VALUE]... COMMAND`, GNU coreutils' options; `-S STRING` (what a shebang's one
    argument needs for more than one word) is split on blanks."""
    words, env = list(args), dict(env)
    i = 0
    while i < len(words):
        word = words[i]
        if word in ("-S", "--split-string") and i + 1 < len(words):
            words[i : i + 2] = words[i + 1].split()
        elif word.startswith("-S") and len(word) > 2:
            words[i : i + 1] = word[2:].split()
        elif word.startswith("--split-string="):
            words[i : i + 1] = word.split("=", 1)[1].split()
        elif word in ("-i", "-", "--ignore-environment"):
            env, i = {}, i + 1
        elif word in ("-u", "--unset", "-C", "--chdir") and i + 1 < len(words):
            if word in ("-u", "--unset"):
                env.pop(words[i + 1], None)
            else:
                cwd = os.path.join(cwd, words[i + 1])
            i += 2
        elif word == "--":
            i += 1
            break
        elif word.startswith("-"):
            i += 1  # -0, -v, --debug, --unset=NAME, ...
        elif "=" in word:
            key, value = word.split("=", 1)
            env[key] = value
            i += 1
        else:
            break
    if i >= len(words):
        return Judged(None, f"{NOT_PYTHON} ({subject('env', how)} names no command)")
    return _judge(words[i:], env, cwd, files, how, trail)


# Programs that run the rest of their command line unchanged (GNU coreutils): their options that take a
# value, and how many words come between the options and the command.
WRAPPERS = {
    "nohup": (frozenset(), 0),
    "nice": (frozenset(("-n", "--adjustment")), 0),
    "timeout": (frozenset(("-s", "--signal", "-k", "--kill-after")), 1),  # timeout [OPTION] DURATION CMD
    "stdbuf": (frozenset(("-i", "--input", "-o", "--output", "-e", "--error")), 0),
}


def _wrapper(name: str, args: list, env: dict, cwd: str, files: Any, how: str, trail: list) -> Judged:
    with_values, skip = WRAPPERS[name]
    _found, at = read_options(args, with_values)
    command = args[at + skip :]
    if not command:
        return Judged(None, f"{NOT_PYTHON} ({subject(name, how)} names no command)")
    return _judge(command, env, cwd, files, said(f"the command {name} runs", how), trail)


def _enter(answer: Union[Judged, Inside], env: dict, cwd: str, files: Any, trail: list) -> Judged:
    """A wrapper's answer: final, or the command it runs, judged inside its environment or as it is."""
    if isinstance(answer, Judged):
        return answer
    if answer.prefix is None:
        return _judge(answer.command, env, cwd, files, answer.what, trail)
    return _inside(answer.prefix, answer.command, answer.python_itself, env, cwd, files, answer.what, trail)


def _inside(
    prefix: str, command: list, python_itself: bool, env: dict, cwd: str, files: Any, what: str, trail: list
) -> Judged:
    """The command run inside an environment, its bin/ first on PATH: what it finds there, else (a command
    that is not a Python program, `bash job.sh`) the environment's own python."""
    own = os.path.join(prefix, "bin", "python")
    if python_itself or not command:
        return Judged(own, what)
    inner_env = dict(env, PATH=os.path.join(prefix, "bin") + os.pathsep + env.get("PATH", DEFAULT_PATH))
    inner_env[
        "VIRTUAL_ENV" if files.text(os.path.join(prefix, "pyvenv.cfg")) is not None else "CONDA_PREFIX"
    ] = prefix
    found = _judge(command, inner_env, cwd, files, INNER, trail)
    if found.interpreter is None:
        return Judged(own, f"{what}; {found.reason}, so the environment's python")
    if found.reason.endswith(INNER) and found.reason.count(",") <= 1:  # `python`, `python3.11` itself
        return Judged(found.interpreter, what)
    return Judged(found.interpreter, f"{what}; {found.reason}")
