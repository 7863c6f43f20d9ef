"""From a pasted error message to the rules (and explain entries) whose error texts it matches, ranked.

Two kinds of evidence, the specific before the generic:
1. **A known text in the message.** An error text a rule lists, found whole in the message (case and spacing
   ignored) scores 1; found with its numbers masked (`libcudnn.so.9` against `libcudnn.so.8`) 0.95. Of two
   texts found, the one whose words are rarer among all known texts (`libcudart` over `shared object file`)
   comes first: not the longer one.
2. **Distinctive tokens.** Otherwise a text scores the share of its tokens the message has, each token
   weighed by how rare it is across all the known texts (inverse document frequency: `cuda` and `error`
   say little, `cudaErrorNoKernelImageForDevice`, `libnvidia-ml`, `sm_120` or `xid79` say much), codes and
   library names counting extra; a whole number counts only as an error code (`Error 802:`, `code=802(`),
   since "step 802" or "Allocated 802 MiB" is no CUDA error 802. A score needs enough weight behind it: a
   message of one common word (`cuda`), a single letter or an empty string matches nothing.

Numbers are read too (`read_numbers`): `found version 11040` is CUDA 11.4, `sm_120` compute capability
12.0, `Xid 79` (also as the kernel logs it, `Xid (PCI:0000:3b:00): 79`) the Xid 79 token. The module is
pure: texts in, ranked candidates out; nothing here reads a host. Which of the matched causes comes first,
the specific or the generic, and the host's verdict on each, are explain/rank.py's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

from .rank import by_specificity

FLOOR = 0.6  # below this a candidate is not a match
CLOSE = 0.35  # between CLOSE and FLOOR: shown as "not confident"
MIN_WEIGHT = 3.0  # the least token weight a token-only match needs behind it

STOPWORDS = frozenset(
    "a an and are as at be been but by can could did do does for from has have if in into is it its "
    "may might no not of on or our please so such that the their then there these this to try was were "
    "which will with you your".split()
)
# Tokens that name one thing: error and status codes, libraries, architectures, Xids.
CODE = re.compile(
    r"^(?:cuda_?error\w+|cudaerror\w+|cublas_status\w+|cudnn_status\w+|nccl\w*|sm_\d+|xid\d+|lib\w+|cu\d{2,3})$"
)
CODE_WORDS = (
    "error",
    "fail",
    "errno",
    "code",
    "return",
    "status",
    "result",
    "denied",
    " vs. ",
)  # ERROR_CODE's
XID_TOKEN = re.compile(r"^xid\d+$")
XID = re.compile(r"\bxid\b\W{0,3}(?:\([^)]*\)\W{0,3})?(\d{1,3})\b", re.IGNORECASE)
FOUND_VERSION = re.compile(r"found version (\d{4,6})", re.IGNORECASE)
SM = re.compile(r"\bsm_(\d{2,3})\b", re.IGNORECASE)
# Numbers that name a thing rather than a version of it keep their digits when a text is masked: an
# architecture (`sm_120`, `compute_50`, `sm_90a`) is another GPU, not another release of the same library.
MASKABLE = re.compile(r"\b(?:sm|compute)_\d+[a-z]?\b|\d+")


def masked(text: str) -> str:
    """`text` with its version numbers as `#` (`libcudnn.so.8` -> `libcudnn.so.#`), architectures kept."""
    return MASKABLE.sub(lambda m: m.group(0) if m.group(0)[0] in "sc" else "#", text)


@dataclass(frozen=True)
class Known:
    """Something explain can answer with: a rule or an explain entry, and the error texts it lists."""

    id: str
    title: str
    errors: tuple[str, ...]
    refines: tuple[str, ...] = ()  # the generic causes this one is a more specific case of
    catch_all: bool = False  # a symptom many causes share: ranks after the others


@dataclass(frozen=True)
class Candidate:
    known: Known
    score: float
    text: str  # the error text that matched best
    how: str  # "text" (found whole), "masked" (found with numbers masked) or "tokens"
    shared: tuple[str, ...]  # the tokens message and text share (for "tokens")
    distinct: float = 0.0  # how rare the words that matched are: their mean weight across the known texts

    @property
    def confident(self) -> bool:
        return self.score >= FLOOR


def normalise(text: str) -> str:
    return " ".join(text.lower().replace("\u2019", "'").split())


WORD = re.compile(r"lib[a-z0-9_+-]*\.so(?:\.\d+)*|[a-z][a-z0-9_]*|\d+(?:\.\d+)*")  # on lowercase text


# A whole number is a token only as an error code: after error, failure, errno, code, returned, status or
# result (`Error 802:`, `code=802(`, `cuda runtime error (802)`, `CUDA_ERROR_UNKNOWN (999)`, `[Errno 38]`,
# `Permission denied (13)`), or CUDA's `(803 vs. 0)`: "step 802" and "802 MiB" are no CUDA error 802.
ERROR_CODE = re.compile(
    r"(?:error|failure|failed|errno|code|returned|status|result|denied)[a-z_]*\W{0,3}(\d+)\b"
    r"|\((\d+) vs\. \d+\)"
)


def _anchors(n_text: str) -> set[str]:
    """The words of a normalised text found whole in any message that holds the text, whole or masked: the
    tokens of its words between two spaces, without digits (masking changes those)."""
    inner = [w for w in n_text.split(" ")[1:-1] if not re.search(r"[0-9#]", w)]
    return {t for w in inner for t in WORD.findall(w) if len(t) > 2}  # `s` of `device(s)` is in every log


def tokens(text: str) -> set[str]:
    """Lowercase word tokens (a `lib...so` name whole), without stop words and one-letter words; `xidNN`
    for an Xid number."""
    low = text.lower()
    codes = {m.group(1) or m.group(2) for m in ERROR_CODE.finditer(low)}
    found = {t for t in WORD.findall(low) if not t.isdigit() or t in codes}
    found |= {f"xid{m.group(1)}" for m in XID.finditer(text)}
    found |= {re.sub(r"\.so(\.\d+)*$", "", t) for t in found if t.startswith("lib") and ".so" in t}
    return {t for t in found if len(t) > 1 and t not in STOPWORDS}


@dataclass(frozen=True)
class Numbers:
    """What the numbers in a message say."""

    cuda_found: Optional[str] = None  # `found version 11040` -> "11.4"
    compute_capability: Optional[str] = None  # `sm_120` -> "12.0"
    xid: Optional[int] = None

    def lines(self) -> list[str]:
        out = []
        if self.cuda_found:
            out.append(f"the driver it found supports CUDA {self.cuda_found} at most")
        if self.compute_capability:
            out.append(f"the GPU named is of compute capability {self.compute_capability}")
        if self.xid is not None:
            out.append(f"the kernel log line is Xid {self.xid}")
        return out


def read_numbers(message: str) -> Numbers:
    cuda = None
    m = FOUND_VERSION.search(message)
    if m:
        n = int(m.group(1))  # CUDA's own encoding: 1000 * major + 10 * minor
        cuda = f"{n // 1000}.{(n % 1000) // 10}"
    cc = None
    m = SM.search(message)
    if m:
        digits = m.group(1)
        cc = f"{digits[:-1]}.{digits[-1]}"
    m = XID.search(message)
    return Numbers(cuda, cc, int(m.group(1)) if m else None)


class Matcher:
    """The known texts, indexed once; `rank(message)` for each message (a log has many).

    A message is held against the texts it can match only: those sharing a token with it, and those whose
    anchor it has (a word of the text between two of its spaces, without digits: a message holding the text,
    whole or with its numbers masked, holds that word whole). A log line that shares nothing costs a
    tokenisation and a set lookup, not a pass over every text."""

    def __init__(self, knowns: Sequence[Known]) -> None:
        self.knowns = list(knowns)
        self.texts = []
        df: dict[str, int] = {}
        for k in self.knowns:
            known_toks: set[str] = set()
            for t in k.errors:
                n_text, t_toks = normalise(t), tokens(t)
                self.texts.append((k, t, n_text, masked(n_text), t_toks))
                known_toks |= t_toks
            for tok in known_toks:
                df[tok] = df.get(tok, 0) + 1
        n = max(1, len(self.knowns))
        self.weight = {t: math.log(1 + n / c) * (1.5 if CODE.match(t) else 1.0) for t, c in df.items()}
        self.total = [self._w(t_toks) for *_, t_toks in self.texts]  # each text's weight
        self.mean = [self._mean(t_toks) for *_, t_toks in self.texts]
        self.by_token: dict[str, list[int]] = {}
        self.by_anchor: dict[str, list[int]] = {}
        self.always: list[int] = []  # texts without an anchor word: held against every message it may hold
        anchors = [_anchors(n_text) for _, _, n_text, _, _ in self.texts]
        seen: dict[str, int] = {}
        for words in anchors:
            for w in words:
                seen[w] = seen.get(w, 0) + 1
        for i, (words, (_, _, _, _, t_toks)) in enumerate(zip(anchors, self.texts)):
            for tok in t_toks:
                self.by_token.setdefault(tok, []).append(i)
            if words:  # a long word few texts have: rare in logs too
                self.by_anchor.setdefault(min(words, key=lambda w: (seen[w] > 3, -len(w), w)), []).append(i)
            else:
                self.always.append(i)
        # A message can hold one of those only if it holds the text's longest piece without numbers or
        # spaces (so found in the message as it is, lowercase, whatever its spacing).
        pieces = {max(re.split(r"[# ']", self.texts[i][3]), key=len) for i in self.always}
        self.always_gate = re.compile("|".join(re.escape(p) for p in sorted(pieces, key=len, reverse=True)))
        # A confident match needs the text whole (so its anchor word), or the tokens of FLOOR of its weight
        # (so one of its heaviest tokens: those without which the rest weighs less than FLOOR).
        self.keys = set(self.by_anchor)
        for (*_, t_toks), total in zip(self.texts, self.total):
            left = total
            for tok in sorted(t_toks, key=lambda t: (-self.weight[t], t)):
                if left < FLOOR * total - 1e-9:
                    break
                self.keys.add(tok)
                left -= self.weight[tok]
        self.xid_keys = any(XID_TOKEN.match(k) for k in self.keys)
        self.code_keys = {k for k in self.keys if k.isdigit()}  # a number is a token only as an error code
        self.keys -= self.code_keys

    def may_be_confident(self, message: str) -> bool:
        """False when no text can match `message` confidently (rank would give no confident candidate):
        cheaper than rank, for the many lines of a log that hold none of the known texts' key words."""
        low = message.lower()
        words = WORD.findall(low)
        if not self.keys.isdisjoint(words) or (self.xid_keys and "xid" in low):
            return True
        if self.code_keys and any(w in low for w in CODE_WORDS):
            if any(
                m.group(1) in self.code_keys or m.group(2) in self.code_keys for m in ERROR_CODE.finditer(low)
            ):
                return True
        libs = [re.sub(r"\.so(\.\d+)*$", "", w) for w in words if w.startswith("lib") and ".so" in w]
        if libs and not self.keys.isdisjoint(libs):
            return True
        return bool(self.always) and self.always_gate.search(low) is not None

    def _w(self, toks: set[str]) -> float:
        # In sorted order: a float sum in set order would differ between runs (hash seeds) in its last bits,
        # and so could the order of two candidates whose words weigh the same.
        return sum(self.weight.get(t, 0.0) for t in sorted(toks))

    def _mean(self, toks: set[str]) -> float:
        return self._w(toks) / len(toks) if toks else 0.0

    def rank(self, message: str, limit: int = 5) -> list[Candidate]:
        """The candidates scoring at least CLOSE, best first."""
        norm = normalise(message)
        toks = tokens(message)
        held = set(self.always) if self.always and self.always_gate.search(message.lower()) else set()
        for w in self.by_anchor.keys() & WORD.findall(norm):
            held.update(self.by_anchor[w])
        sharing: dict[int, float] = {}  # each text sharing a token: the weight shared, summed as _w sums it
        for tok in sorted(toks & self.by_token.keys()):
            for i in self.by_token[tok]:
                sharing[i] = sharing.get(i, 0.0) + self.weight[tok]
        masked_message = ""
        best: dict[str, Candidate] = {}
        for i in sorted(held | sharing.keys()):
            known, text, n_text, m_text, t_toks = self.texts[i]
            if i in held and len(n_text) >= 8 and n_text in norm:
                cand = Candidate(known, 1.0, text, "text", (), self.mean[i])
            elif (
                i in held
                and len(m_text) >= 8
                and m_text in (masked_message or (masked_message := masked(norm)))
            ):
                cand = Candidate(known, 0.95, text, "masked", (), self.mean[i])
            elif i in sharing:
                weight = sharing[i]
                share = weight / self.total[i]
                if weight < MIN_WEIGHT or share < CLOSE:  # below CLOSE: never shown, never the best
                    continue
                shared = tuple(sorted(t_toks & toks))
                cand = Candidate(known, share, text, "tokens", shared, weight / len(shared))
            else:
                continue
            old = best.get(known.id)
            if old is None or (cand.score, cand.distinct) > (old.score, old.distinct):
                best[known.id] = cand
        return by_specificity([c for c in best.values() if c.score >= CLOSE])[:limit]

    def top(self, message: str) -> Optional[Candidate]:
        """The best confident candidate, or None."""
        ranked = self.rank(message, 1)
        return ranked[0] if ranked and ranked[0].confident else None
