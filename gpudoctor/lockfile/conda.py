"""conda's environment.yml and conda-lock.yml.

environment.yml lists match specs: `name=version=build` (what `conda env export` writes), `channel::name=
version`, ranges (not pins: skipped), and a `pip:` sub-list read as requirement lines (its --index-url and
--extra-index-url included). conda-lock.yml lists every package per platform with its manager (conda or
pip) and the URL it comes from; the build string is in the URL's file name.

conda's `pytorch` is the distribution the probes know as `torch`; its build says which variant it is, and
the version is given the local tag a wheel of that variant has. As the real files show it:
- conda-forge's builds name the CUDA they were built with in three digits, `cuda120_py311h2667f23_304` is
  CUDA 12.0, and its CPU builds start `cpu_` (`cpu_generic_py311hc35e6e7_4`) (Clay-foundation/model's
  conda-lock.yml, tests/lockfile/data/SOURCES.md);
- the pytorch channel's name CUDA and cuDNN, `py3.10_cuda12.1_cudnn8.9.2_0` is CUDA 12.1
  (PeterH0323/Streamer-Sales's environment.yml, a `conda env export`), and its CPU builds `py3.8_cpu_0`
  (an environment recipe quoted in a README, SOURCES.md);
- without a build, `pytorch-cuda=11.7.0` (the pytorch channel's meta-package) says CUDA 11.7
  (facebookresearch/dinov2's conda.yaml), and `cpuonly` a CPU build.
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Optional

from ..variants import cuda_variant
from . import requirements
from .model import Lock, LockError, Pin, finish, normalise
from .target import Target

ENVIRONMENT = "environment.yml"
CONDA_LOCK = "conda-lock.yml"
# os.uname().machine on the target -> conda's platform name, for Linux, macOS and Windows.
SUBDIRS = {
    ("linux", "x86_64"): "linux-64",
    ("linux", "aarch64"): "linux-aarch64",
    ("linux", "ppc64le"): "linux-ppc64le",
    ("darwin", "x86_64"): "osx-64",
    ("darwin", "arm64"): "osx-arm64",
    ("darwin", "aarch64"): "osx-arm64",
    ("win32", "x86_64"): "win-64",
    ("win32", "amd64"): "win-64",
}


def load_yaml(text: str, what: str):
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as e:
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise LockError(f"{what} is not valid YAML: {problem}") from None
    except RecursionError:
        raise LockError(f"{what} nests too deeply") from None


def torch_variant(build: str, pins: dict) -> str:
    """The local tag of conda's pytorch: from its build string, else the pytorch-cuda or cpuonly
    packages beside it; "" when nothing says."""
    m = re.search(r"cuda(\d+)\.(\d+)", build)  # pytorch channel: py3.10_cuda12.1_cudnn8.9.2_0
    if m:
        return cuda_variant(f"{m.group(1)}.{m.group(2)}") or ""
    m = re.search(r"cuda(\d\d)(\d)(?!\d)", build)  # conda-forge: cuda120_py311h..., cuda118_...
    if m:
        return cuda_variant(f"{m.group(1)}.{m.group(2)}") or ""
    if re.search(r"(^|_)cpu(_|$)", build) or build.startswith("cpu"):
        return "cpu"
    if build:
        return ""
    cuda = pins.get("pytorch-cuda", "")
    m = re.match(r"(\d+)\.(\d+)", cuda)
    if m:
        return cuda_variant(m.group(0)) or ""
    return "cpu" if "cpuonly" in pins else ""


def _conda_pin(name: str, version: str, build: str, channel: str, pins: dict, deps: list) -> Pin:
    if name == "pytorch":
        tag = torch_variant(build, pins)
        return Pin("torch", f"{version}+{tag}" if tag and "+" not in version else version, channel, deps)
    return Pin(name, version, channel, deps)


def match_spec(spec: str) -> Optional[tuple]:
    """(channel, name, version, build) of an exact match spec ("pytorch::pytorch=2.0.0",
    "pytorch=2.1.2=py3.10_cuda12.1_cudnn8.9.2_0", "numpy==1.26.4", "python 3.11.7 h955ad1f_1"); None for a
    range, a glob or a bare name."""
    channel, _, rest = spec.strip().rpartition("::")
    rest = rest.split("#", 1)[0].strip()
    m = re.fullmatch(r"([A-Za-z0-9_.\-]+)\s*(==?|\s)\s*([^=<>!~*\s,|]+)(?:(?:=|\s+)([^=<>!~*\s,|]+))?", rest)
    if not m:
        return None
    return channel, m.group(1), m.group(3), m.group(4) or ""


def parse_environment(text: str, path: str, t: Target) -> Lock:
    data = load_yaml(text, path)
    if not isinstance(data, dict) or not isinstance(data.get("dependencies"), list):
        raise LockError(f"{path}: not a conda environment file (no dependencies list)")
    channels = [c for c in data.get("channels") or [] if isinstance(c, str)]
    first_channel = next((c for c in channels if c != "nodefaults"), "")
    skipped: list = []
    exact = []
    pip_lines: list = []
    for entry in data["dependencies"]:
        if isinstance(entry, dict) and isinstance(entry.get("pip"), list):
            pip_lines += [str(line) for line in entry["pip"]]
            continue
        if not isinstance(entry, str):
            skipped.append(f"{entry!r}: not a match spec")
            continue
        read = match_spec(entry)
        if read is None:
            skipped.append(f"{entry}: not pinned to one version")
            continue
        exact.append(read)
    versions = {normalise(name): version for _, name, version, _ in exact}
    python = versions.pop("python", "")
    pins = [
        _conda_pin(normalise(name), version, build, channel or first_channel, versions, [])
        for channel, name, version, build in exact
        if normalise(name) != "python"
    ]
    if pip_lines:
        pip = requirements.parse("\n".join(pip_lines), f"{path} pip:", t)
        pins += pip.pins
        skipped += [f"pip: {line}" for line in pip.skipped]
    return finish(path, ENVIRONMENT, f"=={python}" if python else "", pins, skipped, wheels=False)


def _from_url(url: str) -> tuple:
    """(channel URL, build string) of a conda package URL: .../conda-forge/linux-64/NAME-VER-BUILD.conda."""
    directory, _, filename = url.rpartition("/")
    stem = re.sub(r"\.(conda|tar\.bz2)$", "", urllib.parse.unquote(filename))
    build = stem.rsplit("-", 2)[-1] if stem.count("-") >= 2 else ""
    channel = directory.rsplit("/", 1)[0] if directory else ""
    return channel, build


def parse_conda_lock(text: str, path: str, t: Target) -> Lock:
    data = load_yaml(text, path)
    if not isinstance(data, dict) or not isinstance(data.get("package"), list):
        raise LockError(f"{path}: not a conda-lock file (no package list)")
    if data.get("version") not in (1, "1"):
        raise LockError(f"{path}: conda-lock version {data.get('version')!r} (gpudoctor reads version 1)")
    subdir = SUBDIRS.get((t.platform, t.machine.lower()), "")
    if not subdir:
        raise LockError(f"no conda platform for {t.platform} {t.machine}")
    skipped: list = []
    mine = []
    for number, pkg in enumerate(data["package"], 1):
        if not isinstance(pkg, dict) or not pkg.get("name") or not pkg.get("version"):
            skipped.append(f"package {number}: no name or version")
            continue
        if pkg.get("platform") != subdir:
            skipped.append(f"{pkg['name']} {pkg['version']}: for {pkg.get('platform')}, not {subdir}")
            continue
        mine.append(pkg)
    versions = {normalise(p["name"]): str(p["version"]) for p in mine if p.get("manager") != "pip"}
    python = versions.pop("python", "")
    pins = []
    for pkg in mine:
        name, version, url = normalise(pkg["name"]), str(pkg["version"]), str(pkg.get("url") or "")
        if name == "python" and pkg.get("manager") != "pip":
            continue
        deps = pkg.get("dependencies") if isinstance(pkg.get("dependencies"), dict) else {}
        requires = sorted(
            f"{normalise(d)}=={versions[normalise(d)]}" for d in deps if normalise(d) in versions
        )
        if pkg.get("manager") == "pip":
            index = url.rsplit("/", 1)[0]
            pins.append(Pin(name, version, index, requires))
            continue
        channel, build = _from_url(url)
        pins.append(_conda_pin(name, version, build, channel, versions, requires))
    return finish(path, CONDA_LOCK, f"=={python}" if python else "", pins, skipped, wheels=False)
