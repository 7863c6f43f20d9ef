"""What the command-line readers share (host/command_words.py): reading a wrapper's options as the wrapper
does, finding a command as execvp does, reading a file's first bytes without waiting on it, and the phrases
a reason is made of."""

from __future__ import annotations

import os

import pytest

from gpudoctor.host.command_uv import UV_GLOBAL_VALUES, UV_RUN_VALUES
from gpudoctor.host.command_words import (
    DEFAULT_PATH,
    INNER,
    MAX_HEAD,
    TOP,
    LiveFiles,
    find,
    last,
    read_options,
    said,
    subcommand,
    subject,
    tail,
    up_to,
)

FILES = LiveFiles()


# --- options ----------------------------------------------------------------------------------------------


# The command lines of uv's guide to scripts (docs.astral.sh/uv/guides/scripts/, read 2026-12-05), the words
# after `uv`.
@pytest.mark.parametrize(
    ("words", "options", "command"),
    [
        (["run", "example.py", "hello", "world!"], [], ["example.py", "hello", "world!"]),
        (["run", "--no-project", "example.py"], [("--no-project", None)], ["example.py"]),
        (["run", "--with", "rich", "example.py"], [("--with", "rich")], ["example.py"]),
        (["run", "-"], [], ["-"]),  # `uv run -` reads the script from stdin: "-" is the command, no option
    ],
)
def test_uv_run_options_end_at_the_command(words, options, command):
    assert subcommand(words, UV_GLOBAL_VALUES) == "run"
    found, at = read_options(words[1:], UV_RUN_VALUES)
    assert (found, words[1:][at:]) == (options, command)


def test_a_value_comes_attached_or_as_the_next_word():
    # `--with=rich` and `-wrich` are clap's attached forms of `--with rich` (uv run --help: "-w, --with")
    for words in (["--with=rich", "x.py"], ["-wrich", "x.py"], ["-w", "rich", "x.py"]):
        found, at = read_options(words, UV_RUN_VALUES)
        assert (found[0][1], words[at]) == ("rich", "x.py"), words


def test_an_option_without_a_value_never_takes_the_next_word():
    found, at = read_options(["--no-project", "python", "-V"], UV_RUN_VALUES)
    assert (found, at) == ([("--no-project", None)], 1)


def test_a_double_dash_ends_the_options():
    found, at = read_options(["--with", "rich", "--", "--weird-name.py"], UV_RUN_VALUES)
    assert (found, at) == ([("--with", "rich")], 3)


def test_a_value_option_at_the_end_has_no_value_and_no_command():
    assert read_options(["--with"], UV_RUN_VALUES) == ([("--with", None)], 1)
    assert subcommand(["--directory", "/srv/proj"], UV_GLOBAL_VALUES) is None


def test_the_last_of_repeated_options_wins():
    found, _ = read_options(["-p", "3.10", "--python", "3.12", "x.py"], UV_RUN_VALUES)
    assert last(found, "--python", "-p") == "3.12"
    assert last(found, "--project") is None


# --- finding a command as execvp does ---------------------------------------------------------------------


def _executable(path) -> str:
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return str(path)


def test_find_takes_the_first_executable_on_the_path(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir(), second.mkdir()
    (first / "train").write_text("not executable\n")  # execvp skips a file it may not execute
    want = _executable(second / "train")
    assert find("train", {"PATH": f"{first}:{second}"}, "/", FILES) == want
    assert find("absent", {"PATH": f"{first}:{second}"}, "/", FILES) is None


def test_an_empty_path_entry_is_the_working_directory(tmp_path):
    want = _executable(tmp_path / "train")
    assert find("train", {"PATH": "/nonexistent:"}, str(tmp_path), FILES) == want


def test_without_path_execvp_searches_its_default(tmp_path):
    # glibc's execvp searches confstr(_CS_PATH) where PATH is unset
    assert DEFAULT_PATH == os.confstr("CS_PATH")
    sh = find("sh", {}, str(tmp_path), FILES)
    assert sh in ("/bin/sh", "/usr/bin/sh")


def test_a_name_with_a_slash_is_taken_from_the_working_directory(tmp_path):
    assert find("./bin/../train.sh", {"PATH": ""}, "/srv/job", FILES) == "/srv/job/train.sh"
    assert find("/opt/venv/bin/python", {}, "/srv", FILES) == "/opt/venv/bin/python"


# --- reading files ------------------------------------------------------------------------------------------


def test_a_fifo_in_place_of_a_script_is_not_waited_on(tmp_path):
    fifo = tmp_path / "train"
    os.mkfifo(fifo)
    fifo.chmod(0o755)
    assert FILES.head(str(fifo)) is None  # returns at once: opened non-blocking, refused as no regular file


def test_head_reads_at_most_its_limit_and_text_decodes_what_it_can(tmp_path):
    big = tmp_path / "big"
    big.write_bytes(b"#!/usr/bin/python3\n" + b"x" * (2 * MAX_HEAD))
    assert len(FILES.head(str(big))) == MAX_HEAD
    odd = tmp_path / "odd.toml"
    odd.write_bytes(b"name = '\xff'\n")
    assert FILES.text(str(odd)) == "name = '\ufffd'\n"
    assert FILES.head(str(tmp_path)) is None and FILES.text(str(tmp_path / "absent")) is None


def test_up_to_finds_the_nearest_directory_holding_the_file(tmp_path):
    """As uv looks for a project's pyproject.toml or a `.venv`, and pyenv for a `.python-version`: the nearest
    from the start upwards; a directory of that name is not the file; none is None."""
    deep = tmp_path / "a" / "b" / "c"
    deep.mkdir(parents=True)
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "a" / "b" / "pyproject.toml").write_text("")
    (tmp_path / "a" / "b" / "c" / ".venv").mkdir()
    (tmp_path / "a" / ".venv").mkdir()
    (tmp_path / "a" / ".venv" / "pyvenv.cfg").write_text("")
    assert up_to(str(deep), "pyproject.toml", FILES) == str(tmp_path / "a" / "b")
    assert up_to(str(deep / ".." / ".."), "pyproject.toml", FILES) == str(tmp_path)
    assert up_to(str(deep), ".venv", FILES) is None
    assert up_to(str(deep), os.path.join(".venv", "pyvenv.cfg"), FILES) == str(tmp_path / "a")
    assert up_to(str(deep), "no-such-file", FILES) is None


def test_a_file_this_user_may_not_execute_is_not_executable(tmp_path):
    path = tmp_path / "x"
    path.write_text("")
    path.chmod(0o644)
    assert not FILES.executable(str(path)) and not FILES.executable(str(tmp_path))
    path.chmod(0o755)
    assert FILES.executable(str(path))


# --- the phrases of a reason ------------------------------------------------------------------------------


def test_where_a_name_came_from_is_said_unless_it_is_the_command_itself():
    assert subject("torchrun", TOP) == "torchrun"
    assert subject("torchrun", INNER) == "torchrun, the command it runs,"
    assert tail(TOP) == "" and tail(INNER) == " (the command it runs)"
    assert said("uv run outside a project", TOP) == "uv run outside a project"
    assert said("uv run outside a project", INNER) == "uv run outside a project, the command it runs"
