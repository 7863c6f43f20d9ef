"""Which lines of a log can match a known text confidently: one RE2 search over many lines at once.

Most lines of a training log (steps, losses, rates, progress bars) name no error, and matching them one by
one costs more than reading them. The gate is a pattern built once from a Matcher that finds, in a block of
lines joined by "\\n" and lowercased, each line that may hold a confident match (match.Matcher.rank); the
other lines are never looked at one by one. It may let through a line that matches nothing (rank decides),
never turn away one that matches. A line is let through when it holds:

- the two longest pieces of a text without numbers or spaces, in their order (a line that holds the text,
  whole or with its numbers masked, holds them), `xid`, or an error code after an error word;
- a token of a text that alone weighs FLOOR of the text's weight and MIN_WEIGHT: a *single* key;
- two keys, of any texts. A token match must share tokens weighing that much; a text's keys are its tokens
  but its lightest few, as many as leave its heaviest token that is not single, with them, short of it. So
  a match shares a key, and if it shares only one, that key is single. A common word among the keys
  (`global` of `Graphics SM Global Exception`, a word of every Megatron-LM progress line) so lets a line
  through only beside another key.

A key is found as the token WORD finds in the lowercased line: after a character that is not a letter
(`\\b`, a digit or `_`), or right after `.so` (the end of a library's name); a word ends at `\\b`, a number or
a library's name anywhere (`libcudnn` in `libcudnn.so.9`), a number before a non-digit (`8.0` in `8.0.1`: let
through, for rank to decide). The search runs on UTF-8
bytes as Latin-1 (a byte a character), so nothing a log holds makes it fail, and counts each non-ASCII
character as up to 4 bytes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

from .match import ERROR_CODE, FLOOR, MIN_WEIGHT, XID_TOKEN, Matcher

MARGIN = 1e-6  # weights are sums of floats: a bound this close to the threshold counts as reaching it
BEFORE = rb"(?:\b|[0-9_]|\.so)"  # what may stand before a token's first character
# match.ERROR_CODE's words, or their start
ERROR_WORD = rb"(?:error|fail|errno|code|return|status|result|denied)"


def _token(token: str, before: bool = True, after: bool = True) -> bytes:
    """A token as the gate finds it in a lowercased line (see the module's docstring): `before`, with what may
    stand before it; `after`, a number with what may follow it (not a digit)."""
    import re2

    text = re2.escape(token.encode())
    if token[0].isdigit():  # a number starts after a non-word character or `_`, and ends before a non-digit
        return (rb"(?:\b|_)" if before else b"") + text + (rb"(?:[^0-9]|$)" if after else b"")
    return (BEFORE if before else b"") + text + (b"" if token.startswith("lib") else rb"\b")


def keys(matcher: Matcher) -> tuple[set[str], set[str]]:
    """The keys of every text, and those of them that are single.

    A text's keys are its tokens but its lightest few: as many as leave its heaviest token that does not
    reach the text's need alone, with the light ones, short of that need. So a token match shares a key (the
    light ones together weigh less than the need), and if it shares one key only, that key reaches the need
    alone: a single key. The others have to come in twos."""
    every: set[str] = set()
    single: set[str] = set()
    for (*_, toks), total in zip(matcher.texts, matcher.total):
        need = max(FLOOR * total, MIN_WEIGHT) - MARGIN
        ranked = sorted(toks, key=lambda t: (-matcher.weight[t], t))
        alone = [t for t in ranked if matcher.weight[t] >= need]
        heaviest = next((matcher.weight[t] for t in ranked if t not in alone), 0.0)
        light = 0.0
        mine = list(ranked)
        while mine and heaviest + light + matcher.weight[mine[-1]] < need:
            light += matcher.weight[mine.pop()]
        every.update(mine)
        single.update(alone)
    return every, single


def pattern(matcher: Matcher) -> bytes:
    """The gate's pattern (RE2 syntax, on lowercased UTF-8 read as Latin-1)."""
    every, single = keys(matcher)
    codes = sorted(t for t in every | single if t.isdigit())
    xid = any(XID_TOKEN.match(t) for t in every | single)
    words = lambda found: sorted(  # noqa: E731
        (t for t in found if not t.isdigit() and not XID_TOKEN.match(t)), key=lambda t: (-len(t), t)
    )
    parts = [b"|".join(_token(t) for t in words(single))] if words(single) else []
    pair = words(every)
    if pair:
        first = b"|".join(_token(t, after=False) for t in pair)
        then = b"|".join(_token(t, before=False, after=False) for t in pair)  # right after the first one
        parts.append(b"(?:" + first + rb")(?:[^\n]*?(?:" + first + b")|" + then + b")")
    if codes:  # match.ERROR_CODE, its \W{0,3} as up to 12 bytes
        alternation = b"|".join(c.encode() for c in codes)
        parts.append(ERROR_WORD + rb"[a-z_]*[^0-9a-z_\n]{0,12}(?:" + alternation + b")")
        parts.append(rb"\((?:" + alternation + rb") vs\. ")
    if xid:
        parts.append(b"xid")
    parts += sorted({_found_whole(m_text) for *_, m_text, _ in matcher.texts})
    return b"|".join(parts)


def _found_whole(m_text: str) -> bytes:
    """What a line that holds a text, whole or with its numbers masked, holds: the two longest pieces of the
    text without numbers, spaces or quotes (`’` reads `'` once normalised), in their order."""
    import re2

    return rb"[^\n]*?".join(re2.escape(p.encode()) for p in _longest(m_text))


def _longest(m_text: str) -> list[str]:
    """The two longest pieces of a masked text without numbers, spaces or quotes, in their order."""
    pieces = [p for p in re.split(r"[#\s']+", m_text) if p]
    return [pieces[i] for i in sorted(sorted(range(len(pieces)), key=lambda i: -len(pieces[i]))[:2])]


DIGITS = re.compile(r"\d+")
WORDLIKE = "abcdefghijklmnopqrstuvwxyz_."  # a number beside one of these is read: `cu118`, `11.7`, `sm_120`


class Gate:
    """The gate of one Matcher, compiled once; `shape`: what a line that matched nothing is remembered by."""

    def __init__(self, matcher: Matcher) -> None:
        import re2

        # A text longer than a whole match needs whose masked form is too short for a masked match: found
        # only with its very numbers. A line that may hold it has its numbers read.
        whole_only = [m for _, _, n, m, _ in matcher.texts if DIGITS.search(n) and len(n) >= 8 > len(m)]
        pieces = [re.escape(p) for m in whole_only for p in re.split(r"[#\s']+", m) if p]
        self.numbers_read = re.compile("|".join(["xid"] + pieces))
        # A text with a number a shape masks (`gpu 0000`, `(803 vs. 0)`): found whole (score 1) in one line
        # of a shape, with its numbers masked (0.95) in another. A line that may hold one is matched itself.
        masked_numbers = [m for _, _, n, m, _ in matcher.texts if self._shape(n) != n]
        self.whole_differs = re.compile(
            "|".join(".*?".join(re.escape(p) for p in _longest(m)) for m in masked_numbers) or "(?!)"
        )
        options = re2.Options()
        options.encoding = re2.Options.Encoding.LATIN1
        options.max_mem = 64 << 20  # room for the DFA of a few hundred keys
        source = pattern(matcher)
        self.regex: Any = re2.compile(source, options) if source else None

    def lines(self, block: Sequence[str]) -> Iterator[int]:
        """The indexes of the lines of `block` (lines without line ends) that may match, in order."""
        if self.regex is None or not block:
            return
        yield from found_lines(self.regex, data_of(block))

    def lines_in(self, data: bytes) -> Iterator[int]:
        """`lines`, of a block already made into data_of's bytes."""
        if self.regex is not None and data:
            yield from found_lines(self.regex, data)

    def shape(self, line: str) -> str:
        """`line` with `#` for each number no matcher reads, where what its other numbers are cannot change
        what it matches: every line of that shape gets the same confident candidates of rank; "" where that
        is not known. A number is read (kept) beside a letter, `_` or `.` (a word, a version, an
        architecture: `cu118`, `11.7`, `sm_120`) and as an error code (match.ERROR_CODE: where it finds one
        does not depend on what the numbers are); a line with an Xid (its number has up to 3 digits) or a
        library's name (`libfoo-1.so` holds `-`) keeps them all."""
        low = line.lower()
        if len(low) != len(line) or "lib" in low and ".so" in low or self.numbers_read.search(low):
            return ""
        return self._shape(line, low)

    def same_match(self, line: str) -> bool:
        """Whether rank gives every line of `line`'s shape the very candidates it gives `line` (the same
        scores too): where no text with a number a shape masks may be in it."""
        return self.whole_differs.search(line.lower()) is None

    @staticmethod
    def _shape(line: str, low: str = "") -> str:
        low = low or line.lower()
        codes = {m.start(g) for m in ERROR_CODE.finditer(low) for g in (1, 2) if m.group(g)}

        def number(m: re.Match) -> str:
            at, end = m.start(), m.end()
            read = at in codes or at and low[at - 1] in WORDLIKE or end < len(low) and low[end] in WORDLIKE
            return m.group(0) if read else "#"

        return DIGITS.sub(number, line)


def data_of(block: Sequence[str]) -> bytes:
    """A block of lines as the gate searches it: joined by "\\n", lowercased, UTF-8."""
    return "\n".join(block).lower().encode("utf-8", "surrogatepass")


def found_lines(regex: Any, data: bytes) -> Iterator[int]:
    """The indexes of the lines of `data` (data_of's) that `regex` (an RE2 pattern) finds something in."""
    pos = line = 0
    while True:
        found = regex.search(data, pos)
        if found is None:
            return
        start = found.start()
        line += data.count(b"\n", pos, start)
        yield line
        pos = data.find(b"\n", start) + 1
        if not pos:
            return
        line += 1
