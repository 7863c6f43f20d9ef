"""The Python environments of an image, each described as pyinspect.inspect() describes a live one.

No interpreter runs: the layout says what one would answer. An environment is a prefix P with
P/lib/pythonX.Y/site-packages (or Debian's dist-packages); its sys.path is the one CPython builds for that
prefix (the standard library entries, then the site directories that exist, Debian's order for /usr), a
virtual environment's from its pyvenv.cfg (`home`, `version`, `include-system-site-packages`). The
distributions are read by pyinspect's own _describe, through a reader over the files the layers held.
"""

from __future__ import annotations

import posixpath
import re
from typing import Optional

from gpudoctor.envs.layout import DEBIAN_SHARED
from gpudoctor.envs.sources import pyvenv_cfg
from gpudoctor.host import pyinspect
from gpudoctor.image.tree import DIR, DPKG_STATUS, GLIBC_FILE, MAX_PYVENV_CFG, PYTHON_LIB, SITE_DIRS, Tree
from gpudoctor.image.view import ImageError

# The machine an interpreter reports (os.uname().machine) for each OCI/Go architecture name.
MACHINES = {
    "amd64": "x86_64",
    "386": "i686",
    "arm64": "aarch64",
    "arm": "armv7l",
    "ppc64le": "ppc64le",
    "ppc64": "ppc64",
    "s390x": "s390x",
    "riscv64": "riscv64",
    "mips64le": "mips64",
    "loong64": "loongarch64",
}
SITE_PATH = re.compile(r"^(.*)/lib/python(\d+\.\d+)/(site-packages|dist-packages)$")
USR_PYTHON = re.compile(r"^(/usr)/bin/python(3\.\d+)$")


def _dpkg_versions(status: bytes, packages: tuple) -> dict:
    """{package: Version} for the named packages in /var/lib/dpkg/status (installed ones only)."""
    out = {}
    for para in status.decode("utf-8", "replace").split("\n\n"):
        fields = {}
        for line in para.splitlines():
            if line[:1] not in (" ", "\t") and ":" in line:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        name = fields.get("Package")
        if name in packages and "installed" in fields.get("Status", "").split():
            out[name] = fields.get("Version", "")
    return out


class Environments:
    def __init__(self, tree: Tree, arch: str, env: dict, where: str) -> None:
        self.tree, self.arch, self.env, self.where = tree, arch, env, where
        status = tree.content(DPKG_STATUS, where) if tree.exists(DPKG_STATUS) else None
        self.dpkg = _dpkg_versions(status, ("libc6",)) if status else {}

    def libc(self) -> list:
        version = self.dpkg.get("libc6")
        if version:
            return ["glibc", ".".join(version.split("-")[0].split(".")[:2])]
        for path in self.tree.entries:
            found = GLIBC_FILE.search(path)
            if found:
                return ["glibc", found.group(1)]
        return []

    def _read(self, path: str, limit: int) -> Optional[str]:
        """pyinspect._read over the image: the text of a kept file, or None."""
        data = self.tree.content(path, self.where)
        return None if data is None else data.decode("utf-8", "replace")[:limit]

    def _stdlib(self, base: str, xy: str) -> list:
        lib = f"{base}/lib/python{xy}"
        return [f"{base}/lib/python{''.join(xy.split('.'))}.zip", lib, f"{lib}/lib-dynload"]

    def _site(self, prefix: str, xy: str) -> list:
        """The site directories CPython's site module adds for `prefix` (Debian's for /usr), that exist."""
        if prefix == "/usr":
            local = f"/usr/local/lib/python{xy}/dist-packages"
            wanted = [local, DEBIAN_SHARED, f"/usr/lib/python{xy}/dist-packages"]
        else:
            wanted = [f"{prefix}/lib/python{xy}/site-packages"]
        return [d for d in wanted if self._is_dir(d)]

    def _is_dir(self, path: str) -> bool:
        e = self.tree.get(path)
        return e is not None and e.kind == DIR

    def _executable(self, prefix: str, xy: str) -> str:
        for name in (f"python{xy}", f"python{xy.split('.')[0]}", "python"):
            path = f"{prefix}/bin/{name}"
            if self.tree.lexists(path):
                return path
        return ""

    def prefixes(self) -> list:
        """(prefix, X.Y) of every environment whose site directory the layers hold."""
        found = []
        for path, e in self.tree.entries.items():
            if e.kind != DIR or posixpath.basename(path) not in SITE_DIRS:
                continue
            m = SITE_PATH.match(path)
            if m:
                prefix, xy, kind = m.groups()
                if kind == "dist-packages" and prefix == "/usr/local":
                    prefix = "/usr"  # Debian's python3 reads /usr/local/lib/pythonX.Y/dist-packages
                found.append((prefix, xy))
            elif path == DEBIAN_SHARED:
                # Which python3.X reads it: /usr/lib/python3.X, or /usr/bin/python3.X when the layers
                # hold no entry for that directory.
                for other in self.tree.entries:
                    lm = PYTHON_LIB.match(other) or USR_PYTHON.match(other)
                    if lm and lm.group(1) == "/usr":
                        found.append(("/usr", lm.group(2)))
        return sorted(set(found))

    def describe(self, prefix: str, xy: str) -> dict:
        cfg_text = self._read(f"{prefix}/pyvenv.cfg", MAX_PYVENV_CFG)
        cfg = pyvenv_cfg(cfg_text or "")
        base = prefix
        version = xy
        path = []
        if cfg_text is not None:
            home = cfg.get("home", "")
            base = posixpath.dirname(home.rstrip("/")) if home else prefix
            version = cfg.get("version") or cfg.get("version_info") or xy
            path = self._stdlib(base, xy) + self._site(prefix, xy)
            if cfg.get("include-system-site-packages", "").lower() == "true":
                path += [d for d in self._site(base, xy) if d not in path]
        else:
            path = self._stdlib(prefix, xy) + self._site(prefix, xy)
            if prefix == "/usr/local" and self.env.get("PYTHON_VERSION", "").startswith(xy + "."):
                version = self.env["PYTHON_VERSION"]  # the official python images say which release
        out = {
            "format": pyinspect.FORMAT,
            "executable": self._executable(prefix, xy),
            "version": version,
            "implementation": "CPython",
            "prefix": prefix,
            "base_prefix": base,
            "platform": "linux",
            "machine": MACHINES.get(self.arch, self.arch),
            "libc": self.libc(),
            "conda_meta": self._is_dir(f"{prefix}/conda-meta"),
            "pyvenv_cfg": cfg_text,
            "path": path,
            "user_site": None,
            "all": {},
            "distributions": [],
        }
        out["all"], out["distributions"] = pyinspect.scan(path, self._folders, self._read)
        return out

    def _folders(self, site: str) -> list:
        real = self.tree.resolve(site) or site
        start = real + "/"
        return sorted(
            p[len(start) :]
            for p in self.tree.entries
            if p.startswith(start) and "/" not in p[len(start) :] and p.endswith((".dist-info", ".egg-info"))
        )

    def all(self) -> list:
        """Every environment, the one the image's PATH finds `python3` (or `python`) in first."""
        found = [self.describe(prefix, xy) for prefix, xy in self.prefixes()]
        path = self.env.get("PATH") or "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        rank = {}
        order = 0
        for directory in path.split(":"):
            for name in ("python3", "python"):
                candidate = f"{directory.rstrip('/')}/{name}"
                target = self.tree.resolve(candidate)
                if target and self.tree.lexists(candidate):
                    for i, env in enumerate(found):
                        exe = env["executable"]
                        same = exe and self.tree.resolve(exe) == target
                        if i not in rank and (same or f"{env['prefix']}/bin" == directory.rstrip("/")):
                            rank[i] = order
                            order += 1
        return [env for i, env in sorted(enumerate(found), key=lambda x: (rank.get(x[0], order), x[0]))]


def environments(tree: Tree, arch: str, env: dict, where: str) -> list:
    try:
        return Environments(tree, arch, env, where).all()
    except RecursionError:
        raise ImageError(f"{where}: its links nest too deep") from None
