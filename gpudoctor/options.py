"""Every option and argument of every command, each defined once: flags, help, type or choices, default
(pip's `cmdoptions` model). cli.py builds each command's typer parameters from these (`Option.typer`),
and check_argv reads the usual `check` command lines with the same entries, without importing typer.

Where a command words an option for itself (what `--python` judges, what `--timeout` bounds), the entry is
the shared one `.but(help=...)`, here beside it. Nothing here imports typer, click or the pipeline at import
time: `gpudoctor --help` and a `check` stay fast.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Callable, NamedTuple, Optional, Union

MAX_TIMEOUT = 86400.0  # one day: a larger deadline (inf, 1e10, 20 digits) is taken as this


def timeout_seconds(value: object) -> float:
    """--timeout's seconds: > 0, capped at MAX_TIMEOUT (inf too). ValueError with the reason otherwise
    (not a number, nan, 0, negative)."""
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{value!r} is not a number of seconds") from None
    if math.isnan(seconds) or seconds <= 0:
        raise ValueError(f"{value!r}: the deadline must be a positive number of seconds")
    return min(seconds, MAX_TIMEOUT)


def step_seconds(value: object) -> float:
    """fix --step-timeout: a positive, finite number of seconds."""
    try:
        seconds = float(str(value))
    except ValueError:
        raise ValueError(f"{value!r} is not a number of seconds") from None
    if not seconds > 0 or seconds == float("inf"):
        raise ValueError("must be a positive number of seconds")
    return seconds


def bench_seconds(value: object) -> float:
    """bench --seconds: how long a test is timed, more than 0 and at most 60."""
    try:
        seconds = float(str(value))
    except ValueError:
        raise ValueError(f"expected a number of seconds, got {value!r}") from None
    if not 0 < seconds <= 60:
        raise ValueError(f"expected more than 0 and at most 60 seconds, got {value!r}")
    return seconds


def fail_on_levels() -> tuple[str, ...]:
    """--fail-on's values, defined once beside the severities (engine/model.py; pipeline/verdict.py applies
    them). Imported when asked (a --fail-on value to check, a help page to print), not with this module."""
    from .engine.model import FAIL_ON

    return FAIL_ON


Choices = Union[tuple[str, ...], Callable[[], tuple[str, ...]]]


class Option(NamedTuple):  # not a dataclass: its generated methods cost every check a millisecond
    """One option (flags start with "-") or argument of the command line.

    keyword: the argument it becomes for the command's `run` (commands.dispatch). type: of one value
    (str, int, float, bool for a flag). many: repeatable, handed on as a tuple. choices: the values it
    takes (or a function that returns them, read when first needed). parse: text -> value, ValueError with
    the reason when it is not one. default: as typer shows it ("10": `[default: 10]`), None for none.
    required: an argument that must be given."""

    keyword: str
    flags: tuple[str, ...]
    help: str
    type: type = str
    default: Any = None
    many: bool = False
    choices: Optional[Choices] = None
    metavar: Optional[str] = None
    parse: Optional[Callable[[object], Any]] = None
    required: bool = False

    def but(self, **changes: Any) -> Option:
        return self._replace(**changes)

    @property
    def is_argument(self) -> bool:
        return not self.flags[0].startswith("-")

    @property
    def kind(self) -> str:
        """check_argv's reading: "value" (once), "many" (a tuple), "flag" (sets True); a "--x/--no-x" pair
        is a flag whose --no-x half sets False."""
        return "many" if self.many else "flag" if self.type is bool else "value"

    def values(self) -> Optional[tuple[str, ...]]:
        return self.choices() if callable(self.choices) else self.choices

    def annotation(self) -> Any:
        if self.many:
            return list[self.type]  # type: ignore[name-defined]
        return self.type if self.default is not None or self.required else Optional[self.type]

    def typer(self) -> Any:
        """The typer.Option (or typer.Argument) that declares it."""
        import typer

        extra: dict[str, Any] = {"help": self.help}
        if self.metavar:
            extra["metavar"] = self.metavar
        if self.parse:
            extra["parser"] = _usage_error(self.parse)
        if self.choices is not None:
            extra["click_type"] = _choice(self.choices)
        default = [] if self.many and self.default is None else self.default
        if self.is_argument:
            return typer.Argument(... if self.required else default, **extra)
        return typer.Option(default, *self.flags, **extra)


def _usage_error(parse: Callable[[object], Any]) -> Callable[[object], Any]:
    def parser(value: object) -> Any:
        import typer

        try:
            return parse(value)
        except ValueError as e:
            raise typer.BadParameter(str(e)) from None

    return parser


def _choice(choices: Choices) -> Any:
    import click

    if not callable(choices):
        return click.Choice(choices)

    class LaterChoice(click.Choice):
        """A click.Choice whose values are read when first needed."""

        def __init__(self) -> None:
            self.case_sensitive = True

        @property  # type: ignore[override]
        def choices(self) -> Sequence[str]:
            return choices()

    return LaterChoice()


# Shared by several commands ---------------------------------------------------------------------------------

SNAPSHOT = Option(
    "snapshot", ("--snapshot",), "Replay a snapshot (.tar.gz or directory) instead of this host."
)
PYTHONS = Option(
    "python",
    ("--python",),
    "Interpreter whose environment to judge; repeat to judge several (default: the active venv, else the "
    "active conda env, else python3 on PATH).",
    many=True,
)
PYTHON = Option("python", ("--python",), "Interpreter whose environment to read (default as for check).")
RULES = Option(
    "rules",
    ("--rules",),
    "More rule files, directories or pinned URLs (URL#sha256=HEX); repeatable.",
    many=True,
)
POLICY = Option(
    "policy",
    ("--policy",),
    "Policy file of what the job needs (default: ./gpudoctor.toml, else [tool.gpudoctor] in "
    "./pyproject.toml).",
)
FORMAT = Option("fmt", ("--format",), "Output format.", default="text", choices=("text", "json"))
FAIL_ON = Option(
    "fail_on",
    ("--fail-on",),
    "Lowest severity that makes the exit code 1.",
    default="error",
    choices=fail_on_levels,
)
TIMEOUT = Option(
    "timeout",
    ("--timeout",),
    f"Deadline in seconds for the whole check (default 10, with --deep 30; at most {MAX_TIMEOUT:.0f}).",
    type=float,
    metavar="SECONDS",
    parse=timeout_seconds,
)
DEEP = Option(
    "deep",
    ("--deep",),
    "Also load libcuda and import each framework in child processes (runtime truth; slower).",
    type=bool,
    default=False,
)
INDEX_MIRROR = Option(
    "index_mirror",
    ("--index-mirror",),
    "Plan package index URLs that start with ORIGINAL on MIRROR instead; repeatable.",
    many=True,
    metavar="ORIGINAL=MIRROR",
)
NO_REDACT = Option(
    "no_redact",
    ("--no-redact",),
    "Keep GPU UUIDs, hostname, home directory and user name.",
    type=bool,
    default=False,
)
RULE_PATHS = Option("paths", ("paths",), "Rule files or directories.", many=True, required=True)


def flag(keyword: str, flags: Union[str, tuple[str, ...]], help: str) -> Option:
    return Option(keyword, (flags,) if isinstance(flags, str) else flags, help, type=bool, default=False)


# Each command's, in the order its help lists them -----------------------------------------------------------

CHECK = (
    SNAPSHOT,
    PYTHONS,
    RULES,
    FORMAT.but(choices=("text", "json", "junit", "markdown", "prometheus")),
    FAIL_ON.but(
        default=None,
        help="Lowest severity that makes the exit code 1 (default: the policy's, else error; warning for "
        "--profile ci).",
    ),
    Option(
        "profile",
        ("--profile",),
        "workstation: everything; ci: plain output, fail on warnings; preflight: fast probes only, 5 s "
        "deadline, one line.",
        default="workstation",
        choices=("workstation", "ci", "preflight"),
    ),
    POLICY,
    TIMEOUT.but(
        help=f"Deadline in seconds for the whole check (default 10, preflight 5, with --deep 30; at most "
        f"{MAX_TIMEOUT:.0f})."
    ),
    Option(
        "data_dir",
        ("--data-dir",),
        "Training data directory: report the filesystem it lies on (a network filesystem is flagged).",
    ),
    flag("plan", "--plan", "After the report, print the fix plan (text format only)."),
    Option(
        "since",
        ("--since",),
        "Judge the kernel log's Xid/SXid events of this window only, e.g. 24h, 30m, 7d (default: since "
        "boot).",
        metavar="DURATION",
    ),
    DEEP,
    flag(
        "no_python",
        "--no-python",
        "Judge the machine alone, no Python environment (node health checks, e.g. a Slurm prolog).",
    ),
    Option(
        "image",
        ("--image",),
        "Judge a container image against this host (or --snapshot) before it runs here: an OCI layout "
        "directory, an OCI or `docker save` archive, or a local image name (through docker or podman). "
        "Nothing is pulled.",
        metavar="REF",
    ),
    Option(
        "lock",
        ("--lock",),
        "Judge a lockfile's pins as if installed: uv.lock, poetry.lock, pylock.toml, requirements.txt, "
        "environment.yml or conda-lock.yml.",
        metavar="FILE",
    ),
    Option(
        "fail_on_unknown",
        ("--fail-on-unknown/--no-fail-on-unknown",),
        "Exit 2 when an error-level rule could not be evaluated (default: on for the ci and preflight "
        "profiles).",
        type=bool,
    ),
    NO_REDACT.but(help="--format json: keep home directories and user names."),
    flag(
        "all_envs",
        "--all-envs",
        "Judge every Python environment `gpudoctor envs` finds (read from their files; the machine once), "
        "one report section each.",
    ),
)

PLAN = (
    SNAPSHOT,
    PYTHONS,
    RULES,
    POLICY.but(help="Policy file (its ignored rules are not planned); default as for check."),
    FORMAT,
    TIMEOUT,
    DEEP,
    INDEX_MIRROR,
    Option(
        "output",
        ("-o", "--output"),
        "Also save the plan as JSON, for `gpudoctor fix --plan FILE` to apply exactly it.",
        metavar="FILE",
    ),
)

FIX = (
    PYTHON.but(help="Interpreter whose environment to fix (default as for check)."),
    RULES,
    POLICY.but(help="Policy file (its ignored rules are not fixed); default as for check."),
    flag("yes", ("--yes", "-y"), "Apply every step without asking."),
    flag("dry_run", "--dry-run", "Change nothing: print exactly what would run."),
    flag(
        "allow_system",
        "--allow-system",
        "Also run the plan's system commands (services, diagnostics); never a driver change or reboot.",
    ),
    Option(
        "plan",
        ("--plan",),
        "Apply exactly this saved plan (gpudoctor plan -o FILE); refused if the facts it was made from "
        "changed since.",
        metavar="FILE",
    ),
    flag("undo", "--undo", "Put the environment back as it was before run RUN (default: the last run)."),
    Option("run_id", ("run_id",), "With --undo: the run to undo.", metavar="[RUN]"),
    flag("list_runs", "--list", "List past runs."),
    flag(
        "prune",
        "--prune",
        "Remove old runs and their restore points (keeps the newest 5 and those of the last 14 days); "
        "with --dry-run, only list them.",
    ),
    TIMEOUT.but(help=f"Deadline in seconds for the whole check (default 10; at most {MAX_TIMEOUT:.0f})."),
    Option(
        "step_timeout",
        ("--step-timeout",),
        "Stop a step that runs longer than this, and roll back.",
        type=float,
        default="3600",
        metavar="SECONDS",
        parse=step_seconds,
    ),
    INDEX_MIRROR,
)

FACTS = (SNAPSHOT, PYTHON, FORMAT, TIMEOUT, DEEP, NO_REDACT)

SNAPSHOT_COMMAND = (
    Option(
        "output", ("-o", "--output"), "Where to write it; - for stdout.", default="gpudoctor-snapshot.tar.gz"
    ),
    PYTHONS,
    NO_REDACT.but(
        help="Keep GPU UUIDs, serial numbers, hostname, home directory, user name and URL secrets."
    ),
    TIMEOUT,
    DEEP,
)

EXPLAIN = (
    Option("message", ("message",), "An error message, pasted (quote it)."),
    Option(
        "log",
        ("--log",),
        "Triage a whole log instead (dmesg, NCCL_DEBUG=INFO, a CI log); - for stdin. Repeat it, or give a "
        "directory or a quoted glob, for a job's rank logs: names the rank that failed first.",
        metavar="FILE",
        many=True,
    ),
    Option(
        "reports",
        ("--reports",),
        "With rank logs: the nodes' reports (gpudoctor check --format json), files or directories; "
        "repeatable. The failing rank's node is joined to its findings by hostname.",
        many=True,
        metavar="PATH",
    ),
    FORMAT.but(help="Output format; json: the rank triage's document (with --log)."),
    SNAPSHOT,
    PYTHONS,
    RULES,
    TIMEOUT.but(help=f"Deadline in seconds for the whole check (default 10; at most {MAX_TIMEOUT:.0f})."),
)

RUN = (
    Option(
        "command",
        ("command",),
        "The command to run and its arguments, passed on untouched.",
        many=True,
        metavar="-- CMD [ARGS]...",
        required=True,
    ),
    flag("no_explain", "--no-explain", "Only run the command: do not explain a failure."),
    TIMEOUT.but(
        help=f"Deadline in seconds for explaining a failure (at most {MAX_TIMEOUT:.0f}).", default="10"
    ),
)

WHICH = (
    RUN[0].but(help="The command, as it would be run (nothing of it runs)."),
    FORMAT,
    TIMEOUT.but(
        help="Deadline in seconds for reading the interpreter's environment (its distributions' metadata).",
        default="5",
    ),
)

NCCL = (
    SNAPSHOT,
    FORMAT,
    Option(
        "log",
        ("--log",),
        "An NCCL_DEBUG=INFO log of a run on this host: NCCL's real choice for each GPU pair, compared.",
        metavar="FILE",
    ),
    Option(
        "bench",
        ("--bench",),
        "A `gpudoctor bench --format json` report: its measured all-reduce against the predicted one.",
        metavar="FILE",
    ),
    TIMEOUT,
)

ENVS = (FORMAT,)

RULES_LIST = (RULES,)
RULES_SHOW = (Option("rule_id", ("rule_id",), "A rule id, e.g. GD-PCIE-001.", required=True), RULES)
RULES_VALIDATE = (RULE_PATHS,)
RULES_TEST = (
    RULE_PATHS.but(help="Rule files or directories (your rules), tested together."),
    Option(
        "cases",
        ("--cases",),
        "Directory of case files (<RULE-ID>.yaml); default: cases/ beside the rules.",
    ),
)
RULES_DOCS = (
    Option(
        "out",
        ("out",),
        "Docs directory to write into (required: gpudoctor's own is `docs` in its source tree).",
        required=True,
    ),
)

FLEET = (
    Option(
        "paths",
        ("paths",),
        "Per-node reports (gpudoctor check --format json), or directories of them.",
        many=True,
        required=True,
    ),
    FORMAT.but(choices=("text", "json", "markdown")),
    FAIL_ON.but(help="Lowest severity (fleet or node finding) that makes the exit code 1."),
    flag(
        "skip_invalid",
        "--skip-invalid",
        "Unusable report files are listed but do not make the exit code 2.",
    ),
    POLICY.but(
        help="Policy file whose [ignore] entries for fleet rules apply, with their reasons; with --image or "
        "--lock, check's policy (default: the one check finds here), applied as check applies it."
    ),
    RULES.but(
        help="More fleet rules over the fleet's records (peers[]): files or directories; with --image or "
        "--lock, more check rules."
    ),
    Option(
        "image",
        ("--image",),
        "Judge a container image on every group of nodes (same GPU model, driver and machine) instead of "
        "merging: an OCI layout directory, an OCI or `docker save` archive, or a local image name.",
        metavar="REF",
    ),
    Option(
        "lock",
        ("--lock",),
        "Judge a lockfile's pins on every group of nodes instead of merging (formats as for check --lock).",
        metavar="FILE",
    ),
)

BENCH = (
    PYTHONS.but(
        help="Interpreter whose torch or CuPy measures (default: the active venv, else the active conda env, "
        "else python3 on PATH)."
    ),
    FORMAT.but(help="Output format (json: a report fleet merges)."),
    FAIL_ON,
    Option(
        "tests",
        ("--test",),
        "Only this test or group (matmul, copy, d2d, p2p, allreduce, matmul_bf16, h2d_pinned, ...); "
        "repeatable.",
        many=True,
        metavar="TEST",
    ),
    Option(
        "gpus", ("--gpu",), "Only this GPU (NVML index); repeatable.", type=int, many=True, metavar="INDEX"
    ),
    Option(
        "seconds",
        ("--seconds",),
        "How long each test is timed.",
        type=float,
        default="1",
        metavar="SECONDS",
        parse=bench_seconds,
    ),
    TIMEOUT.but(
        keyword="test_timeout",
        flags=("--test-timeout",),
        help="A test still running after this long is stopped, and the run with it.",
        default="60",
    ),
    TIMEOUT.but(help=f"Deadline in seconds for the whole bench (at most {MAX_TIMEOUT:.0f}).", default="600"),
    Option(
        "backend",
        ("--backend",),
        "Measure through torch or CuPy (auto: torch if it imports).",
        default="auto",
        choices=("auto", "torch", "cupy"),
    ),
    Option(
        "baseline",
        ("--baseline",),
        "An earlier `bench --format json` of this node to compare with.",
        metavar="FILE",
    ),
    Option("html", ("--html",), "Also write the results as a self-contained HTML page.", metavar="FILE"),
    Option(
        "dcgm",
        ("--dcgm",),
        "Also run DCGM's diagnostic (dcgmi diag -r LEVEL, 1 or 2).",
        type=int,
        metavar="LEVEL",
    ),
)
