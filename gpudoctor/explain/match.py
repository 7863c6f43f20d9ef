"""From a pasted error message to the rules (and explain entries) whose error texts it matches, ranked.

Two kinds of evidence, the specific before the generic:
1. **A known text in the message.** An error text a rule lists, found whole in the message (case and spacing
   ignored) scores 1; found with its numbers masked (`libcudnn.so.9` against `libcudnn.so.8`) 0.95. Of two
   texts found, the one whose words are rarer among all known texts (`libcudart` over `shared object file`)
   comes first: not the longer one.
2. **Distinctive tokens.** Otherwise a text scores the share of its tokens the message has, each token
   weighed by how rare it is across all the known texts (inverse document frequency: `cuda` and `error`
   say little, `cudaErrorNoKernelImageForDevice`, `libnvidia-ml`, `sm_120` or `xid79` say much), codes and
   library names counting extra. A score needs enough weight behind it: a message of one common word
   (`cuda`), a single letter or an empty string matches nothing.

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


def tokens(text: str) -> set[str]:
    """Lowercase word tokens (a `lib...so` name whole), without stop words and one-letter words; `xidNN`
    for an Xid number."""
    low = text.lower()
    found = set(re.findall(r"lib[a-z0-9_+-]*\.so(?:\.\d+)*|[a-z][a-z0-9_]*|\d+(?:\.\d+)*", low))
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
    """The known texts, indexed once; `rank(message)` for each message (a log has many)."""

    def __init__(self, knowns: Sequence[Known]) -> None:
        self.knowns = list(knowns)
        self.texts = [(k, t, normalise(t), masked(normalise(t)), tokens(t)) for k in knowns for t in k.errors]
        df: dict[str, int] = {}
        for k in self.knowns:
            for tok in set().union(*(tokens(t) for t in k.errors)) if k.errors else ():
                df[tok] = df.get(tok, 0) + 1
        n = max(1, len(self.knowns))
        self.weight = {t: math.log(1 + n / c) * (1.5 if CODE.match(t) else 1.0) for t, c in df.items()}

    def _w(self, toks: set[str]) -> float:
        # In sorted order: a float sum in set order would differ between runs (hash seeds) in its last bits,
        # and so could the order of two candidates whose words weigh the same.
        return sum(self.weight.get(t, 0.0) for t in sorted(toks))

    def _mean(self, toks: set[str]) -> float:
        return self._w(toks) / len(toks) if toks else 0.0

    def rank(self, message: str, limit: int = 5) -> list[Candidate]:
        """The candidates scoring at least CLOSE, best first."""
        norm = normalise(message)
        masked_message = masked(norm)
        toks = tokens(message)
        best: dict[str, Candidate] = {}
        for known, text, n_text, m_text, t_toks in self.texts:
            if len(n_text) >= 8 and n_text in norm:
                cand = Candidate(known, 1.0, text, "text", (), self._mean(t_toks))
            elif len(m_text) >= 8 and m_text in masked_message:
                cand = Candidate(known, 0.95, text, "masked", (), self._mean(t_toks))
            else:
                shared = t_toks & toks
                weight = self._w(shared)
                if not t_toks or weight < MIN_WEIGHT:
                    continue
                share = weight / self._w(t_toks)
                cand = Candidate(known, share, text, "tokens", tuple(sorted(shared)), self._mean(shared))
            old = best.get(known.id)
            if old is None or (cand.score, cand.distinct) > (old.score, old.distinct):
                best[known.id] = cand
        return by_specificity([c for c in best.values() if c.score >= CLOSE])[:limit]

    def top(self, message: str) -> Optional[Candidate]:
        """The best confident candidate, or None."""
        ranked = self.rank(message, 1)
        return ranked[0] if ranked and ranked[0].confident else None
