"""Which torchvision and torchaudio go with each torch patch release, and where its wheels exist.

    python3 -m venv /tmp/pipv && /tmp/pipv/bin/pip install -U pip          (once: pip 23 or newer)
    python tools/check_torch_companions.py --pip /tmp/pipv/bin/pip          rewrite the table
    python tools/check_torch_companions.py --pip /tmp/pipv/bin/pip --check  exit 1 when the table is stale

It writes (or, with --check, compares against) rules/knowledge/torch_companions.yaml: one row per torch
release from 2.0.0 on that the package index lists, with

- `torchvision`, `torchaudio`: the release whose published metadata (its `Requires-Dist` on torch) pins
  exactly that torch (`torch==2.0.1`); the newest one when several do. Where none does, the newest release
  whose requirement admits that torch with a lower bound in the same minor (`torch>=2.14.0` for 2.14.1)
  is taken, and `*_requires` shows it; otherwise null.
- `platforms`: the Linux wheels of torch on the index, as PEP 600 tags (`manylinux_2_28_aarch64`: glibc
  2.28 or newer on aarch64); `cuda_x86_64`/`cuda_aarch64`: the CUDA release of the NVIDIA runtime wheel
  that torch's metadata requires on that machine (null: it requires none there).
- `torchvision_platforms`, `torchaudio_platforms`: the same for the chosen companions.

How: `pip index versions` lists the releases (for each Python in PYTHONS and each machine); pip's
metadata-only resolution reads each wheel's metadata: `pip install --dry-run --ignore-installed --no-deps
--target DIR --report OUT.json --only-binary :all: --platform TAG --python-version X.Y NAME==VERSION`
(the report's install[0].metadata.requires_dist holds the pins). Python versions are tried in a fixed
order (3.11 first) until one has a wheel. Where the index serves no separate metadata file, pip downloads
each wheel whole (to a temporary directory, no cache): a full run reads every torch wheel once per
machine, tens of GB, in about 5 minutes from a nearby mirror. `--dump FILE` also saves what was queried
(file names and metadata, no URLs); `--load FILE` renders from such a file without querying.

Only the configured default package index is read (its `index-url`, from pip's configuration or
--index-url): pip runs with no configuration files and without find-links, extra indexes or constraints,
so wheels on local paths or caps set for this machine are not taken for the index's. PyTorch's own wheel
indexes (download.pytorch.org/whl/cuXXX) are NOT queried: they were not reachable where this script was
written. What is known only for them (the CUDA variants, their local `+cuXXX` tags, torchvision's aarch64
wheels there carrying no local tag) stays out of the generated table; torch.yaml holds the variants with
their own sources.

Standard library and `packaging` only; not part of the installed package; never run by the tests (they
test the functions below on reports captured into tests/fixtures/pip_reports, and the pip command lines
against a stand-in pip).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional
from urllib.parse import unquote

from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "rules" / "knowledge" / "torch_companions.yaml"
SCRIPT = "tools/check_torch_companions.py"
FIRST = Version("2.0.0")
COMPANIONS = ("torchvision", "torchaudio")
MACHINES = ("x86_64", "aarch64")
# --platform values per machine, newest first: pip expands manylinux2014 to manylinux2010 and manylinux1,
# but not manylinux_2_28 to older tags, so both are named.
PLATFORM_ARGS: Mapping[str, tuple[str, ...]] = {
    "x86_64": ("manylinux_2_28_x86_64", "manylinux2014_x86_64"),
    "aarch64": ("manylinux_2_28_aarch64", "manylinux2014_aarch64"),
}
# Tried in this order until one has a wheel: every torch release from 2.0 on has 3.11 wheels so far.
PYTHONS = ("3.11", "3.12", "3.10", "3.13", "3.9", "3.14", "3.8")
GITHUB = {"torch": "pytorch/pytorch", "torchvision": "pytorch/vision", "torchaudio": "pytorch/audio"}
LEGACY_MANYLINUX = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}
CUDA_RUNTIME = re.compile(r"^nvidia-cuda-runtime(-cu\d+)?$")
# Environment variables that would add wheels or caps from this machine rather than the index.
PIP_ENV_DROPPED = (
    "PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_CONSTRAINT", "PIP_NO_INDEX", "PIP_REQUIREMENT", "PIP_PRE",
    "PIP_TARGET", "PIP_PREFIX", "PIP_USER", "PIP_REPORT",
)  # fmt: skip
LIST_TIMEOUT_S = 180
QUERY_TIMEOUT_S = 900  # a torch wheel is downloaded whole when the index serves no separate metadata


# ---------------------------------------------------------------------------------------------------------
# Pure parts: parsing pip's output and reports, choosing pins, rendering the table (tested offline).


@dataclass(frozen=True)
class Wheel:
    """What one dry-run report says about the wheel pip would install."""

    name: str
    version: str
    filename: str
    requires_dist: tuple[str, ...]
    platform: Optional[str]  # PEP 600 tag of its Linux platform, e.g. manylinux_2_28_aarch64


def parse_index_versions(output: str) -> list[Version]:
    """The public releases in `pip index versions NAME` output, oldest first (no pre-releases, no local
    `+cpu` builds, which only a find-links directory could hold)."""
    m = re.search(r"^Available versions:\s*(.+)$", output, re.MULTILINE)
    if not m:
        return []
    out = set()
    for raw in m.group(1).split(","):
        try:
            v = Version(raw.strip())
        except InvalidVersion:
            continue
        if not v.is_prerelease and not v.is_devrelease and v.local is None:
            out.add(v)
    return sorted(out)


def parse_report(report: Mapping[str, Any]) -> Wheel:
    """The wheel of a `pip install --dry-run --report` run for one requirement."""
    install = report.get("install") or []
    if len(install) != 1:
        raise ValueError(f"expected one package in the report, found {len(install)}")
    item = install[0]
    meta = item.get("metadata") or {}
    url = (item.get("download_info") or {}).get("url") or ""
    filename = unquote(url.rsplit("/", 1)[-1].split("#", 1)[0].split("?", 1)[0])
    return Wheel(
        name=str(meta.get("name", "")).lower(),
        version=str(meta.get("version", "")),
        filename=filename,
        requires_dist=tuple(meta.get("requires_dist") or ()),
        platform=wheel_platform(filename),
    )


def wheel_platform(filename: str) -> Optional[str]:
    """The oldest-glibc manylinux tag of a wheel file name, in PEP 600 form ("manylinux1_x86_64" ->
    "manylinux_2_5_x86_64"); None when the wheel has no manylinux tag."""
    try:
        _name, _version, _build, tags = parse_wheel_filename(filename)
    except InvalidWheelFilename:
        return None
    found: list[tuple[tuple[int, int], str]] = []
    for tag in tags:
        m = re.fullmatch(r"manylinux_(\d+)_(\d+)_(\w+)", tag.platform)
        if m:
            found.append(((int(m.group(1)), int(m.group(2))), m.group(3)))
            continue
        legacy, _, arch = tag.platform.partition("_")
        if legacy in LEGACY_MANYLINUX and arch:
            found.append((LEGACY_MANYLINUX[legacy], arch))
    if not found:
        return None
    (major, minor), arch = min(found)
    return f"manylinux_{major}_{minor}_{arch}"


def _environment(machine: str, python: str = "3.11") -> dict[str, str]:
    return {"sys_platform": "linux", "platform_system": "Linux", "os_name": "posix",
            "platform_machine": machine, "python_version": python, "python_full_version": f"{python}.0",
            "implementation_name": "cpython", "platform_python_implementation": "CPython",
            "extra": ""}  # fmt: skip


def _applies(req: Requirement, machine: str) -> bool:
    return req.marker is None or Marker(str(req.marker)).evaluate(_environment(machine))


def torch_requirement(requires_dist: Iterable[str], machine: str = "x86_64") -> Optional[Requirement]:
    """The requirement on torch among a wheel's Requires-Dist (applying on Linux `machine`), or None."""
    for raw in requires_dist:
        try:
            req = Requirement(raw)
        except InvalidRequirement:
            continue
        if req.name.lower() == "torch" and _applies(req, machine):
            return req
    return None


def requirement_text(req: Requirement) -> str:
    """`torch (==2.0.1)` and `torch ==2.4.0` both as `torch==2.0.1`; several specifiers sorted."""
    return "torch" + ",".join(sorted(str(s) for s in req.specifier))


def exact_pin(req: Optional[Requirement]) -> Optional[Version]:
    """The version a requirement pins exactly (`torch==2.0.1`), or None."""
    specs = list(req.specifier) if req else []
    if len(specs) == 1 and specs[0].operator in ("==", "===") and "*" not in specs[0].version:
        try:
            return Version(specs[0].version)
        except InvalidVersion:
            return None
    return None


def lower_bound(req: Optional[Requirement]) -> Optional[Version]:
    bounds = []
    for spec in req.specifier if req else ():
        if spec.operator in (">=", "~=", "==", "===") and "*" not in spec.version:
            try:
                bounds.append(Version(spec.version))
            except InvalidVersion:
                continue
    return max(bounds) if bounds else None


@dataclass(frozen=True)
class Choice:
    version: str
    requires: str  # the requirement on torch as published, normalised: "torch==2.0.1"
    exact: bool


def choose_companion(torch: Version, candidates: Mapping[Version, Optional[Requirement]]) -> Optional[Choice]:
    """The companion release for `torch`: the newest whose requirement pins exactly it; else the newest
    whose requirement admits it with a lower bound in the same minor (`torch>=2.14.0` for 2.14.1: a
    stable-ABI build for that series); else None. A release with no requirement on torch is never chosen."""
    exact = [v for v, req in candidates.items() if exact_pin(req) == torch]
    if exact:
        v = max(exact)
        return Choice(str(v), requirement_text(candidates[v]), True)  # type: ignore[arg-type]
    loose = []
    for v, req in candidates.items():
        low = lower_bound(req)
        if req is not None and low is not None and req.specifier.contains(torch, prereleases=False):
            if low.release[:2] == torch.release[:2]:
                loose.append(v)
    if loose:
        v = max(loose)
        return Choice(str(v), requirement_text(candidates[v]), False)  # type: ignore[arg-type]
    return None


def cuda_runtime_requirement(requires_dist: Iterable[str], machine: str) -> Optional[Requirement]:
    """The requirement on NVIDIA's CUDA runtime wheel that applies on Linux `machine`: up to 2.10
    `nvidia-cuda-runtime-cu12==12.8.90; platform_machine == "x86_64"`, from 2.11 on
    `cuda-toolkit[cublas,cudart,...]==13.0.2; platform_system == "Linux"`. None when there is none."""
    for raw in requires_dist:
        try:
            req = Requirement(raw)
        except InvalidRequirement:
            continue
        name = req.name.lower()
        runtime = CUDA_RUNTIME.match(name) or (name == "cuda-toolkit" and "cudart" in req.extras)
        if runtime and _applies(req, machine):
            return req
    return None


def cuda_runtime(requires_dist: Iterable[str], machine: str) -> Optional[str]:
    """The CUDA release ("12.8") of the CUDA runtime wheel a torch wheel requires on `machine`, or None
    when it requires none (the wheel is then a CPU build, or carries CUDA itself)."""
    req = cuda_runtime_requirement(requires_dist, machine)
    pinned = exact_pin(req) or lower_bound(req)
    if pinned is None or len(pinned.release) < 2:
        return None
    return f"{pinned.release[0]}.{pinned.release[1]}"


@dataclass
class Release:
    """One package release as queried: its wheel per machine (None: no wheel for that machine)."""

    name: str
    version: Version
    wheels: dict[str, Optional[Wheel]] = field(default_factory=dict)

    @property
    def metadata(self) -> Optional[Wheel]:
        return next((w for w in (self.wheels.get(m) for m in MACHINES) if w is not None), None)

    @property
    def platforms(self) -> list[str]:
        return [w.platform for m in MACHINES if (w := self.wheels.get(m)) is not None and w.platform]


@dataclass(frozen=True)
class Row:
    torch: Release
    companions: Mapping[str, Optional[tuple[Choice, Release]]]
    note: Optional[str]


def build_rows(torches: Sequence[Release], companions: Mapping[str, Sequence[Release]]) -> list[Row]:
    """One row per torch release with a wheel, its companions chosen from their releases' metadata."""
    rows = []
    for t in sorted(torches, key=lambda r: r.version):
        if t.metadata is None:
            continue
        picked: dict[str, Optional[tuple[Choice, Release]]] = {}
        notes = []
        for name in COMPANIONS:
            releases = {r.version: r for r in companions.get(name, ()) if r.metadata is not None}
            reqs = {v: torch_requirement(r.metadata.requires_dist) for v, r in releases.items()}  # type: ignore[union-attr]
            choice = choose_companion(t.version, reqs)
            picked[name] = (choice, releases[Version(choice.version)]) if choice else None
            if choice and not choice.exact:
                notes.append(f"no {name} release pins torch=={t.version}; {name} {choice.version} requires "
                             f"{choice.requires}")  # fmt: skip
            elif not choice:
                notes.append(f"no {name} release on the index requires torch {t.version}")
        rows.append(Row(t, picked, "; ".join(notes) or None))
    return rows


def _q(value: Optional[str]) -> str:
    return "null" if value is None else json.dumps(value)


def _folded(text: str, indent: int, width: int = 108) -> list[str]:
    """A `>-` folded block, wrapped at spaces."""
    pad = " " * indent
    lines, line = [], ""
    for word in text.split():
        if line and len(pad) + len(line) + 1 + len(word) > width:
            lines.append(pad + line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    lines.append(pad + line)
    return lines


def _plain(req: Requirement) -> str:
    """A requirement without its marker: `cuda-toolkit[cublas,cudart]==13.0.2`."""
    extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
    return f"{req.name}{extras}{req.specifier}"


def _source_id(release: Release) -> str:
    return f"{release.name}-{release.version}"


def _release_url(release: Release) -> str:
    return f"https://github.com/{GITHUB[release.name]}/releases/tag/v{release.version}"


def _source_read(release: Release, torch_query: bool) -> str:
    parts = []
    meta = release.metadata
    if meta is not None and not torch_query:
        req = torch_requirement(meta.requires_dist)
        parts.append(f"Requires-Dist on torch: {requirement_text(req) if req else 'none'}.")
    for machine in MACHINES:
        wheel = release.wheels.get(machine)
        if wheel is None:
            parts.append(f"{machine}: no wheel.")
            continue
        text = f"{machine}: {wheel.filename}"
        if torch_query:
            runtime = cuda_runtime_requirement(wheel.requires_dist, machine)
            text += f" (requires {_plain(runtime)})" if runtime else " (no CUDA runtime wheel)"
        parts.append(text + ".")
    return " ".join(parts)


def without_torch_requirement(found: Mapping[str, Sequence[Release]]) -> list[str]:
    """Companion releases whose metadata states no requirement on torch at all ("torchaudio 2.11.0"):
    never chosen, named in the table's header."""
    out = []
    for name in COMPANIONS:
        for release in sorted(found.get(name, ()), key=lambda r: r.version):
            meta = release.metadata
            if meta is not None and torch_requirement(meta.requires_dist) is None:
                out.append(f"{name} {release.version}")
    return out


def render(rows: Sequence[Row], checked: datetime.date, unpinned: Sequence[str] = ()) -> str:
    """The table file: header, sources (one per release cited), rows. `unpinned`: the companion releases
    that state no requirement on torch."""
    cited: dict[str, tuple[Release, bool]] = {}
    for row in rows:
        cited[_source_id(row.torch)] = (row.torch, True)
        for name in COMPANIONS:
            chosen = row.companions.get(name)
            if chosen:
                cited[_source_id(chosen[1])] = (chosen[1], False)
    out = [
        "# torch patch releases -> the torchvision and torchaudio releases whose published metadata",
        "# (Requires-Dist) requires exactly that torch, and the Linux wheels the default package index has.",
        f"# Generated by {SCRIPT} from the default package index only (PyTorch's cuXXX indexes",
        "# were not queried); do not edit by hand: run the script again (docs/knowledge.md says how).",
        "# `platforms`: PEP 600 tags (glibc floor and machine); cuda_<machine>: the CUDA release of the",
        "# NVIDIA runtime wheel torch's metadata requires on that machine (null: it requires none).",
    ]
    if unpinned:
        out.append(
            f"# Releases whose metadata states no requirement on torch (never chosen): {', '.join(unpinned)}"
        )
    out += ["table: torch_companions", f"checked: {checked.isoformat()}", "sources:"]
    for sid, (release, is_torch) in sorted(cited.items(), key=lambda kv: (kv[1][0].name, kv[1][0].version)):
        what = "wheels and CUDA runtime requirement" if is_torch else "Requires-Dist and wheels"
        out += [
            f"  {sid}:",
            f'    title: "package index metadata: {what} of {release.name} {release.version} (queried by '
            f'{SCRIPT} on {checked.isoformat()})"',
            f"    url: {_release_url(release)}",
            "    read: >-",
            *_folded(_source_read(release, is_torch), 6),
        ]
    out.append("rows:")
    for row in rows:
        t = row.torch
        out.append(f"  - torch: {_q(str(t.version))}")
        for name in COMPANIONS:
            chosen = row.companions.get(name)
            out.append(f"    {name}: {_q(chosen[0].version if chosen else None)}")
            out.append(f"    {name}_requires: {_q(chosen[0].requires if chosen else None)}")
        out.append(f"    platforms: [{', '.join(t.platforms)}]")
        for machine in MACHINES:
            wheel = t.wheels.get(machine)
            cuda = cuda_runtime(wheel.requires_dist, machine) if wheel else None
            out.append(f"    cuda_{machine}: {_q(cuda)}")
        for name in COMPANIONS:
            chosen = row.companions.get(name)
            platforms = f"[{', '.join(chosen[1].platforms)}]" if chosen else "null"
            out.append(f"    {name}_platforms: {platforms}")
        out.append(f"    source: {_source_id(t)}")
        also = [_source_id(c[1]) for c in (row.companions.get(n) for n in COMPANIONS) if c]
        if also:
            out.append(f"    also: [{', '.join(also)}]")
        out.append("    verified: true")
        if row.note:
            out.append("    note: >-")
            out += _folded(row.note, 6)
    return "\n".join(out) + "\n"


def checked_date(text: str) -> Optional[datetime.date]:
    m = re.search(r"^checked: (\d{4}-\d{2}-\d{2})\s*$", text, re.MULTILINE)
    return datetime.date.fromisoformat(m.group(1)) if m else None


def stale_lines(current: str, fresh: str) -> list[str]:
    """The lines that differ, as a short unified diff (empty when the table is up to date)."""
    import difflib

    return list(difflib.unified_diff(current.splitlines(), fresh.splitlines(), "table", "index", lineterm=""))


# ---------------------------------------------------------------------------------------------------------
# The queries (network, through pip).


class Pip:
    def __init__(self, pip: Sequence[str], index_url: Optional[str], verbose: bool) -> None:
        self.pip = list(pip)
        self.verbose = verbose
        self.env = {k: v for k, v in os.environ.items() if k not in PIP_ENV_DROPPED}
        self.index_url = index_url or self._configured_index_url()
        self.env["PIP_CONFIG_FILE"] = os.devnull  # no configuration file: no find-links, extras, constraints
        self.env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
        self.index_args = ["--index-url", self.index_url] if self.index_url else []

    def _configured_index_url(self) -> Optional[str]:
        if os.environ.get("PIP_INDEX_URL"):
            return os.environ["PIP_INDEX_URL"]
        out = self._run([*self.pip, "config", "list"], LIST_TIMEOUT_S, env=dict(os.environ)).stdout
        found = dict(re.findall(r"^(\w+)\.index-url='([^']*)'$", out, re.MULTILINE))
        return found.get("install") or found.get("global")

    def _run(self, argv: list[str], timeout: float, env: Optional[dict] = None) -> Any:
        """One pip command, always with a timeout and never through a shell."""
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env or self.env,
                              check=False)  # fmt: skip

    def version(self) -> Version:
        out = self._run([*self.pip, "--version"], LIST_TIMEOUT_S).stdout
        m = re.match(r"pip (\S+)", out)
        return Version(m.group(1)) if m else Version("0")

    def versions(self, name: str) -> list[Version]:
        """Every public release of `name` with a file for some Python of PYTHONS on some machine (pip lists
        only what the interpreter and platform it is told about could install)."""
        found: set[Version] = set()
        for machine in MACHINES:
            for python in PYTHONS:
                argv = [*self.pip, "index", "versions", name, *self.index_args, "--python-version", python]
                for tag in PLATFORM_ARGS[machine]:
                    argv += ["--platform", tag]
                proc = self._run(argv, LIST_TIMEOUT_S)
                if proc.returncode != 0 and "No matching distribution" not in proc.stderr:
                    raise RuntimeError(f"pip index versions {name} failed: {proc.stderr.strip()[-500:]}")
                found.update(parse_index_versions(proc.stdout))
        return sorted(found)

    def wheel(self, name: str, version: Version, machine: str, python: str) -> Optional[Wheel]:
        """The wheel pip would install for NAME==VERSION on manylinux `machine` under `python`, or None."""
        with tempfile.TemporaryDirectory(prefix="companions-") as tmp:
            report = Path(tmp) / "report.json"
            argv = [*self.pip, "install", "--dry-run", "--ignore-installed", "--no-deps", "--no-cache-dir",
                    "--quiet", "--target", str(Path(tmp) / "target"), "--report", str(report),
                    "--only-binary", ":all:", *self.index_args, "--python-version", python]  # fmt: skip
            for tag in PLATFORM_ARGS[machine]:
                argv += ["--platform", tag]
            argv.append(f"{name}=={version}")
            proc = self._run(argv, QUERY_TIMEOUT_S)
            if proc.returncode != 0 or not report.exists():
                if "No matching distribution" not in proc.stderr and "conflict" not in proc.stderr.lower():
                    raise RuntimeError(f"pip failed for {name}=={version} ({machine}, {python}): "
                                       f"{proc.stderr.strip()[-500:]}")  # fmt: skip
                return None
            wheel = parse_report(json.loads(report.read_text(encoding="utf-8")))
        if self.verbose:
            print(f"  {name} {version} {machine} py{python}: {wheel.filename}", file=sys.stderr)
        return wheel

    def release(self, name: str, version: Version, pythons: Sequence[str]) -> Release:
        """A release's wheel per machine, trying the Python versions in order."""
        release = Release(name, version)
        for machine in MACHINES:
            release.wheels[machine] = next(
                (w for py in pythons if (w := self.wheel(name, version, machine, py)) is not None), None
            )
        return release


def query(pip: Pip, first: Version = FIRST) -> dict[str, list[Release]]:
    """Every torch release from `first` on, and every torchvision and torchaudio release, as queried."""
    torches = [v for v in pip.versions("torch") if v >= first]
    if not torches:
        raise RuntimeError("the index lists no torch release from 2.0.0 on")
    found = {"torch": [pip.release("torch", v, PYTHONS) for v in torches]}
    for name in COMPANIONS:
        found[name] = [pip.release(name, v, PYTHONS) for v in pip.versions(name)]
    return found


def dump(found: Mapping[str, Sequence[Release]]) -> str:
    """The queried releases as JSON (file names and metadata only, no index URLs), for --load."""
    return json.dumps(
        {name: [{"version": str(r.version),
                 "wheels": {m: asdict(w) if w else None
                            for m, w in r.wheels.items()}} for r in releases]
         for name, releases in found.items()},
        indent=1,
    )  # fmt: skip


def load(text: str) -> dict[str, list[Release]]:
    data = json.loads(text)
    out: dict[str, list[Release]] = {}
    for name, releases in data.items():
        out[name] = []
        for raw in releases:
            wheels = {m: Wheel(**{**w, "requires_dist": tuple(w["requires_dist"])}) if w else None
                      for m, w in raw["wheels"].items()}  # fmt: skip
            out[name].append(Release(name, Version(raw["version"]), wheels))
    return out


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with the table; exit 1 when stale")
    parser.add_argument("--pip", default=f"{sys.executable} -m pip", help="the pip to run (23.0 or newer)")
    parser.add_argument("--index-url", default=None, help="the index to read (default: pip's configured one)")
    parser.add_argument("--table", type=Path, default=TABLE)
    parser.add_argument("--dump", type=Path, help="also write what was queried, as JSON, to this file")
    parser.add_argument("--load", type=Path, help="render from a --dump file instead of querying the index")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    if args.load:
        found = load(args.load.read_text(encoding="utf-8"))
    else:
        pip = Pip(shlex.split(args.pip), args.index_url, args.verbose)
        if pip.version() < Version("23.0"):
            print(
                "pip 23.0 or newer is needed (--report with --dry-run): python3 -m venv /tmp/pipv "
                "&& /tmp/pipv/bin/pip install -U pip, then --pip /tmp/pipv/bin/pip",
                file=sys.stderr,
            )
            return 2
        found = query(pip)
    if args.dump:
        args.dump.write_text(dump(found) + "\n", encoding="utf-8")
    rows = build_rows(found["torch"], found)
    current = args.table.read_text(encoding="utf-8") if args.table.exists() else ""
    if args.check:
        fresh = render(rows, checked_date(current) or datetime.date.today(), without_torch_requirement(found))
        diff = stale_lines(current, fresh)
        if diff:
            print(f"{args.table.name} is stale: run {SCRIPT} without --check", file=sys.stderr)
            print("\n".join(diff[:80]), file=sys.stderr)
            return 1
        print(f"{args.table.name} is up to date ({len(rows)} torch releases)")
        return 0
    fresh = render(rows, datetime.date.today(), without_torch_requirement(found))
    args.table.write_text(fresh, encoding="utf-8")
    print(f"wrote {args.table} ({len(rows)} torch releases)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
