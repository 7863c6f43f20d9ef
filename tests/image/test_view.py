"""ImageError keeps its reason on one line, as the report prints it."""

from gpudoctor.image.view import FILES, ImageError


def test_the_reason_is_one_line():
    assert ImageError("a:\n  b  c").reason == "a: b c"


def test_files_are_absolute():
    assert all(p.startswith("/") for p in FILES) and "/usr/local/cuda/version.json" in FILES
