"""The rule language's `nvidia_require` operator (docs/writing-rules.md): a fact holding an NVIDIA_REQUIRE_*
expression is `met` when the container runtime admits it on this host's driver and GPUs, `unmet` when it
refuses it (not met, or invalid). The engine knows it only as an extension (engine/extensions.py), provided
by commands.dispatch calling provide(); the evaluator (require.py) is imported when a rule first uses it.
"""

from __future__ import annotations

from typing import Any, Optional

from ..engine import extensions

NAME = "nvidia_require"
# The facts an expression is judged against, besides each GPU's brand and compute capability.
READS = ("driver.max_cuda", "driver.version", "gpus.count")


def judge(value: Any, word: str, facts: Any) -> tuple[Optional[bool], dict[str, str]]:
    from .require import satisfied

    met, missing = satisfied(str(value), facts)
    return (None if met is None else met == (word == "met")), missing


def text(fact: str, word: str) -> str:
    return (
        f"the requirement in {fact} is {'met' if word == 'met' else 'not met'} by this host's driver and GPUs"
    )


OPERATOR = extensions.Operator(words=("met", "unmet"), fits=("str",), reads=READS, judge=judge, text=text)


def provide() -> None:
    """Add `nvidia_require` to the rule language (engine/extensions.py)."""
    extensions.extend(NAME, OPERATOR)
