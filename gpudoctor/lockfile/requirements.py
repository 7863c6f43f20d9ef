"""requirements.txt with pins: what `pip freeze`, `uv pip compile`, `uv export` and pip-compile write.

Pins are the `name==version` lines (markers evaluated for the target); index options (`--index-url`,
`--extra-index-url`) say where they come from, and so which variant a `torch==2.5.1` pin installs: pip
and uv take the highest matching version over every index, and 2.5.1+cu124 on an extra index outranks
2.5.1. The `# via` annotations uv and pip-compile write (on the lines below a pin, or after it with
`--annotation-style line`) are the resolved dependency edges, and `# from`
(uv's --emit-index-annotation) the index of each pin. Lines that pin nothing (ranges, editables, nested
-r files) are listed as skipped, with why.
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Optional

from .model import VARIANT_BUILT, Lock, LockError, Pin, finish, index_variant, normalise, with_variant
from .target import Target, marker_holds, wheel_misfit

FORMAT = "requirements.txt"
_INDEX_OPTIONS = {"-i": "index", "--index-url": "index", "--extra-index-url": "extra"}
_IGNORED_OPTIONS = ("--hash", "--trusted-host", "--prefer-binary", "--only-binary", "--no-binary", "--pre")
_NOT_FOLLOWED = ("-r", "--requirement", "-c", "--constraint", "-e", "--editable")


def logical_lines(text: str) -> list:
    """(line number, text) of each logical line: backslash continuations joined."""
    out, parts, start = [], [], 0
    for number, line in enumerate(text.splitlines(), 1):
        if not parts:
            start = number
        if line.endswith("\\"):
            parts.append(line[:-1])
            continue
        parts.append(line)
        out.append((start, " ".join(p.strip() for p in parts)))
        parts = []
    if parts:
        out.append((start, " ".join(p.strip() for p in parts)))
    return out


def _option(line: str) -> tuple:
    """(option, value) of an option line: "--index-url URL", "--index-url=URL", "-i URL"."""
    head, _, rest = line.partition(" ")
    if "=" in head and head.startswith("--"):
        head, _, value = head.partition("=")
        return head, value.strip()
    return head, rest.strip()


def parse(text: str, path: str, t: Target) -> Lock:
    pins: list = []
    skipped: list = []
    indexes: list = []  # (kind, url) in file order
    via: dict = {}  # child name -> set of parent names
    from_index: dict = {}  # name -> URL of its "# from" annotation
    current: Optional[str] = None
    listing = False  # inside a multi-line "# via" block
    for number, raw in logical_lines(text):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            note = line[1:].strip()
            if current is None:
                continue
            m = re.fullmatch(r"via(?:\s+(.*))?", note)
            if m:
                listing = not m.group(1)
                for parent in (m.group(1) or "").split(","):
                    _edge(via, current, parent)
            elif note.startswith("from ") and "://" in note:
                from_index[current] = note[5:].strip()
                listing = False
            elif listing:
                _edge(via, current, note)
            continue
        listing = False
        if line.startswith("-"):
            option, value = _option(re.split(r"\s+#", line, maxsplit=1)[0])
            if option in _INDEX_OPTIONS:
                indexes.append((_INDEX_OPTIONS[option], value))
            elif option in _NOT_FOLLOWED:
                skipped.append(f"line {number}: {line}: not followed (only pins in this file are judged)")
            elif not option.startswith(_IGNORED_OPTIONS):
                skipped.append(f"line {number}: {option}: an option gpudoctor does not read")
            current = None
            continue
        current = None
        read = _requirement(line, number, t)
        if isinstance(read, str):
            skipped.append(read)
            continue
        current = read.name
        pins.append(read)
        inline = re.search(r"\s#\s*via\s+(.*)$", line)  # --annotation-style line: "a==1  # via b, c"
        for parent in (inline.group(1) if inline else "").split(","):
            _edge(via, current, parent)
    unreadable = [line for line in skipped if ": not a requirement (" in line]
    if not pins and unreadable and len(unreadable) == len(skipped):
        raise LockError(f"{path}: not a requirements file ({unreadable[0]})")
    primary = next((url for kind, url in indexes if kind == "index"), "")
    variant_index = next((url for _, url in indexes if index_variant(url)), "")
    versions = {p.name: p.version for p in pins}
    children: dict = {}  # parent name -> the pins whose "# via" names it
    for child, parents in via.items():
        for parent in parents:
            children.setdefault(parent, set()).add(child)
    out = []
    for pin in pins:
        index = pin.index or from_index.get(pin.name, "")
        if not index:
            index = variant_index if pin.name in VARIANT_BUILT and variant_index else primary
        requires = sorted(f"{c}=={versions[c]}" for c in children.get(pin.name, ()) if c in versions)
        out.append(
            pin._replace(version=with_variant(pin.name, pin.version, index), index=index, requires=requires)
        )
    return finish(path, FORMAT, "", out, skipped)


def _edge(via: dict, child: str, parent: str) -> None:
    words = parent.strip().split()
    if words and not words[0].startswith(("-", "(")):
        via.setdefault(child, set()).add(normalise(words[0]))


def _requirement(line: str, number: int, t: Target):
    """The Pin of one requirement line, or the line saying why it was skipped."""
    from packaging.requirements import InvalidRequirement, Requirement

    spec = re.split(r"\s+#", line, maxsplit=1)[0]
    spec = re.split(r"\s+--?[a-z]", spec, maxsplit=1)[0].strip()  # per-requirement options: --hash=...
    try:
        req = Requirement(spec)
    except InvalidRequirement as e:
        return f"line {number}: {spec}: not a requirement ({str(e).splitlines()[0]})"
    name = normalise(req.name)
    try:
        holds = marker_holds(str(req.marker or ""), t)
    except LockError as e:
        return f"line {number}: {name}: {e.reason}"
    if not holds:
        return f"line {number}: {name}: its marker ({req.marker}) does not hold on {t.platform} {t.machine}"
    if req.url:
        filename = urllib.parse.unquote(urllib.parse.urlsplit(req.url).path.rsplit("/", 1)[-1])
        misfit = wheel_misfit(filename, t)
        if misfit:
            return f"line {number}: {name}: {misfit}"
        parts = filename.split("-")
        if filename.endswith(".whl") and len(parts) >= 5:
            return Pin(name, parts[1], req.url.rsplit("/", 1)[0], [])
        return f"line {number}: {name}: a direct reference to {filename}, not a pinned wheel"
    specs = list(req.specifier)
    if len(specs) != 1 or specs[0].operator not in ("==", "===") or specs[0].version.endswith(".*"):
        return f"line {number}: {name}{req.specifier}: not pinned to one version"
    return Pin(name, specs[0].version, "", [])
