"""Which cause comes first: the order of the candidates a message matched.

Two stages, each a pure function:

1. **By the text** (`by_specificity`), before anything is known of the host: a confident match before a
   weak one; among the confident, a cause before the generic ones it says it refines (a rule's
   `refines:`), and every cause before a catch-all (`catch_all: true`), whose texts are a symptom many
   causes share; then the better match, then the match on rarer words (`libcudart` over `shared object
   file`: specific by what the words say, not by how long the text is).
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
    refines: tuple[str, ...]
    catch_all: bool


class Candidate(Protocol):
    """What the order reads of a candidate (match.Candidate)."""

    known: Cause
    score: float
    distinct: float

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
    confident = {c.known.id for c in candidates if c.confident}
    refined = {
        other for c in candidates if c.confident for other in c.known.refines if other != c.known.id
    } & confident

    def key(c: Candidate) -> tuple:
        return (
            not c.confident,
            c.confident and c.known.catch_all,
            c.known.id in refined,
            -c.score,
            -c.distinct,
            c.known.id,
        )

    return sorted(candidates, key=key)


def by_evidence(
    items: Sequence[T], candidate: Callable[[T], Candidate], status: Callable[[T], str]
) -> list[T]:
    """`items` (in the text order) by what the host says of each; stable, so the text order breaks ties."""
    return sorted(items, key=lambda item: (not candidate(item).confident, EVIDENCE.get(status(item), 1)))
