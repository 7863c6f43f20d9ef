"""Operators the rule language gets from outside the engine: each judges a fact's value together with other
facts of the host, where the built-in operators (conditions.OPERATORS) compare one value with another.

A package provides one with `extend` before rules load (commands.dispatch has gpudoctor.container provide
`nvidia_require`), so that the engine holds no knowledge of what it judges. This module imports nothing, so
that providing an operator costs a command nothing until a rule uses it.
"""

from __future__ import annotations

from typing import Any, Callable, Optional


class Operator:
    """An operator as the engine validates, evaluates, selects and documents it. A plain class: a NamedTuple
    or a dataclass would cost every command a few hundred microseconds to define."""

    __slots__ = ("words", "fits", "reads", "judge", "text")

    def __init__(
        self,
        words: tuple[str, ...],
        fits: tuple[str, ...],
        reads: tuple[str, ...],
        judge: Callable[[Any, str, Any], tuple[Optional[bool], dict[str, str]]],
        text: Callable[[str, str], str],
    ) -> None:
        self.words = words  # the values a rule may give it ("met", "unmet")
        self.fits = fits  # the declared fact types (facts.py) it judges
        self.reads = reads  # the facts it reads besides the one it judges (profiles select rules by them)
        # (the fact's value, the rule's word, the Facts) -> (True, False, or None when unknown facts
        # decide; those facts, each with why it is unknown)
        self.judge = judge
        # (the fact's name as the docs show it, the rule's word) -> the condition as a sentence (rule docs)
        self.text = text


OPERATORS: dict[str, Operator] = {}


def extend(name: str, operator: Operator) -> None:
    """Add `name` to the rule language; providing the same operator again changes nothing."""
    OPERATORS[name] = operator
