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
import re
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Optional

from packaging.requirements import Requirement
from packaging.version import InvalidVersion, Version

# How the real wheels differ (PyTorch's wheels for Linux x86_64): a CUDA build pins the nvidia-* wheels
# of its CUDA major it was linked against and ships libtorch_cuda.so; the CPU build carries +cpu and neither.
# The versions the real builds pin, by CUDA release (runtime, cuDNN, NCCL); other releases get runtime X.Y.0.
NVIDIA_PINS = {
    "11.8": ("11.8.89", "9.1.0.70", "2.21.5"),
    "12.1": ("12.1.105", "9.1.0.70", "2.21.5"),
    "12.4": ("12.4.127", "9.1.0.70", "2.21.5"),
    "12.6": ("12.6.77", "9.5.1.17", "2.21.5"),
    "12.8": ("12.8.90", "9.10.2.21", "2.27.3"),
    "12.9": ("12.9.79", "9.10.2.21", "2.27.3"),
    "13.0": ("13.0.96", "9.13.0.50", "2.27.7"),
}
LINUX_X86 = 'platform_system == "Linux" and platform_machine == "x86_64"'


def torch_requires(cuda: Optional[str]) -> tuple[str, ...]:
    """torch's Requires-Dist for a build of CUDA `cuda` ("12.4"; None: the CPU build). CUDA 11 and 12 builds
    require nvidia-cuda-runtime-cu11/-cu12; CUDA 13 builds the unsuffixed nvidia-cuda-runtime (NVIDIA's CUDA
    13 component wheels dropped the suffix: probes/cuda.py reads both), cuDNN and NCCL keep -cuNN."""
    if not cuda:
        return ("filelock",)
    major = cuda.split(".")[0]
    runtime, cudnn, nccl = NVIDIA_PINS.get(cuda, (f"{cuda}.0", "9.1.0.70", "2.21.5"))
    runtime_name = "nvidia-cuda-runtime" if int(major) >= 13 else f"nvidia-cuda-runtime-cu{major}"
    return (
        "filelock",
        f"{runtime_name}=={runtime}; {LINUX_X86}",
        f"nvidia-cudnn-cu{major}=={cudnn}; {LINUX_X86}",
        f"nvidia-nccl-cu{major}=={nccl}; {LINUX_X86}",
    )


TORCH_CUDA_REQUIRES = torch_requires("12.4")


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


def torch_wheel(
    out_dir: Path, version: str, cuda: Optional[str], requires: Optional[tuple[str, ...]] = None
) -> Path:
    """A torch-like wheel: `2.5.1+cu124` with cuda "12.4", or `2.5.1+cpu` with cuda None; it requires what
    the real build of that CUDA requires (torch_requires) unless `requires` says otherwise."""
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
    return build_wheel(
        out_dir, "torch", version, files, torch_requires(cuda) if requires is None else requires
    )


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


def cuda_of_tag(tag: str) -> Optional[str]:
    """The CUDA release of a local version tag: cu124 -> "12.4", cu118 -> "11.8", cu130 -> "13.0"; None for
    cpu and anything else."""
    m = re.fullmatch(r"cu(\d+)(\d)", tag)
    return f"{int(m.group(1))}.{m.group(2)}" if m else None


# The torch release a companion requires when the list pins no torch: torchaudio follows torch's version,
# torchvision 0.(15+N).P goes with torch 2.N.P (0.20.1 -> 2.5.1).
def _torch_of_companion(name: str, version: Version) -> str:
    if name == "torchaudio":
        return version.public
    minor, patch = (list(version.release) + [0, 0, 0])[1:3]
    return f"2.{minor - 15}.{patch}"


def _version_for(requirement: Requirement) -> str:
    """The version a wheel must have to satisfy `requirement`: its == pin (a series pin X.* -> X.0), else the
    first of the versions its specifiers name (and 1.0) that satisfies them all."""
    for spec in requirement.specifier:
        if spec.operator in ("==", "==="):
            return spec.version[:-2] + ".0" if spec.version.endswith(".*") else spec.version
    candidates = [s.version.rstrip(".*") for s in requirement.specifier] + ["1.0"]
    for candidate in candidates:
        try:
            if requirement.specifier.contains(Version(candidate), prereleases=True):
                return candidate
        except InvalidVersion:
            continue
    raise ValueError(f"wheels_for: no version to build for {requirement}")


def wheels_for(out_dir: Path, requirements: list[str]) -> list[Path]:
    """Every wheel that `pip install *requirements` needs from an index holding only these, for pins as
    gpudoctor's plans write them ("torch==2.5.1+cu124", "torchvision==0.20.1+cu124", "numpy<2", ...):
    torch +cuXYZ is a CUDA build (torch_wheel), +cpu or untagged a CPU build; torchvision and torchaudio
    require exactly the torch pinned beside them (the tagged one for a CUDA build; a torch of their own
    release when none is pinned, which is built too); their dependencies (filelock, nvidia-*) are stub wheels
    of the pinned versions; anything else is a stub wheel of its version. Returns the wheels' paths."""
    reqs = [Requirement(r) for r in requirements]
    canon = {re.sub(r"[-_.]+", "-", r.name).lower(): r for r in reqs}
    torch_pin = _version_for(canon["torch"]) if "torch" in canon else None
    built: dict[str, Path] = {}

    def torch(version: str) -> None:
        if f"torch {version}" in built:
            return
        local = Version(version).local or ""
        cuda = cuda_of_tag(local)
        built[f"torch {version}"] = torch_wheel(out_dir, version, cuda)
        for dep in torch_requires(cuda):
            stub(Requirement(dep))

    def stub(req: Requirement) -> None:
        version = _version_for(req)
        if f"{req.name} {version}" not in built:
            built[f"{req.name} {version}"] = dist_info_only(out_dir, req.name, version)

    for name, req in canon.items():
        version = _version_for(req)
        if name == "torch":
            torch(version)
        elif name in ("torchvision", "torchaudio"):
            parsed = Version(version)
            wanted = torch_pin
            if wanted is None:
                wanted = _torch_of_companion(name, parsed) + (f"+{parsed.local}" if parsed.local else "")
                torch(wanted)
            files = {f"{name}/__init__.py": f"__version__ = {version!r}\n"}
            built[f"{name} {version}"] = build_wheel(out_dir, name, version, files, (f"torch=={wanted}",))
        else:
            stub(req)
    return list(built.values())


def broken_wheel(out_dir: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> Path:
    """A wheel that resolves and downloads like any other but fails to install, so that an install of several
    packages stops half-way. Its first member, ../../../outside.txt, would land outside site-packages: pip
    refuses it before writing any file of this wheel, after installing the packages it put first (those
    this one `requires`, dependencies first). uv drops that member silently, and fails instead on the last,
    a .data directory of no known scheme, having laid down this wheel's other files and whichever packages
    its parallel installs finished first (tests/rig/test_pkgindex.py shows both)."""
    module = name.replace("-", "_")
    files = {
        "../../../outside.txt": "written outside the environment\n",
        f"{module}/__init__.py": "",
        f"{module}-{version}.data/no-such-scheme/broken.txt": "no installer knows where this goes\n",
    }
    return build_wheel(out_dir, name, version, files, requires)


def make_venv(python: str, where: Path) -> Path:
    """A virtual environment of `python`, without pip (gpudoctor's pip installs into it); its bin/python."""
    subprocess.run([python, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120)
    return where / "bin" / "python"


def pip_venv_template(python: str, where: Path) -> Path:
    """A real virtual environment of `python` with the pip its ensurepip bundles (seconds to make: once a
    session, then clone_venv per test); returns its root."""
    subprocess.run([python, "-m", "venv", str(where)], check=True, timeout=180, capture_output=True)
    return where


def clone_venv(template_root: Path, dest: Path) -> Path:
    """A copy of a venv made by pip_venv_template, working as its own environment (a fraction of a second);
    its bin/python. The interpreter finds its prefix from the pyvenv.cfg beside its bin/, so the copy is its
    own sys.prefix and `python -m pip` installs into it; the scripts in bin/ (pip's shebang, activate's
    VIRTUAL_ENV) name the template's path and are rewritten to the copy's."""
    shutil.copytree(template_root, dest, symlinks=True)
    old, new = str(template_root), str(dest)
    for path in [*(dest / "bin").iterdir(), dest / "pyvenv.cfg"]:
        if path.is_symlink() or not path.is_file():
            continue
        data = path.read_bytes()
        if old.encode() in data:
            path.write_bytes(data.replace(old.encode(), new.encode()))
    return dest / "bin" / "python"


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


def tree_hash(python: Path) -> str:
    """Every entry of the environment's site-packages: relative path, kind, permission bits, and the bytes
    of a file or the target of a link. Nothing is left out, `__pycache__` included."""
    root = site_packages(python)
    digest = hashlib.sha256()
    for top, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(dirs + files):
            path = os.path.join(top, name)
            st = os.lstat(path)
            rel = os.path.relpath(path, root)
            if stat.S_ISLNK(st.st_mode):
                entry = f"l {rel} -> {os.readlink(path)}"
            elif stat.S_ISDIR(st.st_mode):
                entry = f"d {rel}"
            else:
                content = hashlib.sha256(Path(path).read_bytes()).hexdigest()
                entry = f"f {rel} {st.st_mode & 0o777:o} {content}"
            digest.update(entry.encode("utf-8", "surrogateescape") + b"\n")
    return digest.hexdigest()
