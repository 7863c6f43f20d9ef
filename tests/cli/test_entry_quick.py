"""`run -- CMD` and `explain MESSAGE` are read without typer (entry._quick); any other form goes to typer,
which reads it as before."""

from __future__ import annotations

import pytest

from gpudoctor.entry import _quick


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["run", "--", "nvidia-smi", "-L"],
            ("run", {"argv": ("nvidia-smi", "-L"), "timeout": 10.0, "explain": True}),
        ),
        (["run", "make", "-j8"], ("run", {"argv": ("make", "-j8"), "timeout": 10.0, "explain": True})),
        (
            ["run", "--no-explain", "--", "make"],
            ("run", {"argv": ("make",), "timeout": 10.0, "explain": False}),
        ),
        (
            ["explain", "Error 802: system not yet initialized"],
            ("explain", {"message": "Error 802: system not yet initialized"}),
        ),
    ],
)
def test_the_usual_forms_are_read_here(argv, expected):
    assert _quick(argv) == expected


@pytest.mark.parametrize(
    "argv",
    [
        ["run"],
        ["run", "--"],
        ["run", "--help"],
        ["run", "--timeout", "5", "--", "make"],
        ["run", "--no-explain"],
        ["explain"],
        ["explain", "--log", "job.log"],
        ["explain", "--help"],
        ["explain", "x", "--snapshot", "s.tar.gz"],
        ["check"],
        ["rules", "list"],
    ],
)
def test_any_other_form_is_left_to_typer(argv):
    assert _quick(argv) == (None, {})
