"""as_inspection: a Lock as the dump an installed environment's inspection gives (host/pyinspect.py), so
that the probes that judge an environment judge the lock's pins as if they were installed."""

from __future__ import annotations

from ..host.pyinspect import FORMAT, INTERESTING
from .model import Lock

# What installs each format's pins (the INSTALLER file a real installation would have).
INSTALLERS = {
    "uv.lock": "uv",
    "poetry.lock": "poetry",
    "pylock.toml": "pip",
    "requirements.txt": "pip",
    "environment.yml": "conda",
    "conda-lock.yml": "conda",
}
CONDA_FORMATS = ("environment.yml", "conda-lock.yml")


def as_inspection(lock: Lock, *, machine: str, python: str = "") -> dict:
    """The keys of pyinspect.inspect()'s answer: no interpreter (the executable names the lockfile), every
    pin in `all`, the interesting ones (pyinspect.INTERESTING) as distributions with their requirements.
    A conda lock's pip entries are installed by pip, its conda packages by conda."""
    installer = INSTALLERS.get(lock.format, "pip")
    distributions = [
        {
            "name": pin.name,
            "version": pin.version,
            "requires": list(pin.requires),
            "installer": installer,
            "location": lock.path,
            "libs": [],
            "texts": {},
        }
        for pin in lock.pins
        if pin.name.startswith(INTERESTING)
    ]
    return {
        "format": FORMAT,
        "executable": f"lockfile {lock.path}",
        "version": python or "",
        "implementation": "",
        "prefix": "",
        "base_prefix": "",
        "platform": "linux",
        "machine": machine,
        "libc": [],
        "conda_meta": lock.format in CONDA_FORMATS,
        "pyvenv_cfg": None,
        "path": [],
        "user_site": None,
        "all": {pin.name: pin.version for pin in lock.pins},
        "distributions": sorted(distributions, key=lambda d: d["name"]),
    }
