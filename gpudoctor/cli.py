"""The command line: typer options and wiring only. Each command's work is `run(...)` in its module under
gpudoctor/commands/, imported when that command runs (commands.dispatch), which also owns the one error
channel (CommandError -> `gpudoctor: message` on stderr, its exit code). The process around it (signals,
the crash log, the exit) is entry.py's, which reads the usual `check` command lines without typer
(check_argv.py) and hands every other one to `run_app` here. Exit codes: entry.py.
"""

from enum import Enum
from typing import Optional

import typer

from . import __version__
from .check_argv import MAX_TIMEOUT, timeout_seconds

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Says what is wrong with a GPU host for AI workloads, and the exact command that fixes it.",
    pretty_exceptions_enable=False,
)
rules_app = typer.Typer(no_args_is_help=True, help="List, show, validate and test rules; write their docs.")
app.add_typer(rules_app, name="rules")


class Format(str, Enum):
    text = "text"
    json = "json"


class CheckFormat(str, Enum):
    text = "text"
    json = "json"
    junit = "junit"
    markdown = "markdown"
    prometheus = "prometheus"


class ProfileName(str, Enum):
    workstation = "workstation"
    ci = "ci"
    preflight = "preflight"


class FailOn(str, Enum):
    error = "error"
    warning = "warning"
    info = "info"
    never = "never"


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


SnapshotOpt = typer.Option(
    None, "--snapshot", help="Replay a snapshot (.tar.gz or directory) instead of this host."
)
PythonOpt = typer.Option(
    [],
    "--python",
    help="Interpreter whose environment to judge; repeat to judge several (default: the active venv, else "
    "the active conda env, else python3 on PATH).",
)
DeepOpt = typer.Option(
    False,
    "--deep",
    help="Also load libcuda and import each framework in child processes (runtime truth; slower).",
)


def parse_timeout(value: object) -> float:
    """Seconds, > 0; a larger value than MAX_TIMEOUT (inf too) is capped there. nan, 0, negative: exit 2."""
    try:
        return timeout_seconds(value)
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None


TimeoutOpt = typer.Option(
    "10",
    "--timeout",
    parser=parse_timeout,
    metavar="SECONDS",
    help=f"Deadline in seconds for the whole check (at most {MAX_TIMEOUT:.0f}).",
)
IndexMirrorOpt = typer.Option(
    [],
    "--index-mirror",
    metavar="ORIGINAL=MIRROR",
    help="Plan package index URLs that start with ORIGINAL on MIRROR instead; repeatable.",
)
RulesOpt = typer.Option(
    [], "--rules", help="More rule files, directories or pinned URLs (URL#sha256=HEX); repeatable."
)


def _run(name: str, **kwargs: object) -> None:
    from .commands import dispatch

    dispatch(name, **kwargs)


@app.command()
def check(
    snapshot: Optional[str] = SnapshotOpt,
    python: list[str] = PythonOpt,
    rules: list[str] = RulesOpt,
    fmt: CheckFormat = typer.Option(CheckFormat.text, "--format", help="Output format."),
    fail_on: Optional[FailOn] = typer.Option(
        None,
        "--fail-on",
        help="Lowest severity that makes the exit code 1 (default: the policy's, else error; "
        "warning for --profile ci).",
    ),
    profile: ProfileName = typer.Option(
        ProfileName.workstation,
        "--profile",
        help="workstation: everything; ci: plain output, fail on warnings; preflight: fast probes only, "
        "5 s deadline, one line.",
    ),
    policy: Optional[str] = typer.Option(
        None,
        "--policy",
        help="Policy file of what the job needs (default: ./gpudoctor.toml, else [tool.gpudoctor] in "
        "./pyproject.toml).",
    ),
    timeout: Optional[float] = typer.Option(
        None,
        "--timeout",
        parser=parse_timeout,
        metavar="SECONDS",
        help="Deadline in seconds for the whole check (default 10, preflight 5, with --deep 30; "
        f"at most {MAX_TIMEOUT:.0f}).",
    ),
    data_dir: Optional[str] = typer.Option(
        None,
        "--data-dir",
        help="Training data directory: report the filesystem it lies on (a network filesystem is flagged).",
    ),
    plan: bool = typer.Option(
        False, "--plan", help="After the report, print the fix plan (text format only)."
    ),
    since: Optional[str] = typer.Option(
        None,
        "--since",
        metavar="DURATION",
        help="Judge the kernel log's Xid/SXid events of this window only, e.g. 24h, 30m, 7d (default: since "
        "boot).",
    ),
    deep: bool = DeepOpt,
    no_python: bool = typer.Option(
        False,
        "--no-python",
        help="Judge the machine alone, no Python environment (node health checks, e.g. a Slurm prolog).",
    ),
    fail_on_unknown: Optional[bool] = typer.Option(
        None,
        "--fail-on-unknown/--no-fail-on-unknown",
        help="Exit 2 when an error-level rule could not be evaluated (default: on for the ci and preflight "
        "profiles).",
    ),
) -> None:
    """Check this host (or a snapshot) and print what is wrong, with the command that fixes it."""
    _run(
        "check",
        snapshot=snapshot,
        python=tuple(python),
        rules=tuple(rules),
        fmt=fmt.value,
        fail_on=fail_on.value if fail_on else None,
        profile=profile.value,
        policy=policy,
        timeout=timeout,
        data_dir=data_dir,
        plan=plan,
        deep=deep,
        no_python=no_python,
        fail_on_unknown=fail_on_unknown,
        since=since,
    )


@app.command("plan")
def plan_command(
    snapshot: Optional[str] = SnapshotOpt,
    python: list[str] = PythonOpt,
    rules: list[str] = RulesOpt,
    policy: Optional[str] = typer.Option(
        None, "--policy", help="Policy file (its ignored rules are not planned); default as for check."
    ),
    fmt: Format = typer.Option(Format.text, "--format", help="Output format."),
    timeout: float = TimeoutOpt,
    deep: bool = DeepOpt,
    index_mirror: list[str] = IndexMirrorOpt,
    output: Optional[str] = typer.Option(
        None,
        "-o",
        "--output",
        metavar="FILE",
        help="Also save the plan as JSON, for `gpudoctor fix --plan FILE` to apply exactly it.",
    ),
) -> None:
    """Print the fix plan: the commands that fix what check finds, pinned and in order. Runs nothing."""
    _run(
        "plan",
        snapshot=snapshot,
        python=tuple(python),
        rules=tuple(rules),
        policy=policy,
        fmt=fmt.value,
        timeout=timeout,
        deep=deep,
        index_mirror=tuple(index_mirror),
        output=output,
    )


def parse_step_timeout(value: object) -> float:
    try:
        seconds = float(str(value))
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not a number of seconds") from None
    if not seconds > 0 or seconds == float("inf"):
        raise typer.BadParameter("must be a positive number of seconds")
    return seconds


@app.command()
def fix(
    python: Optional[str] = typer.Option(
        None, "--python", help="Interpreter whose environment to fix (default as for check)."
    ),
    rules: list[str] = RulesOpt,
    policy: Optional[str] = typer.Option(
        None, "--policy", help="Policy file (its ignored rules are not fixed); default as for check."
    ),
    yes: bool = typer.Option(False, "--yes", "-y", help="Apply every step without asking."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Change nothing: print exactly what would run."),
    allow_system: bool = typer.Option(
        False,
        "--allow-system",
        help="Also run the plan's system commands (services, diagnostics); never a driver change or reboot.",
    ),
    plan: Optional[str] = typer.Option(
        None,
        "--plan",
        metavar="FILE",
        help="Apply exactly this saved plan (gpudoctor plan -o FILE); refused if the facts it was made from "
        "changed since.",
    ),
    undo: bool = typer.Option(
        False, "--undo", help="Put the environment back as it was before run RUN (default: the last run)."
    ),
    run_id: Optional[str] = typer.Argument(None, metavar="[RUN]", help="With --undo: the run to undo."),
    list_runs: bool = typer.Option(False, "--list", help="List past runs."),
    timeout: float = TimeoutOpt,
    step_timeout: float = typer.Option(
        "3600",
        "--step-timeout",
        parser=parse_step_timeout,
        metavar="SECONDS",
        help="Stop a step that runs longer than this, and roll back.",
    ),
    index_mirror: list[str] = IndexMirrorOpt,
) -> None:
    """Apply the fix plan: ask before each step, keep a restore point, verify, roll back on failure."""
    _run(
        "fix",
        python=python,
        rules=tuple(rules),
        policy=policy,
        yes=yes,
        dry_run=dry_run,
        allow_system=allow_system,
        plan=plan,
        undo=undo,
        run_id=run_id,
        list_runs=list_runs,
        timeout=timeout,
        step_timeout=step_timeout,
        index_mirror=tuple(index_mirror),
    )


@app.command()
def facts(
    snapshot: Optional[str] = SnapshotOpt,
    python: Optional[str] = typer.Option(
        None, "--python", help="Interpreter whose environment to read (default as for check)."
    ),
    fmt: Format = typer.Option(Format.text, "--format", help="Output format."),
    timeout: float = TimeoutOpt,
    deep: bool = DeepOpt,
    no_redact: bool = typer.Option(
        False, "--no-redact", help="Keep GPU UUIDs, hostname, home directory and user name."
    ),
) -> None:
    """Print every fact the probes collected, with where it came from (for bug reports)."""
    _run(
        "facts",
        snapshot=snapshot,
        python=python,
        fmt=fmt.value,
        timeout=timeout,
        deep=deep,
        no_redact=no_redact,
    )


@app.command()
def snapshot(
    output: str = typer.Option(
        "gpudoctor-snapshot.tar.gz", "-o", "--output", help="Where to write it; - for stdout."
    ),
    python: list[str] = PythonOpt,
    no_redact: bool = typer.Option(
        False,
        "--no-redact",
        help="Keep GPU UUIDs, serial numbers, hostname, home directory, user name and URL secrets.",
    ),
    timeout: float = TimeoutOpt,
    deep: bool = DeepOpt,
) -> None:
    """Record what the probes read on this host into a file anyone can replay with check --snapshot."""
    _run("snapshot", output=output, python=tuple(python), no_redact=no_redact, timeout=timeout, deep=deep)


@app.command()
def explain(
    message: Optional[str] = typer.Argument(None, help="An error message, pasted (quote it)."),
    log: Optional[str] = typer.Option(
        None,
        "--log",
        metavar="FILE",
        help="Triage a whole log instead (dmesg, NCCL_DEBUG=INFO, a CI log); - for stdin.",
    ),
    snapshot: Optional[str] = SnapshotOpt,
    python: list[str] = PythonOpt,
    rules: list[str] = RulesOpt,
    timeout: float = TimeoutOpt,
) -> None:
    """Find what causes an error message (or the errors in a log), and whether it applies on this host."""
    _run(
        "explain",
        message=message,
        log=log,
        snapshot=snapshot,
        python=tuple(python),
        rules=tuple(rules),
        timeout=timeout,
    )


@app.command(
    "run",
    # Options of gpudoctor's own come before the command; the command's first word ends them (as for
    # `nice`, `timeout`, `sudo`), and so does `--`: whatever follows reaches the command untouched.
    context_settings={"allow_interspersed_args": False},
)
def run_command(
    command: list[str] = typer.Argument(
        ..., metavar="-- CMD [ARGS]...", help="The command to run and its arguments, passed on untouched."
    ),
    no_explain: bool = typer.Option(
        False, "--no-explain", help="Only run the command: do not explain a failure."
    ),
    timeout: float = typer.Option(
        "10",
        "--timeout",
        parser=parse_timeout,
        metavar="SECONDS",
        help=f"Deadline in seconds for explaining a failure (at most {MAX_TIMEOUT:.0f}).",
    ),
) -> None:
    """Run a command unchanged; when it fails, explain the failure against this host after its output."""
    _run("run", argv=tuple(command), timeout=timeout, explain=not no_explain)


@rules_app.command("list")
def rules_list(rules: list[str] = RulesOpt) -> None:
    """List every rule: id, severity, area and title."""
    _run("rules list", rules=tuple(rules))


@rules_app.command("show")
def rules_show(
    rule_id: str = typer.Argument(..., help="A rule id, e.g. GD-PCIE-001."),
    rules: list[str] = RulesOpt,
) -> None:
    """Show one rule in full."""
    _run("rules show", rule_id=rule_id, rules=tuple(rules))


@rules_app.command("validate")
def rules_validate(paths: list[str] = typer.Argument(..., help="Rule files or directories.")) -> None:
    """Check rule files strictly; print every problem with file, line and rule id (exit 2 on any)."""
    _run("rules validate", paths=tuple(paths))


@rules_app.command("test")
def rules_test(
    paths: list[str] = typer.Argument(..., help="Rule files or directories (your rules), tested together."),
    cases: Optional[str] = typer.Option(
        None, "--cases", help="Directory of case files (<RULE-ID>.yaml); default: cases/ beside the rules."
    ),
) -> None:
    """Run rule cases (fires/passes) against your rules: exit 0 all pass, 1 a case failed, 2 bad files."""
    _run("rules test", paths=tuple(paths), cases=cases)


@rules_app.command("docs")
def rules_docs(
    out: str = typer.Argument(
        ..., help="Docs directory to write into (required: gpudoctor's own is `docs` in its source tree)."
    ),
) -> None:
    """Write the rule pages (<out>/rules/<ID>.md, <out>/rules/index.md), <out>/facts.md and errors.md."""
    _run("rules docs", out=out)


class FleetFormat(str, Enum):
    text = "text"
    json = "json"
    markdown = "markdown"


@app.command()
def fleet(
    paths: list[str] = typer.Argument(
        ..., help="Per-node reports (gpudoctor check --format json), or directories of them."
    ),
    fmt: FleetFormat = typer.Option(FleetFormat.text, "--format", help="Output format."),
    fail_on: FailOn = typer.Option(
        FailOn.error, "--fail-on", help="Lowest severity (fleet or node finding) that makes the exit code 1."
    ),
    skip_invalid: bool = typer.Option(
        False, "--skip-invalid", help="Unusable report files are listed but do not make the exit code 2."
    ),
    policy: Optional[str] = typer.Option(
        None,
        "--policy",
        help="Policy file whose [ignore] entries for fleet rules (GD-FLEET-*) apply, with their reasons.",
    ),
    rules: list[str] = typer.Option(
        [], "--rules", help="More fleet rules over the fleet's records (peers[]): files or directories."
    ),
) -> None:
    """Merge per-node JSON reports into one fleet view, with what differs between nodes."""
    _run(
        "fleet",
        paths=tuple(paths),
        fmt=fmt.value,
        fail_on=fail_on.value,
        skip_invalid=skip_invalid,
        policy=policy,
        rules=tuple(rules),
    )


class BenchBackend(str, Enum):
    auto = "auto"
    torch = "torch"
    cupy = "cupy"


def parse_seconds(value: object) -> float:
    """Seconds a test is timed for: more than 0, at most 60."""
    try:
        seconds = float(str(value))
    except ValueError:
        raise typer.BadParameter(f"expected a number of seconds, got {value!r}") from None
    if not 0 < seconds <= 60:
        raise typer.BadParameter(f"expected more than 0 and at most 60 seconds, got {value!r}")
    return seconds


@app.command()
def bench(
    python: list[str] = typer.Option(
        [],
        "--python",
        help="Interpreter whose torch or CuPy measures (default: the active venv, else the active conda env, "
        "else python3 on PATH).",
    ),
    fmt: Format = typer.Option(Format.text, "--format", help="Output format (json: a report fleet merges)."),
    fail_on: FailOn = typer.Option(
        FailOn.error, "--fail-on", help="Lowest severity that makes the exit code 1."
    ),
    test: list[str] = typer.Option(
        [],
        "--test",
        metavar="TEST",
        help="Only this test or group (matmul, copy, d2d, p2p, allreduce, matmul_bf16, h2d_pinned, ...); "
        "repeatable.",
    ),
    gpu: list[int] = typer.Option(
        [], "--gpu", metavar="INDEX", help="Only this GPU (NVML index); repeatable."
    ),
    seconds: float = typer.Option(
        "1", "--seconds", parser=parse_seconds, metavar="SECONDS", help="How long each test is timed."
    ),
    test_timeout: float = typer.Option(
        "60",
        "--test-timeout",
        parser=parse_timeout,
        metavar="SECONDS",
        help="A test still running after this long is stopped, and the run with it.",
    ),
    timeout: float = typer.Option(
        "600",
        "--timeout",
        parser=parse_timeout,
        metavar="SECONDS",
        help=f"Deadline in seconds for the whole bench (at most {MAX_TIMEOUT:.0f}).",
    ),
    backend: BenchBackend = typer.Option(
        BenchBackend.auto, "--backend", help="Measure through torch or CuPy (auto: torch if it imports)."
    ),
    baseline: Optional[str] = typer.Option(
        None,
        "--baseline",
        metavar="FILE",
        help="An earlier `bench --format json` of this node to compare with.",
    ),
    html: Optional[str] = typer.Option(
        None, "--html", metavar="FILE", help="Also write the results as a self-contained HTML page."
    ),
    dcgm: Optional[int] = typer.Option(
        None, "--dcgm", metavar="LEVEL", help="Also run DCGM's diagnostic (dcgmi diag -r LEVEL, 1 or 2)."
    ),
) -> None:
    """Measure the GPUs (matmul TFLOP/s, copy bandwidths, peers, all-reduce) against what they should do."""
    _run(
        "bench",
        python=tuple(python),
        fmt=fmt.value,
        fail_on=fail_on.value,
        tests=tuple(test),
        gpus=tuple(gpu),
        seconds=seconds,
        test_timeout=test_timeout,
        timeout=timeout,
        backend=backend.value,
        baseline=baseline,
        html=html,
        dcgm=dcgm,
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
