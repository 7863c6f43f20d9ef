"""`ldconfig -p` as text: its library lines read, and written back. The probes read the loader cache with
it (probes/ldcache.py); an image's cache is printed with it as a started container's ldconfig would print
it (image_view.py).

    "\tlibnvidia-ml.so.1 (libc6,x86-64) => /usr/local/nvidia/lib64/libnvidia-ml.so.1"

Some builds add ", OS ABI: Linux 3.2.0" or "hwcap: ..." inside the parentheses, hence the lazy match up to
"=>".
"""

from __future__ import annotations

import functools
import re

_LINE = re.compile(r"^\s*(\S+)\s+\((.*?)\)\s+=>\s+(\S.*?)\s*$")


@functools.lru_cache(maxsize=2)
def entries(text: str) -> tuple[tuple[str, str, str], ...]:
    """(soname, flags, path) of every library line, in the order printed; the header ("123 libs found in
    cache") and anything else that is not a library line are skipped. Several probes read the one output
    of a check: it is parsed once."""
    return tuple((m.group(1), m.group(2), m.group(3)) for m in map(_LINE.match, text.splitlines()) if m)


def render(found: list) -> str:
    """`ldconfig -p` as it prints a cache of (soname, flags, path) entries."""
    lines = [f"{len(found)} libs found in cache `/etc/ld.so.cache'"]
    lines += [f"\t{soname} ({flags}) => {path}" for soname, flags, path in found]
    return "\n".join(lines) + "\n"
