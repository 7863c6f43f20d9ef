"""Operators the rule language gets from outside the engine: each judges a fact's value together with other
facts of the host, where the built-in operators (conditions.OPERATORS) compare one value with another.

A package provides one with `extend` before rules load (commands.dispatch has gpudoctor.container provide
`nvidia_require`), so that the engine holds no knowledge of what it judges. This module imports nothing, so
that providing an operator costs a command nothing until a rule uses it.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional


class Operator(NamedTuple):
    """An operator as the engine validates, evaluates, selects and documents it."""

    words: tuple[str, ...]  # the values a rule may give it ("met", "unmet")
    fits: tuple[str, ...]  # the declared fact types (facts.py) it judges
    reads: tuple[str, ...]  # the facts it reads besides the one it judges (profiles select rules by them)
    # (the fact's value, the rule's word, the Facts) -> (True, False or None when unknown facts decide; those
    # facts, each with why it is unknown)
    judge: Callable[[Any, str, Any], tuple[Optional[bool], dict[str, str]]]
    # (the fact's name as the docs show it, the rule's word) -> the condition as a sentence (rules docs)
    text: Callable[[str, str], str]


OPERATORS: dict[str, Operator] = {}


def extend(name: str, operator: Operator) -> None:
    """Add `name` to the rule language; providing the same operator again changes nothing."""
    OPERATORS[name] = operator
