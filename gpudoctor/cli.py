"""The command line: options in, calls into the core, rendering out. No logic of its own.

Exit codes: 0 nothing at or above --fail-on, 1 findings at or above it, 2 could not check (bad usage, bad
rule file, unreadable snapshot), 3 internal error (a crash log is written), 130 interrupted (Ctrl-C),
143 terminated (SIGTERM).
"""

import os
import sys
from enum import Enum
from typing import Optional

import typer

from . import __version__

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Says what is wrong with a GPU host for AI workloads, and the exact command that fixes it.",
    pretty_exceptions_enable=False,
)
rules_app = typer.Typer(no_args_is_help=True, help="List, show and validate rules.")
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
TimeoutOpt = typer.Option(10.0, "--timeout", min=0.1, help="Deadline in seconds for the whole check.")


def _fail(message: str, code: int = 2) -> None:
    typer.echo(f"gpudoctor: {message}", err=True)
    raise typer.Exit(code)


def _problems(what: str, e) -> None:
    """Exit 2 listing every problem of a bad rule file or policy, one a line."""
    _fail(f"{what} problems:\n" + "\n".join(f"  {p}" for p in e.problems))


def _rule_problems(e) -> None:
    _problems("rule files have", e)


def _load_rules(paths: list[str]):
    from .engine.loader import RuleLoadError, load_rules

    try:
        return load_rules(paths)
    except RuleLoadError as e:
        _rule_problems(e)


def _collect(snapshot: Optional[str], python: list[str], timeout: float):
    from .check import open_host
    from .host.base import Deadline
    from .host.snapshot import SnapshotError

    deadline = Deadline(timeout)
    try:
        host, source = open_host(snapshot, python, deadline)
    except SnapshotError as e:
        _fail(str(e))
    return host, source, deadline


@app.command()
def check(
    snapshot: Optional[str] = SnapshotOpt,
    python: list[str] = PythonOpt,
    rules: list[str] = typer.Option(
        [], "--rules", help="More rule files, directories or pinned URLs (URL#sha256=HEX); repeatable."
    ),
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
        min=0.1,
        help="Deadline in seconds for the whole check (default 10, preflight 5, with --deep 30).",
    ),
    data_dir: Optional[str] = typer.Option(
        None,
        "--data-dir",
        help="Training data directory: report the filesystem it lies on (a network filesystem is flagged).",
    ),
    plan: bool = typer.Option(
        False, "--plan", help="After the report, print the fix plan (text format only)."
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
    from .check import run_checks
    from .engine.loader import RuleLoadError
    from .policy import PolicyError, load
    from .profiles import PROFILES, resolve_fail_on, resolve_timeout

    prof = PROFILES[profile.value]
    if plan and fmt is not CheckFormat.text:
        _fail("--plan goes with --format text; `gpudoctor plan --format json` prints the plan as JSON")
    try:
        pol = load(policy)
    except PolicyError as e:
        _problems("policy has", e)
    fail = resolve_fail_on(prof, fail_on.value if fail_on else None, pol.fail_on if pol else None)
    if no_python and (python or deep):
        _fail("--no-python judges no Python environment: it goes with neither --python nor --deep")
    if len(python) > 1 and fmt in (CheckFormat.junit, CheckFormat.prometheus):
        _fail(f"--format {fmt.value} judges one environment: run it once for each --python")
    host, source, deadline = _collect(snapshot, python, resolve_timeout(prof, timeout, deep))
    try:
        results = run_checks(
            host,
            source,
            deadline,
            rules,
            profile=prof,
            policy=pol,
            data_dir=os.path.abspath(data_dir) if data_dir else None,
            deep=deep,
            fail_unknown=fail_on_unknown,
            no_python=no_python,
        )
    except RuleLoadError as e:
        _rule_problems(e)
    except PolicyError as e:
        _problems("policy has", e)
    _refuse_bad_python(results, python)
    if len(results) == 1:
        _render_check(results[0], fmt, fail, prof)
    else:
        _render_checks(results, fmt, fail, prof)
    if plan:
        for result in results:
            sys.stdout.write("\n")
            _print_plan(result, Format.text)
    _exit(max(r.verdict(fail) for r in results), results[0].unanswered())


def _refuse_bad_python(results, pythons: list[str]) -> None:
    """An interpreter named with --python that could not be inspected: exit 2, one line, no report."""
    for result, python in zip(results, pythons):
        exe = result.facts.get("python.executable")
        if not exe.known:
            why = exe.unknown or "unknown"
            _fail(
                f"--python: {why}"
                if why.startswith("inspecting ")
                else f"--python: inspecting {python} failed: {why}"
            )


def _render_checks(results, fmt: CheckFormat, fail_on: str, prof) -> None:
    """Several environments (--python repeated): one report each, in the order given."""
    if fmt is CheckFormat.json:
        from .report import json_report

        sys.stdout.write(json_report.render_many(results, fail_on))
        return
    for n, result in enumerate(results, 1):
        exe = result.facts.value("python.executable") or result.facts.get("python.executable").unknown
        if not prof.one_line:
            heading = f"Environment {n} of {len(results)}: {exe}"
            sys.stdout.write(
                ("\n" if n > 1 else "")
                + (f"## {heading}\n\n" if fmt is CheckFormat.markdown else f"{heading}\n")
            )
        _render_check(result, fmt, fail_on, prof)


def _render_check(result, fmt: CheckFormat, fail_on: str, prof) -> None:
    if fmt is CheckFormat.json:
        from .report import json_report

        sys.stdout.write(json_report.render(result, fail_on))
    elif fmt is CheckFormat.junit:
        from .report import junit

        sys.stdout.write(junit.render(result, fail_on))
    elif fmt is CheckFormat.markdown:
        from .report import markdown

        text = markdown.render(result, fail_on)
        sys.stdout.write(text)
        _append_step_summary(text)
    elif fmt is CheckFormat.prometheus:
        from .report import prometheus

        sys.stdout.write(prometheus.render(result, fail_on))
    elif prof.one_line:
        from .report import oneline

        # stderr: an entrypoint's stdout belongs to the command it runs next.
        sys.stderr.write(oneline.render(result, fail_on))
    elif _use_color() and not prof.plain:
        from .report.text import print_rich

        print_rich(result, fail_on)
    else:
        from .report.text import render_plain

        sys.stdout.write(render_plain(result, fail_on))


@app.command("plan")
def plan_command(
    snapshot: Optional[str] = SnapshotOpt,
    python: list[str] = PythonOpt,
    rules: list[str] = typer.Option(
        [], "--rules", help="More rule files, directories or pinned URLs (URL#sha256=HEX); repeatable."
    ),
    policy: Optional[str] = typer.Option(
        None, "--policy", help="Policy file (its ignored rules are not planned); default as for check."
    ),
    fmt: Format = typer.Option(Format.text, "--format", help="Output format."),
    timeout: float = TimeoutOpt,
    deep: bool = DeepOpt,
) -> None:
    """Print the fix plan: the commands that fix what check finds, pinned and in order. Runs nothing."""
    from .check import run_checks
    from .engine.loader import RuleLoadError
    from .policy import PolicyError, load

    if len(python) > 1 and fmt is Format.json:
        _fail("plan --format json plans one environment: run it once for each --python")
    try:
        pol = load(policy)
        host, source, deadline = _collect(snapshot, python, timeout)
        results = run_checks(host, source, deadline, rules, policy=pol, deep=deep)
    except RuleLoadError as e:
        _rule_problems(e)
    except PolicyError as e:
        _problems("policy has", e)
    _refuse_bad_python(results, python)
    for n, result in enumerate(results):
        sys.stdout.write("\n" if n else "")
        _print_plan(result, fmt)
    _exit(0, results[0].unanswered())


def _print_plan(result, fmt: Format) -> None:
    from .knowledge import KnowledgeError
    from .plan import build_plan
    from .report import plan_report

    try:
        fix_plan = build_plan(result.findings, result.facts)
    except KnowledgeError as e:
        _fail("knowledge tables have problems:\n" + "\n".join(f"  {p}" for p in e.problems))
    hostname = result.facts.value("host.hostname")
    if fmt is Format.json:
        host = {"kind": result.host_kind, "source": result.source, "hostname": hostname}
        sys.stdout.write(plan_report.render_json(fix_plan, host))
        return
    where = "live check" if result.host_kind == "live" else f"snapshot {result.source}"
    sys.stdout.write(plan_report.render_text(fix_plan, where + (f" of {hostname}" if hostname else "")))


def _append_step_summary(text: str) -> None:
    """GitHub Actions shows what a step appends to $GITHUB_STEP_SUMMARY on the run's page."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        typer.echo(f"gpudoctor: cannot append to GITHUB_STEP_SUMMARY ({path}): {e}", err=True)


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
    import json

    from .collect import collect
    from .probes import registry

    host, _source, deadline = _collect(snapshot, [python] if python else [], timeout)
    facts_, _ = collect(host, deadline, registry(deep=deep))
    if not no_redact:
        from .redact import redact_facts, this_machine

        facts_ = redact_facts(facts_, this_machine())
    if fmt is Format.json:
        sys.stdout.write(json.dumps(facts_.tree(), indent=2, default=str) + "\n")
    else:
        from .report.facts_text import render

        sys.stdout.write(render(facts_))
    _exit(0, list(getattr(host, "timed_out", [])))


@app.command()
def snapshot(
    output: str = typer.Option("gpudoctor-snapshot.tar.gz", "-o", "--output", help="Where to write it."),
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
    from .check import run_checks
    from .host.base import Deadline
    from .host.live import LiveHost
    from .host.snapshot import RecordingHost, redact, save
    from .redact import this_machine

    deadline = Deadline(timeout)
    recorder = RecordingHost(LiveHost(deadline=deadline, python=python))
    run_checks(recorder, "live", deadline, [], deep=deep)
    rec = recorder.recording
    if not no_redact:
        rec = redact(rec, identity=this_machine())
    try:
        save(rec, output, __version__)
    except OSError as e:
        _fail(f"cannot write {output}: {e}")
    typer.echo(
        f"wrote {output}: {len(rec.files)} files, {len(rec.commands)} commands, "
        f"{len(rec.nvml_system) + sum(len(d) for d in rec.nvml_devices.values())} NVML readings"
        + (
            ""
            if no_redact
            else "; GPU UUIDs, serial numbers, hostname, home directory and user name redacted"
        )
    )
    _exit(0, list(recorder.timed_out))


@app.command()
def explain(message: str = typer.Argument(..., help="An error message, pasted.")) -> None:
    """Find the rules that explain an error message you met, and what fixes it."""
    from .report.rules_text import explain_text

    text, found = explain_text(_load_rules([]), message)
    typer.echo(text, nl=False)
    raise typer.Exit(0 if found else 1)


@rules_app.command("list")
def rules_list(
    rules: list[str] = typer.Option(
        [], "--rules", help="More rule files, directories or pinned URLs (URL#sha256=HEX)."
    ),
) -> None:
    """List every rule: id, severity, area and title."""
    from .report.rules_text import rule_table

    typer.echo(rule_table(_load_rules(rules)), nl=False)


@rules_app.command("show")
def rules_show(
    rule_id: str = typer.Argument(..., help="A rule id, e.g. GD-PCIE-001."),
    rules: list[str] = typer.Option(
        [], "--rules", help="More rule files, directories or pinned URLs (URL#sha256=HEX)."
    ),
) -> None:
    """Show one rule in full."""
    from .report.rules_text import rule_detail

    match = [r for r in _load_rules(rules) if r.id == rule_id.upper()]
    if not match:
        _fail(f"no rule {rule_id!r}; `gpudoctor rules list` shows them all", 2)
    typer.echo(rule_detail(match[0]), nl=False)


@rules_app.command("validate")
def rules_validate(paths: list[str] = typer.Argument(..., help="Rule files or directories.")) -> None:
    """Check rule files strictly; print every problem with file, line and rule id (exit 2 on any)."""
    from .engine.loader import RuleLoadError, validate_rules

    try:
        loaded = validate_rules(paths)
    except RuleLoadError as e:
        for p in e.problems:
            typer.echo(str(p), err=True)
        typer.echo(f"{len(e.problems)} problem(s) found", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"{len(loaded)} rule(s) valid")


@rules_app.command("test")
def rules_test(
    path: str = typer.Argument(..., help="A rule file or directory (your rules)."),
    cases: Optional[str] = typer.Option(
        None, "--cases", help="Directory of case files (<RULE-ID>.yaml); default: cases/ beside the rules."
    ),
) -> None:
    """Run rule cases (fires/passes) against your rules: exit 0 all pass, 1 a case failed, 2 bad files."""
    from .engine import rule_tests

    try:
        code, lines, notes = rule_tests.main(path, cases)
    except rule_tests.CaseError as e:
        _fail(str(e))
    for line in lines:
        typer.echo(line)
    for note in notes:
        typer.echo(note, err=True)
    raise typer.Exit(code)


@rules_app.command("docs")
def rules_docs(out: str = typer.Argument("docs", help="Docs directory to write into.")) -> None:
    """Write the rule pages (<out>/rules/<ID>.md, <out>/rules/index.md) and <out>/facts.md."""
    from pathlib import Path

    from .engine.loader import ID_PATTERN
    from .report.rule_docs import render_all

    files = render_all(_load_rules([]))
    root = Path(out)
    try:
        (root / "rules").mkdir(parents=True, exist_ok=True)
        # Pages of rules that no longer exist would be stale; other files there are left alone.
        for old in (root / "rules").glob("*.md"):
            if f"rules/{old.name}" not in files and ID_PATTERN.match(old.stem):
                old.unlink()
        for rel, text in files.items():
            (root / rel).write_text(text, encoding="utf-8")
    except OSError as e:
        _fail(f"cannot write docs to {out}: {e}")
    typer.echo(f"wrote {len(files)} files under {out}")


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
) -> None:
    """Merge per-node JSON reports into one fleet view, with what differs between nodes."""
    from .fleet import report
    from .fleet.load import load_reports
    from .fleet.merge import exit_code, merge

    merged = merge(load_reports(paths))
    for bad in merged.invalid:
        typer.echo(f"gpudoctor: cannot use {bad.file}: {bad.reason}", err=True)
    if fmt is FleetFormat.json:
        sys.stdout.write(report.render_json(merged, fail_on.value, skip_invalid))
    elif fmt is FleetFormat.markdown:
        sys.stdout.write(report.render_markdown(merged, fail_on.value, skip_invalid))
    elif _use_color():
        report.print_rich(merged, fail_on.value, skip_invalid)
    else:
        sys.stdout.write(report.render_text(merged, fail_on.value, skip_invalid))
    _exit(exit_code(merged, fail_on.value, skip_invalid), [])


def _use_color() -> bool:
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def _exit(code: int, timed_out: list[str]) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    if timed_out:
        # A call that never returned may still hold a thread inside a C library; do not wait for it.
        os._exit(code)
    raise typer.Exit(code)


def main() -> None:
    """Console entry point: 130 on Ctrl-C, 143 on SIGTERM (the child process groups killed first), 3 with a
    crash log on anything unexpected."""
    from .host import children

    # Our own handlers, so that Ctrl-C is not turned into a click Abort (exit 1) and no child outlives us.
    children.install_signal_handlers()
    try:
        app()  # standalone: usage errors exit 2, typer.Exit(code) exits with code
    except Exception as e:  # noqa: BLE001 - anything unexpected becomes exit 3 with a crash log
        from .crashlog import write_crash_log

        path = write_crash_log(e)
        sys.stderr.write(f"gpudoctor: internal error: {type(e).__name__}: {e}\ncrash log: {path}\n")
        sys.exit(3)
