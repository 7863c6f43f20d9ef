"""Reads a Python environment's installed distributions without importing any framework.

`inspect()` runs either in gpudoctor's own interpreter or, as source text, in the target interpreter, so
it uses the standard library alone and works on Python 3.8+. It returns raw sources only: distribution
names, versions, `Requires-Dist` lines, INSTALLER, the framework libraries in each wheel's file list, and the
text of a few small build-description files (torch/version.py, ...). The probes parse them.

In another interpreter it runs as `python -I -B -c BOOTSTRAP ENV_JSON` (`argv()`): isolated (no PYTHON*
variables, no user site, no current directory on sys.path) and writing no bytecode, so nothing of that
environment is changed or can change the answer. Isolation hides what the user's own programs do see, so
the entries PYTHONPATH and the user site-packages directory would add are scanned as well, from the values
gpudoctor was started with (ENV_JSON). The bootstrap is valid Python 2 and 3: an interpreter older than
3.8 exits with UNSUPPORTED and says so, instead of failing on syntax. The answer is printed on one line
after MARKER, so that whatever a sitecustomize prints cannot be mistaken for it.
"""

from __future__ import annotations

import json
import sys
from typing import Optional

FORMAT = 1
MARKER = "GPUDOCTOR-PYINSPECT "
UNSUPPORTED = 86  # the exit status of the bootstrap in an interpreter older than 3.8
# The variables that decide which directories the user's programs import from, passed in ENV_JSON.
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
    "onnxruntime": ["onnxruntime/capi/version_info.py"],
    "onnxruntime-gpu": ["onnxruntime/capi/version_info.py"],
}
# A wheel's file list is kept only for the shared libraries that tell a GPU build from a CPU one.
LIB_MARKERS = ("cuda", "cudnn", "nccl", "cudart", "cublas", "rocm", "hip", "miopen", "rccl", "providers")
MAX_FILES_PER_DIST = 200
MAX_BUILD_FILE = 64 * 1024


def _norm(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def inspect(env: Optional[dict] = None) -> dict:
    """The environment's raw description. `env` (PATH_VARIABLES from gpudoctor's environment) is given
    when running isolated: the directories it adds to the user's sys.path are scanned too."""
    import os
    import platform

    path, user_site = search_path(env)

    out: dict = {
        "format": FORMAT,
        "executable": sys.executable,
        "version": platform.python_version(),
        "implementation": platform.python_implementation(),
        "prefix": sys.prefix,
        "base_prefix": getattr(sys, "base_prefix", sys.prefix),
        "platform": sys.platform,
        "libc": list(platform.libc_ver()),
        "conda_meta": os.path.isdir(os.path.join(sys.prefix, "conda-meta")),
        "pyvenv_cfg": _read(os.path.join(sys.prefix, "pyvenv.cfg"), 16 * 1024),
        "path": path,
        "user_site": user_site,
        "all": {},
        "distributions": [],
    }
    # Names and versions come from the metadata folders' names (one directory listing per sys.path
    # entry); only the interesting ones are opened. importlib.metadata is not used: importing it and
    # parsing every METADATA file with the email parser costs more than the rest of a check.
    for entry_dir in path:
        try:
            names = sorted(os.listdir(entry_dir or "."))
        except OSError:
            continue
        for folder in names:
            if not folder.endswith((".dist-info", ".egg-info")):
                continue
            stem = folder.rsplit(".", 1)[0]
            if "-" not in stem:
                continue
            raw_name, version = stem.split("-", 1)
            key = _norm(raw_name)
            if key in out["all"]:
                continue  # the first on sys.path wins, as it does for imports
            out["all"][key] = version
            if key.startswith(INTERESTING):
                out["distributions"].append(_describe(entry_dir or ".", folder, key, version))
    out["distributions"].sort(key=lambda d: d["name"])
    return out


def _read(path: str, limit: int):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(limit)
    except OSError:
        return None


def _describe(location: str, folder: str, key: str, version: str) -> dict:
    import os

    meta = os.path.join(location, folder)
    requires = []
    headers = _read(os.path.join(meta, "METADATA"), 1024 * 1024) or _read(
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
        "installer": (_read(os.path.join(meta, "INSTALLER"), 256) or "").strip(),
        "location": location,
        "libs": [],
        "texts": {},
    }
    # RECORD is scanned as text: a parsed file list costs 60 ms for torch's 15,000 files.
    for line in (_read(os.path.join(meta, "RECORD"), 16 * 1024 * 1024) or "").splitlines():
        path = line.rsplit(",", 2)[0].strip('"')
        low = path.lower()
        if ".so" in low and any(m in low for m in LIB_MARKERS):
            entry["libs"].append(path)
            if len(entry["libs"]) >= MAX_FILES_PER_DIST:
                break
    for rel in BUILD_FILES.get(key, []):
        text = _read(os.path.join(location, rel), MAX_BUILD_FILE)
        if text is not None:
            entry["texts"][rel] = text
    return entry


def search_path(env: Optional[dict]) -> tuple[list, Optional[str]]:
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


def _user_site(userbase: Optional[str]) -> Optional[str]:
    import os
    import site

    cfg = _read(os.path.join(sys.prefix, "pyvenv.cfg"), 16 * 1024)
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
    """Print inspect()'s result after MARKER; argv[0], when given, is ENV_JSON."""
    env = json.loads(argv[0]) if argv else None
    sys.stdout.write(MARKER + json.dumps(inspect(env if isinstance(env, dict) else None)) + "\n")


def source() -> str:
    """This module's text, which the bootstrap compiles and runs in the target interpreter."""
    import inspect as _inspect

    return _inspect.getsource(sys.modules[__name__])


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
    env = {k: environ[k] for k in PATH_VARIABLES if environ.get(k)}
    return (interpreter, "-I", "-B", "-c", bootstrap(), json.dumps(env, sort_keys=True))


def parse_output(stdout: str) -> Optional[dict]:
    """The inspection result from the target's stdout (the last MARKER line); None when there is none."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(MARKER):
            try:
                data = json.loads(line[len(MARKER) :])
            except ValueError:
                return None
            return data if isinstance(data, dict) else None
    return None


if __name__ == "__main__":
    main(sys.argv[1:])
