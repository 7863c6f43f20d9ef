"""One environment described from its files, as host/pyinspect.inspect() describes a live one, without
starting its interpreter.

The layout says what the interpreter would answer (image/pythons.py does the same for an image's layers):
its import path is the one CPython builds for the prefix (the user site-packages directory, then the
prefix's site directories, Debian's order for /usr), a virtual environment's from its pyvenv.cfg (`home`,
`include-system-site-packages`). The distributions found there are read by pyinspect's own scan through
the reader, so the python probe's parsers (probes/python_env.py) read this dump as they read a live
one. What only a running interpreter knows stays out: `libc` is left empty (unknown), and `machine` is read
from the interpreter's ELF header.
"""

from __future__ import annotations

import os
from typing import Any, Optional

from ..host import pyinspect
from . import sources

DEBIAN_SHARED = "/usr/lib/python3/dist-packages"
# ELF e_machine -> os.uname().machine (the ELF specification's EM_* numbers)
ELF_MACHINES = {
    62: "x86_64",
    183: "aarch64",
    3: "i686",
    40: "armv7l",
    21: "ppc64le",
    22: "s390x",
    243: "riscv64",
}


def site_dirs(files: Any, prefix: str, xy: str) -> list[str]:
    """The site directories CPython's site module adds for `prefix` (Debian's for /usr), that exist."""
    if prefix == "/usr":
        wanted = [
            f"/usr/local/lib/python{xy}/dist-packages",
            DEBIAN_SHARED,
            f"/usr/lib/python{xy}/dist-packages",
            f"/usr/lib/python{xy}/site-packages",
            f"/usr/lib64/python{xy}/site-packages",
        ]
    else:
        wanted = [f"{prefix}/lib/python{xy}/site-packages", f"{prefix}/lib64/python{xy}/site-packages"]
    out = []
    for d in wanted:
        if files.is_dir(d) and files.real(d) not in [files.real(o) for o in out]:
            out.append(d)
    return out


def user_site(files: Any, home: str, xy: str) -> Optional[str]:
    """~/.local/lib/pythonX.Y/site-packages, where it exists (site.getusersitepackages() on Linux)."""
    path = os.path.join(home, ".local", "lib", f"python{xy}", "site-packages")
    return path if home and files.is_dir(path) else None


def machine(files: Any, interpreter: str) -> str:
    """os.uname().machine as the interpreter would report it, from its ELF header; "" when not an ELF
    file this reader knows (a script, a missing file)."""
    head = files.head(interpreter, 20) if interpreter else None
    if not head or len(head) < 20 or head[:4] != b"\x7fELF":
        return ""
    order = "little" if head[5] == 1 else "big"
    return ELF_MACHINES.get(int.from_bytes(head[18:20], order), "")


def interpreter_in(files: Any, prefix: str, xy: str) -> str:
    """The environment's interpreter: bin/python, bin/python3 or bin/pythonX.Y, a dangling link too."""
    names = ["python", "python3"] + ([f"python{xy}"] if xy else [])
    for name in names:
        path = os.path.join(prefix, "bin", name)
        if files.lexists(path):
            return path
    return ""


def describe(
    files: Any,
    prefix: str,
    xy: str,
    interpreter: str,
    version: Optional[str] = None,
    home: str = "",
) -> dict:
    """The pyinspect-shaped dump of the environment at `prefix` with Python `xy` ("3.12"); `version` the full
    version where the layout says it (else xy); `home` the user's, for the user site-packages directory."""
    cfg_text = files.text(os.path.join(prefix, "pyvenv.cfg"), pyinspect.MAX_PYVENV_CFG)
    cfg = sources.pyvenv_cfg(cfg_text or "")
    base = prefix
    path = site_dirs(files, prefix, xy)
    user = None
    if cfg_text is not None:
        bin_home = cfg.get("home", "").rstrip("/")
        base = os.path.dirname(bin_home) if bin_home else prefix
        if cfg.get("include-system-site-packages", "").lower() == "true":
            user = user_site(files, home, xy)
            path += [d for d in site_dirs(files, base, xy) if d not in path]
    else:
        user = user_site(files, home, xy)
    if user:
        path.insert(0, user)
    dump: dict = {
        "format": pyinspect.FORMAT,
        "executable": interpreter,
        "version": version or xy,
        "implementation": "CPython",
        "prefix": prefix,
        "base_prefix": base,
        "platform": "linux",
        "machine": machine(files, interpreter),
        "libc": [],
        "conda_meta": files.is_dir(os.path.join(prefix, "conda-meta")),
        "pyvenv_cfg": cfg_text,
        "path": path,
        "user_site": user,
        "all": {},
        "distributions": [],
    }
    dump["all"], dump["distributions"] = pyinspect.scan(
        path, lambda directory: files.listdir(directory) or [], lambda p, limit: files.text(p, limit)
    )
    return dump
