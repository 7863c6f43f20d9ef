"""The interpreter a command will run: which Python `gpudoctor run -- CMD ARGS...` judges when CMD fails
([docs/run.md](../../docs/run.md#which-python-is-judged), docs/architecture.md#which-python).

`interpreter_of(argv, env, cwd, files)` is pure: the command line, the environment and working directory it
runs with, and `files`, the only way it reads a file (LiveFiles here; anything with the same five methods in
a test). It answers `Judged(interpreter, reason)`: the interpreter's path and why that one, or None with why
none is known (the caller then judges its default and says so). The forms it knows:

- a Python interpreter (`.venv/bin/python`, `/opt/conda/envs/x/bin/python3.11`, or a bare `python3` found on
  the command's PATH as execvp finds it); `python -m module` is that python too;
- a script with a shebang, console scripts (`torchrun`, `accelerate`, `deepspeed`) included: the interpreter
  the kernel would start, `#!/usr/bin/env [-S] python3` through env, and pip's and uv's `#!/bin/sh`
  trampoline for a path too long for a shebang (or with a space) on its second line;
- `env [NAME=VALUE]... CMD`, as argv[0] or in a shebang, and `nohup`, `nice`, `timeout`, `stdbuf` before it;
- `uv run [OPTIONS] CMD...`: the project environment (UV_PROJECT_ENVIRONMENT, else `.venv` at the root of the
  workspace the project in the working directory belongs to), or outside a project the active or nearest
  `.venv`; none where uv makes an environment for this run alone (`--isolated`, a script with inline
  metadata, `uvx`);
- `conda run`, `mamba run`, `micromamba run` (`-n NAME`, `-p PREFIX`, or the active environment): that
  environment's python, the name looked up in the envs directories as conda does, then in conda's own list
  of environments (~/.conda/environments.txt).
Inside `uv run` and `conda run` the command is looked up with the environment's bin/ first on PATH, as they
run it; a command there that is not a Python program (`bash train.sh`) gets the environment's python.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
import stat
from typing import Any, NamedTuple, Optional

# A file's first bytes read: the kernel reads 256 for a shebang (BINPRM_BUF_SIZE, Linux 5.1 and later); the
# second line of pip's /bin/sh trampoline carries a path of up to PATH_MAX.
MAX_HEAD = 4096
MAX_TEXT = 256 * 1024  # pyproject.toml, environments.txt, a script's inline metadata
MAX_DEPTH = 8  # wrappers within wrappers (a shebang naming env naming uv ...): more is a loop
DEFAULT_PATH = "/bin:/usr/bin"  # execvp's search path where PATH is unset (glibc, confstr _CS_PATH)
PYTHON = re.compile(r"python(\d+(\.\d+)?t?)?")  # python, python3, python3.11, python3.13t
NOT_PYTHON = "the command is not a Python program"
TOP = "argv[0] of the command"
INNER = "the command it runs"


class Judged(NamedTuple):
    interpreter: Optional[str]  # None: the command names no interpreter that can be known from here
    reason: str


class LiveFiles:
    """The files of this machine, read as `interpreter_of` needs them."""

    def head(self, path: str) -> Optional[bytes]:
        """The first MAX_HEAD bytes of a regular file; None when it is not one or cannot be read."""
        return _read(path, MAX_HEAD)

    def text(self, path: str) -> Optional[str]:
        """A small text file (its first MAX_TEXT bytes); None when it is not a readable regular file."""
        data = _read(path, MAX_TEXT)
        return None if data is None else data.decode("utf-8", "replace")

    def executable(self, path: str) -> bool:
        """A regular file this user may execute (what execvp tries)."""
        return os.path.isfile(path) and os.access(path, os.X_OK)

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(path)

    def real(self, path: str) -> str:
        """The path with its symbolic links resolved (where a script or a conda install really is)."""
        return os.path.realpath(path)


def _read(path: str, limit: int) -> Optional[bytes]:
    """At most `limit` bytes of a regular file. Opened non-blocking: a FIFO in its place cannot hang the
    open (it is then refused as not a regular file)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, left = [], limit
        while left > 0:
            chunk = os.read(fd, left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def interpreter_of(argv: Any, env: Any, cwd: str, files: Any) -> Judged:
    """The interpreter `argv` will run with environment `env` in directory `cwd`, and why that one."""
    if not argv:
        return Judged(None, "no command")
    return _judge(list(argv), dict(env), cwd, files, TOP, 0)


def _judge(argv: list, env: dict, cwd: str, files: Any, how: str, depth: int) -> Judged:
    if depth > MAX_DEPTH:
        return Judged(None, f"more than {MAX_DEPTH} wrappers or interpreters in a row ({how})")
    name = argv[0]
    base = os.path.basename(name)
    if base == "env":
        return _env(argv[1:], env, cwd, files, how, depth)
    if PYTHON.fullmatch(base):
        path = find(name, env, cwd, files)
        if path is None:
            return Judged(None, f"{_subject(name, how)} is not on the command's PATH")
        said = how if os.sep in name else f"{name} on the command's PATH, {how}"
        return Judged(path, said)
    if base in WRAPPERS:
        return _wrapper(base, argv[1:], env, cwd, files, how, depth)
    if base == "uv" and _subcommand(argv[1:], UV_GLOBAL_VALUES) == "run":
        return _uv_run(argv[1:], env, cwd, files, how, depth)
    if base == "uvx" or (base == "uv" and _subcommand(argv[1:], UV_GLOBAL_VALUES) == "tool"):
        return Judged(None, f"{base} runs a tool in an environment uv makes for it{_tail(how)}")
    if base in ("conda", "mamba", "micromamba") and _subcommand(argv[1:], CONDA_VALUES) == "run":
        return _conda_run(base, argv, env, cwd, files, how, depth)
    path = find(name, env, cwd, files)
    if path is None:
        return Judged(None, f"{_subject(name, how)} is not found")
    head = files.head(path)
    line = shebang(head)
    if line is None:
        what = "cannot be read" if head is None else "is not a script"
        return Judged(None, f"{NOT_PYTHON} ({_subject(path, how)} {what})")
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
                depth + 1,
            )
    words = [interpreter] + ([arg] if arg else []) + [path] + argv[1:]
    return _judge(words, env, cwd, files, f"named by the #! line of {path}", depth + 1)


def find(name: str, env: dict, cwd: str, files: Any) -> Optional[str]:
    """Where execvp finds `name`: a name with "/" as it is (from `cwd`), else the first executable file in
    the directories of the command's PATH (an empty entry is the working directory)."""
    if os.sep in name:
        return os.path.normpath(os.path.join(cwd, name))
    search = env.get("PATH")
    for directory in (DEFAULT_PATH if search is None else search).split(os.pathsep):
        candidate = os.path.normpath(os.path.join(cwd, directory or ".", name))
        if files.executable(candidate):
            return candidate
    return None


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


def _env(args: list, env: dict, cwd: str, files: Any, how: str, depth: int) -> Judged:
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
        return Judged(None, f"{NOT_PYTHON} ({_subject('env', how)} names no command)")
    return _judge(words[i:], env, cwd, files, how, depth + 1)


def _options(args: list, with_values: frozenset) -> tuple[list, int]:
    """The options before the first word that is not one: [(name, value or None)], and that word's index.
    A value comes attached (`--with=torch`, `-wtorch`) or as the next word, for the options in `with_values`;
    `--` ends the options."""
    found: list = []
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            return found, i + 1
        if not word.startswith("-") or word == "-":
            return found, i
        if word.startswith("--"):
            name, eq, value = word.partition("=")
            attached: Optional[str] = value if eq else None
        else:
            name, attached = word[:2], (word[2:] or None)
        if name in with_values and attached is None and i + 1 < len(args):
            found.append((name, args[i + 1]))
            i += 2
            continue
        found.append((name, attached if name in with_values else None))
        i += 1
    return found, i


# Programs that run the rest of their command line unchanged (GNU coreutils): their options that take a
# value, and how many words come between the options and the command.
WRAPPERS = {
    "nohup": (frozenset(), 0),
    "nice": (frozenset(("-n", "--adjustment")), 0),
    "timeout": (frozenset(("-s", "--signal", "-k", "--kill-after")), 1),  # timeout [OPTION] DURATION CMD
    "stdbuf": (frozenset(("-i", "--input", "-o", "--output", "-e", "--error")), 0),
}


def _wrapper(name: str, args: list, env: dict, cwd: str, files: Any, how: str, depth: int) -> Judged:
    with_values, skip = WRAPPERS[name]
    _found, at = _options(args, with_values)
    command = args[at + skip :]
    if not command:
        return Judged(None, f"{NOT_PYTHON} ({_subject(name, how)} names no command)")
    return _judge(command, env, cwd, files, _said(f"the command {name} runs", how), depth + 1)


def _subcommand(args: list, with_values: frozenset) -> Optional[str]:
    """The first word that is not an option (nor an option's value)."""
    _found, at = _options(args, with_values)
    return args[at] if at < len(args) else None


def _last(found: list, *names: str) -> Optional[str]:
    values = [value for name, value in found if name in names and value]
    return values[-1] if values else None


# --- uv run -----------------------------------------------------------------------------------------------

# Options of `uv` and `uv run` that take a value (uv 0.13.9, `uv run --help`); a test checks this list
# against the help of the uv the tests install.
UV_GLOBAL_VALUES = frozenset(
    (
        "--cache-dir",
        "--python-preference",
        "--color",
        "--allow-insecure-host",
        "--directory",
        "--project",
        "--config-file",
        "--python",
        "-p",
    )
)
UV_RUN_VALUES = UV_GLOBAL_VALUES | frozenset(
    (
        "--extra",
        "--no-extra",
        "--group",
        "--no-group",
        "--only-group",
        "--no-editable-package",
        "--env-file",
        "--with",
        "-w",
        "--with-editable",
        "--with-requirements",
        "--package",
        "--python-platform",
        "--index",
        "--default-index",
        "--index-url",
        "-i",
        "--extra-index-url",
        "--find-links",
        "-f",
        "--index-strategy",
        "--keyring-provider",
        "--upgrade-package",
        "-P",
        "--upgrade-group",
        "--resolution",
        "--prerelease",
        "--prerelease-package",
        "--fork-strategy",
        "--exclude-newer",
        "--exclude-newer-package",
        "--no-sources-package",
        "--reinstall-package",
        "--link-mode",
        "--refresh-package",
        "--config-setting",
        "-C",
        "--config-settings-package",
        "--no-build-isolation-package",
        "--no-build-package",
        "--no-binary-package",
        "--torch-backend",
        "--only-binary",
        "--no-binary",
        "--python-install-mirror",
        "--pypy-install-mirror",
        "--python-downloads-json-url",
        "--exclude-newer-package",
    )
)
ISOLATING = ("--isolated",)
WITH = ("--with", "-w", "--with-editable", "--with-requirements")
TRUE = ("1", "true", "yes", "on")


def _uv_run(args: list, env: dict, cwd: str, files: Any, how: str, depth: int) -> Judged:
    """`uv run`: uv's project environment, or none where uv makes one for this run alone. uv's docs, read
    2026-12-05: docs.astral.sh/uv/concepts/projects/config/#project-environment-path (UV_PROJECT_ENVIRONMENT,
    relative to the workspace root; VIRTUAL_ENV only with --active), /concepts/projects/run/ and
    /guides/scripts/ (a script with inline metadata runs in an environment of its own)."""
    run_at = _options(args, UV_GLOBAL_VALUES)[1]
    options = args[:run_at] + args[run_at + 1 :]
    found, start = _options(options, UV_RUN_VALUES)
    seen = {name for name, _value in found}
    command = options[start:]
    if seen & set(ISOLATING) or env.get("UV_ISOLATED", "").lower() in TRUE:
        return Judged(
            None, f"uv run --isolated runs in an environment uv makes for this run alone{_tail(how)}"
        )
    script = "-s" in seen or "--script" in seen or (bool(command) and command[0].endswith(".py"))
    if script and command:
        text = files.text(os.path.join(cwd, command[0])) or ""
        if re.search(r"^# /// script\s*$", text, re.MULTILINE):
            return Judged(
                None,
                f"uv run {command[0]}: a script with inline metadata runs in an environment "
                f"uv makes for it{_tail(how)}",
            )
    python = _last(found, "--python", "-p") or env.get("UV_PYTHON")
    no_project = "--no-project" in seen or env.get("UV_NO_PROJECT", "").lower() in TRUE
    where = _last(found, "--project") or _last(found, "--directory")
    base = os.path.join(cwd, where) if where else cwd
    project = None if no_project else _up_to(base, "pyproject.toml", files)
    if project is not None:
        active = "--active" in seen or env.get("UV_ACTIVE", "").lower() in TRUE
        if active and env.get("VIRTUAL_ENV"):
            prefix, what = env["VIRTUAL_ENV"], "the active virtual environment (uv run --active)"
        else:
            root = _workspace_root(project, files)
            chosen = env.get("UV_PROJECT_ENVIRONMENT")
            prefix = os.path.join(root, chosen) if chosen else os.path.join(root, ".venv")
            what = f"the project environment of {root}" + (" (UV_PROJECT_ENVIRONMENT)" if chosen else "")
    elif python and os.sep in python:
        return Judged(python, _said(f"uv run --python {python} outside a project", how))
    elif env.get("VIRTUAL_ENV"):
        prefix, what = env["VIRTUAL_ENV"], "the active virtual environment (uv run outside a project)"
    else:
        nearest = _venv_up_from(base, files)
        if nearest is None:
            if not command:
                return Judged(None, f"uv run without a command{_tail(how)}")
            return _judge(command, env, cwd, files, _said("uv run outside a project", how), depth + 1)
        prefix, what = nearest, "the nearest .venv (uv run outside a project)"
    added = " (packages added with --with are not judged)" if seen & set(WITH) else ""
    return _inside(
        prefix,
        command,
        script or "-m" in seen or "--module" in seen,
        env,
        cwd,
        files,
        _said(f"uv run: {what}{added}", how),
        depth,
    )


def _inside(
    prefix: str, command: list, python_itself: bool, env: dict, cwd: str, files: Any, what: str, depth: int
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
    found = _judge(command, inner_env, cwd, files, INNER, depth + 1)
    if found.interpreter is None:
        return Judged(own, f"{what}; {found.reason}, so the environment's python")
    if found.reason.endswith(INNER) and found.reason.count(",") <= 1:  # `python`, `python3.11` itself
        return Judged(found.interpreter, what)
    return Judged(found.interpreter, f"{what}; {found.reason}")


def _subject(name: str, how: str) -> str:
    """`name` as the subject of a sentence, with where it came from unless it is simply the command."""
    return name if how == TOP else f"{name}, {how},"


def _tail(how: str) -> str:
    """ " (how)" where `how` says more than that this is the command itself."""
    return "" if how == TOP else f" ({how})"


def _said(what: str, how: str) -> str:
    """`what` chose the interpreter; `how` says where that came from, unless it is simply the command."""
    return what if how == TOP else f"{what}, {how}"


def _up_to(start: str, name: str, files: Any) -> Optional[str]:
    """The nearest directory from `start` upwards that holds the file `name`."""
    here = os.path.normpath(start)
    while True:
        if files.text(os.path.join(here, name)) is not None:
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def _venv_up_from(start: str, files: Any) -> Optional[str]:
    """Outside a project, uv finds a `.venv` (with its pyvenv.cfg) in the directory or a parent
    (astral-sh/uv@ef92c384 crates/uv-interpreter/src/virtualenv.rs, virtualenv_from_working_dir)."""
    here = os.path.normpath(start)
    while True:
        if files.text(os.path.join(here, ".venv", "pyvenv.cfg")) is not None:
            return os.path.join(here, ".venv")
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def _workspace_root(project: str, files: Any) -> str:
    """The root of the uv workspace `project` is a member of (a pyproject.toml above it, or its own, with a
    [tool.uv.workspace] whose members match and whose exclude does not), else the project itself."""
    from ..toml_reader import toml

    here = project
    while True:
        text = files.text(os.path.join(here, "pyproject.toml"))
        if text is not None and "[tool.uv.workspace]" in text:
            try:
                table = toml().loads(text).get("tool", {}).get("uv", {}).get("workspace", {})
            except ValueError:
                table = {}
            relative = os.path.relpath(project, here)
            members = table.get("members", []) or []
            excluded = any(fnmatch.fnmatch(relative, p) for p in table.get("exclude", []) or [])
            if here == project or (any(fnmatch.fnmatch(relative, p) for p in members) and not excluded):
                return here
        parent = os.path.dirname(here)
        if parent == here:
            return project
        here = parent


# --- conda run, mamba run, micromamba run -----------------------------------------------------------------

# Options of `conda run` (docs.conda.io/projects/conda/en/stable/commands/run.html, read 2026-12-05) and of
# `micromamba run` / `mamba run` that take a value.
CONDA_VALUES = frozenset(
    (
        "-n",
        "--name",
        "-p",
        "--prefix",
        "--cwd",
        "-r",
        "--root-prefix",
        "-a",
        "--attach",
        "--label",
        "-e",
        "--env",
    )
)


def _conda_run(tool: str, argv: list, env: dict, cwd: str, files: Any, how: str, depth: int) -> Judged:
    args = argv[1:]
    run_at = _options(args, CONDA_VALUES)[1]
    options = args[run_at + 1 :]
    found, start = _options(options, CONDA_VALUES)
    command = options[start:]
    prefix = _last(found, "-p", "--prefix")
    name = _last(found, "-n", "--name")
    if prefix:
        prefix, what = (
            os.path.normpath(os.path.join(cwd, _user(prefix, env))),
            f"{tool} run -p {prefix}",
        )
    elif name:
        root = _conda_root(tool, argv, found, env, cwd, files)
        prefix = _conda_env(name, root, env, files)
        if prefix is None:
            dirs = ", ".join(_envs_dirs(root, env)) or "no envs directory known"
            return Judged(
                None,
                f"{tool} run -n {name}: no environment of that name in {dirs} nor in "
                f"~/.conda/environments.txt{_tail(how)}",
            )
        what = f"{tool} run -n {name}: the environment {prefix}"
    elif env.get("CONDA_PREFIX"):
        prefix, what = env["CONDA_PREFIX"], f"{tool} run: the active environment"
    else:
        root = _conda_root(tool, argv, found, env, cwd, files)
        if root is None:
            return Judged(None, f"{tool} run without -n or -p: its base environment is not known{_tail(how)}")
        prefix, what = root, f"{tool} run: the base environment"
    return _inside(prefix, command, False, env, cwd, files, _said(what, how), depth)


def _conda_root(tool: str, argv: list, found: list, env: dict, cwd: str, files: Any) -> Optional[str]:
    """The root (base) prefix: micromamba's -r / MAMBA_ROOT_PREFIX, conda's CONDA_ROOT_PREFIX, else the
    installation the command's conda runs from (<root>/bin/conda or <root>/condabin/conda)."""
    given = _last(found, "-r", "--root-prefix")
    if given:
        return os.path.join(cwd, _user(given, env))
    for var in ("MAMBA_ROOT_PREFIX", "CONDA_ROOT_PREFIX") if tool != "conda" else ("CONDA_ROOT_PREFIX",):
        if env.get(var):
            return env[var]
    path = find(argv[0], env, cwd, files) if tool != "micromamba" else None
    if path is None and tool == "conda":
        path = env.get("CONDA_EXE")  # set by conda's shell hook
    if path:
        path = files.real(path)  # /usr/local/bin/conda -> /opt/conda/bin/conda
        if os.path.basename(os.path.dirname(path)) in ("bin", "condabin"):
            return os.path.dirname(os.path.dirname(path))
    return None


def _user(path: str, env: dict) -> str:
    """`~/x` in the command's home."""
    if path == "~" or path.startswith("~/"):
        return env.get("HOME", "~") + path[1:]
    return path


def _envs_dirs(root: Optional[str], env: dict) -> list:
    """conda's envs_dirs: CONDA_ENVS_DIRS (or the older CONDA_ENVS_PATH), then <root>/envs and ~/.conda/envs
    (conda/base/context.py, Context.envs_dirs; .condarc's envs_dirs is not read here)."""
    dirs = []
    for var in ("CONDA_ENVS_DIRS", "CONDA_ENVS_PATH"):
        dirs += [d for d in env.get(var, "").split(os.pathsep) if d]
    if root:
        dirs.append(os.path.join(root, "envs"))
    if env.get("HOME"):
        dirs.append(os.path.join(env["HOME"], ".conda", "envs"))
    return list(dict.fromkeys(dirs))


def _conda_env(name: str, root: Optional[str], env: dict, files: Any) -> Optional[str]:
    """conda's locate_prefix_by_name: base/root is the root prefix, else the first envs dir holding NAME;
    then an environment of that name in conda's own list of the environments it made."""
    if name in ("base", "root"):
        return root
    for directory in _envs_dirs(root, env):
        if files.is_dir(os.path.join(directory, name)):
            return os.path.join(directory, name)
    listed = files.text(os.path.join(env.get("HOME", "~"), ".conda", "environments.txt")) or ""
    for line in listed.splitlines():
        if line.strip() and os.path.basename(line.strip().rstrip(os.sep)) == name:
            return line.strip()
    return None
