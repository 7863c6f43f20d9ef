"""The small files that name or describe a Python environment, parsed: text in, data out.

- conda's `~/.conda/environments.txt`: one prefix a line, appended by every `conda create` and never
  pruned, so it names environments since removed and the same one twice (conda/conda#2704, #6313);
- a Jupyter `kernel.json`: `argv` (the interpreter first, as ipykernel's make_ipkernel_cmd writes it),
  `display_name`, `language`;
- `pyvenv.cfg`: `key = value` lines (`home`, `version` from venv and virtualenv, `version_info` from uv,
  `include-system-site-packages`).
"""

from __future__ import annotations

import json
import re
from typing import NamedTuple, Optional

PYTHON_NAME = re.compile(r"python(\d+(?:\.\d+)?)?t?")  # python, python3, python3.12, python3.13t


def environments_txt(text: str) -> list[str]:
    """The prefixes conda listed, each once, in the order first written (blank lines and comments
    dropped)."""
    out: list[str] = []
    for line in text.splitlines():
        path = line.strip()
        if path and not path.startswith("#") and path not in out:
            out.append(path.rstrip("/") or "/")
    return out


class KernelSpec(NamedTuple):
    argv0: str  # the program the kernel starts: an interpreter's path, a bare name, or a wrapper
    display_name: str
    language: str


def kernel_spec(text: str) -> KernelSpec:
    """kernel.json's program, display name and language; ValueError with the reason when it is not one."""
    try:
        data = json.loads(text)
    except ValueError as e:
        raise ValueError(f"not JSON ({e})") from None
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    argv = data.get("argv")
    if not isinstance(argv, list) or not argv or not isinstance(argv[0], str) or not argv[0]:
        raise ValueError("no argv to start the kernel with")
    name = data.get("display_name")
    language = data.get("language")
    return KernelSpec(
        argv[0], name if isinstance(name, str) else "", language.lower() if isinstance(language, str) else ""
    )


def is_python_name(path: str) -> bool:
    """The program is a Python interpreter by its name (python, python3, python3.12)."""
    return PYTHON_NAME.fullmatch(path.rsplit("/", 1)[-1]) is not None


def pyvenv_cfg(text: str) -> dict[str, str]:
    """pyvenv.cfg's keys (lower case) and values."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip():
            out[key.strip().lower()] = value.strip()
    return out


def cfg_version(cfg: dict[str, str]) -> Optional[str]:
    """The Python version a pyvenv.cfg records: `version` (venv, virtualenv) or `version_info` (uv)."""
    for key in ("version", "version_info"):
        value = cfg.get(key, "")
        if re.fullmatch(r"\d+\.\d+(\.\d+)?([abc]|rc)?\d*(\.final\.0)?", value):
            return value.replace(".final.0", "")
    return None


def xy(version: str) -> str:
    """3.12.1 -> 3.12"""
    return ".".join(version.split(".")[:2])
