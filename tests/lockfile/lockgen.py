"""Lockfiles written by the real uv, against a loopback index of wheels built here (tests/pkgindex.py,
tests/pyenvs.py): a torch-like 2.5.1+cu124 wheel that requires the nvidia-* CUDA 12.4 wheels, served under
/whl/cu124, and an untagged CPU torch 2.5.1 served under /whl/cpu (as the PyTorch index serves its macOS
wheels). The project pins torch==2.5.1 from the cu124 index on Linux and the cpu index on macOS, so its
uv.lock is universal: three torch entries, each with its resolution markers. A second project
(extras/uv.lock) offers torch as two conflicting extras, cpu and cu124, as uv's guide to PyTorch shows."""

from __future__ import annotations

import subprocess
from pathlib import Path

from pkgindex import LocalIndex, offline_env
from pyenvs import dist_info_only, torch_wheel, uv

NVIDIA = (
    ("nvidia-cuda-runtime-cu12", "12.4.127"),
    ("nvidia-cudnn-cu12", "9.1.0.70"),
    ("nvidia-nccl-cu12", "2.21.5"),
)

PYPROJECT = """[project]
name = "app"
version = "0.1.0"
requires-python = ">=3.10"
dependencies = ["torch==2.5.1"]

[tool.uv.sources]
torch = [
  {{ index = "pytorch-cpu", marker = "sys_platform == 'darwin'" }},
  {{ index = "pytorch-cu124", marker = "sys_platform == 'linux'" }},
]

[[tool.uv.index]]
name = "pytorch-cpu"
url = "{cpu}"
explicit = true

[[tool.uv.index]]
name = "pytorch-cu124"
url = "{cu124}"
explicit = true
"""


EXTRAS = """[project]
name = "app"
version = "0.1.0"
requires-python = ">=3.10"
dependencies = []

[project.optional-dependencies]
cpu = ["torch==2.5.1"]
cu124 = ["torch==2.5.1"]

[tool.uv]
conflicts = [[{{ extra = "cpu" }}, {{ extra = "cu124" }}]]

[tool.uv.sources]
torch = [
  {{ index = "pytorch-cpu", extra = "cpu" }},
  {{ index = "pytorch-cu124", extra = "cu124" }},
]

[[tool.uv.index]]
name = "pytorch-cpu"
url = "{cpu}"
explicit = true

[[tool.uv.index]]
name = "pytorch-cu124"
url = "{cu124}"
explicit = true
"""


def generate(root: Path) -> dict:
    """{"uv.lock", "pylock.toml", "requirements-export.txt", "requirements-cu124.txt", "requirements-cpu.txt",
    "extras" -> path, "cu124" -> the cu124 index URL, "cpu" -> the cpu index URL}: the files uv wrote."""
    cu, cpu = root / "wheels-cu124", root / "wheels-cpu"
    torch_wheel(cu, "2.5.1+cu124", "12.4")
    for name, version in (("filelock", "3.16.1"), *NVIDIA):
        dist_info_only(cu, name, version)
    torch_wheel(cpu, "2.5.1", None)
    dist_info_only(cpu, "filelock", "3.16.1")
    proj, extras = root / "proj", root / "extras"
    proj.mkdir()
    extras.mkdir()
    (root / "req.in").write_text("torch==2.5.1\n")
    with LocalIndex(cu) as a, LocalIndex(cpu) as b:
        urls = {"cu124": a.url("whl/cu124"), "cpu": b.url("whl/cpu")}
        (proj / "pyproject.toml").write_text(PYPROJECT.format(**urls))
        (extras / "pyproject.toml").write_text(EXTRAS.format(**urls))
        env = offline_env(root, a.url("simple"))
        linux = ("--python-platform", "x86_64-unknown-linux-gnu", "--python-version", "3.11")
        steps = (
            ("lock",),
            ("export", "--format", "pylock.toml", "-o", "pylock.toml"),
            ("export", "--format", "requirements.txt", "-o", "requirements-export.txt"),
            ("pip", "compile", "../req.in", "--index-url", urls["cu124"], "--emit-index-url",
             "--emit-index-annotation", *linux, "-o", "requirements-cu124.txt"),
            ("pip", "compile", "../req.in", "--index-url", urls["cpu"], "--emit-index-url", *linux,
             "--annotation-style", "line", "-o", "requirements-cpu.txt"),
        )  # fmt: skip
        for cwd, args in [(proj, step) for step in steps] + [(extras, ("lock",))]:
            done = subprocess.run(
                [uv(), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
            )
            assert done.returncode == 0, f"uv {' '.join(args)}: {done.stderr}"
    names = (
        "uv.lock",
        "pylock.toml",
        "requirements-export.txt",
        "requirements-cu124.txt",
        "requirements-cpu.txt",
    )
    return dict(urls, extras=extras / "uv.lock", **{name: proj / name for name in names})
