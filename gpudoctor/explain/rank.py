"""Which cause comes first: the order of the candidates a message matched.

Two stages, each a pure function:

1. **By the text** (`by_specificity`), before anything is known of the host: a confident match before a
   weak one; among the confident, a cause before the generic ones it says it refines (a rule's
   `refines:`) and before a catch-all (`catch_all: true`, a symptom many causes share), when it matched
   the message as well on wording of its own (a text the generic one does not list); then the better
   match, then the match on rarer words (`libcudart` over `shared object file`: specific by what the
   words say, not by how long the text is). Where several rules matched the very same text (or the
   specific one a text the generic one lists too), the message carries only the shared symptom's words:
   the generic one comes first, since it names the specific causes, and the host tells them apart.
2. **By the evidence** (`by_evidence`), once each candidate is judged on the host: a cause that applies
   here comes first, then those that could not be checked (or were not checked, or are program errors,
   which no host state shows), and those that do not apply here last. The text order stays the tie-break,
   and a weak match never climbs above a confident one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Callable, Protocol, TypeVar


class Cause(Protocol):
    """What the order reads of a matched cause (match.Known)."""

    id: str
    errors: tuple[str, ...]
    refines: tuple[str, ...]
    catch_all: bool


class Candidate(Protocol):
    """What the order reads of a candidate (match.Candidate)."""

    known: Cause
    score: float
    distinct: float
    text: str

    @property
    def confident(self) -> bool: ...


C = TypeVar("C", bound=Candidate)
T = TypeVar("T")

# What the host says of a cause, best first (answer.Verdict.status).
EVIDENCE = {
    "applies": 0,
    "could not be checked": 1,
    "not checked": 1,
    "program error": 1,
    "does not apply": 2,
}


def by_specificity(candidates: Sequence[C]) -> list[C]:
    """Confident before weak. Then a generic cause (one another candidate `refines`, or a catch-all) after a
    specific one that matched the message as well on wording of its own: the message names the specific
    cause. Then the better match, and the match on rarer words. Where several rules matched the very same
    text, the message carries only the shared symptom's words: the generic one comes first, since it names
    the specific causes, and the host's evidence then tells them apart (by_evidence)."""
    confident = [c for c in candidates if c.confident]
    demoted: set[str] = set()  # a more specific cause matched as well, on its own words
    summary: set[str] = set()  # the generic one of a tie on the very same text
    for generic in confident:
        for specific in confident:
            if specific is generic or not _refines(specific, generic):
                continue
            if not _symptom_of(specific, generic):
                if specific.score >= generic.score:
                    demoted.add(generic.known.id)
            else:
                summary.add(generic.known.id)

    def key(c: Candidate) -> tuple:
        return (
            not c.confident,
            c.known.id in demoted,
            -c.score,
            -c.distinct,
            c.known.id not in summary,
            c.known.id,
        )

    return sorted(candidates, key=key)


def _refines(specific: Candidate, generic: Candidate) -> bool:
    """`specific` is a more specific cause than `generic`: it says it refines it, or `generic` is a
    catch-all and `specific` is not."""
    if specific.known.id == generic.known.id:
        return False
    return generic.known.id in specific.known.refines or (
        generic.known.catch_all and not specific.known.catch_all
    )


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _symptom_of(specific: Candidate, generic: Candidate) -> bool:
    """`specific` matched on the generic cause's own words: the very text `generic` matched, or one of the
    error texts `generic` lists (the symptom both share, which names no specific cause)."""
    text = _norm(specific.text)
    return text == _norm(generic.text) or text in {_norm(e) for e in generic.known.errors}


def by_evidence(
    items: Sequence[T], candidate: Callable[[T], Candidate], status: Callable[[T], str]
) -> list[T]:
    """`items` (in the text order) by what the host says of each; stable, so the text order breaks ties."""
    return sorted(items, key=lambda item: (not candidate(item).confident, EVIDENCE.get(status(item), 1)))
