"""Reads a Python environment's installed distributions without importing any framework.

`inspect()` runs either in gpudoctor's own interpreter or, as source text, in the target interpreter, so
it uses the standard library alone and works on Python 3.8+. It returns raw sources only: distribution
names, versions, `Requires-Dist` lines, INSTALLER, the CUDA libraries in the file lists of the nvidia-*
wheels, and the text of a few small build-description files (torch/version.py, ...). The probes parse them.

In another interpreter it runs as `python -I -B -c BOOTSTRAP ISOLATED NAME=VALUE...` (`argv()`):
isolated (no PYTHON* variables, no user site, no current directory on sys.path) and writing no bytecode, so
nothing of that environment is changed or can change the answer. Isolation hides what the user's own
programs do see, so the entries PYTHONPATH and the user site-packages directory would add are scanned as
well, from the values gpudoctor was started with (the NAME=VALUE arguments). The bootstrap is valid
Python 2 and 3: an interpreter older than 3.8 exits with UNSUPPORTED and says so, instead of failing on
syntax. The answer is printed on one line after MARKER, so that whatever a sitecustomize prints cannot be
mistaken for it, as a Python literal in ASCII (`ascii()`), read back with `ast.literal_eval`.

The child's start-up is most of a check's wait for it, so it imports only os and sys (and site, which
-I keeps): json, typing and platform would each add 7-10 ms (they import re, enum, functools).
"""

from __future__ import annotations

import sys

FORMAT = 1
MARKER = "GPUDOCTOR-PYINSPECT "
UNSUPPORTED = 86  # the exit status of the bootstrap in an interpreter older than 3.8
# The variables that decide which directories the user's programs import from, passed as NAME=VALUE.
PATH_VARIABLES = ("PYTHONPATH", "PYTHONNOUSERSITE", "PYTHONUSERBASE")

# Distributions whose metadata the probes use, by name prefix (normalised: lower case, '-' for '_').
INTERESTING = (
    "torch",
    "tensorflow",
    "tf-nightly",
    "jax",
    "jaxlib",
    "cupy",
    "onnxruntime",
    "nvidia-",
    "cuda-toolkit",
    "cuda-bindings",
    "pytorch-triton",
    "triton",
)
# Small files that describe how a framework was built, read verbatim.
BUILD_FILES = {
    "torch": ["torch/version.py"],
    "tensorflow": ["tensorflow/python/platform/build_info.py"],
    # version_info.py: written into Windows wheels only; build_and_package_info.py: the CUDA a Linux
    # onnxruntime-gpu wheel was built for (1.21 and later).
    "onnxruntime": ["onnxruntime/capi/version_info.py", "onnxruntime/capi/build_and_package_info.py"],
    "onnxruntime-gpu": ["onnxruntime/capi/version_info.py", "onnxruntime/capi/build_and_package_info.py"],
}
# The files of a wheel's list that are kept: the CUDA (and ROCm) shared libraries.
LIB_MARKERS = (
    "cuda", "cudnn", "nccl", "cudart", "cublas", "cufft", "curand",
    "rocm", "hip", "miopen", "rccl", "providers",
)  # fmt: skip
# Whose file list is scanned for those libraries: the wheels that ship CUDA libraries, which the probes
# count as copies (probes/libraries.py). A framework's own list is not read: torch's is 1.5 MB.
RECORD_SCANNED = ("nvidia-",)
MAX_FILES_PER_DIST = 200
MAX_BUILD_FILE = 64 * 1024
MAX_PYVENV_CFG = 16 * 1024


def _norm(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}
ISOLATED = "--isolated"  # argv's first argument in another interpreter; NAME=VALUE arguments follow
# sys.implementation.name -> what platform.python_implementation() says, without importing platform.
IMPLEMENTATIONS = {"cpython": "CPython", "pypy": "PyPy", "ironpython": "IronPython", "jython": "Jython"}


def inspect(env: dict | None = None) -> dict:
    """The environment's raw description. `env` (PATH_VARIABLES from gpudoctor's environment) is given
    when running isolated: the directories it adds to the user's sys.path are scanned too."""
    import os

    path, user_site = search_path(env)

    out: dict = {
        "format": FORMAT,
        "executable": sys.executable,
        "version": _python_version(),
        "implementation": _implementation(),
        "prefix": sys.prefix,
        "base_prefix": getattr(sys, "base_prefix", sys.prefix),
        "platform": sys.platform,
        "machine": _machine(),
        "libc": _libc(),
        "conda_meta": os.path.isdir(os.path.join(sys.prefix, "conda-meta")),
        "pyvenv_cfg": _read(os.path.join(sys.prefix, "pyvenv.cfg"), MAX_PYVENV_CFG),
        "path": path,
        "user_site": user_site,
        "all": {},
        "distributions": [],
    }
    out["all"], out["distributions"] = scan(path, _listdir)
    return out


def _listdir(directory: str) -> list:
    import os

    try:
        return sorted(os.listdir(directory))
    except OSError:
        return []


def scan(path: list, listdir, read=None) -> tuple:
    """({name: version} of every distribution on `path`, [each interesting one described, by name]).

    Names and versions come from the metadata folders' names (one directory listing per sys.path entry,
    `listdir(directory)` -> sorted names); only the interesting ones are opened, through `read` (_describe's).
    importlib.metadata is not used: importing it and parsing every METADATA file with the email parser costs
    more than the rest of a check. The same scan reads an environment from its files without its
    interpreter (gpudoctor/envs/layout.py) and from an image's layers (gpudoctor/image/pythons.py)."""
    every: dict = {}
    described = []
    for entry_dir in path:
        location = entry_dir or "."
        for folder in listdir(location):
            if not folder.endswith((".dist-info", ".egg-info")):
                continue
            stem = folder.rsplit(".", 1)[0]
            if "-" not in stem:
                continue
            raw_name, version = stem.split("-", 1)
            key = _norm(raw_name)
            if key in every:
                continue  # the first on sys.path wins, as it does for imports
            every[key] = version
            if key.startswith(INTERESTING):
                described.append(_describe(location, folder, key, version, read=read or _read))
    described.sort(key=lambda d: d["name"])
    return every, described


def _python_version() -> str:
    """platform.python_version(): the first word of sys.version ("3.13.0rc1", "3.11.7")."""
    words = sys.version.split()
    return words[0] if words else ".".join(str(n) for n in sys.version_info[:3])


def _implementation() -> str:
    name = getattr(sys, "implementation", None)
    found = IMPLEMENTATIONS.get(getattr(name, "name", ""))
    if found:
        return found
    import platform

    return platform.python_implementation()


def _machine() -> str:
    """os.uname().machine, the machine as this interpreter sees it ("x86_64", "aarch64"); "" where os has
    no uname (Windows)."""
    import os

    try:
        return str(os.uname().machine)
    except (AttributeError, OSError):
        return ""


def _libc() -> list:
    """platform.libc_ver() ["glibc", "2.36"]: glibc answers os.confstr, as platform asks it first; any
    other C library (musl) goes through platform's scan of the executable."""
    import os

    try:
        words = (os.confstr("CS_GNU_LIBC_VERSION") or "").split(None, 1)
    except (AttributeError, ValueError, OSError):
        words = []
    if len(words) == 2:
        return words
    import platform

    return list(platform.libc_ver())


def _read(path: str, limit: int):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(limit)
    except OSError:
        return None


def _describe(location: str, folder: str, key: str, version: str, read=_read) -> dict:
    """One interesting distribution's entry. `read(path, limit)` reads a file's text or returns None: the
    file system's here, an image's layers for gpudoctor/image (the same description without a live tree)."""
    import os

    meta = os.path.join(location, folder)
    requires = []
    headers = read(os.path.join(meta, "METADATA"), 1024 * 1024) or read(
        os.path.join(meta, "PKG-INFO"), 1024 * 1024
    )
    for line in (headers or "").splitlines():
        if not line:
            break  # the headers end at the first blank line; the long description follows
        if line.startswith("Version:"):
            version = line.split(":", 1)[1].strip()
        elif line.startswith("Requires-Dist:"):
            requires.append(line.split(":", 1)[1].strip())
    entry = {
        "name": key,
        "version": version,
        "requires": requires,
        "installer": (read(os.path.join(meta, "INSTALLER"), 256) or "").strip(),
        "location": location,
        "libs": [],
        "texts": {},
    }
    if key.startswith(RECORD_SCANNED):
        entry["libs"] = shared_libraries(read(os.path.join(meta, "RECORD"), 16 * 1024 * 1024) or "")
    for rel in BUILD_FILES.get(key, []):
        text = read(os.path.join(location, rel), MAX_BUILD_FILE)
        if text is not None:
            entry["texts"][rel] = text
    return entry


def shared_libraries(record: str) -> list:
    """The paths in a wheel's RECORD that name a framework library (".so" and one of LIB_MARKERS), at most
    MAX_FILES_PER_DIST. Only the lines holding ".so" are looked at, found with str.find over the whole
    text: torch's RECORD has 15,000 lines and a few dozen libraries (splitting every line took 12 ms,
    parsing it as CSV 60 ms). A line is `path,hash,size`; the hash is urlsafe base64, without dots."""
    found = []
    # Lower case that keeps every index (str.lower() makes some characters two): A-Z only.
    low_text = record.lower() if record.isascii() else record.translate(ASCII_LOWER)
    at = low_text.find(".so")
    while at != -1 and len(found) < MAX_FILES_PER_DIST:
        start = record.rfind("\n", 0, at) + 1
        end = record.find("\n", at)
        end = len(record) if end == -1 else end
        path = record[start:end].rstrip("\r").rsplit(",", 2)[0].strip('"')
        low = path.lower()
        if ".so" in low and any(m in low for m in LIB_MARKERS):
            found.append(path)
        at = low_text.find(".so", end)
    return found


def search_path(env: dict | None) -> tuple[list, str | None]:
    """(the directories to scan, in import order; the user site-packages directory among them or None).

    Without `env` this is sys.path as it is. With it (an isolated run), PYTHONPATH's entries come first and
    the user site-packages directory goes before the first site-packages directory, as `site` would put them,
    unless PYTHONNOUSERSITE is set or the interpreter is a virtual environment without system packages."""
    import os

    if env is None:
        return list(sys.path), None
    extra = [p for p in str(env.get("PYTHONPATH") or "").split(os.pathsep) if p]
    user = None if env.get("PYTHONNOUSERSITE") else _user_site(env.get("PYTHONUSERBASE"))
    path = []
    for entry in extra + list(sys.path):
        if user and entry.endswith(("site-packages", "dist-packages")) and user not in path:
            path.append(user)
        if entry not in path:
            path.append(entry)
    if user and user not in path:
        path.append(user)
    return path, user


def _user_site(userbase: str | None) -> str | None:
    import os
    import site

    cfg = _read(os.path.join(sys.prefix, "pyvenv.cfg"), MAX_PYVENV_CFG)
    if cfg is not None:
        system = [
            line.split("=", 1)[1].strip().lower()
            for line in cfg.splitlines()
            if "=" in line and line.split("=", 1)[0].strip() == "include-system-site-packages"
        ]
        if not system or system[0] != "true":
            return None  # a venv without system packages never reads the user site
    if userbase:  # site computed its directories at start-up, without it: recompute them (this process only)
        site.USER_BASE, site.USER_SITE = userbase, None
    try:
        user = site.getusersitepackages()
    except (AttributeError, OSError, KeyError):
        return None
    return user if isinstance(user, str) and os.path.isdir(user) else None


def main(argv: list) -> None:
    """Print inspect()'s result after MARKER. Given ISOLATED first (argv()), the NAME=VALUE arguments
    after it are PATH_VARIABLES as gpudoctor was started with them."""
    env = None
    if argv[:1] == [ISOLATED]:
        env = dict(a.split("=", 1) for a in argv[1:] if "=" in a)
    sys.stdout.write(MARKER + ascii(inspect(env)) + "\n")


def source() -> str:
    """This module's text, which the bootstrap compiles and runs in the target interpreter: read as
    inspect.getsource reads it, without importing inspect (5 ms before the inspection could start)."""
    with open(__file__, encoding="utf-8") as f:
        return f.read()


def bootstrap() -> str:
    """The program for `python -c`: valid in Python 2 and 3; refuses what is older than 3.8."""
    return (
        "import sys\n"
        "if sys.version_info < (3, 8):\n"
        "    sys.stderr.write('Python %d.%d.%d' % tuple(sys.version_info[:3]) + ' is older than 3.8\\n')\n"
        f"    sys.exit({UNSUPPORTED})\n"
        "g = {'__name__': 'gpudoctor_pyinspect'}\n"
        f"exec(compile({source()!r}, 'gpudoctor-pyinspect', 'exec'), g)\n"
        "g['main'](sys.argv[1:])\n"
    )


def argv(interpreter: str, environ: dict) -> tuple:
    """The command that inspects `interpreter`, isolated and writing nothing; `environ` is gpudoctor's."""
    pairs = tuple(f"{k}={environ[k]}" for k in PATH_VARIABLES if environ.get(k))
    return (interpreter, "-I", "-B", "-c", bootstrap(), ISOLATED, *pairs)


def parse_output(stdout: str) -> dict | None:
    """The inspection result from the target's stdout (the last MARKER line, a Python literal); None
    when there is none or it is not a literal dict (ast.literal_eval evaluates no code)."""
    import ast

    for line in reversed(stdout.splitlines()):
        if line.startswith(MARKER):
            try:
                data = ast.literal_eval(line[len(MARKER) :])
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                return None
            return data if isinstance(data, dict) else None
    return None


if __name__ == "__main__":
    main(sys.argv[1:])
