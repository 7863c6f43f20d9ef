"""The command line: typer wiring only, each command declared from its entries in options.py (where every
option is defined once). Each command's work is `run(...)` in its module under
gpudoctor/commands/, imported when that command runs (commands.dispatch), which also owns the one error
channel (CommandError -> `gpudoctor: message` on stderr, its exit code). The process around it (signals,
the crash log, the exit) is entry.py's, which reads the usual `check` command lines without typer
(check_argv.py) and hands every other one to `run_app` here. Exit codes: entry.py.
"""

import inspect
from typing import Any, Callable, Optional

import typer

from . import __version__, options

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Says what is wrong with a GPU host for AI workloads, and the exact command that fixes it.",
    pretty_exceptions_enable=False,
)
rules_app = typer.Typer(no_args_is_help=True, help="List, show, validate and test rules; write their docs.")
app.add_typer(rules_app, name="rules")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"gpudoctor {__version__}")
        raise typer.Exit(0)


@app.callback()
def _main(
    version: Optional[bool] = typer.Option(
        None, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    pass


def command(
    group: typer.Typer,
    name: str,
    params: tuple[options.Option, ...],
    doc: str,
    adapt: Callable[[dict[str, Any]], dict[str, Any]] = dict,
    **settings: Any,
) -> None:
    """Declare the command `name` with `params` (from options.py): typer reads them as it reads a function's
    signature, and the values go to commands.dispatch under each option's keyword (lists as tuples)."""

    def run(**values: Any) -> None:
        from .commands import dispatch

        given = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}
        dispatch(f"rules {name}" if group is rules_app else name, **adapt(given))

    run.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(p.keyword, inspect.Parameter.KEYWORD_ONLY, default=p.typer()) for p in params]
    )
    run.__annotations__ = {p.keyword: p.annotation() for p in params}
    run.__doc__ = doc
    group.command(name, **settings)(run)


command(
    app,
    "check",
    options.CHECK,
    "Check this host (or a snapshot) and print what is wrong, with the command that fixes it.",
)
command(
    app,
    "plan",
    options.PLAN,
    "Print the fix plan: the commands that fix what check finds, pinned and in order. Runs nothing.",
)
command(
    app,
    "fix",
    options.FIX,
    "Apply the fix plan: ask before each step, keep a restore point, verify, roll back on failure.",
)
command(
    app,
    "facts",
    options.FACTS,
    "Print every fact the probes collected, with where it came from (for bug reports).",
)
command(
    app,
    "snapshot",
    options.SNAPSHOT_COMMAND,
    "Record what the probes read on this host into a file anyone can replay with check --snapshot.",
)
command(
    app,
    "explain",
    options.EXPLAIN,
    "Find what causes an error message (or the errors in a log), and whether it applies on this host.",
)
command(
    app,
    "run",
    options.RUN,
    "Run a command unchanged; when it fails, explain the failure against this host after its output.",
    adapt=lambda v: {"argv": v["command"], "timeout": v["timeout"], "explain": not v["no_explain"]},
    # Options of gpudoctor's own come before the command; the command's first word ends them (as for
    # `nice`, `timeout`, `sudo`), and so does `--`: whatever follows reaches the command untouched.
    context_settings={"allow_interspersed_args": False},
)
command(
    app,
    "which",
    options.WHICH,
    "Name the Python interpreter a command will run, and why; its environment's frameworks and builds. "
    "Exit 0 named, 1 none can be known, 2 bad usage.",
    # as for run: gpudoctor's options come first; the command's first word (or `--`) ends them
    context_settings={"allow_interspersed_args": False},
)
command(
    app,
    "envs",
    options.ENVS,
    "List every Python environment on this machine, with its GPU frameworks and their builds.",
)
command(rules_app, "list", options.RULES_LIST, "List every rule: id, severity, area and title.")
command(rules_app, "show", options.RULES_SHOW, "Show one rule in full.")
command(
    rules_app,
    "validate",
    options.RULES_VALIDATE,
    "Check rule files strictly; print every problem with file, line and rule id (exit 2 on any).",
)
command(
    rules_app,
    "test",
    options.RULES_TEST,
    "Run rule cases (fires/passes) against your rules: exit 0 all pass, 1 a case failed, 2 bad files.",
)
command(
    rules_app,
    "docs",
    options.RULES_DOCS,
    "Write the rule pages (<out>/rules/<ID>.md, <out>/rules/index.md), <out>/facts.md and errors.md.",
)
command(
    app,
    "fleet",
    options.FLEET,
    "Merge per-node JSON reports into one fleet view, with what differs between nodes.",
)
command(
    app,
    "nccl",
    options.NCCL,
    "Predict the path NCCL takes between each pair of GPUs and to other nodes, and say where it is slow.",
)
command(
    app,
    "bench",
    options.BENCH,
    "Measure the GPUs (matmul TFLOP/s, copy bandwidths, peers, all-reduce) against what they should do.",
)


def run_app() -> None:
    """typer reads the command line and runs the command it names (entry.main calls this for every command
    line check_argv leaves to it)."""
    _plain_help_off_a_terminal()
    app()  # standalone: usage errors exit 2, typer.Exit(code) exits with code


def _plain_help_off_a_terminal() -> None:
    """Help and usage errors in click's plain format when stdout is not a terminal (or NO_COLOR): rich's
    panels are for people at a terminal, and importing rich's help machinery doubles `--help`'s time."""
    from .commands import use_color

    if not use_color():
        for typer_app in (app, rules_app):
            typer_app.rich_markup_mode = None
