"""A log read as a stream of lines, in flat memory, with a bound.

A file is read from where its last MAX_BYTES begin (the failure is at the end of a log); standard input, a
pipe or a device is read up to MAX_BYTES and is an OSError (EFBIG) past it: /dev/zero ends, it does not grow
until the kernel kills the process. Lines are the lines `str.splitlines()` gives the decoded text (a
progress bar's carriage returns split lines too), a list of them for each piece read. A line that runs on
for MAX_LINE bytes past what has been read without an end (a run of NUL bytes, a minified JSON) is given cut
there and the rest of it skipped (no error text is that long): memory stays within CHUNK + MAX_LINE.
"""

from __future__ import annotations

import errno
import os
import re
import sys
from collections.abc import Iterator
from typing import BinaryIO, Callable, Optional

MAX_BYTES = 256 << 20  # the last 256 MiB of a log file; as much of a stream
MAX_LINE = 64 << 10
CHUNK = 1 << 20
LINE_END = re.compile(rb"\r\n|\r|\n")
RARE_ENDS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"  # what else splitlines() ends a line at

Progress = Callable[[int, Optional[int]], None]  # bytes read, bytes to read (None: a stream)


def blocks(path: str, progress: Optional[Progress] = None) -> Iterator[list[str]]:
    """The lines of the log at `path` ("-": standard input), in a list for each piece read (up to CHUNK
    bytes of lines: explain/gate.py reads many lines at once). OSError when it cannot be read or a stream
    holds more than MAX_BYTES."""
    if path == "-":
        yield from _blocks(sys.stdin.buffer, None, progress)
        return
    with open(path, "rb") as f:
        size = _size(f)
        if size is not None and size > MAX_BYTES:
            f.seek(size - MAX_BYTES)
        yield from _blocks(f, None if size is None else min(size, MAX_BYTES), progress)


def _size(f: BinaryIO) -> Optional[int]:
    """The size of a regular file, None for anything else (a pipe, a device, a socket)."""
    import stat

    st = os.fstat(f.fileno())
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def _blocks(f: BinaryIO, size: Optional[int], progress: Optional[Progress]) -> Iterator[list[str]]:
    read = 0
    rest = b""  # the start of a line whose end is not read yet
    cut = False  # inside a line given cut at MAX_LINE: the rest of it is dropped
    while size is None or read < size:
        chunk = f.read(CHUNK if size is None else min(CHUNK, size - read))
        if not chunk:
            break
        read += len(chunk)
        if size is None and read > MAX_BYTES:
            raise OSError(errno.EFBIG, f"larger than {MAX_BYTES >> 20} MiB, more than gpudoctor reads")
        data = rest + chunk
        held = b"\r" if data.endswith(b"\r") else b""  # a \r\n split between two chunks is one line end
        body = data[: len(data) - len(held)]
        end = max(body.rfind(b"\n"), body.rfind(b"\r")) + 1  # after the last line end; 0: none
        start = 0
        if cut and end:
            start, cut = LINE_END.search(body).end(), False  # the cut line ends here
        if not cut and end > start:  # whole lines, decoded and split at once (a line end is never inside
            yield body[start:end].decode("utf-8", "replace").splitlines()  # a UTF-8 character)
        rest = body[end:] if not cut else b""
        if len(rest) > MAX_LINE:
            yield _split(rest[:MAX_LINE])
            rest, cut = b"", True
        rest += held
        if progress is not None:
            progress(read, size)
    if rest and not cut:
        yield _split(rest, ended=False)


def _split(piece: bytes, ended: bool = True) -> list[str]:
    """One piece before a line end (`ended`) or the end of the text, as splitlines() splits it in the whole
    text: an empty piece is one line; the rarer line ends (form feed, U+2028) split it further."""
    text = piece.decode("utf-8", "replace")
    return text.splitlines() + [""] if ended and (not text or text[-1] in RARE_ENDS) else text.splitlines()
