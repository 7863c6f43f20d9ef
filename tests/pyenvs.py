"""Real Python environments for the tests: wheels built here, virtual environments made here.

gpudoctor judges the user's environment from outside it, so the tests that prove it cannot replay an
inspection's answer: they build small wheels that look like the real torch builds where gpudoctor reads
them (the version's local tag, `Requires-Dist`, `torch/version.py`, the CUDA libraries in RECORD), install
them with real pip into virtual environments of other interpreters, and run gpudoctor from its own.
"""

from __future__ import annotations

import base64
import glob
import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Optional

# How the real wheels differ (PyTorch's 2.5.1 wheels for Linux x86_64): the CUDA build pins the nvidia-*
# wheels it was linked against and ships libtorch_cuda.so; the CPU build carries +cpu and neither.
TORCH_CUDA_REQUIRES = (
    "filelock",
    'nvidia-cuda-runtime-cu12==12.4.127; platform_system == "Linux" and platform_machine == "x86_64"',
    'nvidia-cudnn-cu12==9.1.0.70; platform_system == "Linux" and platform_machine == "x86_64"',
    'nvidia-nccl-cu12==2.21.5; platform_system == "Linux" and platform_machine == "x86_64"',
)


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build_wheel(
    out_dir: Path,
    name: str,
    version: str,
    files: dict[str, str],
    requires: tuple[str, ...] = (),
) -> Path:
    """A pure-Python wheel with the given files, metadata and requirements; returns its path."""
    dist = f"{name.replace('-', '_')}-{version}"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    metadata += "".join(f"Requires-Dist: {r}\n" for r in requires) + "\n"
    members = dict(files)
    members[f"{dist}.dist-info/METADATA"] = metadata
    members[f"{dist}.dist-info/WHEEL"] = (
        "Wheel-Version: 1.0\nGenerator: gpudoctor-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    record = [_record_line(n, t.encode()) for n, t in members.items()]
    record.append(f"{dist}.dist-info/RECORD,,")
    members[f"{dist}.dist-info/RECORD"] = "\n".join(record) + "\n"
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for member, text in members.items():
            z.writestr(member, text)
    return path


def torch_wheel(out_dir: Path, version: str, cuda: Optional[str]) -> Path:
    """A torch-like wheel: `2.5.1+cu124` with cuda "12.4", or `2.5.1+cpu` with cuda None."""
    files = {
        "torch/__init__.py": f"__version__ = {version!r}\n",
        "torch/version.py": (
            "from typing import Optional\n\n"
            "__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']\n"
            f"__version__ = {version!r}\ndebug = False\ncuda: Optional[str] = {cuda!r}\n"
            "git_version = 'a8d6afb511a69687bbb2b7e88a3cf67917e1697e'\nhip: Optional[str] = None\n"
        ),
    }
    if cuda:
        # The shared library is listed where a real wheel has it; its content does not matter here.
        files["torch/lib/libtorch_cuda.so"] = "not a real library\n"
    return build_wheel(out_dir, "torch", version, files, TORCH_CUDA_REQUIRES if cuda else ("filelock",))


def dist_info_only(out_dir: Path, name: str, version: str) -> Path:
    """A plain distribution (no requirements) for the pins above to resolve against, offline."""
    module = name.replace("-", "_")
    return build_wheel(out_dir, name, version, {f"{module}_stub/__init__.py": ""})


def wheelhouse(out_dir: Path) -> Path:
    """Every wheel the environments below install: torch CUDA and CPU builds and what they require."""
    torch_wheel(out_dir, "2.5.1+cu124", "12.4")
    torch_wheel(out_dir, "2.5.1+cpu", None)
    for name, version in (
        ("filelock", "3.16.1"),
        ("nvidia-cuda-runtime-cu12", "12.4.127"),
        ("nvidia-cudnn-cu12", "9.1.0.70"),
        ("nvidia-nccl-cu12", "2.21.5"),
    ):
        dist_info_only(out_dir, name, version)
    return out_dir


def make_venv(python: str, where: Path) -> Path:
    """A virtual environment of `python`, without pip (gpudoctor's pip installs into it); its bin/python."""
    subprocess.run([python, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120)
    return where / "bin" / "python"


def pip_install(target_python: Path, wheels: Path, *requirements: str) -> None:
    """Real pip, from the wheels directory only (no index), into the environment of `target_python`."""
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(target_python), "install", "--quiet", "--no-index"]
        + ["--disable-pip-version-check", "--find-links", str(wheels), *requirements],
        check=True,
        timeout=300,
    )


def uv() -> str:
    """The uv command the test extras install beside this interpreter (or on PATH)."""
    beside = Path(sys.executable).parent / "uv"
    found = str(beside) if beside.exists() else shutil.which("uv")
    assert found, "uv is not installed: it is in the test extras (pip install '.[test]')"
    return found


def uv_venv(python: str, where: Path, wheels: Path, *requirements: str) -> Path:
    """A virtual environment made by uv and filled by `uv pip` from the wheels directory only."""
    subprocess.run([uv(), "venv", "--quiet", "--python", python, str(where)], check=True, timeout=120)
    target = where / "bin" / "python"
    subprocess.run(
        [
            uv(),
            "pip",
            "install",
            "--quiet",
            "--python",
            str(target),
            "--no-index",
            "--find-links",
            str(wheels),
        ]
        + list(requirements),
        check=True,
        timeout=300,
    )
    return target


def unpack_wheel(wheel: Path, site_packages: Path, installer: str = "pip") -> None:
    """A wheel laid into a site-packages directory the way an installer does (for interpreters this pip
    cannot run under); INSTALLER names who did it."""
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site_packages)
        info = next(n.split("/")[0] for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    (site_packages / info / "INSTALLER").write_text(installer + "\n")


def site_packages(venv_python: Path) -> Path:
    root = venv_python.parent.parent
    return Path(next(iter(glob.glob(str(root / "lib" / "python3*" / "site-packages")))))


def other_pythons() -> list[str]:
    """CPython interpreters of other versions than the one running the tests, where the machine has them
    (PATH, pyenv): 3.8 and the newest found, each once."""
    found: dict[str, str] = {}
    candidates = [shutil.which(f"python3.{minor}") for minor in range(8, 15)]
    candidates += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.*/bin/python3")))
    for exe in candidates:
        if not exe:
            continue
        out = subprocess.run(
            [exe, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        version = out.stdout.strip()
        too_old = tuple(map(int, version.split("."))) < (3, 8) if out.returncode == 0 else True
        if not too_old and version != f"{sys.version_info[0]}.{sys.version_info[1]}":
            found.setdefault(version, exe)
    if not found:
        return []
    ordered = sorted(found, key=lambda v: tuple(map(int, v.split("."))))
    picked = {ordered[0], ordered[-1]}
    return [found[v] for v in ordered if v in picked]


def copy_source_tree(root: Path, dest: Path) -> Path:
    """This source tree as a user would have it (no git, venvs, build output or caches), to install from."""
    shutil.copytree(
        root,
        dest,
        ignore=shutil.ignore_patterns(
            ".git", ".ci-venv", ".venv", "build", "*.egg-info", "__pycache__", ".*cache"
        ),
    )
    return dest


def file_list(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}
