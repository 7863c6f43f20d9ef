"""Fixtures shared by the command readers' tests (test_command_python.py, test_command_uv.py,
test_command_conda.py): real virtual environments filled by real pip and uv (`envs`), and `judge`,
interpreter_of on this machine's files. The live children's fixtures (libcuda, venvs, scenario) are in
tests/conftest.py."""

from __future__ import annotations

import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from gpudoctor.host.command_python import LiveFiles, interpreter_of

from pyenvs import build_wheel, make_venv, pip_install, uv

# --- the command readers ------------------------------------------------------------------------------------

FILES = LiveFiles()
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"

# Entry points as the projects declare them: torch's setup.py (pytorch/pytorch, setup.py, entry_points
# "console_scripts": "torchrun = torch.distributed.run:main"), accelerate's (huggingface/accelerate, setup.py,
# "accelerate=accelerate.commands.accelerate_cli:main"). DeepSpeed's launcher is a plain script
# (microsoft/DeepSpeed@3354cff3:bin/ds, `#!/usr/bin/env python`), which a wheel carries in .data/scripts/ with
# its first line rewritten to `#!python`, the line an installer replaces with the interpreter (PEP 427,
# "Recommended installer features").
DEEPSPEED_SCRIPT = (
    "#!python\n\nfrom deepspeed.pt.deepspeed_run import main\n\nif __name__ == '__main__':\n    main()\n"
)


def _wheels(out: Path) -> Path:
    build_wheel(
        out,
        "torch",
        "2.5.1",
        {
            "torch/__init__.py": "",
            "torch/distributed/run.py": "def main():\n    pass\n",
            "torch-2.5.1.dist-info/entry_points.txt": (
                "[console_scripts]\ntorchrun = torch.distributed.run:main\n"
            ),
        },
    )
    build_wheel(
        out,
        "accelerate",
        "1.2.1",
        {
            "accelerate/commands/accelerate_cli.py": "def main():\n    pass\n",
            "accelerate-1.2.1.dist-info/entry_points.txt": (
                "[console_scripts]\naccelerate = accelerate.commands.accelerate_cli:main\n"
            ),
        },
    )
    wheel = build_wheel(
        out,
        "deepspeed",
        "0.16.2",
        {"deepspeed/__init__.py": "", "deepspeed-0.16.2.data/scripts/deepspeed": DEEPSPEED_SCRIPT},
    )
    _executable_members(wheel, ".data/scripts/")
    return out


def _executable_members(wheel: Path, marker: str) -> None:
    """Mark the wheel's scripts 0755 in the zip, as bdist_wheel stores them (installers keep that mode)."""
    with zipfile.ZipFile(wheel) as z:
        members = [(info, z.read(info)) for info in z.infolist()]
    with zipfile.ZipFile(wheel, "w") as z:
        for info, data in members:
            if marker in info.filename:
                info.external_attr = (stat.S_IFREG | 0o755) << 16
            z.writestr(info, data)


@pytest.fixture(scope="session")
def envs(tmp_path_factory):
    """proj: a uv-style project whose .venv real pip filled (torch, accelerate, deepspeed); long: a venv at a
    path too long for a #! line, filled by pip; uvenv and relocatable: venvs uv made and filled."""
    root = tmp_path_factory.mktemp("cmdpy")
    wheels = _wheels(root / "wheels")
    proj = root / "proj"
    (proj / "sub").mkdir(parents=True)
    (proj / "pyproject.toml").write_text(
        '[project]\nname = "proj"\nversion = "0.1.0"\nrequires-python = ">=3.9"\ndependencies = []\n'
    )
    venv = make_venv(sys.executable, proj / ".venv")
    pip_install(venv, wheels, "torch", "accelerate", "deepspeed")
    long = make_venv(sys.executable, root / ("l" * 130) / "venv")
    pip_install(long, wheels, "torch")
    made = {}
    for name, extra in (("uvenv", []), ("relocatable", ["--relocatable"])):
        where = root / name
        subprocess.run([uv(), "venv", "--quiet", *extra, "--python", sys.executable, str(where)], check=True)
        subprocess.run(
            [uv(), "pip", "install", "--quiet", "--python", str(where / "bin" / "python"), "--no-index"]
            + ["--find-links", str(wheels), "torch"],
            check=True,
        )
        made[name] = where
    return {"root": root, "proj": proj, "venv": venv, "long": long, **made}


def judge(argv, env=None, cwd="/"):
    return interpreter_of(argv, {"PATH": SYSTEM_PATH} if env is None else env, str(cwd), FILES)


def first_line(path: Path) -> bytes:
    return path.read_bytes().split(b"\n", 1)[0]
